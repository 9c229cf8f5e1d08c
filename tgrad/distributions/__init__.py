"""``tgrad.distributions``: Normal, MultivariateNormal, Categorical, Bernoulli, Uniform, Independent,
MixtureSameFamily, Laplace, Binomial, NegativeBinomial, Exponential, LogNormal, Cauchy, Gamma, Chi2, Beta, Dirichlet, StudentT, Poisson,
Geometric, OneHotCategorical, TransformedDistribution (with ``transforms``), Multinomial and
``kl_divergence``, with PyTorch's sampling (the same generator draws, so a seeded program samples PyTorch's
numbers), ``rsample`` (the reparameterization trick) and argument validation.  Built on the Tensor API
(gradients come from ops)."""
from . import constraints, transforms  # noqa: F401
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Chi2, Gamma
from .geometric import Geometric
from .half import HalfCauchy, HalfNormal
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .log_normal import LogNormal
from .mixture_same_family import MixtureSameFamily
from .multinomial import Multinomial
from .multivariate_normal import MultivariateNormal
from .negative_binomial import NegativeBinomial
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .poisson import Poisson
from .relaxed_bernoulli import RelaxedBernoulli
from .relaxed_categorical import RelaxedOneHotCategorical
from .studentT import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import *  # noqa: F401,F403
from .uniform import Uniform

__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "Dirichlet", "Distribution", "Exponential",
           "ExponentialFamily", "Gamma", "Geometric", "HalfCauchy", "HalfNormal", "Independent", "Laplace",
           "LogNormal", "MixtureSameFamily", "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal",
           "OneHotCategorical", "Poisson", "RelaxedBernoulli", "RelaxedOneHotCategorical", "StudentT",
           "TransformedDistribution", "Uniform", "kl_divergence", "register_kl"] + transforms.__all__
