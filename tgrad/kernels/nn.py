"""Small NN kernels: dropout (Philox), embedding gather / scatter-add, one_hot."""
import triton
import triton.language as tl

from ._triton import elementwise_block, launch
from .elementwise import cast_store, compute_type, kptr
from .softmax import row_tiles


@triton.jit
def dropout_kernel(x_ptr, y_ptr, mask_ptr, n_elements, p, scale, seed, offset, COMPUTE: tl.constexpr,
                   BLOCK: tl.constexpr):
    """keep[i] = U(seed, offset + i) >= p; y[i] = x[i] * keep[i] * scale; x, y, mask contiguous."""
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = idx < n_elements
    keep = tl.rand(seed, (offset + idx).to(tl.uint32)) >= p
    x = tl.load(x_ptr + idx, mask=m, other=0.0).to(COMPUTE)
    cast_store(y_ptr + idx, tl.where(keep, x * scale, 0.0), m)
    tl.store(mask_ptr + idx, keep, mask=m)


@triton.jit
def embedding_kernel(w_ptr, idx_ptr, out_ptr, n, D, stride_wv, stride_wd, ROWS: tl.constexpr,
                     BLOCK_D: tl.constexpr):
    """out[i, :] = w[idx[i], :]; out contiguous (n, D), idx contiguous (n,)."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < n
    src = tl.load(idx_ptr + rows, mask=rmask, other=0).to(tl.int64)
    for d0 in range(0, D, BLOCK_D):
        cols = d0 + tl.arange(0, BLOCK_D)
        m = rmask[:, None] & (cols[None, :] < D)
        v = tl.load(w_ptr + src[:, None] * stride_wv + cols[None, :] * stride_wd, mask=m)
        tl.store(out_ptr + rows[:, None] * D + cols[None, :], v, mask=m)


@triton.jit
def embedding_backward_kernel(g_ptr, idx_ptr, acc_ptr, n, D, padding_idx, ROWS: tl.constexpr,
                              BLOCK_D: tl.constexpr):
    """acc[idx[i], :] += g[i, :] (atomic) for idx[i] != padding_idx; g contiguous (n, D), acc zeroed."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    src = tl.load(idx_ptr + rows, mask=rows < n, other=padding_idx).to(tl.int64)
    rmask = (rows < n) & (src != padding_idx)
    for d0 in range(0, D, BLOCK_D):
        cols = d0 + tl.arange(0, BLOCK_D)
        m = rmask[:, None] & (cols[None, :] < D)
        g = tl.load(g_ptr + rows[:, None] * D + cols[None, :], mask=m, other=0.0)
        tl.atomic_add(acc_ptr + src[:, None] * D + cols[None, :], g.to(acc_ptr.dtype.element_ty), mask=m)


@triton.jit
def one_hot_kernel(x_ptr, out_ptr, n_elements, C, BLOCK: tl.constexpr):
    """out[i, c] = (x[i] == c) for the contiguous (n, C) int64 out."""
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = idx < n_elements
    x = tl.load(x_ptr + idx // C, mask=m, other=-1)
    tl.store(out_ptr + idx, (x == idx % C).to(tl.int64), mask=m)


def dropout(x, y, mask, p, seed, offset):
    n = y.numel()
    if n == 0:
        return y, mask
    dev = y.device.type
    block = elementwise_block(n, dev)
    scale = 0.0 if p >= 1 else 1.0 / (1.0 - p)
    launch(dropout_kernel, (triton.cdiv(n, block),), dev,
           [kptr(x), kptr(y), kptr(mask), n, float(p), float(scale), int(seed), int(offset)],
           {"COMPUTE": compute_type(y.dtype), "BLOCK": block})
    return y, mask


def embedding(w, idx, out, n, D):
    if n == 0 or D == 0:
        return out
    dev = out.device.type
    rows, bd = row_tiles(n, D, dev)
    launch(embedding_kernel, (triton.cdiv(n, rows),), dev,
           [kptr(w), kptr(idx), kptr(out), n, D, w.stride()[0], w.stride()[1]], {"ROWS": rows, "BLOCK_D": bd})
    return out


def embedding_backward(g, idx, acc, n, D, padding_idx):
    """acc (zeroed, contiguous (V, D), fp32/fp64) += rows of g scattered by idx."""
    if n == 0 or D == 0:
        return acc
    dev = acc.device.type
    rows, bd = row_tiles(n, D, dev)
    launch(embedding_backward_kernel, (triton.cdiv(n, rows),), dev,
           [kptr(g), kptr(idx), kptr(acc), n, D, int(padding_idx)], {"ROWS": rows, "BLOCK_D": bd})
    return acc


def one_hot(x, out, C):
    n = out.numel()
    if n == 0:
        return out
    dev = out.device.type
    block = elementwise_block(n, dev)
    launch(one_hot_kernel, (triton.cdiv(n, block),), dev, [kptr(x), kptr(out), n, C], {"BLOCK": block})
    return out
