"""OpInfos for the index family: gather/scatter, index_select/index_add/index_fill, masked ops, advanced indexing
(index, index_put), take, nonzero.

Index tensors and masks are passed as Python lists (numpy arrays would be cast to the dtype under test).
"""
import numpy as np

import tgrad
from tgrad import dtypes as D

from ..opinfo import OpInfo, SampleInput
from .shape import DT


# Index tensors and masks are passed as Python lists (numpy arrays would be cast to the dtype under test).
DTI = (D.float32, D.float64, D.float16, D.bfloat16, D.int64)


def _coords(idx, dim):
    c = list(np.indices(idx.shape))
    c[dim] = idx
    return tuple(c)


def _gather_ref(x, dim, idx):
    return np.asarray(x)[_coords(np.asarray(idx, dtype=np.int64), dim)]


def _scatter_ref(x, dim, idx, src, add=False):
    idx = np.asarray(idx, dtype=np.int64)
    out = np.array(x, dtype=np.result_type(x, src) if add else x.dtype)
    v = np.broadcast_to(src, idx.shape) if np.ndim(src) == 0 else src[tuple(slice(0, s) for s in idx.shape)]
    if add:
        np.add.at(out, _coords(idx, dim), v)
    else:
        out[_coords(idx, dim)] = v
    return out


def _index_add_ref(x, dim, idx, src, alpha=1):
    out = np.array(x, dtype=np.float64)
    np.add.at(np.moveaxis(out, dim, 0), np.asarray(idx, dtype=np.int64), np.moveaxis(np.asarray(src) * alpha, dim, 0))
    return out


def _perm_index(rng, shape, size, dim):
    """Index of ``shape`` along ``dim`` with values in range(size), no duplicates along dim (scatter is then exact)."""
    idx = np.empty(shape, dtype=np.int64)
    for pos in np.ndindex(*[s for k, s in enumerate(shape) if k != dim]):
        p = list(pos)
        p.insert(dim, slice(None))
        idx[tuple(p)] = rng.permutation(size)[:shape[dim]]
    return idx.tolist()


def _gather_samples(rng):
    return [SampleInput(rng.uniform(-1, 1, (3, 4)), 0, rng.integers(0, 3, (2, 4)).tolist()),
            SampleInput(rng.uniform(-1, 1, (3, 4)), 1, rng.integers(0, 4, (3, 6)).tolist()),
            SampleInput(rng.uniform(-1, 1, (2, 3, 4)), -1, rng.integers(0, 4, (2, 2, 3)).tolist()),
            SampleInput(rng.uniform(-1, 1, (7,)), 0, rng.integers(0, 7, (33,)).tolist()),
            SampleInput(rng.uniform(-1, 1, (1000,)), 0, rng.integers(0, 1000, (1000,)).tolist(), grad=False),
            SampleInput(rng.uniform(-1, 1, (3, 4)), 0, np.zeros((3, 0), np.int64).tolist(), grad=False)]


def _scatter_samples(rng):
    return [SampleInput(rng.uniform(-1, 1, (3, 4)), 0, _perm_index(rng, (2, 4), 3, 0), rng.uniform(-1, 1, (2, 4))),
            SampleInput(rng.uniform(-1, 1, (3, 4)), 1, _perm_index(rng, (3, 2), 4, 1), rng.uniform(-1, 1, (3, 2))),
            SampleInput(rng.uniform(-1, 1, (2, 3, 4)), -2, _perm_index(rng, (2, 3, 4), 3, 1),
                        rng.uniform(-1, 1, (2, 3, 4))),
            SampleInput(rng.uniform(-1, 1, (33,)), 0, _perm_index(rng, (7,), 33, 0), rng.uniform(-1, 1, (7,))),
            SampleInput(rng.uniform(-1, 1, (3, 4)), 0, np.zeros((2, 0), np.int64).tolist(), rng.uniform(-1, 1, (2, 0)),
                        grad=False),
            SampleInput(rng.uniform(-1, 1, (1000,)), 0, _perm_index(rng, (1000,), 1000, 0),
                        rng.uniform(-1, 1, (1000,)), grad=False)]


def _scatter_add_samples(rng):
    return [SampleInput(rng.uniform(-1, 1, (3, 4)), 0, rng.integers(0, 3, (5, 4)).tolist(), rng.uniform(-1, 1, (5, 4))),
            SampleInput(rng.uniform(-1, 1, (2, 3, 4)), 2, rng.integers(0, 4, (2, 3, 6)).tolist(),
                        rng.uniform(-1, 1, (2, 3, 6))),
            SampleInput(rng.uniform(-1, 1, (4,)), 0, [1, 1, 3], rng.uniform(-1, 1, (3,))),
            SampleInput(rng.uniform(-1, 1, (7,)), 0, rng.integers(0, 7, (33,)).tolist(), rng.uniform(-1, 1, (33,)),
                        grad=False),
            SampleInput(rng.uniform(-1, 1, (3, 4)), 1, np.zeros((3, 0), np.int64).tolist(), rng.uniform(-1, 1, (3, 0)),
                        grad=False),
            SampleInput(rng.uniform(-1, 1, (50, 20)), 0, rng.integers(0, 50, (60, 20)).tolist(),
                        rng.uniform(-1, 1, (60, 20)), grad=False)]


def _index_add_samples(rng):
    return [SampleInput(rng.uniform(-1, 1, (3, 4)), 0, [0, 2, 0], rng.uniform(-1, 1, (3, 4))),
            SampleInput(rng.uniform(-1, 1, (3, 4)), 1, [3, 3], rng.uniform(-1, 1, (3, 2)), alpha=2),
            SampleInput(rng.uniform(-1, 1, (2, 3, 4)), -2, [1], rng.uniform(-1, 1, (2, 1, 4))),
            SampleInput(rng.uniform(-1, 1, (7,)), 0, rng.integers(0, 7, (33,)).tolist(), rng.uniform(-1, 1, (33,)),
                        grad=False),
            SampleInput(rng.uniform(-1, 1, (3, 4)), 1, [], rng.uniform(-1, 1, (3, 0)), grad=False),
            SampleInput(rng.uniform(-1, 1, (40, 30)), 0, rng.integers(0, 40, (1000,)).tolist(),
                        rng.uniform(-1, 1, (1000, 30)), grad=False)]


def _mask(rng, shape):
    return (rng.uniform(size=shape) < 0.5).tolist()


def _masked_samples(rng):
    return [SampleInput(rng.uniform(-1, 1, (3, 4)), _mask(rng, (3, 4))),
            SampleInput(rng.uniform(-1, 1, (3, 4)), _mask(rng, (4,))),
            SampleInput(rng.uniform(-1, 1, (2, 1, 3)), _mask(rng, (2, 4, 3))),
            SampleInput(rng.uniform(-1, 1, ()), True),
            SampleInput(rng.uniform(-1, 1, (33,)), _mask(rng, (33,)), grad=False),
            SampleInput(rng.uniform(-1, 1, (0, 3)), _mask(rng, (3,)), grad=False),
            SampleInput(rng.uniform(-1, 1, (40, 30)), _mask(rng, (40, 30)), grad=False)]


def _t(v):
    return tgrad.tensor(v) if isinstance(v, list) else tgrad.tensor(v, dtype=tgrad.bool)


# getitem keys: lists become index tensors (bool lists: masks); numpy follows PyTorch's shape rules for these
_KEYS = [((3, 4), ([0, 2, 2],)), ((3, 4), (slice(None), [1, -1])), ((3, 4), ([[0], [1]], [1, 2])),
         ((2, 3, 4), ([0, 1], slice(None), [2, 0])), ((3, 4), (Ellipsis, [1, 0])), ((3, 4), ([True, False, True],)),
         ((2, 3, 4), (slice(1, None), [[1, 0]], None)), ((3, 4), ([2, 0], slice(None, None, 2))),
         ((2, 3, 4), ([1, 0], slice(None), [3, 2])), ((2, 1, 3, 2), (slice(None), [0, 0], slice(None), [1])),
         ((7,), ([],)), ((33,), ([32, 0, -33],))]


def _np_index(i):
    return np.asarray(i, dtype=np.int64 if len(i) == 0 else None)


def _index_samples(rng):
    out = [SampleInput(rng.uniform(-1, 1, shape), k) for shape, k in _KEYS]
    out.append(SampleInput(rng.uniform(-1, 1, (3, 4)), (_mask(rng, (3, 4)),)))
    out += [SampleInput(rng.uniform(-1, 1, ()), (None,)), SampleInput(rng.uniform(-1, 1, ()), (Ellipsis, None)),
            SampleInput(rng.uniform(-1, 1, (3, 0)), ([0, 2],), grad=False),
            SampleInput(rng.uniform(-1, 1, (0, 3)), (slice(None), [2, 0]), grad=False),
            SampleInput(rng.uniform(-1, 1, (40, 30)), (rng.integers(-40, 40, (50,)).tolist(),), grad=False),
            SampleInput(rng.uniform(-1, 1, (10, 10, 10)), ([1, 0], slice(None), [9, 2]), grad=False)]
    return out


def _index_put_samples(rng):
    return [SampleInput(rng.uniform(-1, 1, (3, 4)), ([0, 2],), rng.uniform(-1, 1, (2, 4))),
            SampleInput(rng.uniform(-1, 1, (3, 4)), ([0, 2], [3, 1]), rng.uniform(-1, 1, (2,))),
            SampleInput(rng.uniform(-1, 1, (3, 4)), ([True, False, True],), rng.uniform(-1, 1, (4,))),
            SampleInput(rng.uniform(-1, 1, (2, 3, 4)), (None, [2, 0]), rng.uniform(-1, 1, ())),
            SampleInput(rng.uniform(-1, 1, (2, 3)), ([[0, 1]], [[2], [0]]), rng.uniform(-1, 1, (2, 2))),
            SampleInput(rng.uniform(-1, 1, (3, 0)), ([0, 2],), rng.uniform(-1, 1, (2, 0)), grad=False),
            SampleInput(rng.uniform(-1, 1, (0, 3)), (None, [2]), rng.uniform(-1, 1, ()), grad=False),
            SampleInput(rng.uniform(-1, 1, (40, 30)), (rng.permutation(40)[:25].tolist(),), rng.uniform(-1, 1, (25, 30)),
                        grad=False)]


def _index_put_ref(x, key, v, accumulate=False):
    out = np.array(x)
    k = tuple(slice(None) if i is None else np.asarray(i) for i in key)
    if accumulate:
        np.add.at(out, k, v)
    else:
        out[k] = v
    return out


def _key(key):
    return tuple(None if i is None else _t(i) for i in key)


def _masked_scatter_ref(x, m, src):
    shape = np.broadcast_shapes(x.shape, np.shape(m))
    out = np.array(np.broadcast_to(x, shape))
    mb = np.broadcast_to(m, shape)
    out[mb] = np.asarray(src).reshape(-1)[:int(mb.sum())]
    return out


def _index_fill_ref(x, d, i):
    out = np.array(x)
    if x.ndim == 0:         # PyTorch: a 0-d input takes index 0 / -1 as itself
        if len(i):
            out[()] = -0.5
        return out
    idx = [slice(None)] * x.ndim
    idx[d] = np.asarray(i, dtype=np.int64)
    out[tuple(idx)] = -0.5
    return out


OPS = [
    OpInfo("gather", lambda x, d, i: x.gather(d, tgrad.tensor(i, dtype=tgrad.int64)),
           lambda x, d, i: _gather_ref(x, d, i), _gather_samples, dtypes=DT),
    OpInfo("take_along_dim", lambda x, d, i: tgrad.take_along_dim(x, tgrad.tensor(i, dtype=tgrad.int64), d),
           lambda x, d, i: np.take_along_axis(x, np.asarray(i, dtype=np.int64), d) if d is not None else
           np.take(x.reshape(-1), np.asarray(i, dtype=np.int64).reshape(-1)),
           lambda rng: [SampleInput(rng.uniform(-1, 1, (3, 4)), 1, rng.integers(0, 4, (3, 2)).tolist()),
                        SampleInput(rng.uniform(-1, 1, (3, 4)), 0, rng.integers(0, 3, (2, 1)).tolist()),
                        SampleInput(rng.uniform(-1, 1, (2, 3)), None, rng.integers(0, 6, (4,)).tolist()),
                        SampleInput(rng.uniform(-1, 1, ()), None, [0, 0]),
                        SampleInput(rng.uniform(-1, 1, (2, 3, 4)), -1, rng.integers(0, 4, (2, 3, 2)).tolist()),
                        SampleInput(rng.uniform(-1, 1, (3, 4)), 1, np.zeros((3, 0), np.int64).tolist(), grad=False),
                        SampleInput(rng.uniform(-1, 1, (0, 4)), None, [], grad=False),
                        SampleInput(rng.uniform(-1, 1, (40, 30)), 0, rng.integers(0, 40, (40, 30)).tolist(),
                                    grad=False)], dtypes=DT,
           covers=("gather", "expand")),
    OpInfo("scatter", lambda x, d, i, s: x.scatter(d, tgrad.tensor(i, dtype=tgrad.int64), s), _scatter_ref,
           _scatter_samples, dtypes=DT),
    OpInfo("scatter_value", lambda x, d, i, s: x.scatter(d, tgrad.tensor(i, dtype=tgrad.int64), 0.5), lambda x, d, i, s:
           _scatter_ref(x, d, i, np.array(0.5, x.dtype)), _scatter_samples, dtypes=DTI),
    OpInfo("scatter_add", lambda x, d, i, s: x.scatter_add(d, tgrad.tensor(i, dtype=tgrad.int64), s),
           lambda x, d, i, s: _scatter_ref(x, d, i, s, add=True), _scatter_add_samples, dtypes=DTI),
    OpInfo("index_select", lambda x, d, i, s, **k: x.index_select(d, tgrad.tensor(i, dtype=tgrad.int64)),
           lambda x, d, i, s, **k: np.take(x, np.asarray(i, dtype=np.int64), axis=d), _index_add_samples, dtypes=DT,
           diff_args=(0,)),
    OpInfo("index_add", lambda x, d, i, s, alpha=1: x.index_add(d, tgrad.tensor(i, dtype=tgrad.int64), s, alpha=alpha),
           _index_add_ref, _index_add_samples, dtypes=DTI),
    OpInfo("masked_fill", lambda x, m: x.masked_fill(_t(m), 1.0), lambda x, m: np.where(m, np.array(1, x.dtype), x),
           _masked_samples, dtypes=DT),
    OpInfo("masked_fill_tensor", lambda x, m, v: x.masked_fill(_t(m), v), lambda x, m, v: np.where(m, v, x),
           lambda rng: [SampleInput(s.args[0], s.args[1], rng.uniform(-1, 1, ()), grad=s.grad)
                        for s in _masked_samples(rng)], dtypes=DT),
    OpInfo("masked_select", lambda x, m: x.masked_select(_t(m)),
           lambda x, m: np.broadcast_to(x, np.broadcast_shapes(x.shape, np.shape(m)))[
               np.broadcast_to(m, np.broadcast_shapes(x.shape, np.shape(m)))], _masked_samples, dtypes=DT),
    OpInfo("index", lambda x, k: x[k], lambda x, k: x[tuple(_np_index(i) if isinstance(i, list) else i for i in k)],
           _index_samples, dtypes=DT, covers=("index_put",)),
    OpInfo("index_put", lambda x, k, v: x.index_put(_key(k), v), _index_put_ref, _index_put_samples, dtypes=DT),
    OpInfo("index_put_accumulate", lambda x, k, v: x.index_put(_key(k), v, accumulate=True),
           lambda x, k, v: _index_put_ref(x, k, v, True),
           lambda rng: _index_put_samples(rng)[:2] + _index_put_samples(rng)[3:4] + _index_put_samples(rng)[5:7] + [
               SampleInput(rng.uniform(-1, 1, (4,)), ([0, 0, 3, 0],), rng.uniform(-1, 1, (4,))),
               SampleInput(rng.uniform(-1, 1, (40, 30)), (rng.integers(0, 40, (50,)).tolist(),),
                           rng.uniform(-1, 1, (50, 30)), grad=False)], dtypes=DTI,
           covers=("index_put",)),
    OpInfo("nonzero", lambda x: x.nonzero(), lambda x: np.argwhere(x) if x.ndim else np.zeros((int(x != 0), 0)),
           lambda rng: [SampleInput(np.where(rng.uniform(size=s) < 0.5, 0.0, rng.uniform(-1, 1, s)))
                        for s in [(3, 4), (7,), (), (2, 3, 4), (0, 2), (33,), (40, 30)]],
           dtypes=DT, grad=False),
    OpInfo("take", lambda x, i: x.take(tgrad.tensor(i, dtype=tgrad.int64)),
           lambda x, i: np.take(x, np.asarray(i, dtype=np.int64)),
           lambda rng: [SampleInput(rng.uniform(-1, 1, (3, 4)), [[0, -1], [11, 3]]),
                        SampleInput(rng.uniform(-1, 1, (7,)), [6, 6, -7, 0]),
                        SampleInput(rng.uniform(-1, 1, ()), [0, -1]),
                        SampleInput(rng.uniform(-1, 1, (2, 3, 4)), rng.integers(-24, 24, (33,)).tolist()),
                        SampleInput(rng.uniform(-1, 1, (3, 4)), [], grad=False),
                        SampleInput(rng.uniform(-1, 1, (40, 30)), rng.integers(-1200, 1200, (1000,)).tolist(),
                                    grad=False)], dtypes=DT),
    OpInfo("index_fill", lambda x, d, i: x.index_fill(d, tgrad.tensor(i, dtype=tgrad.int64), -0.5),
           lambda x, d, i: _index_fill_ref(x, d, i),
           lambda rng: [SampleInput(rng.uniform(-1, 1, (3, 4)), 1, [0, -1]),
                        SampleInput(rng.uniform(-1, 1, (3, 4)), 0, [2, 2]),
                        SampleInput(rng.uniform(-1, 1, (2, 3, 4)), -2, [1]),
                        SampleInput(rng.uniform(-1, 1, (7,)), 0, []), SampleInput(rng.uniform(-1, 1, ()), 0, [0]),
                        SampleInput(rng.uniform(-1, 1, (0, 3)), 1, [1], grad=False),
                        SampleInput(rng.uniform(-1, 1, (40, 30)), 0, [3, 39, -1, 0], grad=False)], dtypes=DTI),
    OpInfo("masked_scatter", lambda x, m, s: x.masked_scatter(_t(m), s), _masked_scatter_ref,
           lambda rng: [SampleInput(rng.uniform(-1, 1, (3, 4)), _mask(rng, (3, 4)), rng.uniform(-1, 1, (3, 4))),
                        SampleInput(rng.uniform(-1, 1, (3, 4)), _mask(rng, (4,)), rng.uniform(-1, 1, (13,))),
                        SampleInput(rng.uniform(-1, 1, (4,)), _mask(rng, (2, 4)), rng.uniform(-1, 1, (2, 5))),
                        SampleInput(rng.uniform(-1, 1, ()), True, rng.uniform(-1, 1, (3,))),
                        SampleInput(rng.uniform(-1, 1, (2, 3, 4)), _mask(rng, (3, 4)), rng.uniform(-1, 1, (25,))),
                        SampleInput(rng.uniform(-1, 1, (0, 3)), _mask(rng, (3,)), rng.uniform(-1, 1, (2,)),
                                    grad=False),
                        SampleInput(rng.uniform(-1, 1, (40, 30)), _mask(rng, (40, 30)), rng.uniform(-1, 1, (1200,)),
                                    grad=False)],
           dtypes=DT, covers=("cat", "masked_select", "masked_fill")),
]
