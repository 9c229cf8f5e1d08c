"""OpInfos for element-wise ops."""
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


OPS = [
    OpInfo("add", lambda x, y, **k: tgrad.add(x, y, **k), lambda x, y, alpha=1: x + alpha * y,
           _binary_samples(), dtypes=ALL_NUM),
    OpInfo("add_alpha", lambda x, y: tgrad.add(x, y, alpha=2), lambda x, y: x + 2 * y,
           _binary_samples(), dtypes=ALL_NUM, covers=("add",)),
    OpInfo("sub", lambda x, y: x - y, lambda x, y: x - y, _binary_samples(), dtypes=ALL_NUM),
    OpInfo("mul", lambda x, y: x * y, lambda x, y: x * y, _binary_samples(), dtypes=ALL_NUM),
    OpInfo("div", lambda x, y: x / y, lambda x, y: x / y, _binary_samples(avoid_zero=True), dtypes=FLOATS),
    OpInfo("neg", lambda x: -x, lambda x: -x, _unary_samples(), dtypes=FLOATS + (D.int64, D.int32)),
    OpInfo("pow", lambda x: x ** 3, lambda x: x ** 3, _unary_samples(), dtypes=FLOATS + (D.int64,)),
    OpInfo("pow_frac", lambda x: x ** 2.5, lambda x: x ** 2.5, _unary_samples(0.2, 2.0), dtypes=FLOATS,
           covers=("pow",)),
    OpInfo("exp", lambda x: x.exp(), np.exp, _unary_samples(), dtypes=FLOATS),
    OpInfo("clone", lambda x: x.clone(), lambda x: x, _unary_samples(), dtypes=ALL_NUM + (D.bool_,)),
    OpInfo("to_copy", lambda x: x.to(tgrad.float64, copy=True), lambda x: x, _unary_samples(),
           dtypes=FLOATS + (D.int64,)),
    OpInfo("copy_", lambda x, y: x.clone().copy_(y), lambda x, y: np.broadcast_to(y, x.shape).copy(),
           lambda rng: [SampleInput(rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, s)) for s in [(3, 4), (4,), ()]],
           dtypes=ALL_NUM, covers=("clone",)),
    OpInfo("fill_", lambda x: x.clone().fill_(2.5), lambda x: np.full_like(x, 2.5),
           lambda rng: [SampleInput(rng.uniform(-1, 1, s)) for s in [(3, 4), (), (7,)]], dtypes=FLOATS),
]
