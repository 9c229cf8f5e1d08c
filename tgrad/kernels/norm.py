"""Layer-norm and batch-norm kernels (forward and fused backward).

Layer norm: x is a contiguous (M, K) matrix, one row per normalized group.
Batch norm: x is a contiguous (N, C, L) tensor, one program per channel
walking its N * L elements.
"""
import triton
import triton.language as tl

from ._triton import gpu_blocks, launch, next_pow2
from .elementwise import cast_store, compute_type, kptr
from .loss import split_float
from .softmax import row_tiles


@triton.jit
def _row_stats(x_ptr, rows, rmask, K, eps, COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK_K: tl.constexpr):
    """(mean, rstd) of each row of a contiguous (M, K) matrix; two passes for a stable variance."""
    acc = tl.zeros([ROWS], COMPUTE)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        acc += tl.sum(tl.load(x_ptr + rows[:, None] * K + cols[None, :], mask=m, other=0.0).to(COMPUTE), axis=1)
    mean = acc / K
    acc = tl.zeros([ROWS], COMPUTE)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        x = tl.load(x_ptr + rows[:, None] * K + cols[None, :], mask=m, other=0.0).to(COMPUTE)
        d = tl.where(m, x - mean[:, None], 0.0)
        acc += tl.sum(d * d, axis=1)
    return mean, 1.0 / tl.sqrt(acc / K + eps)


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, K, eps_hi, eps_lo,
                      HAS_W: tl.constexpr, HAS_B: tl.constexpr, COMPUTE: tl.constexpr, ROWS: tl.constexpr,
                      BLOCK_K: tl.constexpr):
    """y[m, k] = (x[m, k] - mean[m]) * rstd[m] * w[k] + b[k]; x, y contiguous (M, K)."""
    eps = tl.cast(eps_hi, COMPUTE) + tl.cast(eps_lo, COMPUTE)
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    mean, rstd = _row_stats(x_ptr, rows, rmask, K, eps, COMPUTE, ROWS, BLOCK_K)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        x = tl.load(x_ptr + rows[:, None] * K + cols[None, :], mask=m, other=0.0).to(COMPUTE)
        y = (x - mean[:, None]) * rstd[:, None]
        if HAS_W:
            y = y * tl.load(w_ptr + cols, mask=cols < K, other=0.0).to(COMPUTE)[None, :]
        if HAS_B:
            y = y + tl.load(b_ptr + cols, mask=cols < K, other=0.0).to(COMPUTE)[None, :]
        cast_store(y_ptr + rows[:, None] * K + cols[None, :], y, m)


@triton.jit
def layer_norm_backward_kernel(dy_ptr, x_ptr, w_ptr, dx_ptr, M, K, eps_hi, eps_lo,
                               HAS_W: tl.constexpr, COMPUTE: tl.constexpr, ROWS: tl.constexpr,
                               BLOCK_K: tl.constexpr):
    """dx = rstd * (h - mean(h) - xhat * mean(h * xhat)), h = dy * w; mean/rstd recomputed from x."""
    eps = tl.cast(eps_hi, COMPUTE) + tl.cast(eps_lo, COMPUTE)
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    mean, rstd = _row_stats(x_ptr, rows, rmask, K, eps, COMPUTE, ROWS, BLOCK_K)
    sh = tl.zeros([ROWS], COMPUTE)
    shx = tl.zeros([ROWS], COMPUTE)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        x = tl.load(x_ptr + rows[:, None] * K + cols[None, :], mask=m, other=0.0).to(COMPUTE)
        h = tl.load(dy_ptr + rows[:, None] * K + cols[None, :], mask=m, other=0.0).to(COMPUTE)
        if HAS_W:
            h = h * tl.load(w_ptr + cols, mask=cols < K, other=0.0).to(COMPUTE)[None, :]
        sh += tl.sum(h, axis=1)
        shx += tl.sum(tl.where(m, h * (x - mean[:, None]) * rstd[:, None], 0.0), axis=1)
    a = sh / K
    b = shx / K
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        x = tl.load(x_ptr + rows[:, None] * K + cols[None, :], mask=m, other=0.0).to(COMPUTE)
        h = tl.load(dy_ptr + rows[:, None] * K + cols[None, :], mask=m, other=0.0).to(COMPUTE)
        if HAS_W:
            h = h * tl.load(w_ptr + cols, mask=cols < K, other=0.0).to(COMPUTE)[None, :]
        xh = (x - mean[:, None]) * rstd[:, None]
        cast_store(dx_ptr + rows[:, None] * K + cols[None, :],
                   rstd[:, None] * (h - a[:, None] - xh * b[:, None]), m)


def layer_norm(x, w, b, y, M, K, eps):
    """y = layer_norm of the contiguous (M, K) x (w, b: (K,) or None)."""
    if M == 0:
        return y
    dev = y.device.type
    rows, bk = row_tiles(M, K, dev)
    launch(layer_norm_kernel, (triton.cdiv(M, rows),), dev,
           [kptr(x), kptr(w if w is not None else x), kptr(b if b is not None else x), kptr(y), M, K,
            *split_float(eps)],
           {"HAS_W": w is not None, "HAS_B": b is not None, "COMPUTE": compute_type(y.dtype), "ROWS": rows,
            "BLOCK_K": bk})
    return y


def layer_norm_backward(dy, x, w, dx, M, K, eps):
    """dx of layer_norm for contiguous (M, K) dy and x."""
    if M == 0:
        return dx
    dev = dx.device.type
    rows, bk = row_tiles(M, K, dev)
    launch(layer_norm_backward_kernel, (triton.cdiv(M, rows),), dev,
           [kptr(dy), kptr(x), kptr(w if w is not None else x), kptr(dx), M, K, *split_float(eps)],
           {"HAS_W": w is not None, "COMPUTE": compute_type(dx.dtype), "ROWS": rows, "BLOCK_K": bk})
    return dx
