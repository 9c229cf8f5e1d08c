"""Sorting: ``sort`` (ascending or descending) and ``topk``, one stable bitonic-sort kernel
(tgrad/kernels/sort.py) over the rows of the sorted dim; equal elements as ATen's cpu kernels order them
(``_aten_ties``).  Both return (values, int64 indices);
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
    """Stable with ``stable=True``; else ATen's cpu order of equal elements (``std::sort``, below)."""
    d = _wrap_dim(dim, self.dim())
    values, indices = _sorted(self, d, self.shape[d] if self.dim() else 1, descending)
    radix = self.dim() == 1 and not descending and not self.dtype.is_floating_point and self.numel() >= 32768
    if not stable and self.dim() and self.shape[d] > 1 and not radix and _L.RECORD is None:
        return _aten_ties(self, d, self.shape[d], descending, values, indices, "sort")
    return values, indices


def topk_forward(self, *, k, dim=-1, largest=True, sorted=True):
    """The ``k`` largest (smallest) along ``dim``, tied elements in ATen's cpu order (below)."""
    d = _wrap_dim(dim, self.dim())
    n = self.shape[d] if self.dim() else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    values, indices = _sorted(self, d, k, largest)
    if k and self.dim() and _L.RECORD is None:
        return _aten_ties(self, d, k, largest, values, indices, "topk", sorted)
    return values, indices


HOST_LIMIT = 1 << 16     # elements of tied rows redone on the host per call, at most (Python's pace)


def _aten_ties(self, d, k, largest, values, indices, op, sorted=True):
    """ATen's cpu sort (stable=False) and topk leave equal elements in the order libstdc++'s ``std::sort`` /
    ``nth_element`` / ``partial_sort`` do (kernels/_stl.py), not the stable kernel's: rows where kept elements
    tie (and, for an unsorted topk on the nth_element path, every row) are redone on the host, on cuda too (one
    answer on both devices).  Not while a compiled step records (a host read: its replay keeps the stable
    order), nor past ``HOST_LIMIT`` elements of such rows (the stable order then)."""
    n = self.shape[d]
    x = np.moveaxis(self.detach()._host_copy(), d, -1).reshape(-1, n)
    v = np.moveaxis(values._host_copy(), d, -1).reshape(-1, k)
    if op == "topk" and not sorted and k * 64 > n:
        redo = np.ones(x.shape[0], bool)
    else:
        def before(a, b):           # a ranks strictly before b (NaN first when largest)
            if not self.dtype.is_floating_point:
                return a > b if largest else a < b
            an, bn = np.isnan(a), np.isnan(b)
            return ((an & ~bn) | (a > b)) if largest else ((~an & bn) | (a < b))
        redo = (~before(v[:, :-1], v[:, 1:]) & ~before(v[:, 1:], v[:, :-1])).any(1)     # equal neighbours
        if op == "topk":
            redo |= (~before(v[:, -1:], x)).sum(1) > k                 # ties at the k-th reach past it
    if not redo.any() or redo.sum() * n > HOST_LIMIT:
        return values, indices
    idx = np.moveaxis(indices._host_copy(), d, -1).reshape(-1, k).copy()
    for r in np.nonzero(redo)[0]:
        row = (x[r].astype(np.float64) if self.dtype.is_floating_point else x[r]).tolist()
        idx[r] = _stl.topk_row(row, k, largest, sorted) if op == "topk" else _stl.sort_row(row, largest)
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
