"""LowRankMultivariateNormal: log_prob / entropy / moments equal MultivariateNormal's with the dense covariance
W W^T + diag(D); precision is its inverse; the three KL pairs against the MultivariateNormal pair; PyTorch's seeded
draws (tests/data/make_lowrank_mvn_ref.py); errors."""
import os

import numpy as np
import pytest

import tgrad
from tgrad.distributions import LowRankMultivariateNormal, MultivariateNormal, kl_divergence

CPU_ONLY = True     # compositions of linalg ops the device suites test

REF = np.load(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data",
                           "lowrank_mvn_ref.npz"))


def _pair(rng, batch=(), m=2):
    loc = tgrad.tensor(rng.standard_normal(batch + (4,)))
    W = tgrad.tensor(rng.standard_normal((4, m)))
    d = tgrad.tensor(rng.uniform(0.5, 2, 4))
    cov = W.matmul(W.mT) + d.diag_embed()
    return LowRankMultivariateNormal(loc, W, d), MultivariateNormal(loc, covariance_matrix=cov)


def test_matches_the_dense_multivariate_normal():
    rng = np.random.default_rng(1)
    p, dense = _pair(rng, (2,))
    x = tgrad.tensor(rng.standard_normal((3, 2, 4)))
    np.testing.assert_allclose(p.log_prob(x).numpy(), dense.log_prob(x).numpy(), rtol=1e-12)
    np.testing.assert_allclose(p.entropy().numpy(), dense.entropy().numpy(), rtol=1e-12)
    np.testing.assert_allclose(p.covariance_matrix.numpy(), dense.covariance_matrix.numpy(), rtol=1e-13)
    np.testing.assert_allclose(p.variance.numpy(), dense.variance.numpy(), rtol=1e-13)
    np.testing.assert_allclose(p.scale_tril.numpy(), dense.scale_tril.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(p.precision_matrix[0].matmul(p.covariance_matrix[0]).numpy(), np.eye(4), atol=1e-12)
    assert p.batch_shape == (2,) and p.event_shape == (4,) and p.expand((3, 2)).log_prob(x).shape == (3, 2)


def test_kl_pairs_equal_the_dense_pair():
    rng = np.random.default_rng(2)
    p, pd = _pair(rng)
    q, qd = _pair(rng, m=3)
    want = kl_divergence(pd, qd).item()
    assert kl_divergence(p, q).item() == pytest.approx(want, rel=1e-11)
    assert kl_divergence(pd, q).item() == pytest.approx(want, rel=1e-11)
    assert kl_divergence(p, qd).item() == pytest.approx(want, rel=1e-11)
    assert abs(kl_divergence(p, p).item()) < 1e-12


def test_seeded_draws_are_pytorchs():
    p = LowRankMultivariateNormal(tgrad.tensor(REF["loc"]), tgrad.tensor(REF["W"]), tgrad.tensor(REF["d"]))
    tgrad.manual_seed(0)
    np.testing.assert_allclose(p.sample((5,)).numpy(), REF["sample5"], rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(p.rsample().numpy(), REF["rsample"], rtol=1e-13, atol=1e-14)


def test_errors():
    with pytest.raises(ValueError, match="loc must be at least one-dimensional."):
        LowRankMultivariateNormal(tgrad.tensor(1.0), tgrad.ones(1, 1), tgrad.ones(1))
    with pytest.raises(ValueError, match="cov_factor must be a batch of matrices with shape 3 x m"):
        LowRankMultivariateNormal(tgrad.zeros(3), tgrad.ones(2, 1), tgrad.ones(3))
    with pytest.raises(ValueError, match="cov_diag must be a batch of vectors with shape"):
        LowRankMultivariateNormal(tgrad.zeros(3), tgrad.ones(3, 1), tgrad.ones(2))
