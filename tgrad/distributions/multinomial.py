"""``Multinomial(total_count, probs | logits)``: counts of ``total_count`` Categorical draws (PyTorch's
sampling: the same Categorical draws, counted with scatter_add_)."""
import math

from .._creation import arange
from ..tensor import Size
from . import constraints
from .categorical import Categorical
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Multinomial"]


class _Multinomial(constraints.Constraint):
    """Nonnegative integer vectors summing to at most ``upper_bound``."""
    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, x):
        return (x >= 0).all(dim=-1) & (x.sum(dim=-1) <= self.upper_bound)


class Multinomial(Distribution):
    """log p(x) = lgamma(n + 1) - sum lgamma(x_i + 1) + sum x_i log p_i, n = sum x_i."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = Size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        super(Multinomial, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args, **kwargs):
        return self._categorical._new(*args, **kwargs)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return _Multinomial(self.total_count)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        sample_shape = Size(sample_shape)
        samples = self._categorical.sample(Size((self.total_count,)) + sample_shape)
        order = list(range(1, samples.dim())) + [0]
        samples = samples.permute(*order)
        counts = samples.new_zeros(self._extended_shape(sample_shape))
        counts.scatter_add_(-1, samples, samples.new_ones(samples.shape))
        return counts.type_as(self.probs)

    def entropy(self):
        """n H(Categorical) - lgamma(n + 1) + sum_i sum_{k=1..n} Binomial(n, p_i).pmf(k) lgamma(k + 1)."""
        n = self.total_count
        p = self.probs
        k = arange(1, n + 1, dtype=p.dtype, device=p.device).reshape((-1,) + (1,) * p.dim())
        log_pmf = (math.lgamma(n + 1) - (k + 1).lgamma() - (n - k + 1).lgamma()
                   + k * p.log() + (n - k) * (-p).log1p())
        term2 = (log_pmf.exp() * (k + 1).lgamma()).sum([0, -1])
        return n * self._categorical.entropy() - math.lgamma(n + 1) + term2

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        logits = logits.clone()
        log_factorial_n = (value.sum(-1) + 1).lgamma()
        log_factorial_xs = (value + 1).lgamma().sum(-1)
        logits = logits.masked_fill((value == 0) & (logits == -math.inf), 0)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)
