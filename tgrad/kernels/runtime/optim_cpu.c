/* The optimizer element updates of kernels/optim.py as the cpu executor's ufuncs: the step-for-step C twins of
   its helpers _adam_m, _adam_v, _adam_p, _sgd_buf and _sgd_p (runtime/native.py's native_helper), the same
   float32 operations in the same order (an fmaf where the Triton code has tl.fma, plain operations elsewhere),
   so the same bits.  Built with -ffp-contract=off and without fast-math (vectorized, the same IEEE operations
   per element).  The structural constexprs (weight decay, lerp side, momentum kind ...) pick one ufunc each.

   adam_m_WL(m, g, p, w1, wd):               lerp(m, g', w1) (L: the w < 0.5 side), g' = fma(wd, p, g) if W else g.
   adam_v_W(v, g, p, beta2, w2, wd):         fma(w2 g', g', v beta2).
   adam_p_D(p, m, v, step, bc2, eps, decay): p' + (-step m) / (sqrt(v) / bc2 + eps), p' = p decay if D else p.
   sgd_buf_WMF(buf, g, p, momentum, damp, wd): g' (F: first step), else buf momentum + g' (M = 1) or
                                             fma(damp, g', buf momentum) (M = 2).
   sgd_p_WMN(p, g, buf, neg_lr, momentum, wd): fma(neg_lr, u, p), u = g' (M = 0), buf, or fma(momentum, buf, g')
                                             (N: nesterov).
   adam_step_WLD(p, g, m, v, x0..x7) -> (m, v, p): adam_m, adam_v, then adam_p of the new m and v, per element in
                                             one pass (x: ops.optim.adam_hyper's eight; D: decoupled decay).
   sgd_step_WMN(p, g, buf, neg_lr, momentum, damp, wd) -> (buf, p): sgd_buf (not first), then sgd_p of the new buf.
   (The fused steps: each element's operations as the separate ufuncs do them, the arrays read and written once.) */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/ndarraytypes.h>
#include <numpy/ufuncobject.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

/* flag bits (each ufunc's loop is compiled for its flags: constants, so contiguous loops vectorize) */
#define WD 1
#define LOW 2           /* adam_m: lerp's w < 0.5 side; sgd_buf: FIRST */
#define DEC 4           /* adam_p: decoupled weight decay; sgd_p: nesterov */
#define MOM1 8
#define MOM2 16

/* every helper: three blocks b0, b1, b2 and up to four scalars s0..s3 (hyper-parameters) */
#define ADAM_M(FMA, fl)                                                                                     \
    float g = b1;                                                                                          \
    if (fl & WD) g = FMA(s1, b2, g);                                                                       \
    float d = g - b0;                                                                                      \
    return (fl & LOW) ? FMA(s0, d, b0) : FMA(-d, 1.0f - s0, g);
#define ADAM_V(FMA, fl)                                                                                     \
    float g = b1;                                                                                          \
    if (fl & WD) g = FMA(s2, b2, g);                                                                       \
    return FMA(s1 * g, g, b0 * s0);
#define ADAM_P(FMA, fl)                                                                                     \
    float p = b0;                                                                                          \
    if (fl & DEC) p = p * s3;                                                                              \
    float denom = sqrtf(b2) / s1 + s2;                                                                     \
    return p + (-s0 * b1) / denom;
#define SGD_BUF(FMA, fl)                                                                                    \
    float g = b1;                                                                                          \
    if (fl & WD) g = FMA(s2, b2, g);                                                                       \
    if (fl & LOW) return g;                                                                                \
    if (fl & MOM1) return b0 * s0 + g;                                                                     \
    return FMA(s1, g, b0 * s0);
#define SGD_P(FMA, fl)                                                                                      \
    float g = b1;                                                                                          \
    if (fl & WD) g = FMA(s2, b0, g);                                                                       \
    if (fl & (MOM1 | MOM2)) g = (fl & DEC) ? FMA(s1, b2, g) : b2;                                           \
    return FMA(s0, g, b0);

#define LD(k) (*(const float *)(args[k] + i * steps[k]))
/* the loop of helper BODY with flags FL and NS scalars: contiguous blocks and broadcast scalars (a tape's
   call) in a plain indexed loop, any other strides element by element */
#define LOOP(NAME, BODY, FL, NS, FMA, ATTR)                                                                 \
    ATTR static inline float NAME##_one(float b0, float b1, float b2, float s0, float s1, float s2,        \
                                        float s3) {                                                        \
        (void)s0; (void)s1; (void)s2; (void)s3; (void)b2;                                                  \
        BODY(FMA, (FL))                                                                                    \
    }                                                                                                      \
    ATTR static void NAME(char **args, const npy_intp *dims, const npy_intp *steps, void *data) {          \
        npy_intp n = dims[0], i = 0;                                                                       \
        float s[4] = {0, 0, 0, 0};                                                                         \
        int flat = steps[0] == 4 && steps[1] == 4 && steps[2] == 4 && steps[3 + NS] == 4;                 \
        (void)data;                                                                                        \
        for (int k = 0; k < NS; k++) {                                                                     \
            s[k] = *(const float *)args[3 + k];                                                            \
            flat = flat && steps[3 + k] == 0;                                                              \
        }                                                                                                  \
        if (flat) {                                                                                        \
            const float *restrict x0 = (const float *)args[0], *restrict x1 = (const float *)args[1];       \
            const float *restrict x2 = (const float *)args[2];                                             \
            float *restrict o = (float *)args[3 + NS];                                                     \
            float s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3];                                              \
            for (i = 0; i < n; i++) o[i] = NAME##_one(x0[i], x1[i], x2[i], s0, s1, s2, s3);              \
        } else {                                                                                           \
            for (i = 0; i < n; i++) {                                                                      \
                for (int k = 0; k < NS; k++) s[k] = LD(3 + k);                                             \
                *(float *)(args[3 + NS] + i * steps[3 + NS]) = NAME##_one(LD(0), LD(1), LD(2), s[0], s[1],  \
                                                                          s[2], s[3]);                     \
            }                                                                                              \
        }                                                                                                  \
    }

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define HAVE_HW 1
#define HW __attribute__((target("avx2,fma")))
#define BOTH(NAME, BODY, FL, NS) LOOP(NAME, BODY, FL, NS, fmaf, ) LOOP(NAME##_hw, BODY, FL, NS, __builtin_fmaf, HW)
#define HWF(NAME) NAME##_hw
#else
#define BOTH(NAME, BODY, FL, NS) LOOP(NAME, BODY, FL, NS, fmaf, )
#define HWF(NAME) NAME
#endif

/* name, body, flags, scalar count: one ufunc each */
#define UFUNCS(X)                                                                                           \
    X(adam_m_00, ADAM_M, 0, 2) X(adam_m_01, ADAM_M, LOW, 2) X(adam_m_10, ADAM_M, WD, 2)                    \
    X(adam_m_11, ADAM_M, WD | LOW, 2) X(adam_v_0, ADAM_V, 0, 3) X(adam_v_1, ADAM_V, WD, 3)                  \
    X(adam_p_0, ADAM_P, 0, 4) X(adam_p_1, ADAM_P, DEC, 4)                                                  \
    X(sgd_buf_010, SGD_BUF, MOM1, 3) X(sgd_buf_011, SGD_BUF, MOM1 | LOW, 3)                                \
    X(sgd_buf_020, SGD_BUF, MOM2, 3) X(sgd_buf_021, SGD_BUF, MOM2 | LOW, 3)                                \
    X(sgd_buf_110, SGD_BUF, WD | MOM1, 3) X(sgd_buf_111, SGD_BUF, WD | MOM1 | LOW, 3)                      \
    X(sgd_buf_120, SGD_BUF, WD | MOM2, 3) X(sgd_buf_121, SGD_BUF, WD | MOM2 | LOW, 3)                      \
    X(sgd_p_000, SGD_P, 0, 3) X(sgd_p_001, SGD_P, DEC, 3) X(sgd_p_010, SGD_P, MOM1, 3)                     \
    X(sgd_p_011, SGD_P, MOM1 | DEC, 3) X(sgd_p_020, SGD_P, MOM2, 3) X(sgd_p_021, SGD_P, MOM2 | DEC, 3)     \
    X(sgd_p_100, SGD_P, WD, 3) X(sgd_p_101, SGD_P, WD | DEC, 3) X(sgd_p_110, SGD_P, WD | MOM1, 3)          \
    X(sgd_p_111, SGD_P, WD | MOM1 | DEC, 3) X(sgd_p_120, SGD_P, WD | MOM2, 3)                              \
    X(sgd_p_121, SGD_P, WD | MOM2 | DEC, 3)

#define DEFINE(NAME, BODY, FL, NS) BOTH(NAME, BODY, FL, NS)
UFUNCS(DEFINE)


/* the fused steps: NI arrays then NS broadcast scalars in, NO arrays out; BODY(SUF, L, S, O) computes element i
   of the outputs O[] from the arrays' elements L[] and the scalars S[] (contiguous operands: one vectorizable loop
   over restrict pointers, as LOOP's: a function of its own, whose restrict parameters the vectorizer trusts) */
#define FLOOP(NAME, NI, NS, NO, BODY, ATTR, SUF)                                                           \
    ATTR static void NAME##SUF##_flat(npy_intp n, const float *restrict x0, const float *restrict x1,      \
                                      const float *restrict x2, const float *restrict x3, float *restrict o0, \
                                      float *restrict o1, float *restrict o2, const float *S) {            \
        const float s0 = S[0], s1 = S[1], s2 = S[2], s3 = S[3], s4 = S[4], s5 = S[5], s6 = S[6], s7 = S[7]; \
        (void)x3; (void)o2; (void)s4; (void)s5; (void)s6; (void)s7;                                        \
        for (npy_intp i = 0; i < n; i++) {                                                                 \
            float r0, r1, r2;                                                                              \
            (void)r2;                                                                                      \
            BODY(SUF, x0[i], x1[i], x2[i], x3[i], s0, s1, s2, s3, s4, s5, s6, s7)                          \
            o0[i] = r0;                                                                                    \
            o1[i] = r1;                                                                                    \
            if (NO > 2) o2[i] = r2;                                                                        \
        }                                                                                                  \
    }                                                                                                      \
    ATTR static void NAME##SUF(char **args, const npy_intp *dims, const npy_intp *steps, void *data) {    \
        npy_intp n = dims[0];                                                                              \
        float S[8] = {0, 0, 0, 0, 0, 0, 0, 0}, L[4] = {0, 0, 0, 0}, O[3];                                  \
        int flat = 1;                                                                                      \
        (void)data;                                                                                        \
        for (int k = 0; k < NS; k++) S[k] = *(const float *)args[NI + k];                                  \
        for (int k = 0; k < NI; k++) flat = flat && steps[k] == 4;                                         \
        for (int k = 0; k < NS; k++) flat = flat && steps[NI + k] == 0;                                    \
        for (int k = 0; k < NO; k++) flat = flat && steps[NI + NS + k] == 4;                               \
        if (flat) {                                                                                        \
            NAME##SUF##_flat(n, (const float *)args[0], (const float *)args[1], (const float *)args[2],    \
                             (const float *)args[NI > 3 ? 3 : 0], (float *)args[NI + NS],                  \
                             (float *)args[NI + NS + 1], (float *)args[NI + NS + (NO > 2 ? 2 : 0)], S);     \
            return;                                                                                        \
        }                                                                                                  \
        for (npy_intp i = 0; i < n; i++) {                                                                 \
            float r0, r1, r2;                                                                              \
            (void)r2;                                                                                      \
            for (int k = 0; k < NI; k++) L[k] = LD(k);                                                     \
            for (int k = 0; k < NS; k++) S[k] = LD(NI + k);                                                \
            BODY(SUF, L[0], L[1], L[2], L[3], S[0], S[1], S[2], S[3], S[4], S[5], S[6], S[7])              \
            O[0] = r0;                                                                                     \
            O[1] = r1;                                                                                     \
            O[2] = NO > 2 ? r2 : r0;                                                                       \
            for (int k = 0; k < NO; k++) *(float *)(args[NI + NS + k] + i * steps[NI + NS + k]) = O[k];    \
        }                                                                                                  \
    }
/* (p, g, m, v; x0..x7) -> (m, v, p) */
#define ADAM_STEP(MF, VF, PF, p, g, m, v, x0, x1, x2, x3, x4, x5, x6, x7)                                  \
    r0 = MF##_one(m, g, p, x1, x5, 0, 0);                                                                  \
    r1 = VF##_one(v, g, p, x2, x3, x5, 0);                                                                 \
    r2 = PF##_one(p, r0, r1, x0, x7, x4, x6);
/* (p, g, buf; neg_lr, momentum, damp, wd) -> (buf, p) */
#define SGD_STEP(BF, PF, p, g, buf, unused, neg_lr, mom, damp, wd, u4, u5, u6, u7)                         \
    r0 = BF##_one(buf, g, p, mom, damp, wd, 0);                                                            \
    r1 = PF##_one(p, g, r0, neg_lr, mom, wd, 0);
#ifdef HAVE_HW
#define FBOTH(NAME, NI, NS, NO, BODY) FLOOP(NAME, NI, NS, NO, BODY, , ) FLOOP(NAME, NI, NS, NO, BODY, HW, _hw)
#define FHWF(NAME) NAME##_hw
#else
#define FBOTH(NAME, NI, NS, NO, BODY) FLOOP(NAME, NI, NS, NO, BODY, , )
#define FHWF(NAME) NAME
#endif
/* name, arrays in, scalars, arrays out, body (of the suffix: the helpers' software or hardware-fma twins) */
#define B_adam_step_000(SUF, ...) ADAM_STEP(adam_m_00##SUF, adam_v_0##SUF, adam_p_0##SUF, __VA_ARGS__)
#define B_adam_step_010(SUF, ...) ADAM_STEP(adam_m_01##SUF, adam_v_0##SUF, adam_p_0##SUF, __VA_ARGS__)
#define B_adam_step_100(SUF, ...) ADAM_STEP(adam_m_10##SUF, adam_v_1##SUF, adam_p_0##SUF, __VA_ARGS__)
#define B_adam_step_110(SUF, ...) ADAM_STEP(adam_m_11##SUF, adam_v_1##SUF, adam_p_0##SUF, __VA_ARGS__)
#define B_adam_step_001(SUF, ...) ADAM_STEP(adam_m_00##SUF, adam_v_0##SUF, adam_p_1##SUF, __VA_ARGS__)
#define B_adam_step_011(SUF, ...) ADAM_STEP(adam_m_01##SUF, adam_v_0##SUF, adam_p_1##SUF, __VA_ARGS__)
#define B_sgd_step_010(SUF, ...) SGD_STEP(sgd_buf_010##SUF, sgd_p_010##SUF, __VA_ARGS__)
#define B_sgd_step_011(SUF, ...) SGD_STEP(sgd_buf_010##SUF, sgd_p_011##SUF, __VA_ARGS__)
#define B_sgd_step_020(SUF, ...) SGD_STEP(sgd_buf_020##SUF, sgd_p_020##SUF, __VA_ARGS__)
#define B_sgd_step_021(SUF, ...) SGD_STEP(sgd_buf_020##SUF, sgd_p_021##SUF, __VA_ARGS__)
#define B_sgd_step_110(SUF, ...) SGD_STEP(sgd_buf_110##SUF, sgd_p_110##SUF, __VA_ARGS__)
#define B_sgd_step_111(SUF, ...) SGD_STEP(sgd_buf_110##SUF, sgd_p_111##SUF, __VA_ARGS__)
#define B_sgd_step_120(SUF, ...) SGD_STEP(sgd_buf_120##SUF, sgd_p_120##SUF, __VA_ARGS__)
#define B_sgd_step_121(SUF, ...) SGD_STEP(sgd_buf_120##SUF, sgd_p_121##SUF, __VA_ARGS__)
#define FUSED(X) X(adam_step_000, 4, 8, 3, B_adam_step_000) \
    X(adam_step_010, 4, 8, 3, B_adam_step_010) \
    X(adam_step_100, 4, 8, 3, B_adam_step_100) \
    X(adam_step_110, 4, 8, 3, B_adam_step_110) \
    X(adam_step_001, 4, 8, 3, B_adam_step_001) \
    X(adam_step_011, 4, 8, 3, B_adam_step_011) \
    X(sgd_step_010, 3, 4, 2, B_sgd_step_010) \
    X(sgd_step_011, 3, 4, 2, B_sgd_step_011) \
    X(sgd_step_020, 3, 4, 2, B_sgd_step_020) \
    X(sgd_step_021, 3, 4, 2, B_sgd_step_021) \
    X(sgd_step_110, 3, 4, 2, B_sgd_step_110) \
    X(sgd_step_111, 3, 4, 2, B_sgd_step_111) \
    X(sgd_step_120, 3, 4, 2, B_sgd_step_120) \
    X(sgd_step_121, 3, 4, 2, B_sgd_step_121)
FUSED(FBOTH)

struct fused { const char *name; PyUFuncGenericFunction sw, hw; int nin, nout; };
#define FENTRY(NAME, NI, NS, NO, BODY) {#NAME, NAME, FHWF(NAME), NI + NS, NO},
static const struct fused fused[] = {FUSED(FENTRY)};
#define FCOUNT (sizeof fused / sizeof fused[0])
static PyUFuncGenericFunction ffuncs[FCOUNT][1];
static void *fdatas[FCOUNT][1];
static char ftypes[16] = {NPY_FLOAT, NPY_FLOAT, NPY_FLOAT, NPY_FLOAT, NPY_FLOAT, NPY_FLOAT, NPY_FLOAT, NPY_FLOAT,
                         NPY_FLOAT, NPY_FLOAT, NPY_FLOAT, NPY_FLOAT, NPY_FLOAT, NPY_FLOAT, NPY_FLOAT, NPY_FLOAT};

struct entry { const char *name; PyUFuncGenericFunction sw, hw; int nin; };
#define ENTRY(NAME, BODY, FL, NS) {#NAME, NAME, HWF(NAME), 3 + NS},
static const struct entry entries[] = {UFUNCS(ENTRY)};
#define COUNT (sizeof entries / sizeof entries[0])

static PyUFuncGenericFunction funcs[COUNT][1];
static void *datas[COUNT][1];
static char types[8] = {NPY_FLOAT, NPY_FLOAT, NPY_FLOAT, NPY_FLOAT, NPY_FLOAT, NPY_FLOAT, NPY_FLOAT, NPY_FLOAT};

/* run_loops(ufunc, plan): the inner loop of ``ufunc`` (one of this module's: one float32 loop) called on each item
   of ``plan``, bytes of int64s, per item n then (address, byte step) of each operand (inputs, then outputs): what
   ``ufunc(*operands)`` runs for contiguous arrays of n elements and 1-element ones broadcast (step 0), each element
   computed alone, so the same bits; many tensors' updates in one call (tgrad.compile's replay of an SGD step).
   The caller keeps the operands alive and of n elements. */
static PyObject *run_loops(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2 || !PyObject_TypeCheck(args[0], &PyUFunc_Type) || !PyBytes_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "run_loops(ufunc, plan bytes) expected");
        return NULL;
    }
    PyUFuncObject *uf = (PyUFuncObject *)args[0];
    int na = uf->nin + uf->nout;
    Py_ssize_t per = 1 + 2 * (Py_ssize_t)na, len = PyBytes_GET_SIZE(args[1]) / 8;
    int ours = 0;
    for (size_t k = 0; k < FCOUNT; k++) ours = ours || uf->functions == ffuncs[k];
    for (size_t k = 0; k < COUNT; k++) ours = ours || uf->functions == funcs[k];
    if (!ours || uf->ntypes != 1 || na > 16 || PyBytes_GET_SIZE(args[1]) % (8 * per)) {
        PyErr_SetString(PyExc_ValueError, "run_loops: a ufunc of tgrad_optim_cpu and its operands' plan expected");
        return NULL;
    }
    const int64_t *q = (const int64_t *)PyBytes_AS_STRING(args[1]);
    char *ptrs[16];
    npy_intp steps[16], dims[1];
    for (Py_ssize_t i = 0; i < len; i += per, q += per) {
        dims[0] = (npy_intp)q[0];
        for (int k = 0; k < na; k++) {
            ptrs[k] = (char *)(intptr_t)q[1 + 2 * k];
            steps[k] = (npy_intp)q[2 + 2 * k];
        }
        uf->functions[0](ptrs, dims, steps, uf->data[0]);
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"run_loops", (PyCFunction)(void (*)(void))run_loops, METH_FASTCALL,
     "run_loops(ufunc, plan): the ufunc's loop on each item of plan (int64 bytes: n, then (address, step) per operand)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "tgrad_optim_cpu", NULL, -1, methods};

PyMODINIT_FUNC PyInit_tgrad_optim_cpu(void) {
    PyObject *m = PyModule_Create(&moduledef);
    int hw = 0;
    if (m == NULL) return NULL;
    import_array();
    import_umath();
#ifdef HAVE_HW
    __builtin_cpu_init();
    hw = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    for (size_t k = 0; k < COUNT; k++) {
        funcs[k][0] = hw ? entries[k].hw : entries[k].sw;
        datas[k][0] = NULL;
        PyObject *u = PyUFunc_FromFuncAndData(funcs[k], datas[k], types, 1, entries[k].nin, 1, PyUFunc_None,
                                              entries[k].name, "kernels/optim.py's helper (runtime/optim_cpu.c).", 0);
        if (u == NULL || PyModule_AddObject(m, entries[k].name, u) < 0) {
            Py_XDECREF(u);
            Py_DECREF(m);
            return NULL;
        }
    }
    for (size_t k = 0; k < FCOUNT; k++) {
        ffuncs[k][0] = hw ? fused[k].hw : fused[k].sw;
        fdatas[k][0] = NULL;
        PyObject *u = PyUFunc_FromFuncAndData(ffuncs[k], fdatas[k], ftypes, 1, fused[k].nin, fused[k].nout,
                                              PyUFunc_None, fused[k].name, "optim_cpu.c's fused step.", 0);
        if (u == NULL || PyModule_AddObject(m, fused[k].name, u) < 0) {
            Py_XDECREF(u);
            Py_DECREF(m);
            return NULL;
        }
    }
    if (PyModule_AddIntConstant(m, "hardware", hw) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
