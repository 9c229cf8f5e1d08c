"""Segment reduction: the kernel of scatter_reduce and index_reduce.

The op sorts the scattered elements by target on the host (stably, so each target sees its sources in
iteration order, as ATen's cpu loop does) and hands over, per segment s: the target's element offset
``tgt[s]``, and ``start[s]``/``count[s]`` into ``soff``, the sources' element offsets in that order.
One lane reduces one segment, sequentially.
"""
import triton
import triton.language as tl

from .runtime import cdiv, elementwise_block, launch
from ._lang import cast_store, compute_type, kptr

SUM = tl.constexpr(0)
PROD = tl.constexpr(1)
MEAN = tl.constexpr(2)
AMAX = tl.constexpr(3)
AMIN = tl.constexpr(4)
REDUCE = {"sum": 0, "prod": 1, "mean": 2, "amax": 3, "amin": 4}


@triton.jit
def segment_reduce_kernel(src_ptr, soff_ptr, start_ptr, count_ptr, tgt_ptr, out_ptr, n_segments, max_count, fill,
                          REDUCE: tl.constexpr, INCLUDE_SELF: tl.constexpr, IS_FLOAT: tl.constexpr,
                          COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    """out[tgt[s]] = reduce(out[tgt[s]] (INCLUDE_SELF), src[soff[start[s]]], ..., src[soff[start[s] + count[s] - 1]]).

    REDUCE: SUM, PROD, MEAN (integers: floor division), AMAX / AMIN (NaN propagates); ``fill``: the identity.
    """
    s = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = s < n_segments
    tgt = tl.load(tgt_ptr + s, mask=mask, other=0)
    start = tl.load(start_ptr + s, mask=mask, other=0)
    count = tl.load(count_ptr + s, mask=mask, other=0)
    if INCLUDE_SELF:
        acc = tl.load(out_ptr + tgt, mask=mask, other=0).to(COMPUTE)
    else:
        acc = tl.full([BLOCK], fill, COMPUTE)
    for j in range(0, max_count):
        m = mask & (j < count)
        v = tl.load(src_ptr + tl.load(soff_ptr + start + j, mask=m, other=0), mask=m, other=0).to(COMPUTE)
        if REDUCE == SUM or REDUCE == MEAN:
            r = acc + v
        elif REDUCE == PROD:
            r = acc * v
        elif REDUCE == AMAX:
            r = tl.where((v != v) | (v > acc), v, acc)
        else:
            r = tl.where((v != v) | (v < acc), v, acc)
        acc = tl.where(m, r, acc)
    if REDUCE == MEAN:
        n = count
        if INCLUDE_SELF:
            n = count + 1
        if IS_FLOAT:
            acc = acc / n.to(COMPUTE)
        else:
            acc = acc // n - tl.where((acc % n) < 0, 1, 0)
    cast_store(out_ptr + tgt, acc, mask)


def segment_reduce(src, soff, start, count, tgt, out, max_count, reduce, include_self, fill):
    """out[tgt[s]] = reduce of out[tgt[s]] (``include_self``) and segment s's sources (see the kernel)."""
    n = tgt.numel()
    if n == 0:
        return out
    dev = out._storage.launch_device
    block = elementwise_block(n, dev)
    launch(segment_reduce_kernel, (cdiv(n, block),), dev,
           [kptr(src), kptr(soff), kptr(start), kptr(count), kptr(tgt), kptr(out), n, int(max_count), fill],
           {"REDUCE": REDUCE[reduce], "INCLUDE_SELF": bool(include_self), "IS_FLOAT": out.dtype.is_floating_point,
            "COMPUTE": compute_type(out.dtype), "BLOCK": block})
    return out
