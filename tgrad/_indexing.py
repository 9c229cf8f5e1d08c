"""``Tensor.__getitem__`` / ``__setitem__`` with PyTorch's rules.

Basic indices (ints, slices, None, Ellipsis) are applied first as views
through the select/slice/unsqueeze ops, so ``x[0]`` has ``SelectBackward0``.
Advanced indices (bool masks, integer tensors or lists) are collected at the
dims they apply to and handed to the ``index`` op (``IndexBackward0``); ints
count as basic, so ``x[0, :, [1, 2]]`` has shape (3, 2) for a (2, 3, 4) x,
as in PyTorch (numpy would give (2, 3)).  ``__setitem__`` writes into the
basic view with ``copy_``/``fill_`` or, with advanced indices, ``index_put_``.
"""
import numpy as np

from . import dtypes as D
from ._creation import scalar_tensor, tensor
from .ops.index import expand_bool_indices
from .tensor import Tensor


def _sequence_as_tuple(index):
    """PyTorch's ``treatSequenceAsTuple``: a list shorter than 32 holding a tensor, sequence, slice, None or
    Ellipsis is a tuple of indices (``x[[[0, 1], [2, 2]]]`` is ``x[[0, 1], [2, 2]]``)."""
    return isinstance(index, list) and len(index) < 32 and any(
        i is None or i is Ellipsis or isinstance(i, (Tensor, list, tuple, np.ndarray, slice)) for i in index)


def _normalize(t, index):
    if _sequence_as_tuple(index):
        index = tuple(index)
    elif not isinstance(index, tuple):
        index = (index,)
    res = []
    for i in index:
        if isinstance(i, (str, bytes)):
            raise TypeError(f"new(): invalid data type '{type(i).__name__}'")
        if isinstance(i, (list, np.ndarray)) or isinstance(i, (bool, np.bool_)):
            i = tensor(i, device=t.device, dtype=D.int64 if np.size(i) == 0 else None)
        if isinstance(i, Tensor) and i.dim() == 0 and i.dtype is not D.bool_ and not i.dtype.is_floating_point:
            i = int(i.item())
        elif isinstance(i, Tensor) and i.dtype.is_floating_point:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        elif not (i is None or i is Ellipsis or isinstance(i, (int, np.integer, slice, Tensor))):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                             "valid indices (got " + type(i).__name__ + ")")
        res.append(i)
    return res


def _consumed(i):
    """How many dims of the indexed tensor an index item uses."""
    if i is None or i is Ellipsis:
        return 0
    if isinstance(i, Tensor) and i.dtype in (D.bool_, D.uint8):
        return i.dim()
    return 1


def _apply_basic(t, index):
    """Views for the basic items; returns (view, advanced indices by dim of the view or None)."""
    if sum(1 for i in index if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(_consumed(i) for i in index)
    if t.dim() == 0 and len(index) == 1 and isinstance(index[0], (int, np.integer)):
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in "
                         "C++ to convert a 0-dim tensor to a number")
    if used > t.dim():
        raise IndexError(f"too many indices for tensor of dimension {t.dim()}")
    out, d, real, adv = t, 0, 0, []      # d: dim of the view so far; real: dim of t (for error messages)
    for i in index:
        if i is Ellipsis:
            d += t.dim() - used
            real += t.dim() - used
        elif i is None:
            out = out.unsqueeze(d)
            d += 1
        elif isinstance(i, slice):
            step = 1 if i.step is None else int(i.step)
            if not (i.start in (None, 0) and i.stop is None and step == 1):
                out = out._slice(d, _int(i.start), _int(i.stop), step)
            d += 1
            real += 1
        elif isinstance(i, Tensor):
            if i.dim() == 0 and i.dtype is D.bool_:
                out = out.unsqueeze(d)
            adv.append((d, i))
            d += max(_consumed(i), 1)
            real += _consumed(i)
        else:
            size = out.shape[d]
            if not -size <= int(i) < size:
                raise IndexError(f"index {int(i)} is out of bounds for dimension {real} with size {size}")
            out = out.select(d, int(i))
            real += 1
    return out, _by_dim(adv)


def _by_dim(adv):
    """[(dim, index)] -> a list with each index at its dim and None elsewhere (a k-dim mask fills k dims)."""
    res = []
    for d, i in adv:
        res += [None] * (d - _width(res)) + [i]
    return res


def _width(indices):
    return sum(1 if i is None else max(_consumed(i), 1) for i in indices)


def _int(v):
    return None if v is None else int(v)


def getitem(t, index):
    view, adv = _apply_basic(t, _normalize(t, index))
    if adv:
        return view._index(expand_bool_indices(view, adv))
    if view is t:
        view = t._alias()
    return view


def setitem(t, index, value):
    if not isinstance(value, (Tensor, int, float, bool, complex, np.number, np.bool_)):
        ty = type(value)
        name = ty.__name__ if ty.__module__ == "builtins" else f"{ty.__module__}.{ty.__name__}"
        raise TypeError(f"can't assign a {name} to a {t.type()}")
    view, adv = _apply_basic(t, _normalize(t, index))
    if adv:
        if not isinstance(value, Tensor):
            value = scalar_tensor(value, dtype=t.dtype, device=t.device)
        view.index_put_(adv, value)
        return
    if isinstance(value, Tensor):
        while value.dim() > view.dim() and value.shape[0] == 1:
            value = value.squeeze(0)
        view.copy_(value)
    else:
        view.fill_(value)
