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


OPS += [
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


OPS += [
    OpInfo("meshgrid", lambda a, b, indexing="ij": tgrad.meshgrid(a, b, indexing=indexing),
           lambda a, b, indexing="ij": tuple(np.meshgrid(a, b, indexing=indexing)),
           lambda rng: [SampleInput(rng.uniform(-1, 1, (2,)), rng.uniform(-1, 1, (3,))),
                        SampleInput(rng.uniform(-1, 1, (2,)), rng.uniform(-1, 1, (3,)), indexing="xy"),
                        SampleInput(rng.uniform(-1, 1, ()), rng.uniform(-1, 1, (3,))),
                        SampleInput(rng.uniform(-1, 1, (0,)), rng.uniform(-1, 1, (3,)), indexing="xy", grad=False),
                        SampleInput(rng.uniform(-1, 1, (1000,)), rng.uniform(-1, 1, (2,)), grad=False)],
           dtypes=DT, covers=("view", "expand")),
]


