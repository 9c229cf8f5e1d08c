/* tgrad's cpu fused multiply-add: a numpy ufunc fma(x, y, z) = x y + z rounded once (float32, float64).
   Built on first use with the system C compiler through Triton's build cache (runtime/native.py).  The
   loops run the CPU's FMA instruction where it has one (checked at import), else C99's fmaf / fma, which
   are correctly rounded in glibc and musl (a float64 round-to-odd sum for fmaf). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/ndarraytypes.h>
#include <numpy/ufuncobject.h>
#include <math.h>

#define LOOP(NAME, T, FMA, ATTR)                                                                            \
    ATTR static void NAME(char **args, const npy_intp *dims, const npy_intp *steps, void *data) {          \
        npy_intp n = dims[0], sx = steps[0], sy = steps[1], sz = steps[2], so = steps[3];                  \
        char *x = args[0], *y = args[1], *z = args[2], *o = args[3];                                       \
        (void)data;                                                                                        \
        if (sx == sizeof(T) && sy == sizeof(T) && sz == sizeof(T) && so == sizeof(T)) {                    \
            const T *a = (const T *)x, *b = (const T *)y, *c = (const T *)z;                               \
            T *r = (T *)o;                                                                                 \
            for (npy_intp i = 0; i < n; i++) r[i] = FMA(a[i], b[i], c[i]);                                 \
        } else {                                                                                           \
            for (npy_intp i = 0; i < n; i++, x += sx, y += sy, z += sz, o += so)                           \
                *(T *)o = FMA(*(const T *)x, *(const T *)y, *(const T *)z);                                \
        }                                                                                                  \
    }

LOOP(fma_f32, float, fmaf, )
LOOP(fma_f64, double, fma, )
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define HAVE_HW 1
LOOP(fma_f32_hw, float, __builtin_fmaf, __attribute__((target("fma"))))
LOOP(fma_f64_hw, double, __builtin_fma, __attribute__((target("fma"))))
#endif

static PyUFuncGenericFunction funcs[2] = {fma_f32, fma_f64};
static void *data[2] = {NULL, NULL};
static char types[8] = {NPY_FLOAT, NPY_FLOAT, NPY_FLOAT, NPY_FLOAT, NPY_DOUBLE, NPY_DOUBLE, NPY_DOUBLE, NPY_DOUBLE};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "tgrad_fma", NULL, -1, NULL};

PyMODINIT_FUNC PyInit_tgrad_fma(void) {
    PyObject *m = PyModule_Create(&moduledef), *f;
    int hw = 0;
    if (m == NULL) return NULL;
    import_array();
    import_umath();
#ifdef HAVE_HW
    __builtin_cpu_init();
    if (__builtin_cpu_supports("fma")) {
        funcs[0] = fma_f32_hw;
        funcs[1] = fma_f64_hw;
        hw = 1;
    }
#endif
    f = PyUFunc_FromFuncAndData(funcs, data, types, 2, 3, 1, PyUFunc_None, "fma",
                                "fma(x, y, z): x * y + z with one rounding (float32, float64).", 0);
    if (f == NULL || PyModule_AddObject(m, "fma", f) < 0 || PyModule_AddIntConstant(m, "hardware", hw) < 0) {
        Py_XDECREF(f);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
