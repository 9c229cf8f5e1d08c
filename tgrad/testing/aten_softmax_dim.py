"""A numpy model of ATen's cpu float32 (log_)softmax over a dim that is not the last (SoftMaxKernel.cpp,
_vec_softmax / _vec_log_softmax, AVX2 build), found by matching PyTorch 2.13 bit for bit: the max over the dim,
e = exp(x - max), s = sum e over the dim left to right, y = e / s (log: (x - max) - log s).  exp and log are
SLEEF's (tgrad.testing.aten_softmax), except the scalar tail's exp: ATen walks each thread's chunk of the
OUTER * INNER rows in vectors of 8 consecutive inner rows, and the rows left over (fewer than 8 before the end of
an inner row or of the chunk) take glibc's expf, modelled by the float64 exp rounded."""
import numpy as np

from .aten_softmax import sleef_expf, sleef_logf

f32 = np.float32


def vector_rows(M, inner, threads):
    """Mask (M,) of the rows m = outer * inner + i that ATen runs in its 8-row vectors."""
    nt = max(1, min(threads, M))
    ch = -(-M // nt)
    vec = np.zeros(M, bool)
    for b in range(0, M, ch):
        e = min(b + ch, M)
        idx = b
        while idx < e:
            re = min(e, idx - idx % inner + inner)
            while idx + 8 <= re:
                vec[idx:idx + 8] = True
                idx += 8
            idx = re if re > idx else idx + 1
    return vec


def softmax_dim(x, log=False, threads=2):
    """(log_)softmax over axis 1 of float32 x (OUTER, K, INNER), INNER > 1."""
    x = np.asarray(x, f32)
    O, K, inner = x.shape
    mx = x.max(1, keepdims=True)
    d = x - mx
    vec = vector_rows(O * inner, inner, threads).reshape(O, 1, inner)
    e = np.where(vec, sleef_expf(d), np.exp(d.astype(np.float64)).astype(f32))
    s = np.zeros((O, inner), f32)
    for k in range(K):
        s = s + e[:, k]
    if log:
        return d - sleef_logf(s)[:, None]
    return e / s[:, None]
