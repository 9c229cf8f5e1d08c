"""``Variable``: PyTorch's legacy wrapper, kept so old code runs; it makes plain Tensors."""
from ..tensor import Tensor


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """``Variable(t, requires_grad=False)``: a new tensor sharing ``t``'s data, a leaf with the flag set.

    ``isinstance(x, Variable)`` holds for every Tensor, as in PyTorch.
    """

    def __new__(cls, data, requires_grad=False, volatile=False):
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach()._set_requires_grad(requires_grad)
