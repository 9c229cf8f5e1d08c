"""``tgrad.special``: PyTorch's ``torch.special`` functions that tgrad's ops compose, and the gamma family."""
import math

from . import _functional, _functional_more as _fm
from . import _nn_functional as _nnf

__all__ = ["digamma", "entr", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln",
           "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr",
           "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round", "sinc",
           "softmax", "xlogy"]

erfc = _functional.erfc
gammaln = _functional.lgamma
digamma = psi = _functional.digamma
polygamma = _functional.polygamma
multigammaln = _functional.mvlgamma
erfinv = _functional.erfinv
logit = _fm.logit
xlogy = _fm.xlogy
i0 = _functional.i0
gammainc = _functional.igamma
gammaincc = _functional.igammac


def _special_unary(name, op):
    def f(input, *, out=None):
        return _functional._out(_functional.dispatch.call(op, input), out)
    f.__name__ = f.__qualname__ = name
    return f


i0e = _special_unary("i0e", "special_i0e")
i1 = _special_unary("i1", "special_i1")
i1e = _special_unary("i1e", "special_i1e")


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


def ndtri(input):
    """The standard normal quantile: sqrt(2) erfinv(2p - 1)."""
    return (2 * input - 1).erfinv() * math.sqrt(2)


def log_ndtr(input):
    """log ndtr(x): log1p(-erfc(x / sqrt 2) / 2) above -1, log(erfc(-x / sqrt 2) / 2) down to -20, then the
    asymptotic -x^2/2 - log(-x sqrt(2 pi)) + log(1 - 1/x^2 + 3/x^4 - 15/x^6 + 105/x^8) (erfc underflows)."""
    t = input * (1 / math.sqrt(2))
    hi = (-0.5 * t.clamp(min=-1 / math.sqrt(2)).erfc()).log1p()
    mid = ((-t).erfc() * 0.5).log()
    x = input.clamp(max=-20.0)
    r = (x * x).reciprocal()
    tail = (-0.5 * x * x - (-x).log() - 0.5 * math.log(2 * math.pi)
            + (1 - r * (1 - r * (3 - r * (15 - 105 * r)))).log())
    return hi.where(input >= -1, mid.where(input >= -20, tail))
