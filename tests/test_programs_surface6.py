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
