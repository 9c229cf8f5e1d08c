"""``tgrad.special``: PyTorch's ``torch.special`` functions that tgrad's ops compose (no gamma family)."""
import math

from . import _functional, _functional_more as _fm
from . import _nn_functional as _nnf

__all__ = ["entr", "erf", "erfc", "exp2", "expit", "expm1", "log1p", "log_softmax", "logit", "logsumexp", "ndtr",
           "round", "sinc", "softmax", "xlogy"]

erfc = _functional.erfc
logit = _fm.logit
xlogy = _fm.xlogy


def erf(input):
    return input.erf()


def expit(input):
    """1 / (1 + exp(-x))."""
    return input.sigmoid()


def exp2(input):
    return input.exp2()


def expm1(input):
    return input.expm1()


def log1p(input):
    return input.log1p()


def round(input, decimals=0):
    return input.round(decimals=decimals)


def logsumexp(input, dim, keepdim=False):
    return input.logsumexp(dim, keepdim)


def softmax(input, dim, dtype=None):
    return _nnf.softmax(input, dim, dtype)


def log_softmax(input, dim, dtype=None):
    return _nnf.log_softmax(input, dim, dtype)


def ndtr(input):
    """The standard normal cdf: (1 + erf(x / sqrt 2)) / 2."""
    return 0.5 * (1 + (input * (1 / math.sqrt(2))).erf())


def entr(input):
    """-x log x (0 at 0, -inf for x < 0)."""
    return (-_fm.xlogy(input, input)).masked_fill(input < 0, -math.inf)


def sinc(input):
    """sin(pi x) / (pi x), 1 at 0."""
    px = input * math.pi
    zero = input == 0
    return (px.sin() / px.masked_fill(zero, 1.0)).masked_fill(zero, 1.0)
