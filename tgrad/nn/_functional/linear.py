"""Linear functions of ``torch.nn.functional``."""
from ..._nn_functional import _op


def linear(input, weight, bias=None):
    """y = x W^T + b;  x (*, in), W (out, in), b (out,).  A 1-D W (in,) gives x @ W (+ b), shape (*,)."""
    if weight.dim() == 1 and input.dim() >= 1:      # PyTorch's composite: matmul with W itself (W.t() is W)
        y = input.matmul(weight)
        return y if bias is None else y + bias
    return _op("linear", input, weight, bias)
