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
        if self.is_meta:        # (no values: the plain tensor pickles its metadata)
            return (Parameter, (self.detach(), self.requires_grad))
        return (_rebuild_parameter, (self.detach()._host_copy(), str(self.device), self.requires_grad))


def _rebuild_parameter(array, device_str, requires_grad):
    """Inverse of ``Parameter.__reduce_ex__`` (copy / pickle)."""
    return Parameter(serialization._rebuild_tensor(array, device_str, False), requires_grad)


serialization.register_parameter_class(Parameter)    # tgrad.load rebuilds saved parameters as Parameters


class UninitializedTensorMixin:
    """A parameter or buffer whose shape is not known yet (lazy modules): ``materialize(shape)`` gives it
    storage and turns it into ``cls_to_become``."""
    cls_to_become = Parameter

    def materialize(self, shape, device=None, dtype=None):
        """Allocate ``shape`` (uninitialized) and become a plain ``cls_to_become``."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.data = empty(shape, device=device or self.device, dtype=dtype or self.dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually "
                           "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
                           "initialized one. Call `forward` to initialize the parameters before accessing their "
                           "attributes.")

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
                           "initialize the parameters before calling `module.share_memory()`.")

    def __repr__(self):
        return f"<class 'tgrad.nn.parameter.{self.__class__.__name__}'>"

    __str__ = __repr__


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter without a shape yet (``LazyLinear``'s weight before the first forward)."""

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        return Parameter.__new__(cls, empty(0, device=device, dtype=dtype), requires_grad)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass
