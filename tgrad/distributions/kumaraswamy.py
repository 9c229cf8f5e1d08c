"""``Kumaraswamy(concentration1 a, concentration0 b)``: (1 - U^(1/b))^(1/a), U ~ Uniform(0, 1); density
a b x^(a-1) (1 - x^a)^(b-1) on [0, 1]."""
from .. import _creation as C
from .. import _functional as FN
from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant

__all__ = ["Kumaraswamy"]


def _moments(a, b, n):
    """E[X^n] = b B(1 + n/a, b)."""
    arg1 = 1 + n / a
    return b * FN.exp(FN.lgamma(arg1) + FN.lgamma(b) - FN.lgamma(arg1 + b))


class Kumaraswamy(TransformedDistribution):
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(C.full_like(self.concentration0, 0), C.full_like(self.concentration0, 1),
                       validate_args=validate_args)
        super().__init__(base, [PowerTransform(exponent=self.concentration0.reciprocal()),
                                AffineTransform(loc=1.0, scale=-1.0),
                                PowerTransform(exponent=self.concentration1.reciprocal())], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        log_mode = (self.concentration0.reciprocal() * (-self.concentration0).log1p()
                    - (-self.concentration0 * self.concentration1).log1p())
        log_mode[(self.concentration0 < 1) | (self.concentration1 < 1)] = float("nan")
        return log_mode.exp()

    @property
    def variance(self):
        return _moments(self.concentration1, self.concentration0, 2) - FN.pow(self.mean, 2)

    def entropy(self):
        t1, t0 = 1 - self.concentration1.reciprocal(), 1 - self.concentration0.reciprocal()
        h0 = FN.digamma(self.concentration0 + 1) + euler_constant
        return t0 + t1 * h0 - FN.log(self.concentration1) - FN.log(self.concentration0)
