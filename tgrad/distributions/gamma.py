"""``Gamma(concentration, rate)`` and ``Chi2(df)`` = Gamma(df / 2, 1 / 2)."""
from numbers import Number

from .. import _functional as FN
from .. import _functional_more as FM
from .. import dtypes as D
from ..tensor import Size
from . import constraints
from .exp_family import ExponentialFamily
from .utils import _expand_params, broadcast_all

__all__ = ["Chi2", "Gamma"]


def _standard_gamma(concentration):
    """Gamma(concentration, 1) draws: ``tgrad._standard_gamma`` (ATen's sampler on the cpu generator's stream:
    PyTorch's numbers; differentiable by the implicit reparameterization gradient)."""
    return FN._standard_gamma(concentration)


class Gamma(ExponentialFamily):
    """density rate^c x^(c-1) exp(-rate x) / Gamma(c).  ``rsample`` is differentiable in both parameters (d x /
    d concentration by ``_standard_gamma_grad``, the implicit gradient -(dF/dc) / f)."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        batch_shape = Size() if isinstance(concentration, Number) and isinstance(rate, Number) \
            else self.concentration.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, Gamma, batch_shape, _instance, ("concentration", "rate"))

    def rsample(self, sample_shape=Size()):
        """standard gamma draws / rate, at least the dtype's smallest normal number."""
        shape = self._extended_shape(sample_shape)
        value = _standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        value.detach().clamp_(min=D.finfo(value.dtype).tiny)      # not recorded in the graph
        return value

    def log_prob(self, value):
        """xlogy(c, rate) + xlogy(c - 1, x) - rate x - lgamma(c)."""
        if self._validate_args:
            self._validate_sample(value)
        return (FM.xlogy(self.concentration, self.rate) + FM.xlogy(self.concentration - 1, value)
                - self.rate * value - self.concentration.lgamma())

    def cdf(self, value):
        """P(c, rate x): the regularized lower incomplete gamma function."""
        if self._validate_args:
            self._validate_sample(value)
        return FN.igamma(self.concentration, self.rate * value)

    def entropy(self):
        c = self.concentration
        return c - self.rate.log() + c.lgamma() + (1.0 - c) * c.digamma()

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return (x + 1).lgamma() + (x + 1) * (-y.reciprocal()).log()


class Chi2(Gamma):
    """Gamma(df / 2, 1 / 2)."""
    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, self._get_checked_instance(Chi2, _instance))

    @property
    def df(self):
        return self.concentration * 2
