"""``Poisson(rate)``: P(k) = rate^k exp(-rate) / k!."""
from numbers import Number

from .. import _functional as FN
from .. import _functional_more as FM
from ..autograd import grad_mode
from ..tensor import Size
from . import constraints
from .exp_family import ExponentialFamily
from .utils import _expand_params, broadcast_all

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    """``sample`` is ``tgrad.poisson`` (ATen's sampler: PyTorch's numbers on the cpu generator)."""
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        batch_shape = Size() if isinstance(rate, Number) else self.rate.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, Poisson, batch_shape, _instance, ("rate",))

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        with grad_mode.no_grad():
            return FN.poisson(self.rate.expand(shape))

    def log_prob(self, value):
        """xlogy(k, rate) - rate - lgamma(k + 1)."""
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return FM.xlogy(value, rate) - rate - (value + 1).lgamma()

    @property
    def _natural_params(self):
        return (self.rate.log(),)

    def _log_normalizer(self, x):
        return x.exp()
