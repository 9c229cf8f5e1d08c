"""``Tensor.__getitem__`` / ``__setitem__``.

Basic indices (ints, slices, None, Ellipsis) make views through the
select/slice/unsqueeze ops, so ``x[0]`` has ``SelectBackward0`` as PyTorch.
Advanced indices (bool masks, integer tensors or lists) go through ``index``.
"""
import numpy as np

from . import dtypes as D
from .tensor import Tensor


def _is_basic(i):
    return i is None or i is Ellipsis or isinstance(i, (int, slice, np.integer)) and not isinstance(i, bool)


def _expand_ellipsis(index, ndim):
    n_real = sum(1 for i in index if i is not None and i is not Ellipsis
                 and not (isinstance(i, Tensor) and i.dtype is D.bool_)) + sum(
        i.dim() for i in index if isinstance(i, Tensor) and i.dtype is D.bool_)
    if sum(1 for i in index if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_real > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    out = []
    for i in index:
        if i is Ellipsis:
            out.extend([slice(None)] * (ndim - n_real))
        else:
            out.append(i)
    return out


def _normalize(index):
    if not isinstance(index, tuple):
        index = (index,)
    res = []
    for i in index:
        if isinstance(i, (list, np.ndarray)) or (isinstance(i, bool)):
            from .creation import tensor
            i = tensor(i)
        if isinstance(i, Tensor) and i.dim() == 0 and i.dtype is not D.bool_ and not i.dtype.is_floating_point:
            i = int(i.item())
        res.append(i)
    return res


def getitem(t, index):
    index = _expand_ellipsis(_normalize(index), t.dim())
    if not all(_is_basic(i) for i in index):
        from .ops import advanced_index
        return advanced_index.getitem(t, index)
    out = t
    d = 0
    for i in index:
        if i is None:
            out = out.unsqueeze(d)
            d += 1
        elif isinstance(i, slice):
            if not (i.start in (None, 0) and i.stop is None and i.step in (None, 1)):
                out = out._slice(d, _int(i.start), _int(i.stop), 1 if i.step is None else _int(i.step))
            d += 1
        else:
            size = out.shape[d]
            if not -size <= int(i) < size:
                raise IndexError(f"index {int(i)} is out of bounds for dimension {d} with size {size}")
            out = out.select(d, int(i))
    if out is t:
        out = t._alias()
    return out


def _int(v):
    return None if v is None else int(v)


def setitem(t, index, value):
    target = getitem(t, index)
    if target._base is None and target is not t and not isinstance(target, Tensor):
        raise RuntimeError("__setitem__ on a non-view")
    if isinstance(value, Tensor):
        target.copy_(value)
    else:
        target.fill_(value)
