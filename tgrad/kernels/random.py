"""Counter-based random numbers (Philox4x32-10 via ``tl.rand``/``tl.randn``).

Element ``i`` of a draw uses counter ``offset + i`` under key ``seed``, so a
seed gives the same numbers on ``cpu`` and ``cuda`` whatever the block size.
"""
import triton
import triton.language as tl

from .runtime import cdiv, dynamic_args, elementwise_block, gpu_blocks, launch, next_pow2
from ._lang import cast_store, compute_type, kptr
from .sort import sort_key, sort_rows


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
    dev = out._storage.launch_device
    block = elementwise_block(n, dev)
    launch(random_kernel, (cdiv(n, block),), dev,
           [kptr(out), n, int(seed) & 0xFFFFFFFF, int(offset), float(lo), float(hi)],
           {"DIST": dist, "BLOCK": block})
    return out


@triton.jit
def multinomial_kernel(p_ptr, out_ptr, M, K, stride_pm, stride_pk, N, seed, offset, REPLACE: tl.constexpr,
                       COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr,
                       LOG_K: tl.constexpr):
    """out[m, n] ~ Categorical(p[m, :] / sum p[m, :]), p (M, K) strided, out contiguous (M, N) int64.

    REPLACE: out[m, n] = #{k : cdf[m, k] <= U(seed, offset + m N + n) * cdf[m, K-1]} (the last k with
    p > 0 at most); else the N largest of p[m, k] / E[m, k], E = -log(1 - U(seed, offset + m K + k))
    (exponential races: a draw without replacement, in the order drawn).
    """
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    cols = tl.arange(0, BLOCK_K)
    m = rmask[:, None] & (cols[None, :] < K)
    p = tl.load(p_ptr + rows[:, None] * stride_pm + cols[None, :] * stride_pk, mask=m, other=0.0).to(COMPUTE)
    if REPLACE:
        cdf = tl.cumsum(p, axis=1)
        total = tl.max(cdf, axis=1)
        last = tl.max(tl.where(p > 0, cols[None, :], 0), axis=1)
        for n0 in range(0, N, BLOCK_N):
            ns = n0 + tl.arange(0, BLOCK_N)
            u = tl.rand(seed, (offset + rows[:, None] * N + ns[None, :]).to(tl.uint32)).to(COMPUTE)
            x = u * total[:, None]
            below = (cdf[:, None, :] <= x[:, :, None]) & (cols[None, None, :] < K)
            idx = tl.minimum(tl.sum(below.to(tl.int32), axis=2), last[:, None])
            tl.store(out_ptr + rows[:, None] * N + ns[None, :], idx.to(tl.int64),
                     mask=rmask[:, None] & (ns[None, :] < N))
    else:
        u = tl.rand(seed, (offset + rows[:, None] * K + cols[None, :]).to(tl.uint32)).to(COMPUTE)
        e = -tl.log(1.0 - u)
        key = tl.where(m, sort_key(tl.where(p > 0, p / e, 0.0), True), 0x7FFFFFFFFFFFFFFF)
        idx = tl.zeros([ROWS, BLOCK_K], tl.int32) + cols[None, :]
        key, idx = sort_rows(key, idx, ROWS, BLOCK_K, LOG_K)
        tl.store(out_ptr + rows[:, None] * N + cols[None, :], idx.to(tl.int64),
                 mask=rmask[:, None] & (cols[None, :] < N))


dynamic_args(multinomial_kernel, "seed", "offset")


def multinomial(p, strides, M, K, out, n, replacement, seed, offset):
    """out (M, n) int64 contiguous: n draws per row of the non-negative weights p (M, K) with (row, column)
    ``strides``."""
    if M == 0 or n == 0:
        return out
    dev = out._storage.launch_device
    bk = max(2, next_pow2(K))
    budget = 8192 if gpu_blocks(dev) else 65536      # elements of the (ROWS, BLOCK_N, BLOCK_K) compare block
    bn = max(1, min(next_pow2(n), budget // bk)) if replacement else 1
    rows = 1 if gpu_blocks(dev) else max(1, min(next_pow2(M), (budget if replacement else 16384) // (bk * bn)))
    launch(multinomial_kernel, (cdiv(M, rows),), dev,
           [kptr(p), kptr(out), M, K, strides[0], strides[1], n, int(seed) & 0xFFFFFFFF, int(offset)],
           {"REPLACE": bool(replacement), "COMPUTE": compute_type(p.dtype), "ROWS": rows, "BLOCK_K": bk,
            "BLOCK_N": bn, "LOG_K": bk.bit_length() - 1})
    return out
