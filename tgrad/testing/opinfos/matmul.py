"""OpInfos for linear algebra: mm, bmm, mv, dot, addmm, baddbmm, outer, matmul, linear (+ activations)."""
import math

import numpy as np

import tgrad
from tgrad import dtypes as D
from tgrad.autograd import dispatch

from ..opinfo import OpInfo, SampleInput

FLOATS = (D.float32, D.float64, D.float16, D.bfloat16)
INTS = (D.int64, D.int32, D.int16, D.int8, D.uint8)


def _u(rng, *s):
    return rng.uniform(-1, 1, s)


def _pairs(pairs):
    """SampleInputs for products of shape pairs; gradients only on small ones."""
    def samples(rng):
        return [SampleInput(_u(rng, *a), _u(rng, *b), grad=0 < np.prod(a) + np.prod(b) <= 60 and 0 not in a + b) for a, b in pairs]
    return samples


MM = [((3, 4), (4, 5)), ((1, 1), (1, 1)), ((7, 33), (33, 1)), ((1, 7), (7, 33)), ((2, 0), (0, 3)),
      ((100, 70), (70, 90))]
BMM = [((2, 3, 4), (2, 4, 5)), ((1, 7, 33), (1, 33, 1)), ((3, 1, 1), (3, 1, 1)), ((2, 100, 70), (2, 70, 9)),
       ((0, 3, 4), (0, 4, 5)), ((2, 3, 0), (2, 0, 5))]
MV = [((3, 4), (4,)), ((1, 1), (1,)), ((33, 7), (7,)), ((100, 70), (70,)), ((0, 3), (3,)), ((3, 0), (0,))]
DOT = [((4,), (4,)), ((1,), (1,)), ((33,), (33,)), ((1000,), (1000,)), ((0,), (0,))]
MATMUL = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)), ((5, 2, 3), (3,)),
          ((3,), (5, 3, 4)), ((2, 3), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)), ((5, 2, 3), (1, 3, 4)),
          ((2, 1, 2, 3), (5, 3, 4)), ((2, 3, 2, 3), (3, 3, 2)), ((4, 7, 33), (33, 7)),
          ((0, 3), (3, 4)), ((2, 0), (0, 4)), ((0, 2, 3), (3,)), ((4, 50, 60), (60, 30))]
OUTER = [((3,), (4,)), ((1,), (7,)), ((33,), (1,)), ((0,), (3,)), ((1000,), (3,))]


def _int_pairs(pairs):
    """Products of integers in [0, 128) (every dtype holds them): int8/int16/uint8 results wrap."""
    return lambda rng: [SampleInput(rng.integers(0, 128, a), rng.integers(0, 128, b)) for a, b in pairs]


def _int_addmm_samples(rng):
    def i(*s):
        return rng.integers(0, 128, s)
    return [SampleInput(i(5), i(3, 4), i(4, 5)), SampleInput(i(3, 5), i(3, 4), i(4, 5), beta=2, alpha=3),
            SampleInput(i(1, 1), i(7, 33), i(33, 1), beta=0), SampleInput(i(3, 5), i(3, 0), i(0, 5), beta=-1)]


def _int_baddbmm_samples(rng):
    def i(*s):
        return rng.integers(0, 128, s)
    return [SampleInput(i(2, 3, 5), i(2, 3, 4), i(2, 4, 5)),
            SampleInput(i(5), i(2, 3, 4), i(2, 4, 5), beta=-1, alpha=2),
            SampleInput(i(1, 7, 1), i(3, 7, 33), i(3, 33, 1))]


def _int_linear_samples(rng):
    def i(*s):
        return rng.integers(0, 128, s)
    return [SampleInput(i(4, 3), i(5, 3), i(5)), SampleInput(i(3), i(2, 3), None),
            SampleInput(i(2, 3, 4), i(3, 4), i(3))]


def _addmm_samples(rng):
    return [SampleInput(_u(rng, 5), _u(rng, 3, 4), _u(rng, 4, 5)),
            SampleInput(_u(rng, 3, 5), _u(rng, 3, 4), _u(rng, 4, 5), beta=0.5, alpha=2.0),
            SampleInput(_u(rng, 1, 1), _u(rng, 7, 33), _u(rng, 33, 1), beta=0.0, grad=False),
            SampleInput(_u(rng, 90), _u(rng, 100, 70), _u(rng, 70, 90), grad=False),
            SampleInput(_u(rng, 3, 5), _u(rng, 3, 0), _u(rng, 0, 5), beta=0.5, grad=False),
            SampleInput(_u(rng, 5), _u(rng, 0, 4), _u(rng, 4, 5), grad=False)]


def _baddbmm_samples(rng):
    return [SampleInput(_u(rng, 2, 3, 5), _u(rng, 2, 3, 4), _u(rng, 2, 4, 5)),
            SampleInput(_u(rng, 5), _u(rng, 2, 3, 4), _u(rng, 2, 4, 5), beta=-1.0, alpha=0.5),
            SampleInput(_u(rng, 1, 7, 1), _u(rng, 3, 7, 33), _u(rng, 3, 33, 1), grad=False),
            SampleInput(_u(rng, 2, 3, 5), _u(rng, 2, 3, 0), _u(rng, 2, 0, 5), beta=2.0, grad=False),
            SampleInput(_u(rng, 40, 30), _u(rng, 2, 40, 20), _u(rng, 2, 20, 30), grad=False)]


def _linear_samples(rng):
    """(input, weight, bias) with 2-D, 1-D and 3-D input; bias None too. Values keep z away from relu's kink."""
    return [SampleInput(_u(rng, 4, 3), _u(rng, 5, 3), _u(rng, 5)),
            SampleInput(_u(rng, 3), _u(rng, 2, 3), _u(rng, 2)),
            SampleInput(_u(rng, 2, 3, 4), _u(rng, 3, 4), None),
            SampleInput(_u(rng, 7, 33), _u(rng, 1, 33), _u(rng, 1), grad=False),
            SampleInput(_u(rng, 100, 70), _u(rng, 90, 70), _u(rng, 90), grad=False)]


_erf = np.vectorize(math.erf)
ACT_REF = {None: lambda z: z, "relu": lambda z: np.maximum(z, 0), "gelu": lambda z: 0.5 * z * (1 + _erf(z / math.sqrt(2))),
           "tanh": np.tanh, "sigmoid": lambda z: 1 / (1 + np.exp(-z))}


def _linear_ref(act):
    def ref(x, w, b):
        z = x @ w.T + (0 if b is None else b)
        return ACT_REF[act](z)
    return ref


def _linear_op(act):
    return lambda x, w, b: dispatch.call("linear", x, w, b, activation=act)


def _phi(z):
    return np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)


# f_1 = act' in terms of v (y for relu/tanh/sigmoid, z for gelu).
DACT_REF = {"relu": lambda v: (v > 0).astype(np.float64),
            "gelu": lambda z: 0.5 * (1 + _erf(z / math.sqrt(2))) + z * _phi(z),
            "tanh": lambda y: 1 - y * y, "sigmoid": lambda y: y * (1 - y)}


def _act_grad_samples(rng):
    v = rng.uniform(0.2, 1.0, (3, 4)) * rng.choice([-1, 1], (3, 4))
    return [SampleInput(_u(rng, 3, 4), v), SampleInput(_u(rng, 7), rng.uniform(0.2, 1, (7,)), grad=False)]


OPS = [
    OpInfo("mm", lambda a, b: a.mm(b), lambda a, b: a @ b, _pairs(MM), dtypes=FLOATS),
    OpInfo("mm_transposed", lambda a, b: a.t().mm(b.t()), lambda a, b: a.T @ b.T,
           _pairs([((4, 3), (5, 4)), ((33, 7), (1, 33)), ((0, 2), (3, 0)), ((4, 0), (5, 4)), ((70, 100), (90, 70))]),
           dtypes=FLOATS, covers=("mm", "t")),
    OpInfo("bmm", lambda a, b: a.bmm(b), lambda a, b: a @ b, _pairs(BMM), dtypes=FLOATS),
    OpInfo("bmm_transposed", lambda a, b: a.transpose(1, 2).bmm(b.transpose(0, 2)),
           lambda a, b: a.transpose(0, 2, 1) @ b.transpose(2, 1, 0), _pairs([((2, 2, 3), (3, 2, 2)), ((2, 4, 3), (5, 4, 2)), ((0, 4, 3), (5, 4, 0)),
                                                                           ((2, 0, 3), (5, 0, 2)),
                                                                           ((2, 70, 100), (9, 70, 2))]),
           dtypes=FLOATS, covers=("bmm", "transpose")),
    OpInfo("mv", lambda a, b: a.mv(b), lambda a, b: a @ b, _pairs(MV), dtypes=FLOATS),
    OpInfo("dot", lambda a, b: a.dot(b), lambda a, b: np.dot(a, b), _pairs(DOT), dtypes=FLOATS),
    OpInfo("vdot", lambda a, b: tgrad.vdot(a, b), np.vdot, _pairs(DOT), dtypes=FLOATS),
    OpInfo("inner", lambda a, b: tgrad.inner(a, b), np.inner,
           _pairs([((3,), (3,)), ((2, 3), (4, 3)), ((2, 1, 3), (3,)), ((4,), (2, 3, 4)), ((0, 3), (2, 3))]),
           dtypes=FLOATS, covers=("mm", "view", "t")),
    OpInfo("linear_1d_weight", lambda x, w, b: tgrad.nn.functional.linear(x, w, b),
           lambda x, w, b: x @ w + (0 if b is None else b),
           lambda rng: [SampleInput(_u(rng, 3, 4), _u(rng, 4), None), SampleInput(_u(rng, 2, 3, 4), _u(rng, 4),
                                                                                    _u(rng, 1)),
                        SampleInput(_u(rng, 4), _u(rng, 4), _u(rng))],
           dtypes=FLOATS, diff_args=(0, 1, 2), covers=("mv", "dot", "add")),
    OpInfo("addmm", lambda c, a, b, **k: tgrad.addmm(c, a, b, **k),
           lambda c, a, b, beta=1, alpha=1: (beta * c if beta else 0) + alpha * (a @ b), _addmm_samples,
           dtypes=FLOATS),
    OpInfo("baddbmm", lambda c, a, b, **k: tgrad.baddbmm(c, a, b, **k),
           lambda c, a, b, beta=1, alpha=1: beta * c + alpha * (a @ b), _baddbmm_samples, dtypes=FLOATS),
    OpInfo("outer", lambda a, b: tgrad.outer(a, b), np.outer, _pairs(OUTER), dtypes=FLOATS, covers=("mul",)),
    OpInfo("matmul", lambda a, b: a @ b, np.matmul, _pairs(MATMUL), dtypes=FLOATS,
           covers=("dot", "mv", "mm", "bmm", "unsafe_view", "expand", "view")),
] + [
    # integer products (no gradients): exact int64 sums, stored wrapped to the dtype (the tests' int reference)
    OpInfo("mm_int", lambda a, b: a.mm(b), lambda a, b: a @ b, _int_pairs(MM[:5] + [((33, 70), (70, 9))]),
           dtypes=INTS, grad=False, covers=("mm",)),
    OpInfo("bmm_int", lambda a, b: a.bmm(b), lambda a, b: a @ b, _int_pairs(BMM[:5]), dtypes=INTS, grad=False,
           covers=("bmm",)),
    OpInfo("mv_int", lambda a, b: a.mv(b), lambda a, b: a @ b, _int_pairs(MV), dtypes=INTS, grad=False,
           covers=("mv",)),
    OpInfo("dot_int", lambda a, b: a.dot(b), lambda a, b: np.dot(a, b), _int_pairs(DOT), dtypes=INTS, grad=False,
           covers=("dot",)),
    OpInfo("addmm_int", lambda c, a, b, **k: tgrad.addmm(c, a, b, **k),
           lambda c, a, b, beta=1, alpha=1: (beta * c if beta else 0) + alpha * (a @ b), _int_addmm_samples,
           dtypes=INTS, grad=False, covers=("addmm",)),
    OpInfo("baddbmm_int", lambda c, a, b, **k: tgrad.baddbmm(c, a, b, **k),
           lambda c, a, b, beta=1, alpha=1: beta * c + alpha * (a @ b), _int_baddbmm_samples, dtypes=INTS,
           grad=False, covers=("baddbmm",)),
    OpInfo("outer_int", lambda a, b: tgrad.outer(a, b), np.outer, _int_pairs(OUTER), dtypes=INTS + (D.bool_,),
           grad=False, covers=("mul",)),
    OpInfo("matmul_int", lambda a, b: a @ b, np.matmul, _int_pairs(MATMUL[:-1]), dtypes=INTS, grad=False,
           covers=("dot", "mv", "mm", "bmm", "unsafe_view", "expand", "view")),
    OpInfo("linear_int", lambda x, w, b: tgrad.nn.functional.linear(x, w, b), _linear_ref(None),
           _int_linear_samples, dtypes=INTS, grad=False, covers=("linear",)),
] + [
    OpInfo("linear" if act is None else f"linear_{act}", _linear_op(act), _linear_ref(act), _linear_samples,
           dtypes=FLOATS, diff_args=(0, 1, 2),
           covers=("linear", "linear_grad_input", "linear_grad_weight", "act_grad"))
    for act in (None, "relu", "gelu", "tanh", "sigmoid")
] + [
    OpInfo(f"act_grad_{act}", (lambda a: lambda g, v: dispatch.call("act_grad", g, v, activation=a, order=1))(act),
           (lambda a: lambda g, v: g * DACT_REF[a](v))(act), _act_grad_samples, dtypes=(D.float32, D.float64),
           covers=("act_grad",))
    for act in ("relu", "gelu", "tanh", "sigmoid")
]
