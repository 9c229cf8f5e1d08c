"""OpInfos for unary math (exp, logs, roots, trig, erf, abs, sign, rounding, predicates, nan_to_num, the gamma
family and erfinv; their references are independent numpy series: math.lgamma, shifted asymptotic sums, bisection)."""
import math

import numpy as np

import tgrad
from tgrad import dtypes as D

from ..opinfo import OpInfo, SampleInput
from .elementwise import FLOATS, INTS, SIGNED_INTS, _u, _unary_samples

_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


_lgamma = np.vectorize(math.lgamma, otypes=[np.float64])


def _lgamma_ref(x):
    """math.lgamma, with PyTorch's inf at the poles (0, -1, -2, ...)."""
    x = np.asarray(x, np.float64)
    pole = (x <= 0) & (x == np.floor(x))
    return np.where(pole, np.inf, _lgamma(np.where(pole, 1.0, x)))


def _hurwitz_ref(s, x):
    """zeta(s, x) = sum_{k<N} (x + k)^-s + N'^(1-s)/(s-1) + N'^-s/2 + Euler-Maclaurin terms, N' = x + N, N = 30."""
    x = np.asarray(x, np.float64)
    tot = sum((x + k) ** -s for k in range(30))
    w = x + 30
    tot = tot + w ** (1 - s) / (s - 1) + 0.5 * w ** -s
    for j, b in enumerate([1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730]):     # B_2(j+1)
        tot = tot + b / math.factorial(2 * j + 2) * _rising(s, 2 * j + 1) * w ** -(s + 2 * j + 1)
    return tot


def _rising(s, m):
    r = 1.0
    for i in range(m):
        r *= s + i
    return r


def _polygamma_ref(x, n):
    """(-1)^(n+1) n! zeta(n + 1, x) for n >= 1; digamma for n = 0 (from the same sums: psi = log w - 1/(2w) - ...)."""
    if n == 0:
        return _digamma_ref(x)
    return (-1.0) ** (n + 1) * math.factorial(n) * _hurwitz_ref(n + 1, x)


@np.errstate(all="ignore")      # (poles and infinities give their inf/NaN quietly)
def _digamma_ref(x):
    """psi(x) = psi(x + 30) - sum_{k<30} 1/(x + k), psi(w) = log w - 1/(2w) - sum B_2k / (2k w^2k); reflection below 0."""
    x = np.asarray(x, np.float64)
    neg = x < 0
    y = np.where(neg, 1 - x, x)
    w = y + 30
    r = np.log(w) - 0.5 / w - sum(b / (2 * k * w ** (2 * k)) for k, b in
                                  zip(range(1, 7), [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730]))
    r = r - 1 / y - sum(1 / (y + k) for k in range(1, 30))     # (1 / y: -0.0 keeps its sign)
    return np.where(neg, np.where(x == np.floor(x), np.nan, r - np.pi / np.tan(np.pi * x)), r)


def _erfinv_ref(y):
    """erf^-1 by 200 bisection steps on math.erf; +-inf at +-1, NaN outside [-1, 1]."""
    y = np.asarray(y, np.float64)
    lo, hi = np.full(y.shape, -7.0), np.full(y.shape, 7.0)
    for _ in range(200):
        mid = (lo + hi) / 2
        below = _erf(mid) < y
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    r = np.where(y == 0, y, (lo + hi) / 2)
    return np.where(np.abs(y) == 1, np.copysign(np.inf, y), np.where(np.abs(y) < 1, r, np.nan))


def _gamma_special_values(rng):
    """Poles (0, -0, negative integers), +-inf, NaN, tiny and huge arguments, negative non-integers."""
    v = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, -1.0, -2.0, -7.0, 1e-30, 1e-8, 0.5, 1.0, 2.0, 2.5, 12.5,
                  13.5, 150.5, 1e6, 1e30, -0.5, -1.5, -2.3, -33.7, -40.2])
    return [SampleInput(v, grad=False), SampleInput(v.reshape(2, 12), grad=False)]


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
    ("lgamma", lambda x: x.lgamma(), _lgamma_ref, _u(0.2, 6.0), FLOATS),
    ("digamma", lambda x: x.digamma(), _digamma_ref, _u(0.2, 6.0), FLOATS),
    ("erfinv", lambda x: x.erfinv(), _erfinv_ref, _u(-0.9, 0.9), FLOATS),
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
    OpInfo("polygamma", lambda x, n: tgrad.polygamma(n, x), _polygamma_ref,
           lambda rng: [SampleInput(a, n=n, grad=s in {(), (3, 4)}) for n in (0, 1, 2, 3, 6)
                        for s in [(), (3, 4), (33,)] for a in [rng.uniform(0.2 if n < 6 else 1.0, 6.0, s)]]
           + [SampleInput(np.array([-2.5, -1.3, -0.6, -0.3, 0.4, 4.5, 7.2]), n=n, grad=False) for n in (1, 2, 4)],
           dtypes=FLOATS),
    OpInfo("gamma_special", lambda x: tgrad.stack([x.lgamma(), x.digamma()]),
           lambda x: np.stack([_lgamma_ref(x), _digamma_ref(x)]), _gamma_special_values,
           dtypes=(D.float32, D.float64), grad=False, covers=("lgamma", "digamma")),
    OpInfo("erfinv_special", lambda x: x.erfinv(), _erfinv_ref,
           lambda rng: [SampleInput(np.array([np.nan, -1.0, 1.0, -0.0, 0.0, 1.5, -2.0, 0.7, -0.7, 0.71, 0.999,
                                              -0.99, 1e-10]), grad=False)],
           dtypes=(D.float32, D.float64), grad=False, covers=("erfinv",)),
    OpInfo("nan_to_num_f64max", lambda x: x.nan_to_num(), _nan_to_num_ref, _special_values, dtypes=(D.float64,),
           grad=False, covers=("nan_to_num",)),
]
