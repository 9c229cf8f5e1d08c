"""``nn.Parameter``: a Tensor that a Module registers as one of its parameters."""
from .. import serialization
from .._creation import empty
from ..tensor import Tensor, _new


class Parameter(Tensor):
    """A Tensor subclass sharing ``data``'s storage and version counter; ``requires_grad=True`` by default."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = empty(0)
        t = _new(data._storage, data._offset, data._shape, data._strides, data.dtype, counter=data._version_counter,
                 cls=cls)
        t._inference = data._inference
        t._set_requires_grad(requires_grad)
        return t

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, proto):
        return (_rebuild_parameter, (self.detach()._host_copy(), str(self.device), self.requires_grad))


def _rebuild_parameter(array, device_str, requires_grad):
    """Inverse of ``Parameter.__reduce_ex__`` (copy / pickle)."""
    return Parameter(serialization._rebuild_tensor(array, device_str, False), requires_grad)


serialization.register_parameter_class(Parameter)    # tgrad.load rebuilds saved parameters as Parameters
