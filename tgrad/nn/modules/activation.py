"""Activation modules: thin wrappers over ``nn.functional`` with PyTorch's reprs."""
from .. import functional as F
from .module import Module


class _Inplace(Module):
    """An activation with only the ``inplace`` flag."""

    _fn = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class _Plain(Module):
    _fn = None

    def forward(self, input):
        return type(self)._fn(input)


class ReLU(_Inplace):
    """max(x, 0)."""
    _fn = staticmethod(F.relu)


class ReLU6(_Inplace):
    """min(max(x, 0), 6)."""
    _fn = staticmethod(F.relu6)


class SELU(_Inplace):
    """scale * elu(x, alpha) with PyTorch's fixed constants."""
    _fn = staticmethod(F.selu)


class SiLU(_Inplace):
    """x * sigmoid(x)."""
    _fn = staticmethod(F.silu)


class Mish(_Inplace):
    """x * tanh(softplus(x))."""
    _fn = staticmethod(F.mish)


class Hardsigmoid(_Inplace):
    """relu6(x + 3) / 6."""
    _fn = staticmethod(F.hardsigmoid)


class Hardswish(_Inplace):
    """x * relu6(x + 3) / 6."""
    _fn = staticmethod(F.hardswish)


class Sigmoid(_Plain):
    """1 / (1 + exp(-x))."""
    _fn = staticmethod(F.sigmoid)


class Tanh(_Plain):
    _fn = staticmethod(F.tanh)


class LogSigmoid(_Plain):
    """log(sigmoid(x))."""
    _fn = staticmethod(F.logsigmoid)


class LeakyReLU(Module):
    """x if x >= 0 else negative_slope * x."""

    def __init__(self, negative_slope=1e-2, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    """x if x > 0 else alpha (exp(x) - 1)."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class GELU(Module):
    """x * Phi(x) (approximate='tanh': the tanh approximation)."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={repr(self.approximate)}"


class Softplus(Module):
    """log(1 + exp(beta x)) / beta, linear above ``threshold``."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """clamp(x, min_val, max_val)."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise AssertionError("max_val must be greater than min_val")

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class _DimModule(Module):
    _fn = None

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return type(self)._fn(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_DimModule):
    """exp(x) / sum(exp(x)) along ``dim``."""
    _fn = staticmethod(F.softmax)


class LogSoftmax(_DimModule):
    """x - logsumexp(x) along ``dim``."""
    _fn = staticmethod(F.log_softmax)


class Softmin(_DimModule):
    """softmax(-x) along ``dim``."""
    _fn = staticmethod(F.softmin)
