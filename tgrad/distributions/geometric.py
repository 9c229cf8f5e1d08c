"""``Geometric(probs | logits)``: the number of failures before the first success, P(k) = (1 - p)^k p."""
from numbers import Number

from .. import _creation as C
from .. import dtypes as D
from ..autograd import grad_mode
from ..nn import functional as F
from ..tensor import Size
from . import constraints
from .distribution import Distribution
from .utils import _expand_params, broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Geometric"]


class Geometric(Distribution):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        param = probs if probs is not None else logits
        batch_shape = Size() if isinstance(param, Number) else (self.probs if probs is not None else self.logits).size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, Geometric, batch_shape, _instance,
                              [n for n in ("probs", "logits") if n in self.__dict__])

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return C.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    def sample(self, sample_shape=Size()):
        """floor(log u / log1p(-p)), u ~ U(tiny, 1): PyTorch's draws."""
        shape = self._extended_shape(sample_shape)
        with grad_mode.no_grad():
            u = C.empty(shape, dtype=self.probs.dtype, device=self.probs.device).uniform_(
                D.finfo(self.probs.dtype).tiny, 1)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = probs.masked_fill((probs == 1) & (value == 0), 0)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs
