"""A numpy model of ATen's cpu float32 (log_)softmax over the last dim and of nll_loss's reduction, loop for loop
as aten/src/ATen/native/cpu/SoftMaxKernel.cpp (_vec_log_softmax_lastdim, _vec_softmax_lastdim), the vec
helpers reduce_all / map_reduce_all (AVX2: 8 float lanes, the lanes folded by the 128/64/32-bit shuffle tree)
and aten/src/ATen/native/LossNLL.cpp (nll_loss_out_frame's 8-level cascade) run them, with Vectorized<float>'s
exp and log: SLEEF's expf8_u10 / logf8_u10 (xexpf / xlogf_u1 of sleefsimdsp.c, AVX2 build: every mla an fma).
The reference the softmax / cross-entropy kernels are tested against bit for bit (checked against PyTorch 2.13's
log_softmax, softmax and cross_entropy on this machine's AVX2 build)."""
import numpy as np

f32 = np.float32


def fma(a, b, c):
    """a b + c rounded once (float32 inputs: the product is exact in float64)."""
    a, b, c = np.broadcast_arrays(np.asarray(a, f32), np.asarray(b, f32), np.asarray(c, f32))
    return (a.astype(np.float64) * b + c.astype(np.float64)).astype(f32)


_R_LN2 = f32(1.442695040888963407359924681001892137426645954152985934135449406931)
_L2U, _L2L = f32(0.693145751953125), f32(1.428606765330187045e-06)
EXP_POLY = (0.000198527617612853646278381, 0.00139304355252534151077271, 0.00833336077630519866943359,
            0.0416664853692054748535156, 0.166666671633720397949219, 0.5)


def sleef_expf(d):
    """xexpf: q = rint(d / ln 2), s = d - q ln 2 (two fmas), 1 + (s s p(s) + s), times 2^q in two halves."""
    d = np.asarray(d, f32)
    q = np.rint(d * _R_LN2).astype(np.int32)
    qf = q.astype(f32)
    s = fma(qf, -_L2U, d)
    s = fma(qf, -_L2L, s)
    u = np.full_like(s, f32(EXP_POLY[0]))
    for c in EXP_POLY[1:]:
        u = fma(u, s, f32(c))
    u = f32(1) + fma(s * s, u, s)
    h = q >> 1
    u = u * np.ldexp(f32(1), h).astype(f32) * np.ldexp(f32(1), q - h).astype(f32)
    u = np.where(d < -104, f32(0), u)
    return np.where(d > 100, f32(np.inf), u).astype(f32)


def sleef_logf(d):
    """xlogf_u1 for normal positive d: d = m 2^e (m in [0.75, 1.5)), log m from x = (m - 1) / (m + 1) in
    double-float arithmetic (dfadd2, dfdiv, dfmul, dfadd as df.h writes them with fma)."""
    d = np.asarray(d, f32)
    e = (((d * f32(1.0 / 0.75)).view(np.int32) >> 23) & 0xff) - 0x7f
    m = (d.view(np.int32) - (e << 23)).view(f32)
    ef = e.astype(f32)
    L, l = f32(0.69314718246459960938), f32(-1.904654323148236017e-09)
    sx = L * ef
    sy = fma(l, ef, fma(L, ef, -sx))

    def add2(x, y):
        rx = x + y
        v = rx - x
        return rx, (x - (rx - v)) + (y - v)
    nx, ny = add2(np.full_like(m, -1), m)
    dx, dy = add2(np.full_like(m, 1), m)
    t = f32(1) / dx
    qx = nx * t
    u = fma(t, nx, -qx)
    qy = fma(-dy, t, fma(-dx, t, f32(1)))
    qy = fma(qx, qy, fma(ny, t, u))
    x2 = qx * qx
    p = fma(fma(f32(0.3027294874), x2, f32(0.3996108174)), x2, f32(0.6666694880))
    yx, yy = qx * f32(2), qy * f32(2)
    rx = sx + yx
    ry = (((sx - rx) + yx) + sy) + yy
    w = (x2 * qx) * p
    r = rx + w
    r = r + (((rx - r) + w) + ry)
    r = np.where(d == 0, f32(-np.inf), r)
    return np.where(d == np.inf, f32(np.inf), np.where((d < 0) | np.isnan(d), f32(np.nan), r)).astype(f32)


def vec_reduce_tree(v, op):
    """vec_reduce_all of one 8-lane vector (AVX2): lanes i, i + 4, then i, i + 2, then i, i + 1."""
    v = op(v[..., :4], v[..., 4:])
    v = op(v[..., :2], v[..., 2:])
    return op(v[..., 0], v[..., 1])


def map_reduce_all(x, fn, op, vec=8):
    """vec::map_reduce_all over the last axis of x (R, K): fn per element, combined with op."""
    K = x.shape[-1]
    if K < vec:                     # one partial vector, lanes combined left to right
        e = fn(x)
        acc = e[..., 0]
        for i in range(1, K):
            acc = op(acc, e[..., i])
        return acc
    acc = fn(x[..., :vec])
    d = vec
    while d < K - K % vec:
        acc = op(acc, fn(x[..., d:d + vec]))
        d += vec
    if K - d > 0:                   # the tail: only its first K - d lanes change
        acc = acc.copy()
        acc[..., :K - d] = op(acc[..., :K - d], fn(x[..., d:K]))
    return vec_reduce_tree(acc, op)


def log_softmax_lastdim(x):
    """_vec_log_softmax_lastdim on float32 rows x (R, K): x - max - log(sum exp(x - max))."""
    x = np.asarray(x, f32)
    mx = map_reduce_all(x, lambda v: v, np.maximum)
    s = map_reduce_all(x, lambda v: sleef_expf(v - mx[..., None]), np.add)
    return (x - mx[..., None]) - sleef_logf(s)[..., None]


def softmax_lastdim(x):
    """_vec_softmax_lastdim on float32 rows x (R, K): exp(x - max) times 1 / sum."""
    x = np.asarray(x, f32)
    mx = map_reduce_all(x, lambda v: v, np.maximum)
    e = sleef_expf(x - mx[..., None])
    s = map_reduce_all(e, lambda v: v, np.add)
    return e * (f32(1) / s)[..., None]


def ceil_log2(x):
    """ATen's utils::CeilLog2."""
    return 1 if x <= 2 else int(x - 1).bit_length()


def nll_loss(logp, target, weight=None, reduction="mean", ignore_index=-100):
    """nll_loss_out_frame for a 2-D (N, C) logp, reduction 'sum' / 'mean': the 8-level cascade of the -logp[b, t]."""
    logp = np.asarray(logp)
    dt = logp.dtype.type
    N = logp.shape[0]
    levels = 8
    lp = max(4, ceil_log2(N) // levels)
    mask = (1 << lp) - 1
    ls = [dt(0)] * levels
    ws = [dt(0)] * levels
    ignored = 0
    for b in range(N):
        t = int(target[b])
        if t == ignore_index:
            ignored += 1
            continue
        if weight is not None:
            ls[0] = dt(ls[0] - dt(logp[b, t] * weight[t]))
            ws[0] = dt(ws[0] + weight[t])
        else:
            ls[0] = dt(ls[0] - logp[b, t])
        for j in range(levels - 1):
            if b & (mask << (j * lp)):
                break
            ws[j + 1] = dt(ws[j + 1] + ws[j])
            ls[j + 1] = dt(ls[j + 1] + ls[j])
            ws[j] = ls[j] = dt(0)
    tw = dt(N - ignored)
    if weight is not None:
        tw = dt(0)
        for v in ws:
            tw = dt(tw + v)
    out = dt(0)
    for v in ls:
        out = dt(out + v)
    return dt(out / tw) if reduction == "mean" else out


def log_softmax_backward_lastdim(g, out):
    """_vec_host_softmax_backward_lastdim<log>: g - exp(out) sum(g), one fma (the compiler contracts it)."""
    g, out = np.asarray(g, f32), np.asarray(out, f32)
    s = map_reduce_all(g, lambda v: v, np.add)
    return fma(-sleef_expf(out), s[..., None], g)


def softmax_backward_lastdim(g, out):
    """_vec_host_softmax_backward_lastdim<softmax>: (g - sum(g out)) out (map2_reduce_all: each product
    rounded, then the lane sums; no fma here)."""
    g, out = np.asarray(g, f32), np.asarray(out, f32)
    s = map_reduce_all(g * out, lambda v: v, np.add)
    return (g - s[..., None]) * out
