/* ATen's cpu float32 math as the cpu executor's ufuncs: the step-for-step C twins of kernels/_lang.py's
   sleef_exp, sleef_log (SLEEF's xexpf / xlogf_u1, every mla an fma), lanes_add and lanes_fold (8-lane sums
   folded by AVX2's tree).  The tapes call one of these where the traced helper costs one numpy pass per
   Triton op (runtime/native.py); each computes the same float32 operations in the same order, so the same
   bits.  Built with -ffp-contract=off (no a*b+c is fused unless written as fmaf) and without fast-math.

   sleef_expf(x), sleef_logf(x): float32 -> float32 ufuncs.
   lanes_add(acc, v): gufunc (l),(n)->(l): ((v[i] + acc[i]) + v[l + i] + ... + v[n - l + i]) + 0, left to right.
   lanes_fold8(acc):  gufunc (8)->(): ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)).
   fma_rows(acc, a, b): gufunc (n),(r,n),(r,n)->(n): acc = fma(a[i], b[i], acc) for the rows i = 0 .. r-1 in turn
                      (kernels/_lang.py's fma_rows: layer_norm's dw / db buffers, row after row).
   row_moments(x, K):  gufunc (k),()->(2), K int32: kernels/norm.py's _aten_row_moments of x[0:K], (mean, var).
   select(c, x, y):   c ? x : y, c bool, x and y uint32 or uint64 (the bits of any 4- or 8-byte dtype), branch-free.
   glibc_log, glibc_log1p, glibc_exp, glibc_sin, glibc_cos, glibc_tan: float64 ufuncs calling the C library's
                      function per element (ATen's scalar samplers' maths; numpy's own loops differ on AVX-512).
   nll_cascade_L(v, n): gufunc (b),()->() for L = 1..5 levels: kernels/loss.py's _cascade (nll_loss's 16-at-a-time
                      cascade over the n leading values of v), n int32 or int64.
   keep_scale(hi, lo, q53, scale): ufunc (int32, int32, int32 or int64, float32) -> float32: scale where
                      ((hi & 0x1FFFFF) << 32 | lo) < q53 (the words' 53 bits, unsigned), else 0 (kernels/random.py's
                      keep_scale: dropout's factor from PyTorch's double uniform of two mt19937 words).
   cross_entropy_f32(params, x, t, w, out, dx, r), cross_entropy_backward_f32(params, g, x, t, w, dx, rs): the C twins
                     of kernels/loss.py's cross_entropy_kernel and cross_entropy_backward_kernel (a cpu launch's tape,
                     launcher.cpu_twin), params the bytes of a ce_params, the rest addresses.
   embedding_backward(n, D, padding_idx, idx64, f64, g, idx, acc): the C twin of kernels/nn.py's
                     embedding_backward_kernel: acc[idx[i], :] += g[i, :] for i = 0 .. n-1 in turn, rows at padding_idx
                     skipped (the interpreter's atomic adds, element by element in the block's order), float32 or
                     float64 g and acc, int64 (idx64) or int32 idx, the last three addresses.
   dropout_words_f32(n, q53, scale_bits, x, y, mask, w[, seed, offset]): the C twin of kernels/nn.py's dropout_kernel
                     (WORDS, float32): f = keep_scale(w[2i], w[2i + 1], q53, scale), y[i] = x[i] f, mask[i] = f != 0,
                     scale the float32 of the double whose bits are scale_bits; one pass.
   softmax_f32(M, K, INNER, sx_o, sx_k, sx_i, sy_o, sy_k, sy_i, BLOCK_K, LANES, LOG, x, y),
   softmax_backward_f32(M, K, INNER, sd_o, sd_k, sd_i, sy_o, sy_k, sy_i, so_o, so_k, so_i, BLOCK_K, LANES, LOG,
                     dy, y, dx): the C twins of kernels/softmax.py's softmax_kernel and softmax_backward_kernel in ATen's
                     lastdim order (LANES 8 or 1, NT 0, float32): a row at a time, the exps by sleef_expf's own loop.
   norm2_rows_f32(M, M2, K, s1, s2, x, out, ...): the C twin of kernels/reduce.py's accumulate_rows_kernel with ATEN
                     (float32 contiguous rows, _aten_norm2_rows): out[m] = sqrt of the row's squares in ATen's order.
   mt19937_fill(state_address, out_address, n): the next n 32-bit words of a numpy MT19937 bit generator (its
                      state struct {uint32 key[624]; int pos} at state_address, advanced) written at out_address:
                      numpy's mt19937_next32 n times (the reference twist and tempering), in blocks the compiler
                      vectorizes (numpy's random_raw takes ~1.4 ns a word through a function pointer). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/ndarraytypes.h>
#include <numpy/ufuncobject.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* constants as Python floats (double) rounded to float32, as Triton's scalars are */
#define F(c) ((float)(double)(c))

static inline float bits_f(int32_t i) { float f; memcpy(&f, &i, 4); return f; }
static inline int32_t f_bits(float f) { int32_t i; memcpy(&i, &f, 4); return i; }
static inline int32_t wrap_mul(int32_t a, int32_t b) { return (int32_t)((uint32_t)a * (uint32_t)b); }
static inline int32_t wrap_sub(int32_t a, int32_t b) { return (int32_t)((uint32_t)a - (uint32_t)b); }

#define EXP_BODY(FMA)                                                                                       \
    float t = d * F(1.442695040888963407359924681001892137426645954152985934135449406931);               \
    t = t < -200.0f ? -200.0f : t > 200.0f ? 200.0f : t; /* fmaxf / fminf but a NaN t stays (u is NaN anyway) */ \
    float qf = (t + 12582912.0f) - 12582912.0f;                                                          \
    int32_t q = (int32_t)qf, h = (int32_t)floorf(qf * 0.5f);                                             \
    float s = FMA(qf, F(-0.693145751953125), d);                                                         \
    s = FMA(qf, F(-1.428606765330187045e-06), s);                                                        \
    float u = FMA(s, F(0.000198527617612853646278381), F(0.00139304355252534151077271));                 \
    u = FMA(u, s, F(0.00833336077630519866943359));                                                      \
    u = FMA(u, s, F(0.0416664853692054748535156));                                                       \
    u = FMA(u, s, F(0.166666671633720397949219));                                                        \
    u = FMA(u, s, 0.5f);                                                                                 \
    u = 1.0f + FMA(s * s, u, s);                                                                         \
    u = u * bits_f(wrap_mul(h + 127, 8388608)) * bits_f(wrap_mul(q - h + 127, 8388608));                 \
    if (d < -104.0f) u = 0.0f;                                                                           \
    if (d > 100.0f) u = INFINITY;                                                                        \
    return u;

#define LOG_BODY(FMA)                                                                                       \
    int32_t e = f_bits(d * F(1.0 / 0.75)) / 8388608 - 0x7f;                                               \
    float m = bits_f(wrap_sub(f_bits(d), wrap_mul(e, 8388608)));                                          \
    float ef = (float)e;                                                                                 \
    float sx = F(0.69314718246459960938) * ef;                                                           \
    float sy = FMA(-F(1.904654323148236017e-09), ef, FMA(F(0.69314718246459960938), ef, -sx));            \
    float nx = m - 1.0f, v = nx + 1.0f;                                                                  \
    float ny = (-1.0f - (nx - v)) + (m - v);                                                             \
    float dx = m + 1.0f;                                                                                 \
    v = dx - 1.0f;                                                                                       \
    float dy = (1.0f - (dx - v)) + (m - v);                                                              \
    float t = 1.0f / dx, qx = nx * t;                                                                    \
    float u = FMA(t, nx, -qx);                                                                           \
    float qy = FMA(-dy, t, FMA(-dx, t, 1.0f));                                                           \
    qy = FMA(qx, qy, FMA(ny, t, u));                                                                     \
    float x2 = qx * qx;                                                                                  \
    float p = FMA(FMA(F(0.3027294874), x2, F(0.3996108174)), x2, F(0.6666694880));                       \
    float yx = qx * 2.0f, rx = sx + yx;                                                                  \
    float ry = (((sx - rx) + yx) + sy) + qy * 2.0f;                                                      \
    float w = (x2 * qx) * p, r = rx + w;                                                                 \
    r = r + (((rx - r) + w) + ry);                                                                       \
    if (d == INFINITY) r = INFINITY;                                                                     \
    if (d < 0.0f || d != d) r = NAN;                                                                     \
    if (d == 0.0f) r = -INFINITY;                                                                        \
    return r;

/* contiguous operands: a loop the compiler vectorizes (the same IEEE operations lane by lane, so the same bits) */
#define UNARY_LOOP(NAME, ONE, ATTR)                                                                         \
    ATTR static void NAME(char **args, const npy_intp *dims, const npy_intp *steps, void *data) {          \
        npy_intp n = dims[0], si = steps[0], so = steps[1];                                                \
        char *x = args[0], *o = args[1];                                                                   \
        (void)data;                                                                                        \
        if (si == sizeof(float) && so == sizeof(float)) {                                                  \
            const float *xs = (const float *)x;                                                            \
            float *os = (float *)o;                                                                        \
            for (npy_intp i = 0; i < n; i++) os[i] = ONE(xs[i]);                                           \
            return;                                                                                        \
        }                                                                                                  \
        for (npy_intp i = 0; i < n; i++, x += si, o += so) *(float *)o = ONE(*(const float *)x);          \
    }

static inline float exp_sw(float d) { EXP_BODY(fmaf) }
static inline float log_sw(float d) { LOG_BODY(fmaf) }
UNARY_LOOP(exp_f32, exp_sw, )
UNARY_LOOP(log_f32, log_sw, )
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define HAVE_HW 1
__attribute__((target("fma"))) static inline float exp_hw(float d) { EXP_BODY(__builtin_fmaf) }
__attribute__((target("fma"))) static inline float log_hw(float d) { LOG_BODY(__builtin_fmaf) }
UNARY_LOOP(exp_f32_hw, exp_hw, __attribute__((target("fma"))))
UNARY_LOOP(log_f32_hw, log_hw, __attribute__((target("fma"))))
/* AVX2 loops: vectorized only where the compiler may if-convert the bodies' selects, which -ftrapping-math (the
   default) forbids; no-trapping-math changes which floating-point flags are raised, never a result */
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")
#pragma GCC target("avx2,fma")
/* the bit helpers again under these options (GCC inlines no function compiled with other optimize options) */
static inline float bits_f_v(int32_t i) { float f; memcpy(&f, &i, 4); return f; }
static inline int32_t f_bits_v(float f) { int32_t i; memcpy(&i, &f, 4); return i; }
static inline int32_t wrap_mul_v(int32_t a, int32_t b) { return (int32_t)((uint32_t)a * (uint32_t)b); }
static inline int32_t wrap_sub_v(int32_t a, int32_t b) { return (int32_t)((uint32_t)a - (uint32_t)b); }
#define bits_f bits_f_v
#define f_bits f_bits_v
#define wrap_mul wrap_mul_v
#define wrap_sub wrap_sub_v
static inline float exp_avx2(float d) { EXP_BODY(__builtin_fmaf) }
static inline float log_avx2(float d) { LOG_BODY(__builtin_fmaf) }
#undef bits_f
#undef f_bits
#undef wrap_mul
#undef wrap_sub
UNARY_LOOP(exp_f32_avx2, exp_avx2, )
UNARY_LOOP(log_f32_avx2, log_avx2, )
#pragma GCC pop_options
#endif

/* (l),(n)->(l): dims = {outer, l, n}; steps = {acc, v, out outer; acc, v, out inner} */
static void lanes_add_f32(char **args, const npy_intp *dims, const npy_intp *steps, void *data) {
    npy_intp N = dims[0], l = dims[1], n = dims[2];
    (void)data;
    for (npy_intp r = 0; r < N; r++) {
        char *a = args[0] + r * steps[0], *v = args[1] + r * steps[1], *o = args[2] + r * steps[2];
        for (npy_intp i = 0; i < l; i++) {
            float s = *(const float *)(v + i * steps[4]) + *(const float *)(a + i * steps[3]);
            for (npy_intp c = l + i; c < n; c += l) s = s + *(const float *)(v + c * steps[4]);
            /* the Triton helper keeps the last running sum by a tl.sum (numpy's starts at +0): -0 becomes +0 */
            *(float *)(o + i * steps[5]) = s + 0.0f;
        }
    }
}

/* (n),(r,n),(r,n)->(n): dims = {outer, n, r}; steps = {acc, a, b, out outer; acc n; a r, a n; b r, b n; out n}.
   Row after row over all n columns (each column's fmas in row order as before; contiguous rows vectorize). */
#define FMA_ROWS(NAME, FMA, ATTR)                                                                           \
    ATTR static inline void NAME##_body(const char *c, const char *a, const char *b, char *out, npy_intp n, \
                                        npy_intp r, npy_intp sc, npy_intp sar, npy_intp san, npy_intp sbr, \
                                        npy_intp sbn, npy_intp so) {                                       \
        for (npy_intp j = 0; j < n; j++) *(float *)(out + j * so) = *(const float *)(c + j * sc);          \
        for (npy_intp i = 0; i < r; i++)                                                                   \
            for (npy_intp j = 0; j < n; j++)                                                               \
                *(float *)(out + j * so) = FMA(*(const float *)(a + i * sar + j * san),                    \
                                               *(const float *)(b + i * sbr + j * sbn), *(float *)(out + j * so)); \
    }                                                                                                      \
    ATTR static void NAME(char **args, const npy_intp *dims, const npy_intp *steps, void *data) {          \
        npy_intp N = dims[0], n = dims[1], r = dims[2];                                                    \
        (void)data;                                                                                        \
        for (npy_intp o = 0; o < N; o++) {                                                                 \
            const char *c = args[0] + o * steps[0], *a = args[1] + o * steps[1], *b = args[2] + o * steps[2]; \
            char *out = args[3] + o * steps[3];                                                            \
            int apart = c == out || (steps[4] >= 0 && steps[9] >= 0 &&                                     \
                                     (c + n * steps[4] <= out || out + n * steps[9] <= c));                \
            if (apart && steps[4] == 4 && steps[6] == 4 && steps[8] == 4 && steps[9] == 4)                 \
                NAME##_body(c, a, b, out, n, r, 4, steps[5], 4, steps[7], 4, 4);                           \
            else if (apart)                                                                                \
                NAME##_body(c, a, b, out, n, r, steps[4], steps[5], steps[6], steps[7], steps[8], steps[9]); \
            else {  /* out partly over acc: the columns one at a time, as the loop always was */          \
                for (npy_intp j = 0; j < n; j++) {                                                         \
                    float s = *(const float *)(c + j * steps[4]);                                          \
                    for (npy_intp i = 0; i < r; i++)                                                       \
                        s = FMA(*(const float *)(a + i * steps[5] + j * steps[6]),                         \
                                *(const float *)(b + i * steps[7] + j * steps[8]), s);                     \
                    *(float *)(out + j * steps[9]) = s;                                                    \
                }                                                                                          \
            }                                                                                              \
        }                                                                                                  \
    }
FMA_ROWS(fma_rows_f32, fmaf, )
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
FMA_ROWS(fma_rows_f32_hw, __builtin_fmaf, __attribute__((target("fma"))))
#endif

/* (k),()->(2): kernels/norm.py's _aten_row_moments on one row x[0:K] (the block's columns past K unread), out =
   (mean, biased var): NV = K / 8 vectors of 8 lanes, Welford inside NC chunks of 16 vectors, the chunks merged by
   the helper's cascade (BG = 2^LEVELS slots, DEPTH levels), the scalar tail, the 8 lanes added into it.
   dims = {rows, k}; steps = {x, K, out outer; x k; out 2} */
static inline void moments_add(float na, const float *m1a, const float *m2a, float nb, float *m1b, float *m2b,
                               float *n_out) {
    float n = nb + na, c = na / (n == 0.0f ? 1.0f : n);
    for (int l = 0; l < 8; l++) {
        float delta = m1a[l] - m1b[l];
        float s = m2b[l] + m2a[l];
        m1b[l] = m1b[l] + c * delta;
        m2b[l] = fmaf(delta, delta * c * nb, s);
    }
    *n_out = n;
}
/* the moments of chunk g of RB rows at once (RB x 8 independent Welford chains, which the compiler interleaves):
   m1, m2 [RB][BG * 8]; x's rows rs bytes apart, its columns sk */
#define RB 8
#define WELFORD(NAME, FMA, ATTR)                                                                             \
    ATTR static inline void NAME(const char *x, npy_intp rs, npy_intp sk, long nr, long g, long nj, long BG,     \
                                 float *m1, float *m2) {                                                    \
        for (long j = 0; j < nj; j++) {                                                                     \
            float cj = 1.0f / (float)(j + 1);                                                               \
            for (long b = 0; b < nr; b++) {                                                                 \
                const char *v = x + b * rs + (g * 16 + j) * 8 * sk;                                         \
                float *p1 = m1 + (b * BG + g) * 8, *p2 = m2 + (b * BG + g) * 8;                             \
                for (int l = 0; l < 8; l++) {                                                               \
                    float xl = *(const float *)(v + l * sk), d = xl - p1[l], n1 = FMA(d, cj, p1[l]);        \
                    p2[l] = FMA(d, xl - n1, p2[l]);                                                         \
                    p1[l] = n1;                                                                             \
                }                                                                                           \
            }                                                                                               \
        }                                                                                                   \
    }
WELFORD(welford_f32, fmaf, )
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
WELFORD(welford_f32_hw, __builtin_fmaf, __attribute__((target("fma"))))
#endif

#define ROW_MOMENTS(NAME, FMA, WELF, ATTR)                                                                   \
    ATTR static void NAME(char **args, const npy_intp *dims, const npy_intp *steps, void *data) {           \
        npy_intp R = dims[0], sk = steps[3];                                                                \
        float *buf = NULL;                                                                                  \
        long cap = 0;                                                                                       \
        (void)data;                                                                                         \
        for (npy_intp r0 = 0; r0 < R; r0 += RB) {                                                           \
            long nr = R - r0 < RB ? (long)(R - r0) : RB;                                                    \
            long K = (long)*(const int32_t *)(args[1] + r0 * steps[1]);                                     \
            for (long b = 1; b < nr; b++)                                                                   \
                if ((long)*(const int32_t *)(args[1] + (r0 + b) * steps[1]) != K) nr = b;                   \
            long NV = K / 8, NC = (NV + 15) / 16, BG = 1, LEVELS = 0, DEPTH;                                \
            while (BG < NC) { BG *= 2; LEVELS++; }                                                          \
            DEPTH = NC <= 2 ? 1 : 64 - __builtin_clzl((unsigned long)(NC - 1));                             \
            long need = 2 * RB * BG * 8 + 2 * BG;                                                           \
            if (need > cap) {                                                                               \
                free(buf);                                                                                  \
                buf = malloc((size_t)need * sizeof(float));                                                 \
                cap = need;                                                                                 \
                if (buf == NULL) return;                                                                    \
            }                                                                                               \
            memset(buf, 0, (size_t)need * sizeof(float));                                                   \
            float *M1 = buf, *M2 = M1 + RB * BG * 8, *cnt = M2 + RB * BG * 8, *cn = cnt + BG;               \
            const char *x0 = args[0] + r0 * steps[0];                                                       \
            for (long g = 0; g < NC; g++) {  /* (contiguous columns: a constant stride the compiler vectorizes) */ \
                long nj = NV - g * 16 < 16 ? NV - g * 16 : 16;                                              \
                if (sk == sizeof(float)) WELF(x0, steps[0], sizeof(float), nr, g, nj, BG, M1, M2);          \
                else WELF(x0, steps[0], sk, nr, g, nj, BG, M1, M2);                                         \
            }                                                                                               \
            for (long b = 0; b < nr; b++) {                                                                 \
                const char *x = x0 + b * steps[0];                                                          \
                float *m1 = M1 + b * BG * 8, *m2 = M2 + b * BG * 8;                                         \
                for (long g = 0; g < BG; g++) {                                                             \
                    long c = NV - g * 16;                                                                   \
                    cnt[g] = (float)(c < 0 ? 0 : c > 16 ? 16 : c);                                          \
                }                                                                                           \
                float an = 0.0f, a1[8] = {0}, a2[8] = {0};                                                  \
                for (long lv = 0, w = BG; lv <= LEVELS; lv++, w /= 2) {                                     \
                    long t = -1;                                                                            \
                    if (DEPTH == 1) { if (lv == NC - 1) t = 0; }                                            \
                    else if (lv == 0) { if (NC % 2 == 1) t = NC - 1; }                                      \
                    else if (lv < DEPTH - 1) { if ((NC >> lv) % 2 == 1) t = (NC >> lv) - 1; }               \
                    else if (lv == DEPTH - 1) { if (NC < (1L << DEPTH)) t = 0; }                            \
                    else if (lv == DEPTH) { if (NC == (1L << DEPTH)) t = 0; }                               \
                    if (t >= 0) moments_add(cnt[t], m1 + t * 8, m2 + t * 8, an, a1, a2, &an);               \
                    if (lv < LEVELS) {  /* pairs: the right node merged into the left, the upper half 0 */  \
                        for (long p = 0; p < w / 2; p++) {                                                  \
                            float l1[8], l2[8];                                                             \
                            memcpy(l1, m1 + 2 * p * 8, sizeof l1);                                          \
                            memcpy(l2, m2 + 2 * p * 8, sizeof l2);                                          \
                            moments_add(cnt[2 * p + 1], m1 + (2 * p + 1) * 8, m2 + (2 * p + 1) * 8,         \
                                        cnt[2 * p], l1, l2, cn + p);                                        \
                            memcpy(m1 + p * 8, l1, sizeof l1);                                              \
                            memcpy(m2 + p * 8, l2, sizeof l2);                                              \
                        }                                                                                   \
                        for (long p = 0; p < w / 2; p++) cnt[p] = cn[p];                                    \
                        for (long p = w / 2; p < w; p++) {                                                  \
                            cnt[p] = 0.0f;                                                                  \
                            memset(m1 + p * 8, 0, 8 * sizeof(float));                                       \
                            memset(m2 + p * 8, 0, 8 * sizeof(float));                                       \
                        }                                                                                   \
                    }                                                                                       \
                }                                                                                           \
                float s1 = 0.0f, s2 = 0.0f;                                                                 \
                for (long i = 0; i < K - NV * 8; i++) {                                                     \
                    float v = *(const float *)(x + (NV * 8 + i) * sk);                                      \
                    float d = v - s1;                                                                       \
                    s1 = s1 + d / (float)(i + 1.0);                                                         \
                    s2 = s2 + d * (v - s1);                                                                 \
                }                                                                                           \
                for (int i = 0; i < 8; i++) {                                                               \
                    float delta = a1[i] - s1;                                                               \
                    float c = (float)((double)NV / (double)(K - NV * 8 + (i + 1) * NV));                    \
                    s1 = FMA(delta, c, s1);                                                                 \
                    s2 = s2 + FMA(delta * delta * c, (float)(double)(K - NV * 8 + i * NV), a2[i]);          \
                }                                                                                           \
                char *o = args[2] + (r0 + b) * steps[2];                                                    \
                *(float *)o = s1;                                                                           \
                *(float *)(o + steps[4]) = s2 / (float)K;                                                   \
            }                                                                                               \
            r0 += nr - RB;                                                                                  \
        }                                                                                                   \
        free(buf);                                                                                          \
    }
ROW_MOMENTS(row_moments_f32, fmaf, welford_f32, )
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
ROW_MOMENTS(row_moments_f32_hw, __builtin_fmaf, welford_f32_hw, __attribute__((target("fma"))))
#endif

/* (8)->(): dims = {outer, 8}; steps = {acc, out outer; acc inner} */
static void lanes_fold8_f32(char **args, const npy_intp *dims, const npy_intp *steps, void *data) {
    npy_intp N = dims[0], st = steps[2];
    (void)data;
    for (npy_intp r = 0; r < N; r++) {
        const char *a = args[0] + r * steps[0];
#define L(i) (*(const float *)(a + (i) * st))
        float s0 = L(0) + L(4), s1 = L(1) + L(5), s2 = L(2) + L(6), s3 = L(3) + L(7);
#undef L
        *(float *)(args[1] + r * steps[1]) = (s0 + s2) + (s1 + s3);
    }
}

/* _cascade_level as loss.py writes it, in place on v[0:b]: the b/16 sums of 16 (each left to right, + 0 as its
   tl.sum makes -0 +0) kept below group n/16 and zeroed from it on; returns that group's sum (+0 past the end) */
static float cascade_level(float *v, npy_intp b, int64_t n) {
    npy_intp groups = b / 16, G = (npy_intp)(n / 16);
    float part = 0.0f;
    for (npy_intp j = 0; j < groups; j++) {
        float s = v[16 * j];
        for (int k = 1; k < 16; k++) s = s + v[16 * j + k];
        s = s + 0.0f;
        if (j == G) part = s + 0.0f;
        v[j] = j < G ? s : 0.0f;
    }
    return part;
}

/* _cascade: the LEVELS levels over buf[0:b] (b a power of 16, n leading values, zeros after; overwritten), their
   partial sums added bottom up */
static float cascade_sum(float *buf, npy_intp b, int64_t n, npy_intp levels) {
    float tot = NAN;
    for (npy_intp l = 0; l < levels; l++, b /= 16, n /= 16) {
        float p = cascade_level(buf, b, n);
        tot = l == 0 ? p : tot + p;
    }
    return tot;
}

/* (b),()->(): dims = {outer, b}; steps = {v, n, out outer; v inner}; data = the level count */
#define CASCADE(NAME, NT)                                                                                   \
    static void NAME(char **args, const npy_intp *dims, const npy_intp *steps, void *data) {               \
        npy_intp N = dims[0], levels = (npy_intp)data;                                                     \
        float *buf = malloc((dims[1] > 0 ? dims[1] : 1) * sizeof(float));                                  \
        for (npy_intp r = 0; r < N; r++) {                                                                 \
            const char *x = args[0] + r * steps[0];                                                        \
            int64_t n = (int64_t)*(const NT *)(args[1] + r * steps[1]);                                    \
            float tot = NAN;                                                                               \
            if (buf != NULL) {                                                                             \
                for (npy_intp i = 0; i < dims[1]; i++) buf[i] = *(const float *)(x + i * steps[3]);        \
                tot = cascade_sum(buf, dims[1], n, levels);                                                \
            }                                                                                              \
            *(float *)(args[2] + r * steps[2]) = tot;                                                      \
        }                                                                                                  \
        free(buf);                                                                                         \
    }
CASCADE(cascade_i32, npy_int32)
CASCADE(cascade_i64, npy_int64)

/* select(c, x, y) -> c ? x : y on the bits (uint32 / uint64 views of any 4- or 8-byte dtype), branch-free: a
   data-dependent condition (a ReLU mask) costs numpy's where a mispredicted branch per element */
#define SELECT(NAME, T)                                                                                    \
    static void NAME(char **args, const npy_intp *dims, const npy_intp *steps, void *data) {               \
        npy_intp n = dims[0];                                                                              \
        (void)data;                                                                                        \
        if (steps[0] == 1 && steps[1] == sizeof(T) && steps[2] == sizeof(T) && steps[3] == sizeof(T)) {   \
            const npy_bool *c = (const npy_bool *)args[0];                                                 \
            const T *x = (const T *)args[1], *y = (const T *)args[2];                                      \
            T *o = (T *)args[3];                                                                           \
            for (npy_intp i = 0; i < n; i++) o[i] = y[i] ^ ((x[i] ^ y[i]) & -(T)(c[i] != 0));             \
            return;                                                                                        \
        }                                                                                                  \
        for (npy_intp i = 0; i < n; i++) {                                                                 \
            T x = *(const T *)(args[1] + i * steps[1]), y = *(const T *)(args[2] + i * steps[2]);          \
            T m = -(T)(*(const npy_bool *)(args[0] + i * steps[0]) != 0);                                  \
            *(T *)(args[3] + i * steps[3]) = y ^ ((x ^ y) & m);                                            \
        }                                                                                                  \
    }
SELECT(select_u32, uint32_t)
SELECT(select_u64, uint64_t)

static PyUFuncGenericFunction select_funcs[2] = {select_u32, select_u64};
static void *select_data[2] = {NULL, NULL};
static char select_types[8] = {NPY_BOOL, NPY_UINT32, NPY_UINT32, NPY_UINT32, NPY_BOOL, NPY_UINT64, NPY_UINT64,
                               NPY_UINT64};

/* (hi, lo, q53, scale) -> out elementwise; QT the type of q53 (scalar q53 and scale, the common case, read once) */
#define KEEP_SCALE(NAME, QT)                                                                                \
    static void NAME(char **args, const npy_intp *dims, const npy_intp *steps, void *data) {               \
        const char *ph = args[0], *pl = args[1];                                                           \
        char *po = args[4];                                                                                \
        npy_intp sh = steps[0], sl = steps[1], so = steps[4];                                              \
        (void)data;                                                                                        \
        if (steps[2] == 0 && steps[3] == 0) {                                                              \
            uint64_t q = (uint64_t)(int64_t)*(const QT *)args[2];                                          \
            uint32_t scale = *(const uint32_t *)args[3];                                                   \
            for (npy_intp i = 0; i < dims[0]; i++) {   /* branch-free: a kept fraction near 1/2 mispredicts */ \
                uint64_t w = ((uint64_t)(*(const uint32_t *)(ph + i * sh) & 0x1FFFFF) << 32)               \
                             | *(const uint32_t *)(pl + i * sl);                                           \
                *(uint32_t *)(po + i * so) = scale & (0u - (uint32_t)(w < q));   /* scale or +0 */          \
            }                                                                                              \
            return;                                                                                        \
        }                                                                                                  \
        for (npy_intp i = 0; i < dims[0]; i++) {                                                           \
            uint64_t w = ((uint64_t)(*(const uint32_t *)(ph + i * sh) & 0x1FFFFF) << 32)                   \
                         | *(const uint32_t *)(pl + i * sl);                                               \
            uint64_t q = (uint64_t)(int64_t)*(const QT *)(args[2] + i * steps[2]);                         \
            *(float *)(po + i * so) = w < q ? *(const float *)(args[3] + i * steps[3]) : 0.0f;             \
        }                                                                                                  \
    }
KEEP_SCALE(keep_scale_i32, npy_int32)
KEEP_SCALE(keep_scale_i64, npy_int64)

typedef struct { uint32_t key[624]; int pos; } mt_state;

static void mt_twist(mt_state *st) {
    uint32_t *k = st->key, y;
    int i;
    for (i = 0; i < 624 - 397; i++) {
        y = (k[i] & 0x80000000u) | (k[i + 1] & 0x7fffffffu);
        k[i] = k[i + 397] ^ (y >> 1) ^ ((0u - (y & 1u)) & 0x9908b0dfu);
    }
    for (; i < 623; i++) {
        y = (k[i] & 0x80000000u) | (k[i + 1] & 0x7fffffffu);
        k[i] = k[i + 397 - 624] ^ (y >> 1) ^ ((0u - (y & 1u)) & 0x9908b0dfu);
    }
    y = (k[623] & 0x80000000u) | (k[0] & 0x7fffffffu);
    k[623] = k[396] ^ (y >> 1) ^ ((0u - (y & 1u)) & 0x9908b0dfu);
    st->pos = 0;
}

static PyObject *mt19937_fill(PyObject *self, PyObject *args) {
    unsigned long long sa, oa;
    Py_ssize_t n;
    (void)self;
    if (!PyArg_ParseTuple(args, "KKn", &sa, &oa, &n)) return NULL;
    mt_state *st = (mt_state *)(uintptr_t)sa;
    uint32_t *out = (uint32_t *)(uintptr_t)oa;
    while (n > 0) {
        if (st->pos >= 624) mt_twist(st);
        Py_ssize_t m = 624 - st->pos < n ? 624 - st->pos : n;
        const uint32_t *k = st->key + st->pos;
        for (Py_ssize_t i = 0; i < m; i++) {
            uint32_t y = k[i];
            y ^= y >> 11;
            y ^= (y << 7) & 0x9d2c5680u;
            y ^= (y << 15) & 0xefc60000u;
            out[i] = y ^ (y >> 18);
        }
        st->pos += (int)m;
        out += m;
        n -= m;
    }
    Py_RETURN_NONE;
}

/* kernels/loss.py's cross_entropy_kernel and cross_entropy_backward_kernel on the cpu, for float32 rows m of x at
   m sxo + k sxk with int64 class-index targets, no label smoothing (runtime/native.py's cross_entropy_twin): with
   LOGITS the row's log_softmax in ATen's lastdim order as row_max_sum_exp computes it (the max ignoring NaN, SLEEF
   exps summed in 8 lanes, 1 below 8 classes, folded by AVX2's tree, SLEEF's log), else x is log-probabilities;
   every value the kernels compute, in the same operations and order (the count of a 'mean' is exact in any order,
   a weighted one's sums are _cascade's or numpy's pairwise tl.sum), so the same bits as the kernels' tapes. */
typedef struct {
    int64_t M, K, sxo, sxk, ii, has_w, logits, reduce, grad, levels, sgo, den_block, block_k;
} ce_params;

#define CE_EB 1024      /* a row's exps of one BLOCK_K block, computed before they are added (wider blocks: in turn) */

#define CE_FUNCS(SFX, EXP, LOG, FMA, ATTR)                                                                  \
    /* (mx, log s): the row's max and the log of its sum of exp(x - mx); zeros without LOGITS */           \
    ATTR static void ce_lse##SFX(const ce_params *p, const float *x, float *pmx, float *plog) {            \
        int64_t K = p->K, sk = p->sxk;                                                                     \
        if (!p->logits) {                                                                                  \
            *pmx = 0.0f;                                                                                   \
            *plog = 0.0f;                                                                                  \
            return;                                                                                        \
        }                                                                                                  \
        float mx = -INFINITY, s;                                                                           \
        for (int64_t k = 0; k < K; k++) {  /* tl.max / tl.maximum: fmax (a NaN never wins) */             \
            float v = x[k * sk];                                                                           \
            if (v > mx) mx = v;                                                                            \
        }                                                                                                  \
        /* lanes_add per BLOCK_K block (lane i: (e[i] + acc[i]) + e[i + L] + ... + 0, e = 0 past K), then   */ \
        /* lanes_fold (8 lanes: AVX2's tree); a block's exps first, in a loop the compiler may vectorize */   \
        int64_t L = K >= 8 ? 8 : 1, BK = p->block_k;                                                       \
        float a[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}, eb[CE_EB];                         \
        for (int64_t k0 = 0; k0 < K; k0 += BK) {                                                           \
            int64_t n = K - k0 < BK ? K - k0 : BK;                                                         \
            if (BK <= CE_EB) {                                                                             \
                const float *xs = x + k0 * sk;                                                             \
                if (sk == 1)                                                                               \
                    for (int64_t j = 0; j < n; j++) eb[j] = EXP(xs[j] - mx);                               \
                else                                                                                       \
                    for (int64_t j = 0; j < n; j++) eb[j] = EXP(xs[j * sk] - mx);                          \
            }                                                                                              \
            for (int64_t i = 0; i < L; i++) {                                                              \
                float v = a[i];                                                                            \
                for (int64_t k = k0 + i; k < k0 + BK; k += L) {                                            \
                    float e = k >= K ? 0.0f : BK <= CE_EB ? eb[k - k0] : EXP(x[k * sk] - mx);              \
                    v = k == k0 + i ? e + v : v + e;                                                       \
                }                                                                                          \
                a[i] = v + 0.0f;                                                                           \
            }                                                                                              \
        }                                                                                                  \
        s = L == 8 ? ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7])) : a[0];             \
        *pmx = mx;                                                                                         \
        *plog = LOG(s);                                                                                    \
    }                                                                                                      \
    /* _ce_grad_rows of one row: d[k] = fma(exp((x - mx) - log s), ws, -(k == tc ? ws : 0)), ws = wt s */   \
    ATTR static void ce_grad_row##SFX(const ce_params *p, const float *x, float *d, int64_t tc, float wt,  \
                                      float s, float mx, float log_s) {                                    \
        int64_t K = p->K, sk = p->sxk;                                                                     \
        if (p->logits) {                                                                                   \
            float ws = wt * s;                                                                             \
            if (sk == 1)  /* (a loop the compiler may vectorize) */                                        \
                for (int64_t k = 0; k < K; k++) {                                                          \
                    float c = k == tc ? ws : 0.0f;                                                         \
                    d[k] = FMA(EXP((x[k] - mx) - log_s), ws, -c);                                          \
                }                                                                                          \
            else                                                                                           \
                for (int64_t k = 0; k < K; k++) {                                                          \
                    float c = k == tc ? ws : 0.0f;                                                         \
                    d[k] = FMA(EXP((x[k * sk] - mx) - log_s), ws, -c);                                     \
                }                                                                                          \
        } else {                                                                                           \
            for (int64_t k = 0; k < K; k++) {                                                              \
                float a = k == tc ? wt : 0.0f;                                                             \
                d[k] = s * -a;                                                                             \
            }                                                                                              \
        }                                                                                                  \
    }                                                                                                      \
    /* one row's (loss, weight wt, target column tc, mx, log s) as _ce_rows */                             \
    ATTR static float ce_row##SFX(const ce_params *p, const float *x, const int64_t *t, const float *w,   \
                                  int64_t m, float *pwt, int64_t *ptc, float *pmx, float *plog) {          \
        const float *xr = x + m * p->sxo;                                                                  \
        int64_t tm = t[m];                                                                                 \
        int valid = tm != p->ii;                                                                           \
        int64_t tc = valid ? tm : 0;                                                                       \
        float wt = p->has_w ? (valid ? w[tc] : 0.0f) : (valid ? 1.0f : 0.0f);                             \
        float xt = valid ? xr[tc * p->sxk] : 0.0f;                                                         \
        ce_lse##SFX(p, xr, pmx, plog);                                                                     \
        *pwt = wt;                                                                                         \
        *ptc = tc;                                                                                         \
        return valid ? wt * ((*pmx - xt) + *plog) : 0.0f;                                                  \
    }                                                                                                      \
    ATTR static int ce_forward##SFX(const ce_params *p, const float *x, const int64_t *t, const float *w, \
                                    float *out, float *dx, float *r) {                                     \
        int64_t M = p->M, K = p->K;                                                                        \
        float s = 1.0f;                                                                                    \
        if (p->grad && p->reduce == 2) s = s / ce_den(p, t, w);                                             \
        for (int64_t m = 0; m < M; m++) {                                                                  \
            float wt, mx, log_s;                                                                           \
            int64_t tc;                                                                                    \
            float loss = ce_row##SFX(p, x, t, w, m, &wt, &tc, &mx, &log_s);                                \
            if (p->reduce == 0) {                                                                          \
                out[m] = loss;                                                                             \
                continue;                                                                                  \
            }                                                                                              \
            r[m] = loss;                                                                                   \
            if (p->grad) ce_grad_row##SFX(p, x + m * p->sxo, dx + m * K, tc, wt, s, mx, log_s);            \
        }                                                                                                  \
        return p->reduce == 0 ? 0 : ce_reduce(p, t, w, out, r);                                            \
    }                                                                                                      \
    ATTR static void ce_backward##SFX(const ce_params *p, const float *g, const float *x, const int64_t *t, \
                                      const float *w, float *dx, float *rs) {                              \
        float s0 = 0.0f;                                                                                   \
        if (p->reduce != 0) {                                                                              \
            s0 = 0.0f + g[0];                                                                              \
            if (p->reduce == 2) s0 = s0 / ce_den(p, t, w);                                                  \
        }                                                                                                  \
        for (int64_t m = 0; m < p->M; m++) {                                                               \
            float wt, mx, log_s, s = p->reduce == 0 ? g[m * p->sgo] : s0;                                  \
            int64_t tc;                                                                                    \
            ce_row##SFX(p, x, t, w, m, &wt, &tc, &mx, &log_s);                                             \
            ce_grad_row##SFX(p, x + m * p->sxo, dx + m * p->K, tc, wt, s, mx, log_s);                      \
            rs[m] = s * wt;                                                                                \
        }                                                                                                  \
    }

/* np.add.reduce's pairwise sum of a[0:n] (numpy's float pairwise_sum: 8 accumulators up to 128 values, halves above,
   a plain sum below 8); the reduction then adds it to its identity 0 */
static float np_pairwise_sum(const float *a, npy_intp n) {
    if (n < 8) {
        float r = -0.0f;
        for (npy_intp i = 0; i < n; i++) r += a[i];
        return r;
    }
    if (n <= 128) {
        float r[8];
        npy_intp i;
        for (int j = 0; j < 8; j++) r[j] = a[j];
        for (i = 8; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++) r[j] += a[i + j];
        float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += a[i];
        return res;
    }
    npy_intp n2 = n / 2;
    n2 -= n2 % 8;
    return np_pairwise_sum(a, n2) + np_pairwise_sum(a + n2, n - n2);
}

/* _mean_scale's divisor: the rows not ignored (exact in float32 in any order), or with weights the sum of
   their w[t] in den_block lanes (chunk after chunk) added by the tape's tl.sum, np.add.reduce; NAN: no memory */
static float ce_den(const ce_params *p, const int64_t *t, const float *w) {
    int64_t M = p->M, ii = p->ii, n = 0, DB = p->den_block;
    if (!p->has_w) {
        for (int64_t m = 0; m < M; m++) n += t[m] != ii;
        return (float)n;
    }
    float *lanes = calloc(DB, sizeof(float));
    if (lanes == NULL) return NAN;
    for (int64_t r0 = 0; r0 < M; r0 += DB)
        for (int64_t j = 0; j < DB; j++) {
            int64_t m = r0 + j;
            lanes[j] = lanes[j] + (m < M && t[m] != ii ? w[t[m]] : 0.0f);
        }
    float den = 0.0f + np_pairwise_sum(lanes, DB);
    free(lanes);
    return den;
}

/* _nll_cascade: out[0] = 0 + sum_m r[m] (rows 1.. in the cascade, then row 0), 'mean': / the total weight */
static int ce_reduce(const ce_params *p, const int64_t *t, const float *w, float *out, const float *r) {
    int64_t M = p->M, ii = p->ii;
    npy_intp NB = 1;
    for (int64_t l = 0; l < p->levels; l++) NB *= 16;
    float *buf = malloc(NB * sizeof(float));
    if (buf == NULL) return -1;
    for (npy_intp i = 0; i < NB; i++) buf[i] = i + 1 < M ? r[i + 1] : 0.0f;
    float tot = cascade_sum(buf, NB, M - 1, p->levels) + r[0], den;
    if (p->reduce == 2) {
        int64_t t0 = t[0];
        if (p->has_w) {
            for (npy_intp i = 0; i < NB; i++) buf[i] = i + 1 < M && t[i + 1] != ii ? w[t[i + 1]] : 0.0f;
            den = cascade_sum(buf, NB, M - 1, p->levels);
            float w0 = w[t0 != ii ? t0 : 0];
            den = den + (t0 != ii ? w0 : 0.0f);
        } else {
            int32_t n = t0 != ii;
            for (int64_t m = 1; m < M; m++) n += t[m] != ii;
            den = (float)n;
        }
        tot = tot / den;
    }
    free(buf);
    out[0] = 0.0f + tot;
    return 0;
}

CE_FUNCS(_sw, exp_sw, log_sw, fmaf, )
#ifdef HAVE_HW
CE_FUNCS(_hw, exp_hw, log_hw, __builtin_fmaf, __attribute__((target("fma"))))
/* with AVX2: the exps' loops vectorized (the same IEEE operations lane by lane: the same bits; see UNARY_LOOP) */
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")
#pragma GCC target("avx2,fma")
CE_FUNCS(_avx2, exp_avx2, log_avx2, __builtin_fmaf, )
#pragma GCC pop_options
#endif
static int ce_hw;       /* 0: the portable twins, 1: with fma, 2: with AVX2 and fma */

/* the params (bytes of a ce_params) and NPTR addresses of a call's FASTCALL arguments, or -1 (error set) */
static int ce_args(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t nptr, ce_params *p, void **ptrs) {
    if (nargs < 1 + nptr || !PyBytes_Check(args[0]) || PyBytes_GET_SIZE(args[0]) != sizeof(ce_params)) {
        PyErr_SetString(PyExc_TypeError, "cross_entropy twin: (params bytes, addresses...) expected");
        return -1;
    }
    memcpy(p, PyBytes_AS_STRING(args[0]), sizeof(ce_params));
    for (Py_ssize_t i = 0; i < nptr; i++) {
        ptrs[i] = PyLong_AsVoidPtr(args[1 + i]);
        if (ptrs[i] == NULL && PyErr_Occurred()) return -1;
    }
    return 0;
}

static PyObject *cross_entropy_f32(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    ce_params p;
    void *a[6];
    int rc;
    (void)self;
    if (ce_args(args, nargs, 6, &p, a) < 0) return NULL;
#ifdef HAVE_HW
    if (ce_hw == 2)
        rc = ce_forward_avx2(&p, a[0], a[1], a[2], a[3], a[4], a[5]);
    else if (ce_hw)
        rc = ce_forward_hw(&p, a[0], a[1], a[2], a[3], a[4], a[5]);
    else
#endif
        rc = ce_forward_sw(&p, a[0], a[1], a[2], a[3], a[4], a[5]);
    if (rc < 0) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *cross_entropy_backward_f32(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    ce_params p;
    void *a[6];
    (void)self;
    if (ce_args(args, nargs, 6, &p, a) < 0) return NULL;
#ifdef HAVE_HW
    if (ce_hw == 2)
        ce_backward_avx2(&p, a[0], a[1], a[2], a[3], a[4], a[5]);
    else if (ce_hw)
        ce_backward_hw(&p, a[0], a[1], a[2], a[3], a[4], a[5]);
    else
#endif
        ce_backward_sw(&p, a[0], a[1], a[2], a[3], a[4], a[5]);
    Py_RETURN_NONE;
}

/* embedding_backward_kernel's atomic adds in the interpreter's order: the programs' rows in turn, each row's
   columns; acc + g in the accumulator's type (g already of it) */
static PyObject *embedding_backward(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    int64_t v[5];
    void *a[3];
    (void)self;
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "embedding_backward(n, D, padding_idx, idx64, f64, g, idx, acc)");
        return NULL;
    }
    for (int i = 0; i < 5; i++) {
        v[i] = PyLong_AsLongLong(args[i]);
        if (v[i] == -1 && PyErr_Occurred()) return NULL;
    }
    for (int i = 0; i < 3; i++) {
        a[i] = PyLong_AsVoidPtr(args[5 + i]);
        if (a[i] == NULL && PyErr_Occurred()) return NULL;
    }
    int64_t n = v[0], D = v[1], pad = v[2];
    for (int64_t i = 0; i < n; i++) {
        int64_t r = v[3] ? ((const int64_t *)a[1])[i] : (int64_t)((const int32_t *)a[1])[i];
        if (r == pad) continue;
        if (v[4]) {
            const double *g = (const double *)a[0] + i * D;
            double *o = (double *)a[2] + r * D;
            for (int64_t d = 0; d < D; d++) o[d] = o[d] + g[d];
        } else {
            const float *g = (const float *)a[0] + i * D;
            float *o = (float *)a[2] + r * D;
            for (int64_t d = 0; d < D; d++) o[d] = o[d] + g[d];
        }
    }
    Py_RETURN_NONE;
}

#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")   /* (selects if-converted: vectorized; the same results) */
/* dropout_kernel with mt19937 words, float32: keep_scale's factor (scale or +0), y = x f, mask = f != 0 */
static PyObject *dropout_words_f32(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    int64_t v[3];
    void *a[4];
    (void)self;
    if (nargs < 7) {
        PyErr_SetString(PyExc_TypeError, "dropout_words_f32(n, q53, scale_bits, x, y, mask, w, ...)");
        return NULL;
    }
    for (int i = 0; i < 3; i++) {
        v[i] = PyLong_AsLongLong(args[i]);
        if (v[i] == -1 && PyErr_Occurred()) return NULL;
    }
    for (int i = 0; i < 4; i++) {
        a[i] = PyLong_AsVoidPtr(args[3 + i]);
        if (a[i] == NULL && PyErr_Occurred()) return NULL;
    }
    double sd;
    memcpy(&sd, &v[2], sizeof sd);
    float scale = (float)sd;
    uint32_t sb;
    memcpy(&sb, &scale, sizeof sb);
    uint64_t q = (uint64_t)v[1];
    const float *x = a[0];
    float *y = a[1];
    uint8_t *mask = a[2];
    const uint32_t *w = a[3];
    /* u < q as 32-bit compares (vectorized): hi < qhi, or hi == qhi and lo < qlo (unsigned, by the sign flip) */
    int32_t qhi = (int32_t)(q >> 32), qlo = (int32_t)((uint32_t)q ^ 0x80000000u);
    for (int64_t i = 0; i < v[0]; i++) {
        int32_t hi = (int32_t)(w[2 * i] & 0x1FFFFF), lo = (int32_t)(w[2 * i + 1] ^ 0x80000000u);
        uint32_t fb = sb & (0u - (uint32_t)((hi < qhi) | ((hi == qhi) & (lo < qlo))));
        float f;
        memcpy(&f, &fb, sizeof f);
        y[i] = x[i] * f;
        mask[i] = f != 0.0f;
    }
    Py_RETURN_NONE;
}

#pragma GCC pop_options

static PyUFuncGenericFunction exp_funcs[1], log_funcs[1];
/* the lanes helpers' ufunc loops, called through pointers (never inlined: the tape's machine code) */
static void (*volatile lanes_add_loop)(char **, const npy_intp *, const npy_intp *, void *);
static void (*volatile lanes_fold_loop)(char **, const npy_intp *, const npy_intp *, void *);

#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")   /* (selects if-converted: vectorized; the same results) */
/* a op b where two NaNs meet as numpy's SIMD loops over the tape's whole blocks give it: the first operand's NaN
   (quieted), whichever operand order the compiler emits */
static inline float qnan(float a) {
    uint32_t u;
    memcpy(&u, &a, 4);
    u |= 0x400000u;
    memcpy(&a, &u, 4);
    return a;
}
static inline float mul1(float a, float b) { float r = a * b; return a != a ? qnan(a) : r; }
static inline float sub1(float a, float b) { float r = a - b; return a != a ? qnan(a) : r; }

/* the FASTCALL arguments (nint ints, then nptr addresses) of a twin, or -1 (error set) */
static int twin_args(PyObject *const *args, Py_ssize_t nargs, int nint, int nptr, int64_t *v, void **a) {
    if (nargs < nint + nptr) {
        PyErr_SetString(PyExc_TypeError, "twin: (ints..., addresses...) expected");
        return -1;
    }
    for (int i = 0; i < nint; i++) {
        v[i] = PyLong_AsLongLong(args[i]);
        if (v[i] == -1 && PyErr_Occurred()) return -1;
    }
    for (int i = 0; i < nptr; i++) {
        a[i] = PyLong_AsVoidPtr(args[nint + i]);
        if (a[i] == NULL && PyErr_Occurred()) return -1;
    }
    return 0;
}

/* t[0:n] = f(t[0:n]) by a unary ufunc loop (sleef_expf's, sleef_logf's: the bits the tape's call gives) */
static void exp_row(float *t, npy_intp n, PyUFuncGenericFunction f) {
    char *a[2] = {(char *)t, (char *)t};
    npy_intp d[1] = {n}, st[2] = {sizeof(float), sizeof(float)};
    f(a, d, st, NULL);
}

/* s[r] = lanes_fold(lanes_add over the BLOCK_K blocks of row r of t) for n rows of KP = whole blocks (K values,
   then +0), by the ufuncs' loops (kernels/_lang.py's helpers as the tape calls them); a: n x 8 scratch */
static void lanes_rows(float *t, npy_intp n, int64_t KP, int64_t BK, int64_t L, float *a, float *s) {
    memset(a, 0, n * 8 * sizeof(float));
    npy_intp d3[3] = {n, L, BK}, st6[6] = {8 * sizeof(float), KP * sizeof(float), 8 * sizeof(float), sizeof(float),
                                           sizeof(float), sizeof(float)};
    for (int64_t k0 = 0; k0 < KP; k0 += BK) {
        char *args[3] = {(char *)a, (char *)(t + k0), (char *)a};
        lanes_add_loop(args, d3, st6, NULL);
    }
    if (L != 8) {
        for (npy_intp r = 0; r < n; r++) s[r] = a[8 * r];
        return;
    }
    char *args[2] = {(char *)a, (char *)s};
    npy_intp d2[2] = {n, 8}, st3[3] = {8 * sizeof(float), sizeof(float), sizeof(float)};
    lanes_fold_loop(args, d2, st3, NULL);
}

/* the row's fmax (a NaN never wins; of +0 and -0 either: exp(x - mx) is 1 for both), 8 running maxima */
static float row_max(const float *x, int64_t K, int64_t sk) {
    float m8[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY}, mx;
    int64_t k = 0;
    if (sk == 1)
        for (; k + 8 <= K; k += 8)
            for (int j = 0; j < 8; j++) m8[j] = x[k + j] > m8[j] ? x[k + j] : m8[j];
    mx = m8[0];
    for (int j = 1; j < 8; j++) mx = m8[j] > mx ? m8[j] : mx;
    for (; k < K; k++) mx = x[k * sk] > mx ? x[k * sk] : mx;
    return mx;
}

#define TW_ROWS 65536       /* elements of scratch a batch of rows */

/* softmax_kernel (LANES > 0, NT 0, float32), its ops in the tape's order (two NaNs: mul1, sub1), a batch of rows at
   a time: mx = the row's fmax, e = exp(x - mx), s = lanes(e); y = e * (1 / s), LOG: y = (x - mx) - log s */
static PyObject *softmax_f32(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    int64_t v[12];
    void *a[2];
    (void)self;
    if (twin_args(args, nargs, 12, 2, v, a) < 0) return NULL;
    int64_t M = v[0], K = v[1], IN = v[2], sk = v[4], yk = v[7], BK = v[9], L = v[10], LOG = v[11];
    int64_t KP = (K + BK - 1) / BK * BK, R = KP >= TW_ROWS ? 1 : TW_ROWS / KP;
    if (R > M) R = M;
    const float *x = a[0];
    float *y = a[1], *t = calloc(R * KP, sizeof(float)), *ln = malloc(R * 8 * sizeof(float)),
          *mx = malloc(R * sizeof(float)), *sr = malloc(R * sizeof(float));
    if (t == NULL || ln == NULL || mx == NULL || sr == NULL) {
        free(t); free(ln); free(mx); free(sr);
        return PyErr_NoMemory();
    }
    for (int64_t m0 = 0; m0 < M; m0 += R) {
        npy_intp n = M - m0 < R ? M - m0 : R;
        for (npy_intp r = 0; r < n; r++) {
            int64_t m = m0 + r;
            const float *xr = x + (m / IN) * v[3] + (m % IN) * v[5];
            float *tr = t + r * KP, mr = mx[r] = row_max(xr, K, sk);
            for (int64_t k = 0; k < K; k++) tr[k] = sub1(xr[k * sk], mr);
            if (K < KP) exp_row(tr, K, exp_funcs[0]);
        }
        if (K == KP) exp_row(t, n * KP, exp_funcs[0]);
        lanes_rows(t, n, KP, BK, L, ln, sr);
        if (LOG) exp_row(sr, n, log_funcs[0]);
        for (npy_intp r = 0; r < n; r++) {
            int64_t m = m0 + r;
            const float *xr = x + (m / IN) * v[3] + (m % IN) * v[5], *tr = t + r * KP;
            float *yr = y + (m / IN) * v[6] + (m % IN) * v[8], q = sr[r], mr = mx[r];
            if (LOG) {
                for (int64_t k = 0; k < K; k++) yr[k * yk] = sub1(sub1(xr[k * sk], mr), q);
            } else {
                q = 1.0f / q;
                if (yk == 1)
                    for (int64_t k = 0; k < K; k++) yr[k] = mul1(tr[k], q);
                else
                    for (int64_t k = 0; k < K; k++) yr[k * yk] = mul1(tr[k], q);
            }
        }
    }
    free(t); free(ln); free(mx); free(sr);
    Py_RETURN_NONE;
}

/* softmax_backward_kernel (LANES > 0, not LOG, float32): acc = lanes(dy y), dx = (dy - acc) y */
static PyObject *softmax_backward_f32(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    int64_t v[15];
    void *a[3];
    (void)self;
    if (twin_args(args, nargs, 15, 3, v, a) < 0) return NULL;
    if (v[14]) {
        PyErr_SetString(PyExc_ValueError, "softmax_backward_f32: LOG has no twin");
        return NULL;
    }
    int64_t M = v[0], K = v[1], IN = v[2], dk = v[4], yk = v[7], ok = v[10], BK = v[12], L = v[13];
    int64_t KP = (K + BK - 1) / BK * BK, R = KP >= TW_ROWS ? 1 : TW_ROWS / KP;
    if (R > M) R = M;
    const float *dy = a[0], *y = a[1];
    float *dx = a[2], *t = calloc(R * KP, sizeof(float)), *ln = malloc(R * 8 * sizeof(float)),
          *sr = malloc(R * sizeof(float));
    if (t == NULL || ln == NULL || sr == NULL) {
        free(t); free(ln); free(sr);
        return PyErr_NoMemory();
    }
    for (int64_t m0 = 0; m0 < M; m0 += R) {
        npy_intp n = M - m0 < R ? M - m0 : R;
        for (npy_intp r = 0; r < n; r++) {
            int64_t m = m0 + r;
            const float *dr = dy + (m / IN) * v[3] + (m % IN) * v[5], *yr = y + (m / IN) * v[6] + (m % IN) * v[8];
            float *tr = t + r * KP;
            if (dk == 1 && yk == 1)
                for (int64_t k = 0; k < K; k++) tr[k] = mul1(dr[k], yr[k]);
            else
                for (int64_t k = 0; k < K; k++) tr[k] = mul1(dr[k * dk], yr[k * yk]);
        }
        lanes_rows(t, n, KP, BK, L, ln, sr);
        for (npy_intp r = 0; r < n; r++) {
            int64_t m = m0 + r;
            const float *dr = dy + (m / IN) * v[3] + (m % IN) * v[5], *yr = y + (m / IN) * v[6] + (m % IN) * v[8];
            float *orow = dx + (m / IN) * v[9] + (m % IN) * v[11], q = sr[r];
            if (dk == 1 && yk == 1 && ok == 1)
                for (int64_t k = 0; k < K; k++) orow[k] = mul1(sub1(dr[k], q), yr[k]);
            else
                for (int64_t k = 0; k < K; k++) orow[k * ok] = mul1(sub1(dr[k * dk], q), yr[k * yk]);
        }
    }
    free(t); free(ln); free(sr);
    Py_RETURN_NONE;
}

static inline float add1(float a, float b) { float r = a + b; return a != a ? qnan(a) : r; }

/* _aten_norm2_rows of one contiguous row: lane l sums x[8v + l]^2 over the K / 8 vectors left to right (np.cumsum:
   the running sum first), the 8 lanes left to right, then the tail's squares by fma */
static float norm2_row(const float *x, int64_t K) {
    int64_t NV = K / 8;
    float acc[8], b;
    for (int l = 0; l < 8; l++) acc[l] = NV ? x[l] * x[l] : 0.0f;
    for (int64_t v = 1; v < NV; v++)
        for (int l = 0; l < 8; l++) acc[l] = add1(acc[l], x[8 * v + l] * x[8 * v + l]);
    b = acc[0];
    for (int l = 1; l < 8; l++) b = add1(b, acc[l]);
    for (int64_t i = 0; i < 7; i++) {
        float xi = NV * 8 + i < K ? x[NV * 8 + i] : 0.0f;
        b = fmaf(xi, xi, b);
    }
    return b;
}

static PyObject *norm2_rows_f32(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    int64_t v[5];
    void *a[2];
    (void)self;
    if (twin_args(args, nargs, 5, 2, v, a) < 0) return NULL;
    const float *x = a[0];
    float *out = a[1];
    for (int64_t m = 0; m < v[0]; m++)
        out[m] = sqrtf(norm2_row(x + (m / v[1]) * v[3] + (m % v[1]) * v[4], v[2]));
    Py_RETURN_NONE;
}

#pragma GCC pop_options

static PyMethodDef methods[] = {
    {"mt19937_fill", mt19937_fill, METH_VARARGS, "mt19937_fill(state_address, out_address, n): numpy MT19937 words."},
    {"cross_entropy_f32", (PyCFunction)(void (*)(void))cross_entropy_f32, METH_FASTCALL,
     "cross_entropy_f32(params, x, t, w, out, dx, r[, eps_hi, eps_lo]): kernels/loss.py's cross_entropy_kernel."},
    {"cross_entropy_backward_f32", (PyCFunction)(void (*)(void))cross_entropy_backward_f32, METH_FASTCALL,
     "cross_entropy_backward_f32(params, g, x, t, w, dx, rs[, eps_hi, eps_lo]): its backward kernel."},
    {"dropout_words_f32", (PyCFunction)(void (*)(void))dropout_words_f32, METH_FASTCALL,
     "dropout_words_f32(n, q53, scale_bits, x, y, mask, w, ...): kernels/nn.py's dropout_kernel (WORDS, float32)."},
    {"softmax_f32", (PyCFunction)(void (*)(void))softmax_f32, METH_FASTCALL,
     "softmax_f32(M, K, INNER, sx (3), sy (3), BLOCK_K, LANES, LOG, x, y): kernels/softmax.py's softmax_kernel."},
    {"softmax_backward_f32", (PyCFunction)(void (*)(void))softmax_backward_f32, METH_FASTCALL,
     "softmax_backward_f32(M, K, INNER, sd, sy, so (3 each), BLOCK_K, LANES, LOG, dy, y, dx): its backward."},
    {"norm2_rows_f32", (PyCFunction)(void (*)(void))norm2_rows_f32, METH_FASTCALL,
     "norm2_rows_f32(M, M2, K, s1, s2, x, out, ...): kernels/reduce.py's accumulate_rows_kernel (ATEN norm2)."},
    {"embedding_backward", (PyCFunction)(void (*)(void))embedding_backward, METH_FASTCALL,
     "embedding_backward(n, D, padding_idx, idx64, f64, g, idx, acc): kernels/nn.py's embedding_backward_kernel."},
    {NULL, NULL, 0, NULL}};

static PyUFuncGenericFunction exp_funcs[1] = {exp_f32}, log_funcs[1] = {log_f32};
static PyUFuncGenericFunction fma_rows_funcs[1] = {fma_rows_f32};
static char types4[4] = {NPY_FLOAT, NPY_FLOAT, NPY_FLOAT, NPY_FLOAT};
static PyUFuncGenericFunction moments_funcs[1] = {row_moments_f32};
static char moments_types[3] = {NPY_FLOAT, NPY_INT32, NPY_FLOAT};
static PyUFuncGenericFunction add_funcs[1] = {lanes_add_f32}, fold_funcs[1] = {lanes_fold8_f32};
static void *data[1] = {NULL};
static PyUFuncGenericFunction cascade_funcs[2] = {cascade_i32, cascade_i64};
static void *cascade_data[5][2];
static PyUFuncGenericFunction keep_funcs[2] = {keep_scale_i32, keep_scale_i64};
static void *data2[2] = {NULL, NULL};
static char keep_types[10] = {NPY_INT32, NPY_INT32, NPY_INT32, NPY_FLOAT, NPY_FLOAT,
                              NPY_INT32, NPY_INT32, NPY_INT64, NPY_FLOAT, NPY_FLOAT};
static char cascade_types[6] = {NPY_FLOAT, NPY_INT32, NPY_FLOAT, NPY_FLOAT, NPY_INT64, NPY_FLOAT};
static char types2[2] = {NPY_FLOAT, NPY_FLOAT}, types3[3] = {NPY_FLOAT, NPY_FLOAT, NPY_FLOAT};
/* glibc_<f>(x): the C library's double f, element by element (numpy's float64 loops are SIMD code on AVX-512
   machines, whose last bits differ from glibc's: ATen's scalar samplers call glibc) */
static void libm_loop(char **args, const npy_intp *dims, const npy_intp *steps, void *fn) {
    double (*f)(double) = (double (*)(double))fn;
    for (npy_intp i = 0; i < dims[0]; i++)
        *(double *)(args[1] + i * steps[1]) = f(*(const double *)(args[0] + i * steps[0]));
}
static PyUFuncGenericFunction libm_funcs[1] = {libm_loop};
static double (*const libm_fns[6])(double) = {log, log1p, exp, sin, cos, tan};
static const char *const libm_names[6] = {"glibc_log", "glibc_log1p", "glibc_exp", "glibc_sin", "glibc_cos",
                                          "glibc_tan"};
static void *libm_data[6][1];
static char types_dd[2] = {NPY_DOUBLE, NPY_DOUBLE};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "tgrad_aten_cpu", NULL, -1, methods};

static int add(PyObject *m, const char *name, PyObject *f) {
    if (f == NULL) return -1;
    if (PyModule_AddObject(m, name, f) < 0) { Py_DECREF(f); return -1; }
    return 0;
}

PyMODINIT_FUNC PyInit_tgrad_aten_cpu(void) {
    PyObject *m = PyModule_Create(&moduledef);
    int hw = 0;
    if (m == NULL) return NULL;
    import_array();
    import_umath();
    lanes_add_loop = lanes_add_f32;
    lanes_fold_loop = lanes_fold8_f32;
#ifdef HAVE_HW
    __builtin_cpu_init();
    if (__builtin_cpu_supports("fma")) {
        exp_funcs[0] = __builtin_cpu_supports("avx2") ? exp_f32_avx2 : exp_f32_hw;
        log_funcs[0] = __builtin_cpu_supports("avx2") ? log_f32_avx2 : log_f32_hw;
        fma_rows_funcs[0] = fma_rows_f32_hw;
        moments_funcs[0] = row_moments_f32_hw;
        hw = ce_hw = 1;
        if (__builtin_cpu_supports("avx2")) ce_hw = 2;
    }
#endif
    if (add(m, "sleef_expf", PyUFunc_FromFuncAndData(exp_funcs, data, types2, 1, 1, 1, PyUFunc_None, "sleef_expf",
                                                     "SLEEF's xexpf (float32), as kernels/_lang.py's sleef_exp.", 0)) ||
        add(m, "sleef_logf", PyUFunc_FromFuncAndData(log_funcs, data, types2, 1, 1, 1, PyUFunc_None, "sleef_logf",
                                                     "SLEEF's xlogf_u1 (float32), as kernels/_lang.py's sleef_log.", 0)) ||
        add(m, "lanes_add", PyUFunc_FromFuncAndDataAndSignature(add_funcs, data, types3, 1, 2, 1, PyUFunc_None,
                                                                "lanes_add", "kernels/_lang.py's lanes_add.", 0,
                                                                "(l),(n)->(l)")) ||
        add(m, "lanes_fold8", PyUFunc_FromFuncAndDataAndSignature(fold_funcs, data, types2, 1, 1, 1, PyUFunc_None,
                                                                  "lanes_fold8", "kernels/_lang.py's lanes_fold, 8 lanes.",
                                                                  0, "(8)->()")) ||
        add(m, "fma_rows", PyUFunc_FromFuncAndDataAndSignature(fma_rows_funcs, data, types4, 1, 3, 1, PyUFunc_None,
                                                               "fma_rows", "kernels/_lang.py's fma_rows.", 0,
                                                               "(n),(r,n),(r,n)->(n)")) ||
        add(m, "row_moments", PyUFunc_FromFuncAndDataAndSignature(moments_funcs, data, moments_types, 1, 2, 1,
                                                                  PyUFunc_None, "row_moments",
                                                                  "kernels/norm.py's _aten_row_moments.", 0,
                                                                  "(k),()->(2)")) ||
        add(m, "select", PyUFunc_FromFuncAndData(select_funcs, select_data, select_types, 2, 3, 1, PyUFunc_None,
                                                 "select", "c ? x : y on uint32 / uint64 bits, branch-free.", 0)) ||
        add(m, "keep_scale", PyUFunc_FromFuncAndData(keep_funcs, data2, keep_types, 2, 4, 1, PyUFunc_None, "keep_scale",
                                                     "kernels/random.py's keep_scale.", 0)) ||
        PyModule_AddIntConstant(m, "hardware", hw) < 0 || PyModule_AddIntConstant(m, "ce_avx2", ce_hw == 2) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    for (long l = 1; l <= 5; l++) {
        char name[16];
        snprintf(name, sizeof name, "nll_cascade_%ld", l);
        cascade_data[l - 1][0] = cascade_data[l - 1][1] = (void *)l;
        if (add(m, name, PyUFunc_FromFuncAndDataAndSignature(cascade_funcs, cascade_data[l - 1], cascade_types, 2,
                                                             2, 1, PyUFunc_None, name, "kernels/loss.py's _cascade.",
                                                             0, "(b),()->()")) == 0)
            continue;
        Py_DECREF(m);
        return NULL;
    }
    for (int i = 0; i < 6; i++) {
        libm_data[i][0] = (void *)libm_fns[i];
        if (add(m, libm_names[i], PyUFunc_FromFuncAndData(libm_funcs, libm_data[i], types_dd, 1, 1, 1, PyUFunc_None,
                                                          libm_names[i], "glibc's double function.", 0)) == 0)
            continue;
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
