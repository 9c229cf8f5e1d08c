"""Gather/scatter-style ops: gather, scatter, scatter_add, index_select, index_add, masked_fill,
masked_select, advanced indexing (``index``), ``index_put``, take, index_fill, masked_scatter and
``nonzero``.

All data movement is one launch of ``kernels.index.gather`` or ``scatter``.
Index values are read on the host and checked before any launch (PyTorch's
messages), so no kernel ever writes out of bounds.  Advanced indexing turns
its (broadcast) index tensors into element offsets on the host, then gathers
or scatters with them.  In-place forms write into ``out`` (= self).
"""
import numpy as np

from .. import dtypes as D
from ..kernels import _geometry as G
from ..kernels import elementwise as KE
from ..kernels import index as KI
from ..memory import meta as _meta
from ..tensor import _wrap_dim, empty, from_host
from . import Op, call as _call
from . import complex as _complex

_ATOMIC = ("float32", "float64", "int32", "int64", "complex64", "complex128")    # complex: atomics on the parts


# ------------------------------------------------------------------ helpers
def _stride(t, d):
    return t.stride(d) if t.dim() else 1


def _size(t, d):
    return t.shape[d] if t.dim() else 1


def _zero_dim(strides, d):
    st = list(strides)
    if st:
        st[d] = 0
    return st


def _target(self, out):
    """The tensor written: ``out`` (in-place) or a fresh copy of self."""
    if out is not None:
        return out
    return KE.copy(self, empty(self.shape, self.dtype, self.device))


def _host_index(index):
    return index.detach()._host_copy().astype(np.int64, copy=False)


def _check_range(values, size, dim, exc=RuntimeError):
    bad = (values < 0) | (values >= size)
    if bad.any():
        v = int(values.reshape(-1)[np.argmax(bad.reshape(-1))])
        raise exc(f"index {v} is out of bounds for dimension {dim} with size {size}")


def _check_int64(index, name):
    if index.dtype is not D.int64 and index.dtype is not D.int32:
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")


def _as_int64(index):
    """gather/scatter accept an int32 index (PyTorch 2.x); the kernels read int64."""
    return index if index.dtype is D.int64 else KE.copy(index, empty(index.shape, D.int64, index.device))


def _scatter_into(target, shape, src, s_strides, idx, x_strides, o_strides_fn, scale_fn, accumulate):
    """Scatter into ``target``; atomics need fp32/fp64/int32/int64, else go through a wider buffer."""
    if not accumulate or target.dtype.name in _ATOMIC:
        return KI.scatter(shape, src, s_strides, idx, x_strides, target, o_strides_fn(target),
                          scale_fn(target), accumulate)
    acc = D.float32 if target.dtype.is_floating_point else D.int64
    buf = KE.copy(target, empty(target.shape, acc, target.device))
    KI.scatter(shape, src, s_strides, idx, x_strides, buf, o_strides_fn(buf), scale_fn(buf), True)
    return KE.copy(buf, target)


# ------------------------------------------------------------------ gather / scatter
def _gather_checks(self, index, dim):
    if index.dim() != self.dim() and not (index.dim() <= 1 and self.dim() <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    _check_int64(index, "gather")
    for k in range(index.dim()):
        if k != dim and index.shape[k] > _size(self, k):
            raise RuntimeError(f"Size does not match at dimension {k} expected index {list(index.shape)} to be "
                               f"no larger than self {list(self.shape)} apart from dimension {dim}")
    _check_range(_host_index(index), _size(self, dim), dim)


def gather_forward(self, index, *, dim, sparse_grad=False):
    """out[i][j][k] = self[index[i][j][k]][j][k] (dim 0); out has index's shape."""
    d = _wrap_dim(dim, self.dim())
    _gather_checks(self, index, d)
    index = _as_int64(index)
    out = empty(index.shape, self.dtype, self.device)
    s_strides = _zero_dim(self.stride(), d) if self.dim() == index.dim() else [0] * index.dim()
    return KI.gather(index.shape, self, s_strides, index, index.stride(), out, out.stride(), _stride(self, d))


def gather_backward(ctx, grad):
    m = ctx.input_meta[0]
    index = ctx.saved["index"]
    z = grad.new_zeros(m.shape)
    return z.scatter_add(ctx.attrs["dim"], index, grad), None


GATHER = Op("gather", gather_forward, gather_backward, "GatherBackward0", inputs=("self", "index"), save=("index",),
            variants=("method", "function"))


def _scatter_checks(self, index, src, dim):
    if index.dim() != self.dim() or (src is not None and src.dim() != self.dim()):
        if not (index.dim() <= 1 and self.dim() <= 1):
            raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    _check_int64(index, "scatter")
    for k in range(index.dim()):
        if (k != dim and index.shape[k] > _size(self, k)) or (src is not None and index.shape[k] > _size(src, k)):
            msg = (f"Expected index {list(index.shape)} to be no larger than self {list(self.shape)} apart from "
                   f"dimension {dim}")
            if src is not None:
                msg += f" and to be no larger size than src {list(src.shape)}"
            raise RuntimeError(msg)
    _check_range(_host_index(index), _size(self, dim), dim)


def _scatter(self, index, src, dim, out, accumulate):
    d = _wrap_dim(dim, self.dim())
    _scatter_checks(self, index, src if src.dim() or index.dim() == 0 else None, d)
    index = _as_int64(index)
    target = _target(self, out)
    s_strides = G.expand_strides(src.shape, src.stride(), index.shape) if src.dim() == 0 else \
        list(src.stride())[:index.dim()]
    return _scatter_into(target, index.shape, src, s_strides, index, index.stride(),
                         lambda t: _zero_dim(t.stride(), d), lambda t: _stride(t, d), accumulate)


def scatter_forward(self, index, src, *, dim, out=None):
    """self[index[i][j]][j] = src[i][j] (dim 0) on a copy of self (or in place)."""
    if src.dtype is not self.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    return _scatter(self, index, src, dim, out, False)


def scatter_backward(ctx, grad):
    index = ctx.saved["index"]
    d = ctx.attrs["dim"]
    gs = grad.scatter(d, index, 0.0) if ctx.needs_input_grad[0] else None
    gsrc = grad.gather(d, index) if ctx.needs_input_grad[2] else None
    return gs, None, gsrc


SCATTER = Op("scatter", scatter_forward, scatter_backward, "ScatterBackward0", inputs=("self", "index", "src"),
             save=("index",), variants=("method", "function"), inplace=True)


def scatter_value_forward(self, index, *, dim, value, out=None):
    """self[index[i][j]][j] = value (dim 0)."""
    v = KE.fill(empty((), self.dtype, self.device), value)
    return _scatter(self, index, v, dim, out, False)


def scatter_value_backward(ctx, grad):
    return grad.scatter(ctx.attrs["dim"], ctx.saved["index"], 0.0), None


SCATTER_VALUE = Op("scatter_value", scatter_value_forward, scatter_value_backward, "ScatterBackward1",
                   inputs=("self", "index"), save=("index",))


def scatter_add_forward(self, index, src, *, dim, out=None):
    """self[index[i][j]][j] += src[i][j] (dim 0), duplicates accumulate."""
    if src.dtype is not self.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    return _scatter(self, index, src, dim, out, True)


def scatter_add_backward(ctx, grad):
    gsrc = grad.gather(ctx.attrs["dim"], ctx.saved["index"]) if ctx.needs_input_grad[2] else None
    return grad, None, gsrc


SCATTER_ADD = Op("scatter_add", scatter_add_forward, scatter_add_backward, "ScatterAddBackward0",
                 inputs=("self", "index", "src"), save=("index",), variants=("method", "function"), inplace=True)


# ------------------------------------------------------------------ index_select / index_add
def _check_vector_index(index, name, size, exc=IndexError):
    if index.dim() > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector")
    if index.dtype not in (D.int64, D.int32):
        raise RuntimeError(f"{name}(): Expected dtype int32 or int64 for index")
    v = _host_index(index)
    if ((v < 0) | (v >= size)).any():
        raise exc("index out of range in self")


def index_select_forward(self, index, *, dim):
    """out = self with ``dim`` replaced by self[..., index[k], ...] for k in range(len(index))."""
    d = _wrap_dim(dim, self.dim())
    _check_vector_index(index, "index_select", _size(self, d))
    shape = list(self.shape)
    n = index.numel()
    if shape:
        shape[d] = n
    out = empty(shape, self.dtype, self.device)
    x_strides = [0] * len(shape)
    if shape:
        x_strides[d] = _stride(index, 0) if index.dim() else 0
    return KI.gather(shape, self, _zero_dim(self.stride(), d), index, x_strides, out, out.stride(), _stride(self, d))


def index_select_backward(ctx, grad):
    m = ctx.input_meta[0]
    return grad.new_zeros(m.shape).index_add(ctx.attrs["dim"], ctx.saved["index"], grad), None


INDEX_SELECT = Op("index_select", index_select_forward, index_select_backward, "IndexSelectBackward0",
                  inputs=("self", "index"), save=("index",), variants=("method", "function"))


def index_add_forward(self, index, source, *, dim, alpha=1, out=None):
    """self[..., index[k], ...] += alpha * source[..., k, ...] along ``dim``."""
    d = _wrap_dim(dim, self.dim())
    n = index.numel()
    if source.dim() and _size(source, d) != n:
        raise RuntimeError(f"index_add_(): Number of indices ({n}) should be equal to source.size(dim): "
                           f"({source.shape[d]}), for dim: {d}")
    if source.dim() != self.dim() and source.dim() > 0 or any(
            k != d and source.shape[k] != self.shape[k] for k in range(source.dim())):
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {list(self.shape)} source.shape = {list(source.shape)}")
    _check_vector_index(index, "index_add", _size(self, d))
    target = _target(self, out)
    if alpha != 1:
        source = KE.binary(KE.mul_fn, source, KE.fill(empty((), source.dtype, source.device), alpha),
                           empty(source.shape, source.dtype, source.device))
    shape = list(source.shape) if source.dim() else [n]
    x_strides = [0] * len(shape)
    x_strides[d] = _stride(index, 0) if index.dim() else 0
    s_strides = list(source.stride()) if source.dim() else [0]
    if not index.dim() and not self.dim():
        shape, x_strides, s_strides = [], [], []
    return _scatter_into(target, shape, source, s_strides, index, x_strides,
                         lambda t: _zero_dim(t.stride(), d) if t.dim() else [0] * len(shape),
                         lambda t: _stride(t, d), True)


def index_add_backward(ctx, grad):
    d, alpha = ctx.attrs["dim"], ctx.attrs.get("alpha", 1)
    gsrc = None
    if ctx.needs_input_grad[2]:
        gsrc = grad.index_select(d, ctx.saved["index"]) if grad.dim() else grad.reshape(1)
        if alpha != 1:
            gsrc = gsrc.mul(alpha)
        gsrc = gsrc.reshape(ctx.input_meta[2].shape)
    return grad, None, gsrc


INDEX_ADD = Op("index_add", index_add_forward, index_add_backward, "IndexAddBackward0",
               inputs=("self", "index", "source"), save=("index",), variants=("method", "function"), inplace=True)


# ------------------------------------------------------------------ masked_fill / masked_select
def _check_mask(mask, name):
    if mask.dtype is not D.bool_:
        raise RuntimeError(f"{name} only supports boolean masks, but got mask with dtype "
                           f"{_cname(mask.dtype)}")


def _cname(dt):
    return {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
            "uint8": "unsigned char", "float32": "float", "float64": "double"}.get(dt.name, dt.name)


def _masked_fill(self, mask, value, out):
    _check_mask(mask, "masked_fill_")
    if value.dim() != 0:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.dim()} dimension(s).")
    shape = G.broadcast_shapes(self.shape, mask.shape)
    if out is not None:
        if tuple(shape) != tuple(out.shape):
            raise RuntimeError(f"output with shape {list(out.shape)} doesn't match the broadcast shape "
                               f"{list(shape)}")
        o = out
    else:
        o = empty(shape, self.dtype, self.device)
    if o.dtype._kind == 3:
        return _complex.ternary(KI.masked_fill_fn, mask, value, self, o)
    return KE.ternary(KI.masked_fill_fn, mask, value, self, o)


def masked_fill_forward(self, mask, *, value, out=None):
    """out = value where mask else self (mask broadcasts)."""
    return _masked_fill(self, mask, KE.fill(empty((), self.dtype, self.device), value), out)


def masked_fill_backward(ctx, grad):
    return grad.masked_fill(ctx.saved["mask"], 0), None


MASKED_FILL = Op("masked_fill", masked_fill_forward, masked_fill_backward, "MaskedFillBackward0",
                 inputs=("self", "mask"), save=("mask",), variants=("method", "function"), inplace=True)


def masked_fill_tensor_forward(self, mask, value, *, out=None):
    return _masked_fill(self, mask, value, out)


def masked_fill_tensor_backward(ctx, grad):
    mask = ctx.saved["mask"]
    kept = grad.masked_fill(mask, 0)
    gv = grad.sub(kept).sum() if ctx.needs_input_grad[2] else None
    return kept, None, gv


MASKED_FILL_TENSOR = Op("masked_fill_tensor", masked_fill_tensor_forward, masked_fill_tensor_backward,
                        "MaskedFillBackward1", inputs=("self", "mask", "value"), save=("mask",))


def _mask_offsets(mask, shape, strides):
    """Element offsets (int64 numpy, row-major order) of the True positions of ``mask`` broadcast to ``shape``."""
    m = np.broadcast_to(mask.detach()._host_copy(), shape)
    if m.ndim == 0:
        return np.zeros(int(m), dtype=np.int64)
    coords = np.nonzero(m)
    off = np.zeros(coords[0].shape, dtype=np.int64)
    for c, s in zip(coords, strides):
        off += c * s
    return off


def masked_select_forward(self, mask):
    """1-D tensor of self's elements where mask is True (both broadcast), in row-major order."""
    if mask.dtype is not D.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = G.broadcast_shapes(self.shape, mask.shape)
    off = _mask_offsets(mask, shape, G.expand_strides(self.shape, self.stride(), shape))
    return _gather_offsets(self, off)


def _gather_offsets(self, off):
    idx = from_host(off, D.int64, self.device)
    out = empty(off.shape, self.dtype, self.device)
    return KI.gather(off.shape, self, [0] * off.ndim, idx, idx.stride(), out, out.stride(), 1)


def masked_select_backward(ctx, grad):
    mask = ctx.saved["mask"]
    shape = G.broadcast_shapes(ctx.input_meta[0].shape, mask.shape)
    flat = mask.expand(shape).reshape(-1)
    return grad.new_zeros(flat.shape).index_put((flat,), grad).reshape(shape), None


MASKED_SELECT = Op("masked_select", masked_select_forward, masked_select_backward, "MaskedSelectBackward0",
                   inputs=("self", "mask"), save=("mask",), variants=("method", "function"))


# ------------------------------------------------------------------ advanced indexing
def expand_bool_indices(self, indices):
    """Bool/uint8 masks -> one int64 index tensor per masked dim (as PyTorch); checks shapes and dtypes."""
    res = []
    for i in indices:
        if i is None:
            res.append(None)
            continue
        if i.dtype in (D.bool_, D.uint8):
            d = len(res)
            for k, s in enumerate(i.shape):
                if d + k >= self.dim() or s != self.shape[d + k]:
                    raise IndexError(f"The shape of the mask {list(i.shape)} at index {k} does not match the "
                                     f"shape of the indexed tensor {list(self.shape)} at index {d + k}")
            if i.is_meta:
                raise NotImplementedError(_meta.NONZERO)
            m = i.detach()._host_copy()
            if i.dim() == 0:
                res.append(from_host(np.zeros(int(bool(m)), np.int64), D.int64, self.device))
                continue
            res.extend(from_host(c, D.int64, self.device) for c in np.nonzero(m))
        elif i.dtype.is_floating_point:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        else:
            res.append(i)
    if len(res) > self.dim():
        raise IndexError(f"too many indices for tensor of dimension {self.dim()}")
    return tuple(res)


def _index_plan(self, indices, strides):
    """(result shape, strides of self per result dim, offsets array (broadcast shape B)).

    Advanced dims next to each other put B where the first one was; separated
    ones put B first (PyTorch/numpy rule).
    """
    adv = [k for k, i in enumerate(indices) if i is not None]
    arrs = [_host_index(indices[k]) for k in adv]
    try:
        b = np.broadcast_shapes(*[a.shape for a in arrs])
    except ValueError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                         + ", ".join(str(list(a.shape)) for a in arrs)) from None
    off = np.zeros(b, dtype=np.int64)
    for k, a in zip(adv, arrs):
        size = self.shape[k]
        bad = (a < -size) | (a >= size)
        if bad.any():
            v = int(a.reshape(-1)[np.argmax(bad.reshape(-1))])
            raise IndexError(f"index {v} is out of bounds for dimension {k} with size {size}")
        off = off + np.where(a < 0, a + size, a) * strides[k]
    rest = [k for k in range(self.dim()) if k not in adv]
    contiguous = adv == list(range(adv[0], adv[-1] + 1))
    before = [k for k in rest if k < adv[0]] if contiguous else []
    after = [k for k in rest if k not in before]
    shape = [self.shape[k] for k in before] + list(b) + [self.shape[k] for k in after]
    s_strides = [strides[k] for k in before] + [0] * len(b) + [strides[k] for k in after]
    x_strides = [0] * len(before) + list(G.contiguous_strides(b)) + [0] * len(after)
    return tuple(shape), s_strides, x_strides, off


def index_forward(self, *, indices):
    """self[indices] for a tuple of int64 index tensors / None (bool masks already expanded)."""
    shape, s_strides, x_strides, off = _index_plan(self, indices, self.stride())
    idx = from_host(off, D.int64, self.device)
    out = empty(shape, self.dtype, self.device)
    return KI.gather(shape, self, s_strides, idx, x_strides, out, out.stride(), 1)


def index_backward(ctx, grad):
    m = ctx.input_meta[0]
    return (grad.new_zeros(m.shape).index_put(ctx.attrs["indices"], grad, accumulate=True),)


INDEX = Op("index", index_forward, index_backward, "IndexBackward0")


def index_put_forward(self, values, *, indices, accumulate=False, out=None):
    """self[indices] = values (or += when ``accumulate``), values broadcast to the indexing result's shape."""
    target = _target(self, out)
    if not accumulate or target.dtype.name in _ATOMIC:
        buf = target
    else:
        buf = KE.copy(target, empty(target.shape, D.float32 if target.dtype.is_floating_point else D.int64,
                                    target.device))
    shape, o_strides, x_strides, off = _index_plan(self, indices, buf.stride())
    if values.dim() > len(shape) or any(v != 1 and v != s for v, s in zip(reversed(values.shape), reversed(shape))):
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values.shape)} cannot be broadcast to "
                           f"indexing result of shape {list(shape)}")
    if values.dtype is not self.dtype:
        values = KE.copy(values, empty(values.shape, self.dtype, values.device))
    idx = from_host(off, D.int64, self.device)
    KI.scatter(shape, values, G.expand_strides(values.shape, values.stride(), shape), idx, x_strides, buf,
               o_strides, 1, accumulate)
    if buf is not target:
        KE.copy(buf, target)
    return target


def index_put_backward(ctx, grad):
    indices = ctx.attrs["indices"]
    gs = None
    if ctx.needs_input_grad[0]:
        gs = grad if ctx.attrs.get("accumulate") else grad.index_put(indices, grad.new_zeros(()))
    gv = grad._index(indices) if ctx.needs_input_grad[1] else None
    return gs, gv


INDEX_PUT = Op("index_put", index_put_forward, index_put_backward, "IndexPutBackward0", inputs=("self", "values"),
               variants=("method", "function"), inplace=True)


# ------------------------------------------------------------------ take / index_fill / masked_scatter
def _flat_offsets(t, flat):
    """Element offsets of row-major positions ``flat`` (numpy int64) of tensor ``t``."""
    off = np.zeros(flat.shape, dtype=np.int64)
    if t.dim():
        for c, st in zip(np.unravel_index(flat, t.shape), t.stride()):
            off += c * st
    return off


def take_forward(self, index):
    """out = self.flatten()[index] (negative indices count from the end); out has index's shape."""
    if index.dtype is not D.int64:
        raise RuntimeError("take(): Expected a long tensor for index, but got " + index.dtype.name)
    v, n = _host_index(index), self.numel()
    bad = (v < -n) | (v >= n)
    if bad.any():
        raise IndexError(f"out of range: tried to access index {int(v.reshape(-1)[np.argmax(bad.reshape(-1))])} "
                         f"on a tensor of {n} elements.")
    return _gather_offsets(self, _flat_offsets(self, np.where(v < 0, v + n, v)))


def take_backward(ctx, grad):
    m = ctx.input_meta[0]
    n = 1
    for d in m.shape:
        n *= d
    flat = grad.new_zeros((n,)).index_put((ctx.saved["index"].reshape(-1),), grad.reshape(-1), accumulate=True)
    return flat.reshape(m.shape), None


TAKE = Op("take", take_forward, take_backward, "TakeBackward0", inputs=("self", "index"), save=("index",),
          variants=("method", "function"))


def index_fill_forward(self, index, *, dim, value, out=None):
    """self[..., index[k], ...] = value along ``dim`` (negative indices count from the end)."""
    d = _wrap_dim(dim, self.dim())
    if index.dim() > 1:
        raise IndexError("index_fill_(): Expected a 1-D index tensor")
    if index.dtype is not D.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    size = _size(self, d)
    v = _host_index(index).reshape(-1)
    bad = (v < -size) | (v >= size)
    if bad.any():
        raise IndexError(f"index {int(v[np.argmax(bad)])} is out of bounds for dimension {d} with size {size}")
    idx = from_host(np.where(v < 0, v + size, v), D.int64, self.device)
    target = _target(self, out)
    val = KE.fill(empty((), self.dtype, self.device), value)
    shape = list(self.shape) if self.dim() else [1]
    shape[d] = v.size
    x_strides = [0] * len(shape)
    x_strides[d] = 1
    return _scatter_into(target, shape, val, [0] * len(shape), idx, x_strides,
                         lambda t: _zero_dim(t.stride(), d) if t.dim() else [0], lambda t: _stride(t, d), False)


def index_fill_backward(ctx, grad):
    return grad.index_fill(ctx.attrs["dim"], ctx.saved["index"], 0), None


INDEX_FILL = Op("index_fill", index_fill_forward, index_fill_backward, "IndexFillBackward0", inputs=("self", "index"),
                save=("index",), variants=("method", "function"), inplace=True)


def masked_scatter_forward(self, mask, source, *, out=None):
    """Copies source's first k elements (row-major) into the k True positions of mask (broadcast)."""
    if mask.dtype is not D.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype {_cname(mask.dtype)}")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"masked_scatter_: expected self and source to have same dtypes but got "
                           f"{_cname(self.dtype).title()} and {_cname(source.dtype).title()}")
    shape = G.broadcast_shapes(self.shape, mask.shape)
    target = out if out is not None else KE.copy(self, empty(shape, self.dtype, self.device))
    if tuple(target.shape) != tuple(shape):
        raise RuntimeError(f"output with shape {list(target.shape)} doesn't match the broadcast shape {list(shape)}")
    off = _mask_offsets(mask, shape, target.stride())
    if off.size > source.numel():
        raise RuntimeError("Number of elements of source < number of ones in mask")
    src_off = _flat_offsets(source, np.arange(off.size, dtype=np.int64))
    src = _gather_offsets(source, src_off)
    idx = from_host(off, D.int64, self.device)
    return KI.scatter(off.shape, src, src.stride(), idx, idx.stride(), target, [0], 1)


def masked_scatter_backward(ctx, grad):
    mask = ctx.saved["mask"]
    gs = grad.masked_fill(mask, 0) if ctx.needs_input_grad[0] else None
    gsrc = None
    if ctx.needs_input_grad[2]:
        m = ctx.input_meta[2]
        n = 1
        for d in m.shape:
            n *= d
        picked = grad.masked_select(mask)
        gsrc = _call("cat", picked, grad.new_zeros((n - picked.shape[0],))).reshape(m.shape)
    return gs, None, gsrc


MASKED_SCATTER = Op("masked_scatter", masked_scatter_forward, masked_scatter_backward, "MaskedScatterBackward0",
                    inputs=("self", "mask", "source"), save=("mask",), variants=("method", "function"), inplace=True)


def nonzero_forward(self):
    """(n, ndim) int64 coordinates of the non-zero elements in row-major order (computed on the host)."""
    a = self.detach()._host_copy()
    return from_host(np.argwhere(a) if a.ndim else np.zeros((int(a != 0), 0), np.int64), D.int64, self.device)


NONZERO = Op("nonzero", nonzero_forward, variants=("method", "function"))


ENTRIES = [GATHER, SCATTER, SCATTER_VALUE, SCATTER_ADD, INDEX_SELECT, INDEX_ADD, MASKED_FILL, MASKED_FILL_TENSOR,
           MASKED_SELECT, INDEX, INDEX_PUT, TAKE, INDEX_FILL, MASKED_SCATTER, NONZERO]
