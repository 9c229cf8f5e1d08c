/* The cpu executor's float32 ufuncs for activation helpers: the step-for-step C twins of kernels/activation.py's
   gelu_tanh_fn and gelu_tanh_backward_fn (the tanh as _lang.py's tanh_epilogue_h), the same float32 operations
   in the same order; the exp is numpy's own float32 exp loop (the one np.exp, and so the interpreter's tl.exp,
   runs), called on a chunk at a time.  So the same bits as the Triton bodies run op by op (runtime/native.py).
   Built with -ffp-contract=off (no a*b+c is fused) and without fast-math.

   gelu_tanh_f32(x):             0.5 x (1 + tanh(k (x + 0.044715 x^3))), k = sqrt(2/pi).
   gelu_tanh_backward_f32(g, x): g (0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 0.044715 x^2)), t = tanh(k (x + ...)).
   lstm_gate_f32(a, scale, mul, add): kernels/rnn.py's _gate_act, (1 / (1 + exp(a scale))) mul + add (broadcasting).
   lstm_tanh_f32(x):             kernels/rnn.py's _tanh_s, 2 / (1 + exp(-2 x)) - 1.
   lstm_dc_f32(dc, dh, o, tc):   kernels/rnn.py's _cell_grad, dc + dh o (1 - tc tc).
   lstm_gate_grad_f32(x, a, one): kernels/rnn.py's _gate_grad, x ((a + one) (1 - a)) (broadcasting).
   gelu_f32(x), gelu_backward_f32(g, x): gelu_fn's 0.5 x (1 + erf(x / sqrt 2)) and gelu_backward_fn's
                                 g (Phi(x) + x phi(x)); the erf as the interpreter's tl.math.erf (Python's
                                 math.erf, which is the C library's erf, of the float32 argument in double,
                                 rounded to float32). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/ndarraytypes.h>
#include <numpy/ufuncobject.h>
#include <math.h>

#pragma GCC optimize("no-trapping-math")   /* which floating-point flags are raised may change, never a result */

/* constants as Python floats (double) rounded to float32, as Triton's scalars are */
#define F(c) ((float)(double)(c))
#define CHUNK 256

static PyUFuncGenericFunction np_exp;      /* numpy's float32 exp loop */
static void *np_exp_data;

/* e[i] = exp(a[i]) by numpy's loop, n <= CHUNK, contiguous */
static inline void exp_chunk(float *a, float *e, npy_intp n) {
    char *args[2] = {(char *)a, (char *)e};
    npy_intp dims[1] = {n}, steps[2] = {sizeof(float), sizeof(float)};
    np_exp(args, dims, steps, np_exp_data);
}

/* u = k (x + ((0.044715 x) x) x); a = -2 |u| (tanh_epilogue_h's exp argument) */
static inline float gelu_u(float x) {
    float c = F(0.044715) * x;
    c = c * x;
    c = c * x;
    return F(0.79788456080286535588) * (x + c);
}

/* tanh_epilogue_h: (1 - e) / (1 + e), e = exp(-2|u|), negated for u < 0 (NaN u too, as tl.where(u >= 0, t, -t)) */
static inline float tanh_epi(float u, float e) {
    float t = (1.0f - e) / (1.0f + e);
    return u >= 0.0f ? t : -t;
}

/* The loops' bodies take their strides as arguments: called with constant strides for contiguous operands, the
   compiler vectorizes them (the same IEEE operations lane by lane; no-trapping-math above lets it if-convert the
   selects). */
static inline void gelu_tanh_body(char **args, npy_intp n, npy_intp sx, npy_intp so) {
    float a[CHUNK], e[CHUNK], u[CHUNK];
    for (npy_intp i0 = 0; i0 < n; i0 += CHUNK) {
        npy_intp m = n - i0 < CHUNK ? n - i0 : CHUNK;
        for (npy_intp i = 0; i < m; i++) {
            float x = *(const float *)(args[0] + (i0 + i) * sx);
            u[i] = gelu_u(x);
            a[i] = -2.0f * fabsf(u[i]);
        }
        exp_chunk(a, e, m);
        for (npy_intp i = 0; i < m; i++) {
            float x = *(const float *)(args[0] + (i0 + i) * sx);
            *(float *)(args[1] + (i0 + i) * so) = (0.5f * x) * (1.0f + tanh_epi(u[i], e[i]));
        }
    }
}

static void gelu_tanh_loop(char **args, const npy_intp *dims, const npy_intp *steps, void *data) {
    (void)data;
    if (steps[0] == 4 && steps[1] == 4)
        gelu_tanh_body(args, dims[0], 4, 4);
    else
        gelu_tanh_body(args, dims[0], steps[0], steps[1]);
}

static inline void gelu_tanh_backward_body(char **args, npy_intp n, npy_intp sg, npy_intp sx, npy_intp so) {
    float a[CHUNK], e[CHUNK], u[CHUNK];
    for (npy_intp i0 = 0; i0 < n; i0 += CHUNK) {
        npy_intp m = n - i0 < CHUNK ? n - i0 : CHUNK;
        for (npy_intp i = 0; i < m; i++) {
            float x = *(const float *)(args[1] + (i0 + i) * sx);
            u[i] = gelu_u(x);
            a[i] = -2.0f * fabsf(u[i]);
        }
        exp_chunk(a, e, m);
        for (npy_intp i = 0; i < m; i++) {
            float g = *(const float *)(args[0] + (i0 + i) * sg), x = *(const float *)(args[1] + (i0 + i) * sx);
            float t = tanh_epi(u[i], e[i]);
            float du = F(3.0 * 0.044715) * x;
            du = F(0.79788456080286535588) * (1.0f + du * x);
            float b = ((0.5f * x) * (1.0f - t * t)) * du;
            *(float *)(args[2] + (i0 + i) * so) = g * (0.5f * (1.0f + t) + b);
        }
    }
}

static void gelu_tanh_backward_loop(char **args, const npy_intp *dims, const npy_intp *steps, void *data) {
    (void)data;
    if (steps[0] == 4 && steps[1] == 4 && steps[2] == 4)
        gelu_tanh_backward_body(args, dims[0], 4, 4, 4);
    else
        gelu_tanh_backward_body(args, dims[0], steps[0], steps[1], steps[2]);
}

#define AT(k, i) (*(const float *)(args[k] + (i0 + (i)) * steps[k]))
static void lstm_gate_loop(char **args, const npy_intp *dims, const npy_intp *steps, void *data) {
    npy_intp n = dims[0];
    float a[CHUNK], e[CHUNK];
    (void)data;
    for (npy_intp i0 = 0; i0 < n; i0 += CHUNK) {
        npy_intp m = n - i0 < CHUNK ? n - i0 : CHUNK;
        for (npy_intp i = 0; i < m; i++) a[i] = AT(0, i) * AT(1, i);
        exp_chunk(a, e, m);
        for (npy_intp i = 0; i < m; i++)
            *(float *)(args[4] + (i0 + i) * steps[4]) = (1.0f / (1.0f + e[i])) * AT(2, i) + AT(3, i);
    }
}

static void lstm_tanh_loop(char **args, const npy_intp *dims, const npy_intp *steps, void *data) {
    npy_intp n = dims[0];
    float a[CHUNK], e[CHUNK];
    (void)data;
    for (npy_intp i0 = 0; i0 < n; i0 += CHUNK) {
        npy_intp m = n - i0 < CHUNK ? n - i0 : CHUNK;
        for (npy_intp i = 0; i < m; i++) a[i] = -2.0f * AT(0, i);
        exp_chunk(a, e, m);
        for (npy_intp i = 0; i < m; i++) *(float *)(args[1] + (i0 + i) * steps[1]) = 2.0f / (1.0f + e[i]) - 1.0f;
    }
}
static void lstm_dc_loop(char **args, const npy_intp *dims, const npy_intp *steps, void *data) {
    npy_intp i0 = 0;
    (void)data;
    for (npy_intp i = 0; i < dims[0]; i++) {
        float tc = AT(3, i);
        *(float *)(args[4] + i * steps[4]) = AT(0, i) + (AT(1, i) * AT(2, i)) * (1.0f - tc * tc);
    }
}

static void lstm_gate_grad_loop(char **args, const npy_intp *dims, const npy_intp *steps, void *data) {
    npy_intp i0 = 0;
    (void)data;
    for (npy_intp i = 0; i < dims[0]; i++) {
        float a = AT(1, i);
        *(float *)(args[3] + i * steps[3]) = AT(0, i) * ((a + AT(2, i)) * (1.0f - a));
    }
}
#undef AT

/* gelu_fn's Phi(x) part: 1 + erf(x / sqrt 2) rounded as tl.math.erf's float32 result */
static inline float one_plus_erf(float x) {
    return 1.0f + (float)erf((double)(x * F(0.70710678118654752440)));
}

static void gelu_loop(char **args, const npy_intp *dims, const npy_intp *steps, void *data) {
    npy_intp n = dims[0], sx = steps[0], so = steps[1];
    (void)data;
    for (npy_intp i = 0; i < n; i++) {
        float x = *(const float *)(args[0] + i * sx);
        *(float *)(args[1] + i * so) = (0.5f * x) * one_plus_erf(x);
    }
}

static void gelu_backward_loop(char **args, const npy_intp *dims, const npy_intp *steps, void *data) {
    npy_intp n = dims[0], sg = steps[0], sx = steps[1], so = steps[2];
    float a[CHUNK], e[CHUNK];
    (void)data;
    for (npy_intp i0 = 0; i0 < n; i0 += CHUNK) {
        npy_intp m = n - i0 < CHUNK ? n - i0 : CHUNK;
        for (npy_intp i = 0; i < m; i++) {
            float x = *(const float *)(args[1] + (i0 + i) * sx);
            a[i] = (-0.5f * x) * x;
        }
        exp_chunk(a, e, m);
        for (npy_intp i = 0; i < m; i++) {
            float g = *(const float *)(args[0] + (i0 + i) * sg), x = *(const float *)(args[1] + (i0 + i) * sx);
            float cdf = 0.5f * one_plus_erf(x), pdf = e[i] * F(0.39894228040143267794);
            *(float *)(args[2] + (i0 + i) * so) = g * (cdf + x * pdf);
        }
    }
}

static PyUFuncGenericFunction erf_fwd_funcs[1] = {gelu_loop}, erf_bwd_funcs[1] = {gelu_backward_loop};
static PyUFuncGenericFunction fwd_funcs[1] = {gelu_tanh_loop}, bwd_funcs[1] = {gelu_tanh_backward_loop};
static PyUFuncGenericFunction gate_funcs[1] = {lstm_gate_loop}, tanh_funcs[1] = {lstm_tanh_loop};
static PyUFuncGenericFunction dc_funcs[1] = {lstm_dc_loop}, gate_grad_funcs[1] = {lstm_gate_grad_loop};
static char types4[4] = {NPY_FLOAT, NPY_FLOAT, NPY_FLOAT, NPY_FLOAT};
static char types5[5] = {NPY_FLOAT, NPY_FLOAT, NPY_FLOAT, NPY_FLOAT, NPY_FLOAT};
static void *data[1] = {NULL};
static char types2[2] = {NPY_FLOAT, NPY_FLOAT}, types3[3] = {NPY_FLOAT, NPY_FLOAT, NPY_FLOAT};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "tgrad_nn_cpu", NULL, -1, NULL};

static int add(PyObject *m, const char *name, PyObject *f) {
    if (f == NULL) return -1;
    if (PyModule_AddObject(m, name, f) < 0) { Py_DECREF(f); return -1; }
    return 0;
}

/* numpy's float32 -> float32 loop of np.exp (kept alive by numpy's module) */
static int find_exp(void) {
    PyObject *np = PyImport_ImportModule("numpy"), *f;
    if (np == NULL) return -1;
    f = PyObject_GetAttrString(np, "exp");
    Py_DECREF(np);
    if (f == NULL) return -1;
    if (PyObject_TypeCheck(f, &PyUFunc_Type)) {
        PyUFuncObject *u = (PyUFuncObject *)f;
        for (int i = 0; i < u->ntypes; i++)
            if (u->types[2 * i] == NPY_FLOAT && u->types[2 * i + 1] == NPY_FLOAT && u->functions[i] != NULL) {
                np_exp = u->functions[i];
                np_exp_data = u->data == NULL ? NULL : u->data[i];
                break;
            }
    }
    Py_DECREF(f);
    if (np_exp == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "numpy.exp has no float32 loop");
        return -1;
    }
    return 0;
}

PyMODINIT_FUNC PyInit_tgrad_nn_cpu(void) {
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL) return NULL;
    import_array();
    import_umath();
    if (find_exp() ||
        add(m, "gelu_tanh_f32", PyUFunc_FromFuncAndData(fwd_funcs, data, types2, 1, 1, 1, PyUFunc_None,
                                                        "gelu_tanh_f32", "kernels/activation.py's gelu_tanh_fn.", 0)) ||
        add(m, "gelu_tanh_backward_f32", PyUFunc_FromFuncAndData(bwd_funcs, data, types3, 1, 2, 1, PyUFunc_None,
                                                                 "gelu_tanh_backward_f32",
                                                                 "kernels/activation.py's gelu_tanh_backward_fn.",
                                                                 0)) ||
        add(m, "lstm_gate_f32", PyUFunc_FromFuncAndData(gate_funcs, data, types5, 1, 4, 1, PyUFunc_None, "lstm_gate_f32",
                                                        "kernels/rnn.py's _gate_act.", 0)) ||
        add(m, "lstm_tanh_f32", PyUFunc_FromFuncAndData(tanh_funcs, data, types2, 1, 1, 1, PyUFunc_None, "lstm_tanh_f32",
                                                        "kernels/rnn.py's _tanh_s.", 0)) ||
        add(m, "lstm_dc_f32", PyUFunc_FromFuncAndData(dc_funcs, data, types5, 1, 4, 1, PyUFunc_None, "lstm_dc_f32",
                                                      "kernels/rnn.py's _cell_grad.", 0)) ||
        add(m, "lstm_gate_grad_f32", PyUFunc_FromFuncAndData(gate_grad_funcs, data, types4, 1, 3, 1, PyUFunc_None,
                                                             "lstm_gate_grad_f32", "kernels/rnn.py's _gate_grad.", 0)) ||
        add(m, "gelu_f32", PyUFunc_FromFuncAndData(erf_fwd_funcs, data, types2, 1, 1, 1, PyUFunc_None, "gelu_f32",
                                                   "kernels/activation.py's gelu_fn.", 0)) ||
        add(m, "gelu_backward_f32", PyUFunc_FromFuncAndData(erf_bwd_funcs, data, types3, 1, 2, 1, PyUFunc_None,
                                                            "gelu_backward_f32", "kernels/activation.py's gelu_backward_fn.",
                                                            0))) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
