"""OpInfos for element-wise ops (arithmetic, copies, pow forms, binary math, where/clamp/lerp/addc), and the
samplers the other element-wise families (unary, activation, compare) share."""
import math

import numpy as np

import tgrad
from tgrad import dtypes as D

from ..opinfo import OpInfo, SampleInput

FLOATS = (D.float32, D.float64, D.float16, D.bfloat16)
ALL_NUM = FLOATS + (D.int64, D.int32, D.int16, D.int8, D.uint8)

SHAPES = [(), (1,), (7,), (33,), (1000,), (3, 4), (2, 3, 5), (2, 1, 3, 4)]
BROADCAST = [((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 3, 1), (3, 5)), ((), (3,)), ((5, 1, 2), (1, 4, 1))]


def _unary_samples(lo=-2.0, hi=2.0):
    def samples(rng):
        out = [SampleInput(rng.uniform(lo, hi, s), grad=(np.prod(s) <= 40)) for s in SHAPES]
        out.append(SampleInput(rng.uniform(lo, hi, (0, 3)), grad=False))
        return out
    return samples


def _binary_samples(lo=-2.0, hi=2.0, avoid_zero=False):
    def rnd(rng, s):
        a = rng.uniform(lo, hi, s)
        if avoid_zero:
            a = np.where(np.abs(a) < 0.3, 0.5, a)
        return a

    def samples(rng):
        out = [SampleInput(rnd(rng, s), rnd(rng, s), grad=(np.prod(s) <= 40)) for s in SHAPES]
        out += [SampleInput(rnd(rng, a), rnd(rng, b)) for a, b in BROADCAST]
        out.append(SampleInput(rnd(rng, (2, 3)), 1.5))
        out.append(SampleInput(rnd(rng, (0, 3)), rnd(rng, (3,)), grad=False))
        return out
    return samples


def _call(name, **attrs):
    from tgrad.autograd import dispatch
    return lambda *a: dispatch.call(name, *a, **attrs)


OPS = [
    OpInfo("add", lambda x, y, **k: tgrad.add(x, y, **k), lambda x, y, alpha=1: x + alpha * y,
           _binary_samples(), dtypes=ALL_NUM),
    OpInfo("add_alpha", lambda x, y: tgrad.add(x, y, alpha=2), lambda x, y: x + 2 * y,
           _binary_samples(), dtypes=ALL_NUM, covers=("add",)),
    OpInfo("sub", lambda x, y: x - y, lambda x, y: x - y, _binary_samples(), dtypes=ALL_NUM),
    OpInfo("rsub", lambda x: 1.5 - x, lambda x: 1.5 - x, _unary_samples(), dtypes=FLOATS + (D.int64,)),
    OpInfo("rsub_tensor", lambda x, y: tgrad.rsub(x, y, alpha=2), lambda x, y: y - 2 * x, _binary_samples(),
           dtypes=FLOATS + (D.int64,), covers=("rsub",)),
    OpInfo("mul", lambda x, y: x * y, lambda x, y: x * y, _binary_samples(), dtypes=ALL_NUM),
    OpInfo("div", lambda x, y: x / y, lambda x, y: x / y, _binary_samples(avoid_zero=True), dtypes=FLOATS),
    OpInfo("neg", lambda x: -x, lambda x: -x, _unary_samples(), dtypes=FLOATS + (D.int64, D.int32)),
    OpInfo("pow", lambda x: x ** 3, lambda x: x ** 3, _unary_samples(), dtypes=FLOATS + (D.int64,)),
    OpInfo("pow_frac", lambda x: x ** 2.5, lambda x: x ** 2.5, _unary_samples(0.2, 2.0), dtypes=FLOATS,
           covers=("pow",)),
    OpInfo("pow_backward", lambda g, x, **k: _call("pow_backward", **k)(g, x),
           lambda g, x, exponent: g * (exponent * x ** float(exponent - 1)),
           lambda rng: [SampleInput(rng.uniform(-2, 2, s), rng.uniform(0.5, 2, s) * rng.choice([-1, 1], s),
                                    exponent=e, grad=np.prod(s) <= 12)
                        for s, e in [((7,), 3), ((3, 4), 2), ((2, 3), -2), ((5,), 1), ((), 3), ((0, 3), 2),
                                     ((2, 500), 5)]]
           + [SampleInput(rng.uniform(-2, 2, (3, 4)), rng.uniform(0.5, 2, (4,)), exponent=3)],
           dtypes=FLOATS),
    OpInfo("clone", lambda x: x.clone(), lambda x: x, _unary_samples(), dtypes=ALL_NUM + (D.bool_,)),
    OpInfo("contiguous", lambda x: x.permute(tuple(reversed(range(x.dim())))).contiguous(), lambda x: x.T,
           _unary_samples(), dtypes=ALL_NUM + (D.bool_,), covers=("permute",)),
    OpInfo("to_copy", lambda x: x.to(tgrad.float64, copy=True), lambda x: x, _unary_samples(),
           dtypes=FLOATS + (D.int64,)),
    OpInfo("copy_", lambda x, y: x.clone().copy_(y), lambda x, y: np.broadcast_to(y, x.shape).copy(),
           lambda rng: [SampleInput(rng.uniform(-1, 1, d), rng.uniform(-1, 1, s), grad=np.prod(d) <= 12)
                        for d, s in [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 4), ()), ((), ()), ((0, 3), (3,)),
                                     ((40, 33), (33,))]],
           dtypes=ALL_NUM, covers=("clone",)),
    OpInfo("fill_scalar", lambda x: x.clone().fill_(2.5), lambda x: np.full_like(x, 2.5),
           lambda rng: [SampleInput(rng.uniform(-1, 1, s), grad=np.prod(s) <= 12) for s in [(3, 4), (), (7,), (0, 3),
                                                                                           (1000,)]],
           dtypes=FLOATS),
    OpInfo("fill_", lambda x, v: x.clone().fill_(v), lambda x, v: np.full_like(x, v),
           lambda rng: [SampleInput(rng.uniform(-1, 1, s), rng.uniform(-1, 1, ()), grad=np.prod(s) <= 12)
                        for s in [(3, 4), (), (0, 3), (1000,)]],
           dtypes=FLOATS),
    OpInfo("zero_", lambda x: x.clone().zero_(), np.zeros_like,
           lambda rng: [SampleInput(rng.uniform(-1, 1, s), grad=np.prod(s) <= 12) for s in [(3, 4), (), (7,), (0, 3),
                                                                                           (1000,)]],
           dtypes=ALL_NUM),
]


# ------------------------------------------------------------------ samplers; binary/ternary forms
INTS = (D.int64, D.int32, D.int16, D.int8, D.uint8)
SIGNED_INTS = (D.int64, D.int32, D.int16, D.int8)
GRAD_SHAPES = {(), (1,), (7,), (3, 4)}          # gradcheck/gradgradcheck on the small ones only
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _u(lo=-2.0, hi=2.0, away=None):
    """Unary samples over SHAPES in [lo, hi]; ``away``: values kept at least this far from 0 (sign kept)."""
    def gen(rng, s):
        a = rng.uniform(lo, hi, s)
        if away is not None:
            a = np.where(np.abs(a) < away, np.where(a < 0, -away, away) * 1.5, a)
        return a

    def samples(rng):
        out = [SampleInput(gen(rng, s), grad=s in GRAD_SHAPES) for s in SHAPES]
        out.append(SampleInput(gen(rng, (4, 6)).T, grad=False))     # transposed view
        out.append(SampleInput(gen(rng, (0, 3)), grad=False))
        return out
    return samples


def _b(lo=-2.0, hi=2.0, ylo=None, yhi=None, away=None, ties=False, scalar=1.5):
    """Binary samples: SHAPES, broadcasting, a Python scalar on the right, 0-size."""
    ylo = lo if ylo is None else ylo
    yhi = hi if yhi is None else yhi

    def gen(rng, s, a, b):
        v = rng.uniform(a, b, s)
        if away is not None:
            v = np.where(np.abs(v) < away, np.where(v < 0, -away, away) * 1.5, v)
        return v

    def pair(rng, sa, sb):
        x, y = gen(rng, sa, lo, hi), gen(rng, sb, ylo, yhi)
        if ties and x.shape == y.shape and x.size:
            y = np.where(rng.uniform(size=y.shape) < 0.3, x, y)
        return x, y

    def samples(rng):
        out = [SampleInput(*pair(rng, s, s), grad=s in GRAD_SHAPES) for s in SHAPES]
        out += [SampleInput(*pair(rng, a, b), grad=max(np.prod(a), np.prod(b)) <= 12) for a, b in BROADCAST]
        if scalar is not None:
            out.append(SampleInput(gen(rng, (2, 3), lo, hi), scalar))
        out.append(SampleInput(*pair(rng, (0, 3), (3,)), grad=False))
        return out
    return samples


def _divmode_ref(mode):
    def ref(x, y):
        with np.errstate(all="ignore"):
            return np.trunc(x / y) if mode == "trunc" else np.floor_divide(x, y)
    return ref


def _fmod(x, y):
    return np.fmod(x, y)


def _remainder(x, y):
    return np.remainder(x, y)


def _int_pow(x, y):
    x, y = np.asarray(x).astype(np.int64), np.asarray(y).astype(np.int64)
    return np.where(y < 0, np.where(x == 1, 1, np.where(x == -1, np.where(y % 2 == 0, 1, -1), 0)),
                    np.power(x, np.abs(y)))


BINARY = [
    ("div_trunc", lambda x, y: tgrad.div(x, y, rounding_mode="trunc"), _divmode_ref("trunc"),
     _b(-5, 5, away=0.6), FLOATS + SIGNED_INTS, ("div_mode",)),
    ("div_floor", lambda x, y: x // y, _divmode_ref("floor"), _b(-5, 5, away=0.6), FLOATS + SIGNED_INTS,
     ("div_mode",)),
    ("fmod", lambda x, y: tgrad.fmod(x, y), _fmod, _b(-5, 5, away=0.6), FLOATS + SIGNED_INTS, ()),
    ("remainder", lambda x, y: x % y, _remainder, _b(-5, 5, away=0.6), FLOATS + SIGNED_INTS, ()),
    ("atan2", lambda x, y: tgrad.atan2(x, y), np.arctan2, _b(away=0.05, scalar=None), FLOATS, ()),
    ("pow_tensor", lambda x, y: x ** y, np.power, _b(0.2, 2.0, -2.0, 2.0, scalar=None), FLOATS, ()),
]
for _name, _op, _ref, _samples, _dts, _cov in BINARY:
    # maximum/minimum samples have ties, where the gradient jumps (g/2 -> g): no finite-difference gradgrad there
    OPS.append(OpInfo(_name, _op, _ref, _samples, dtypes=_dts, covers=_cov,
                      gradgrad=_name not in ("maximum", "minimum")))


OPS += [
    # outputs over 1e-30 .. 1e30 (fp32 pow through fp32 exp2/log2 was ~90 ulp off there)
    OpInfo("pow_tensor_wide", lambda x, y: x ** y, np.power, _b(0.1, 10.0, -30.0, 30.0, scalar=27.3),
           dtypes=(D.float32, D.float64), grad=False, covers=("pow_tensor", "pow"),
           tol={"float32": (0.0, 2.4e-7)}),   # 2 ulp
    OpInfo("pow_tensor_int", lambda x, y: x ** y, _int_pow,
           lambda rng: [SampleInput(rng.uniform(-4, 4, s), rng.uniform(-2, 5, s))
                        for s in [(7,), (3, 4), (), (0, 3), (1000,)]],
           dtypes=(D.int64, D.int32), grad=False, covers=("pow_tensor",)),
    OpInfo("fmod_scalar", lambda x: tgrad.fmod(x, -1.5), lambda x: np.fmod(x, -1.5), _u(-5, 5),
           dtypes=FLOATS),
    OpInfo("remainder_scalar", lambda x: x % 1.5, lambda x: np.remainder(x, 1.5), _u(-5, 5), dtypes=FLOATS),
    OpInfo("remainder_scalar_int", lambda x: x % 3, lambda x: np.remainder(x, 3), _u(-9, 9),
           dtypes=SIGNED_INTS, grad=False, covers=("remainder_scalar",)),
    OpInfo("pow_scalar_base", lambda x: 2.5 ** x, lambda x: 2.5 ** x, _u(), dtypes=FLOATS),
    OpInfo("pow_scalar_base_int", lambda x: 3 ** x, lambda x: np.power(3, np.asarray(x).astype(np.int64)),
           lambda rng: [SampleInput(rng.uniform(0, 10, s)) for s in [(7,), (3, 4), (), (0, 3), (1000,)]],
           dtypes=(D.int64,),
           grad=False, covers=("pow_scalar_base",)),
]


def _where_samples(rng):
    out = []
    for sc, sx, sy in [((7,), (7,), (7,)), ((3, 4), (3, 4), (3, 4)), ((3, 1), (1, 4), (3, 4)), ((), (5,), ()),
                       ((2, 3, 4), (3, 4), (4,)), ((0, 3), (3,), (3,)), ((40, 33), (33,), (40, 1))]:
        out.append(SampleInput(rng.uniform(size=sc) < 0.5, rng.uniform(-2, 2, sx), rng.uniform(-2, 2, sy),
                               grad=np.prod(sx) <= 12))
    out.append(SampleInput(rng.uniform(size=(3, 4)) < 0.5, rng.uniform(-2, 2, (3, 4)), 0.0))
    return out


def _cond_tensor(c, x, y):
    return tgrad.where(c != 0, x, y)       # the harness casts the bool condition to the dtype under test


def _clamp_samples(rng):
    return [SampleInput(rng.uniform(-2, 2, s), grad=s in GRAD_SHAPES) for s in SHAPES] + \
        [SampleInput(rng.uniform(-2, 2, (0, 3)), grad=False)]


def _clamp_t_samples(rng):
    out = []
    for sx, sl, sh in [((7,), (7,), (7,)), ((3, 4), (4,), (3, 1)), ((), (), ()), ((2, 3, 4), (3, 4), ()),
                       ((0, 3), (3,), ()), ((40, 33), (33,), (40, 1))]:
        lo = rng.uniform(-1.5, 0, sl)
        out.append(SampleInput(rng.uniform(-2, 2, sx), lo, lo + rng.uniform(0.2, 2, sh), grad=np.prod(sx) <= 12))
    return out


def _lerp_t_samples(rng):
    return [SampleInput(rng.uniform(-2, 2, s), rng.uniform(-2, 2, s), rng.uniform(-0.5, 1.5, w))
            for s, w in [((7,), (7,)), ((3, 4), (4,)), ((), ()), ((2, 3, 4), (3, 1))]] \
        + [SampleInput(rng.uniform(-2, 2, s), rng.uniform(-2, 2, s), rng.uniform(-0.5, 1.5, w), grad=False)
           for s, w in [((0, 3), (3,)), ((40, 33), (33,))]]


def _addc_samples(rng):
    def t2(s):
        a = rng.uniform(-2, 2, s)
        return np.where(np.abs(a) < 0.3, 0.5, a)
    return [SampleInput(rng.uniform(-2, 2, a), rng.uniform(-2, 2, b), t2(c), grad=max(map(np.prod, (a, b, c))) <= 12)
            for a, b, c in [((7,), (7,), (7,)), ((3, 4), (4,), (3, 1)), ((), (), ()), ((2, 3, 4), (3, 4), (4,)),
                            ((33,), (33,), (33,)), ((0, 3), (3,), (3,)), ((40, 33), (33,), (40, 1))]]


OPS += [
    OpInfo("where", lambda c, x, y: _cond_tensor(c, x, y), lambda c, x, y: np.where(c, x, y), _where_samples,
           dtypes=FLOATS + (D.int64,), diff_args=(1, 2)),
    OpInfo("clamp", lambda x: x.clamp(-0.5, 0.7), lambda x: np.clip(x, -0.5, 0.7), _clamp_samples,
           dtypes=FLOATS),
    OpInfo("clamp_int", lambda x: x.clamp(-1, 1), lambda x: np.clip(x, -1, 1), _clamp_samples,
           dtypes=(D.int64, D.int32, D.int8), grad=False, covers=("clamp",)),
    OpInfo("clamp_min", lambda x: x.clamp(min=0.25), lambda x: np.maximum(x, 0.25), _clamp_samples,
           dtypes=FLOATS, covers=("clamp",)),
    OpInfo("clip_max", lambda x: tgrad.clip(x, max=-0.25), lambda x: np.minimum(x, -0.25), _clamp_samples,
           dtypes=FLOATS, covers=("clamp",)),
    OpInfo("clamp_tensor", lambda x, lo, hi: x.clamp(lo, hi), lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi),
           _clamp_t_samples, dtypes=FLOATS),
    OpInfo("clamp_tensor_min", lambda x, lo, hi: x.clamp(min=lo), lambda x, lo, hi: np.maximum(x, lo),
           _clamp_t_samples, dtypes=FLOATS, covers=("clamp_tensor",)),
    OpInfo("lerp", lambda x, y: x.lerp(y, 0.3), lambda x, y: x + 0.3 * (y - x), _b(scalar=None), dtypes=FLOATS),
    OpInfo("lerp_tensor", lambda x, y, w: tgrad.lerp(x, y, w), lambda x, y, w: x + w * (y - x), _lerp_t_samples,
           dtypes=FLOATS),
    OpInfo("addcmul", lambda x, a, b: tgrad.addcmul(x, a, b, value=0.5), lambda x, a, b: x + 0.5 * a * b,
           _addc_samples, dtypes=FLOATS),
    OpInfo("addcmul_int", lambda x, a, b: x.addcmul(a, b, value=3), lambda x, a, b: x + 3 * a * b, _addc_samples,
           dtypes=(D.int64, D.int32), grad=False, covers=("addcmul",)),
    OpInfo("addcdiv", lambda x, a, b: x.addcdiv(a, b, value=-2), lambda x, a, b: x - 2 * a / b, _addc_samples,
           dtypes=FLOATS),
]
