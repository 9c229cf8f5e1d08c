"""``NegativeBinomial(total_count, probs | logits)``: the number of successes before ``total_count`` failures,
P(k) = C(k + r - 1, k) p^k (1 - p)^r."""
from .. import _functional as FN
from ..autograd import grad_mode
from ..nn import functional as F
from ..tensor import Size
from . import constraints
from .binomial import _CountTrials
from .gamma import Gamma
from .utils import lazy_property

__all__ = ["NegativeBinomial"]


class NegativeBinomial(_CountTrials):
    """``sample`` is a Gamma-Poisson mixture, poisson(Gamma(r, exp(-logits)).sample()), as PyTorch draws it."""
    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    def expand(self, batch_shape, _instance=None):
        return self._expand(NegativeBinomial, batch_shape, _instance)

    @property
    def mean(self):
        return self.total_count * self.logits.exp()

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / (-self.logits).sigmoid()

    @lazy_property
    def _gamma(self):
        return Gamma(concentration=self.total_count, rate=(-self.logits).exp(), validate_args=False)

    def sample(self, sample_shape=Size()):
        with grad_mode.no_grad():
            rate = self._gamma.sample(sample_shape=sample_shape)
            return FN.poisson(rate)

    def log_prob(self, value):
        """r logsigmoid(-logits) + k logsigmoid(logits) + lgamma(r + k) - lgamma(1 + k) - lgamma(r) (0 when
        r + k = 0)."""
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = self.total_count * F.logsigmoid(-self.logits) + value * F.logsigmoid(self.logits)
        log_normalization = -(self.total_count + value).lgamma() + (1.0 + value).lgamma() + self.total_count.lgamma()
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0, 0.0)
        return log_unnormalized_prob - log_normalization
