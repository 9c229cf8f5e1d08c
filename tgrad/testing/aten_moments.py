"""A numpy model of ATen's cpu float32 row moments (RowwiseMoments, aten/src/ATen/native/cpu/moments_utils.h:
Welford over chunks of 16 8-lane vectors, the chunks' moments merged in a binary cascade, the scalar tail, then
the 8 lanes merged into it) and of layer_norm's forward (layer_norm_kernel.cpp), loop for loop, with the fmas
PyTorch 2.13's AVX2 build runs (found by matching its mean / rstd / output bit for bit on 480 rows of 5 ..
5,000 elements: the Welford steps and the scalar merges fused, the vector merges' mean and the tail not).
No kernel follows it yet: the reference for a layer_norm kernel in ATen's order."""
import numpy as np

from .aten_softmax import ceil_log2, fma, map_reduce_all, vec_reduce_tree

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
    """(y, mean, rstd) of layer_norm over the last dim of x (R, N): y = (x - mean) rstd weight + bias (one fma;
    a bias without weight: fma(x - mean, rstd, bias), ATen's scalar loop with the weight 1 folded)."""
    x = np.asarray(x, f32)
    mean, var = rowwise_moments(x)
    rstd = f32(1) / np.sqrt(var + f32(eps))
    if weight is None and bias is not None:
        return fma(x - mean[:, None], rstd[:, None], np.asarray(bias, f32)), mean, rstd
    y = (x + (-mean)[:, None]) * rstd[:, None]
    w = np.ones(x.shape[1], f32) if weight is None else np.asarray(weight, f32)
    b = np.zeros(x.shape[1], f32) if bias is None else np.asarray(bias, f32)
    return fma(y, w, b), mean, rstd


def batch_norm_stats(x, threads=2):
    """(mean, var_sum) float32 per channel of x (N, C, *) as batch_norm_cpu_collect_stats: (N, C, L > 1) double
    sums left to right (the float (x - mean)^2 added); (N, C) per-thread float sums over ceil(N / threads) rows
    each (the squares by fma), the threads' sums added in double."""
    x = np.asarray(x, f32)
    N, C = x.shape[:2]
    L = x.size // (N * C)
    if L > 1:
        xc = x.reshape(N, C, L).transpose(1, 0, 2).reshape(C, N * L)
        s = np.zeros(C, np.float64)
        for k in range(N * L):
            s = s + xc[:, k]
        mean = (s / (N * L)).astype(f32)
        s = np.zeros(C, np.float64)
        for k in range(N * L):
            d = xc[:, k] - mean
            s = s + d * d
        return mean, s.astype(f32)
    rows = x.reshape(N, C)
    nt = max(1, min(threads, N))
    ch = -(-N // nt)
    res = []
    for sq in (False, True):
        buf = np.zeros((nt, C), f32)
        for t in range(nt):
            for i in range(t * ch, min(N, (t + 1) * ch)):
                buf[t] = fma(rows[i] - mean, rows[i] - mean, buf[t]) if sq else buf[t] + rows[i]
        s = np.zeros(C, np.float64)
        for t in range(nt):
            s = s + buf[t]
        if not sq:
            mean = (s / N).astype(f32)
        res.append(mean if not sq else s.astype(f32))
    return tuple(res)


def batch_norm_train(x, weight=None, bias=None, running_mean=None, running_var=None, momentum=0.1, eps=1e-5,
                     threads=2):
    """(y, new running_mean, new running_var) of F.batch_norm(x, ..., training=True) on cpu float32."""
    x = np.asarray(x, f32)
    C = x.shape[1]
    n = x.size // C
    mean, vs = batch_norm_stats(x, threads)
    rstd = (1 / np.sqrt((vs / f32(n)).astype(np.float64) + eps)).astype(f32)
    w = np.ones(C, f32) if weight is None else np.asarray(weight, f32)
    b = np.zeros(C, f32) if bias is None else np.asarray(bias, f32)
    alpha = rstd * w
    beta = fma(-mean, alpha, b)
    shape = (1, C) + (1,) * (x.ndim - 2)
    y = fma(x, alpha.reshape(shape), beta.reshape(shape))
    rm = rv = None
    mom = f32(momentum)
    if running_mean is not None:
        rm = mom * mean + (f32(1) - mom) * np.asarray(running_mean, f32)
        rv = (np.float64(mom) * (vs / f32(n - 1)) + (f32(1) - mom) * np.asarray(running_var, f32)).astype(f32)
    return y, rm, rv



def _plane_sums(dy, p):
    """(reduce_all(+) of dy, map2_reduce_all of the products p) over the last axis (float32, AVX2 8 lanes): the
    vectors summed lane-wise, the partial tail vector's products added by fma (the products alone in the main
    loop), then the lanes' shuffle tree; under 8 elements the lanes added left to right."""
    K = dy.shape[-1]
    if K < 8:
        return tuple(map_reduce_all(v, lambda u: u, np.add) for v in (dy, p[0] * p[1]))
    sa, pa = dy[..., :8], p[0][..., :8] * p[1][..., :8]
    d = 8
    while d < K - K % 8:
        sa, pa = sa + dy[..., d:d + 8], pa + p[0][..., d:d + 8] * p[1][..., d:d + 8]
        d += 8
    if K - d > 0:
        sa, pa = sa.copy(), pa.copy()
        sa[..., :K - d] = sa[..., :K - d] + dy[..., d:K]
        pa[..., :K - d] = fma(p[0][..., d:K], p[1][..., d:K], pa[..., :K - d])
    return vec_reduce_tree(sa, np.add), vec_reduce_tree(pa, np.add)


def batch_norm_backward(dy, x, weight=None, running_mean=None, running_var=None, training=True, eps=1e-5,
                        threads=2):
    """(dx, dw, db) float32 of native_batch_norm_backward on cpu, ATen's order (batch_norm_kernel.cpp):
    sum = sum dy, dotp = sum (x - mean) dy per channel, k = dotp rstd^2 / n, dx = (dy - sum / n - (x - mean) k)
    rstd w (training) or dy rstd w; dw = dotp rstd, db = sum.  (N, C, L > 1): each (n, c) plane reduced in float
    (``_plane_sums``), the planes added in double; (N, C): per-thread float sums (dotp by fma) added in double, dx
    with one fma in the 8-wide columns, none in the tail columns.  Eval: rstd from the running variance in double."""
    dy, x = np.asarray(dy, f32), np.asarray(x, f32)
    N, C = x.shape[:2]
    L = x.size // (N * C)
    n = N * L
    if training:
        mean, vs = batch_norm_stats(x, threads)
        invstd = (1 / np.sqrt((vs / f32(n)).astype(np.float64) + eps)).astype(f32)
    else:
        mean = np.asarray(running_mean, f32)
        invstd = (1 / np.sqrt(np.asarray(running_var, f32).astype(np.float64) + eps)).astype(f32)
    w = np.ones(C, f32) if weight is None else np.asarray(weight, f32)
    if L > 1:
        xc, gc = x.reshape(N, C, L), dy.reshape(N, C, L)
        s = np.zeros(C, np.float64)
        dp = np.zeros(C, np.float64)
        for i in range(N):
            a, b = _plane_sums(gc[i], (xc[i] - mean[:, None], gc[i]))
            s, dp = s + a, dp + b
        dw, db = (dp * invstd).astype(f32), s.astype(f32)
        k = (dp.astype(f32) * invstd * invstd / f32(n))[:, None]
        gm = (s / n).astype(f32)[:, None]
        xm = xc - mean[:, None]
        dx = fma(-xm, k, gc - gm) if training else gc
        return (dx * invstd[:, None] * w[:, None]).reshape(x.shape), dw, db
    nt = max(1, min(threads, N))
    ch = -(-N // nt)
    sb = np.zeros((nt, C), f32)
    pb = np.zeros((nt, C), f32)
    for t in range(nt):
        for i in range(t * ch, min(N, (t + 1) * ch)):
            sb[t] = sb[t] + dy[i]
            pb[t] = fma(x[i] - mean, dy[i], pb[t])
    s = np.zeros(C, np.float64)
    dp = np.zeros(C, np.float64)
    for t in range(nt):
        s, dp = s + sb[t], dp + pb[t]
    s, dp = s.astype(f32), dp.astype(f32)
    dx = dy
    if training:
        k = dp * invstd * invstd / f32(n)
        xm, r = x - mean, dy - s / f32(n)
        c8 = C - C % 8
        dx = np.concatenate([fma(-xm[:, :c8], k[:c8], r[:, :c8]), r[:, c8:] - xm[:, c8:] * k[c8:]], axis=1)
    return dx * invstd * w, dp * invstd, s


def _vec_sums(factors):
    """map*_reduce_all(product of factors, +) over the last axis (AVX2): the products rounded in the main loop,
    the last factor fused (fma) into the tail vector's lanes, the lanes' tree; under 8 elements left to right."""
    K = factors[0].shape[-1]

    def prod(sl, n=None):
        r = factors[0][..., sl]
        for f in factors[1:n]:
            r = r * f[..., sl]
        return r
    if K < 8:
        return map_reduce_all(prod(slice(0, K)), lambda u: u, np.add)
    acc = prod(slice(0, 8))
    d = 8
    while d < K - K % 8:
        acc = acc + prod(slice(d, d + 8))
        d += 8
    if K - d > 0:
        acc = acc.copy()
        t = slice(d, K)
        acc[..., :K - d] = (fma(prod(t, -1), factors[-1][..., t], acc[..., :K - d]) if len(factors) > 1
                            else acc[..., :K - d] + factors[0][..., t])
    return vec_reduce_tree(acc, np.add)


def layer_norm_backward(dy, x, weight=None, eps=1e-5):
    """dx float32 of layer_norm over the last dim of x (M, K) as LayerNormBackwardKernelImplInternal:
    ds = sum dy x w, db = sum dy w, b = (db mean - ds) rstd^3 / K, c = -b mean - db rstd / K, dx = rstd dy w
    + b x + c, with the fmas of PyTorch 2.13's AVX2 build (found by matching it bit for bit)."""
    dy, x = np.asarray(dy, f32), np.asarray(x, f32)
    K = x.shape[1]
    mean, var = rowwise_moments(x)
    a = f32(1) / np.sqrt(var + f32(eps))
    w = None if weight is None else np.asarray(weight, f32)
    ds = _vec_sums([dy, x] + ([w] if w is not None else []))
    db = _vec_sums([dy] + ([w] if w is not None else []))
    scale = f32(1) / f32(K)
    b = fma(db, mean, -ds) * a * a * a * scale
    c = fma(-b, mean, -(db * a * scale))
    h = a[:, None] * dy
    if w is not None:
        h = h * w
    return fma(b[:, None], x, h) + c[:, None]


def layer_norm_param_backward(dy, x, eps=1e-5, threads=2):
    """(dw, db) float32 of layer_norm over the last dim of x (M, K) on cpu, ATen's order
    (LayerNormBackwardKernelImplInternal): at::parallel_for's threads take ceil(M / T) rows each and keep a
    buffer row each, dw_t = fma(dy_i, fma(rstd_i, x_i, -rstd_i mean_i), dw_t) and db_t = db_t + dy_i row after
    row; then the T buffers are added (from 0) per column."""
    dy, x = np.asarray(dy, f32), np.asarray(x, f32)
    M, K = x.shape
    mean, var = rowwise_moments(x)
    rstd = f32(1) / np.sqrt(var + f32(eps))
    nt = max(1, min(threads, M))
    ch = -(-M // nt)
    dw, db = np.zeros(K, f32), np.zeros(K, f32)
    for t in range(nt):
        bw, bb = np.zeros(K, f32), np.zeros(K, f32)
        for i in range(t * ch, min(M, (t + 1) * ch)):
            a = rstd[i]
            bw = fma(dy[i], fma(a, x[i], -a * mean[i]), bw)
            bb = bb + dy[i]
        dw, db = dw + bw, db + bb
    return dw, db


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
    """y of F.group_norm on a contiguous float32 x (N, C, *) on cpu, ATen's order (GroupNormKernelImplInternal):
    the moments of each (n, group) row as rowwise_moments, rstd = 1 / sqrt(var + eps) in double; with weight or
    bias s = rstd w, y = fma(x, s, fma(-s, mean, b)) (w = 1, b = 0 when absent), else y = (x - mean) rstd."""
    x = np.asarray(x, f32)
    N, C = x.shape[:2]
    G = num_groups
    HW = x.size // max(N * C, 1)
    r = x.reshape(N * G, -1)
    mean, var = rowwise_moments(r)
    rstd = (1 / np.sqrt(np.maximum(var, 0).astype(np.float64) + eps)).astype(f32)
    if weight is None and bias is None:
        return ((r - mean[:, None]) * rstd[:, None]).reshape(x.shape)
    ch = (np.arange(N * G) % G)[:, None] * (C // G) + np.arange(r.shape[1])[None, :] // HW
    s = rstd[:, None] * (np.ones(C, f32) if weight is None else np.asarray(weight, f32))[ch]
    b = (np.zeros(C, f32) if bias is None else np.asarray(bias, f32))[ch]
    return fma(r, s, fma(-s, mean[:, None], b)).reshape(x.shape)


def _plane_reduce_all(v):
    """vec::reduce_all (+) of each row of v (P, HW): HW < 8 left to right; else 8-lane vectors added in turn
    (the tail a zero-padded vector), then AVX2's lane tree."""
    P, HW = v.shape
    if HW < 8:
        s = v[:, 0].copy()
        for j in range(1, HW):
            s = s + v[:, j]
        return s
    acc = v[:, :8].copy()
    for j in range(8, HW, 8):
        t = np.zeros((P, 8), f32)
        t[:, :min(8, HW - j)] = v[:, j:j + 8]
        acc = acc + t
    return vec_reduce_tree(acc, np.add)


def group_norm_param_backward(dy, x, num_groups, eps=1e-5):
    """(dw, db) float32 of F.group_norm on cpu, ATen's order (GroupNormBackwardKernelImplInternal): per (n, c)
    plane ds = reduce_all(dy x), db = reduce_all(dy); over n in turn dw = fma(fma(-db, mean, ds), rstd, dw),
    db_c = db_c + db (mean, rstd of the forward: ``group_norm``'s)."""
    dy, x = np.asarray(dy, f32), np.asarray(x, f32)
    N, C = x.shape[:2]
    G = num_groups
    HW = x.size // max(N * C, 1)
    mean, var = rowwise_moments(x.reshape(N * G, -1))
    rstd = (1 / np.sqrt(np.maximum(var, 0).astype(np.float64) + eps)).astype(f32)
    ds = _plane_reduce_all(dy.reshape(N * C, HW) * x.reshape(N * C, HW)).reshape(N, C)
    db = _plane_reduce_all(dy.reshape(N * C, HW)).reshape(N, C)
    gw, gb = np.zeros(C, f32), np.zeros(C, f32)
    for n in range(N):
        m, r = np.repeat(mean.reshape(N, G)[n], C // G), np.repeat(rstd.reshape(N, G)[n], C // G)
        gw = fma(fma(-db[n], m, ds[n]), r, gw)
        gb = gb + db[n]
    return gw, gb
