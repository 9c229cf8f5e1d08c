/* C twins of kernels/norm.py's batch_norm kernels and kernels/pool.py's max-pool kernels on the cpu: a cpu launch's
   tape (launcher.cpu_twin) computing the float32 operations of the kernel's traced tape in the same order, so the
   same bits (tests/kernels/test_cnn_twins.py).  Built with -ffp-contract=off (no a*b+c fused unless written fmaf)
   and without fast-math.  Each takes (params, fallback, addresses..., floats...), params the bytes of int64s,
   fallback(addresses..., floats...) the kernel's tape, called instead for inputs a twin does not take.

   batch_norm_f32(params, fallback, x, w, b, rm, rv, y, mom_hi, mom_lo, eps_hi, eps_lo): batch_norm_kernel (ATEN,
       L > 1); params = C, L, n, TRAINING, HAS_W, HAS_B, HAS_RUN, BLOCK, 0, 0.
   batch_norm_backward_f32(params, fallback, dy, x, w, rm, rv, dx, dw, db, eps_hi, eps_lo): batch_norm_backward_kernel
       (ATEN, L > 1); params = C, L, n, TRAINING, HAS_W, 0, 0, BLOCK, VB, 0.
   max_pool_f32(params, fallback, x, y, i): pool_forward_kernel (MAX, fixed windows); params = NC, C, H, W, OH, OW,
       KH, KW, sh, sw, ph, pw, dh, dw, s_xn, s_xc, s_xh, s_xw, 0, 0, 0, 0, INSIDE.
   max_pool_backward_f32(params, fallback, dy, i, dx): pool_backward_kernel (MAX, fixed windows); params = NC, C, H,
       W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw, s_gn, s_gc, s_gh, s_gw, s_in, s_ic, s_ih, s_iw, DISJOINT.
   conv1_f32(params, fallback, x, w, b, y): conv_forward_kernel (kernels/conv.py) with one input channel a group
       (CG = 1, float32); params = NB, H, W, OH, OW, KH, KW, OG, groups, sh, sw, ph, pw, dh, dw, x's, w's and y's
       4 strides, b's stride, HAS_B. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The arithmetic compiled for FMA (fmaf one instruction, not a libm call): the module's ``hardware`` is 0 on a cpu
   without it, and the twins are then not used (kernels/norm.py, pool.py). */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define HAVE_HW 1
#pragma GCC push_options
#pragma GCC target("fma")
#endif

/* c ? a : b without a branch (the max's taps and the gradient's hits are data: a mispredicted branch each costs
   more than the select; GCC turns a ?: of floats into a jump) */
static inline float sel_f(int c, float a, float b) {
    int32_t ia, ib, m = -(int32_t)(c != 0);
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    ia = (ia & m) | (ib & ~m);
    memcpy(&a, &ia, 4);
    return a;
}
static inline int64_t sel_i(int c, int64_t a, int64_t b) {
    int64_t m = -(int64_t)(c != 0);
    return (a & m) | (b & ~m);
}

/* The twins take finite inputs (a launch with a NaN or inf input calls its fallback, the kernel's tape): NaNs then
   arise only as x86's default NaN, one sign and payload whatever the operand order of numpy's loops or of this
   file's compiled code (which differ between numpy's inlined copies of one loop: which of two NaNs comes out). */
static int all_finite(const float *a, int64_t n) {
    int ok = 1;
    for (int64_t i = 0; i < n; i++) ok &= isfinite(a[i]) != 0;
    return ok;
}

/* numpy's pairwise sum of a[0:n] (8 accumulators up to 128 values, halves above, a plain sum below 8) */
static double pairwise_d(const double *a, int64_t n) {
    if (n < 8) {
        double r = -0.0;
        for (int64_t i = 0; i < n; i++) r += a[i];
        return r;
    }
    if (n <= 128) {
        double r[8];
        int64_t i;
        for (int j = 0; j < 8; j++) r[j] = a[j];
        for (i = 8; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++) r[j] += a[i + j];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += a[i];
        return res;
    }
    int64_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_d(a, n2) + pairwise_d(a + n2, n - n2);
}

/* ---------------------------------------------------------------- batch_norm (ATEN, L > 1) */
typedef struct { int64_t C, L, n, training, has_w, has_b, has_run, block, vb, unused; } bn_params;

/* _aten_channel_stats (L > 1): mean = f32(sum_d / n), var_sum = f32(sum_d f64((x - mean)^2)), the double sums
   as the tape's: BLOCK lanes accumulated block after block, then tl.sum (np.sum: 0 + the lanes' pairwise sum) */
static void bn_stats(const float *x, const bn_params *p, int64_t c, double *acc, float *mean, float *var_sum) {
    int64_t n = p->n, B = p->block, C = p->C, L = p->L;
    const float *xc = x + c * L;
    for (int64_t j = 0; j < B; j++) acc[j] = 0.0;
    if (n <= B) {       /* one block: lane j = i L + l (plane i, offset l); loops the compiler vectorizes */
        for (int64_t i = 0; i < n / L; i++)
            for (int64_t l = 0; l < L; l++) acc[i * L + l] += (double)xc[i * C * L + l];
    } else {
        for (int64_t j0 = 0, i = 0, l = 0; j0 < n; j0 += B)
            for (int64_t j = 0; j < B && j0 + j < n; j++) {
                acc[j] += (double)xc[i * C * L + l];
                if (++l == L) l = 0, i++;
            }
    }
    float m = (float)((0.0 + pairwise_d(acc, B)) / (double)n);
    for (int64_t j = 0; j < B; j++) acc[j] = 0.0;
    if (n <= B) {
        for (int64_t i = 0; i < n / L; i++)
            for (int64_t l = 0; l < L; l++) {
                float d = xc[i * C * L + l] - m;
                acc[i * L + l] += (double)(d * d);
            }
    } else {
        for (int64_t j0 = 0, i = 0, l = 0; j0 < n; j0 += B)
            for (int64_t j = 0; j < B && j0 + j < n; j++) {
                float d = xc[i * C * L + l] - m;
                acc[j] += (double)(d * d);
                if (++l == L) l = 0, i++;
            }
    }
    *mean = m;
    *var_sum = (float)(0.0 + pairwise_d(acc, B));
}

static void batch_norm_run(const bn_params *p, const float *x, const float *w, const float *b, float *rm, float *rv,
                           float *y, float mom_hi, float mom_lo, float eps_hi, float eps_lo, double *acc) {
    int64_t C = p->C, L = p->L, n = p->n;
    double eps64 = (double)eps_hi + (double)eps_lo;
    float eps32 = eps_hi + eps_lo, nf = (float)n;
    for (int64_t c = 0; c < C; c++) {
        float mean, rstd;
        if (p->training) {
            float var_sum;
            bn_stats(x, p, c, acc, &mean, &var_sum);
            rstd = (float)(1.0 / sqrt((double)(var_sum / nf) + eps64));
            if (p->has_run) {
                float momentum = mom_hi + mom_lo, keep = 1.0f - momentum, r_m = rm[c], r_v = rv[c];
                rm[c] = momentum * mean + keep * r_m;
                double unbiased = (double)(var_sum / (float)(n - 1 > 1 ? n - 1 : 1));
                rv[c] = (float)((double)momentum * unbiased + (double)(keep * r_v));
            }
        } else {
            mean = rm[c];
            rstd = 1.0f / sqrtf(rv[c] + eps32);
        }
        float alpha = p->has_w ? rstd * w[c] : rstd;
        float beta = fmaf(-mean, alpha, p->has_b ? b[c] : 0.0f);
        for (int64_t i = 0; i < n / L; i++) {
            const float *xr = x + (i * C + c) * L;
            float *yr = y + (i * C + c) * L;
            for (int64_t l = 0; l < L; l++) yr[l] = fmaf(xr[l], alpha, beta);
        }
    }
}

/* _aten_vec_sums of one plane of L > 1 contiguous elements (no weight): (sum dy, sum (x - sub) dy) float32 */
static void bn_plane_sums(const float *g, const float *x, float sub, int64_t L, int64_t VB, float *ps, float *pd) {
    int64_t NV = L / 8;
    float sa[8] = {0}, pa[8] = {0};
    if (L < 8) {        /* the 8 lanes' cumsum (zeros past L), its last picked by a sum with zeros */
        float s = g[0], d = (x[0] - sub) * g[0];
        for (int64_t i = 1; i < L; i++) {
            s = s + g[i];
            d = d + (x[i] - sub) * g[i];
        }
        *ps = s + 0.0f;
        *pd = d + 0.0f;
        return;
    }
    for (int64_t v0 = 0; v0 < NV; v0 += VB) {  /* lanes_add: ((v + acc) + v' + ...) + 0 (a step's vectors past NV: 0) */
        int64_t nv = NV - v0 < VB ? NV - v0 : VB;
        for (int i = 0; i < 8; i++) {
            float s = g[v0 * 8 + i] + sa[i], d = (x[v0 * 8 + i] - sub) * g[v0 * 8 + i] + pa[i];
            for (int64_t ch = 1; ch < nv; ch++) {
                int64_t e = (v0 + ch) * 8 + i;
                s = s + g[e];
                d = d + (x[e] - sub) * g[e];
            }
            sa[i] = s + 0.0f;
            pa[i] = d + 0.0f;
        }
    }
    int64_t t = L - NV * 8;
    for (int i = 0; i < t; i++) {
        float gi = g[NV * 8 + i];
        sa[i] = sa[i] + gi;
        pa[i] = fmaf(x[NV * 8 + i] - sub, gi, pa[i]);
    }
    *ps = ((sa[0] + sa[4]) + (sa[2] + sa[6])) + ((sa[1] + sa[5]) + (sa[3] + sa[7]));
    *pd = ((pa[0] + pa[4]) + (pa[2] + pa[6])) + ((pa[1] + pa[5]) + (pa[3] + pa[7]));
}

static void batch_norm_backward_run(const bn_params *p, const float *dy, const float *x, const float *w,
                                    const float *rm, const float *rv, float *dx, float *dw, float *db, float eps_hi,
                                    float eps_lo, double *acc) {
    int64_t C = p->C, L = p->L, n = p->n, N = n / L;
    double eps64 = (double)eps_hi + (double)eps_lo;
    float nf = (float)n;
    for (int64_t c = 0; c < C; c++) {
        float mean;
        double var;
        if (p->training) {
            float var_sum;
            bn_stats(x, p, c, acc, &mean, &var_sum);
            var = (double)(var_sum / nf);
        } else {
            mean = rm[c];
            var = (double)rv[c];
        }
        float rstd = (float)(1.0 / sqrt(var + eps64));
        double s = 0.0, d = 0.0;
        for (int64_t i = 0; i < N; i++) {  /* the planes' sums in double, in n order */
            float ps, pd;
            int64_t off = (i * C + c) * L;
            bn_plane_sums(dy + off, x + off, mean, L, p->vb, &ps, &pd);
            s += (double)ps;
            d += (double)pd;
        }
        dw[c] = (float)(d * (double)rstd);
        db[c] = (float)s;
        float k = (float)d * rstd * rstd / nf, gm = (float)(s / (double)n), wc = p->has_w ? w[c] : 1.0f;
        for (int64_t i = 0; i < N; i++) {
            int64_t off = (i * C + c) * L;
            for (int64_t l = 0; l < L; l++) {
                float g = dy[off + l];
                if (p->training) g = fmaf(-(x[off + l] - mean), k, g - gm);
                dx[off + l] = g * rstd * wc;
            }
        }
    }
}

/* ---------------------------------------------------------------- max pool (fixed windows) */
typedef struct {
    int64_t NC, C, H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw, s0, s1, s2, s3, t0, t1, t2, t3, flag;
} pool_params;

/* taps: 2 (KH KW) int64 of scratch (each tap's memory and index offsets from the window's corner), row: 2 OW */
static void max_pool_run(const pool_params *p, const float *x, float *y, int64_t *idx, int64_t *taps, int64_t *row) {
    int64_t H = p->H, W = p->W, OH = p->OH, OW = p->OW, KH = p->KH, KW = p->KW;
    for (int64_t t = 0; t < KH * KW; t++) {
        taps[2 * t] = (t / KW) * p->dh * p->s2 + (t % KW) * p->dw * p->s3;
        taps[2 * t + 1] = (t / KW) * p->dh * W + (t % KW) * p->dw;
    }
    float *best = (float *)row;
    int64_t *bt = row + OW;
    for (int64_t nc = 0; nc < p->NC; nc++) {
        const float *base = x + (nc / p->C) * p->s0 + (nc % p->C) * p->s1;
        for (int64_t oh = 0; oh < OH; oh++) {
            int64_t hs = oh * p->sh - p->ph, out = nc * OH * OW + oh * OW;
            if (p->flag) {      /* INSIDE (no padding): a row's outputs tap by tap, their chains side by side */
                const float *r = base + hs * p->s2;
                int64_t sx = p->sw * p->s3;
                for (int64_t ow = 0; ow < OW; ow++) {
                    best[ow] = r[ow * sx];
                    bt[ow] = 0;
                }
                for (int64_t t = 1; t < KH * KW; t++) {
                    const float *rt = r + taps[2 * t];
                    for (int64_t ow = 0; ow < OW; ow++) {   /* selects, no branch on the data */
                        float v = rt[ow * sx];
                        int take = (v > best[ow]) | (v != v);
                        best[ow] = sel_f(take, v, best[ow]);
                        bt[ow] = sel_i(take, t, bt[ow]);
                    }
                }
                for (int64_t ow = 0; ow < OW; ow++) {
                    y[out + ow] = best[ow];
                    idx[out + ow] = hs * W + ow * p->sw + taps[2 * bt[ow] + 1];
                }
                continue;
            }
            for (int64_t ow = 0; ow < OW; ow++) {
                int64_t ws = ow * p->sw - p->pw, bidx = -1;
                float b = -INFINITY;
                for (int64_t kh = 0; kh < KH; kh++) {
                    int64_t ih = hs + kh * p->dh;
                    int vh = ih >= 0 && ih < H;
                    for (int64_t kw = 0; kw < KW; kw++) {
                        int64_t iw = ws + kw * p->dw;
                        if (!(vh && iw >= 0 && iw < W)) continue;
                        float v = base[ih * p->s2 + iw * p->s3];
                        int take = (v > b) | (v != v) | (bidx < 0);
                        b = sel_f(take, v, b);
                        bidx = sel_i(take, ih * W + iw, bidx);
                    }
                }
                y[out + ow] = b;
                idx[out + ow] = bidx;
            }
        }
    }
}

static void max_pool_backward_run(const pool_params *p, const float *dy, const int64_t *idx, float *dx,
                                  int64_t *cols) {
    int64_t H = p->H, W = p->W, OH = p->OH, OW = p->OW, KH = p->KH, KW = p->KW;
    int64_t sh = p->sh, sw = p->sw, ph = p->ph, pw = p->pw, dh = p->dh, dw = p->dw;
    for (int64_t iw = 0; iw < W; iw++) {       /* DISJOINT: column iw's one window column, or -1 */
        int64_t ow = (iw + pw) / sw, rw = iw + pw - ow * sw;
        cols[iw] = rw % dw == 0 && rw <= (KW - 1) * dw && ow < OW ? ow : -1;
    }
    for (int64_t nc = 0; nc < p->NC; nc++) {
        int64_t n = nc / p->C, c = nc % p->C;
        const float *g = dy + n * p->s0 + c * p->s1;
        const int64_t *ib = idx + n * p->t0 + c * p->t1;
        float *o = dx + nc * H * W;
        for (int64_t ih = 0; ih < H; ih++) {
            int64_t oh = (ih + ph) / sh, rh = ih + ph - oh * sh;
            int okh = rh % dh == 0 && rh <= (KH - 1) * dh && oh < OH;
            for (int64_t iw = 0; iw < W; iw++) {
                int64_t me = ih * W + iw, ow = cols[iw];
                float acc = 0.0f;
                if (p->flag) {      /* DISJOINT: the one window that can hold the input */
                    float gv = 0.0f;
                    if (okh && ow >= 0) {   /* (by position: predictable; the hit by a select) */
                        float v = g[oh * p->s2 + ow * p->s3];
                        gv = sel_f(ib[oh * p->t2 + ow * p->t3] == me, v, 0.0f);
                    }
                    acc = acc + gv;
                } else {
                    for (int64_t kh = 0; kh < KH; kh++) {
                        int64_t th = ih + ph - kh * dh, oh = th / sh;
                        int vh = th >= 0 && oh * sh == th && oh < OH;
                        for (int64_t kw = 0; kw < KW; kw++) {
                            int64_t tw = iw + pw - kw * dw, ow = tw / sw;
                            float gv = 0.0f;
                            if (vh && tw >= 0 && ow * sw == tw && ow < OW) {
                                float v = g[oh * p->s2 + ow * p->s3];
                                gv = sel_f(ib[oh * p->t2 + ow * p->t3] == me, v, 0.0f);
                            }
                            acc = acc + gv;
                        }
                    }
                }
                o[me] = acc;
            }
        }
    }
}

/* ---------------------------------------------------------------- convolution over one input channel a group */
typedef struct {
    int64_t NB, H, W, OH, OW, KH, KW, OG, G, sh, sw, ph, pw, dh, dw, x0, x1, x2, x3, w0, w1, w2, w3, y0, y1, y2, y3,
        sb, has_b;
} conv_params;

/* conv_forward_kernel with CG = 1: each tap's tl.dot an outer product (one exact product an element) added to the
   accumulator (dot + acc, from +0, tap after tap; a padding tap adds 0 w, which leaves it), then + b.  A tap's
   valid output rows [lo, hi) by position (stride 1: xp, the zero-padded plane, a tap one flat pass); scratch:
   4 (KH + KW) int64 */
static void conv1_run(const conv_params *p, const float *x, const float *w, const float *b, float *y, int64_t *rng,
                      float *acc, float *xp) {
    int64_t OH = p->OH, OW = p->OW, KH = p->KH, KW = p->KW;
    for (int64_t k = 0; k < KH; k++) {
        int64_t lo = 0, hi = OH;
        while (lo < OH && lo * p->sh - p->ph + k * p->dh < 0) lo++;
        while (hi > lo && (hi - 1) * p->sh - p->ph + k * p->dh >= p->H) hi--;
        rng[2 * k] = lo, rng[2 * k + 1] = hi;
    }
    int64_t *cr = rng + 2 * KH;
    for (int64_t k = 0; k < KW; k++) {
        int64_t lo = 0, hi = OW;
        while (lo < OW && lo * p->sw - p->pw + k * p->dw < 0) lo++;
        while (hi > lo && (hi - 1) * p->sw - p->pw + k * p->dw >= p->W) hi--;
        cr[2 * k] = lo, cr[2 * k + 1] = hi;
    }
    int64_t Wp = p->W + 2 * p->pw, Hp = p->H + 2 * p->ph, AW = OW;
    if (xp != NULL) {   /* stride 1: the plane zero-padded, a tap one flat pass over OH rows of Wp (extra columns
                           ignored); a padding tap's 0 w added as the tape adds it */
        Wp = Wp > OW + (KW - 1) * p->dw ? Wp : OW + (KW - 1) * p->dw;
        Hp = Hp > OH + (KH - 1) * p->dh ? Hp : OH + (KH - 1) * p->dh;
        AW = Wp;
    }
    for (int64_t n = 0; n < p->NB; n++)
        for (int64_t g = 0; g < p->G; g++) {
            const float *xc = x + n * p->x0 + g * p->x1;
            if (xp != NULL) {
                for (int64_t i = 0; i < (Hp + 1) * Wp; i++) xp[i] = 0.0f;
                for (int64_t h = 0; h < p->H; h++)
                    for (int64_t c = 0; c < p->W; c++) xp[(h + p->ph) * Wp + c + p->pw] = xc[h * p->x2 + c * p->x3];
            }
            for (int64_t o = 0; o < p->OG; o++) {
                int64_t oc = g * p->OG + o;
                for (int64_t i = 0; i < OH * AW; i++) acc[i] = 0.0f;
                for (int64_t kh = 0; kh < KH; kh++)
                    for (int64_t kw = 0; kw < KW; kw++) {
                        float wv = w[oc * p->w0 + kh * p->w2 + kw * p->w3];
                        if (xp != NULL) {
                            const float *xt = xp + kh * p->dh * Wp + kw * p->dw;
                            for (int64_t i = 0; i < OH * Wp; i++) acc[i] = xt[i] * wv + acc[i];
                            continue;
                        }
                        int64_t clo = cr[2 * kw], chi = cr[2 * kw + 1], sx = p->sw * p->x3;
                        for (int64_t oh = rng[2 * kh]; oh < rng[2 * kh + 1]; oh++) {
                            const float *xr = xc + (oh * p->sh - p->ph + kh * p->dh) * p->x2
                                              + (kw * p->dw - p->pw) * p->x3;
                            float *ar = acc + oh * OW;
                            for (int64_t ow = clo; ow < chi; ow++) ar[ow] = xr[ow * sx] * wv + ar[ow];
                        }
                    }
                float *yo = y + n * p->y0 + oc * p->y1;
                float bo = p->has_b ? b[oc * p->sb] : 0.0f;
                for (int64_t oh = 0; oh < OH; oh++)
                    for (int64_t ow = 0; ow < OW; ow++) {
                        float v = acc[oh * AW + ow];
                        yo[oh * p->y2 + ow * p->y3] = p->has_b ? v + bo : v;
                    }
            }
        }
}

#ifdef HAVE_HW
#pragma GCC pop_options
#endif

/* ---------------------------------------------------------------- the Python entry points */
/* args = (params bytes of size psize, fallback, nptr addresses, nflt floats): params into out, the addresses, the
   floats rounded to float32; -1 with an error set */
static int twin_args(PyObject *const *args, Py_ssize_t nargs, void *out, size_t psize, Py_ssize_t nptr, void **ptrs,
                     Py_ssize_t nflt, float *flts, const char *name) {
    if (nargs != 2 + nptr + nflt || !PyBytes_Check(args[0]) || (size_t)PyBytes_GET_SIZE(args[0]) != psize) {
        PyErr_Format(PyExc_TypeError, "%s twin: (params bytes, fallback, %zd addresses, %zd floats) expected", name,
                     nptr, nflt);
        return -1;
    }
    memcpy(out, PyBytes_AS_STRING(args[0]), psize);
    for (Py_ssize_t i = 0; i < nptr; i++) {
        ptrs[i] = PyLong_AsVoidPtr(args[2 + i]);
        if (ptrs[i] == NULL && PyErr_Occurred()) return -1;
    }
    for (Py_ssize_t i = 0; i < nflt; i++) {
        double v = PyFloat_AsDouble(args[2 + nptr + i]);
        if (v == -1.0 && PyErr_Occurred()) return -1;
        flts[i] = (float)v;
    }
    return 0;
}

/* the kernel's tape: fallback(addresses..., floats...) */
static PyObject *fall_back(PyObject *const *args, Py_ssize_t nargs) {
    PyObject *r = PyObject_Vectorcall(args[1], args + 2, nargs - 2, NULL);
    if (r == NULL) return NULL;
    Py_DECREF(r);
    Py_RETURN_NONE;
}

static PyObject *batch_norm_f32(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    bn_params p;
    float *a[6], f[4];
    (void)self;
    if (twin_args(args, nargs, &p, sizeof p, 6, (void **)a, 4, f, "batch_norm") < 0) return NULL;
    int run = p.has_run || !p.training;
    if (!all_finite(a[0], p.n * p.C) || (p.has_w && !all_finite(a[1], p.C)) || (p.has_b && !all_finite(a[2], p.C))
        || (run && !(all_finite(a[3], p.C) && all_finite(a[4], p.C))) || !all_finite(f, 4))
        return fall_back(args, nargs);
    double *acc = p.training ? malloc(p.block * sizeof(double)) : NULL;
    if (p.training && acc == NULL) return PyErr_NoMemory();
    batch_norm_run(&p, a[0], a[1], a[2], a[3], a[4], a[5], f[0], f[1], f[2], f[3], acc);
    free(acc);
    Py_RETURN_NONE;
}

static PyObject *batch_norm_backward_f32(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    bn_params p;
    float *a[8], f[2];
    (void)self;
    if (twin_args(args, nargs, &p, sizeof p, 8, (void **)a, 2, f, "batch_norm_backward") < 0) return NULL;
    if (!all_finite(a[0], p.n * p.C) || !all_finite(a[1], p.n * p.C) || (p.has_w && !all_finite(a[2], p.C))
        || (!p.training && !(all_finite(a[3], p.C) && all_finite(a[4], p.C))) || !all_finite(f, 2))
        return fall_back(args, nargs);
    double *acc = p.training ? malloc(p.block * sizeof(double)) : NULL;
    if (p.training && acc == NULL) return PyErr_NoMemory();
    batch_norm_backward_run(&p, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], f[0], f[1], acc);
    free(acc);
    Py_RETURN_NONE;
}

static PyObject *max_pool_f32(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    pool_params p;
    void *a[3];
    (void)self;
    if (twin_args(args, nargs, &p, sizeof p, 3, a, 0, NULL, "max_pool") < 0) return NULL;
    int64_t *taps = malloc((2 * p.KH * p.KW + 2 * p.OW + 2) * sizeof(int64_t));
    if (taps == NULL) return PyErr_NoMemory();
    max_pool_run(&p, a[0], a[1], a[2], taps, taps + 2 * p.KH * p.KW + 1);       /* (no arithmetic: any input) */
    free(taps);
    Py_RETURN_NONE;
}

/* dy's planes finite (overlapping windows add several dy into one input: two NaNs could meet) */
static int pool_dy_finite(const pool_params *p, const float *dy) {
    for (int64_t nc = 0; nc < p->NC; nc++)
        for (int64_t oh = 0; oh < p->OH; oh++)
            for (int64_t ow = 0; ow < p->OW; ow++)
                if (!isfinite(dy[(nc / p->C) * p->s0 + (nc % p->C) * p->s1 + oh * p->s2 + ow * p->s3])) return 0;
    return 1;
}

static PyObject *max_pool_backward_f32(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    pool_params p;
    void *a[3];
    (void)self;
    if (twin_args(args, nargs, &p, sizeof p, 3, a, 0, NULL, "max_pool_backward") < 0) return NULL;
    if (!p.flag && !pool_dy_finite(&p, a[0])) return fall_back(args, nargs);
    int64_t *cols = malloc((p.W + 1) * sizeof(int64_t));
    if (cols == NULL) return PyErr_NoMemory();
    max_pool_backward_run(&p, a[0], a[1], a[2], cols);
    free(cols);
    Py_RETURN_NONE;
}

static int strided_finite(const float *a, int64_t n0, int64_t s0, int64_t n1, int64_t s1, int64_t n2, int64_t s2,
                          int64_t n3, int64_t s3) {
    for (int64_t i = 0; i < n0; i++)
        for (int64_t j = 0; j < n1; j++)
            for (int64_t k = 0; k < n2; k++)
                for (int64_t l = 0; l < n3; l++)
                    if (!isfinite(a[i * s0 + j * s1 + k * s2 + l * s3])) return 0;
    return 1;
}

static PyObject *conv1_f32(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    conv_params p;
    float *a[4];
    (void)self;
    if (twin_args(args, nargs, &p, sizeof p, 4, (void **)a, 0, NULL, "conv1") < 0) return NULL;
    int64_t O = p.G * p.OG;
    if (!strided_finite(a[0], p.NB, p.x0, p.G, p.x1, p.H, p.x2, p.W, p.x3)
        || !strided_finite(a[1], O, p.w0, 1, 0, p.KH, p.w2, p.KW, p.w3)
        || (p.has_b && !strided_finite(a[2], O, p.sb, 1, 0, 1, 0, 1, 0)))
        return fall_back(args, nargs);
    int flat = p.sh == 1 && p.sw == 1;
    int64_t Wp = p.W + 2 * p.pw, Hp = p.H + 2 * p.ph;
    Wp = Wp > p.OW + (p.KW - 1) * p.dw ? Wp : p.OW + (p.KW - 1) * p.dw;
    Hp = Hp > p.OH + (p.KH - 1) * p.dh ? Hp : p.OH + (p.KH - 1) * p.dh;
    int64_t *rng = malloc((4 * (p.KH + p.KW) + 2) * sizeof(int64_t));
    float *acc = malloc((p.OH * (flat ? Wp : p.OW) + 1) * sizeof(float));
    float *xp = flat ? malloc((Hp + 1) * Wp * sizeof(float)) : NULL;
    if (rng == NULL || acc == NULL || (flat && xp == NULL)) {
        free(rng);
        free(acc);
        free(xp);
        return PyErr_NoMemory();
    }
    conv1_run(&p, a[0], a[1], a[2], a[3], rng, acc, xp);
    free(rng);
    free(acc);
    free(xp);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"conv1_f32", (PyCFunction)(void (*)(void))conv1_f32, METH_FASTCALL,
     "conv1_f32(params, fallback, x, w, b, y): kernels/conv.py's conv_forward_kernel with one channel a group."},
    {"batch_norm_f32", (PyCFunction)(void (*)(void))batch_norm_f32, METH_FASTCALL,
     "batch_norm_f32(params, fallback, x, w, b, rm, rv, y, mom_hi, mom_lo, eps_hi, eps_lo): batch_norm_kernel."},
    {"batch_norm_backward_f32", (PyCFunction)(void (*)(void))batch_norm_backward_f32, METH_FASTCALL,
     "batch_norm_backward_f32(params, fallback, dy, x, w, rm, rv, dx, dw, db, eps_hi, eps_lo): its backward kernel."},
    {"max_pool_f32", (PyCFunction)(void (*)(void))max_pool_f32, METH_FASTCALL,
     "max_pool_f32(params, fallback, x, y, i): kernels/pool.py's pool_forward_kernel (max, fixed windows)."},
    {"max_pool_backward_f32", (PyCFunction)(void (*)(void))max_pool_backward_f32, METH_FASTCALL,
     "max_pool_backward_f32(params, fallback, dy, i, dx): its backward kernel."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "tgrad_cnn_cpu", NULL, -1, methods};

PyMODINIT_FUNC PyInit_tgrad_cnn_cpu(void) {
    PyObject *m = PyModule_Create(&moduledef);
    int hw = 0;
    if (m == NULL) return NULL;
#ifdef HAVE_HW
    __builtin_cpu_init();
    hw = __builtin_cpu_supports("fma") != 0;
#endif
    if (PyModule_AddIntConstant(m, "hardware", hw) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
