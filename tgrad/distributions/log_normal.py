"""``LogNormal(loc, scale)``: exp of a Normal(loc, scale) (PyTorch's TransformedDistribution with an
ExpTransform, written out: tgrad has no transforms yet)."""
from numbers import Number

from ..tensor import Size
from . import constraints
from .distribution import Distribution
from .normal import Normal
from .utils import broadcast_all

__all__ = ["LogNormal"]


class LogNormal(Distribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.base_dist = Normal(loc, scale, validate_args=validate_args)
        super().__init__(self.base_dist.batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogNormal, _instance)
        new.base_dist = self.base_dist.expand(batch_shape)
        super(LogNormal, new).__init__(Size(batch_shape), validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def loc(self):
        return self.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self):
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self):
        s2 = self.scale.pow(2)
        return s2.expm1() * (2 * self.loc + s2).exp()

    def sample(self, sample_shape=Size()):
        return self.base_dist.sample(sample_shape).exp()

    def rsample(self, sample_shape=Size()):
        return self.base_dist.rsample(sample_shape).exp()

    def log_prob(self, value):
        """Normal.log_prob(log y) - log y."""
        if self._validate_args:
            self._validate_sample(value)
        x = value.log()
        return self.base_dist.log_prob(x) - x

    def cdf(self, value):
        return self.base_dist.cdf(value.log())

    def entropy(self):
        return self.base_dist.entropy() + self.loc
