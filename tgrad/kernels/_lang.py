"""What every kernel family shares: strided addressing, casting stores, pointer arguments, compute
types, float64-accurate parameters, row tiling, and the portable math helpers (one tanh for all).

The launcher <-> tensor protocol: launchers read a tensor-like's ``data_ptr()``, ``dtype`` (with
``.np``), ``_shape``, ``_strides`` and ``_storage.device``; ``kptr`` makes its pointer argument.
"""
import math

import numpy as np
import triton
import triton.language as tl

from .runtime import Ptr, cdiv, gpu_blocks, next_pow2


# ------------------------------------------------------------------ addressing and stores
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
def row_offsets(rows, INNER, s_o, s_i):
    """Element offset of the first element of each row in a (OUTER, K, INNER) view."""
    return (rows // INNER) * s_o + (rows % INNER) * s_i



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



def row_tiles(M, K, device, budget=65536):
    """(ROWS, BLOCK_K) for row kernels: many rows per program on cpu, one row of <= 1024 on cuda."""
    if not gpu_blocks(device):
        bk = max(16, min(next_pow2(K), budget))
        return max(1, min(next_pow2(M), budget // bk)), bk
    return 1, max(16, min(next_pow2(K), 1024))


def row_grid(H, W, bm):
    """(PH, PW): the padded pixel grid the conv and pool kernels lay rows on, so a block of ``bm`` rows (a power of
    2) covers whole padded images or whole padded image rows: the taps of a block are then strided views of the
    input (the cpu trace compiler copies them as views, not index gathers; on a GPU only masked lanes are added).
    PW = next_pow2(W) (a multiple of bm when W > bm); PH = next_pow2(H) when a block holds a whole image,
    else a multiple of the block's bm // PW image rows."""
    pw = next_pow2(W) if W <= bm else cdiv(W, bm) * bm
    bh = max(bm // pw, 1)
    return (next_pow2(H) if bh >= H else cdiv(H, bh) * bh), pw


# ------------------------------------------------------------------ parameters
def split64(v):
    """A Python float as (hi, lo) fp32 values with hi + lo ~= v to ~48 bits (kernel float args are fp32)."""
    hi = float(np.float32(v))
    return (hi, float(np.float32(v - hi))) if math.isfinite(hi) else (hi, 0.0)


@triton.jit
def param_h(hi, lo, x):
    """hi + lo computed in x's dtype: a float64-accurate parameter from two fp32 kernel arguments.

    Integer maths uses hi alone (adding a float lo would turn the result into fp32).
    """
    r = tl.full(x.shape, hi, x.dtype)
    if x.dtype.is_floating():
        r = r + lo
    return r


# ------------------------------------------------------------------ portable math helpers
# No libdevice (it fails in the interpreter): tanh/log1p/expm1/atan from tl.exp/tl.log.
@triton.jit
def expm1_h(x):
    """exp(x) - 1 without cancellation: Kahan's (u - 1) * x / log(u) for |x| < 0.5, Taylor for tiny x."""
    u = tl.exp(x)
    um1 = u - 1.0
    small = tl.abs(x) < 0.5
    k = um1 * x / tl.log(tl.where(small & (u != 1.0), u, 2.0))
    k = tl.where(u == 1.0, x, k)
    t = x + x * x * (0.5 + x * (1.0 / 6.0))
    return tl.where(tl.abs(x) < 1e-5, t, tl.where(small, k, um1))


@triton.jit
def log1p_h(x):
    """log(1 + x) without cancellation: log(u) * x / (u - 1) with u = 1 + x, for |x| < 0.5."""
    u = 1.0 + x
    d = u - 1.0
    small = tl.abs(x) < 0.5
    k = tl.log(u) * (x / tl.where(small & (d != 0.0), d, 1.0))
    return tl.where(small, tl.where(d == 0.0, x, k), tl.log(u))


@triton.jit
def tanh_h(x):
    """tanh(x) = -expm1(-2|x|) / (2 + expm1(-2|x|)), signed."""
    e = expm1_h(-2.0 * tl.abs(x))
    t = -e / (2.0 + e)
    return tl.where(x < 0, -t, t)


@triton.jit
def tanh_epilogue_h(x):
    """tanh(x) = (1 - e) / (1 + e), e = exp(-2|x|), signed: for matmul's fused epilogue, where ``tanh_h``'s
    expm1 branches make the heaviest tiles spill (tests/ops/test_matmul_aot.py).  Within a few ulp of
    ``tanh_h`` for |x| > ~1e-3, less accurate near 0: ``linear(..., activation="tanh")`` and
    ``tanh(linear(...))`` can differ in the last bits."""
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x >= 0, t, -t)


@triton.jit
def sigmoid_h(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def softplus_h(x):
    """log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|))."""
    return tl.maximum(x, 0.0) + log1p_h(tl.exp(-tl.abs(x)))
