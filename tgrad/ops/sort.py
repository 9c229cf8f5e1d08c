"""Sorting: ``sort`` (stable, ascending or descending) and ``topk``, one bitonic-sort kernel
(tgrad/kernels/sort.py) over the rows of the sorted dim.  Both return (values, int64 indices);
the values' gradient is scattered back to the positions the indices name (PyTorch's rule), so the
double backward is a gather.  ``argsort`` and ``msort`` are sort's indices / sort over dim 0.
"""
from .. import dtypes as D
from ..kernels import sort as KS
from ..tensor import _wrap_dim, empty
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
    return _sorted(self, d, k, largest)


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
