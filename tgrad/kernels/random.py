"""Counter-based random numbers (Philox4x32-10 via ``tl.rand``/``tl.randn``).

Element ``i`` of a draw uses counter ``offset + i`` under key ``seed``, so a
seed gives the same numbers on ``cpu`` and ``cuda`` whatever the block size.
"""
import triton
import triton.language as tl

from .runtime import cdiv, dynamic_args, elementwise_block, launch
from ._lang import cast_store, kptr


@triton.jit
def rounded(val, ptr):
    """fp32 ``val`` rounded to ``ptr``'s element type (as ``cast_store`` stores it), back in fp32."""
    if ptr.dtype.element_ty == tl.bfloat16:
        bits = val.to(tl.uint32, bitcast=True)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return bits.to(tl.float32, bitcast=True)
    else:
        return val.to(ptr.dtype.element_ty).to(tl.float32)


@triton.jit
def random_kernel(out_ptr, n_elements, seed, offset, lo, hi, DIST: tl.constexpr, BLOCK: tl.constexpr):
    """out[i] = lo + (hi - lo) * U(seed, offset + i) in [lo, hi) (DIST=0) or lo + hi * N(seed, offset + i) (DIST=1).

    DIST=2 draws integers floor(lo + (hi - lo) * U) in [lo, hi); out is contiguous.
    """
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n_elements
    ctr = (offset + idx).to(tl.uint32)
    if DIST == 1:
        r = lo + hi * tl.randn(seed, ctr)
        cast_store(out_ptr + idx, r, mask)
    elif DIST == 0:
        u = tl.rand(seed, ctr)
        # as many random bits as the dtype has digits (PyTorch): float16/bfloat16 values of u stay below 1
        if out_ptr.dtype.element_ty == tl.float16:
            u = tl.floor(u * 2048.0) * (1.0 / 2048.0)
        elif out_ptr.dtype.element_ty == tl.bfloat16:
            u = tl.floor(u * 256.0) * (1.0 / 256.0)
        r = lo + (hi - lo) * u
        # a value that rounds up to hi in the output dtype becomes lo (PyTorch's CUDA rule): [lo, hi)
        r = tl.where(rounded(r, out_ptr) >= rounded(hi + 0.0 * r, out_ptr), lo, r)
        cast_store(out_ptr + idx, r, mask)
    else:
        u = tl.rand(seed, ctr).to(tl.float64)
        v = tl.floor(lo + (hi - lo) * u)
        v = tl.minimum(v, hi - 1.0)
        tl.store(out_ptr + idx, v.to(out_ptr.dtype.element_ty), mask=mask)


dynamic_args(random_kernel, "seed", "offset")   # a new draw replays the same tape


def fill_random(out, seed, offset, dist, lo, hi):
    """Fill contiguous ``out`` with draws; dist 0 uniform [lo, hi), 1 normal(lo, hi), 2 integers [lo, hi)."""
    n = out.numel()
    if n == 0:
        return out
    dev = out.device.type
    block = elementwise_block(n, dev)
    launch(random_kernel, (cdiv(n, block),), dev,
           [kptr(out), n, int(seed) & 0xFFFFFFFF, int(offset), float(lo), float(hi)],
           {"DIST": dist, "BLOCK": block})
    return out
