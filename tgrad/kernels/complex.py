"""Complex element-wise kernels.  Triton has no complex type: a complex64 / complex128 tensor is read as its
interleaved (real, imag) float32 / float64 pairs (numpy's and PyTorch's ``view_as_real`` layout).

Each kernel is strided like ``elementwise.py``'s maps: operand offsets come from ``strided_offset`` in
elements (a complex element is two floats: its real part sits at 2 * offset, its imaginary part right
after).  Math in fp32 (fp64 for complex128), as the real kernels.  ``abs`` scales by the larger part (no
overflow of |z|^2), division divides by the larger part of the divisor first (Smith's method).
"""
import triton
import triton.language as tl

from . import _geometry as G
from .elementwise import atan2_fn
from .runtime import Launch, Ptr, Sites, cdiv, elementwise_block
from ._lang import compute_type, strided_offset

# op codes (constexprs)
MUL, DIV = 0, 1                              # cbinary_kernel
EXP, CONJ, SGN, NEG = 0, 1, 2, 3             # cunary_kernel
ABS, ANGLE = 0, 1                            # creal_kernel
COMPLEX, POLAR = 0, 1                        # cmake_kernel


@triton.jit
def _ld(ptr, off, mask, COMPUTE: tl.constexpr):
    return tl.load(ptr + 2 * off, mask=mask).to(COMPUTE), tl.load(ptr + 2 * off + 1, mask=mask).to(COMPUTE)


@triton.jit
def _st(ptr, off, re, im, mask):
    tl.store(ptr + 2 * off, re.to(ptr.dtype.element_ty), mask=mask)
    tl.store(ptr + 2 * off + 1, im.to(ptr.dtype.element_ty), mask=mask)


@triton.jit
def _hypot(a, b):
    """sqrt(a^2 + b^2) without overflow (the larger of |a|, |b| factored out)."""
    hi = tl.maximum(tl.abs(a), tl.abs(b))
    lo = tl.minimum(tl.abs(a), tl.abs(b))
    s = tl.where(hi == 0, 1.0, hi)
    q = lo / s
    return tl.where(hi == float("inf"), hi, hi * tl.sqrt(1.0 + q * q))


@triton.jit
def cbinary_kernel(x_ptr, y_ptr, out_ptr, n_elements,
                   d1, d2, d3, d4, d5,
                   sx0, sx1, sx2, sx3, sx4, sx5,
                   sy0, sy1, sy2, sy3, sy4, sy5,
                   so0, so1, so2, so3, so4, so5,
                   OP: tl.constexpr, CONJ_Y: tl.constexpr, X_ND: tl.constexpr, Y_ND: tl.constexpr,
                   O_ND: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    """out = x * y (OP=MUL) or x / y (OP=DIV), y conjugated first if CONJ_Y; complex (..., broadcast)."""
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n_elements
    xr, xi = _ld(x_ptr, strided_offset(idx, d1, d2, d3, d4, d5, sx0, sx1, sx2, sx3, sx4, sx5, X_ND), mask, COMPUTE)
    yr, yi = _ld(y_ptr, strided_offset(idx, d1, d2, d3, d4, d5, sy0, sy1, sy2, sy3, sy4, sy5, Y_ND), mask, COMPUTE)
    if CONJ_Y:
        yi = -yi
    if OP == 0:
        re = xr * yr - xi * yi
        im = xr * yi + xi * yr
    else:
        # Smith: divide through by the larger part of y
        big = tl.abs(yr) >= tl.abs(yi)
        r = tl.where(big, yi / tl.where(yr == 0, 1.0, yr), yr / tl.where(yi == 0, 1.0, yi))
        den = tl.where(big, yr + yi * r, yi + yr * r)
        re = tl.where(big, xr + xi * r, xr * r + xi) / den
        im = tl.where(big, xi - xr * r, xi * r - xr) / den
    _st(out_ptr, strided_offset(idx, d1, d2, d3, d4, d5, so0, so1, so2, so3, so4, so5, O_ND), re, im, mask)


@triton.jit
def cunary_kernel(x_ptr, out_ptr, n_elements,
                  d1, d2, d3, d4, d5,
                  sx0, sx1, sx2, sx3, sx4, sx5,
                  so0, so1, so2, so3, so4, so5,
                  OP: tl.constexpr, X_ND: tl.constexpr, O_ND: tl.constexpr,
                  COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    """complex -> complex: exp(x) = e^re (cos im, sin im) (OP=EXP), conj (CONJ), x / |x| (SGN, 0 at 0), -x (NEG)."""
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n_elements
    xr, xi = _ld(x_ptr, strided_offset(idx, d1, d2, d3, d4, d5, sx0, sx1, sx2, sx3, sx4, sx5, X_ND), mask, COMPUTE)
    if OP == 0:
        e = tl.exp(xr)
        # exp(x + 0j) stays real (e * sin(0) would be nan for an infinite e)
        re = tl.where(xi == 0, e, e * tl.cos(xi))
        im = tl.where(xi == 0, xi, e * tl.sin(xi))
    elif OP == 1:
        re = xr
        im = -xi
    elif OP == 2:
        a = _hypot(xr, xi)
        s = tl.where(a == 0, 1.0, a)
        re = tl.where(a == 0, 0.0, xr / s)
        im = tl.where(a == 0, 0.0, xi / s)
    else:
        re = -xr
        im = -xi
    _st(out_ptr, strided_offset(idx, d1, d2, d3, d4, d5, so0, so1, so2, so3, so4, so5, O_ND), re, im, mask)


@triton.jit
def creal_kernel(x_ptr, out_ptr, n_elements,
                 d1, d2, d3, d4, d5,
                 sx0, sx1, sx2, sx3, sx4, sx5,
                 so0, so1, so2, so3, so4, so5,
                 OP: tl.constexpr, X_ND: tl.constexpr, O_ND: tl.constexpr,
                 COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    """complex -> real: |x| (OP=ABS) or atan2(im, re) (ANGLE)."""
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n_elements
    xr, xi = _ld(x_ptr, strided_offset(idx, d1, d2, d3, d4, d5, sx0, sx1, sx2, sx3, sx4, sx5, X_ND), mask, COMPUTE)
    if OP == 0:
        v = _hypot(xr, xi)
    else:
        v = atan2_fn(xi, xr, 0.0, 0.0)
    oo = strided_offset(idx, d1, d2, d3, d4, d5, so0, so1, so2, so3, so4, so5, O_ND)
    tl.store(out_ptr + oo, v.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def cmake_kernel(a_ptr, b_ptr, out_ptr, n_elements,
                 d1, d2, d3, d4, d5,
                 sa0, sa1, sa2, sa3, sa4, sa5,
                 sb0, sb1, sb2, sb3, sb4, sb5,
                 so0, so1, so2, so3, so4, so5,
                 OP: tl.constexpr, A_ND: tl.constexpr, B_ND: tl.constexpr, O_ND: tl.constexpr,
                 COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    """real, real -> complex: a + b i (OP=COMPLEX) or a (cos b, sin b) (POLAR)."""
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n_elements
    a = tl.load(a_ptr + strided_offset(idx, d1, d2, d3, d4, d5, sa0, sa1, sa2, sa3, sa4, sa5, A_ND),
                mask=mask).to(COMPUTE)
    b = tl.load(b_ptr + strided_offset(idx, d1, d2, d3, d4, d5, sb0, sb1, sb2, sb3, sb4, sb5, B_ND),
                mask=mask).to(COMPUTE)
    if OP == 0:
        re = a
        im = b
    else:
        re = a * tl.cos(b)
        im = a * tl.sin(b)
    _st(out_ptr, strided_offset(idx, d1, d2, d3, d4, d5, so0, so1, so2, so3, so4, so5, O_ND), re, im, mask)


# ------------------------------------------------------------------ launchers
_SITES = Sites()
_ND = ("X_ND", "Y_ND", "O_ND")
_ND_MAKE = ("A_ND", "B_ND", "O_ND")


def fptr(t):
    """Pointer to a tensor's floats: a complex tensor's pairs as its real dtype's elements."""
    return Ptr(t.data_ptr(), t.dtype.to_real().np)


def _map(kernel, inputs, out, op, nd_names=_ND, **cexpr):
    """out (over its shape) = kernel(op)(*inputs broadcast to out.shape); strides in elements."""
    st = out._storage
    dev = st.launch_device
    key = [id(kernel), op, dev, out._shape, out._strides, out.dtype, tuple(sorted(cexpr.items()))]
    for t in inputs:
        key += t._shape, t._strides, t.dtype
    key = tuple(key)
    site = _SITES.get(key)
    if site is None:
        shape = out._shape
        n = 1
        for d in shape:
            n *= d
        strides = [G.expand_strides(t.shape, t.stride(), shape) for t in inputs] + [list(out._strides)]
        sizes, per = G.launch_geometry(shape, strides)
        ndmax = max([nd for _, nd in per] + [0])
        block = elementwise_block(max(n, 1), dev, ndmax)
        args = [fptr(t) for t in inputs] + [fptr(out), n] + sizes
        ce = {"OP": op, "COMPUTE": compute_type(out.dtype.to_real() if out.dtype.is_complex else out.dtype),
              "BLOCK": block, **cexpr}
        for k, (s, nd) in enumerate(per):
            args.extend(s)
            ce[nd_names[k] if k < len(inputs) else "O_ND"] = nd
        site = _SITES.add(key, Launch(kernel, (cdiv(n, block),), dev, args, ce))
    if out.numel():
        site(*[t.data_ptr() for t in inputs], out.data_ptr())
    return out


def binary(op, x, y, out, conj_y=False):
    """out = x * y or x / y (``op`` MUL / DIV; y conjugated if ``conj_y``); all complex of out's dtype."""
    return _map(cbinary_kernel, (x, y), out, op, CONJ_Y=bool(conj_y))


def unary(op, x, out):
    """out = exp / conj / sgn / neg of complex x (``op`` EXP, CONJ, SGN, NEG)."""
    return _map(cunary_kernel, (x,), out, op)


def to_real(op, x, out):
    """out (real) = |x| or angle(x) of complex x (``op`` ABS, ANGLE)."""
    return _map(creal_kernel, (x,), out, op)


def make(op, a, b, out):
    """out (complex) = a + b i or a e^(b i) of real a, b (``op`` COMPLEX, POLAR)."""
    return _map(cmake_kernel, (a, b), out, op, _ND_MAKE)
