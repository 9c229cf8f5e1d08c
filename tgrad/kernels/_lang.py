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
from .runtime.native import elementwise, native_helper, rule_fma_rows, rule_lanes_add, rule_lanes_fold


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
    if t.dtype._kind == 3:     # Triton would take numpy's complex type for fp32 (TRITON_NOTES): never launch one
        raise NotImplementedError(f"this operation is not implemented for '{t.dtype.legacy_name}' tensors "
                                  "(tgrad's complex support: see the README)")
    return Ptr(t.data_ptr(), t.dtype.np)



def row_tiles(M, K, device, budget=65536):
    """(ROWS, BLOCK_K) for row kernels: many rows per program on cpu, one row of <= 1024 on cuda."""
    if not gpu_blocks(device):
        bk = max(16, min(next_pow2(K), budget))
        return max(1, min(next_pow2(M), budget // bk)), bk
    return 1, max(16, min(next_pow2(K), 1024))


def row_block(NB, H, W, cap, device):
    """(BLOCK, ROWS): ROWS pixels of the flat (NB, H, W) grid per program in BLOCK (a power of 2 <= cap) lanes, the
    layout of the conv and pool kernels' rows.

    cuda: ROWS = BLOCK = cap.  cpu: whole images per program when one fits, else a divisor of H of whole image
    rows, so a program never straddles an image and every tap's tile is a strided view for the trace compiler
    (no gather, no pow2 padding of H or W: only the lanes past ROWS are masked); of those, the fewest padded lanes
    over the grid, then the fewest programs.  A single image row wider than cap: cap pixels, straddling rows."""
    P = H * W
    if gpu_blocks(device) or W > cap:
        return cap, cap
    if P <= cap:
        best = None
        for b in (1 << i for i in range(next_pow2(P).bit_length() - 1, cap.bit_length())):
            k = min(b // P, NB)
            cost = (cdiv(NB, k) * b, cdiv(NB, k))
            if best is None or cost < best[0]:
                best = cost, (b, k * P)
            if k == NB:
                break
        return best[1]
    r = max(d for d in range(1, H + 1) if H % d == 0 and d * W <= cap)
    return next_pow2(r * W), r * W


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
    return tl.where(x == 0, x, tl.where(x < 0, -t, t))      # tanh(+-0) = +-0


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


# ------------------------------------------------------------------ ATen's cpu float32 order (AVX2)
# Vectorized<float>'s exp and log are SLEEF's expf8_u10 / logf8_u10 (xexpf / xlogf_u1, every mla an fma);
# reductions run 8 lanes, each left to right, folded by a shuffle tree.  tgrad/testing/aten_softmax.py is
# the numpy model these reproduce bit for bit on cpu (on cuda the fmas and the tree run the same steps).
# In cpu launches each call of sleef_exp / sleef_log / lanes_add / lanes_fold is one call of its C twin
# (runtime/aten_cpu.c, native_helper), the same bits as the Triton ops below in the interpreter.
@triton.jit
def _pow2i(q):
    """2^q as float32 for -126 <= q <= 127, from its exponent bits (a product, not a shift: the cpu tapes run
    integer products in numpy, shifts through the interpreter)."""
    return ((q + 127) * 8388608).to(tl.float32, bitcast=True)


@native_helper("sleef_expf", elementwise)
@triton.jit
def sleef_exp(d):
    """SLEEF xexpf: q = rint(d / ln 2), s = d - q ln 2 (two fmas), 1 + (s^2 p(s) + s), times 2^q in two halves;
    0 below -104, inf above 100.  d float32."""
    t = d * 1.442695040888963407359924681001892137426645954152985934135449406931
    t = tl.minimum(tl.maximum(t, -200.0), 200.0)
    qf = (t + 12582912.0) - 12582912.0          # round to nearest even (|t| < 2^22)
    q = qf.to(tl.int32)
    h = tl.floor(qf * 0.5).to(tl.int32)         # q >> 1
    s = tl.fma(qf, -0.693145751953125, d)
    s = tl.fma(qf, -1.428606765330187045e-06, s)
    u = tl.fma(s, 0.000198527617612853646278381, 0.00139304355252534151077271)
    u = tl.fma(u, s, 0.00833336077630519866943359)
    u = tl.fma(u, s, 0.0416664853692054748535156)
    u = tl.fma(u, s, 0.166666671633720397949219)
    u = tl.fma(u, s, 0.5)
    u = 1.0 + tl.fma(s * s, u, s)
    u = u * _pow2i(h) * _pow2i(q - h)           # |q| <= 200: both factors normal (a NaN d stays NaN)
    u = tl.where(d < -104.0, 0.0, u)
    return tl.where(d > 100.0, float("inf"), u)


@native_helper("sleef_logf", elementwise)
@triton.jit
def sleef_log(d):
    """SLEEF xlogf_u1 for float32 d >= FLT_MIN (sums of exps: >= 1): d = m 2^e with m in [0.75, 1.5),
    log m = 2 atanh((m - 1) / (m + 1)) in double-float steps; inf at inf, nan below 0, -inf at 0."""
    e = (d * (1.0 / 0.75)).to(tl.int32, bitcast=True) // 8388608 - 0x7f     # the exponent (d > 0: no sign bit)
    m = (d.to(tl.int32, bitcast=True) - e * 8388608).to(tl.float32, bitcast=True)
    ef = e.to(tl.float32)
    sx = 0.69314718246459960938 * ef
    sy = tl.fma(tl.zeros_like(ef) - 1.904654323148236017e-09, ef, tl.fma(tl.zeros_like(ef) + 0.69314718246459960938,
                                                                         ef, -sx))
    nx = m - 1.0                                 # dfadd2(-1, m)
    v = nx + 1.0
    ny = (-1.0 - (nx - v)) + (m - v)
    dx = m + 1.0                                 # dfadd2(1, m)
    v = dx - 1.0
    dy = (1.0 - (dx - v)) + (m - v)
    t = 1.0 / dx                                 # dfdiv
    qx = nx * t
    u = tl.fma(t, nx, -qx)
    qy = tl.fma(-dy, t, tl.fma(-dx, t, 1.0))
    qy = tl.fma(qx, qy, tl.fma(ny, t, u))
    x2 = qx * qx
    p = tl.fma(tl.fma(tl.zeros_like(x2) + 0.3027294874, x2, 0.3996108174), x2, 0.6666694880)
    yx = qx * 2.0
    rx = sx + yx
    ry = (((sx - rx) + yx) + sy) + qy * 2.0
    w = (x2 * qx) * p
    r = rx + w
    r = r + (((rx - r) + w) + ry)
    r = tl.where(d == float("inf"), float("inf"), r)
    r = tl.where((d < 0.0) | (d != d), float("nan"), r)
    return tl.where(d == 0.0, float("-inf"), r)


@triton.jit
def _halve(v, A: tl.constexpr, N: tl.constexpr):
    """v[:, :N/2], v[:, N/2:] of v [A, N]."""
    return tl.split(tl.permute(tl.reshape(v, [A, 2, N // 2]), [0, 2, 1]))


@native_helper("lanes_add", rule_lanes_add)
@triton.jit
def lanes_add(acc, v, ROWS: tl.constexpr, BLOCK: tl.constexpr, LANES: tl.constexpr):
    """acc [ROWS, LANES] plus a block v [ROWS, BLOCK] (zeros past the row), lane l getting v[:, c LANES + l]
    for c = 0, 1, ... one after another (the cpu executor's cumsum is numpy's sequential one)."""
    c = tl.reshape(v, [ROWS, BLOCK // LANES, LANES])
    ch = tl.arange(0, BLOCK // LANES)[None, :, None]
    c = tl.where(ch == 0, c + acc[:, None, :], c)
    c = tl.cumsum(c, axis=1)
    return tl.sum(tl.where(ch == BLOCK // LANES - 1, c, 0.0), axis=1)


@native_helper("lanes_fold8", rule_lanes_fold)
@triton.jit
def lanes_fold(acc, ROWS: tl.constexpr, LANES: tl.constexpr):
    """vec_reduce_all of acc [ROWS, LANES]: 8 lanes by AVX2's tree (l + l+4, then + l+2, then + l+1); 1 lane as is."""
    if LANES == 8:
        a, b = _halve(acc, ROWS, 8)
        a, b = _halve(a + b, ROWS, 4)
        a, b = _halve(a + b, ROWS, 2)
        r = tl.reshape(a + b, [ROWS])
    else:
        r = tl.reshape(acc, [ROWS])
    return r


@native_helper("fma_rows", rule_fma_rows)
@triton.jit
def fma_rows(acc, a, b, ROWS: tl.constexpr, BLOCK: tl.constexpr, ROUND: tl.constexpr = None):
    """acc [BLOCK] = fma(a[i], b[i], acc) for the rows i = 0 .. ROWS - 1 of a, b [ROWS, BLOCK] in turn (a row is
    picked by a sum of it and zeros: exact, -0 made +0, which an fma into a nonzero or +0 acc cannot tell);
    ``ROUND`` (bf16 / fp16): acc rounded to it after each row (an accumulator stored in that dtype)."""
    r = tl.arange(0, ROWS)[:, None]
    for i in tl.static_range(ROWS):
        acc = tl.fma(tl.sum(tl.where(r == i, a, 0.0), axis=0), tl.sum(tl.where(r == i, b, 0.0), axis=0), acc)
        if ROUND is not None:
            acc = round_as(acc, ROUND)
    return acc


@triton.jit
def round_as(val, DT: tl.constexpr):
    """float32 ``val`` rounded to ``DT`` (bf16: to nearest even on the bits, as cast_store; fp16: the cast) and
    back to float32."""
    if DT == tl.bfloat16:
        bits = val.to(tl.uint32, bitcast=True)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return bits.to(tl.float32, bitcast=True)
    else:
        return val.to(DT).to(tl.float32)
