"""Complex element-wise kernels.  Triton has no complex type: a complex64 / complex128 tensor is read as its
interleaved (real, imag) float32 / float64 pairs (numpy's and PyTorch's ``view_as_real`` layout).

Each kernel is strided like ``elementwise.py``'s maps: operand offsets come from ``strided_offset`` in
elements (a complex element is two floats: its real part sits at 2 * offset, its imaginary part right
after).  Math in fp32 (fp64 for complex128), as the real kernels.  ``abs`` scales by the larger part (no
overflow of |z|^2), division divides by the larger part of the divisor first (Smith's method).
"""
import triton
import triton.language as tl

from .. import dtypes as D
from . import _geometry as G
from .elementwise import atan2_fn, sqrt_h
from .runtime import Launch, Ptr, Sites, cdiv, elementwise_block, gpu_blocks, next_pow2
from ._lang import compute_type, expm1_h, log1p_h, strided_offset

# op codes (constexprs)
MUL, DIV, POW = 0, 1, 2                      # cbinary_kernel
EXP, CONJ, SGN, NEG = 0, 1, 2, 3             # cunary_kernel, then the complex math below
(LOG, LOG2, LOG10, LOG1P, EXPM1, SQRT, RSQRT, RECIPROCAL, SIN, COS, TAN, SINH, COSH, TANH, ASIN, ACOS, ATAN,
 ASINH, ACOSH, ATANH, SIGMOID, SQUARE, CUBE, RSQUARE) = range(4, 28)
UNARY = {"log": LOG, "log2": LOG2, "log10": LOG10, "log1p": LOG1P, "expm1": EXPM1, "sqrt": SQRT, "rsqrt": RSQRT,
         "reciprocal": RECIPROCAL, "sin": SIN, "cos": COS, "tan": TAN, "sinh": SINH, "cosh": COSH, "tanh": TANH,
         "asin": ASIN, "acos": ACOS, "atan": ATAN, "asinh": ASINH, "acosh": ACOSH, "atanh": ATANH,
         "sigmoid": SIGMOID, "square": SQUARE}
EQ, NE = 0, 1                                # ccompare_kernel
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
    """sqrt(a^2 + b^2) without overflow (the larger of |a|, |b| factored out); inf if either is infinite,
    else NaN if either is NaN (C99 hypot)."""
    hi = tl.maximum(tl.abs(a), tl.abs(b))
    lo = tl.minimum(tl.abs(a), tl.abs(b))
    s = tl.where(hi == 0, 1.0, hi)
    q = lo / s
    r = tl.where((a != a) | (b != b), float("nan"), hi * tl.sqrt(1.0 + q * q))
    return tl.where((tl.abs(a) == float("inf")) | (tl.abs(b) == float("inf")), float("inf"), r)


@triton.jit
def _cdiv(xr, xi, yr, yi):
    """(xr + xi i) / (yr + yi i), Smith's method: divide through by the larger part of y."""
    big = tl.abs(yr) >= tl.abs(yi)
    r = tl.where(big, yi / tl.where(yr == 0, 1.0, yr), yr / tl.where(yi == 0, 1.0, yi))
    den = tl.where(big, yr + yi * r, yi + yr * r)
    return tl.where(big, xr + xi * r, xr * r + xi) / den, tl.where(big, xi - xr * r, xi * r - xr) / den


@triton.jit
def _clog(x, y):
    """log z = log|z| + i angle(z)."""
    return tl.log(_hypot(x, y)), atan2_fn(y, x, 0.0, 0.0)


@triton.jit
def _cexp(x, y):
    """exp z = e^x (cos y, sin y); exp(x + 0i) stays real (e * sin 0 would be nan for an infinite e); C99's
    cexp for a non-finite y: 0 at x = -inf, (inf, nan) at x = inf."""
    e = tl.exp(x)
    re = tl.where(y == 0, e, e * tl.cos(y))
    im = tl.where(y == 0, y, e * tl.sin(y))
    bad_y = (y != y) | (tl.abs(y) == float("inf"))
    re = tl.where(bad_y & (x == -float("inf")), 0.0, tl.where(bad_y & (x == float("inf")), x, re))
    im = tl.where(bad_y & (x == -float("inf")), 0.0, im)
    return re, im


@triton.jit
def _csqrt(x, y):
    """Principal sqrt: t = sqrt((|x| + |z|) / 2); (t, y / 2t) for x >= 0, else (|y| / 2t, t with y's sign)."""
    t = sqrt_h((tl.abs(x) + _hypot(x, y)) * 0.5)
    q = y / tl.where(t == 0, 1.0, 2.0 * t)
    neg_y = (y < 0) | ((y == 0) & (1.0 / y < 0))
    re = tl.where(x >= 0, t, tl.abs(q))
    im = tl.where(x >= 0, q, tl.where(neg_y, -t, t))
    return re, im


@triton.jit
def _sinh_cosh(x):
    """(sinh x, cosh x): sinh|x| = (u + u / (u + 1)) / 2 with u = expm1|x| (no cancellation near 0), odd."""
    ax = tl.abs(x)
    u = expm1_h(ax)
    s = tl.where(u == float("inf"), u, 0.5 * u + 0.5 * (u / (u + 1.0)))
    e = u + 1.0
    return tl.where(x < 0, -s, s), 0.5 * e + 0.5 / e


@triton.jit
def _ctanh(x, y):
    """tanh z, Kahan's form: t = tan y, s = sinh x, b = 1 + t^2: (b s sqrt(1 + s^2), t) / (1 + b s^2);
    (+-1, 4 sin y cos y e^-2|x|) for |x| > 22, where s^2 would overflow."""
    t = tl.sin(y) / tl.cos(y)
    s, c = _sinh_cosh(tl.where(tl.abs(x) > 22.0, 0.0, x))
    b = 1.0 + t * t
    den = 1.0 + b * s * s
    big = tl.abs(x) > 22.0
    re = tl.where(big, tl.where(x < 0, -1.0, 1.0), b * s * c / den)
    im = tl.where(big, 4.0 * tl.sin(y) * tl.cos(y) * tl.exp(-2.0 * tl.abs(x)), t / den)
    return re, tl.where(y == 0, y, im)


@triton.jit
def _clog1p(x, y):
    """log(1 + z): re = log1p(2x + x^2 + y^2) / 2 near 0 (no cancellation), log|1 + z| elsewhere."""
    near = _hypot(x, y) < 0.5
    re = tl.where(near, 0.5 * log1p_h(x * (2.0 + x) + y * y), tl.log(_hypot(1.0 + x, y)))
    return re, atan2_fn(y, 1.0 + x, 0.0, 0.0)


@triton.jit
def _casinh(x, y):
    """asinh z = log(w + sqrt(w^2 + 1)) = log1p(w + w^2 / (1 + sqrt(w^2 + 1))) for w = +-z with Re w >= 0
    (no cancellation, exact near 0), odd."""
    flip = x < 0
    wr = tl.where(flip, -x, x)
    wi = tl.where(flip, -y, y)
    qr = wr * wr - wi * wi
    qi = 2.0 * wr * wi
    sr, si = _csqrt(qr + 1.0, qi)
    fr, fi = _cdiv(qr, qi, sr + 1.0, si)
    lr, li = _clog1p(wr + fr, wi + fi)
    return tl.where(flip, -lr, lr), tl.where(flip, -li, li)


@triton.jit
def _catanh(x, y):
    """atanh z = (log1p(z) - log1p(-z)) / 2."""
    ar, ai = _clog1p(x, y)
    br, bi = _clog1p(-x, -y)
    return 0.5 * (ar - br), 0.5 * (ai - bi)


@triton.jit
def _cmath(xr, xi, OP: tl.constexpr):
    """The complex math of cunary_kernel (OP >= LOG); the inverse trig via asin z = -i asinh(iz),
    atan z = -i atanh(iz), tan z = -i tanh(iz)."""
    if OP == 4 or OP == 5 or OP == 6:
        re, im = _clog(xr, xi)
        if OP == 5:
            re = re * 1.4426950408889634074
            im = im * 1.4426950408889634074
        if OP == 6:
            re = re * 0.43429448190325182765
            im = im * 0.43429448190325182765
    elif OP == 7:
        re, im = _clog1p(xr, xi)
    elif OP == 8:
        sh = tl.sin(0.5 * xi)
        re = expm1_h(xr) * tl.cos(xi) - 2.0 * sh * sh
        im = tl.exp(xr) * tl.sin(xi)
    elif OP == 9:
        re, im = _csqrt(xr, xi)
    elif OP == 10:
        sr, si = _csqrt(xr, xi)
        re, im = _cdiv(1.0, 0.0, sr, si)
    elif OP == 11:
        re, im = _cdiv(1.0, 0.0, xr, xi)
    elif OP == 12 or OP == 13:
        sh, ch = _sinh_cosh(xi)
        if OP == 12:
            re = tl.sin(xr) * ch
            im = tl.cos(xr) * sh
        else:
            re = tl.cos(xr) * ch
            im = -(tl.sin(xr) * sh)
    elif OP == 14:
        a, b = _ctanh(-xi, xr)
        re = b
        im = -a
    elif OP == 15 or OP == 16:
        sh, ch = _sinh_cosh(xr)
        if OP == 15:
            re = sh * tl.cos(xi)
            im = ch * tl.sin(xi)
        else:
            re = ch * tl.cos(xi)
            im = sh * tl.sin(xi)
    elif OP == 17:
        re, im = _ctanh(xr, xi)
    elif OP == 18 or OP == 19:
        a, b = _casinh(-xi, xr)
        re = b
        im = -a
        if OP == 19:
            re = 1.57079632679489661923 - re
            im = -im
    elif OP == 20:
        a, b = _catanh(-xi, xr)
        re = b
        im = -a
    elif OP == 21:
        re, im = _casinh(xr, xi)
    elif OP == 22:
        pr, pi = _csqrt(xr + 1.0, xi)
        mr, mi = _csqrt(xr - 1.0, xi)
        re, im = _clog(xr + (pr * mr - pi * mi), xi + (pr * mi + pi * mr))
    elif OP == 23:
        re, im = _catanh(xr, xi)
    elif OP == 24:
        er, ei = _cexp(-xr, -xi)
        re, im = _cdiv(1.0, 0.0, 1.0 + er, ei)
    elif OP == 25:
        re = xr * xr - xi * xi
        im = xr * xi + xi * xr
    elif OP == 26:
        sr = xr * xr - xi * xi
        si = xr * xi + xi * xr
        re = sr * xr - si * xi
        im = sr * xi + si * xr
    else:
        sr = xr * xr - xi * xi
        si = xr * xi + xi * xr
        re, im = _cdiv(1.0, 0.0, sr, si)
    return re, im


@triton.jit
def cbinary_kernel(x_ptr, y_ptr, out_ptr, n_elements,
                   d1, d2, d3, d4, d5,
                   sx0, sx1, sx2, sx3, sx4, sx5,
                   sy0, sy1, sy2, sy3, sy4, sy5,
                   so0, so1, so2, so3, so4, so5,
                   OP: tl.constexpr, CONJ_Y: tl.constexpr, X_ND: tl.constexpr, Y_ND: tl.constexpr,
                   O_ND: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    """out = x * y (OP=MUL), x / y (DIV) or x ** y = exp(y log x) (POW), y conjugated first if CONJ_Y;
    complex (..., broadcast)."""
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n_elements
    xr, xi = _ld(x_ptr, strided_offset(idx, d1, d2, d3, d4, d5, sx0, sx1, sx2, sx3, sx4, sx5, X_ND), mask, COMPUTE)
    yr, yi = _ld(y_ptr, strided_offset(idx, d1, d2, d3, d4, d5, sy0, sy1, sy2, sy3, sy4, sy5, Y_ND), mask, COMPUTE)
    if CONJ_Y:
        yi = -yi
    if OP == 0:
        re = xr * yr - xi * yi
        im = xr * yi + xi * yr
    elif OP == 1:
        re, im = _cdiv(xr, xi, yr, yi)
    else:
        lr, li = _clog(xr, xi)
        re, im = _cexp(yr * lr - yi * li, yr * li + yi * lr)
    _st(out_ptr, strided_offset(idx, d1, d2, d3, d4, d5, so0, so1, so2, so3, so4, so5, O_ND), re, im, mask)


@triton.jit
def cunary_kernel(x_ptr, out_ptr, n_elements,
                  d1, d2, d3, d4, d5,
                  sx0, sx1, sx2, sx3, sx4, sx5,
                  so0, so1, so2, so3, so4, so5,
                  OP: tl.constexpr, X_ND: tl.constexpr, O_ND: tl.constexpr,
                  COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    """complex -> complex: exp(x) = e^re (cos im, sin im) (OP=EXP), conj (CONJ), x / |x| (SGN, 0 at 0), -x (NEG),
    and the math of ``_cmath`` (OP >= LOG: logs, roots, trig, hyperbolic and their inverses, sigmoid, powers)."""
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n_elements
    xr, xi = _ld(x_ptr, strided_offset(idx, d1, d2, d3, d4, d5, sx0, sx1, sx2, sx3, sx4, sx5, X_ND), mask, COMPUTE)
    if OP == 0:
        re, im = _cexp(xr, xi)
    elif OP >= 4:
        re, im = _cmath(xr, xi, OP)
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
def ccompare_kernel(x_ptr, y_ptr, out_ptr, n_elements,
                    d1, d2, d3, d4, d5,
                    sx0, sx1, sx2, sx3, sx4, sx5,
                    sy0, sy1, sy2, sy3, sy4, sy5,
                    so0, so1, so2, so3, so4, so5,
                    OP: tl.constexpr, X_ND: tl.constexpr, Y_ND: tl.constexpr,
                    O_ND: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    """complex, complex -> bool: x == y (OP=EQ, both parts equal) or x != y (NE)."""
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n_elements
    xr, xi = _ld(x_ptr, strided_offset(idx, d1, d2, d3, d4, d5, sx0, sx1, sx2, sx3, sx4, sx5, X_ND), mask, COMPUTE)
    yr, yi = _ld(y_ptr, strided_offset(idx, d1, d2, d3, d4, d5, sy0, sy1, sy2, sy3, sy4, sy5, Y_ND), mask, COMPUTE)
    eq = (xr == yr) & (xi == yi)
    if OP == 0:
        v = eq
    else:
        v = ~eq
    oo = strided_offset(idx, d1, d2, d3, d4, d5, so0, so1, so2, so3, so4, so5, O_ND)
    tl.store(out_ptr + oo, v, mask=mask)


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


@triton.jit
def cprod_rows_kernel(x_ptr, out_ptr, M, M2, K, stride_m1, stride_m2, stride_k,
                      CUM: tl.constexpr, COMPUTE: tl.constexpr, ROWS: tl.constexpr):
    """Complex product of each row of x's (M, K) view (row m at (m // M2) stride_m1 + (m % M2) stride_m2),
    left to right: out[m] (CUM=False, out contiguous), or the running products out[m, k] (CUM=True: out has
    x's strides)."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    base = (rows // M2) * stride_m1 + (rows % M2) * stride_m2
    pr = tl.full([ROWS], 1, COMPUTE)
    pi = tl.zeros([ROWS], COMPUTE)
    for k in range(0, K):
        xr, xi = _ld(x_ptr, base + k * stride_k, rmask, COMPUTE)
        t = pr * xr - pi * xi
        pi = pr * xi + pi * xr
        pr = t
        if CUM:
            _st(out_ptr, base + k * stride_k, pr, pi, rmask)
    if not CUM:
        _st(out_ptr, rows, pr, pi, rmask)


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
    """out = exp / conj / sgn / neg of complex x (``op`` EXP, CONJ, SGN, NEG) or the math of ``_cmath`` (OP >=
    LOG); the logs and inverse functions of complex64 computed in fp64 and rounded once (nearer glibc's complex
    functions, which ATen's cpu kernels call, than fp32 steps)."""
    if op in _WIDE:
        return _map(cunary_kernel, (x,), out, op, COMPUTE=tl.float64)
    return _map(cunary_kernel, (x,), out, op)


# the ops whose fp32 steps lose more than glibc's complex float functions (measured against PyTorch 2.13's
# complex64 results: max 2-3 ulp in fp64 vs 5-113 in fp32); the others' fp32 steps match ATen's more often
_WIDE = (LOG, LOG2, LOG10, LOG1P, TAN, TANH, ASIN, ACOS, ATAN, ASINH, ACOSH, ATANH)


def compare(op, x, y, out):
    """out (bool) = x == y or x != y (``op`` EQ, NE) of complex x, y (compared in the wider one's precision)."""
    wide = D.complex128 in (x.dtype, y.dtype)
    return _map(ccompare_kernel, (x, y), out, op, COMPUTE=tl.float64 if wide else tl.float32)


def to_real(op, x, out):
    """out (real) = |x| or angle(x) of complex x (``op`` ABS, ANGLE)."""
    return _map(creal_kernel, (x,), out, op)


def prod_rows(x, geom, out, cumulative=False):
    """out = complex product of each row of x's (M, K) view ``geom`` = (M, M2, K, stride_m1, stride_m2,
    stride_k) (rows_geom's); ``cumulative``: the running products, out with x's strides."""
    M, M2, K, s1, s2, sk = geom
    dev = out._storage.launch_device
    rows = 64 if gpu_blocks(dev) else min(next_pow2(max(M, 1)), 1024)
    key = (id(cprod_rows_kernel), geom, x.dtype, out.dtype, bool(cumulative), dev, rows)
    site = _SITES.get(key)
    if site is None:
        site = _SITES.add(key, Launch(cprod_rows_kernel, (cdiv(M, rows),), dev,
                                      [fptr(x), fptr(out), M, M2, K, s1, s2, sk],
                                      {"CUM": bool(cumulative), "COMPUTE": compute_type(out.dtype.to_real()),
                                       "ROWS": rows}))
    if M:
        site(x.data_ptr(), out.data_ptr())
    return out


def make(op, a, b, out):
    """out (complex) = a + b i or a e^(b i) of real a, b (``op`` COMPLEX, POLAR)."""
    return _map(cmake_kernel, (a, b), out, op, _ND_MAKE)
