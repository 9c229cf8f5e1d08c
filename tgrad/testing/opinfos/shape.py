"""OpInfos for view/shape ops."""
import numpy as np

import tgrad
from tgrad import dtypes as D

from ..opinfo import OpInfo, SampleInput

DT = (D.float32, D.float64, D.float16, D.bfloat16, D.int64, D.bool_)


def _s(*shapes):
    """Samples of these shapes; gradients on the small ones only."""
    return lambda rng: [SampleInput(rng.uniform(-1, 1, s), grad=np.prod(s) <= 60) for s in shapes]


OPS = [
    OpInfo("view", lambda x: x.view(-1, 2), lambda x: x.reshape(-1, 2), _s((2, 3), (4, 1, 2), (0, 4), (10, 10, 10)),
           dtypes=DT),
    OpInfo("reshape_copy", lambda x: (x.t() if x.ndim <= 2 else x.transpose(0, -1)).reshape(-1),
           lambda x: (x.T if x.ndim <= 2 else np.swapaxes(x, 0, -1)).reshape(-1),
           _s((2, 3), (), (0, 3), (2, 3, 4), (10, 100)), dtypes=DT,
           covers=("unsafe_view", "contiguous", "t")),
    OpInfo("expand", lambda x, s=(2, 3, 4): x.expand(*s), lambda x, s=(2, 3, 4): np.broadcast_to(x, s),
           lambda rng: _s((3, 1), (4,), (1, 3, 4), (), (1,))(rng) + [
               SampleInput(rng.uniform(-1, 1, (3, 0)), (2, 3, 0), grad=False),
               SampleInput(rng.uniform(-1, 1, (1,)), (0,), grad=False),
               SampleInput(rng.uniform(-1, 1, (1, 1000)), (3, 1000), grad=False)], dtypes=DT),
    OpInfo("permute", lambda x: x.permute(2, 0, 1), lambda x: x.transpose(2, 0, 1),
           _s((2, 3, 4), (0, 3, 4), (10, 10, 10)), dtypes=DT),
    OpInfo("transpose", lambda x: x.transpose(0, -1), lambda x: np.swapaxes(x, 0, -1) if x.ndim else x,
           _s((2, 3), (2, 3, 4), (), (0, 3), (2, 3, 4, 5), (10, 100)),
           dtypes=DT),
    OpInfo("t", lambda x: x.t(), lambda x: x.T, _s((2, 3), (5,), (), (0, 3), (10, 100)), dtypes=DT),
    OpInfo("squeeze", lambda x: x.squeeze(), np.squeeze, _s((2, 1, 3), (1, 1), (0, 1, 3)), dtypes=DT),
    OpInfo("squeeze_dim", lambda x: x.squeeze(1), lambda x: np.squeeze(x, 1), _s((2, 1, 3), (0, 1, 3), (1000, 1)),
           dtypes=DT),
    OpInfo("squeeze_dims", lambda x, d=(0, 2): x.squeeze(d),
           lambda x, d=(0, 2): np.squeeze(x, tuple(k for k in d if x.shape[k] == 1)) if x.ndim else x,
           lambda rng: _s((1, 3, 1), (2, 1, 3), (1, 0, 1), (1, 1000, 1))(rng) + [
               SampleInput(rng.uniform(-1, 1, ()), (0,)), SampleInput(rng.uniform(-1, 1, (2, 1, 3, 1)), (1, -1, 0))],
           dtypes=DT),
    OpInfo("unsqueeze", lambda x: x.unsqueeze(-1), lambda x: x[..., None], _s((2, 3), (), (0, 3), (1000,)), dtypes=DT),
    # in-place view ops on a non-leaf (x.clone()): x takes the view's geometry, TBackward1 & co.
    OpInfo("t_", lambda x: x.clone().t_(), lambda x: x.T, _s((2, 3), (5,), (), (0, 3)), dtypes=DT),
    OpInfo("transpose_", lambda x: x.clone().transpose_(0, -1), lambda x: np.swapaxes(x, 0, -1) if x.ndim else x,
           _s((2, 3), (2, 3, 4), (), (0, 3)), dtypes=DT),
    OpInfo("squeeze_", lambda x: x.clone().squeeze_(), np.squeeze, _s((2, 1, 3), (1, 1), (0, 1, 3)), dtypes=DT),
    OpInfo("squeeze_dim_", lambda x: x.clone().squeeze_(1), lambda x: np.squeeze(x, 1), _s((2, 1, 3), (0, 1, 3)),
           dtypes=DT),
    OpInfo("squeeze_dims_", lambda x: x.clone().squeeze_((0, 2)), lambda x: np.squeeze(x, (0, 2)), _s((1, 3, 1)),
           dtypes=DT),
    OpInfo("unsqueeze_", lambda x: x.clone().unsqueeze_(-1), lambda x: x[..., None], _s((2, 3), (), (0, 3)),
           dtypes=DT),
    OpInfo("select", lambda x: x[1], lambda x: x[1], _s((3, 4), (2, 3, 4), (2,), (2, 0), (3, 1000)), dtypes=DT,
           covers=("select_backward",)),
    OpInfo("slice", lambda x: x[1:5:2], lambda x: x[1:5:2], _s((7,), (6, 3), (0,), (1000,), (7, 0)), dtypes=DT,
           covers=("slice_backward",)),
    OpInfo("alias", lambda x: x[...], lambda x: x, _s((2, 3), (), (0, 3), (1000,)), dtypes=DT),
]


# ------------------------------------------------------------------ copying shape ops
def _xs(rng, *shapes):
    return [rng.uniform(-1, 1, s) for s in shapes]


def _split_ref(x, split_size, dim=0):
    n = x.shape[dim]
    sizes = split_size if isinstance(split_size, list) else \
        [min(split_size, n - i) for i in range(0, n, split_size)] or [0]
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=dim))


def _split_op(x, split_size, dim=0):
    return x.split(split_size, dim)


def _tri_samples(rng):
    return [SampleInput(rng.uniform(-1, 1, (3, 4)), k) for k in (0, 1, -1)] + [
        SampleInput(rng.uniform(-1, 1, (2, 3, 3)), 0), SampleInput(rng.uniform(-1, 1, (4, 2)), -3),
        SampleInput(rng.uniform(-1, 1, (33, 7)), 2, grad=False), SampleInput(rng.uniform(-1, 1, (0, 3)), 0, grad=False),
        SampleInput(rng.uniform(-1, 1, (2, 1, 3, 4)), 1), SampleInput(rng.uniform(-1, 1, (3, 40, 30)), -4, grad=False)]


OPS += [
    OpInfo("cat", lambda *xs, dim=0: tgrad.cat(list(xs), dim), lambda *xs, dim=0: np.concatenate(xs, dim),
           lambda rng: [SampleInput(*_xs(rng, (2, 3), (1, 3), (4, 3))),
                        SampleInput(*_xs(rng, (2, 3), (2, 1)), dim=1),
                        SampleInput(*_xs(rng, (2, 0, 3), (2, 2, 3)), dim=-2, grad=False),
                        SampleInput(*_xs(rng, (7,), (33,)), grad=False),
                        SampleInput(*_xs(rng, (1, 2, 3, 2)), dim=3),
                        SampleInput(*_xs(rng, (600, 3), (500, 3)), grad=False)], dtypes=DT),
    OpInfo("stack", lambda *xs, dim=0: tgrad.stack(list(xs), dim), lambda *xs, dim=0: np.stack(xs, dim),
           lambda rng: [SampleInput(*_xs(rng, (2, 3), (2, 3))), SampleInput(*_xs(rng, (3,), (3,), (3,)), dim=1),
                        SampleInput(*_xs(rng, (), ())), SampleInput(*_xs(rng, (2, 3, 2), (2, 3, 2)), dim=-1),
                        SampleInput(*_xs(rng, (0, 2), (0, 2)), grad=False),
                        SampleInput(*_xs(rng, (1000,), (1000,)), dim=1, grad=False)], dtypes=DT),
    OpInfo("split", _split_op, _split_ref,
           lambda rng: [SampleInput(rng.uniform(-1, 1, (5, 3)), 2), SampleInput(rng.uniform(-1, 1, (2, 6)), 3, dim=1),
                        SampleInput(rng.uniform(-1, 1, (2, 3, 4)), 1, dim=-1),
                        SampleInput(rng.uniform(-1, 1, (33,)), 8, grad=False),
                        SampleInput(rng.uniform(-1, 1, (0, 3)), 2, grad=False),
                        SampleInput(rng.uniform(-1, 1, (3, 0)), 2, dim=1, grad=False),
                        SampleInput(rng.uniform(-1, 1, (1000,)), 300, grad=False)], dtypes=DT),
    OpInfo("split_with_sizes", _split_op, _split_ref,
           lambda rng: [SampleInput(rng.uniform(-1, 1, (5, 3)), [1, 4]),
                        SampleInput(rng.uniform(-1, 1, (2, 6)), [3, 2, 1], dim=1),
                        SampleInput(rng.uniform(-1, 1, (2, 6)), [3, 0, 2, 1], dim=1, grad=False),
                        SampleInput(rng.uniform(-1, 1, (2, 3, 4)), [1, 3], dim=-1),
                        SampleInput(rng.uniform(-1, 1, (4, 0)), [1, 3], grad=False),
                        SampleInput(rng.uniform(-1, 1, (0, 3)), [0], grad=False),
                        SampleInput(rng.uniform(-1, 1, (40, 30)), [10, 30], grad=False)], dtypes=DT),
    OpInfo("unbind", lambda x, dim=0: x.unbind(dim), lambda x, dim=0: tuple(np.moveaxis(x, dim, 0)),
           lambda rng: [SampleInput(rng.uniform(-1, 1, (3, 2))), SampleInput(rng.uniform(-1, 1, (2, 3, 2)), dim=1),
                        SampleInput(rng.uniform(-1, 1, (2, 4)), dim=-1),
                        SampleInput(rng.uniform(-1, 1, (3, 0))),
                        SampleInput(rng.uniform(-1, 1, (1000, 2)), dim=1, grad=False)], dtypes=DT),
    OpInfo("flip", lambda x, dims: x.flip(dims), lambda x, dims: np.flip(x, dims) if x.ndim else x,
           lambda rng: [SampleInput(rng.uniform(-1, 1, (3, 4)), (0,)),
                        SampleInput(rng.uniform(-1, 1, (2, 3, 4)), (0, 2)),
                        SampleInput(rng.uniform(-1, 1, (7,)), (-1,)),
                        SampleInput(rng.uniform(-1, 1, (2, 1, 3, 2)), (1, 2, 3)),
                        SampleInput(rng.uniform(-1, 1, (1000,)), (0,), grad=False),
                        SampleInput(rng.uniform(-1, 1, (0, 3)), (1,), grad=False),
                        SampleInput(rng.uniform(-1, 1, ()), (0,))], dtypes=DT),
    OpInfo("roll", lambda x, s, d=None: x.roll(s, d), lambda x, s, d=None: np.roll(x, s, d),
           lambda rng: [SampleInput(rng.uniform(-1, 1, (3, 4)), 1, 0), SampleInput(rng.uniform(-1, 1, (3, 4)), -5, 1),
                        SampleInput(rng.uniform(-1, 1, (2, 3, 4)), (1, 2), (0, 2)),
                        SampleInput(rng.uniform(-1, 1, (2, 3)), 4), SampleInput(rng.uniform(-1, 1, (7,)), 0, 0),
                        SampleInput(rng.uniform(-1, 1, (33,)), 10, grad=False),
                        SampleInput(rng.uniform(-1, 1, (0, 3)), 1, 1, grad=False),
                        SampleInput(rng.uniform(-1, 1, ()), 3),
                        SampleInput(rng.uniform(-1, 1, (40, 30)), 7, 0, grad=False)], dtypes=DT),
    OpInfo("repeat", lambda x, r: x.repeat(*r), lambda x, r: np.tile(x, r),
           lambda rng: [SampleInput(rng.uniform(-1, 1, (2, 3)), (2, 2)),
                        SampleInput(rng.uniform(-1, 1, (3,)), (2, 1, 2)), SampleInput(rng.uniform(-1, 1, ()), (3,)),
                        SampleInput(rng.uniform(-1, 1, (2, 1, 3)), (1, 3, 1)),
                        SampleInput(rng.uniform(-1, 1, (2, 3)), (0, 2), grad=False),
                        SampleInput(rng.uniform(-1, 1, (0, 3)), (2, 2), grad=False),
                        SampleInput(rng.uniform(-1, 1, (10, 10)), (5, 4), grad=False)], dtypes=DT),
    OpInfo("tile", lambda x, r: x.tile(r), lambda x, r: np.tile(x, r),
           lambda rng: [SampleInput(rng.uniform(-1, 1, (2, 3)), (2,)), SampleInput(rng.uniform(-1, 1, (3,)), (2, 2)),
                        SampleInput(rng.uniform(-1, 1, ()), (2,)), SampleInput(rng.uniform(-1, 1, (2, 1, 3)), (2, 1, 2)),
                        SampleInput(rng.uniform(-1, 1, (0, 3)), (2,), grad=False),
                        SampleInput(rng.uniform(-1, 1, (10, 100)), (2,), grad=False)],
           dtypes=DT, covers=("repeat",)),
    OpInfo("tril", lambda x, k: x.tril(k), lambda x, k: np.tril(x, k), _tri_samples, dtypes=DT),
    OpInfo("triu", lambda x, k: x.triu(k), lambda x, k: np.triu(x, k), _tri_samples, dtypes=DT),
    OpInfo("narrow", lambda x: x.narrow(1, 1, 2), lambda x: x[:, 1:3], _s((3, 4), (2, 3, 1), (0, 4), (10, 100)), dtypes=DT,
           covers=("slice",)),
    OpInfo("movedim", lambda x, s=(0, 1), d=(2, 0): x.movedim(s, d),
           lambda x, s=(0, 1), d=(2, 0): np.moveaxis(x, s, d) if x.ndim else x,
           lambda rng: _s((2, 3, 4), (0, 3, 4), (10, 10, 10))(rng) + [
               SampleInput(rng.uniform(-1, 1, ()), 0, -1), SampleInput(rng.uniform(-1, 1, (2, 3, 4, 5)), -1, 1)],
           dtypes=DT, covers=("permute",)),
    OpInfo("unflatten", lambda x: x.unflatten(-1, (2, -1)), lambda x: x.reshape(x.shape[:-1] + (2, x.shape[-1] // 2)),
           _s((3, 4), (6,), (2, 3, 4), (0, 4), (10, 100)), dtypes=DT, covers=("view",)),
]


# ------------------------------------------------------------------ gather / scatter / indexing
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


OPS += [
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
]


OPS += [
    OpInfo("nonzero", lambda x: x.nonzero(), lambda x: np.argwhere(x) if x.ndim else np.zeros((int(x != 0), 0)),
           lambda rng: [SampleInput(np.where(rng.uniform(size=s) < 0.5, 0.0, rng.uniform(-1, 1, s)))
                        for s in [(3, 4), (7,), (), (2, 3, 4), (0, 2), (33,), (40, 30)]],
           dtypes=DT, grad=False),
    OpInfo("hstack", lambda *xs: tgrad.hstack(xs), lambda *xs: np.hstack(xs),
           lambda rng: [SampleInput(*_xs(rng, (2, 3), (2, 1))), SampleInput(*_xs(rng, (3,), (2,))),
                        SampleInput(*_xs(rng, (), ())), SampleInput(*_xs(rng, (2, 3, 4), (2, 1, 4))),
                        SampleInput(*_xs(rng, (2, 0), (2, 3)), grad=False),
                        SampleInput(*_xs(rng, (1000,), (5,)), grad=False)], dtypes=DT,
           covers=("cat",)),
    OpInfo("vstack", lambda *xs: tgrad.vstack(xs), lambda *xs: np.vstack(xs),
           lambda rng: [SampleInput(*_xs(rng, (2, 3), (1, 3))), SampleInput(*_xs(rng, (3,), (3,))),
                        SampleInput(*_xs(rng, (), ())), SampleInput(*_xs(rng, (2, 3, 4), (1, 3, 4))),
                        SampleInput(*_xs(rng, (0, 3), (2, 3)), grad=False),
                        SampleInput(*_xs(rng, (10, 100), (1, 100)), grad=False)], dtypes=DT,
           covers=("cat",)),
]


OPS += [
    OpInfo("repeat_interleave",
           lambda x, r, dim=None: x.repeat_interleave(tgrad.tensor(r) if isinstance(r, list) else r, dim),
           lambda x, r, dim=None: np.repeat(x, r, axis=dim),
           lambda rng: [SampleInput(rng.uniform(-1, 1, (2, 3)), 2, dim=0), SampleInput(rng.uniform(-1, 1, (2, 3)), 3),
                        SampleInput(rng.uniform(-1, 1, (2, 3)), [1, 0, 2], dim=1),
                        SampleInput(rng.uniform(-1, 1, (2, 3, 2)), 2, dim=-1), SampleInput(rng.uniform(-1, 1, ()), 3),
                        SampleInput(rng.uniform(-1, 1, (0, 3)), 2, dim=0, grad=False),
                        SampleInput(rng.uniform(-1, 1, (10, 100)), 2, dim=1, grad=False)], dtypes=DT,
           covers=("index_select", "expand", "clone", "view")),
]


OPS += [
    OpInfo("diagonal", lambda x, o=0, d1=0, d2=1: x.diagonal(o, d1, d2),
           lambda x, o=0, d1=0, d2=1: np.diagonal(x, o, d1, d2),
           lambda rng: [SampleInput(rng.uniform(-1, 1, (3, 4))), SampleInput(rng.uniform(-1, 1, (3, 4)), 1),
                        SampleInput(rng.uniform(-1, 1, (3, 4)), -2),
                        SampleInput(rng.uniform(-1, 1, (2, 3, 4)), 0, 2, 0),
                        SampleInput(rng.uniform(-1, 1, (2, 3)), 5),
                        SampleInput(rng.uniform(-1, 1, (7, 7)), -1, -1, -2),
                        SampleInput(rng.uniform(-1, 1, (0, 3)), grad=False),
                        SampleInput(rng.uniform(-1, 1, (2, 0, 3)), 1, 2, 0, grad=False),
                        SampleInput(rng.uniform(-1, 1, (40, 30)), 3, grad=False),
                        SampleInput(rng.uniform(-1, 1, (2, 3, 4, 5)), -1, 1, 3)],
           dtypes=DT, covers=("diagonal_backward",)),
    OpInfo("diag_embed", lambda x, o=0, d1=-2, d2=-1: x.diag_embed(o, d1, d2),
           lambda x, o=0, d1=-2, d2=-1: _diag_embed_ref(x, o, d1, d2),
           lambda rng: [SampleInput(rng.uniform(-1, 1, (3,))), SampleInput(rng.uniform(-1, 1, (2, 3)), 1),
                        SampleInput(rng.uniform(-1, 1, (2, 3)), -1, 0, 2),
                        SampleInput(rng.uniform(-1, 1, (2, 2)), 0, 2, 0),
                        SampleInput(rng.uniform(-1, 1, (2, 3, 2)), 1, 0, -1),
                        SampleInput(rng.uniform(-1, 1, (0,)), grad=False),
                        SampleInput(rng.uniform(-1, 1, (2, 0)), 2, grad=False),
                        SampleInput(rng.uniform(-1, 1, (10, 100)), grad=False)],
           dtypes=DT),
    OpInfo("diag", lambda x, k=0: tgrad.diag(x, k), lambda x, k=0: np.diag(x, k),
           lambda rng: [SampleInput(rng.uniform(-1, 1, (3,))), SampleInput(rng.uniform(-1, 1, (3,)), -2),
                        SampleInput(rng.uniform(-1, 1, (3, 4)), 1), SampleInput(rng.uniform(-1, 1, (4, 3))),
                        SampleInput(rng.uniform(-1, 1, (0,)), grad=False),
                        SampleInput(rng.uniform(-1, 1, (0, 3)), 1, grad=False),
                        SampleInput(rng.uniform(-1, 1, (40, 30)), -2, grad=False),
                        SampleInput(rng.uniform(-1, 1, (300,)), 1, grad=False)],
           dtypes=DT, covers=("diag_embed", "diagonal", "clone")),
]


def _diag_embed_ref(x, offset, dim1, dim2):
    n = x.shape[-1] + abs(offset)
    out = np.zeros(x.shape[:-1] + (n, n), dtype=x.dtype)
    i = np.arange(x.shape[-1])
    r, c = (i, i + offset) if offset >= 0 else (i - offset, i)
    out[..., r, c] = x
    nd = x.ndim + 1
    d1, d2 = dim1 % nd, dim2 % nd
    rest = [k for k in range(nd) if k not in (d1, d2)]
    order = [0] * nd        # out's axes are (rest..., d1, d2): move them into place
    for src, dst in enumerate(rest + [d1, d2]):
        order[dst] = src
    return out.transpose(order)


def _masked_scatter_ref(x, m, src):
    shape = np.broadcast_shapes(x.shape, np.shape(m))
    out = np.array(np.broadcast_to(x, shape))
    mb = np.broadcast_to(m, shape)
    out[mb] = np.asarray(src).reshape(-1)[:int(mb.sum())]
    return out


OPS += [
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
    OpInfo("meshgrid", lambda a, b, indexing="ij": tgrad.meshgrid(a, b, indexing=indexing),
           lambda a, b, indexing="ij": tuple(np.meshgrid(a, b, indexing=indexing)),
           lambda rng: [SampleInput(rng.uniform(-1, 1, (2,)), rng.uniform(-1, 1, (3,))),
                        SampleInput(rng.uniform(-1, 1, (2,)), rng.uniform(-1, 1, (3,)), indexing="xy"),
                        SampleInput(rng.uniform(-1, 1, ()), rng.uniform(-1, 1, (3,))),
                        SampleInput(rng.uniform(-1, 1, (0,)), rng.uniform(-1, 1, (3,)), indexing="xy", grad=False),
                        SampleInput(rng.uniform(-1, 1, (1000,)), rng.uniform(-1, 1, (2,)), grad=False)],
           dtypes=DT, covers=("view", "expand")),
]


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
