"""``LazyModuleMixin`` and ``LazyLinear``: parameters whose input size is read from the first input."""
from itertools import chain

from ...autograd.grad_mode import no_grad
from ..parameter import UninitializedParameter, UninitializedTensorMixin
from .linear import Linear

__all__ = ["LazyLinear", "LazyModuleMixin"]


class LazyModuleMixin:
    """Before the first forward a pre-hook calls ``initialize_parameters(*inputs)`` (which materializes the
    uninitialized parameters and draws their init), then the module becomes ``cls_to_become``."""
    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def has_uninitialized_params(self):
        return any(isinstance(p, UninitializedTensorMixin)
                   for p in chain(self._parameters.values(), self._buffers.values()))

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    @staticmethod
    def _infer_parameters(module, args, kwargs=None):
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        delattr(module, "_initialize_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become


class LazyLinear(LazyModuleMixin, Linear):
    """Linear whose in_features is the last dim of the first input (then it becomes a ``Linear``; the init is
    drawn at that moment, as in PyTorch)."""
    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
