"""Gradient clipping over a set of parameters, with tgrad ops (no per-device foreach kernels)."""
import math

from ...autograd.grad_mode import no_grad
from ..._creation import tensor as _tensor
from ...tensor import Tensor


def _params(parameters):
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def _norm(g, norm_type):
    """The ``norm_type``-norm of all of g's elements (a 0-dim tensor): one norm op (PyTorch's _foreach_norm is
    linalg.vector_norm per tensor), not the square / sum / sqrt it is made of."""
    return g.norm(norm_type)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Norm of the norms of ``tensors`` (= the norm of all their elements together)."""
    tensors = _params(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return _tensor(0.0)
    with no_grad():
        norms = [_norm(t, norm_type) for t in tensors]
        if len(norms) == 1:
            total = norms[0]
        else:
            from ..._functional import stack
            total = _norm(stack([n.to(norms[0].device) for n in norms]), norm_type)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """g *= min(max_norm / (total_norm + 1e-6), 1) for every gradient."""
    grads = [p.grad for p in _params(parameters) if p.grad is not None]
    if not grads:
        return
    with no_grad():
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.device, g.dtype))


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale the gradients so that their total ``norm_type``-norm is at most ``max_norm``; returns that norm."""
    parameters = _params(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element to [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    with no_grad():
        for p in _params(parameters):
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)
