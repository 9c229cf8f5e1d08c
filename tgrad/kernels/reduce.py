"""Reduction and scan kernels over the last axis of a strided (M, K) view.

A reduction over any set of dims is a reduction over K of an (M, K) view:
row ``m`` splits as ``(m // M2, m % M2)`` over two merged groups of kept dims
with strides ``stride_m1``/``stride_m2``, and the reduced dims are merged
into one stride ``stride_k`` (the ops layer makes a contiguous copy first
when that is impossible).  Outputs are contiguous: ``out[m]``.
"""
import numpy as np
import triton
import triton.language as tl

from .runtime import launcher as T
from .runtime import Launch, Sites, cdiv, gpu_blocks, launch, next_pow2
from ._lang import cast_store, compute_type, kptr
from .runtime.native import aten_twin, native_helper, rule_lanes_add


# accumulate_rows_kernel OP codes (one pass; SUM and PROD also name scan_rows_kernel's two scans)
SUM = tl.constexpr(0)
PROD = tl.constexpr(1)
ALL = tl.constexpr(4)
ANY = tl.constexpr(5)
NORM1 = tl.constexpr(6)
NORM2 = tl.constexpr(7)
NORMP = tl.constexpr(8)
NORM0 = tl.constexpr(10)
MEAN = tl.constexpr(14)
# centered_rows_kernel OP codes (two passes)
LSE = tl.constexpr(11)
VAR = tl.constexpr(12)
STD = tl.constexpr(13)
ACCUMULATE = {"sum": 0, "prod": 1, "all": 4, "any": 5, "norm1": 6, "norm2": 7, "normp": 8, "norm0": 10, "mean": 14}
CENTERED = {"logsumexp": 11, "var": 12, "std": 13}
EXTREMUM = {"max": (False, False), "min": (True, False), "norminf": (False, True), "normneginf": (True, True)}

# tie_weights_kernel MODE codes
EQ = tl.constexpr(0)
ABS_EQ = tl.constexpr(1)
ONEHOT = tl.constexpr(2)
SIGN = tl.constexpr(3)
EQ_STRICT = tl.constexpr(7)
# prod_grad_kernel MODE codes
PROD_OTHERS = tl.constexpr(4)
BEFORE_ZERO = tl.constexpr(5)
FIRST_ZERO = tl.constexpr(6)
TIE_WEIGHTS = {"eq": 0, "abs_eq": 1, "onehot": 2, "sign": 3, "eq_strict": 7}
PROD_GRAD = {"prod_others": 4, "before_zero": 5, "first_zero": 6}


@triton.jit
def _row_prod(acc, BLOCK_K: tl.constexpr):
    """Product along axis 1 of a [ROWS, BLOCK_K] block, as the last column of its cumprod.

    (tl.reduce with a multiply combine runs element by element in the interpreter; the
    built-in scan and sum do not.)
    """
    last = tl.arange(0, BLOCK_K) == BLOCK_K - 1
    return tl.sum(tl.where(last[None, :], tl.cumprod(acc, axis=1), 0), axis=1)


@triton.jit
def _row_base(rows, M2, stride_m1, stride_m2):
    return (rows // M2) * stride_m1 + (rows % M2) * stride_m2


def _norm2_twin(args, cx, grid):
    """aten_cpu.c's twin of a cpu launch of ``accumulate_rows_kernel`` with ATEN (float32 contiguous rows: the
    2-norm in ATen's order, ``_aten_norm2_rows``), or None where the kernel's tape runs."""
    f = aten_twin("norm2_rows_f32")
    x, out, _, M, M2, K, s1, s2, sk = args[:9]
    if f is None or not cx.get("ATEN") or sk != 1 or cx["VB"] < K // 8 or x.dtype != np.float32 \
            or out.dtype != np.float32:
        return None
    return T.CpuTwin(f, M, M2, K, s1, s2)


@triton.jit
def extremum_rows_kernel(x_ptr, out_ptr, idx_ptr, M, M2, K, stride_m1, stride_m2, stride_k, fill,
                         MIN: tl.constexpr, ABS: tl.constexpr, WITH_INDEX: tl.constexpr, IS_FLOAT: tl.constexpr,
                         COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK_K: tl.constexpr):
    """out[m] = max_k (MIN: min_k) x[m, k] (ABS: of |x|, the inf-norms) of a strided (M, K) view, idx[m] its
    first position; a NaN wins (and its first position); ``fill``: the identity.  out, idx hold M elements."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    base = _row_base(rows, M2, stride_m1, stride_m2)
    best = tl.full([ROWS], fill, COMPUTE)
    bidx = tl.zeros([ROWS], dtype=tl.int64)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        x = tl.load(x_ptr + base[:, None] + cols[None, :] * stride_k, mask=m, other=0).to(COMPUTE)
        if ABS:
            x = tl.abs(x)
        v = tl.where(m, x, fill)
        if IS_FLOAT:
            isn = v != v
            v = tl.where(isn, fill, v)
        if MIN:
            cv = tl.min(v, axis=1)
            take = cv < best
            if WITH_INDEX:
                ci = tl.argmin(v, axis=1, tie_break_left=True)
        else:
            cv = tl.max(v, axis=1)
            take = cv > best
            if WITH_INDEX:
                ci = tl.argmax(v, axis=1, tie_break_left=True)
        if IS_FLOAT:
            nan_any = tl.max(isn.to(tl.int32), axis=1) > 0
            cv = tl.where(nan_any, float("nan"), cv)
            take = (take | nan_any) & (best == best)
            if WITH_INDEX:
                ci = tl.where(nan_any, tl.argmax(isn.to(tl.int32), axis=1, tie_break_left=True), ci)
        best = tl.where(take, cv, best)
        if WITH_INDEX:
            bidx = tl.where(take, ci.to(tl.int64) + k0, bidx)
    cast_store(out_ptr + rows, best, rmask)
    if WITH_INDEX:
        tl.store(idx_ptr + rows, bidx, mask=rmask)


@triton.jit
def centered_rows_kernel(x_ptr, out_ptr, c_ptr, M, M2, K, stride_m1, stride_m2, stride_k, dof,
                         OP: tl.constexpr, HAS_C: tl.constexpr, COMPUTE: tl.constexpr, ROWS: tl.constexpr,
                         BLOCK_K: tl.constexpr):
    """Two passes over each row of a strided (M, K) view: c = max (LSE) / mean (VAR, STD; HAS_C: c[m] given),
    then out[m] = log sum exp(x - c) + c, or sum (x - c)^2 / dof (its sqrt for STD).  out holds M elements."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    base = _row_base(rows, M2, stride_m1, stride_m2)
    if HAS_C:
        c = tl.load(c_ptr + rows, mask=rmask, other=0).to(COMPUTE)
    else:
        acc = tl.zeros([ROWS, BLOCK_K], dtype=COMPUTE)
        if OP == LSE:
            acc += float("-inf")
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + tl.arange(0, BLOCK_K)
            m = rmask[:, None] & (cols[None, :] < K)
            x = tl.load(x_ptr + base[:, None] + cols[None, :] * stride_k, mask=m, other=0).to(COMPUTE)
            if OP == LSE:
                acc = tl.maximum(acc, tl.where(m, x, float("-inf")))
            else:
                acc += x
        if OP == LSE:
            c = tl.max(acc, axis=1)
            c = tl.where((c == float("inf")) | (c == float("-inf")), 0.0, c)
        else:
            c = tl.sum(acc, axis=1) / K
    acc2 = tl.zeros([ROWS, BLOCK_K], dtype=COMPUTE)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        x = tl.load(x_ptr + base[:, None] + cols[None, :] * stride_k, mask=m, other=0).to(COMPUTE)
        if OP == LSE:
            acc2 += tl.where(m, tl.exp(x - c[:, None]), 0.0)
        else:
            d = tl.where(m, x - c[:, None], 0.0)
            acc2 += d * d
    s = tl.sum(acc2, axis=1)
    if OP == LSE:
        r = tl.log(s) + c
    else:
        r = s / dof
        if OP == STD:
            r = tl.sqrt(r)
    cast_store(out_ptr + rows, r, rmask)


@triton.jit
def _aten_norm2_rows(x_ptr, base, rmask, K, ROWS: tl.constexpr, VB: tl.constexpr):
    """sum_k x[k]^2 float32 [ROWS] of contiguous rows of K as ATen's cpu vector_norm over the last dim
    (norm_kernel_tensor_iterator_impl, AVX2): the squares (rounded) of the K // 8 vectors added lane-wise left to
    right, the 8 lanes left to right, then the tail's squares by fma (tgrad/testing/aten_norm.py).  VB >= K // 8."""
    NV = K // 8
    vi = tl.arange(0, VB)[None, :, None]               # [ROWS, VB vectors, 8 lanes]: memory order
    ln = tl.arange(0, 8)[None, None, :]
    x = tl.load(x_ptr + base[:, None, None] + vi * 8 + ln, mask=rmask[:, None, None] & (vi < NV),
                other=0.0).to(tl.float32)
    acc = tl.sum(tl.where(vi == VB - 1, tl.cumsum(x * x, axis=1), 0.0), axis=1)   # masked vectors add 0
    lt = tl.arange(0, 8)[None, :]
    b = tl.sum(tl.where(lt == 7, tl.cumsum(acc, axis=1), 0.0), axis=1)
    x = tl.load(x_ptr + base[:, None] + NV * 8 + lt, mask=rmask[:, None] & (lt < K - NV * 8), other=0.0)
    x = x.to(tl.float32)
    for i in tl.static_range(7):                      # the tail: scalar fmas (masked lanes add 0 * 0)
        xi = tl.sum(tl.where(lt == i, x, 0.0), axis=1)
        b = tl.fma(xi, xi, b)
    return b


@triton.jit
def accumulate_rows_kernel(x_ptr, out_ptr, y_ptr, M, M2, K, stride_m1, stride_m2, stride_k, p,
                           stride_ym1, stride_ym2, stride_yk,
                           OP: tl.constexpr, MUL: tl.constexpr, COMPUTE: tl.constexpr, ROWS: tl.constexpr,
                           BLOCK_K: tl.constexpr, ATEN: tl.constexpr = False, VB: tl.constexpr = 1):
    """out[m] = OP_k x[m, k] in one pass over a strided (M, K) view: sum, mean, prod, all, any, the p-norms
    (p: the order); MUL (OP == SUM): sum_k x[m, k] * y[m, k], y a second (M, K) view.  out holds M elements.
    ATEN (OP == NORM2, float32 contiguous rows of up to 2^16): ATen's cpu order (``_aten_norm2_rows``)."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    base = _row_base(rows, M2, stride_m1, stride_m2)
    if ATEN:
        cast_store(out_ptr + rows, tl.sqrt(_aten_norm2_rows(x_ptr, base, rmask, K, ROWS, VB)), rmask)
        return
    if OP == PROD:
        acc = tl.full([ROWS, BLOCK_K], 1, COMPUTE)
    elif OP == ALL:
        acc = tl.full([ROWS, BLOCK_K], 1, tl.int32)
    elif OP == ANY:
        acc = tl.zeros([ROWS, BLOCK_K], dtype=tl.int32)
    else:
        acc = tl.zeros([ROWS, BLOCK_K], dtype=COMPUTE)
    if MUL:
        ybase = _row_base(rows, M2, stride_ym1, stride_ym2)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        x = tl.load(x_ptr + base[:, None] + cols[None, :] * stride_k, mask=m, other=0).to(COMPUTE)
        if MUL:
            y = tl.load(y_ptr + ybase[:, None] + cols[None, :] * stride_yk, mask=m, other=0).to(COMPUTE)
            # the where keeps the product a rounded value of its own (no multiply-add contraction on GPUs)
            acc += tl.where(m, x * y, 0)
        elif OP == SUM or OP == MEAN:
            acc += x
        elif OP == PROD:
            acc *= tl.where(m, x, 1)
        elif OP == ALL:
            acc = tl.minimum(acc, tl.where(m, (x != 0).to(tl.int32), 1))
        elif OP == ANY:
            acc = tl.maximum(acc, (x != 0).to(tl.int32))
        elif OP == NORM1:
            acc += tl.abs(x)
        elif OP == NORM2:
            acc += x * x
        elif OP == NORM0:
            acc += (x != 0).to(COMPUTE)
        else:  # NORMP: |x|^p, 0 at x == 0
            a = tl.abs(x)
            acc += tl.where(a == 0, 0.0, tl.exp(p * tl.log(a)))
    if OP == PROD:
        r = _row_prod(acc, BLOCK_K)
    elif OP == ALL:
        r = tl.min(acc, axis=1)
    elif OP == ANY:
        r = tl.max(acc, axis=1)
    else:
        r = tl.sum(acc, axis=1)
        if OP == MEAN:
            r = r / K
        elif OP == NORM2:
            r = tl.sqrt(r)
        elif OP == NORMP:
            r = tl.where(r == 0, 0.0, tl.exp(tl.log(r) / p))
    cast_store(out_ptr + rows, r, rmask)



T.cpu_twin(accumulate_rows_kernel, _norm2_twin)


@triton.jit
def _nth(blk, idx, j, AXIS: tl.constexpr):
    """blk's entry j along AXIS (idx: that axis' arange, broadcast): exact, the others add as +0."""
    return tl.sum(tl.where(idx == j, blk, 0.0), axis=AXIS)


@triton.jit
def _fold2(f, v):
    a, b = tl.split(v)
    return (f + a) + b


@triton.jit
def _halves(v, A: tl.constexpr, N: tl.constexpr):
    return tl.split(tl.permute(tl.reshape(v, [A, 2, N // 2]), [0, 2, 1]))


@triton.jit
def _fold4(f, v, A: tl.constexpr):
    a, b = _halves(v, A, 4)
    return _fold2(_fold2(f, a), b)


@triton.jit
def _fold8(f, v, A: tl.constexpr):
    a, b = _halves(v, A, 8)
    return _fold4(_fold4(f, a, A), b, A)


@triton.jit
def _fold(f, v, A: tl.constexpr, N: tl.constexpr):
    """f + v[:, 0] + v[:, 1] + ... + v[:, N - 1], left to right: f [A], v [A, N], N a power of 2 <= 16."""
    if N == 1:
        f = f + tl.reshape(v, [A])
    elif N == 2:
        f = _fold2(f, v)
    elif N == 4:
        f = _fold4(f, v, A)
    elif N == 8:
        f = _fold8(f, v, A)
    else:
        a, b = _halves(v, A, 16)
        f = _fold8(_fold8(f, a, A), b, A)
    return f


@native_helper("lanes_add", rule_lanes_add)
@triton.jit
def _fold_rows(f, v, A: tl.constexpr, N: tl.constexpr, ONE: tl.constexpr):
    """_fold of f [A, ONE = 1] (never -0) and v [A, N]: one native pass on cpu (lanes_add with one lane, whose final
    + 0 leaves a sum that started from a non-negative-zero f as it is) in place of a pass per split and add."""
    return tl.reshape(_fold(tl.reshape(f, [A]), v, A, N), [A, ONE])


@native_helper("lanes_add", rule_lanes_add)
@triton.jit
def _ilp_fold(f, p, R: tl.constexpr, W: tl.constexpr, VEC: tl.constexpr):
    """((f + p0) + p1) + p2) + p3 of the 4 interleaved vectors p0 .. p3 of p [R, W = 4 VEC] (lanes k VEC .. k VEC + VEC
    - 1), f [R, VEC] zeros: one native lanes_add pass on cpu (its final + 0 is exact: the partials are never -0)."""
    pt = tl.reshape(tl.permute(tl.reshape(p, [R, 4, VEC]), [0, 2, 1]), [R * VEC, 4])
    p01, p23 = _halves(pt, R * VEC, 4)
    p0, p1 = tl.split(p01)
    p2, p3 = tl.split(p23)
    return (((f + tl.reshape(p0, [R, VEC])) + tl.reshape(p1, [R, VEC])) + tl.reshape(p2, [R, VEC])) + tl.reshape(
        p3, [R, VEC])


@triton.jit
def _fold_axis(blk, R: tl.constexpr, G: tl.constexpr, N: tl.constexpr, W: tl.constexpr):
    """[R, G, W] sums, left to right, of the N entries of each [R, G, N, W] group of a [R, G N, W] block."""
    v = tl.reshape(tl.permute(tl.reshape(blk, [R, G, N, W]), [0, 1, 3, 2]), [R * G * W, N])
    return tl.reshape(_fold_rows(tl.zeros([R * G * W, 1], blk.dtype), v, R * G * W, N, 1), [R, G, W])


@triton.jit
def _cload(x_ptr, y_ptr, bx, by, k, SK, YSK, mask, MUL: tl.constexpr, COMPUTE: tl.constexpr):
    """Element k of the row at bx (MUL: times y's element k of the row at by, a rounded product of its own)."""
    v = tl.load(x_ptr + bx + k * SK, mask=mask, other=0).to(COMPUTE)
    if MUL:
        v = tl.where(mask, v * tl.load(y_ptr + by + k * YSK, mask=mask, other=0).to(COMPUTE), 0.0)
    return v


@triton.jit
def cascade_sum_kernel(x_ptr, y_ptr, out_ptr, NR, C0, CW, CN, M2, K, CH, stride_m1, stride_m2, SK, ys1, ys2, YSK,
                       DIV, SPLIT: tl.constexpr, MUL: tl.constexpr, MEAN: tl.constexpr, COMPUTE: tl.constexpr,
                       VEC: tl.constexpr, ILP: tl.constexpr, L: tl.constexpr, NL: tl.constexpr, BG: tl.constexpr,
                       TAIL: tl.constexpr, NV: tl.constexpr, NS: tl.constexpr, ROWS: tl.constexpr):
    """out[m] = sum_k x[m, k] (MEAN: / DIV) for NR rows m = (r // CW) CN + C0 + r % CW (columns C0 .. C0 + CW - 1
    of each CN outputs), added in ATen's cpu order (cascade_sum):
    VEC-lane vectors, ILP (4 or 1) of them interleaved (W = ILP VEC lanes); rows of W lanes summed in chunks of L
    (NL = 0: no whole chunk), chunk sums in groups of L (NL levels, BG chunks a block), then the TAIL rows
    left, the NV leftover vectors, the ILP partials, the NS scalars left and the VEC lanes, each left to right.
    Element k of a row is at k SK (VEC = 1: ATen's scalar path, for strided rows and rows shorter than a
    vector); MUL: the rows of x * y summed (y's rows: strides ys1, ys2, YSK).  SPLIT: row r is
    x[r CH : min(K, (r + 1) CH)] (a full sum split as ATen splits it between threads; counts are maxima, masked)."""
    W: tl.constexpr = ILP * VEC
    R: tl.constexpr = ROWS
    r = tl.program_id(0).to(tl.int64) * R + tl.arange(0, R)
    rmask = r < NR
    rows = (r // CW) * CN + C0 + r % CW
    if SPLIT:
        base = rows * CH * SK
        yb = rows * CH * YSK
        n = tl.minimum(K - rows * CH, CH)
    else:
        base = _row_base(rows, M2, stride_m1, stride_m2)
        yb = _row_base(rows, M2, ys1, ys2)
        n = tl.zeros([R], tl.int64) + K
    V = n // VEC
    S = V // ILP
    G0 = S // L
    q = tl.arange(0, W)
    if NL > 0:
        G1 = G0 // L
        G2 = G1 // L
        g = tl.arange(0, BG)[None, :, None]
        c = tl.zeros([R, BG, W], COMPUTE)       # chunk g: rows g L .. g L + L - 1, left to right
        cm = rmask[:, None, None] & (g < G0[:, None, None]) & (q[None, None, :] < W)
        for j in tl.static_range(L):
            c += _cload(x_ptr, y_ptr, base[:, None, None], yb[:, None, None], (g * L + j) * W + q[None, None, :],
                        SK, YSK, cm, MUL, COMPUTE)
    acc0 = tl.zeros([R, W], COMPUTE)            # the rows after the last whole chunk
    for j in tl.static_range(TAIL):
        t = G0 * L + j
        m = (rmask & (t < S))[:, None] & (q[None, :] < W)
        acc0 += _cload(x_ptr, y_ptr, base[:, None], yb[:, None], (t * W)[:, None] + q[None, :], SK, YSK, m, MUL,
                       COMPUTE)
    if NL == 0:
        p = acc0
    elif NL == 1:
        p = acc0 + _fold_axis(c, R, 1, BG, W).reshape([R, W])
    else:
        d = _fold_axis(c, R, BG // L, L, W)                 # groups of L chunks
        h = tl.arange(0, BG // L)[None, :, None]
        acc1 = _nth(d, h, G1[:, None, None], 1)             # the unfinished group
        d = tl.where(h < G1[:, None, None], d, 0.0)
        if NL == 2:
            p = (acc0 + acc1) + _fold_axis(d, R, 1, BG // L, W).reshape([R, W])
        else:
            e = _fold_axis(d, R, BG // (L * L), L, W)
            hh = tl.arange(0, BG // (L * L))[None, :, None]
            acc2 = _nth(e, hh, G2[:, None, None], 1)
            e = tl.where(hh < G2[:, None, None], e, 0.0)
            p = ((acc0 + acc1) + acc2) + _fold_axis(e, R, 1, BG // (L * L), W).reshape([R, W])
    # the leftover vectors join the first of the ILP interleaved partial vectors (lanes 0 .. VEC - 1 of p; the
    # other lanes add +0, exact: p is never -0), then the ILP partials
    for i in tl.static_range(NV):
        v = ILP * S + i
        m = (rmask & (v < V))[:, None] & (q[None, :] < VEC)
        p += _cload(x_ptr, y_ptr, base[:, None], yb[:, None], (v * VEC)[:, None] + q[None, :], SK, YSK, m, MUL,
                    COMPUTE)
    if ILP == 4:
        p0 = _ilp_fold(tl.zeros([R, VEC], COMPUTE), p, R, W, VEC)
    else:
        p0 = p
    f = tl.zeros([R], COMPUTE)                  # the scalars left, then the VEC lanes
    for i in tl.static_range(NS):
        t = V * VEC + i
        f += _cload(x_ptr, y_ptr, base, yb, t, SK, YSK, rmask & (t < n), MUL, COMPUTE)
    f = tl.reshape(_fold_rows(tl.reshape(f, [R, 1]), p0, R, VEC, 1), [R])
    if MEAN:
        f = f / DIV
    cast_store(out_ptr + rows, f, rmask)


@triton.jit
def scan_rows_kernel(x_ptr, out_ptr, M, M2, K, stride_m1, stride_m2, stride_k,
                     OP: tl.constexpr, REVERSE: tl.constexpr, COMPUTE: tl.constexpr,
                     ROWS: tl.constexpr, BLOCK_K: tl.constexpr):
    """out[m, k] = sum (OP=SUM) or product (OP=PROD) of x[m, :k+1] (REVERSE: of x[m, k:]).

    x and out share the strides of an (M, K) view; chunks of BLOCK_K carry the running total.
    """
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    base = _row_base(rows, M2, stride_m1, stride_m2)
    if OP == SUM:
        carry = tl.zeros([ROWS], dtype=COMPUTE)
    else:
        carry = tl.full([ROWS], 1, COMPUTE)
    nchunks = tl.cdiv(K, BLOCK_K)
    for i in range(0, nchunks):
        if REVERSE:
            k0 = (nchunks - 1 - i) * BLOCK_K
        else:
            k0 = i * BLOCK_K
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        offs = base[:, None] + cols[None, :] * stride_k
        x = tl.load(x_ptr + offs, mask=m, other=0).to(COMPUTE)
        if OP == SUM:
            c = tl.cumsum(x, axis=1, reverse=REVERSE) + carry[:, None]
            carry += tl.sum(x, axis=1)
        else:
            x = tl.where(m, x, 1)
            c = tl.cumprod(x, axis=1, reverse=REVERSE) * carry[:, None]
            carry *= _row_prod(x, BLOCK_K)
        cast_store(out_ptr + offs, c, m)


@triton.jit
def tie_weights_kernel(x_ptr, v_ptr, out_ptr, M, M2, K, stride_m1, stride_m2, stride_k,
                       MODE: tl.constexpr, COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK_K: tl.constexpr):
    """Gradient weights w[m, k] (contiguous (M, K)) of a strided (M, K) view x, constant w.r.t. x: EQ (x == v[m]) /
    count (ties share; NaN == NaN), EQ_STRICT (IEEE ==: 0/0 on a NaN row), ABS_EQ sign(x) (|x| == v[m]) / count,
    ONEHOT (k == v[m]), SIGN sign(x)."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    base = _row_base(rows, M2, stride_m1, stride_m2)
    if MODE == ONEHOT:
        v = tl.load(v_ptr + rows, mask=rmask, other=0).to(tl.int64)
    elif MODE != SIGN:
        v = tl.load(v_ptr + rows, mask=rmask, other=0).to(COMPUTE)
    cnt = tl.zeros([ROWS], dtype=COMPUTE)
    if MODE == EQ or MODE == EQ_STRICT or MODE == ABS_EQ:
        acc = tl.zeros([ROWS, BLOCK_K], dtype=COMPUTE)
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + tl.arange(0, BLOCK_K)
            m = rmask[:, None] & (cols[None, :] < K)
            x = tl.load(x_ptr + base[:, None] + cols[None, :] * stride_k, mask=m, other=0).to(COMPUTE)
            if MODE == ABS_EQ:
                x = tl.abs(x)
            hit = x == v[:, None]
            if MODE != EQ_STRICT:
                hit = hit | ((x != x) & (v[:, None] != v[:, None]))
            acc += tl.where(m & hit, 1.0, 0.0)
        cnt = tl.sum(acc, axis=1)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        if MODE == ONEHOT:
            w = tl.where(cols[None, :] == v[:, None], 1.0, 0.0)
        else:
            x = tl.load(x_ptr + base[:, None] + cols[None, :] * stride_k, mask=m, other=0).to(COMPUTE)
            sgn = tl.where(x > 0, 1.0, tl.where(x < 0, -1.0, 0.0))
            if MODE == SIGN:
                w = sgn
            else:
                if MODE == ABS_EQ:
                    a = tl.abs(x)
                else:
                    a = x
                hit = a == v[:, None]
                if MODE != EQ_STRICT:
                    hit = hit | ((a != a) & (v[:, None] != v[:, None]))
                w = tl.where(hit, 1.0 / cnt[:, None], 0.0)
                if MODE == EQ_STRICT:
                    w = tl.where(cnt[:, None] == 0, float("nan"), w)
                if MODE == ABS_EQ:
                    w = w * sgn
        cast_store(out_ptr + rows[:, None] * K + cols[None, :], w, m)


@triton.jit
def prod_grad_kernel(x_ptr, out_ptr, M, M2, K, stride_m1, stride_m2, stride_k,
                     MODE: tl.constexpr, COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK_K: tl.constexpr):
    """Weights w[m, k] (contiguous (M, K)) of prod/cumprod backward over a strided (M, K) view x: PROD_OTHERS
    prod_{j != k} x[m, j] (no division), BEFORE_ZERO no zero in x[m, :k+1], FIRST_ZERO x[m, k] is the first zero."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    base = _row_base(rows, M2, stride_m1, stride_m2)
    if MODE == PROD_OTHERS:
        acc = tl.zeros([ROWS, BLOCK_K], dtype=COMPUTE)
        pacc = tl.full([ROWS, BLOCK_K], 1, COMPUTE)
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + tl.arange(0, BLOCK_K)
            m = rmask[:, None] & (cols[None, :] < K)
            x = tl.load(x_ptr + base[:, None] + cols[None, :] * stride_k, mask=m, other=0).to(COMPUTE)
            acc += tl.where(m & (x == 0), 1.0, 0.0)
            pacc *= tl.where(m & (x != 0), x, 1.0)
        cnt = tl.sum(acc, axis=1)
        nzp = _row_prod(pacc, BLOCK_K)
    seen = tl.zeros([ROWS], dtype=tl.int32)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        x = tl.load(x_ptr + base[:, None] + cols[None, :] * stride_k, mask=m, other=0).to(COMPUTE)
        if MODE == PROD_OTHERS:
            # one zero: only its position sees the product of the others; two or more: all 0
            w = tl.where(x == 0, tl.where(cnt[:, None] == 1, nzp[:, None], 0.0),
                         tl.where(cnt[:, None] == 0, nzp[:, None] / x, 0.0))
        else:
            z = (m & (x == 0)).to(tl.int32)
            cz = tl.cumsum(z, axis=1) + seen[:, None]
            seen += tl.sum(z, axis=1)
            if MODE == BEFORE_ZERO:
                w = tl.where(cz == 0, 1.0, 0.0)
            else:
                w = tl.where((z == 1) & (cz == 1), 1.0, 0.0)
        cast_store(out_ptr + rows[:, None] * K + cols[None, :], w, m)


def row_blocks(M, K, device, budget=65536):
    """(ROWS, BLOCK_K): many rows per program on cpu (the interpreter pays per program)."""
    if not gpu_blocks(device):
        bk = max(16, min(next_pow2(K), budget))
        rows = max(1, min(next_pow2(M), budget // bk))
        return rows, bk
    bk = max(16, min(next_pow2(K), 1024))
    return 1, bk


def _fill_value(op, dt):
    if op in ("max", "norminf"):
        if dt.is_floating_point:
            return float("-inf") if op == "max" else 0.0
        return -2 ** 63 if dt.name != "bool" else 0
    if dt.is_floating_point:
        return float("inf")
    return 2 ** 63 - 1


_SITES = Sites()   # reduce_rows' launch key -> Launch


def reduce_rows(op, x, geom, out, idx=None, p=0.0, y=None, ystrides=(0, 0, 0), center=None):
    """out[m] (contiguous, M elements) = reduction ``op`` of row m of x's (M, K) view.

    geom = (M, M2, K, stride_m1, stride_m2, stride_k); ``idx``: int64 arg-index output (max/min).
    ``p``: norm order (normp) or degrees of freedom (var/std).  ``y`` (op "sum" only): sum x * y instead,
    y's view having strides ``ystrides`` = (stride_m1, stride_m2, stride_k) in the same (M, K) rows.
    Extrema run ``extremum_rows_kernel``, logsumexp/var/std ``centered_rows_kernel`` (``center``: the rows'
    means given, M elements), the rest ``accumulate_rows_kernel``.  On cpu var/std of float32 sum in float64
    (ATen's cpu var/std accumulate in double: the float32 results are the float64 ones rounded).
    """
    if geom[0] == 0:
        return out
    dev = out._storage.launch_device
    key = (op, geom, x.dtype, out.dtype, None if idx is None else idx.dtype, dev, T.FORCE_GPU_BLOCKS,
           None if y is None else (y.dtype, ystrides), center is not None)
    site = _SITES.get(key)
    if site is None:
        M, M2, K, s1, s2, sk = geom
        rows, bk = row_blocks(M, K, dev)
        compute = compute_type(out.dtype if op in ("sum", "mean", "prod", "logsumexp") else x.dtype)
        if op in ("var", "std") and not gpu_blocks(dev):
            compute = tl.float64
        blocks = {"COMPUTE": compute, "ROWS": rows, "BLOCK_K": bk}
        if op in EXTREMUM:
            fill = _fill_value(op, x.dtype)
            if isinstance(fill, int) and compute is not tl.int64:
                fill = float(fill)
            mn, ab = EXTREMUM[op]
            site = Launch(extremum_rows_kernel, (cdiv(M, rows),), dev,
                          [kptr(x), kptr(out), kptr(idx if idx is not None else out), M, M2, K, s1, s2, sk, fill],
                          {"MIN": mn, "ABS": ab, "WITH_INDEX": idx is not None, "IS_FLOAT": x.dtype.is_floating_point,
                           **blocks})
        elif op in CENTERED:
            site = Launch(centered_rows_kernel, (cdiv(M, rows),), dev,
                          [kptr(x), kptr(out), kptr(center if center is not None else out), M, M2, K, s1, s2, sk,
                           0.0], {"OP": CENTERED[op], "HAS_C": center is not None, **blocks})
        else:
            contiguous = sk == 1 and (M2 == 1 or s2 == K) and (M <= M2 or s1 == M2 * K)   # ATen's last-dim path
            # rows of up to 2^16 elements: one tile of vectors (longer rows take the carried steps and partly
            # masked tiles that cost 20-50 ms on the cpu tape; they keep the one-pass sum)
            if (op == "norm2" and contiguous and K <= 65536 and x.dtype.name == out.dtype.name == "float32"
                    and not gpu_blocks(dev)):
                blocks.update(ATEN=True, VB=max(1, min(next_pow2(K // 8), 8192 // rows)))
            site = Launch(accumulate_rows_kernel, (cdiv(M, rows),), dev,
                          [kptr(x), kptr(out), kptr(y if y is not None else x), M, M2, K, s1, s2, sk, 0.0,
                           *ystrides], {"OP": ACCUMULATE[op], "MUL": y is not None, **blocks})
        _SITES.add(key, site)
    xptr = x._storage.ptr + x._offset * x.dtype.itemsize     # data_ptr(), inlined
    optr = out._storage.ptr + out._offset * out.dtype.itemsize
    if op in EXTREMUM:
        site(xptr, optr, idx.data_ptr() if idx is not None else optr)     # fill: as given above
    elif op in CENTERED:
        site(xptr, optr, center.data_ptr() if center is not None else optr, float(p))
    else:
        site(xptr, optr, y.data_ptr() if y is not None else xptr, float(p))
    return out


CASCADE_L = 16                # ATen's level step for rows of fewer than 2^19 vectors (all that run here)
CASCADE_GRAIN = 32768         # at::internal::GRAIN_SIZE: a full sum of more elements is split between threads


def cascade_plan(dtype, geom, device):
    """``_cascade_plan`` of these arguments, kept by (dtype, geom, device) (a sum asks it at every call)."""
    key = (dtype, geom, device, T.FORCE_GPU_BLOCKS)
    try:
        return _PLANS[key]
    except KeyError:
        if len(_PLANS) >= 4096:
            _PLANS.clear()
        plan = _PLANS[key] = _cascade_plan(dtype, geom, device)
        return plan


_PLANS = {}


def _cascade_plan(dtype, geom, device):
    """None, or ``cascade_sum``'s plan: [(first column, end column, columns, kernel constexprs)] for float32/float64 (M, K)
    views, each row in ATen's order: contiguous rows of at least a vector its vectorized inner sum; rows of
    strided elements its row_sum (4 interleaved scalars) or, where ATen sums 4 or 4 VEC neighbouring outputs
    at once (outputs closer in memory than a row's elements), its plain cascade.  None for rows of more than
    4,095 whole chunks (2^21 float32 elements; on a GPU 255 chunks, keeping blocks in registers), which keep
    ``accumulate_rows_kernel``'s order."""
    M, M2, K, s1, s2, sk = geom
    if dtype.name not in ("float32", "float64") or K == 0:
        return None
    vec = 8 if dtype.name == "float32" else 4
    if (sk == 1 or K == 1) and K >= vec:
        return _parts([(0, M, _plan(vec, 4, K, device))], M)
    cols, cs = (M2, s2) if M2 > 1 else (M, s1)          # the outputs ATen's inner loop walks
    group = 4 * vec if cs == 1 and cols >= vec else 0 if sk < cs else 4
    cas = group * (cols // group) if group else 0
    return _parts([(0, cas, _plan(1, 1, K, device)), (cas, cols, _plan(1, 4, K, device))], cols)


def _parts(parts, cols):
    parts = [(c0, c1, cols, k) for c0, c1, k in parts if c1 > c0]
    return None if any(p[3] is None for p in parts) else parts


def _plan(vec, ilp, n, device, exact=True):
    """Constexprs for rows of n elements (``exact``: all rows; else n is the longest, counts are maxima)."""
    S = n // vec // ilp
    G0 = S // CASCADE_L
    nl = 0 if G0 == 0 else 1 if G0 < CASCADE_L else 2 if G0 < CASCADE_L ** 2 else 3
    if G0 >= CASCADE_L ** (3 if not gpu_blocks(device) else 2):
        return None
    bg = max(next_pow2(max(G0, 1)), CASCADE_L ** max(nl - 1, 0))
    tail = S - G0 * CASCADE_L if exact else min(CASCADE_L - 1, S)
    nv = n // vec - ilp * S if exact else ilp - 1
    ns = n - n // vec * vec if exact else vec - 1
    return {"VEC": vec, "ILP": ilp, "L": CASCADE_L, "NL": nl, "BG": bg, "TAIL": tail, "NV": nv, "NS": ns}


def cascade_split(numel, threads):
    """(pieces, piece length) of a full sum of ``numel`` elements as at::parallel_for splits it (1 piece when
    ATen sums it on one thread)."""
    if numel < CASCADE_GRAIN or threads <= 1:
        return 1, numel
    nt = min(threads, cdiv(numel, CASCADE_GRAIN))
    return nt, cdiv(numel, nt)


def cascade_sum(x, geom, out, plan, mean, split=None, partials=None, div=None, y=None, ystrides=(0, 0, 0),
                sites=None):
    """out[m] = sum (``mean``: divided by ``div``, default K) of row m of x's (M, K) view in ATen's cpu order
    (``cascade_sum_kernel``; ``plan`` from ``cascade_plan``).  ``split`` = (pieces, length): a full sum of K
    elements made of ``pieces`` pieces summed into ``partials`` (float, ``pieces`` elements), then those.
    ``y``: the sum of x * y instead (y's rows with strides ``ystrides``; ``plan``: the product's order).
    ``sites``: a list the launches of an unsplit sum are appended to; calling each as ``site(x.data_ptr(),
    y.data_ptr(), out.data_ptr())`` repeats the sum for other tensors of the same geometry (ops.reduce's cache)."""
    M, M2, K, s1, s2, sk = geom
    yv = (y if y is not None else x, *ystrides)
    div = K if div is None else div
    dev = out._storage.launch_device
    compute = compute_type(out.dtype)
    if split is not None and split[0] > 1:
        nt, ch = split
        k = plan[0][3]
        piece = _plan(k["VEC"], k["ILP"], ch, dev, exact=False)
        _cascade(x, yv, partials, nt, 0, nt, nt, 1, K, ch, 0, 0, sk, 1, True, False, compute, piece, dev)
        _cascade(partials, (partials, 0, 0, 0), out, 1, 0, 1, 1, 1, nt, nt, 0, 0, 1, div, False, mean, compute,
                 _plan(1, 4, nt, dev), dev)
        return out
    for c0, c1, cn, k in plan:
        nr = M // cn * (c1 - c0)
        site = _cascade(x, yv, out, nr, c0, c1 - c0, cn, M2, K, K, s1, s2, sk, div, False, mean, compute, k, dev)
        if sites is not None:
            sites.append(site)
    return out


def _cascade(x, yv, out, nr, c0, cw, cn, M2, K, ch, s1, s2, sk, div, split, mean, compute, plan, dev):
    y, ys1, ys2, ysk = yv
    mul = y is not x
    key = ("cascade", nr, c0, cw, cn, M2, K, ch, s1, s2, sk, div, split, mean, x.dtype, out.dtype, dev,
           T.FORCE_GPU_BLOCKS, (y.dtype, ys1, ys2, ysk) if mul else None)
    site = _SITES.get(key)
    if site is None:
        width = plan["ILP"] * plan["VEC"] * plan["BG"]
        rows = 1 if gpu_blocks(dev) else max(1, min(next_pow2(nr), 65536 // width))
        site = _SITES.add(key, Launch(cascade_sum_kernel, (cdiv(nr, rows),), dev,
                                      [kptr(x), kptr(y), kptr(out), nr, c0, cw, cn, M2, K, ch, s1, s2, sk, ys1,
                                       ys2, ysk, div],
                                      {"SPLIT": split, "MUL": mul, "MEAN": mean, "COMPUTE": compute, "ROWS": rows,
                                       **plan}))
    site(x.data_ptr(), y.data_ptr(), out.data_ptr())
    return site

def scan_rows(op, x, geom, out, reverse=False):
    """out = inclusive cumulative ``op`` ("sum"/"prod") along K; x and out share geom's strides."""
    M, M2, K, s1, s2, sk = geom
    if M == 0 or K == 0:
        return out
    dev = out._storage.launch_device
    rows, bk = row_blocks(M, K, dev)
    # ATen's cpu cumsum / cumprod of float32 carry the running value in double (acc_type<float, false>) and round
    # each output once: float32 scans run in float64
    compute = tl.float64 if out.dtype.name == "float32" else compute_type(out.dtype)
    launch(scan_rows_kernel, (cdiv(M, rows),), dev,
           [kptr(x), kptr(out), M, M2, K, s1, s2, sk],
           {"OP": ACCUMULATE[op], "REVERSE": bool(reverse), "COMPUTE": compute, "ROWS": rows,
            "BLOCK_K": bk})
    return out


def select(mode, x, geom, v, out):
    """out (contiguous (M, K), float) = gradient weights ``mode`` of x's (M, K) view (see tie_weights_kernel and
    prod_grad_kernel)."""
    M, M2, K, s1, s2, sk = geom
    if M == 0 or K == 0:
        return out
    dev = out._storage.launch_device
    rows, bk = row_blocks(M, K, dev)
    blocks = {"COMPUTE": compute_type(out.dtype), "ROWS": rows, "BLOCK_K": bk}
    if mode in PROD_GRAD:
        launch(prod_grad_kernel, (cdiv(M, rows),), dev, [kptr(x), kptr(out), M, M2, K, s1, s2, sk],
               {"MODE": PROD_GRAD[mode], **blocks})
    else:
        launch(tie_weights_kernel, (cdiv(M, rows),), dev,
               [kptr(x), kptr(v if v is not None else x), kptr(out), M, M2, K, s1, s2, sk],
               {"MODE": TIE_WEIGHTS[mode], **blocks})
    return out
