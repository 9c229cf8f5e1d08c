"""Reduction kernels over the last axis of a strided (M, K) view.

A reduction over any set of dims is a reduction over K of an (M, K) view
whose M and K dims are each merged into one stride (the launcher makes a
contiguous copy first when they cannot be merged).
"""
import triton
import triton.language as tl

from ._triton import gpu_blocks, launch, next_pow2
from .elementwise import cast_store, compute_type, kptr


@triton.jit
def sum_rows_kernel(x_ptr, out_ptr, M, K, stride_xm, stride_xk, scale,
                    COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK_K: tl.constexpr):
    """out[m] = scale * sum_k x[m, k]; x is (M, K) with strides (stride_xm, stride_xk)."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    acc = tl.zeros([ROWS, BLOCK_K], dtype=COMPUTE)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xk, mask=m, other=0)
        acc += x.to(COMPUTE)
    cast_store(out_ptr + rows, tl.sum(acc, axis=1) * scale, rmask)


def row_blocks(M, K, device, budget=65536):
    """(ROWS, BLOCK_K): many rows per program on cpu (the interpreter pays per program)."""
    if not gpu_blocks(device):
        bk = max(16, min(next_pow2(K), budget))
        rows = max(1, min(next_pow2(M), budget // bk))
        return rows, bk
    bk = max(16, min(next_pow2(K), 1024))
    return 1, bk


def sum_rows(x2, M, K, stride_m, stride_k, out, scale=1.0, compute=None):
    """out (M contiguous elements) = scale * row sums of the strided (M, K) view starting at x2."""
    if M == 0:
        return out
    dev = out.device.type
    rows, bk = row_blocks(M, K, dev)
    compute = compute or compute_type(out.dtype)
    launch(sum_rows_kernel, (triton.cdiv(M, rows),), dev,
           [kptr(x2), kptr(out), M, K, stride_m, stride_k, float(scale)],
           {"COMPUTE": compute, "ROWS": rows, "BLOCK_K": bk})
    return out
