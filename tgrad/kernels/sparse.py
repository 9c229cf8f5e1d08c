"""Sparse COO kernels: segments of a sorted key, and the ordered segment sums built on them.

An index list is sorted (stably, by ``sort``) into segments of equal keys; ``segment_heads`` flags each
segment's first entry, a cumsum numbers the segments, ``segment_starts`` writes where each starts (plus
the end sentinel), its key and its index column.  ``segment_sum`` then walks each segment in order:
coalesce (values summed), dense += sparse (to_dense, add), and sparse @ dense (one row a segment).
One lane reduces one segment sequentially, so the sums are in entry order on every device (ATen's cpu order).

On cpu, where a loop over a loaded trip count leaves the traced executor for the interpreter, the same sums
run as ``segment_tile_kernel``: the entries counting-sorted by row with atomic counters (``entry_rank``,
``entry_place``: programs and lanes run in order there, so the ranks are in entry order), the rows by
decreasing length, and each program adds a tile of ROUNDS entries (unrolled) for BLOCK_S rows.
"""
import triton
import triton.language as tl

from .runtime import cdiv, elementwise_block, gpu_blocks, launch, next_pow2
from ._lang import cast_store, compute_type, kptr, param_h, split64

COALESCE = tl.constexpr(0)
ADD = tl.constexpr(1)
MM = tl.constexpr(2)
MODES = {"coalesce": 0, "add": 1, "mm": 2}


@triton.jit
def segment_heads_kernel(key_ptr, head_ptr, n, BLOCK: tl.constexpr):
    """head[i] = 1 where i == 0 or key[i] != key[i - 1], else 0 (int64); key: (n,) sorted int64."""
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    k = tl.load(key_ptr + i, mask=mask, other=0)
    kp = tl.load(key_ptr + i - 1, mask=mask & (i > 0), other=0)
    tl.store(head_ptr + i, ((i == 0) | (k != kp)).to(tl.int64), mask=mask)


@triton.jit
def segment_starts_kernel(key_ptr, seg_ptr, perm_ptr, idx_ptr, start_ptr, ukey_ptr, uidx_ptr, pos_ptr, n, nseg,
                          stride_id, stride_ik, SDIM: tl.constexpr, BLOCK: tl.constexpr):
    """seg[i]: the 1-based number s + 1 of sorted entry i's segment.  pos[perm[i]] = s; for each segment
    head i: start[s] = i, ukey[s] = key[i] and uidx[:, s] = idx[:, perm[i]] (SDIM rows); start[nseg] = n."""
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    k = tl.load(key_ptr + i, mask=mask, other=0)
    kp = tl.load(key_ptr + i - 1, mask=mask & (i > 0), other=0)
    head = mask & ((i == 0) | (k != kp))
    s = tl.load(seg_ptr + i, mask=mask, other=1) - 1
    tl.store(start_ptr + s, i, mask=head)
    tl.store(ukey_ptr + s, k, mask=head)
    tl.store(start_ptr + s + 1, n + 0 * i, mask=mask & (i == n - 1))
    p = tl.load(perm_ptr + i, mask=mask, other=0)
    tl.store(pos_ptr + p, s, mask=mask)
    if SDIM > 0:
        for d in tl.static_range(SDIM):
            v = tl.load(idx_ptr + d * stride_id + p * stride_ik, mask=head, other=0)
            tl.store(uidx_ptr + d * nseg + s, v, mask=head)


@triton.jit
def segment_sum_kernel(src_ptr, perm_ptr, start_ptr, tgt_ptr, col_ptr, dense_ptr, out_ptr, order_ptr, nseg, width,
                       a_hi, a_lo, stride_dense, MODE: tl.constexpr, FMA: tl.constexpr, PERM: tl.constexpr,
                       TGT: tl.constexpr, ORDER: tl.constexpr, COMPUTE: tl.constexpr, BLOCK_S: tl.constexpr,
                       BLOCK_W: tl.constexpr):
    """Segment s = entries e_j = perm[start[s] + j], j < start[s + 1] - start[s], in order; rows of width W.

    COALESCE: out[s] = src[e_0] + src[e_1] + ...              (src (nnz, W), out (nseg, W))
    ADD:      out[tgt[s]] += alpha * src[e_j], j = 0, 1, ...   (out (R, W) holds the dense tensor)
    MM:       out[tgt[s]] += (alpha * src[e_j]) * dense[col[e_j]]  (src (nnz,), dense (K, W) row stride)
    FMA: each += is one fma (ATen's row-wise add_ with alpha), else a product and a sum.
    Without PERM, perm[j] = j; without TGT, tgt[s] = s (CSR: the segments are the rows, start = crow).
    ORDER: lane k of the launch takes segment order[k] (segments by decreasing length: a program loops as many
    times as its longest segment has entries, so blocks of like lengths waste no lanes); the sums are the same.
    """
    k = tl.program_id(0).to(tl.int64) * BLOCK_S + tl.arange(0, BLOCK_S)[:, None]
    w = tl.program_id(1).to(tl.int64) * BLOCK_W + tl.arange(0, BLOCK_W)[None, :]
    ms = k < nseg
    if ORDER:
        s = tl.load(order_ptr + k, mask=ms, other=0)
    else:
        s = k
    m = ms & (w < width)
    lo = tl.load(start_ptr + s, mask=ms, other=0)
    hi = tl.load(start_ptr + s + 1, mask=ms, other=0)
    if MODE == COALESCE:
        row = s
        acc = tl.zeros([BLOCK_S, BLOCK_W], COMPUTE)
    else:
        if TGT:
            row = tl.load(tgt_ptr + s, mask=ms, other=0)
        else:
            row = s
        acc = tl.load(out_ptr + row * width + w, mask=m, other=0).to(COMPUTE)
    alpha = param_h(a_hi, a_lo, acc)
    mw = w < width
    for j in range(0, tl.max(tl.max(hi - lo, 1), 0)):
        mr = ms & (lo + j < hi)                 # (BLOCK_S, 1): the segments that have a j-th entry
        if PERM:
            e = tl.load(perm_ptr + lo + j, mask=mr, other=0)
        else:
            e = lo + j
        mj = mr & mw
        if MODE == MM:
            a = tl.load(src_ptr + e, mask=mr, other=0).to(COMPUTE) * alpha
            c = tl.load(col_ptr + e, mask=mr, other=0)
            x = tl.load(dense_ptr + c * stride_dense + w, mask=mj, other=0).to(COMPUTE)
        elif MODE == ADD:
            a = alpha
            x = tl.load(src_ptr + e * width + w, mask=mj, other=0).to(COMPUTE)
        if MODE != COALESCE:
            if FMA:
                r = tl.fma(x, a, acc)
            else:
                r = acc + x * a
        else:
            v = tl.load(src_ptr + e * width + w, mask=mj, other=0).to(COMPUTE)
            r = tl.where(j == 0, v, acc + v)        # the first entry copied (as ATen), not added to 0
        acc = tl.where(mr, r, acc)
    cast_store(out_ptr + row * width + w, acc, m)


@triton.jit
def entry_rank_kernel(key_ptr, count_ptr, rank_ptr, n, BLOCK: tl.constexpr):
    """rank[i] = #{i' < i : key[i'] == key[i]} (count[k] += 1 per entry, old value returned); key (n,) int64.
    The ranks are in entry order only where programs and their lanes run in order: the cpu executor."""
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    k = tl.load(key_ptr + i, mask=mask, other=0)
    tl.store(rank_ptr + i, tl.atomic_add(count_ptr + k, 1, mask=mask), mask=mask)


@triton.jit
def entry_place_kernel(key_ptr, rank_ptr, end_ptr, size_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out[end[k] - size[k] + rank[i]] = i, k = key[i]: the entries listed key by key, each key's in rank order
    (with entry_rank_kernel's ranks: a stable counting sort; end = cumsum(size))."""
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    k = tl.load(key_ptr + i, mask=mask, other=0)
    p = tl.load(end_ptr + k, mask=mask, other=0) - tl.load(size_ptr + k, mask=mask, other=0)
    tl.store(out_ptr + p + tl.load(rank_ptr + i, mask=mask, other=0), i, mask=mask)


@triton.jit
def _load_flat(ptr, mask, BLOCK_S: tl.constexpr, BLOCK_W: tl.constexpr):
    """tl.load of a (BLOCK_S, BLOCK_W) gather as one 1-D block (the interpreter's gather is ~2x faster in 1-D)."""
    n: tl.constexpr = BLOCK_S * BLOCK_W
    return tl.reshape(tl.load(tl.reshape(ptr, [n]), mask=tl.reshape(mask, [n]), other=0), [BLOCK_S, BLOCK_W])


@triton.jit
def segment_tile_kernel(src_ptr, perm_ptr, start_ptr, len_ptr, order_ptr, col_ptr, dense_ptr, out_ptr, blk_ptr,
                        first_ptr, lanes, width, a_hi, a_lo, stride_dense, MODE: tl.constexpr, FMA: tl.constexpr,
                        PERM: tl.constexpr, COMPUTE: tl.constexpr, ROUNDS: tl.constexpr, BLOCK_S: tl.constexpr,
                        BLOCK_W: tl.constexpr):
    """segment_sum_kernel's sums on cpu, by tiles of ROUNDS entries of BLOCK_S rows (no loop on a loaded count:
    the cpu executor replays one tape for any sizes).  Row r's entries: perm[start[r] + j] (without PERM:
    start[r] + j), j < len[r]; lanes k
    take rows order[k] (k < lanes); program c takes lane block b = blk[c], entries j of its tile t = c - first[b]
    (a block's tiles run in program order: the cpu's; a GPU's programs run at once).  out (R, W) in COMPUTE:
    COALESCE out[r] = src[e_0] + src[e_1] + ...; ADD out[r] += alpha * src[e_j]; MM out[r] += (alpha * src[e_j])
    * dense[col[e_j]]."""
    c = tl.program_id(0)
    one = tl.arange(0, 1)[:, None]      # the program's scalars as (1, 1) blocks (masked loads replay as numpy)
    b = tl.load(blk_ptr + c + one, mask=one == 0, other=0)
    t = c - tl.load(first_ptr + b, mask=one == 0, other=0)
    k = b * BLOCK_S + tl.arange(0, BLOCK_S)[:, None]
    mk = k < lanes
    r = tl.load(order_ptr + k, mask=mk, other=0)
    lo = tl.load(start_ptr + r, mask=mk, other=0)
    n = tl.load(len_ptr + r, mask=mk, other=0)
    w = tl.program_id(1) * BLOCK_W + tl.arange(0, BLOCK_W)[None, :]
    mw = w < width
    o = out_ptr + (r * width + w)
    acc = _load_flat(o, mk & mw, BLOCK_S, BLOCK_W)     # (COALESCE tile 0: unset, not used)
    alpha = param_h(a_hi, a_lo, tl.zeros([1, 1], COMPUTE))
    zw = tl.zeros([BLOCK_S, BLOCK_W], tl.int64)
    dw = dense_ptr + (w + zw)       # (the full-block operands made once: the rounds add a (BLOCK_S, 1) part)
    mw = mw & (zw == 0)
    for i in tl.static_range(ROUNDS):
        j = t * ROUNDS + i
        mj = mk & (j < n)
        if PERM:
            e = tl.load(perm_ptr + lo + j, mask=mj, other=0)
        else:
            e = lo + j
        if MODE == MM:
            a = tl.load(src_ptr + e, mask=mj, other=0).to(COMPUTE) * alpha
            x = _load_flat(dw + tl.load(col_ptr + e, mask=mj, other=0) * stride_dense, mj & mw, BLOCK_S,
                           BLOCK_W).to(COMPUTE)
        else:
            a = alpha
            x = _load_flat(src_ptr + (e * width + w), mj & mw, BLOCK_S, BLOCK_W).to(COMPUTE)
        if MODE == COALESCE:
            v = tl.where(j == 0, x, acc + x)    # the first entry copied (as ATen), not added to 0
        elif FMA:
            v = tl.fma(x, a, acc)
        else:
            v = acc + x * a
        if MODE == MM:
            acc = v     # (a lane without a j-th entry adds 0 * 0 to a sum that is never -0: unchanged)
        else:
            acc = tl.where(mj, v, acc)
    tl.store(tl.reshape(o, [BLOCK_S * BLOCK_W]), tl.reshape(acc, [BLOCK_S * BLOCK_W]),
             mask=tl.reshape(mk & mw, [BLOCK_S * BLOCK_W]))


@triton.jit
def count_below_kernel(seq_ptr, m, out_ptr, n, steps, RIGHT: tl.constexpr, BLOCK: tl.constexpr):
    """out[i] = #{k < m : seq[k] < i} (RIGHT: seq[k] <= i), i < n; seq (m,) sorted int64: a binary search a lane.
    (CSR: crow = count_below(rows, n = nrows + 1); rows = count_below(crow[1:], n = nnz, RIGHT).)"""
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    lo = tl.zeros([BLOCK], tl.int64)
    hi = tl.zeros([BLOCK], tl.int64) + m
    for _ in range(0, steps):
        active = mask & (lo < hi)
        mid = (lo + hi) // 2
        v = tl.load(seq_ptr + mid, mask=active, other=0)
        if RIGHT:
            go = v <= i
        else:
            go = v < i
        lo = tl.where(active & go, mid + 1, lo)
        hi = tl.where(active & ~go, mid, hi)
    tl.store(out_ptr + i, lo, mask=mask)


def count_below(seq, out, right):
    """out[i] = the number of elements of the sorted ``seq`` below i (``right``: at most i); see the kernel."""
    n, m = out.numel(), seq.numel()
    if n == 0:
        return out
    dev = out._storage.launch_device
    block = elementwise_block(n, dev)
    launch(count_below_kernel, (cdiv(n, block),), dev, [kptr(seq), m, kptr(out), n, int(m).bit_length() + 1],
           {"RIGHT": bool(right), "BLOCK": block})
    return out


def segment_heads(key, head):
    n = key.numel()
    dev = key._storage.launch_device
    block = elementwise_block(n, dev)
    launch(segment_heads_kernel, (cdiv(n, block),), dev, [kptr(key), kptr(head), n], {"BLOCK": block})
    return head


def segment_starts(key, seg, perm, idx, start, ukey, uidx, pos):
    """Fill start (nseg + 1,), ukey (nseg,), uidx (SDIM, nseg) and pos (n,) from the sorted key (the kernel);
    ``idx`` (SDIM, n) may be strided, ``uidx`` is contiguous."""
    n, nseg = key.numel(), ukey.numel()
    dev = key._storage.launch_device
    block = elementwise_block(n, dev)
    sdim = idx._shape[0]
    launch(segment_starts_kernel, (cdiv(n, block),), dev,
           [kptr(key), kptr(seg), kptr(perm), kptr(idx), kptr(start), kptr(ukey), kptr(uidx), kptr(pos), n, nseg,
            idx._strides[0], idx._strides[1]], {"SDIM": sdim, "BLOCK": block})


def segment_blocks(nseg, width, dev):
    """(BLOCK_S, BLOCK_W) of segment_sum: 128 lanes on cuda, up to 65536 on cpu, few padding segments."""
    if gpu_blocks(dev):
        bw = min(next_pow2(width), 128)
        return max(1, 128 // bw), bw
    bw = min(next_pow2(width), 65536)
    cap = max(1, 65536 // bw)
    return next_pow2(cdiv(nseg, cdiv(nseg, cap))), bw


def segment_sum(mode, src, perm, start, out, *, tgt=None, col=None, dense=None, alpha=1.0, fma=False, order=None):
    """One launch of segment_sum_kernel (see it); ``out`` is contiguous (R, W), ``src`` contiguous."""
    nseg = start.numel() - 1
    width = out._shape[1] if out.dim() > 1 else 1
    if nseg == 0 or width == 0:
        return out
    dev = out._storage.launch_device
    bs, bw = segment_blocks(nseg, width, dev)
    ct = compute_type(out.dtype)
    a_hi, a_lo = (int(alpha), 0.0) if ct is tl.int64 else split64(alpha)
    launch(segment_sum_kernel, (cdiv(nseg, bs), cdiv(width, bw)), dev,
           [kptr(src), kptr(perm if perm is not None else start), kptr(start), kptr(tgt if tgt is not None else start),
            kptr(col if col is not None else start), kptr(dense if dense is not None else src), kptr(out),
            kptr(order if order is not None else start), nseg, width, a_hi, a_lo,
            dense._strides[0] if dense is not None else 0],
           {"MODE": MODES[mode], "FMA": bool(fma) and ct is not tl.int64, "PERM": perm is not None,
            "TGT": tgt is not None, "ORDER": order is not None, "COMPUTE": ct, "BLOCK_S": bs, "BLOCK_W": bw})
    return out


def entry_rank(key, count, rank):
    """rank[i] = the entries before i with key[i] (count: zeros (K,) int64, left holding each key's count)."""
    n = key.numel()
    dev = key._storage.launch_device
    block = elementwise_block(n, dev)
    launch(entry_rank_kernel, (cdiv(n, block),), dev, [kptr(key), kptr(count), kptr(rank), n], {"BLOCK": block})
    return rank


def entry_place(key, rank, end, size, out):
    n = key.numel()
    dev = key._storage.launch_device
    block = elementwise_block(n, dev)
    launch(entry_place_kernel, (cdiv(n, block),), dev, [kptr(key), kptr(rank), kptr(end), kptr(size), kptr(out), n],
           {"BLOCK": block})
    return out


def segment_tiles(mode, src, perm, start, lens, order, blk, first, lanes, out, rounds, block_s, *, col=None,
                  dense=None, alpha=1.0, fma=False):
    """segment_sum's sums on cpu (segment_tile_kernel): ``out`` (R, W) contiguous in the compute dtype; rows'
    entries perm[start[r] + j], j < lens[r], lane k -> row order[k]; blk / first: the tile schedule."""
    width = out._shape[1] if out.dim() > 1 else 1
    if blk.numel() == 0 or width == 0:
        return out
    dev = out._storage.launch_device
    bw = min(next_pow2(width), max(16, 65536 // block_s))
    ct = compute_type(out.dtype)
    a_hi, a_lo = (int(alpha), 0.0) if ct is tl.int64 else split64(alpha)
    launch(segment_tile_kernel, (blk.numel(), cdiv(width, bw)), dev,
           [kptr(src), kptr(perm if perm is not None else start), kptr(start), kptr(lens), kptr(order),
            kptr(col if col is not None else start),
            kptr(dense if dense is not None else src), kptr(out), kptr(blk), kptr(first), lanes, width, a_hi, a_lo,
            dense._strides[0] if dense is not None else 0],
           {"MODE": MODES[mode], "FMA": bool(fma) and ct is not tl.int64, "PERM": perm is not None, "COMPUTE": ct,
            "ROUNDS": rounds,
            "BLOCK_S": block_s, "BLOCK_W": bw})
    return out
