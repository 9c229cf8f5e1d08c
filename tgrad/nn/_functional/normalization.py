"""Normalization functions of ``torch.nn.functional``: layer, batch, group, instance norm and
``normalize``, one table op each."""
from ... import _nn_functional
from ..._nn_functional import _op
from ...autograd.grad_mode import no_grad as _no_grad


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last len(normalized_shape) dims."""
    return _nn_functional.layer_norm(input, normalized_shape, weight, bias, eps)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Normalize over the batch (and length) dims per channel (dim 1); in training the running
    statistics are updated in place: r = (1 - momentum) r + momentum * batch statistic (unbiased var)."""
    return _nn_functional._batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """x / max(||x||_p along dim, eps)."""
    res = _op("normalize", input, p=p, dim=dim, eps=eps)
    return res if out is None else out.copy_(res)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalize each (sample, group of C / num_groups channels) of (N, C, *) input, then w[c] x + b[c]."""
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    return _op("group_norm", input, weight, bias, num_groups=num_groups, eps=eps)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalize each (sample, channel) over its spatial dims (a group norm with one channel per group);
    running statistics, if given, move by ``momentum`` towards the batch mean of the per-instance mean and
    unbiased variance; ``use_input_stats=False`` normalizes with the running statistics instead."""
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    n = 1
    for s in input.shape[2:]:
        n *= s
    if n <= 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {tuple(input.shape)}")
    if running_mean is not None or running_var is not None:
        dims = tuple(range(2, input.dim()))
        with _no_grad():
            x = input.detach()
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(x.mean(dims).mean(0) * momentum)
            if running_var is not None:
                running_var.mul_(1 - momentum).add_(x.var(dims).mean(0) * momentum)
    return _op("group_norm", input, weight, bias, num_groups=input.shape[1], eps=eps)
