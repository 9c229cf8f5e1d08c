"""``tgrad.nn.functional``: PyTorch's functional forms, validating arguments and calling the op table."""
from ..autograd import dispatch
from ..ops import TABLE


def _op(name, *args, **attrs):
    if name not in TABLE:
        raise NotImplementedError(f"tgrad.nn.functional: op '{name}' is not in the op table yet")
    return dispatch.call(name, *args, **attrs)


def linear(input, weight, bias=None):
    """y = x W^T + b;  x (*, in), W (out, in), b (out,)."""
    return _op("linear", input, weight, bias)
