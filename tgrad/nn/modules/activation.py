"""Activation modules: thin wrappers over ``nn.functional`` with PyTorch's reprs."""
from ..._creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
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


def _inplace_str(inplace):
    return ", inplace=True" if inplace else ""


class CELU(Module):
    """x for x > 0, alpha (exp(x / alpha) - 1) otherwise."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class PReLU(Module):
    """x for x > 0, a x otherwise, with a learned slope a (one, or one per channel), initialized to ``init``."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Leaky relu with a random slope in [lower, upper] when training, (lower + upper) / 2 in eval."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}{_inplace_str(self.inplace)}"


class Threshold(Module):
    """x where x > threshold, else value."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}{_inplace_str(self.inplace)}"


class Tanhshrink(_Plain):
    """x - tanh(x)."""
    _fn = staticmethod(F.tanhshrink)


class Softsign(_Plain):
    """x / (1 + |x|)."""
    _fn = staticmethod(F.softsign)


class _Lambd(Module):
    _fn = None

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return type(self)._fn(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Softshrink(_Lambd):
    """x -+ lambd outside [-lambd, lambd], 0 inside."""
    _fn = staticmethod(F.softshrink)


class Hardshrink(_Lambd):
    """x outside [-lambd, lambd], 0 inside."""
    _fn = staticmethod(F.hardshrink)


class GLU(Module):
    """a * sigmoid(b), (a, b) the halves of the input along ``dim``."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channels (dim -3) of (N, C, H, W) or (C, H, W)."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3, _stacklevel=5)
