"""Wishart: log_prob against the closed-form density in numpy, moments and entropy against PyTorch's printed
values (tests/data/make_wishart_ref.py) for its three parameterizations, PyTorch's seeded draws (its correction
loop included) and errors."""
import math
import os
import warnings

import numpy as np
import pytest

import tgrad
from tgrad.distributions import Wishart

CPU_ONLY = True     # compositions of linalg ops the device suites test

REF = np.load(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "wishart_ref.npz"))


def _log_density(X, nu, S):
    """log W(X; nu, S) = (nu-p-1)/2 log|X| - tr(S^-1 X)/2 - nu p/2 log 2 - nu/2 log|S| - log Gamma_p(nu/2)."""
    p = S.shape[-1]
    lgp = p * (p - 1) / 4 * math.log(math.pi) + sum(math.lgamma(nu / 2 - i / 2) for i in range(p))
    return ((nu - p - 1) / 2 * np.linalg.slogdet(X)[1] - np.trace(np.linalg.solve(S, X), axis1=-2, axis2=-1) / 2
            - nu * p / 2 * math.log(2) - nu / 2 * np.linalg.slogdet(S)[1] - lgp)


@pytest.mark.parametrize("name", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_values(name):
    S, X = REF["S"], REF["X"]
    arg = np.linalg.cholesky(S) if name == "scale_tril" else S
    w = Wishart(tgrad.tensor(5.5), **{name: tgrad.tensor(arg)})
    cov = S if name != "precision_matrix" else np.linalg.inv(S)
    # (2e-7: PyTorch's mvlgamma, which tgrad keeps, is off the exact log Gamma_p(nu/2) by ~1.1e-7 at p = 3)
    np.testing.assert_allclose(w.log_prob(tgrad.tensor(X)).numpy(), _log_density(X, 5.5, cov), rtol=0, atol=2e-7)
    for what in ("log_prob", "entropy", "mean", "variance", "mode", "precision_matrix"):
        got = w.log_prob(tgrad.tensor(X)) if what == "log_prob" else w.entropy() if what == "entropy" else \
            getattr(w, what)
        np.testing.assert_allclose(got.numpy(), REF[f"{name}/{what}"], rtol=1e-12, atol=1e-13, err_msg=what)


def test_seeded_draws_are_pytorchs():
    w = Wishart(tgrad.tensor([4.0, 6.0]), covariance_matrix=tgrad.tensor(REF["S"]))
    tgrad.manual_seed(0)
    with pytest.warns(UserWarning, match="Singular sample detected."):     # PyTorch's loop warns on valid draws
        np.testing.assert_allclose(w.sample().numpy(), REF["sample"], rtol=1e-12, atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(w.rsample((3,)).numpy(), REF["rsample3"], rtol=1e-12, atol=1e-12)


def test_errors():
    with pytest.raises(AssertionError, match="Exactly one of covariance_matrix or precision_matrix or scale_tril"):
        Wishart(tgrad.tensor(4.0))
    with pytest.raises(ValueError, match="expected to be greater than ndim - 1 = 2"):
        Wishart(tgrad.tensor(1.5), covariance_matrix=tgrad.eye(3))
    with pytest.warns(UserWarning, match="Low df values detected"):
        Wishart(tgrad.tensor(2.5), covariance_matrix=tgrad.eye(3))
