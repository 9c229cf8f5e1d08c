"""Non-linear activations and the softmax family of ``torch.nn.functional``: one table op each
(``inplace=True`` runs the op in place on ``input``)."""
import warnings

from ... import _nn_functional
from ..._nn_functional import _op
from ...autograd import dispatch
from ...ops import TABLE


def _op_(name, input, **attrs):
    """In-place form: writes into ``input``."""
    if name not in TABLE:
        raise NotImplementedError(f"tgrad.nn.functional: op '{name}' is not in the op table yet")
    return dispatch.call_inplace(name, input, **attrs)


def _act(name, input, inplace=False, **attrs):
    return _op_(name, input, **attrs) if inplace else _op(name, input, **attrs)


def relu(input, inplace=False):
    return _act("relu", input, inplace)


def relu_(input):
    return _op_("relu", input)


def relu6(input, inplace=False):
    return _act("relu6", input, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _act("leaky_relu", input, inplace, negative_slope=negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    return _op_("leaky_relu", input, negative_slope=negative_slope)


def elu(input, alpha=1.0, inplace=False):
    return _act("elu", input, inplace, alpha=alpha)


def elu_(input, alpha=1.0):
    return _op_("elu", input, alpha=alpha)


def selu(input, inplace=False):
    return _act("selu", input, inplace)


def selu_(input):
    return _op_("selu", input)


def gelu(input, approximate="none"):
    return _op("gelu", input, approximate=approximate)


def silu(input, inplace=False):
    return _act("silu", input, inplace)


def mish(input, inplace=False):
    return _act("mish", input, inplace)


def softplus(input, beta=1.0, threshold=20.0):
    return _op("softplus", input, beta=beta, threshold=threshold)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _act("hardtanh", input, inplace, min_val=min_val, max_val=max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def hardsigmoid(input, inplace=False):
    return _act("hardsigmoid", input, inplace)


def hardswish(input, inplace=False):
    return _act("hardswish", input, inplace)


def logsigmoid(input):
    return _op("logsigmoid", input)


def sigmoid(input):
    return _op("sigmoid", input)


def tanh(input):
    return _op("tanh", input)


def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along ``dim`` (optionally computed in ``dtype``)."""
    if dim is None:
        dim = _softmax_dim("softmax", input.dim(), _stacklevel)
    return _nn_functional.softmax(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """x - logsumexp(x) along ``dim``."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim(), _stacklevel)
    return _nn_functional.log_softmax(input, dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x)."""
    if dim is None:
        dim = _softmax_dim("softmin", input.dim(), _stacklevel)
    return _op("softmax", -input, dim=dim, dtype=dtype)
