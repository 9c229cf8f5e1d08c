"""``Beta(concentration1, concentration0)``: density x^(a-1) (1-x)^(b-1) / B(a, b) on [0, 1]."""
from numbers import Number

from .. import _functional as FN
from .. import _functional_more as FM
from ..tensor import Size
from . import constraints
from .exp_family import ExponentialFamily
from .dirichlet import Dirichlet
from .utils import _expand_params, broadcast_all

__all__ = ["Beta"]


class Beta(ExponentialFamily):
    """Samples are the first coordinate of Dirichlet([a, b]) draws, as PyTorch draws them (its numbers on the cpu
    generator); ``rsample`` is differentiable."""
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        batch_shape = Size() if isinstance(concentration1, Number) and isinstance(concentration0, Number) \
            else self.concentration1.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, Beta, batch_shape, _instance, ("concentration1", "concentration0"))

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        """(a-1)+ / ((a-1)+ + (b-1)+), and 1 when a, b < 1 (PyTorch's Dirichlet mode, first coordinate)."""
        a1, b1 = (self.concentration1 - 1).clamp(min=0.0), (self.concentration0 - 1).clamp(min=0.0)
        both = (self.concentration1 < 1) & (self.concentration0 < 1)
        return (a1 / (a1 + b1)).masked_fill(both, 1.0)

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        conc = FN.stack([self.concentration1, self.concentration0], -1)
        return Dirichlet(conc, validate_args=False).rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        """xlogy(a-1, x) + xlogy(b-1, 1-x) + lgamma(a+b) - lgamma(a) - lgamma(b) (PyTorch's Dirichlet form)."""
        if self._validate_args:
            self._validate_sample(value)
        x = FN.stack([value, 1.0 - value], -1)
        conc = FN.stack([self.concentration1, self.concentration0], -1)
        return FM.xlogy(conc - 1.0, x).sum(-1) + conc.sum(-1).lgamma() - conc.lgamma().sum(-1)

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        total = a + b
        return (a.lgamma() + b.lgamma() - total.lgamma() - (a - 1) * a.digamma() - (b - 1) * b.digamma()
                + (total - 2) * total.digamma())

    @property
    def _natural_params(self):
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x, y):
        return x.lgamma() + y.lgamma() - (x + y).lgamma()
