"""Element-wise kernels: strided N-ary maps, copy/cast, fill.

One strided kernel per arity; the op's math is a small ``@triton.jit``
function passed as the ``FN`` constexpr (so ``add`` and ``mul`` are two
specializations of ``binary_kernel``).  Operands are addressed through their
own strides (0 on broadcast dims, see ``_geometry``); values are computed in
``COMPUTE`` (fp32 for 16/32-bit floats, fp64 for doubles, int64 for integers)
and cast on store (bf16 with round-to-nearest-even, exactly on both devices).
"""
import triton
import triton.language as tl

from . import _geometry as G
from ._triton import Ptr, elementwise_block, launch


@triton.jit
def strided_offset(idx, d1, d2, d3, d4, d5, s0, s1, s2, s3, s4, s5, NDIM: tl.constexpr):
    """Element offset of row-major index ``idx`` in a view with sizes (., d1..d5) and strides s0..s5.

    NDIM = 0: contiguous (offset = idx); else the last NDIM dims are used.
    """
    if NDIM == 0:
        off = idx
    elif NDIM == 1:
        off = idx * s5
    else:
        off = (idx % d5) * s5
        idx = idx // d5
        if NDIM == 2:
            off += idx * s4
        else:
            off += (idx % d4) * s4
            idx = idx // d4
            if NDIM == 3:
                off += idx * s3
            else:
                off += (idx % d3) * s3
                idx = idx // d3
                if NDIM == 4:
                    off += idx * s2
                else:
                    off += (idx % d2) * s2
                    idx = idx // d2
                    if NDIM == 5:
                        off += idx * s1
                    else:
                        off += (idx % d1) * s1 + (idx // d1) * s0
    return off


@triton.jit
def cast_store(ptr, val, mask):
    """Store ``val`` to ``ptr`` converting to its element type; bf16 rounds to nearest even.

    (The interpreter truncates fp32 -> bf16 casts; doing the rounding on the
    bits gives the same result on both devices.)
    """
    if ptr.dtype.element_ty == tl.bfloat16:
        bits = val.to(tl.float32).to(tl.uint32, bitcast=True)
        bits = bits + 0x7FFF + ((bits >> 16) & 1)
        tl.store(ptr, (bits >> 16).to(tl.uint16).to(tl.bfloat16, bitcast=True), mask=mask)
    elif ptr.dtype.element_ty == tl.int1:
        tl.store(ptr, val != 0, mask=mask)
    else:
        tl.store(ptr, val.to(ptr.dtype.element_ty), mask=mask)


@triton.jit
def unary_kernel(x_ptr, out_ptr, n_elements, p0, p1,
                 d1, d2, d3, d4, d5,
                 sx0, sx1, sx2, sx3, sx4, sx5,
                 so0, so1, so2, so3, so4, so5,
                 FN: tl.constexpr, X_ND: tl.constexpr, O_ND: tl.constexpr,
                 COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    """out[i] = FN(x[i], p0, p1) over a strided view; p0/p1 are op parameters."""
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n_elements
    xo = strided_offset(idx, d1, d2, d3, d4, d5, sx0, sx1, sx2, sx3, sx4, sx5, X_ND)
    x = tl.load(x_ptr + xo, mask=mask).to(COMPUTE)
    oo = strided_offset(idx, d1, d2, d3, d4, d5, so0, so1, so2, so3, so4, so5, O_ND)
    cast_store(out_ptr + oo, FN(x, p0, p1), mask)


@triton.jit
def binary_kernel(x_ptr, y_ptr, out_ptr, n_elements, alpha,
                  d1, d2, d3, d4, d5,
                  sx0, sx1, sx2, sx3, sx4, sx5,
                  sy0, sy1, sy2, sy3, sy4, sy5,
                  so0, so1, so2, so3, so4, so5,
                  FN: tl.constexpr, X_ND: tl.constexpr, Y_ND: tl.constexpr, O_ND: tl.constexpr,
                  COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    """out[i] = FN(x[i], y[i], alpha) with broadcasting through strides."""
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n_elements
    xo = strided_offset(idx, d1, d2, d3, d4, d5, sx0, sx1, sx2, sx3, sx4, sx5, X_ND)
    yo = strided_offset(idx, d1, d2, d3, d4, d5, sy0, sy1, sy2, sy3, sy4, sy5, Y_ND)
    x = tl.load(x_ptr + xo, mask=mask).to(COMPUTE)
    y = tl.load(y_ptr + yo, mask=mask).to(COMPUTE)
    oo = strided_offset(idx, d1, d2, d3, d4, d5, so0, so1, so2, so3, so4, so5, O_ND)
    cast_store(out_ptr + oo, FN(x, y, alpha), mask)


@triton.jit
def ternary_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n_elements, alpha,
                   d1, d2, d3, d4, d5,
                   sx0, sx1, sx2, sx3, sx4, sx5,
                   sy0, sy1, sy2, sy3, sy4, sy5,
                   sz0, sz1, sz2, sz3, sz4, sz5,
                   so0, so1, so2, so3, so4, so5,
                   FN: tl.constexpr, X_ND: tl.constexpr, Y_ND: tl.constexpr, Z_ND: tl.constexpr,
                   O_ND: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    """out[i] = FN(x[i], y[i], z[i], alpha) (where, lerp, addcmul, fused backward rules)."""
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n_elements
    xo = strided_offset(idx, d1, d2, d3, d4, d5, sx0, sx1, sx2, sx3, sx4, sx5, X_ND)
    yo = strided_offset(idx, d1, d2, d3, d4, d5, sy0, sy1, sy2, sy3, sy4, sy5, Y_ND)
    zo = strided_offset(idx, d1, d2, d3, d4, d5, sz0, sz1, sz2, sz3, sz4, sz5, Z_ND)
    x = tl.load(x_ptr + xo, mask=mask).to(COMPUTE)
    y = tl.load(y_ptr + yo, mask=mask).to(COMPUTE)
    z = tl.load(z_ptr + zo, mask=mask).to(COMPUTE)
    oo = strided_offset(idx, d1, d2, d3, d4, d5, so0, so1, so2, so3, so4, so5, O_ND)
    cast_store(out_ptr + oo, FN(x, y, z, alpha), mask)


@triton.jit
def fill_kernel(out_ptr, n_elements, value,
                d1, d2, d3, d4, d5, so0, so1, so2, so3, so4, so5,
                O_ND: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    """out[i] = value over a strided view."""
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n_elements
    oo = strided_offset(idx, d1, d2, d3, d4, d5, so0, so1, so2, so3, so4, so5, O_ND)
    cast_store(out_ptr + oo, tl.full([BLOCK], value, COMPUTE), mask)


# ------------------------------------------------------------------ op math
@triton.jit
def identity(x, p0, p1):
    return x


@triton.jit
def add_fn(x, y, alpha):
    return x + y * alpha


@triton.jit
def add_noalpha_fn(x, y, alpha):
    return x + y


@triton.jit
def sub_fn(x, y, alpha):
    return x - y * alpha


@triton.jit
def mul_fn(x, y, alpha):
    return x * y


@triton.jit
def div_fn(x, y, alpha):
    return x / y


@triton.jit
def neg_fn(x, p0, p1):
    return -x


# ------------------------------------------------------------------ launchers
_COMPUTE = {}


def compute_type(dt):
    """tl dtype the kernels compute in for tgrad dtype ``dt``."""
    if dt.name == "float64":
        return tl.float64
    if dt.is_floating_point:
        return tl.float32
    return tl.int64


def kptr(t):
    """Pointer argument for a tensor-like (data_ptr(), dtype with ``.np``)."""
    return Ptr(t.data_ptr(), t.dtype.np)


def _operand_strides(t, shape):
    return G.expand_strides(t.shape, t.stride(), shape)


def _launch_map(kernel, fn, inputs, out, scalars, compute):
    """Launch an N-ary strided map: out = fn(*inputs, *scalars) over out.shape."""
    shape = out.shape
    n = out.numel()
    if n == 0:
        return out
    dev = out.device.type
    strides = [_operand_strides(t, shape) for t in inputs] + [list(out.stride())]
    sizes, per = G.launch_geometry(shape, strides)
    args = [kptr(t) for t in inputs] + [kptr(out), n] + list(scalars) + sizes
    nds = {}
    for k, (st, nd) in enumerate(per):
        args += st
        nds[k] = nd
    block = elementwise_block(n, dev)
    names = ["X_ND", "Y_ND", "Z_ND"][:len(inputs)] + ["O_ND"]
    cexpr = {"FN": fn, "COMPUTE": compute, "BLOCK": block}
    for k, name in enumerate(names):
        cexpr[name] = nds[k]
    launch(kernel, (triton.cdiv(n, block),), dev, args, cexpr)
    return out


def unary(fn, x, out, p0=0.0, p1=0.0, compute=None):
    """out = fn(x, p0, p1); ``out`` has x's shape (any strides)."""
    return _launch_map(unary_kernel, fn, [x], out, [p0, p1], compute or compute_type(x.dtype))


def binary(fn, x, y, out, alpha=1.0, compute=None):
    """out = fn(x, y, alpha) with x and y broadcast to out.shape."""
    return _launch_map(binary_kernel, fn, [x, y], out, [alpha], compute or compute_type(out.dtype))


def ternary(fn, x, y, z, out, alpha=1.0, compute=None):
    """out = fn(x, y, z, alpha) with x, y, z broadcast to out.shape."""
    return _launch_map(ternary_kernel, fn, [x, y, z], out, [alpha], compute or compute_type(out.dtype))


def copy(src, out):
    """out[...] = src (broadcast to out.shape), casting to out's dtype. Same device."""
    compute = compute_type(src.dtype)
    if src.dtype.is_floating_point != out.dtype.is_floating_point and out.dtype.is_floating_point:
        compute = compute_type(out.dtype)
    return _launch_map(unary_kernel, identity, [src], out, [0.0, 0.0], compute)


def fill(out, value):
    """out[...] = value (a Python number) over any strided view."""
    n = out.numel()
    if n == 0:
        return out
    dev = out.device.type
    sizes, per = G.launch_geometry(out.shape, [list(out.stride())])
    st, nd = per[0]
    block = elementwise_block(n, dev)
    if out.dtype.is_floating_point:
        value = float(value)
    else:
        value = int(value)
    launch(fill_kernel, (triton.cdiv(n, block),), dev, [kptr(out), n, value] + sizes + st,
           {"O_ND": nd, "COMPUTE": compute_type(out.dtype), "BLOCK": block})
    return out


@triton.jit
def pow_int_fn(x, n, unused):
    """x ** n for an integer n, by repeated squaring (exact products, like PyTorch's integer powers)."""
    e = tl.abs(n)
    r = tl.full(x.shape, 1, x.dtype)
    b = x
    while e > 0:
        if e % 2 == 1:
            r = r * b
        b = b * b
        e = e // 2
    if n < 0:
        r = 1 / r
    return r


@triton.jit
def pow_float_fn(x, p, unused):
    """x ** p for a non-integer p: exp2(p * log2(x)); NaN for x < 0, 0 at x == 0 when p > 0."""
    r = tl.exp2(p * tl.log2(tl.abs(x)))
    r = tl.where(x < 0, float("nan"), r)
    return tl.where(x == 0, tl.where(p > 0, 0.0, float("inf")), r)


@triton.jit
def exp_fn(x, p0, p1):
    return tl.exp(x)
