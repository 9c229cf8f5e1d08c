"""``ContinuousBernoulli(probs | logits)``: density C(p) p^x (1-p)^(1-x) on [0, 1] (Loaiza-Ganem & Cunningham
2019), with PyTorch's Taylor expansions inside ``lims`` around p = 1/2; samples by the inverse cdf of
``rand``."""
import math
from numbers import Number

from .. import _creation as C
from .. import _functional as FN
from ..autograd import grad_mode
from ..nn import functional as F
from ..tensor import Size
from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, Number)
            (self.probs,) = broadcast_all(probs)
            if validate_args is not None and not self.arg_constraints["probs"].check(self.probs).all():
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            is_scalar = isinstance(logits, Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        self._lims = lims
        super().__init__(Size() if is_scalar else self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims, batch_shape = self._lims, Size(batch_shape)
        if "probs" in self.__dict__:
            new.probs = new._param = self.probs.expand(batch_shape)
        if "logits" in self.__dict__:
            new.logits = new._param = self.logits.expand(batch_shape)
        super(ContinuousBernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _outside_unstable_region(self):
        return FN.le(self.probs, self._lims[0]) | FN.gt(self.probs, self._lims[1])

    def _cut_probs(self):
        return FN.where(self._outside_unstable_region(), self.probs, self._lims[0] * C.ones_like(self.probs))

    def _cont_bern_log_norm(self):
        """log C(p) = log|log(1-p) - log p| - log|1 - 2p|; a Taylor series near p = 1/2."""
        cut = self._cut_probs()
        below = FN.where(FN.le(cut, 0.5), cut, C.zeros_like(cut))
        above = FN.where(FN.ge(cut, 0.5), cut, C.ones_like(cut))
        log_norm = FN.log(FN.abs(FN.log1p(-cut) - FN.log(cut))) - FN.where(
            FN.le(cut, 0.5), FN.log1p(-2.0 * below), FN.log(2.0 * above - 1.0))
        x = FN.pow(self.probs - 0.5, 2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return FN.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (FN.log1p(-cut) - FN.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * FN.pow(x, 2)) * x
        return FN.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return FN.sqrt(self.variance)

    @property
    def variance(self):
        cut = self._cut_probs()
        v = cut * (cut - 1.0) / FN.pow(1.0 - 2.0 * cut, 2) + 1.0 / FN.pow(FN.log1p(-cut) - FN.log(cut), 2)
        x = FN.pow(self.probs - 0.5, 2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return FN.where(self._outside_unstable_region(), v, taylor)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.size()

    def sample(self, sample_shape=Size()):
        u = C.rand(self._extended_shape(sample_shape), dtype=self.probs.dtype, device=self.probs.device)
        with grad_mode.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=Size()):
        return self.icdf(C.rand(self._extended_shape(sample_shape), dtype=self.probs.dtype, device=self.probs.device))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (FN.pow(cut, value) * FN.pow(1.0 - cut, 1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = FN.where(self._outside_unstable_region(), cdfs, value)
        return FN.where(FN.le(value, 0.0), C.zeros_like(value),
                        FN.where(FN.ge(value, 1.0), C.ones_like(value), unbounded))

    def icdf(self, value):
        cut = self._cut_probs()
        return FN.where(self._outside_unstable_region(),
                        (FN.log1p(-cut + value * (2.0 * cut - 1.0)) - FN.log1p(-cut))
                        / (FN.log(cut) - FN.log1p(-cut)), value)

    def entropy(self):
        log_p0, log_p1 = FN.log1p(-self.probs), FN.log(self.probs)
        return self.mean * (log_p0 - log_p1) - self._cont_bern_log_norm() - log_p0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        outside = FN.le(x, self._lims[0] - 0.5) | FN.gt(x, self._lims[1] - 0.5)
        cut = FN.where(outside, x, (self._lims[0] - 0.5) * C.ones_like(x))
        log_norm = FN.log(FN.abs(FN.expm1(cut))) - FN.log(FN.abs(cut))
        taylor = 0.5 * x + FN.pow(x, 2) / 24.0 - FN.pow(x, 4) / 2880.0
        return FN.where(outside, log_norm, taylor)
