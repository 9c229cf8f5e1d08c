"""``tgrad.distributions``: Normal, MultivariateNormal, Categorical, Bernoulli, Uniform, Independent and
``kl_divergence``, with PyTorch's sampling (the same generator draws, so a seeded program samples PyTorch's
numbers), ``rsample`` (the reparameterization trick) and argument validation.  Built on the Tensor API
(gradients come from ops)."""
from . import constraints  # noqa: F401
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .independent import Independent
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .uniform import Uniform

__all__ = ["Bernoulli", "Categorical", "Distribution", "ExponentialFamily", "Independent", "MultivariateNormal",
           "Normal", "Uniform", "kl_divergence", "register_kl"]
