"""OpInfos for reductions."""
import numpy as np

from tgrad import dtypes as D

from ..opinfo import OpInfo, SampleInput

FLOATS = (D.float32, D.float64, D.float16, D.bfloat16)


def _samples(with_dims=True):
    def samples(rng):
        out = []
        for s in [(), (1,), (7,), (33,), (1000,), (3, 4), (2, 3, 5), (2, 3, 4, 5)]:
            small = int(np.prod(s)) <= 40
            if with_dims and len(s) > 0:
                out.append(SampleInput(rng.uniform(-2, 2, s), dim=0, keepdim=False, grad=small))
                out.append(SampleInput(rng.uniform(-2, 2, s), dim=-1, keepdim=True, grad=small))
                if len(s) >= 3:
                    out.append(SampleInput(rng.uniform(-2, 2, s), dim=(0, 2), keepdim=False, grad=small))
            elif not with_dims:
                out.append(SampleInput(rng.uniform(-2, 2, s), grad=small))
        return out
    return samples


def _np_dim(kw):
    d = kw.get("dim")
    return tuple(d) if isinstance(d, (tuple, list)) else d


OPS = [
    OpInfo("sum_all", lambda x: x.sum(), lambda x: np.sum(x), _samples(False), dtypes=FLOATS + (D.int64,)),
    OpInfo("sum", lambda x, **k: x.sum(**k), lambda x, **k: np.sum(x, axis=_np_dim(k), keepdims=k["keepdim"]),
           _samples(True), dtypes=FLOATS + (D.int32,), tol={"float16": (1e-2, 1e-2), "bfloat16": (5e-2, 2e-2)}),
    OpInfo("mean_all", lambda x: x.mean(), lambda x: np.mean(x), _samples(False), dtypes=FLOATS),
    OpInfo("mean", lambda x, **k: x.mean(**k),
           lambda x, **k: np.mean(x, axis=_np_dim(k), keepdims=k["keepdim"]), _samples(True), dtypes=FLOATS),
    OpInfo("sum_to_size", lambda x: x.sum_to_size(1, 4), lambda x: x.sum(axis=0, keepdims=True),
           lambda rng: [SampleInput(rng.uniform(-1, 1, (3, 4)))], dtypes=(D.float32, D.float64)),
]
