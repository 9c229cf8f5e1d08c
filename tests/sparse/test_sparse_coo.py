"""Sparse COO tensors: construction, metadata, coalesce, dense <-> sparse, sparse + sparse / dense, mm, sum and
PyTorch's errors, against numpy and numbers printed by PyTorch 2.13 (/work/venv-torch, hard-coded here)."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F



def _np(t):
    return t.detach().cpu().numpy()


def _on(device, text):
    """PyTorch's sparse repr on ``device``: a cuda tensor's device suffix leads the size line."""
    return text if device == "cpu" else text.replace("\n       size=", "\n       device='cuda:0', size=")


def _sp(idx, vals, size, dtype=tgrad.float32):
    return tgrad.sparse_coo_tensor(tgrad.tensor(idx), tgrad.tensor(vals, dtype=dtype), size)


def _np_dense(idx, vals, size):
    out = np.zeros(size, dtype=np.float64)
    np.add.at(out, tuple(np.asarray(idx)), np.asarray(vals, dtype=np.float64))
    return out


def test_metadata_and_layout():
    s = _sp([[0, 2, 0], [1, 0, 1]], [1., 2., 3.], (3, 3))
    assert s.is_sparse and isinstance(s, tgrad.Tensor) and s.layout is tgrad.sparse_coo
    assert repr(s.layout) == "tgrad.sparse_coo" and tgrad.ones(2).layout is tgrad.strided
    assert not tgrad.ones(2).is_sparse
    assert (s._nnz(), s.sparse_dim(), s.dense_dim(), s.is_coalesced()) == (3, 2, 0, False)
    assert s.shape == (3, 3) and s.dtype is tgrad.float32
    with pytest.raises(RuntimeError, match="Cannot get indices on an uncoalesced tensor"):
        s.indices()
    with pytest.raises(RuntimeError, match="Cannot get values on an uncoalesced tensor"):
        s.values()
    assert s._indices().tolist() == [[0, 2, 0], [1, 0, 1]] and s._values().tolist() == [1., 2., 3.]


def test_repr_as_pytorch_prints_it(device):
    # the strings PyTorch 2.13 prints (torch -> tgrad)
    s = _sp([[0, 2, 0], [1, 0, 1]], [1., 2., 3.], (3, 3))
    assert repr(s) == _on(device, "tensor(indices=tensor([[0, 2, 0],\n                       [1, 0, 1]]),\n"
                       "       values=tensor([1., 2., 3.]),\n       size=(3, 3), nnz=3, layout=tgrad.sparse_coo)")
    s3 = _sp([[1, 0]], [[1., 2.], [3., 4.]], (3, 2))
    assert repr(s3) == _on(device, "tensor(indices=tensor([[1, 0]]),\n       values=tensor([[1., 2.],\n"
                        "                      [3., 4.]]),\n       size=(3, 2), nnz=2, layout=tgrad.sparse_coo)")
    e = tgrad.sparse_coo_tensor(tgrad.zeros(2, 0, dtype=tgrad.long), tgrad.zeros(0), (2, 2))
    assert repr(e) == _on(device, "tensor(indices=tensor([], size=(2, 0)),\n       values=tensor([], size=(0,)),\n"
                       "       size=(2, 2), nnz=0, layout=tgrad.sparse_coo)")


@pytest.mark.parametrize("dense", [(), (3,)])
def test_coalesce_and_to_dense_against_numpy(dense):
    rng = np.random.default_rng(0)
    n = 40
    idx = np.stack([rng.integers(0, 4, n), rng.integers(0, 5, n)])
    vals = rng.standard_normal((n,) + dense)
    s = tgrad.sparse_coo_tensor(tgrad.tensor(idx), tgrad.tensor(vals), (4, 5) + dense)
    c = s.coalesce()
    assert c.is_coalesced() and c.indices() is c._indices()
    lin = idx[0] * 5 + idx[1]
    keys = np.unique(lin)
    assert _np(c.indices()).tolist() == [list(keys // 5), list(keys % 5)]
    want = np.stack([vals[lin == k].sum(0) for k in keys])
    np.testing.assert_allclose(_np(c.values()), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(s.to_dense()), _np_dense(idx, vals, (4, 5) + dense), rtol=1e-12, atol=1e-12)
    assert c.coalesce() is c


def test_coalesce_sums_duplicates_in_entry_order():
    # float32 duplicates summed sequentially in the entries' (stable sorted) order: 1e8 + 1 - 1e8 != 1e8 - 1e8 + 1
    s = _sp([[2, 0, 2, 2]], [1e8, 5., 1., -1e8], (3,))
    c = s.coalesce()
    v = np.float32(np.float32(np.float32(1e8) + np.float32(1)) + np.float32(-1e8))
    assert c.values().tolist() == [5., float(v)]


def test_to_sparse_roundtrip():
    x = tgrad.tensor([[0., 1.5, 0.], [0., 0., 0.], [-2., 0., 3.]])
    s = x.to_sparse()
    assert s.is_coalesced() and s.indices().tolist() == [[0, 2, 2], [1, 0, 2]]
    assert s.values().tolist() == [1.5, -2., 3.]
    assert s.to_dense().tolist() == x.tolist()
    x3 = tgrad.arange(24.).view(4, 3, 2)
    x3[1] = 0
    h = x3.to_sparse(1)
    assert (h.sparse_dim(), h.dense_dim(), h.indices().tolist()) == (1, 2, [[0, 2, 3]])
    assert h.to_dense().tolist() == x3.tolist()
    assert x.to_dense() is x


def test_sparse_plus_sparse_as_pytorch(device):
    # PyTorch 2.13 cpu: uncoalesced operands are merged by ATen's two-pointer walk, coalesced ones stay coalesced;
    # cuda (add_out_sparse_cuda): the two entry lists concatenated, uncoalesced, no host sync
    a = _sp([[3, 1, 3]], [1., 2., 3.], (6,))
    b = _sp([[0, 3, 5]], [10., 20., 30.], (6,))
    cpu = device == "cpu"
    for r in (a + b, a.clone().add_(b)):
        if cpu:
            assert r._indices().tolist() == [[0, 3, 1, 3, 5]] and r._values().tolist() == [10., 21., 2., 3., 30.]
        else:
            assert r._indices().tolist() == [[3, 1, 3, 0, 3, 5]] and r._values().tolist() == [1., 2., 3., 10., 20., 30.]
        assert not r.is_coalesced()
    r = a.coalesce() + b.coalesce()
    assert r.is_coalesced() == cpu and r.coalesce().indices().tolist() == [[0, 1, 3, 5]]
    assert r.coalesce().values().tolist() == [10., 2., 24., 30.]
    assert tgrad.add(a, b, alpha=2)._values().tolist() == ([20., 41., 2., 3., 60.] if cpu else
                                                           [1., 2., 3., 20., 40., 60.])
    with pytest.raises(RuntimeError, match="add\\(sparse, dense\\) is not supported"):
        a + tgrad.ones(6)


def test_dense_plus_sparse():
    idx, vals = [[0, 2, 0], [1, 0, 1]], [1., 2., 3.]
    s = _sp(idx, vals, (3, 3))
    d = tgrad.ones(3, 3)
    want = 1 + _np_dense(idx, vals, (3, 3))
    assert (d + s).tolist() == want.tolist() and tgrad.add(d, s).tolist() == want.tolist()
    assert d.tolist() == np.ones((3, 3)).tolist()
    d.add_(s, alpha=-0.5)
    np.testing.assert_allclose(_np(d), 1 - 0.5 * _np_dense(idx, vals, (3, 3)), rtol=1e-7)
    with pytest.raises(RuntimeError, match="same size"):
        tgrad.ones(2, 3) + s


def test_scalar_mul_and_sum():
    s = _sp([[0, 2, 0], [1, 0, 1]], [1., 2., 3.], (3, 3))
    assert (s * 2)._values().tolist() == [2., 4., 6.] and s._values().tolist() == [1., 2., 3.]
    assert s.mul_(2) is s and s._values().tolist() == [2., 4., 6.]
    assert tgrad.sparse.sum(s).item() == 12.0 and s.sum().item() == 12.0
    r = tgrad.sparse.sum(s, 0)       # PyTorch: indices [[0, 1]], values [4., 8.], coalesced
    assert r.is_sparse and r.indices().tolist() == [[0, 1]] and r.values().tolist() == [4., 8.]
    assert tgrad.sparse.sum(s, (0, 1)).item() == 12.0


def test_mm_against_numpy_and_gradcheck():
    idx, vals = [[0, 2, 0, 1], [1, 0, 1, 3]], [1., 2., 3., -1.]
    s = _sp(idx, vals, (3, 4), dtype=tgrad.float64)
    d = tgrad.tensor(np.arange(8.).reshape(4, 2) / 3, requires_grad=True)
    want = _np_dense(idx, vals, (3, 4)) @ _np(d.detach())
    np.testing.assert_allclose(_np(tgrad.sparse.mm(s, d)), want, rtol=1e-12)
    np.testing.assert_allclose(_np(tgrad.mm(s, d)), want, rtol=1e-12)
    np.testing.assert_allclose(_np(tgrad.sparse.addmm(tgrad.ones(3, 2, dtype=tgrad.float64), s, d)),
                               want + 1, rtol=1e-12)
    assert tgrad.autograd.gradcheck(lambda m: tgrad.sparse.mm(s, m), (d,))


def test_to_dense_gradcheck_through_values():
    idx = tgrad.tensor([[0, 2, 0], [1, 0, 1]])
    v = tgrad.tensor([1., 2., 3.], dtype=tgrad.float64, requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda v: tgrad.sparse_coo_tensor(idx, v, (3, 3)).to_dense() * 2, (v,))


def test_pytorch_errors(device):
    s = _sp([[0, 2, 0], [1, 0, 1]], [1., 2., 3.], (3, 3))
    for f, op in [(lambda: s.exp(), "exp"), (lambda: tgrad.relu(s), "relu"), (lambda: s.cumsum(0), "cumsum"),
                  (lambda: F.softmax(s, 0), "softmax")]:
        with pytest.raises(NotImplementedError, match=f"Could not run 'aten::{op}' with arguments from the "
                                                      f"'Sparse{device.upper()}' backend"):
            f()
    with pytest.raises(TypeError, match="can't convert Sparse layout tensor to numpy"):
        s.numpy()
    with pytest.raises(RuntimeError, match="reshape is not implemented for sparse tensors"):
        s.reshape(-1)
    with pytest.raises(RuntimeError, match="doesn't have storage"):
        s.data_ptr()
    with pytest.raises(RuntimeError, match="size is inconsistent with indices"):
        tgrad.sparse_coo_tensor(tgrad.tensor([[0, 3]]), tgrad.ones(2), (3,), check_invariants=True)
    with pytest.raises(RuntimeError, match="indices must be sparse_dim x nnz"):
        tgrad.sparse_coo_tensor(tgrad.tensor([0, 1]), tgrad.ones(2), (3,))


def test_size_inferred_copy_and_pickle():
    s = tgrad.sparse_coo_tensor([[0, 4], [1, 0]], [1., 2.])
    assert s.shape == (5, 2) and s.dtype is tgrad.float32
    import copy
    import pickle
    for t in (pickle.loads(pickle.dumps(s)), copy.deepcopy(s), s.clone()):
        assert t.is_sparse and t.to_dense().tolist() == s.to_dense().tolist()
        assert t._values() is not s._values()
