/* The optimizer element updates of kernels/optim.py as the cpu executor's ufuncs: the step-for-step C twins of
   its helpers _adam_m, _adam_v, _adam_p, _sgd_buf and _sgd_p (runtime/native.py's native_helper), the same
   float32 operations in the same order (an fmaf where the Triton code has tl.fma, plain operations elsewhere),
   so the same bits.  Built with -ffp-contract=off and without fast-math.  The structural constexprs (weight
   decay, lerp side, momentum kind ...) pick one ufunc each, passed to the loop as its data word.

   adam_m_WL(m, g, p, w1, wd):               lerp(m, g', w1) (L: the w < 0.5 side), g' = fma(wd, p, g) if W else g.
   adam_v_W(v, g, p, beta2, w2, wd):         fma(w2 g', g', v beta2).
   adam_p_D(p, m, v, step, bc2, eps, decay): p' + (-step m) / (sqrt(v) / bc2 + eps), p' = p decay if D else p.
   sgd_buf_WMF(buf, g, p, momentum, damp, wd): g' (F: first step), else buf momentum + g' (M = 1) or
                                             fma(damp, g', buf momentum) (M = 2).
   sgd_p_WMN(p, g, buf, neg_lr, momentum, wd): fma(neg_lr, u, p), u = g' (M = 0), buf, or fma(momentum, buf, g')
                                             (N: nesterov). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/ndarraytypes.h>
#include <numpy/ufuncobject.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#define MAX_IN 7

/* flag bits of the data word */
#define WD 1
#define LOW 2           /* adam_m: lerp's w < 0.5 side; sgd: FIRST */
#define DEC 4           /* adam_p: decoupled weight decay; sgd_p: nesterov */
#define MOM1 8
#define MOM2 16

#define ADAM_M(FMA)                                                                                         \
    float m = x[0], g = x[1], w = x[3];                                                                    \
    if (fl & WD) g = FMA(x[4], x[2], g);                                                                   \
    float d = g - m;                                                                                       \
    return (fl & LOW) ? FMA(w, d, m) : FMA(-d, 1.0f - w, g);
#define ADAM_V(FMA)                                                                                         \
    float g = x[1];                                                                                        \
    if (fl & WD) g = FMA(x[5], x[2], g);                                                                   \
    return FMA(x[4] * g, g, x[0] * x[3]);
#define ADAM_P(FMA)                                                                                         \
    float p = x[0];                                                                                        \
    if (fl & DEC) p = p * x[6];                                                                            \
    float denom = sqrtf(x[2]) / x[4] + x[5];                                                               \
    return p + (-x[3] * x[1]) / denom;
#define SGD_BUF(FMA)                                                                                        \
    float g = x[1];                                                                                        \
    if (fl & WD) g = FMA(x[5], x[2], g);                                                                   \
    if (fl & LOW) return g;                                                                                \
    if (fl & MOM1) return x[0] * x[3] + g;                                                                 \
    return FMA(x[4], g, x[0] * x[3]);
#define SGD_P(FMA)                                                                                          \
    float g = x[1];                                                                                        \
    if (fl & WD) g = FMA(x[5], x[0], g);                                                                   \
    if (fl & (MOM1 | MOM2)) g = (fl & DEC) ? FMA(x[4], x[2], g) : x[2];                                     \
    return FMA(x[3], g, x[0]);

/* an n-input float32 loop over any strides (hyper-parameters broadcast: stride 0) */
#define LOOP(NAME, NIN, BODY, FMA, ATTR)                                                                    \
    ATTR static inline float NAME##_one(const float *x, long fl) { BODY(FMA) }                             \
    ATTR static void NAME(char **args, const npy_intp *dims, const npy_intp *steps, void *data) {          \
        npy_intp n = dims[0];                                                                              \
        long fl = (long)(intptr_t)data;                                                                    \
        char *a[NIN + 1];                                                                                  \
        for (int k = 0; k <= NIN; k++) a[k] = args[k];                                                     \
        for (npy_intp i = 0; i < n; i++) {                                                                 \
            float x[MAX_IN];                                                                               \
            for (int k = 0; k < NIN; k++) { x[k] = *(const float *)a[k]; a[k] += steps[k]; }               \
            *(float *)a[NIN] = NAME##_one(x, fl);                                                          \
            a[NIN] += steps[NIN];                                                                          \
        }                                                                                                  \
    }

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define HAVE_HW 1
#define HW __attribute__((target("fma")))
#define BOTH(NAME, NIN, BODY) LOOP(NAME, NIN, BODY, fmaf, ) LOOP(NAME##_hw, NIN, BODY, __builtin_fmaf, HW)
#else
#define BOTH(NAME, NIN, BODY) LOOP(NAME, NIN, BODY, fmaf, )
#endif

BOTH(adam_m, 5, ADAM_M)
BOTH(adam_v, 6, ADAM_V)
BOTH(adam_p, 7, ADAM_P)
BOTH(sgd_buf, 6, SGD_BUF)
BOTH(sgd_p, 6, SGD_P)

static char types[MAX_IN + 1];

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "tgrad_optim_cpu", NULL, -1, NULL};

/* one ufunc per flag combination: its loop and data word live as long as the module (static tables) */
#define MAX_UFUNCS 64
static PyUFuncGenericFunction funcs[MAX_UFUNCS][1];
static void *datas[MAX_UFUNCS][1];
static int used;

static int add(PyObject *m, const char *name, PyUFuncGenericFunction f, int nin, long flags) {
    if (used == MAX_UFUNCS) return -1;
    funcs[used][0] = f;
    datas[used][0] = (void *)(intptr_t)flags;
    PyObject *u = PyUFunc_FromFuncAndData(funcs[used], datas[used], types, 1, nin, 1, PyUFunc_None, name,
                                          "kernels/optim.py's helper of this name (runtime/optim_cpu.c).", 0);
    used++;
    if (u == NULL) return -1;
    if (PyModule_AddObject(m, name, u) < 0) { Py_DECREF(u); return -1; }
    return 0;
}

PyMODINIT_FUNC PyInit_tgrad_optim_cpu(void) {
    PyObject *m = PyModule_Create(&moduledef);
    PyUFuncGenericFunction am = adam_m, av = adam_v, ap = adam_p, sb = sgd_buf, sp = sgd_p;
    int hw = 0, err = 0;
    char name[32];
    if (m == NULL) return NULL;
    import_array();
    import_umath();
    for (int k = 0; k <= MAX_IN; k++) types[k] = NPY_FLOAT;
#ifdef HAVE_HW
    __builtin_cpu_init();
    if (__builtin_cpu_supports("fma")) {
        am = adam_m_hw, av = adam_v_hw, ap = adam_p_hw, sb = sgd_buf_hw, sp = sgd_p_hw;
        hw = 1;
    }
#endif
    for (int w = 0; w < 2; w++) {
        for (int l = 0; l < 2; l++) {
            snprintf(name, sizeof name, "adam_m_%d%d", w, l);
            err |= add(m, name, am, 5, (w ? WD : 0) | (l ? LOW : 0));
        }
        snprintf(name, sizeof name, "adam_p_%d", w);                           /* w: decoupled decay */
        err |= add(m, name, ap, 7, w ? DEC : 0);
        snprintf(name, sizeof name, "adam_v_%d", w);
        err |= add(m, name, av, 6, w ? WD : 0);
        for (int mo = 0; mo < 3; mo++) {
            long mf = mo == 1 ? MOM1 : mo == 2 ? MOM2 : 0;
            for (int x = 0; x < 2; x++) {
                snprintf(name, sizeof name, "sgd_p_%d%d%d", w, mo, x);           /* x: nesterov */
                err |= add(m, name, sp, 6, (w ? WD : 0) | mf | (x ? DEC : 0));
                if (mo > 0) {
                    snprintf(name, sizeof name, "sgd_buf_%d%d%d", w, mo, x);     /* x: first step */
                    err |= add(m, name, sb, 6, (w ? WD : 0) | mf | (x ? LOW : 0));
                }
            }
        }
    }
    if (err || PyModule_AddIntConstant(m, "hardware", hw) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
