"""``Gamma(concentration, rate)`` and ``Chi2(df)`` = Gamma(df / 2, 1 / 2)."""
from numbers import Number

from .. import _creation as C
from .. import _functional_more as FM
from .. import dtypes as D
from ..autograd import grad_mode
from ..tensor import Size
from . import constraints
from .exp_family import ExponentialFamily
from .utils import _expand_params, broadcast_all

__all__ = ["Chi2", "Gamma"]


def _standard_gamma(alpha):
    """Gamma(alpha, 1) draws of alpha's shape by Marsaglia-Tsang (alpha < 1: boosted by U^(1/alpha)), drawing
    tgrad's normal/uniform streams round by round until every element is accepted.  NOTE: ATen's sampler draws
    per element, so seeded samples differ from PyTorch's (the distribution is the same)."""
    with grad_mode.no_grad():
        a = alpha.detach()
        boost = a < 1
        d = a.where(~boost, a + 1) - 1.0 / 3
        c = (9 * d).rsqrt()
        out = C.zeros_like(a)
        todo = C.ones_like(a, dtype=out.dtype) > 0
        while bool(todo.any()):
            x = C.randn_like(a)
            v = (1 + c * x).pow(3)
            u = C.rand_like(a)
            ok = (v > 0) & (u.log() < 0.5 * x * x + d - d * v + d * v.clamp(min=1e-30).log())
            take = todo & ok
            out = (d * v).where(take, out)
            todo = todo & ~ok
        u = C.rand_like(a)
        return out.where(~boost, out * u.pow(a.reciprocal())).clamp(min=D.finfo(a.dtype).tiny)


class Gamma(ExponentialFamily):
    """density rate^c x^(c-1) exp(-rate x) / Gamma(c).  ``rsample`` is not differentiable yet (PyTorch's
    implicit reparameterization gradient, ``_standard_gamma_grad``, is not written): has_rsample is False."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = False
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

    def sample(self, sample_shape=Size()):
        """standard gamma draws / rate (tgrad's stream: see ``_standard_gamma``)."""
        shape = self._extended_shape(sample_shape)
        value = _standard_gamma(self.concentration.expand(shape).contiguous()) / self.rate.expand(shape)
        return value.clamp(min=D.finfo(value.dtype).tiny)

    def log_prob(self, value):
        """xlogy(c, rate) + xlogy(c - 1, x) - rate x - lgamma(c)."""
        if self._validate_args:
            self._validate_sample(value)
        return (FM.xlogy(self.concentration, self.rate) + FM.xlogy(self.concentration - 1, value)
                - self.rate * value - self.concentration.lgamma())

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
