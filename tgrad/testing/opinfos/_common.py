"""Helpers the OpInfos of the row-wise families share (softmax, loss, norm, nn).

Integer arguments (class-index targets, embedding indices) are passed as int64 tgrad tensors built in the
sample (``Idx``) so the dtype under test applies to the float arguments only.
"""
import numpy as np

from tgrad import dtypes as D
from tgrad.autograd import dispatch

FLOATS = (D.float32, D.float64, D.float16, D.bfloat16)
LOW = {"float16": (2e-3, 2e-3), "bfloat16": (2e-2, 1.6e-2)}


class Idx:
    """An int64 array argument: becomes an int64 tensor on the op's device; the reference sees the array."""

    def __init__(self, a):
        self.a = np.asarray(a, dtype=np.int64)

    def tensor(self, like):
        from tgrad import _creation as creation
        return creation.tensor(self.a, dtype=D.int64, device=like.device)

    def __repr__(self):
        return f"Idx{self.a.shape}"


def _i(v, like):
    return v.tensor(like) if isinstance(v, Idx) else v


def as_np(v):
    return v.a if isinstance(v, Idx) else v


def log_softmax(x, axis):
    m = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    with np.errstate(divide="ignore"):      # rows of nothing (the result is empty anyway)
        return x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


def call(name, *args, **kw):
    like = args[0]
    return dispatch.call(name, *[_i(a, like) for a in args], **kw)


def np_args(f):
    return lambda *a, **k: f(*[as_np(v) for v in a], **k)
