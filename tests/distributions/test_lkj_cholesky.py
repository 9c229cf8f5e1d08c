"""LKJCholesky: at dim 2 its density in r = L[1, 0] is Gamma(eta + 1/2) / (sqrt(pi) Gamma(eta)) (1 - r^2)^(eta - 1),
which integrates to 1; PyTorch's seeded draws and their log_prob (tests/data/make_lkj_ref.py); the
corr_cholesky support; errors."""
import math
import os

import numpy as np
import pytest

import tgrad
from tgrad.distributions import LKJCholesky, constraints

CPU_ONLY = True     # compositions of ops the device suites test

REF = np.load(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "lkj_ref.npz"))


@pytest.mark.parametrize("eta", [0.7, 1.0, 2.5])
def test_dim2_density_is_the_normalized_beta_shape(eta):
    r = np.linspace(-0.999, 0.999, 2001)
    L = np.zeros((r.size, 2, 2))
    L[:, 0, 0], L[:, 1, 0], L[:, 1, 1] = 1.0, r, np.sqrt(1 - r * r)
    lp = LKJCholesky(2, tgrad.tensor(eta, dtype=tgrad.float64)).log_prob(tgrad.tensor(L)).numpy()
    want = math.lgamma(eta + 0.5) - 0.5 * math.log(math.pi) - math.lgamma(eta) + (eta - 1) * np.log1p(-r * r)
    np.testing.assert_allclose(lp, want, rtol=1e-12, atol=1e-12)


def test_seeded_draws_and_log_prob_are_pytorchs():
    tgrad.manual_seed(0)
    d = LKJCholesky(4, tgrad.tensor([0.5, 2.0], dtype=tgrad.float64))
    s = d.sample((3,))
    np.testing.assert_allclose(s.numpy(), REF["sample"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(d.log_prob(s).numpy(), REF["log_prob"], rtol=1e-12)
    assert bool(constraints.corr_cholesky.check(s).all())
    assert not bool(constraints.corr_cholesky.check(s * 1.01).any())
    assert d.expand((5, 2)).sample().shape == (5, 2, 4, 4)


def test_errors():
    with pytest.raises(ValueError, match="Expected dim to be an integer greater than or equal to 2. Found dim=1."):
        LKJCholesky(1)
