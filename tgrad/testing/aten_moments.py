"""A numpy model of ATen's cpu float32 row moments (RowwiseMoments, aten/src/ATen/native/cpu/moments_utils.h:
Welford over chunks of 16 8-lane vectors, the chunks' moments merged in a binary cascade, the scalar tail, then
the 8 lanes merged into it) and of layer_norm's forward (layer_norm_kernel.cpp), loop for loop, with the fmas
PyTorch 2.13's AVX2 build runs (found by matching its mean / rstd / output bit for bit on 480 rows of 5 ..
5,000 elements: the Welford steps and the scalar merges fused, the vector merges' mean and the tail not).
No kernel follows it yet: the reference for a layer_norm kernel in ATen's order."""
import numpy as np

from .aten_softmax import ceil_log2, fma

f32 = np.float32
CHUNK = 16


def _merge(m0_add, m1_add, m2_add, m0, m1, m2, vector):
    """AddMomentsVec (vector) / AddMoments: (m0_add, m1_add, m2_add) merged into (m0, m1, m2)."""
    n = m0 + m0_add
    c = f32(0) if n == 0 else f32(m0_add) / f32(n)
    delta = m1_add - m1
    if vector:
        return n, m1 + c * delta, fma(delta, delta * c * f32(m0), m2 + m2_add)
    return n, fma(c, delta, m1), m2 + fma(delta * delta * c, f32(m0), m2_add)


def rowwise_moments(x, ddof=0, vec=8):
    """(mean, var) of each row of a float32 x (R, N) as RowwiseMomentsImpl computes them."""
    x = np.asarray(x, f32)
    R, N = x.shape
    n = N // vec
    m = -(-n // CHUNK)
    depth = ceil_log2(m)
    z = np.zeros((R, vec), f32)
    st = [(0, z, z)] * depth
    cinv = [f32(1) / f32(j + 1) for j in range(CHUNK)]
    for i in range(m):
        cnt = min(CHUNK, n - i * CHUNK)
        m1, m2 = z, z
        for j in range(cnt):
            xv = x[:, (i * CHUNK + j) * vec:(i * CHUNK + j + 1) * vec]
            d = xv - m1
            m1 = fma(d, cinv[j], m1)
            m2 = fma(d, xv - m1, m2)
        st[0] = _merge(cnt, m1, m2, *st[0], True)
        mask = i + 1
        j = 1
        while j < depth and (mask & 1) == 0:
            st[j] = _merge(*st[j - 1], *st[j], True)
            st[j - 1] = (0, z, z)
            mask >>= 1
            j += 1
    for i in range(1, depth):
        st[0] = _merge(*st[i], *st[0], True)
    m1a, m2a = st[0][1], st[0][2]
    m0, m1, m2 = 0, np.zeros(R, f32), np.zeros(R, f32)
    for i in range(n * vec, N):
        d = x[:, i] - m1
        m0 += 1
        m1 = m1 + d / f32(m0)
        m2 = m2 + d * (x[:, i] - m1)
    for lane in range(vec):
        m0, m1, m2 = _merge(n, m1a[:, lane], m2a[:, lane], m0, m1, m2, False)
    return m1, m2 / f32(N - ddof)


def layer_norm(x, weight=None, bias=None, eps=1e-5):
    """(y, mean, rstd) of layer_norm over the last dim of x (R, N): y = (x - mean) rstd weight + bias (one fma)."""
    x = np.asarray(x, f32)
    mean, var = rowwise_moments(x)
    rstd = f32(1) / np.sqrt(var + f32(eps))
    y = (x + (-mean)[:, None]) * rstd[:, None]
    w = np.ones(x.shape[1], f32) if weight is None else np.asarray(weight, f32)
    b = np.zeros(x.shape[1], f32) if bias is None else np.asarray(bias, f32)
    return fma(y, w, b), mean, rstd
