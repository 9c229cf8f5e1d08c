"""Reducing scatters: scatter_reduce and index_reduce (sum, prod, mean, amax, amin; ``include_self``).

Index values are read and checked on the host (as every index op does), the scattered elements sorted
stably by target there, then one launch of ``kernels.segment`` reduces each target's sources in
iteration order.  The backward rules are ATen's ``scatter_reduce_backward`` / ``index_reduce_backward``
(one rule: scatter_reduce walks the index with gather / scatter_add / scatter, index_reduce with
index_select / index_add / index_fill).
"""
import warnings

import numpy as np

from .. import dtypes as D
from ..kernels import elementwise as KE
from ..kernels import segment as KG
from ..tensor import _wrap_dim, empty, from_host
from . import Op, call
from .index import _host_index, _scatter_checks, _size, _target

_SCATTER_REDUCE = ("sum", "prod", "mean", "amax", "amin")
_INDEX_REDUCE = ("prod", "mean", "amax", "amin")
_warned = [False]


def _fill(reduce, dt):
    """The identity of ``reduce`` in dtype ``dt`` (a Python number for the kernel)."""
    if reduce in ("sum", "mean"):
        return 0.0 if dt.is_floating_point else 0
    if reduce == "prod":
        return 1.0 if dt.is_floating_point else 1
    if dt.is_floating_point:
        return float("-inf") if reduce == "amax" else float("inf")
    return D.iinfo(dt).min if reduce == "amax" else D.iinfo(dt).max


def _reduce_into(target, src, tgt, soff, reduce, include_self):
    """target[tgt[i]] = reduce over i (and target itself when include_self) of src[soff[i]]: numpy int64 element
    offsets in iteration order, sorted stably by target into segments."""
    if tgt.size == 0:
        return target
    order = np.argsort(tgt, kind="stable")
    tgt, soff = tgt[order], soff[order]
    uniq, start, count = np.unique(tgt, return_index=True, return_counts=True)
    dev = target.device
    put = [from_host(np.ascontiguousarray(a, np.int64), D.int64, dev) for a in (soff, start, count, uniq)]
    return KG.segment_reduce(src, put[0], put[1], put[2], put[3], target, int(count.max()), reduce, include_self,
                             _fill(reduce, target.dtype))


def _offsets(shape, strides, dim=None, along=None):
    """Element offsets (numpy int64, of ``shape``) of the coordinates of ``shape`` under ``strides``; coordinate
    ``dim`` replaced by ``along`` (an array of ``shape``) when given."""
    off = np.zeros(shape, np.int64)
    for k, (n, st) in enumerate(zip(shape, strides)):
        c = along if k == dim else np.arange(n, dtype=np.int64).reshape([-1 if j == k else 1 for j in range(len(shape))])
        off = off + c * st
    return off


def _reduce_name(reduce):
    return {"max": "amax", "min": "amin"}.get(reduce, reduce)


# ------------------------------------------------------------------ scatter_reduce
def scatter_reduce_forward(self, index, src, *, dim, reduce, include_self=True, out=None):
    """self[..., index[i][j], ...] = reduce(self (include_self), src[i][j], ...) along ``dim`` (dim 0: the i's)."""
    reduce = _reduce_name(reduce)
    if reduce not in _SCATTER_REDUCE:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if src.dtype is not self.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    d = _wrap_dim(dim, self.dim())
    _scatter_checks(self, index, src, d)
    target = _target(self, out)
    if index.numel() == 0:
        return target
    shape = tuple(index.shape) if index.dim() else (1,)
    along = _host_index(index).reshape(shape)
    t_strides = target.stride() if target.dim() else (0,)
    s_strides = src.stride()[:len(shape)] if src.dim() else (0,)
    tgt = _offsets(shape, t_strides, d, along).reshape(-1)
    return _reduce_into(target, src, tgt, _offsets(shape, s_strides).reshape(-1), reduce, include_self)


def _walk_scatter(dim, index):
    """(gather, add, zero): grad.gather, t.scatter_add(src), t.scatter(0) along ``dim`` at ``index``."""
    return (lambda t: t.gather(dim, index), lambda t, s: t.scatter_add(dim, index, s),
            lambda t: t.scatter(dim, index, 0.0))


def _walk_index(dim, index):
    """(gather, add, zero) of index_reduce: index_select, index_add, index_fill along ``dim`` at ``index``."""
    return (lambda t: t.index_select(dim, index), lambda t, s: t.index_add(dim, index, s),
            lambda t: t.index_fill(dim, index, 0))


def _reduce_backward(ctx, grad, walk, src_name, redo):
    """ATen's scatter_reduce_backward (index_reduce_backward with index_select / index_add / index_fill):
    ``walk`` = (gather, add, zero) along the op's index; ``redo(self, src)`` reruns the op."""
    self, src, result = ctx.saved["self"], ctx.saved[src_name], ctx.saved["result"]
    reduce, include_self = _reduce_name(ctx.attrs["reduce"]), ctx.attrs.get("include_self", True)
    gather, add, zero = walk
    if reduce == "sum":
        gs, gsrc = grad, gather(grad)
    elif reduce == "mean":
        n = add(self.new_ones(self.shape) if include_self else self.new_zeros(self.shape), src.new_ones(src.shape))
        n = n.masked_fill(n == 0, 1)
        gs, gsrc = grad / n, gather(grad) / gather(n)
    elif reduce == "prod":
        masked_self = self.masked_fill(self == 0, 1)
        gs = grad * redo(masked_self, src) / masked_self
        src_zero = src == 0
        single = src_zero & (gather(add(self.new_zeros(self.shape), src_zero.to(self.dtype))) == 1)
        gsrc = call("where", single, gather(grad * redo(self, src.masked_fill(single, 1))),
                    gather(grad * result) / src.masked_fill(src_zero, 1))
    else:       # amax / amin: the gradient shared evenly between the elements equal to the result
        self_is = (self == result).to(self.dtype)
        src_is = (src == gather(result)).to(self.dtype)
        share = grad / add(self_is, src_is)
        gs, gsrc = self_is * share, src_is * gather(share)
    if not include_self:
        gs = zero(gs)
    return (gs if ctx.needs_input_grad[0] else None), None, (gsrc if ctx.needs_input_grad[2] else None)


def scatter_reduce_backward(ctx, grad):
    d, index = ctx.attrs["dim"], ctx.saved["index"]
    return _reduce_backward(ctx, grad, _walk_scatter(d, index), "src", lambda s, v: s.scatter_reduce(
        d, index, v, ctx.attrs["reduce"], include_self=ctx.attrs.get("include_self", True)))


SCATTER_REDUCE = Op("scatter_reduce", scatter_reduce_forward, scatter_reduce_backward, "ScatterReduceBackward0",
                    inputs=("self", "index", "src"), save=("self", "index", "src", "result"),
                    variants=("method", "function"), inplace=True)


# ------------------------------------------------------------------ index_reduce
def index_reduce_forward(self, index, source, *, dim, reduce, include_self=True, out=None):
    """self[..., index[k], ...] = reduce(self (include_self), source[..., k, ...], ...) along ``dim``."""
    if not _warned[0]:
        _warned[0] = True
        warnings.warn("index_reduce() is in beta and the API may change at any time.", UserWarning, stacklevel=2)
    if reduce not in _INDEX_REDUCE:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    d = _wrap_dim(dim, self.dim())
    if index.dim() > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, but got dim: {index.dim()} with type: "
                         f"{D.TENSOR_TYPE_NAMES[index.dtype][:-6]} and size: {list(index.shape)}")
    if index.dtype not in (D.int64, D.int32):
        raise RuntimeError("index_reduce_(): Expected dtype int32/int64 for index")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"index_reduce_(): self ({self.dtype}) and source ({source.dtype}) must have the same "
                           "scalar type")
    n = index.numel()
    if source.dim() and _size(source, d) != n:
        raise RuntimeError(f"index_reduce_(): Number of indices ({n}) should be equal to source.size(dim): "
                           f"({source.shape[d]}), for dim: {d}")
    if source.dim() != self.dim() and source.dim() > 0 or any(
            k != d and source.shape[k] != self.shape[k] for k in range(source.dim())):
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {list(self.shape)} source.shape = {list(source.shape)}")
    v = _host_index(index).reshape(-1)
    if ((v < 0) | (v >= _size(self, d))).any():
        raise IndexError("index out of range in self")
    target = _target(self, out)
    shape = tuple(source.shape) if source.dim() else (1,)
    if n == 0 or 0 in shape:
        return target
    along = v.reshape([-1 if k == d else 1 for k in range(len(shape))])
    t_strides = target.stride() if target.dim() else (0,)
    s_strides = source.stride() if source.dim() else (0,)
    tgt = _offsets(shape, t_strides, d, np.broadcast_to(along, shape)).reshape(-1)
    return _reduce_into(target, source, tgt, _offsets(shape, s_strides).reshape(-1), reduce, include_self)


def index_reduce_backward(ctx, grad):
    d, index = ctx.attrs["dim"], ctx.saved["index"]
    return _reduce_backward(ctx, grad, _walk_index(d, index), "source", lambda s, v: s.index_reduce(
        d, index, v, ctx.attrs["reduce"], include_self=ctx.attrs.get("include_self", True)))


INDEX_REDUCE = Op("index_reduce", index_reduce_forward, index_reduce_backward, "IndexReduceBackward0",
                  inputs=("self", "index", "source"), save=("self", "index", "source", "result"),
                  variants=("method", "function"), inplace=True)

ENTRIES = [SCATTER_REDUCE, INDEX_REDUCE]
