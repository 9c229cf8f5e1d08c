"""``HalfNormal(scale)`` and ``HalfCauchy(scale)``: |X| for X ~ Normal(0, scale) / Cauchy(0, scale)
(PyTorch's TransformedDistributions with an AbsTransform): density 2 p(x) on x >= 0."""
import math

from .. import _creation as C
from .. import _functional as FN
from ..tensor import Size
from . import constraints
from .cauchy import Cauchy
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform

__all__ = ["HalfCauchy", "HalfNormal"]


class _Half(TransformedDistribution):
    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _base = None

    def __init__(self, scale, validate_args=None):
        super().__init__(self._base(0.0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(type(self), _instance)
        return super().expand(Size(batch_shape), _instance=new)

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mode(self):
        return C.zeros_like(self.scale)

    def log_prob(self, value):
        """base log p(x) + log 2 on x >= 0, -inf below."""
        if self._validate_args:
            self._validate_sample(value)
        value = C.as_tensor(value, dtype=self.scale.dtype, device=self.scale.device)
        lp = self.base_dist.log_prob(value) + math.log(2)
        return FN.where(value >= 0, lp, -math.inf)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Half):
    _base = Normal

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)


class HalfCauchy(_Half):
    _base = Cauchy

    @property
    def mean(self):
        return C.full(self._extended_shape(), math.inf, dtype=self.scale.dtype, device=self.scale.device)

    @property
    def variance(self):
        return self.base_dist.variance
