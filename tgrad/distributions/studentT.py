"""``StudentT(df, loc=0, scale=1)``: Student's t distribution."""
import math
from numbers import Number

from .. import _creation as C
from ..tensor import Size
from . import constraints
from .distribution import Distribution
from .gamma import Chi2
from .utils import _expand_params, _standard_normal, broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Samples are loc + scale X / sqrt(Z / df), X ~ Normal(0, 1), Z ~ Chi2(df) (PyTorch's draws, in its order);
    ``rsample`` is differentiable in df too (through Chi2's gamma)."""
    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        return self.loc.masked_fill(self.df <= 1, math.nan)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        big = self.scale.pow(2) * df / (df - 2)
        return big.masked_fill(df <= 2, math.inf).masked_fill(df <= 1, math.nan)

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        batch_shape = Size() if all(isinstance(v, Number) for v in (df, loc, scale)) else self.df.size()
        self._chi2 = Chi2(self.df)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = _expand_params(self, StudentT, batch_shape, _instance, ("df", "loc", "scale"))
        new._chi2 = self._chi2.expand(batch_shape)
        return new

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        x = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * (x * (z / self.df).rsqrt())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi) + (0.5 * self.df).lgamma()
             - (0.5 * (self.df + 1.0)).lgamma())
        return -0.5 * (self.df + 1.0) * (y.pow(2) / self.df).log1p() - z

    def entropy(self):
        lbeta = (0.5 * self.df).lgamma() + math.lgamma(0.5) - (0.5 * (self.df + 1)).lgamma()
        return (self.scale.log() + 0.5 * (self.df + 1) * ((0.5 * (self.df + 1)).digamma() - (0.5 * self.df).digamma())
                + 0.5 * self.df.log() + lbeta)
