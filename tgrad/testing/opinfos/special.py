"""OpInfos for the special family (i0, i0e, i1, i1e, igamma, igammac, frexp, nextafter).  References are
independent numpy: np.i0, the power series of I1 (all terms positive), the power series / Legendre continued
fraction of the incomplete gamma function, np.frexp and np.nextafter."""
import math

import numpy as np

import tgrad
from tgrad import dtypes as D

from ..opinfo import OpInfo, SampleInput
from .elementwise import FLOATS, _u

_lgamma = np.vectorize(math.lgamma, otypes=[np.float64])


def _i1_ref(x):
    """I1(x) = sum_k (x/2)^(2k+1) / (k! (k+1)!) (80 terms: exact in float64 for |x| < 30)."""
    x = np.asarray(x, np.float64)
    h = x / 2
    term, tot = h, h.copy()
    for k in range(1, 80):
        term = term * h * h / (k * (k + 1))
        tot = tot + term
    return tot


def _igamma_ref(a, x, upper=False):
    """P(a, x) by the power series for x < a + 1, else 1 - Q with Q by the Legendre continued fraction
    (modified Lentz, 300 steps), both times x^a e^-x / Gamma(a)."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    pre = np.exp(a * np.log(x) - x - _lgamma(a))
    term = 1.0 / a
    tot = term.copy()
    for n in range(1, 400):
        term = term * x / (a + n)
        tot = tot + term
    p_series = pre * tot
    b = x + 1 - a
    c = np.full(b.shape, 1e300)
    d = 1 / b
    h = d.copy()
    for i in range(1, 300):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        c = b + an / c
        d = 1 / d
        h = h * d * c
    q_cf = pre * h
    small = x < a + 1
    if upper:
        return np.where(small, 1 - p_series, q_cf)
    return np.where(small, p_series, 1 - q_cf)


def _ax_samples(rng):
    """(a, x) pairs with a in [0.3, 6] and x on both sides of a + 1; broadcasting; a grad-free edge set."""
    out = [SampleInput(rng.uniform(0.3, 6.0, s), rng.uniform(0.1, 9.0, s), grad=s in {(), (7,), (3, 4)})
           for s in [(), (7,), (3, 4), (33,)]]
    out.append(SampleInput(rng.uniform(0.3, 6.0, (3, 1)), rng.uniform(0.1, 9.0, (1, 4))))
    return out


def _edge_igamma(upper):
    """ATen's boundary values: NaN outside the domain, limits at a = 0, x = 0 and infinities."""
    def ref(a, x):
        a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
        p = np.full(a.shape, np.nan)
        p = np.where(x == 0, 0.0, p)
        p = np.where(np.isinf(x) & (a >= 0) & ~np.isinf(a), 1.0, p)
        p = np.where(np.isinf(a) & ~np.isinf(x) & (x >= 0), 0.0, p)
        p = np.where((a == 0) & (x > 0), 1.0, p)
        p = np.where((a == 0) & (x == 0), np.nan, p)
        p = np.where((a < 0) | (x < 0) | np.isnan(a) | np.isnan(x), np.nan, p)
        return 1 - p if upper else p
    return ref


_EDGE_A = np.array([0.0, 0.0, 1.0, np.inf, np.inf, 2.0, -1.0, 1.0, np.nan, 3.0, 0.0])
_EDGE_X = np.array([1.0, 0.0, 0.0, 3.0, np.inf, np.inf, 1.0, -1.0, 1.0, np.nan, np.inf])


def _frexp_samples(rng):
    v = np.array([0.0, -0.0, 1.0, -3.0, 0.75, 1e-40, -2.5e-42, 3e38, np.inf, -np.inf, np.nan, 1e-310])
    return [SampleInput(rng.uniform(-100, 100, s)) for s in [(), (7,), (3, 4)]] + [SampleInput(v, grad=False)]


def _frexp_ref(x):
    x = np.asarray(x)
    m, e = np.frexp(x)
    return m, e.astype(np.int32)


def _nextafter_samples(rng):
    x = np.array([1.0, 1.0, 0.0, -0.0, 0.0, -1.0, -1.0, 2.0, np.nan, 3.0, 1e-45, np.inf, 5.0, 65504.0, 2.0 ** -14,
                  -1024.0, 3e-6])
    y = np.array([2.0, 0.0, 1.0, -1.0, 0.0, -2.0, 0.0, 2.0, 1.0, np.nan, 0.0, 0.0, np.inf, np.inf, 0.0, 0.0, -1.0])
    return [SampleInput(x, y, grad=False), SampleInput(rng.uniform(-3, 3, (3, 4)), rng.uniform(-3, 3, (3, 4))),
            SampleInput(rng.uniform(-3, 3, (7,)), rng.uniform(-3, 3, ()))]


def _nextafter_f32(x, y):
    return np.nextafter(np.asarray(x, np.float32), np.asarray(y, np.float32))


@np.errstate(over="ignore")
def _nextafter_f16(x, y):
    return np.nextafter(np.asarray(x, np.float16), np.asarray(y, np.float16))


def _nextafter_bf16(x, y):
    """bfloat16 is float32's upper half: one step is 2^16 float32 ulps (x and y hold bfloat16 values)."""
    xb, yb = np.broadcast_arrays(np.asarray(x, np.float32), np.asarray(y, np.float32))
    bits = xb.view(np.int32).astype(np.int64)
    r = np.where((yb > xb) == (xb > 0), bits + 65536, bits - 65536).astype(np.int32).view(np.float32)
    r = np.where(xb == 0, np.copysign(np.float32(9.183549615799121e-41), yb), r)
    r = np.where(xb == yb, yb, r)
    return np.where(np.isnan(xb) | np.isnan(yb), np.nan, r)


OPS = [
    OpInfo("i0", lambda x: x.i0(), np.i0, _u(-12, 12), dtypes=FLOATS),
    OpInfo("special_i0e", lambda x: tgrad.special.i0e(x), lambda x: np.exp(-np.abs(x)) * np.i0(x), _u(-12, 12),
           dtypes=FLOATS),
    OpInfo("special_i1", lambda x: tgrad.special.i1(x), _i1_ref, _u(-12, 12), dtypes=FLOATS),
    OpInfo("special_i1e", lambda x: tgrad.special.i1e(x), lambda x: np.exp(-np.abs(x)) * _i1_ref(x), _u(-12, 12),
           dtypes=FLOATS),
    OpInfo("bessel_tails", lambda x: tgrad.stack([x.i0(), tgrad.special.i0e(x), tgrad.special.i1(x),
                                                  tgrad.special.i1e(x)]),
           lambda x: np.stack([np.i0(x), np.exp(-np.abs(x)) * np.i0(x), _i1_ref(x), np.exp(-np.abs(x)) * _i1_ref(x)]),
           lambda rng: [SampleInput(np.array([0.0, -0.0, 1e-20, 7.999, 8.0, 8.001, -8.5, 15.0, -29.0]), grad=False)],
           dtypes=(D.float32, D.float64), grad=False, covers=("i0", "special_i0e", "special_i1", "special_i1e")),
    OpInfo("igamma", lambda a, x: tgrad.igamma(a, x), _igamma_ref, _ax_samples, dtypes=(D.float32, D.float64),
           diff_args=(1,), tol={"float64": (1e-13, 1e-11)}),
    OpInfo("igammac", lambda a, x: tgrad.igammac(a, x), lambda a, x: _igamma_ref(a, x, True), _ax_samples,
           dtypes=(D.float32, D.float64), diff_args=(1,), tol={"float64": (1e-13, 1e-11)}),
    OpInfo("igamma_edges", lambda a, x: tgrad.stack([tgrad.igamma(a, x), tgrad.igammac(a, x)]),
           lambda a, x: np.stack([_edge_igamma(False)(a, x), _edge_igamma(True)(a, x)]),
           lambda rng: [SampleInput(_EDGE_A, _EDGE_X, grad=False)], dtypes=(D.float32, D.float64), grad=False,
           covers=("igamma", "igammac")),
    OpInfo("frexp", lambda x: tuple(tgrad.frexp(x)), _frexp_ref, _frexp_samples, dtypes=(D.float32, D.float64),
           tol={"float32": (0, 0), "float64": (0, 0)}),
    OpInfo("nextafter", lambda x, y: tgrad.nextafter(x, y), np.nextafter, _nextafter_samples,
           dtypes=(D.float64,), tol={"float64": (0, 0)}),
    OpInfo("nextafter_f32", lambda x, y: tgrad.nextafter(x, y), _nextafter_f32, _nextafter_samples,
           dtypes=(D.float32,), tol={"float32": (0, 0)}, covers=("nextafter",)),
    OpInfo("nextafter_f16", lambda x, y: tgrad.nextafter(x, y), _nextafter_f16, _nextafter_samples,
           dtypes=(D.float16,), tol={"float16": (0, 0)}, grad=False, noncontig=False, covers=("nextafter",)),
    OpInfo("nextafter_bf16", lambda x, y: tgrad.nextafter(x, y), _nextafter_bf16, _nextafter_samples,
           dtypes=(D.bfloat16,), tol={"bfloat16": (0, 0)}, grad=False, noncontig=False,
           covers=("nextafter",)),
]
