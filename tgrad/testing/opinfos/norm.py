"""OpInfos for layer_norm, batch_norm and group_norm."""
import numpy as np

from tgrad import dtypes as D
from tgrad.autograd import dispatch

from ..opinfo import OpInfo, SampleInput
from ._common import call

FLOATS = (D.float32, D.float64, D.float16, D.bfloat16)


def group_norm_ref(x, w=None, b=None, num_groups=1, eps=1e-5):
    N, C = x.shape[:2]
    if x.size == 0:
        return x.copy()
    g = x.reshape(N, num_groups, -1)
    y = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)).reshape(x.shape)
    cs = (1, C) + (1,) * (x.ndim - 2)
    return y * (1 if w is None else w.reshape(cs)) + (0 if b is None else b.reshape(cs))


def _samples(rng):
    n = rng.normal
    return [SampleInput(n(size=(2, 4, 3)), n(size=4), n(size=4), num_groups=2),
            SampleInput(n(size=(3, 6, 2, 2)), None, None, num_groups=3, eps=1e-3),
            SampleInput(n(size=(2, 3, 2, 3)), n(size=3), None, num_groups=1),
            SampleInput(n(size=(2, 4)), n(size=4), n(size=4), num_groups=4),
            SampleInput(n(size=(4, 32, 33)), n(size=32), n(size=32), num_groups=8, grad=False),
            SampleInput(n(size=(0, 4, 3)), None, None, num_groups=2, grad=False)]



def _layer_norm_ref(x, w=None, b=None, normalized_shape=None, eps=1e-5):
    ax = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    y = (x - x.mean(ax, keepdims=True)) / np.sqrt(x.var(ax, keepdims=True) + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


def _batch_norm_ref(x, w, b, rm, rv, training=False, momentum=0.1, eps=1e-5):
    ax = (0,) + tuple(range(2, x.ndim))
    shape = [1, x.shape[1]] + [1] * (x.ndim - 2)
    if training:
        mean, var = x.mean(ax, keepdims=True), x.var(ax, keepdims=True)
    else:
        mean, var = rm.reshape(shape), rv.reshape(shape)
    y = (x - mean) / np.sqrt(var + eps)
    return y * (1 if w is None else w.reshape(shape)) + (0 if b is None else b.reshape(shape))


def _bn_samples(rng):
    def stats(c):
        return rng.normal(size=c), rng.uniform(0.5, 2, c)
    return [SampleInput(rng.normal(size=(4, 3)), rng.normal(size=3), rng.normal(size=3), *stats(3), training=True,
                        momentum=0.2),
            SampleInput(rng.normal(size=(2, 3, 4)), None, None, None, None, training=True, eps=1e-3),
            SampleInput(rng.normal(size=(2, 2, 2, 3)), rng.normal(size=2), rng.normal(size=2), *stats(2),
                        training=False),
            SampleInput(rng.normal(size=(3, 2, 5)), rng.normal(size=2), None, *stats(2), training=True),
            SampleInput(rng.normal(size=(3, 4)), None, None, *stats(4), training=False),
            SampleInput(rng.normal(size=(8, 5, 33)), None, None, *stats(5), training=True, grad=False)]


def _ln_samples(rng):
    return [SampleInput(rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=4), normalized_shape=(4,)),
            SampleInput(rng.normal(size=(2, 2, 3)), None, None, normalized_shape=(2, 3), eps=1e-3),
            SampleInput(rng.normal(size=(7,)), rng.normal(size=7), None, normalized_shape=(7,)),
            SampleInput(rng.normal(size=(4, 1000)), None, None, normalized_shape=(1000,), grad=False),
            SampleInput(rng.normal(size=(0, 4)), rng.normal(size=4), rng.normal(size=4), normalized_shape=(4,),
                        grad=False),
            SampleInput(rng.normal(size=(2, 3, 2, 5)), rng.normal(size=(2, 5)), None, normalized_shape=(2, 5),
                        grad=False)]

OPS = [
    OpInfo("layer_norm", lambda *a, **k: call("layer_norm", *a, **k), _layer_norm_ref, _ln_samples, dtypes=FLOATS,
           tol={"float16": (4e-3, 4e-3), "bfloat16": (4e-2, 2e-2)},
           covers=("layer_norm_backward", "layer_norm_param_backward")),
    OpInfo("batch_norm", lambda *a, **k: call("batch_norm", *a, **k), _batch_norm_ref, _bn_samples,
           dtypes=FLOATS, diff_args=(0, 1, 2), tol={"float16": (4e-3, 4e-3), "bfloat16": (4e-2, 2e-2)},
           covers=("batch_norm_backward",)),
    OpInfo("group_norm", lambda *a, **k: dispatch.call("group_norm", *a, **k), group_norm_ref, _samples,
           dtypes=FLOATS, tol={"float16": (4e-3, 4e-3), "bfloat16": (4e-2, 2e-2)},
           covers=("group_norm_param_backward",)),
]
