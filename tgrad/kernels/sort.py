"""Row sorts: a bitonic network over (key, index) pairs, stable, ascending or descending.

Each row of K elements (the sorted dim of an (OUTER, K, INNER) view, as in softmax.py) is loaded
whole into a power-of-two block, padded with the largest key.  Values become int64 keys whose
signed order is the value order with NaN largest and -0.0 == 0.0 (PyTorch's sort order); a
descending sort negates the keys bitwise (~key), and ties break on the index, so both directions
are stable.  The first KOUT sorted columns are written (sort: all K; topk: k).
"""
import triton
import triton.language as tl

from .runtime import launcher as T
from .runtime import Launch, Sites, cdiv, gpu_blocks, next_pow2
from ._lang import kptr
from ._lang import row_offsets


@triton.jit
def sort_key(x, DESC: tl.constexpr):
    """int64 key of ``x`` whose signed order is PyTorch's sort order (ascending; DESC: descending)."""
    if x.dtype == tl.float64:
        v = tl.where(x != x, float("nan"), tl.where(x == 0, 0.0, x))
        bits = v.to(tl.int64, bitcast=True)
        key = bits ^ ((bits >> 63) & 0x7FFFFFFFFFFFFFFF)
    elif x.dtype.is_floating():
        v = x.to(tl.float32)
        v = tl.where(v != v, float("nan"), tl.where(v == 0, 0.0, v))
        bits = v.to(tl.int32, bitcast=True)
        key = (bits ^ ((bits >> 31) & 0x7FFFFFFF)).to(tl.int64)
    else:
        key = x.to(tl.int64)
    if DESC:
        key = ~key
    return key


@triton.jit
def _exchange(key, idx, J: tl.constexpr, STAGE: tl.constexpr, ROWS: tl.constexpr, BLOCK_K: tl.constexpr,
              LOG_K: tl.constexpr):
    """One compare-exchange pass at distance 2**J within each row (bitonic stage STAGE)."""
    A: tl.constexpr = ROWS * BLOCK_K // (2 << J)
    kl, kr = tl.split(tl.permute(tl.reshape(key, [A, 2, 1 << J]), [0, 2, 1]))
    il, ir = tl.split(tl.permute(tl.reshape(idx, [A, 2, 1 << J]), [0, 2, 1]))
    # position in its row of each left element: its stage bit says which way its run is sorted
    pos = ((tl.arange(0, A) * (2 << J)) % BLOCK_K)[:, None] + tl.arange(0, 1 << J)[None, :]
    if STAGE < LOG_K:
        down = ((pos >> STAGE) & 1) == 1
    else:
        down = pos < 0
    gt = (kl > kr) | ((kl == kr) & (il > ir))
    swap = gt != down
    key = tl.reshape(tl.permute(tl.join(tl.where(swap, kr, kl), tl.where(swap, kl, kr)), [0, 2, 1]),
                     [ROWS, BLOCK_K])
    idx = tl.reshape(tl.permute(tl.join(tl.where(swap, ir, il), tl.where(swap, il, ir)), [0, 2, 1]),
                     [ROWS, BLOCK_K])
    return key, idx


@triton.jit
def sort_rows(key, idx, ROWS: tl.constexpr, BLOCK_K: tl.constexpr, LOG_K: tl.constexpr):
    """(key, idx) of a (ROWS, BLOCK_K) block sorted ascending along each row, lexicographically."""
    for stage in tl.static_range(1, LOG_K + 1):
        for s in tl.static_range(stage):
            key, idx = _exchange(key, idx, stage - 1 - s, stage, ROWS, BLOCK_K, LOG_K)
    return key, idx


@triton.jit
def sort_kernel(x_ptr, v_ptr, i_ptr, M, K, INNER, sx_o, sx_k, sx_i, KOUT, DESC: tl.constexpr, ROWS: tl.constexpr,
                BLOCK_K: tl.constexpr, LOG_K: tl.constexpr):
    """v[m, :KOUT], i[m, :KOUT] = the first KOUT of row m of x sorted (stably) and their positions;
    x (OUTER, K, INNER) strided, v and i contiguous (OUTER, KOUT, INNER), M = OUTER * INNER rows."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    xrow = row_offsets(rows, INNER, sx_o, sx_i)
    cols = tl.arange(0, BLOCK_K)
    m = rmask[:, None] & (cols[None, :] < K)
    x = tl.load(x_ptr + xrow[:, None] + cols[None, :] * sx_k, mask=m)
    key = tl.where(m, sort_key(x, DESC), 0x7FFFFFFFFFFFFFFF)
    idx = tl.zeros([ROWS, BLOCK_K], tl.int32) + cols[None, :]
    key, idx = sort_rows(key, idx, ROWS, BLOCK_K, LOG_K)
    out = m & (cols[None, :] < KOUT)
    src = tl.load(x_ptr + xrow[:, None] + idx.to(tl.int64) * sx_k, mask=out)
    orow = (rows // INNER) * KOUT * INNER + rows % INNER
    dst = orow[:, None] + cols[None, :].to(tl.int64) * INNER
    tl.store(v_ptr + dst, src, mask=out)
    tl.store(i_ptr + dst, idx.to(tl.int64), mask=out)


def sort_tiles(M, K, device):
    """(ROWS, BLOCK_K, LOG_K): a whole row per block; several rows per program on cpu."""
    bk = max(2, next_pow2(K))
    rows = 1 if gpu_blocks(device) else max(1, min(next_pow2(M), 16384 // bk))
    return rows, bk, bk.bit_length() - 1


_SITES = Sites()


def sort(x, values, indices, geom, kout, descending):
    """values/indices (contiguous (OUTER, kout, INNER)) = the first kout of each row of x sorted;
    geom = (M, K, INNER, x strides (o, k, i))."""
    M, K, inner, sx = geom
    if M == 0 or K == 0 or kout == 0:
        return values, indices
    dev = values._storage.launch_device
    key = (M, K, inner, tuple(sx), kout, x.dtype, bool(descending), dev, T.FORCE_GPU_BLOCKS)
    site = _SITES.get(key)
    if site is None:
        rows, bk, lk = sort_tiles(M, K, dev)
        site = _SITES.add(key, Launch(sort_kernel, (cdiv(M, rows),), dev,
                                      [kptr(x), kptr(values), kptr(indices), M, K, inner, *sx, kout],
                                      {"DESC": bool(descending), "ROWS": rows, "BLOCK_K": bk, "LOG_K": lk}))
    site(x.data_ptr(), values.data_ptr(), indices.data_ptr())
    return values, indices
