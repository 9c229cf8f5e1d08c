"""Gamma / Chi2 / InverseGamma ``cdf`` through igamma: closed forms at integer shape (Erlang), the gradient is
the density, InverseGamma's is the upper function at rate / x."""
import math

import numpy as np
import pytest

import tgrad
from tgrad.distributions import Chi2, Gamma, InverseGamma


def _erlang_cdf(n, y):
    """P(n, y) = 1 - e^-y sum_{k<n} y^k / k! for an integer n."""
    return 1 - math.exp(-y) * sum(y ** k / math.factorial(k) for k in range(n))


def test_gamma_cdf_erlang_and_chi2(device):
    c = tgrad.tensor([1.0, 3.0, 6.0], dtype=tgrad.float64, device=device)
    r = tgrad.tensor([1.5, 0.3, 2.0], dtype=tgrad.float64, device=device)
    v = tgrad.tensor([0.2, 4.0, 3.1], dtype=tgrad.float64, device=device)
    want = [_erlang_cdf(n, rate * x) for n, rate, x in [(1, 1.5, 0.2), (3, 0.3, 4.0), (6, 2.0, 3.1)]]
    np.testing.assert_allclose(Gamma(c, r).cdf(v).cpu().numpy(), want, rtol=1e-14)
    # Chi2(2k) = Gamma(k, 1/2)
    np.testing.assert_allclose(Chi2(2 * c).cdf(v).cpu().numpy(),
                               [_erlang_cdf(n, x / 2) for n, x in [(1, 0.2), (3, 4.0), (6, 3.1)]], rtol=1e-14)
    # InverseGamma(c, r): P(1/G <= x) = P(G >= 1/x) = Q(c, r / x)
    np.testing.assert_allclose(InverseGamma(c, r).cdf(v).cpu().numpy(),
                               [1 - _erlang_cdf(n, rate / x) for n, rate, x in [(1, 1.5, 0.2), (3, 0.3, 4.0),
                                                                                (6, 2.0, 3.1)]], rtol=1e-13)


@pytest.mark.cpu_only
def test_gamma_cdf_gradient_is_the_density():
    d = Gamma(tgrad.tensor([0.5, 2.5], dtype=tgrad.float64), tgrad.tensor([1.5, 0.7], dtype=tgrad.float64))
    x = tgrad.tensor([0.3, 2.0], dtype=tgrad.float64, requires_grad=True)
    (g,) = tgrad.autograd.grad(d.cdf(x).sum(), x)
    np.testing.assert_allclose(g.numpy(), d.log_prob(x).exp().detach().numpy(), rtol=1e-13)


@pytest.mark.cpu_only
def test_gamma_cdf_validates_support():
    with pytest.raises(ValueError, match="to be within the support"):
        Gamma(tgrad.tensor([1.0]), tgrad.tensor([1.0]), validate_args=True).cdf(tgrad.tensor([-1.0]))
