"""A numpy model of ATen's cpu float sum (``cascade_sum`` in aten/src/ATen/native/cpu/SumKernel.cpp, AVX2:
8 float / 4 double lanes), written loop for loop as ATen's C++ runs: the reference the cascade_sum_kernel
tests compare against bit for bit (checked against PyTorch 2.13's sums on this machine's AVX2 build)."""
import numpy as np


def ceil_log2(x):
    """ATen's utils::CeilLog2."""
    return 1 if x <= 2 else int(x - 1).bit_length()


def multi_row_sum(rows):
    """multi_row_sum: the cascade sum over axis 0 of rows (size, ...lanes), lane by lane."""
    size = rows.shape[0]
    num_levels = 4
    lp = max(4, ceil_log2(size) // num_levels)
    step = 1 << lp
    mask = step - 1
    z = np.zeros(rows.shape[1:], rows.dtype)
    acc = [z.copy() for _ in range(num_levels)]
    i = 0
    while i + step <= size:
        for j in range(step):
            acc[0] = acc[0] + rows[i]
            i += 1
        for j in range(1, num_levels):
            acc[j] = acc[j] + acc[j - 1]
            acc[j - 1] = z.copy()
            if (i & (mask << (j * lp))) != 0:
                break
    while i < size:
        acc[0] = acc[0] + rows[i]
        i += 1
    for j in range(1, num_levels):
        acc[0] = acc[0] + acc[j]
    return acc[0]


def row_sum(seq):
    """row_sum: 4 interleaved multi_row_sums over axis 0 of seq, the leftover into the first, then added."""
    n = seq.shape[0]
    nilp = n // 4
    if nilp:
        p = multi_row_sum(seq[:nilp * 4].reshape((nilp, 4) + seq.shape[1:]))   # (4, ...lanes)
        p = [p[k] for k in range(4)]
    else:
        p = [np.zeros(seq.shape[1:], seq.dtype) for _ in range(4)]
    for i in range(nilp * 4, n):
        p[0] = p[0] + seq[i]
    for k in range(1, 4):
        p[0] = p[0] + p[k]
    return p[0]


def inner_sum(x, vec):
    """One contiguous row x (K,): vectorized_inner_sum if K >= vec, else row_sum."""
    K = x.shape[0]
    if K < vec:
        return x.dtype.type(0) + row_sum(x)
    V = K // vec
    vacc = row_sum(x[:V * vec].reshape(V, vec))
    f = x.dtype.type(0)
    for k in range(V * vec, K):
        f = f + x[k]
    for l in range(vec):
        f = f + vacc[l]
    return x.dtype.type(0) + f


def full_sum(x, threads=2, vec=None):
    """x.sum() of a contiguous x on ``threads`` threads (at::parallel_for's split past GRAIN_SIZE)."""
    x = np.ascontiguousarray(x).reshape(-1)
    vec = vec or (8 if x.dtype == np.float32 else 4)
    n = x.size
    if n < 32768 or threads == 1:
        return inner_sum(x, vec)
    nt = min(threads, -(-n // 32768))
    chunk = -(-n // nt)
    bufs = [inner_sum(x[t * chunk:min(n, (t + 1) * chunk)], vec) for t in range(nt)]
    f = x.dtype.type(0)
    return f + row_sum(np.array(bufs, x.dtype))


def outer_sum(x, vec=None):
    """x.sum(0) of a contiguous (R, C) x: vectorized_outer_sum if C >= vec, else scalar_outer_sum."""
    R, C = x.shape
    vec = vec or (8 if x.dtype == np.float32 else 4)
    out = np.zeros(C, x.dtype)
    if C < vec:
        j = 0
        while j + 3 < C:
            out[j:j + 4] = multi_row_sum(x[:, j:j + 4])
            j += 4
        while j < C:
            out[j] = row_sum(x[:, j])
            j += 1
        return out
    j = 0
    while j + 4 * vec <= C:
        out[j:j + 4 * vec] = multi_row_sum(x[:, j:j + 4 * vec])
        j += 4 * vec
    while j + vec <= C:
        out[j:j + vec] = row_sum(x[:, j:j + vec])
        j += vec
    while j < C:
        out[j] = row_sum(x[:, j])
        j += 1
    return out
