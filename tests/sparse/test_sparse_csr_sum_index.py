"""Compressed sparse tensors, PyTorch 2.13's behaviour (printed by /work/venv-torch, hard-coded here): sum over
dims with keepdim=True of a CSR (the rows / columns that hold entries), COO sum with keepdim (the reduced dims
unsqueezed: sparse ones at or before sparse_dim), torch.sparse.sum's refusals of compressed tensors, and int32
compressed indices kept through construction and the ops that keep them."""
import io

import numpy as np
import pytest

import tgrad

A = [[1., 0, 2, 0], [0, 0, 0, 0], [0, 3, -2, 0]]


def _parts(c):
    return c.crow_indices().tolist(), c.col_indices().tolist(), c.values().tolist(), tuple(c.shape)


def test_csr_sum_dims_keepdim():
    c = tgrad.tensor(A, dtype=tgrad.float64).to_sparse_csr()
    # PyTorch: sum(0) keeps column 2 (2 + -2 = 0: a stored zero), sum(1) skips the empty row
    assert _parts(c.sum(0, keepdim=True)) == ([0, 3], [0, 1, 2], [1.0, 3.0, 0.0], (1, 4))
    assert _parts(c.sum(-2, keepdim=True)) == ([0, 3], [0, 1, 2], [1.0, 3.0, 0.0], (1, 4))
    assert _parts(c.sum(1, keepdim=True)) == ([0, 1, 1, 2], [0, 0], [3.0, 1.0], (3, 1))
    assert _parts(c.sum((1, 0), keepdim=True)) == ([0, 1], [0], [4.0], (1, 1))
    assert _parts(c.sum((), keepdim=True)) == ([0, 1], [0], [4.0], (1, 1))
    e = tgrad.zeros(2, 3).to_sparse_csr()
    assert _parts(e.sum(0, keepdim=True)) == ([0, 0], [], [], (1, 3))
    assert _parts(e.sum(1, keepdim=True)) == ([0, 0, 0], [], [], (2, 1))
    r = tgrad.tensor([[1, 0, 2], [0, 3, 0]]).to_sparse_csr().sum(0, keepdim=True)
    assert r.dtype is tgrad.int64 and r.values().tolist() == [1, 3, 2]
    assert c.sum(1, keepdim=True, dtype=tgrad.float32).values().dtype is tgrad.float32
    # values against numpy on a random matrix
    x = np.random.default_rng(0).standard_normal((5, 7)) * (np.random.default_rng(1).random((5, 7)) < 0.4)
    s = tgrad.tensor(x).to_sparse_csr()
    np.testing.assert_allclose(s.sum(0, keepdim=True).to_dense().cpu().numpy(), x.sum(0, keepdims=True), atol=1e-15)
    np.testing.assert_allclose(s.sum(1, keepdim=True).to_dense().cpu().numpy(), x.sum(1, keepdims=True), atol=1e-15)
    with pytest.raises(RuntimeError, match="reduction operations on CSR tensors with keepdim=False is unsupported"):
        c.sum(0)
    with pytest.raises(RuntimeError, match="Currently the only compressed sparse format supported for "
                                           "sum.dim_IntList is CSR, but got layout SparseCsc"):
        c.to_sparse_csc().sum(0, keepdim=True)
    with pytest.raises(RuntimeError, match="but got layout SparseBsr"):
        tgrad.ones(4, 4).to_sparse_bsr(2).sum(0, keepdim=True)
    with pytest.raises(RuntimeError, match="input_dim == 2 INTERNAL ASSERT FAILED"):
        (tgrad.arange(24.).reshape(2, 3, 4) + 1).to_sparse_csr().sum(1, keepdim=True)
    with pytest.raises(RuntimeError, match="coalesce expected sparse coordinate tensor layout but got SparseCsr"):
        tgrad.sparse.sum(c)
    with pytest.raises(NotImplementedError, match="Could not run 'aten::_indices' with arguments from the "
                                                  "'SparseCsr(CPU|CUDA)' backend"):
        tgrad.sparse.sum(c, 0)


def test_coo_sum_keepdim():
    o = tgrad.tensor([[1., 0, 2], [0, 3, 0]], dtype=tgrad.float64).to_sparse()
    r = o.sum(0, keepdim=True)
    assert (r._indices().tolist(), r._values().tolist(), tuple(r.shape), r.is_coalesced()) == \
        ([[0, 0, 0], [0, 1, 2]], [1.0, 3.0, 2.0], (1, 3), False)
    r = o.sum(1, keepdim=True)
    assert (r._indices().tolist(), r._values().tolist(), tuple(r.shape)) == ([[0, 1], [0, 0]], [3.0, 3.0], (2, 1))
    r = o.sum((0, 1), keepdim=True)
    assert r.layout is tgrad.strided and r.tolist() == [[6.0]]
    assert o.sum(0).is_coalesced() and tuple(o.sum(0).shape) == (3,)
    h = tgrad.arange(12.).reshape(2, 3, 2).to_sparse(2)
    r = h.sum(0, keepdim=True)
    assert (r._indices().tolist(), r._values().tolist(), tuple(r.shape), r.is_coalesced()) == \
        ([[0, 0, 0], [0, 1, 2]], [[6.0, 8.0], [10.0, 12.0], [14.0, 16.0]], (1, 3, 2), False)
    r = h.sum(2, keepdim=True)      # the reduced dense dim comes back as a sparse one
    assert (r._indices().tolist(), r._values().tolist(), tuple(r.shape)) == \
        ([[0, 0, 0, 1, 1, 1], [0, 1, 2, 0, 1, 2], [0, 0, 0, 0, 0, 0]], [1.0, 5.0, 9.0, 13.0, 17.0, 21.0], (2, 3, 1))
    r = h.sum((0, 2), keepdim=True)
    assert (r._indices().tolist(), r._values().tolist(), tuple(r.shape)) == \
        ([[0, 0, 0], [0, 1, 2], [0, 0, 0]], [14.0, 22.0, 30.0], (1, 3, 1))
    r = h.sum((0, 1), keepdim=True)
    assert r.layout is tgrad.strided and r.tolist() == [[[30.0, 36.0]]]


def test_int32_compressed_indices():
    crow, col, v = tgrad.tensor([0, 2, 3]), tgrad.tensor([0, 2, 1]), tgrad.tensor([1., 2, 3])
    c = tgrad.sparse_csr_tensor(crow.int(), col.int(), v)
    assert (c.crow_indices().dtype, c.col_indices().dtype) == (tgrad.int32, tgrad.int32)
    assert c.crow_indices().tolist() == [0, 2, 3] and c.col_indices().tolist() == [0, 2, 1]
    assert repr(c) == ("tensor(crow_indices=tensor([0, 2, 3]),\n       col_indices=tensor([0, 2, 1]),\n"
                       "       values=tensor([1., 2., 3.]), size=(2, 3), nnz=3,\n       layout=tgrad.sparse_csr)") \
        or c.device.type != "cpu"
    # PyTorch 2.13 keeps each array's own dtype when the invariants are not checked
    m = tgrad.sparse_csr_tensor(crow.int(), col, v)
    assert (m.crow_indices().dtype, m.col_indices().dtype) == (tgrad.int32, tgrad.int64)
    s = tgrad.sparse_csr_tensor(crow.short(), col.short(), v)
    assert s.crow_indices().dtype is tgrad.int16
    with pytest.raises(RuntimeError, match="crow_indices and col_indices must have the same dtype, bot got Int and "
                                           "Long, respectively"):
        tgrad.sparse_csr_tensor(crow.int(), col, v, check_invariants=True)
    with pytest.raises(RuntimeError, match="crow_indices and col_indices dtype must be Int or Long, but got Short"):
        tgrad.sparse_csr_tensor(crow.short(), col.short(), v, check_invariants=True)
    with pytest.raises(NotImplementedError, match="\"estimate_sparse_compressed_tensor_size\" not implemented for "
                                                  "'Float'"):
        tgrad.sparse_csr_tensor(crow.float(), col.float(), v)
    i32 = tgrad.int32
    # kept (PyTorch 2.13): scalar mul, neg, add, t, to_sparse_csc (and back), clone, detach, to(dtype), sum, bsr
    for t, k in ((c * 2, "crow"), (-c, "crow"), (c + c, "crow"), (c.t(), "ccol"), (c.to_sparse_csc(), "ccol"),
                 (c.to_sparse_csc().to_sparse_csr(), "crow"), (c.clone(), "crow"), (c.detach(), "crow"),
                 (c.to(tgrad.float64), "crow"), (c.sum(0, keepdim=True), "crow"), (c.to_sparse_bsr(1), "crow")):
        idx = (t.crow_indices(), t.col_indices()) if k == "crow" else (t.ccol_indices(), t.row_indices())
        assert idx[0].dtype is i32 and idx[1].dtype is i32
    assert c.to_sparse().indices().dtype is tgrad.int64            # COO indices are int64
    assert tgrad.tensor([[1., 0], [0, 2]]).to_sparse_csr().crow_indices().dtype is tgrad.int64
    b = tgrad.sparse_bsr_tensor(crow.int(), col.int(), tgrad.ones(3, 2, 2))
    assert b.col_indices().dtype is i32
    np.testing.assert_array_equal((c @ tgrad.ones(3, 2)).cpu().numpy(), [[3., 3.], [3., 3.]])
    np.testing.assert_array_equal(c.to_dense().cpu().numpy(), [[1., 0, 2], [0, 3, 0]])
    buf = io.BytesIO()
    tgrad.save(c, buf)
    buf.seek(0)
    assert tgrad.load(buf).crow_indices().dtype is i32
    bt = tgrad.sparse_csr_tensor(tgrad.tensor([[0, 1, 2], [0, 2, 2]]).int(), tgrad.tensor([[0, 1], [0, 1]]).int(),
                                 tgrad.ones(2, 2))
    assert bt.crow_indices().dtype is i32 and bt[0].crow_indices().dtype is i32
