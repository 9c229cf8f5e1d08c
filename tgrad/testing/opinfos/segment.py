"""OpInfos for the reducing scatters: scatter_reduce and index_reduce (every reduction, include_self both ways).

Index tensors are passed as Python lists (numpy arrays would be cast to the dtype under test).
"""
import numpy as np

import tgrad
from tgrad import dtypes as D

from ..opinfo import OpInfo, SampleInput

FLOATS = (D.float32, D.float64, D.float16, D.bfloat16)
LOW_TOL = {"float16": (1e-2, 1e-2), "bfloat16": (5e-2, 2e-2)}
_REDUCE = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}


def _np_reduce_into(x, targets, values, reduce, include_self):
    """out = x with out[t] = reduce(x[t] (include_self), values scattered to t...) for each target t."""
    out = np.array(x, dtype=np.float64)
    groups = {}
    for t, v in zip(targets, values):
        groups.setdefault(t, []).append(v)
    for t, vals in groups.items():
        out[t] = _REDUCE[reduce](([out[t]] if include_self else []) + vals)
    return out


def _scatter_reduce_ref(x, dim, idx, src, reduce, include_self=True):
    idx = np.asarray(idx, dtype=np.int64)
    pos = list(np.ndindex(idx.shape))
    dim = dim % max(idx.ndim, 1)
    targets = [p[:dim] + (int(idx[p]),) + p[dim + 1:] if p else () for p in pos]
    return _np_reduce_into(x, targets, [src[p] for p in pos], reduce, include_self)


def _index_reduce_ref(x, dim, idx, src, reduce, include_self=True):
    idx = np.asarray(idx, dtype=np.int64)
    pos = list(np.ndindex(src.shape))
    dim = dim % src.ndim
    targets = [p[:dim] + (int(idx[p[dim]]),) + p[dim + 1:] for p in pos]
    return _np_reduce_into(x, targets, [src[p] for p in pos], reduce, include_self)


def _scatter_samples(reduces):
    def samples(rng):
        out = []
        for r in reduces:
            for inc in (True, False):
                out += [SampleInput(rng.uniform(0.5, 1.5, (3, 4)), 0, rng.integers(0, 3, (5, 4)).tolist(),
                                    rng.uniform(-1.5, 1.5, (5, 4)), r, include_self=inc),
                        SampleInput(rng.uniform(-1, 1, (2, 3, 4)), -1, rng.integers(0, 4, (2, 2, 6)).tolist(),
                                    rng.uniform(-1, 1, (2, 2, 6)), r, include_self=inc)]
            out += [SampleInput(rng.uniform(-1, 1, (7,)), 0, rng.integers(0, 7, (33,)).tolist(),
                                rng.uniform(0.8, 1.2, (33,)), r, grad=False),
                    SampleInput(rng.uniform(-1, 1, (2, 3, 4)), 1, rng.integers(0, 3, (2, 2, 3)).tolist(),
                                rng.uniform(-1, 1, (2, 3, 7)), r, grad=False),     # src larger than index
                    SampleInput(rng.uniform(-1, 1, (3, 4)), 1, np.zeros((3, 0), np.int64).tolist(),
                                rng.uniform(-1, 1, (3, 0)), r, grad=False),
                    SampleInput(rng.uniform(-1, 1, ()), 0, 0, rng.uniform(-1, 1, ()), r, grad=False),
                    SampleInput(rng.uniform(-1, 1, (50, 20)), 0, rng.integers(0, 50, (60, 20)).tolist(),
                                rng.uniform(0.9, 1.1, (60, 20)), r, include_self=False, grad=False)]
        return out
    return samples


def _index_samples(reduces):
    def samples(rng):
        out = []
        for r in reduces:
            for inc in (True, False):
                out += [SampleInput(rng.uniform(0.5, 1.5, (3, 4)), 0, [0, 2, 0], rng.uniform(-1.5, 1.5, (3, 4)), r,
                                    include_self=inc),
                        SampleInput(rng.uniform(-1, 1, (2, 3, 4)), -2, [1, 1], rng.uniform(-1, 1, (2, 2, 4)), r,
                                    include_self=inc)]
            out += [SampleInput(rng.uniform(-1, 1, (7,)), 0, rng.integers(0, 7, (33,)).tolist(),
                                rng.uniform(0.8, 1.2, (33,)), r, grad=False),
                    SampleInput(rng.uniform(-1, 1, (3, 4)), 1, [], rng.uniform(-1, 1, (3, 0)), r, grad=False),
                    SampleInput(rng.uniform(-1, 1, (40, 30)), 0, rng.integers(0, 40, (100,)).tolist(),
                                rng.uniform(0.95, 1.05, (100, 30)), r, grad=False)]
        return out
    return samples


def _scatter_reduce(x, d, i, s, reduce, include_self=True):
    return x.scatter_reduce(d, tgrad.tensor(i, dtype=tgrad.int64), s, reduce, include_self=include_self)


def _index_reduce(x, d, i, s, reduce, include_self=True):
    return x.index_reduce(d, tgrad.tensor(i, dtype=tgrad.int64), s, reduce, include_self=include_self)


OPS = [
    OpInfo("scatter_reduce", _scatter_reduce, _scatter_reduce_ref, _scatter_samples(list(_REDUCE)), dtypes=FLOATS,
           diff_args=(0, 3), tol=LOW_TOL),
    OpInfo("scatter_reduce_int", _scatter_reduce, _scatter_reduce_ref, _scatter_samples(["sum", "prod", "amax", "amin"]),
           dtypes=(D.int64, D.int32), grad=False, covers=("scatter_reduce",)),
    OpInfo("index_reduce", _index_reduce, _index_reduce_ref, _index_samples(["prod", "mean", "amax", "amin"]),
           dtypes=FLOATS, diff_args=(0, 3), tol=LOW_TOL),
    OpInfo("index_reduce_int", _index_reduce, _index_reduce_ref, _index_samples(["prod", "amax", "amin"]),
           dtypes=(D.int64,), grad=False, covers=("index_reduce",)),
]
