"""Sorting: ``sort`` (stable, ascending or descending) and ``topk``, one bitonic-sort kernel
(tgrad/kernels/sort.py) over the rows of the sorted dim.  Both return (values, int64 indices);
the values' gradient is scattered back to the positions the indices name (PyTorch's rule), so the
double backward is a gather.  ``argsort`` and ``msort`` are sort's indices / sort over dim 0.
"""
import numpy as np

from .. import dtypes as D
from ..kernels import _stl
from ..kernels import sort as KS
from ..kernels.runtime import launcher as _L
from ..tensor import _wrap_dim, empty, from_host
from . import Op, call as _c, host_full
from ._rows import rows3


def _sorted(self, d, kout, descending):
    """(values, indices) of the first ``kout`` of each row of ``self`` along dim ``d`` sorted."""
    shape = list(self.shape)
    if self.dim():
        shape[d] = kout
    values = empty(shape, self.dtype, self.device)
    indices = empty(shape, D.int64, self.device)
    xs, outer, K, inner, sx = rows3(self, d)
    return KS.sort(xs, values, indices, (outer * inner, K, inner, sx), kout, descending)


def sort_forward(self, *, dim=-1, descending=False, stable=False):
    """Stable whatever ``stable`` says (an unstable sort may return any order of equal elements)."""
    d = _wrap_dim(dim, self.dim())
    return _sorted(self, d, self.shape[d] if self.dim() else 1, descending)


def topk_forward(self, *, k, dim=-1, largest=True, sorted=True):
    """The ``k`` largest (smallest) along ``dim``, in order (also when ``sorted=False``, as allowed)."""
    d = _wrap_dim(dim, self.dim())
    n = self.shape[d] if self.dim() else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    values, indices = _sorted(self, d, k, largest)
    if k and self.dim() and _L.RECORD is None:
        return _aten_topk_ties(self, d, k, largest, sorted, values, indices)
    return values, indices


def _aten_topk_ties(self, d, k, largest, sorted, values, indices):
    """ATen's cpu topk returns tied elements in the order libstdc++'s selection leaves them (kernels/_stl.py), not
    the stable one: rows with an element tied with a kept one at or above the k-th (and, with ``sorted=False`` on
    the nth_element path, every row) are redone on the host, on cuda too (one answer on both devices).  Not while
    a compiled step records (a host read): its replay keeps the kernel's stable order."""
    n = self.shape[d]
    x = np.moveaxis(self.detach()._host_copy(), d, -1).reshape(-1, n)
    v = np.moveaxis(values._host_copy(), d, -1).reshape(-1, k)
    if not sorted and k * 64 > n:
        redo = np.ones(x.shape[0], bool)
    else:
        def before(a, b):           # a ranks strictly before b (NaN first when largest)
            if not self.dtype.is_floating_point:
                return a > b if largest else a < b
            an, bn = np.isnan(a), np.isnan(b)
            return ((an & ~bn) | (a > b)) if largest else ((~an & bn) | (a < b))
        kept = (~before(v[:, -1:], x)).sum(1) > k                          # ties at the k-th reach past it
        same = ~before(v[:, :-1], v[:, 1:]) & ~before(v[:, 1:], v[:, :-1])  # equal neighbours among the kept
        redo = kept | same.any(1)
    if not redo.any():
        return values, indices
    idx = np.moveaxis(indices._host_copy(), d, -1).reshape(-1, k).copy()
    for r in np.nonzero(redo)[0]:
        row = x[r].astype(np.float64) if self.dtype.is_floating_point else x[r]
        idx[r] = _stl.topk_row(row.tolist(), k, largest, sorted)
    vals = np.take_along_axis(x, idx, 1)
    shape = list(np.moveaxis(np.empty(self.shape, bool), d, -1).shape[:-1]) + [k]
    vals, idx = (np.moveaxis(a.reshape(shape), -1, d) for a in (vals, idx))
    return (from_host(np.ascontiguousarray(vals), self.dtype, self.device),
            from_host(np.ascontiguousarray(idx), D.int64, self.device))


def select_backward(ctx, grad, _indices_grad=None):
    """d self = zeros with grad scattered to where the values came from."""
    meta, idx = ctx.input_meta[0], ctx.saved["result1"]
    zeros = host_full(tuple(meta.shape), 0.0, grad.dtype, grad.device)
    if not meta.shape:
        return (grad + zeros,)
    return (_c("scatter", zeros, idx, grad, dim=_wrap_dim(ctx.attrs.get("dim", -1), len(meta.shape))),)


SORT = Op("sort", sort_forward, select_backward, "SortBackward0", save=("result1",), outputs=2, nondiff_outputs=(1,),
          variants=("method", "function"))

SORT_STABLE = Op("sort_stable", sort_forward, select_backward, "SortBackward1", save=("result1",), outputs=2,
                 nondiff_outputs=(1,))

TOPK = Op("topk", topk_forward, select_backward, "TopkBackward0", save=("result1",), outputs=2, nondiff_outputs=(1,),
          variants=("method", "function"))


ENTRIES = [SORT, SORT_STABLE, TOPK]
