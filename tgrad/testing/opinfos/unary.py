"""OpInfos for unary math (exp, logs, roots, trig, erf, abs, sign, rounding, predicates, nan_to_num)."""
import math

import numpy as np

import tgrad
from tgrad import dtypes as D

from ..opinfo import OpInfo, SampleInput
from .elementwise import FLOATS, INTS, SIGNED_INTS, _u, _unary_samples

_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def _np_round(x):
    return np.round(x)


def _special_values(rng):
    v = np.array([np.nan, np.inf, -np.inf, 0.0, -1.5, 2.0, 1e30])
    return [SampleInput(v, grad=False), SampleInput(v.reshape(1, 7), grad=False), SampleInput(v[0], grad=False),
            SampleInput(v[:0], grad=False), SampleInput(np.tile(v, 150).reshape(3, 350), grad=False)]


def _trig_special_values(rng):
    """Edges of the inverse and hyperbolic functions: +-1, +-0, tails, overflow thresholds, inf, NaN."""
    v = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1.5, -1.5, 1e-8, -1e-8, 0.999, -0.999, 5.0,
                  -5.0, 20.0, 1e10, -1e10, 1e30])
    return [SampleInput(v, grad=False), SampleInput(v.reshape(1, -1), grad=False)]


def _nan_to_num_ref(x):
    big = np.finfo(np.float64).max
    return np.nan_to_num(x, nan=0.0, posinf=big, neginf=-big)


UNARY = [
    ("abs", lambda x: x.abs(), np.abs, _u(away=1e-3), FLOATS + SIGNED_INTS),
    ("sign", lambda x: x.sign(), np.sign, _u(away=1e-3), FLOATS + SIGNED_INTS),
    ("exp2", lambda x: x.exp2(), np.exp2, _u(), FLOATS),
    ("log", lambda x: x.log(), np.log, _u(0.1, 3.0), FLOATS),
    ("log2", lambda x: x.log2(), np.log2, _u(0.1, 3.0), FLOATS),
    ("log10", lambda x: tgrad.log10(x), np.log10, _u(0.1, 3.0), FLOATS),
    ("log1p", lambda x: x.log1p(), np.log1p, _u(-0.9, 3.0), FLOATS),
    ("expm1", lambda x: x.expm1(), np.expm1, _u(), FLOATS),
    ("sqrt", lambda x: x.sqrt(), np.sqrt, _u(0.1, 3.0), FLOATS),
    ("rsqrt", lambda x: x.rsqrt(), lambda x: 1 / np.sqrt(x), _u(0.1, 3.0), FLOATS),
    ("reciprocal", lambda x: x.reciprocal(), lambda x: 1 / x, _u(away=0.2), FLOATS),
    ("sin", lambda x: x.sin(), np.sin, _u(-4, 4), FLOATS),
    ("cos", lambda x: x.cos(), np.cos, _u(-4, 4), FLOATS),
    ("tan", lambda x: x.tan(), np.tan, _u(-1.2, 1.2), FLOATS),
    ("erf", lambda x: x.erf(), _erf, _u(), FLOATS),
    ("asin", lambda x: x.asin(), np.arcsin, _u(-0.95, 0.95), FLOATS),
    ("acos", lambda x: x.acos(), np.arccos, _u(-0.95, 0.95), FLOATS),
    ("atan", lambda x: x.atan(), np.arctan, _u(-4, 4), FLOATS),
    ("sinh", lambda x: x.sinh(), np.sinh, _u(-3, 3), FLOATS),
    ("cosh", lambda x: x.cosh(), np.cosh, _u(-3, 3), FLOATS),
    ("asinh", lambda x: x.asinh(), np.arcsinh, _u(-4, 4), FLOATS),
    ("acosh", lambda x: x.acosh(), np.arccosh, _u(1.1, 4.0), FLOATS),
    ("atanh", lambda x: x.atanh(), np.arctanh, _u(-0.9, 0.9), FLOATS),
    ("erfc", lambda x: x.erfc(), _erfc, _u(-3, 3), FLOATS),
    ("floor", lambda x: x.floor(), np.floor, _u(-4, 4), FLOATS + INTS),
    ("ceil", lambda x: x.ceil(), np.ceil, _u(-4, 4), FLOATS + INTS),
    ("round", lambda x: x.round(), _np_round, _u(-4, 4), FLOATS + INTS),
    ("round_decimals", lambda x: x.round(decimals=1), lambda x: np.round(x, 1), _u(-4, 4), FLOATS),
    ("trunc", lambda x: x.trunc(), np.trunc, _u(-4, 4), FLOATS + INTS),
    ("frac", lambda x: x.frac(), lambda x: x - np.trunc(x), _u(-4, 4), FLOATS),
    ("nan_to_num", lambda x: x.nan_to_num(), lambda x: x, _u(), FLOATS),
]
OPS = [OpInfo(name, op, ref, samples, dtypes=dts) for name, op, ref, samples, dts in UNARY] + [
    OpInfo("exp", lambda x: x.exp(), np.exp, _unary_samples(), dtypes=FLOATS),
    OpInfo("isnan", lambda x: x.isnan(), np.isnan, _special_values, dtypes=FLOATS, grad=False),
    OpInfo("isinf", lambda x: x.isinf(), np.isinf, _special_values, dtypes=FLOATS, grad=False),
    OpInfo("isfinite", lambda x: x.isfinite(), np.isfinite, _special_values, dtypes=FLOATS + (D.int64,),
           grad=False),
    OpInfo("nan_to_num_special", lambda x: x.nan_to_num(nan=1.0, posinf=2.0, neginf=-3.0),
           lambda x: np.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-3.0), _special_values, dtypes=FLOATS,
           grad=False, covers=("nan_to_num",)),
    OpInfo("inverse_trig_special", lambda x: tgrad.stack([x.asin(), x.acos(), x.atan(), x.sinh(), x.cosh(),
                                                          x.asinh(), x.acosh(), x.atanh(), x.erfc()]),
           lambda x: np.stack([np.arcsin(x), np.arccos(x), np.arctan(x), np.sinh(x), np.cosh(x), np.arcsinh(x),
                               np.arccosh(x), np.arctanh(x), _erfc(x)]),
           _trig_special_values, dtypes=(D.float32, D.float64), grad=False,
           covers=("asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erfc")),
    OpInfo("nan_to_num_f64max", lambda x: x.nan_to_num(), _nan_to_num_ref, _special_values, dtypes=(D.float64,),
           grad=False, covers=("nan_to_num",)),
]
