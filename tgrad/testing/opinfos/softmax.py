"""OpInfos for softmax and log_softmax (their fused backward ops run under gradcheck)."""
import numpy as np

from ..opinfo import OpInfo, SampleInput
from ._common import FLOATS, LOW, call, log_softmax


def _softmax_samples(rng):
    out = []
    for s, d in [((7,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 5), 1), ((33,), -1), ((4, 1000), 1), ((), 0)]:
        out.append(SampleInput(rng.uniform(-3, 3, s), dim=d, grad=int(np.prod(s)) <= 40))
    out.append(SampleInput(rng.uniform(-3, 3, (0, 3)), dim=1, grad=False))
    out.append(SampleInput(rng.uniform(-3, 3, (3, 0)), dim=1, grad=False))
    out.append(SampleInput(rng.uniform(-3, 3, (2, 3, 4, 5)), dim=1, grad=False))
    return out


OPS = [
    OpInfo("softmax", lambda x, **k: call("softmax", x, **k),
           lambda x, dim: np.exp(log_softmax(x, dim if x.ndim else None)), _softmax_samples, dtypes=FLOATS,
           tol=LOW, covers=("softmax_backward",)),
    OpInfo("log_softmax", lambda x, **k: call("log_softmax", x, **k),
           lambda x, dim: log_softmax(x, dim if x.ndim else None), _softmax_samples, dtypes=FLOATS,
           tol=LOW, covers=("log_softmax_backward",)),
]
