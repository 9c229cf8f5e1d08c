"""OpInfos for the comparison ops (eq .. ge, maximum/minimum) and the logical and bitwise ops."""
import numpy as np

import tgrad
from tgrad import dtypes as D

from ..opinfo import OpInfo, SampleInput
from .elementwise import FLOATS, INTS, _b, _u


def _cmp_samples(rng):
    return [s for s in _b(-3, 3, ties=True)(rng)] + [SampleInput(rng.uniform(-3, 3, (3, 4)), 0.5)]


def _logical_samples(rng):
    def v(s):
        a = rng.uniform(-1, 1, s)
        return np.where(np.abs(a) < 0.4, 0.0, a)
    return [SampleInput(v(s), v(s)) for s in [(), (7,), (3, 4), (0, 3), (1000,), (2, 3, 4, 5)]] + \
        [SampleInput(v((3, 1)), v((1, 4)))]


def _bits(fn):
    def ref(x, y):
        if np.asarray(x).dtype == np.bool_:
            return fn(x, y)
        return fn(np.asarray(x).astype(np.int64), np.asarray(y).astype(np.int64))
    return ref


# maximum/minimum samples have ties, where the gradient jumps (g/2 -> g): no finite-difference gradgrad there
OPS = [
    OpInfo("maximum", lambda x, y: tgrad.maximum(x, y), np.maximum, _b(ties=True, scalar=None), dtypes=FLOATS + INTS,
           gradgrad=False),
    OpInfo("minimum", lambda x, y: tgrad.minimum(x, y), np.minimum, _b(ties=True, scalar=None), dtypes=FLOATS + INTS,
           gradgrad=False),
]
for _name, _ref in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                    ("gt", np.greater), ("ge", np.greater_equal)]:
    OPS.append(OpInfo(_name, getattr(tgrad, _name), _ref, _cmp_samples, dtypes=FLOATS + (D.int64, D.uint8),
                      grad=False))
for _name, _ref in [("logical_and", np.logical_and), ("logical_or", np.logical_or),
                    ("logical_xor", np.logical_xor)]:
    OPS.append(OpInfo(_name, getattr(tgrad, _name), _ref, _logical_samples, dtypes=(D.float32, D.int64, D.bool_),
                      grad=False))
OPS += [
    OpInfo("logical_not", lambda x: x.logical_not(), np.logical_not, _u(away=0.3),
           dtypes=(D.float32, D.int64, D.bool_), grad=False),
    OpInfo("bitwise_not", lambda x: ~x, lambda x: ~x.astype(np.int64) if x.dtype != np.bool_ else ~x,
           _u(-50, 50), dtypes=(D.int64, D.int32, D.uint8, D.bool_), grad=False),
    OpInfo("bitwise_and", lambda x, y: x & y, _bits(np.bitwise_and), _b(-60, 60, scalar=None),
           dtypes=(D.int64, D.int32, D.int8, D.uint8, D.bool_), grad=False),
    OpInfo("bitwise_or", lambda x, y: x | y, _bits(np.bitwise_or), _b(-60, 60, scalar=None),
           dtypes=(D.int64, D.int32, D.int8, D.uint8, D.bool_), grad=False),
    OpInfo("bitwise_xor", lambda x, y: x ^ y, _bits(np.bitwise_xor), _b(-60, 60, scalar=None),
           dtypes=(D.int64, D.int32, D.int8, D.uint8, D.bool_), grad=False),
    # shift amounts 0..6 (out-of-range shifts: tests/ops/test_compare.py)
    OpInfo("bitwise_left_shift", lambda x, y: x << y, _bits(np.left_shift), _b(-60, 60, ylo=0, yhi=6.9, scalar=2),
           dtypes=(D.int64, D.int32, D.int8, D.uint8), grad=False),
    OpInfo("bitwise_right_shift", lambda x, y: x >> y, _bits(np.right_shift), _b(-60, 60, ylo=0, yhi=6.9, scalar=2),
           dtypes=(D.int64, D.int32, D.int8, D.uint8), grad=False),
]
