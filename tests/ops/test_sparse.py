"""Sparse COO kernels (kernels/sparse.py): segment sums in entry order across many blocks, and the index work
staying on the device (values against numpy; gradcheck in the OpInfos, tgrad/testing/opinfos/sparse.py)."""
import numpy as np
import pytest

import tgrad


def _entries(rng, nnz, rows, width):
    idx = rng.integers(0, rows, (1, nnz))
    return idx, rng.standard_normal((nnz, width)).astype(np.float32)


def _sequential_sums(idx, vals):
    """float32 sums of each distinct index's values, one entry after another in entry order (ATen's cpu order)."""
    order = np.argsort(idx[0], kind="stable")
    keys, start, count = np.unique(idx[0][order], return_index=True, return_counts=True)
    acc = vals[order][start].copy()
    for r in range(1, count.max()):
        has = count > r
        acc[has] = acc[has] + vals[order][start[has] + r]
    return keys, acc


@pytest.mark.parametrize("width", [1, 3, 200])
def test_coalesce_in_entry_order_across_blocks(width):
    rng = np.random.default_rng(1)
    idx, vals = _entries(rng, 3000, 700, width)
    vals[::7] *= 1e6                        # cancellations: a different order gives different bits
    s = tgrad.sparse_coo_tensor(tgrad.tensor(idx), tgrad.tensor(vals), (700, width)).coalesce()
    keys, want = _sequential_sums(idx, vals)
    assert s.indices().cpu().numpy()[0].tolist() == keys.tolist()
    np.testing.assert_array_equal(s.values().cpu().numpy(), want)
    dense = np.zeros((700, width), np.float32)
    dense[keys] = want
    np.testing.assert_array_equal(s.to_dense().cpu().numpy(), dense)


def test_dense_plus_sparse_and_mm_across_blocks():
    rng = np.random.default_rng(2)
    idx = np.stack([rng.integers(0, 300, 2000), rng.integers(0, 50, 2000)])
    vals = rng.standard_normal(2000)
    s = tgrad.sparse_coo_tensor(tgrad.tensor(idx), tgrad.tensor(vals), (300, 50))
    ref = np.zeros((300, 50))
    np.add.at(ref, tuple(idx), vals)
    d = rng.standard_normal((300, 50))
    np.testing.assert_allclose(tgrad.tensor(d).add(s, alpha=-0.25).cpu().numpy(), d - 0.25 * ref, rtol=1e-12,
                               atol=1e-12)
    m = rng.standard_normal((50, 130))
    np.testing.assert_allclose(tgrad.sparse.mm(s, tgrad.tensor(m)).cpu().numpy(), ref @ m, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(tgrad.sparse.mm(s.coalesce(), tgrad.tensor(m).t().contiguous().t()).cpu().numpy(),
                               ref @ m, rtol=1e-10, atol=1e-10)


def test_index_work_stays_on_the_device(device, monkeypatch):
    """coalesce, to_dense, dense + sparse and sparse.mm read back one scalar (the number of distinct indices, for
    the output's size): no index list crosses to the host (ATen's cuda coalesce reads its nnz back too)."""
    if device == "cpu":
        pytest.skip("cpu tensors are host memory: nothing to count")
    rng = np.random.default_rng(3)
    idx = tgrad.tensor(np.stack([rng.integers(0, 40, 500), rng.integers(0, 30, 500)]))
    v = tgrad.tensor(rng.standard_normal(500).astype(np.float32))
    m = tgrad.ones(30, 4)
    s = tgrad.sparse_coo_tensor(idx, v, (40, 30))
    backend = v._storage.allocator.backend
    copied = []
    real = backend.memcpy_dtoh
    monkeypatch.setattr(backend, "memcpy_dtoh", lambda dst, src, n: (copied.append(n), real(dst, src, n))[1])
    for f in (lambda: s.coalesce(), lambda: s.to_dense(), lambda: tgrad.ones(40, 30).add(s),
              lambda: tgrad.sparse.mm(s, m)):
        copied.clear()
        f()
        assert sum(copied) <= 8, copied
