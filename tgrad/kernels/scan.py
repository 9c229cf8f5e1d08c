"""Scans with a running carry along the last axis of a strided (M, K) view: cummax/cummin (values and
indices) and logcumsumexp.  Chunks of BLOCK_K columns are scanned in log2(BLOCK_K) doubling steps (each element combined with the
one 2^s before it, fetched by ``tl.gather``: ``tl.associative_scan`` with a custom combine runs one
element at a time in the interpreter); the carry (every earlier chunk's scan) is combined in front.
"""
import triton
import triton.language as tl

from .runtime import cdiv, gpu_blocks, launch
from ._lang import cast_store, compute_type, kptr, log1p_h, row_tiles


@triton.jit
def _row_base(rows, M2, stride_m1, stride_m2):
    return (rows // M2) * stride_m1 + (rows % M2) * stride_m2


@triton.jit
def _extreme_combine(va, ia, vb, ib, MIN: tl.constexpr):
    """b follows a: b wins when it is NaN, or >= a (MIN: <= a; a later tie wins, as ATen's cummax) unless a is
    NaN."""
    if MIN:
        beats = vb <= va
    else:
        beats = vb >= va
    take = (vb != vb) | ((va == va) & beats)
    return tl.where(take, vb, va), tl.where(take, ib, ia)


@triton.jit
def _last(v, cols, BLOCK_K: tl.constexpr):
    """Column BLOCK_K - 1 of a [ROWS, BLOCK_K] block."""
    return tl.sum(tl.where(cols[None, :] == BLOCK_K - 1, v, tl.zeros_like(v)), axis=1)


@triton.jit
def _scan_extreme(v, j, lane, LOG2: tl.constexpr, MIN: tl.constexpr):
    """Inclusive scan of (v, j) along axis 1 by ``_extreme_combine``: log2(BLOCK_K) doubling steps
    (Hillis-Steele)."""
    for s in tl.static_range(LOG2):
        prev = tl.maximum(lane - (1 << s), 0)[None, :] + tl.zeros_like(j).to(tl.int32)
        pv = tl.gather(v, prev, axis=1)
        pj = tl.gather(j, prev, axis=1)
        nv, nj = _extreme_combine(pv, pj, v, j, MIN)
        has = (lane >= (1 << s))[None, :]
        v = tl.where(has, nv, v)
        j = tl.where(has, nj, j)
    return v, j


@triton.jit
def cumextreme_rows_kernel(x_ptr, out_ptr, idx_ptr, M, M2, K, stride_m1, stride_m2, stride_k, fill,
                           MIN: tl.constexpr, COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK_K: tl.constexpr,
                           LOG2: tl.constexpr):
    """out[m, k] = max (MIN: min) of x[m, :k+1], idx[m, k] its last position (a NaN wins: the last NaN's).

    x, out and idx (int64) share the strides of an (M, K) view; ``fill``: the identity (-inf / +inf / int bound).
    """
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    base = _row_base(rows, M2, stride_m1, stride_m2)
    cv = tl.full([ROWS], fill, COMPUTE)
    ci = tl.zeros([ROWS], dtype=tl.int64)
    lane = tl.arange(0, BLOCK_K)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + lane
        m = rmask[:, None] & (cols[None, :] < K)
        offs = base[:, None] + cols[None, :] * stride_k
        x = tl.load(x_ptr + offs, mask=m, other=fill).to(COMPUTE)
        i = tl.zeros([ROWS, BLOCK_K], dtype=tl.int64) + cols[None, :]
        v, j = _scan_extreme(x, i, lane, LOG2, MIN)
        v, j = _extreme_combine(cv[:, None], ci[:, None], v, j, MIN)
        cast_store(out_ptr + offs, v, m)
        tl.store(idx_ptr + offs, j, mask=m)
        cv = _last(v, lane, BLOCK_K)
        ci = _last(j, lane, BLOCK_K)


@triton.jit
def _logaddexp(a, b):
    """log(exp(a) + exp(b)) as ATen's _log_add_exp_helper: equal infinities give a; NaN propagates."""
    mx = tl.maximum(a, b)
    mn = tl.minimum(a, b)
    r = tl.where((mn != mx) | (tl.abs(mn) != float("inf")), mx + log1p_h(tl.exp(mn - mx)), a)
    return tl.where((a != a) | (b != b), a + b, r)


@triton.jit
def _scan_logaddexp(v, lane, LOG2: tl.constexpr):
    """Inclusive scan of v along axis 1 by ``_logaddexp`` (Hillis-Steele, as ``_scan_extreme``)."""
    for s in tl.static_range(LOG2):
        prev = tl.maximum(lane - (1 << s), 0)[None, :] + tl.zeros(v.shape, dtype=tl.int32)
        v = tl.where((lane >= (1 << s))[None, :], _logaddexp(tl.gather(v, prev, axis=1), v), v)
    return v


@triton.jit
def logcumsumexp_rows_kernel(x_ptr, out_ptr, M, M2, K, stride_m1, stride_m2, stride_k,
                             COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK_K: tl.constexpr, LOG2: tl.constexpr):
    """out[m, k] = log sum_{j <= k} exp(x[m, j]) of a strided (M, K) view (out shares its strides)."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    base = _row_base(rows, M2, stride_m1, stride_m2)
    carry = tl.full([ROWS], float("-inf"), COMPUTE)
    lane = tl.arange(0, BLOCK_K)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + lane
        m = rmask[:, None] & (cols[None, :] < K)
        offs = base[:, None] + cols[None, :] * stride_k
        x = tl.load(x_ptr + offs, mask=m, other=float("-inf")).to(COMPUTE)
        c = _logaddexp(carry[:, None], _scan_logaddexp(x, lane, LOG2))
        cast_store(out_ptr + offs, c, m)
        carry = _last(c, lane, BLOCK_K)


def _tiles(M, K, device):
    """(ROWS, BLOCK_K): cpu as row_tiles (16384 elements a block); on a GPU chunks of at most 128 columns (tl.gather
    across wider rows spills: 14 kB at 1024 on sm_80)."""
    rows, bk = row_tiles(M, K, device, budget=16384)
    return (rows, min(bk, 128)) if gpu_blocks(device) else (rows, bk)


def cumextreme_rows(x, geom, out, idx, minimum, fill):
    """out, idx = cummax (``minimum``: cummin) along K of x's (M, K) view; x, out, idx share geom's strides."""
    M, M2, K, s1, s2, sk = geom
    if M == 0 or K == 0:
        return out, idx
    dev = out._storage.launch_device
    rows, bk = _tiles(M, K, dev)
    launch(cumextreme_rows_kernel, (cdiv(M, rows),), dev, [kptr(x), kptr(out), kptr(idx), M, M2, K, s1, s2, sk, fill],
           {"MIN": bool(minimum), "COMPUTE": compute_type(out.dtype), "ROWS": rows, "BLOCK_K": bk,
            "LOG2": bk.bit_length() - 1})
    return out, idx


def logcumsumexp_rows(x, geom, out):
    """out = logcumsumexp along K of x's (M, K) view; x and out share geom's strides."""
    M, M2, K, s1, s2, sk = geom
    if M == 0 or K == 0:
        return out
    dev = out._storage.launch_device
    rows, bk = _tiles(M, K, dev)
    launch(logcumsumexp_rows_kernel, (cdiv(M, rows),), dev, [kptr(x), kptr(out), M, M2, K, s1, s2, sk],
           {"COMPUTE": compute_type(out.dtype), "ROWS": rows, "BLOCK_K": bk, "LOG2": bk.bit_length() - 1})
    return out
