"""``nn.init``: in-place initialisers (PyTorch's formulas), all under ``no_grad``.

Fans of a weight of shape (out, in, *k): fan_in = in * prod(k), fan_out = out * prod(k).
xavier: std = gain * sqrt(2 / (fan_in + fan_out)); kaiming: std = gain / sqrt(fan);
a uniform with that std has bound sqrt(3) * std.
"""
import math
import warnings

import numpy as np

from .._creation import empty, eye as _eye, randperm, tensor as make_tensor
from ..autograd.grad_mode import no_grad


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for ``nonlinearity`` (``param``: leaky_relu's negative slope)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, int) or isinstance(param, float):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def constant_(tensor, val):
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    with no_grad():
        return tensor.zero_()


def eye_(tensor):
    """The identity matrix (2-D tensors only)."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        return tensor.copy_(_eye(*tensor.shape, dtype=tensor.dtype, device=tensor.device))


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    return tensor.size(1) * receptive_field_size, tensor.size(0) * receptive_field_size


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal_(tensor, 0, std, generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """N(mean, std) restricted to [a, b], by rejection like PyTorch.

    Wide intervals (mass p > 0.3) redraw normals outside [a, b]; narrow ones draw
    uniform proposals on [a, b] accepted with probability exp(log N(x) - log N(mode)).
    Draws come from ``generator``; the accept/reject bookkeeping runs on the host.
    """
    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values "
                      "may be incorrect.", stacklevel=2)
    shape = tuple(tensor.shape)

    def draw(kind, lo, hi):
        t = empty(shape, dtype=tensor.dtype, device=tensor.device)
        (t.normal_ if kind == "normal" else t.uniform_)(lo, hi, generator=generator)
        return np.asarray(t._host_copy(), dtype=np.float64)

    with no_grad():
        p = norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std)
        if p > 0.3:
            vals = draw("normal", mean, std)
            bad = (vals < a) | (vals > b)
            while bad.any():
                vals = np.where(bad, draw("normal", mean, std), vals)
                bad = (vals < a) | (vals > b)
        else:
            mode = max(a, min(mean, b))
            log_peak = -0.5 * ((mode - mean) / std) ** 2

            def log_ratio(x):
                return -0.5 * ((x - mean) / std) ** 2 - log_peak

            vals = draw("uniform", a, b)
            pending = np.log(draw("uniform", 0.0, 1.0)) > log_ratio(vals)
            while pending.any():
                cand = draw("uniform", a, b)
                vals = np.where(pending, cand, vals)
                pending = np.where(pending, np.log(draw("uniform", 0.0, 1.0)) > log_ratio(cand), pending)
        return tensor.copy_(make_tensor(vals, dtype=tensor.dtype, device=tensor.device))


def dirac_(tensor, groups=1):
    """Identity-preserving conv weight (3-5 dims): 1 at the kernel centre of output channel g*out/groups + d,
    input channel d, for d < min(out/groups, in)."""
    dims = tensor.ndimension()
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.size()
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per = sizes[0] // groups
    centre = tuple(k // 2 for k in sizes[2:])
    with no_grad():
        tensor.zero_()
        for g in range(groups):
            for d in range(min(per, sizes[1])):
                tensor[(g * per + d, d) + centre] = 1
    return tensor


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix from the QR of a normal draw (rows x prod(rest), transposed when wide), with
    Q's columns signed by diag(R) as PyTorch, times gain.  The normals come from ``generator`` on the tensor's
    device; the QR of this one-off init runs on the host (numpy's LAPACK)."""
    if tensor.ndimension() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.size(0)
    cols = tensor.numel() // rows
    flat = tensor.new_empty((rows, cols)).normal_(0, 1, generator=generator)._host_copy().astype(np.float64)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    with no_grad():
        tensor.view(rows, cols).copy_(tensor.new_tensor(q.astype(tensor.dtype.np)))
        tensor.mul_(gain)
    return tensor


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """N(0, std) with ceil(sparsity * rows) zeros per column, at rows from the default generator's randperm
    (as PyTorch, which does not pass ``generator`` to it)."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        for col in range(cols):
            tensor[randperm(rows)[:num_zeros], col] = 0
    return tensor


def _deprecated(fn):
    new = fn.__name__
    old = new[:-1]

    def f(*args, **kwargs):
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new}`.", FutureWarning,
                      stacklevel=2)
        return fn(*args, **kwargs)
    f.__name__ = f.__qualname__ = old
    return f


uniform, normal, constant = _deprecated(uniform_), _deprecated(normal_), _deprecated(constant_)
xavier_uniform, xavier_normal = _deprecated(xavier_uniform_), _deprecated(xavier_normal_)
kaiming_uniform, kaiming_normal = _deprecated(kaiming_uniform_), _deprecated(kaiming_normal_)
orthogonal, sparse, eye, dirac = _deprecated(orthogonal_), _deprecated(sparse_), _deprecated(eye_), _deprecated(dirac_)
