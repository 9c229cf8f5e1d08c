"""``ExponentialFamily``: the base of Normal and Bernoulli (PyTorch's class hierarchy; no Bregman entropy)."""
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Distributions of the form p(x; theta) = exp(<t(x), theta> - F(theta) + k(x))."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError
