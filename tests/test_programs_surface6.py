"""Surface that the issue-14 programs (ViT, seq2seq, DDPM, LoRA, GNN, PPO, quantile regression, ...) hit."""
import numpy as np
import pytest

import tgrad

CPU_ONLY = True


def test_quantile_and_nanquantile_with_nan_rows_match_numpy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 7))
    a[1, 2] = np.nan
    a[3] = np.nan
    x = tgrad.tensor(a)
    qs = [0.1, 0.5, 0.77]
    for mode in ("linear", "lower", "higher", "midpoint", "nearest"):
        with np.errstate(all="ignore"):
            want_q = np.quantile(a, qs, axis=1, method=mode)
            want_n = np.nanquantile(a, qs, axis=1, method=mode)
        got_q = tgrad.quantile(x, tgrad.tensor(qs, dtype=tgrad.float64), dim=1, interpolation=mode)
        got_n = tgrad.nanquantile(x, tgrad.tensor(qs, dtype=tgrad.float64), dim=1, interpolation=mode)
        np.testing.assert_allclose(got_q.numpy(), want_q, rtol=1e-12, equal_nan=True)
        np.testing.assert_allclose(got_n.numpy(), want_n, rtol=1e-12, equal_nan=True)
    assert np.isnan(tgrad.quantile(x, 0.5).item())
    np.testing.assert_allclose(tgrad.nanquantile(x, 0.3).item(), np.nanquantile(a, 0.3), rtol=1e-12)
    k = x.nanquantile(0.3, dim=0, keepdim=True)
    assert k.shape == (1, 7)
    np.testing.assert_allclose(k.numpy(), np.nanquantile(a, 0.3, axis=0, keepdims=True), rtol=1e-12)
    with pytest.raises(RuntimeError, match="q tensor must be same dtype as the input tensor"):
        tgrad.quantile(x, tgrad.tensor([0.5], dtype=tgrad.float32))


def test_gradgradcheck_draws_grad_outputs_from_the_global_generator():
    # PyTorch's gradgradcheck makes its grad_outputs with make_tensor(low=-1, high=1): uniform_ over the
    # output's shape from the global generator, so the draws after it are those after that uniform_
    x = tgrad.tensor([0.3, -1.2, 2.0], dtype=tgrad.float64, requires_grad=True)
    tgrad.manual_seed(5)
    assert tgrad.autograd.gradgradcheck(lambda t: t ** 3, (x,))
    after = tgrad.randn(4)
    assert tgrad.autograd.gradgradcheck(lambda t: t ** 3, (x,), gen_non_contig_grad_outputs=True)
    tgrad.manual_seed(5)
    tgrad.empty(3, dtype=tgrad.float64).uniform_(-1, 1)
    np.testing.assert_array_equal(after.numpy(), tgrad.randn(4).numpy())


def test_pca_and_svd_lowrank_recover_a_low_rank_matrix():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((20, 3)) @ rng.standard_normal((3, 8))
    A = tgrad.tensor(a)
    tgrad.manual_seed(0)
    U, S, V = tgrad.pca_lowrank(A, q=4)
    c = a - a.mean(0)
    np.testing.assert_allclose(S.numpy()[:3], np.linalg.svd(c, compute_uv=False)[:3], rtol=1e-10)
    assert U.shape == (20, 4) and V.shape == (8, 4)
    np.testing.assert_allclose((U[:, :3] * S[:3]) @ V[:, :3].T, c, atol=1e-10)
    U, S, V = tgrad.svd_lowrank(A.T, q=3, niter=1)           # wide input: runs on A^H and swaps U, V
    assert U.shape == (8, 3) and V.shape == (20, 3)
    np.testing.assert_allclose(((U * S) @ V.T).numpy(), a.T, atol=1e-10)
    with pytest.raises(ValueError, match=r"q\(=9\) must be non-negative integer and not greater than min\(m, n\)=8"):
        tgrad.pca_lowrank(A, q=9)
