"""Helpers of ``tgrad.distributions``: broadcasting numbers to tensors, probs <-> logits, lazy properties."""
from functools import update_wrapper
from numbers import Number

from .. import dtypes as D
from .._creation import empty, tensor
from .._functional_more import broadcast_tensors
from ..autograd import grad_mode
from ..nn import functional as F
from ..tensor import Size, Tensor

euler_constant = 0.57721566490153286060

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs", "probs_to_logits"]


def broadcast_all(*values):
    """The tensors and numbers ``values`` broadcast together; numbers become tensors of the first tensor's
    dtype and device (the default dtype when all are numbers)."""
    if not all(isinstance(v, (Tensor, Number)) for v in values):
        raise ValueError("Input arguments must all be instances of Number, torch.Tensor or objects implementing "
                         "__torch_function__.")
    if not all(isinstance(v, Tensor) for v in values):
        options = dict(dtype=D.get_default_dtype())
        for v in values:
            if isinstance(v, Tensor):
                options = dict(dtype=v.dtype, device=v.device)
                break
        values = [v if isinstance(v, Tensor) else tensor(v, **options) for v in values]
    return broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    """N(0, 1) draws of ``shape``: ``empty(shape).normal_()``, as PyTorch draws them."""
    return empty(shape, dtype=dtype, device=device).normal_()


def _sum_rightmost(value, dim):
    """``value`` summed over its ``dim`` rightmost dims."""
    return value if dim == 0 else value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    """sigmoid(logits) (binary) or softmax over the last dim."""
    return logits.sigmoid() if is_binary else F.softmax(logits, dim=-1)


def clamp_probs(probs):
    """``probs`` clamped to [eps, 1 - eps] (eps of the dtype)."""
    eps = D.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """log(p) - log(1 - p) (binary) or log(p), of the clamped ``probs``."""
    p = clamp_probs(probs)
    return p.log() - (-p).log1p() if is_binary else p.log()


class lazy_property:
    """A property computed (with grad enabled) on first access, then stored as an instance attribute."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with grad_mode.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What a lazy_property looks like on the class: both a lazy_property and a property."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def _expand_params(self, cls, batch_shape, _instance, names):
    """``Distribution.expand`` for a distribution whose parameters ``names`` all have the batch shape."""
    new = self._get_checked_instance(cls, _instance)
    batch_shape = Size(batch_shape)
    for n in names:
        setattr(new, n, getattr(self, n).expand(batch_shape))
    super(cls, new).__init__(batch_shape, validate_args=False)
    new._validate_args = self._validate_args
    return new

