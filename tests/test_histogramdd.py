"""tgrad.histogramdd against numpy.histogramdd (int bins, per-dim bins, range, weights, density, given edges,
one-point data) and PyTorch's return type and error."""
import numpy as np
import pytest

import tgrad

CPU_ONLY = True     # a composite of searchsorted / index_add, which the device suites test


def _check(x, bins, rng=None, weights=None, density=False):
    r = tgrad.histogramdd(tgrad.tensor(x), bins=[tgrad.tensor(b) for b in bins] if isinstance(bins[0], np.ndarray)
                          else bins, range=None if rng is None else [v for pair in rng for v in pair],
                          weight=None if weights is None else tgrad.tensor(weights), density=density)
    h, edges = np.histogramdd(x, bins=bins, range=rng, weights=weights, density=density)
    np.testing.assert_allclose(r.hist.numpy(), h, rtol=1e-12)
    for e, ne in zip(r.bin_edges, edges):
        np.testing.assert_allclose(e.numpy(), ne, rtol=1e-12, atol=1e-15)
    return r


def test_against_numpy():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((200, 3))
    _check(x, [3, 4, 2])
    _check(x, [5, 5, 5], rng=[(-1, 1), (-2, 0.5), (0, 3)], weights=rng.uniform(0, 2, 200))
    _check(x, [4, 3, 3], density=True)
    _check(x[:, :2], [np.array([-3.0, -0.5, 0.0, 2.0]), np.array([-1.0, 1.0])])
    r = _check(np.ones((3, 2)), [2, 2])
    assert type(r).__name__ == "histogramdd" and r._fields == ("hist", "bin_edges") and isinstance(r.bin_edges, tuple)
    # the last edge is inside the last bin; a batch of point sets is flattened
    assert tgrad.histogramdd(tgrad.tensor([[0.0, 2.0]]), bins=[tgrad.tensor([0.0, 1.0]), tgrad.tensor([0.0, 2.0])]
                             ).hist.tolist() == [[1.0]]
    assert tgrad.histogramdd(tgrad.tensor(rng.standard_normal((2, 5, 2))), bins=2).hist.sum().item() == 10.0


def test_errors():
    with pytest.raises(NotImplementedError, match="\"histogramdd\" not implemented for 'Long'"):
        tgrad.histogramdd(tgrad.ones(3, 2, dtype=tgrad.int64), bins=2)
