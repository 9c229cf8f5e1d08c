"""OpInfos for the group-normalization family."""
import numpy as np

from tgrad import dtypes as D
from tgrad.autograd import dispatch

from ..opinfo import OpInfo, SampleInput

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


OPS = [
    OpInfo("group_norm", lambda *a, **k: dispatch.call("group_norm", *a, **k), group_norm_ref, _samples,
           dtypes=FLOATS, tol={"float16": (4e-3, 4e-3), "bfloat16": (4e-2, 2e-2)}),
]
