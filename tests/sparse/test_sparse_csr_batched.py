"""Batched and hybrid CSR / CSC tensors (crow_indices (*B, nrows + 1), col_indices (*B, nnz), values
(*B, nnz, *dense)): construction, to_sparse_csr / to_sparse_csc(dense_dim), to_dense, to_sparse, transpose, repr,
and PyTorch 2.13 cpu's errors, against numpy and what /work/venv-torch printed for the same calls with
tgrad -> torch (hard-coded next to each call)."""
import numpy as np
import pytest

import tgrad

from test_sparse_csr import _on

CROW, COL, VAL = [[0, 1, 3], [0, 2, 3]], [[1, 0, 2], [0, 1, 1]], [[1., 2., 3.], [4., 5., 6.]]
X = [[[1., 0., 2.], [0., 3., 0.]], [[0., 4., 0.], [5., 0., 6.]]]


def _csr_to_numpy(crow, col, val, shape):
    """numpy reference of a (batched, hybrid) CSR tensor's dense form."""
    crow, col, val = np.asarray(crow), np.asarray(col), np.asarray(val)
    nbd, nnz = crow.ndim - 1, col.shape[-1]
    nb = int(np.prod(crow.shape[:-1]))
    crow, col, val = crow.reshape(nb, -1), col.reshape(nb, nnz), val.reshape((nb, nnz) + val.shape[nbd + 1:])
    out = np.zeros((nb,) + tuple(shape[nbd:]), val.dtype)
    for b in range(nb):
        for r in range(crow.shape[1] - 1):
            for k in range(crow[b, r], crow[b, r + 1]):
                out[b, r, col[b, k]] = val[b, k]
    return out.reshape(shape)


def test_batched_constructor_repr_to_dense(device):
    a = tgrad.sparse_csr_tensor(tgrad.tensor(CROW), tgrad.tensor(COL), tgrad.tensor(VAL), (2, 2, 3))
    assert (a.shape, a.sparse_dim(), a.dense_dim(), a._nnz(), a.dim()) == ((2, 2, 3), 2, 0, 3, 3)
    assert a.crow_indices().tolist() == CROW and a.col_indices().tolist() == COL and a.values().tolist() == VAL
    assert repr(a) == _on(device, "tensor(crow_indices=tensor([[0, 1, 3],\n                            [0, 2, 3]]),\n"
                                  "       col_indices=tensor([[1, 0, 2],\n                           [0, 1, 1]]),\n"
                                  "       values=tensor([[1., 2., 3.],\n                      [4., 5., 6.]]), "
                                  "size=(2, 2, 3), nnz=3,\n       layout=tgrad.sparse_csr)")
    np.testing.assert_array_equal(a.to_dense().cpu().numpy(), _csr_to_numpy(CROW, COL, VAL, (2, 2, 3)))
    # size inferred: (*B, nrows, max col + 1); two batch dims
    b = tgrad.sparse_csr_tensor(CROW, COL, VAL)
    assert b.shape == (2, 2, 3)
    c4 = tgrad.sparse_csr_tensor(tgrad.tensor([CROW]), tgrad.tensor([COL]), tgrad.tensor([VAL]), (1, 2, 2, 4))
    np.testing.assert_array_equal(c4.to_dense().cpu().numpy(), _csr_to_numpy([CROW], [COL], [VAL], (1, 2, 2, 4)))


def test_hybrid_constructor_and_to_dense(device):
    h = tgrad.sparse_csr_tensor(tgrad.tensor([0, 1, 2]), tgrad.tensor([0, 2]), tgrad.tensor([[1., 2.], [3., 4.]]))
    assert (h.shape, h.dense_dim(), h.sparse_dim(), h._nnz()) == ((2, 3, 2), 1, 2, 2)
    assert repr(h) == _on(device, "tensor(crow_indices=tensor([0, 1, 2]),\n       col_indices=tensor([0, 2]),\n"
                                  "       values=tensor([[1., 2.],\n                      [3., 4.]]), size=(2, 3, 2), "
                                  "nnz=2,\n       layout=tgrad.sparse_csr)")
    np.testing.assert_array_equal(h.to_dense().cpu().numpy(),
                                  [[[1., 2.], [0., 0.], [0., 0.]], [[0., 0.], [0., 0.], [3., 4.]]])
    # batched and hybrid
    v = np.arange(12.).reshape(2, 3, 2) + 1
    bh = tgrad.sparse_csr_tensor(CROW, COL, v.tolist(), check_invariants=True)
    assert (bh.shape, bh.dense_dim()) == ((2, 2, 3, 2), 1)
    np.testing.assert_array_equal(bh.to_dense().cpu().numpy(), _csr_to_numpy(CROW, COL, v, (2, 2, 3, 2)))


def test_to_sparse_csr_batched_and_dense_dim(device):
    c = tgrad.tensor(X).to_sparse_csr()
    # PyTorch: crow [[0, 2, 3], [0, 1, 3]], col [[0, 2, 1], [1, 0, 2]], values [[1, 2, 3], [4, 5, 6]]
    assert c.crow_indices().tolist() == [[0, 2, 3], [0, 1, 3]]
    assert c.col_indices().tolist() == [[0, 2, 1], [1, 0, 2]] and c.values().tolist() == [[1, 2, 3], [4, 5, 6]]
    assert c.to_dense().tolist() == X
    rng = np.random.default_rng(1)
    keep = np.zeros((6, 20), bool)
    for b in range(6):
        keep[b, rng.permutation(20)[:7]] = True              # 7 entries in every batch
    a = (rng.standard_normal((6, 20, 2)) * keep[..., None]).reshape(2, 3, 4, 5, 2)
    h = tgrad.tensor(a).to_sparse_csr(dense_dim=1)
    assert (h.shape, h.dense_dim(), h._nnz(), tuple(h.crow_indices().shape), tuple(h.values().shape)) == \
        ((2, 3, 4, 5, 2), 1, 7, (2, 3, 5), (2, 3, 7, 2))
    np.testing.assert_array_equal(h.to_dense().cpu().numpy(), a)
    nz = keep.reshape(2, 3, 4, 5)
    np.testing.assert_array_equal(h.crow_indices().cpu().numpy()[..., 1:], nz.sum(-1).cumsum(-1))
    assert tgrad.tensor(a).to_sparse(layout=tgrad.sparse_csr, dense_dim=1).values().tolist() == h.values().tolist()
    # dense_dim=2 of a 4-D input: no batch (PyTorch: crow [0, 3, 6])
    assert tgrad.ones(2, 3, 2, 2).to_sparse_csr(dense_dim=2).crow_indices().tolist() == [0, 3, 6]
    # an all-zero batch, empty rows
    z = tgrad.zeros(2, 2, 3).to_sparse_csr()
    assert z.crow_indices().tolist() == [[0, 0, 0], [0, 0, 0]] and tuple(z.col_indices().shape) == (2, 0)


def test_to_sparse_csr_grad_through_values():
    x = tgrad.tensor(X, requires_grad=True)
    (x.to_sparse_csr().values() * tgrad.arange(6.).view(2, 3)).sum().backward()
    assert x.grad.tolist() == [[[0., 0., 1.], [0., 2., 0.]], [[0., 3., 0.], [4., 0., 5.]]]     # PyTorch's


def test_csc_batched_and_transpose(device):
    c = tgrad.tensor(X).to_sparse_csc()
    # PyTorch: ccol [[0, 1, 2, 3], [0, 1, 2, 3]], row [[0, 1, 0], [1, 0, 1]], values [[1, 3, 2], [5, 4, 6]]
    assert c.layout is tgrad.sparse_csc and c.shape == (2, 2, 3)
    assert c.ccol_indices().tolist() == [[0, 1, 2, 3], [0, 1, 2, 3]]
    assert c.row_indices().tolist() == [[0, 1, 0], [1, 0, 1]]
    assert c.values().tolist() == [[1, 3, 2], [5, 4, 6]] and c.to_dense().tolist() == X
    assert tgrad.tensor(X).to_sparse_csr().to_sparse_csc().values().tolist() == [[1, 3, 2], [5, 4, 6]]
    assert c.to_sparse_csr().crow_indices().tolist() == [[0, 2, 3], [0, 1, 3]]
    # CSC constructor, size inferred as (*B, max row + 1, ncols)
    s = tgrad.sparse_csc_tensor([[0, 1, 2], [0, 0, 2]], [[0, 1], [0, 2]], [[1., 2.], [3., 4.]])
    assert s.shape == (2, 3, 2)
    assert s.to_dense().tolist() == [[[1., 0.], [0., 2.], [0., 0.]], [[0., 3.], [0., 0.], [0., 4.]]]
    # transpose of the sparse dims: the other layout over the same arrays
    t = tgrad.tensor(X).to_sparse_csr().transpose(1, 2)
    assert t.layout is tgrad.sparse_csc and t.shape == (2, 3, 2)
    np.testing.assert_array_equal(t.to_dense().cpu().numpy(), np.swapaxes(np.array(X), 1, 2))
    # to COO: the batch index leads (PyTorch's indices)
    assert tgrad.tensor(X).to_sparse_csr().to_sparse().indices().tolist() == \
        [[0, 0, 0, 1, 1, 1], [0, 0, 1, 0, 1, 1], [0, 2, 1, 1, 0, 2]]
    assert s.to_sparse()._indices().tolist() == [[0, 0, 1, 1], [0, 1, 0, 2], [0, 1, 1, 1]]


def test_batched_values_grad_and_scalar_ops():
    v = tgrad.tensor(VAL, requires_grad=True)
    a = tgrad.sparse_csr_tensor(tgrad.tensor(CROW), tgrad.tensor(COL), v, (2, 2, 3))
    w = np.arange(12.).reshape(2, 2, 3)
    (a.to_dense() * tgrad.tensor(w)).sum().backward()
    want = [[w[b, r, c] for r in range(2) for c in COL[b][CROW[b][r]:CROW[b][r + 1]]] for b in range(2)]
    assert v.grad.tolist() == want
    d = a.detach()
    assert (d * 2).values().tolist() == [[2., 4., 6.], [8., 10., 12.]] and (-d).crow_indices().tolist() == CROW
    assert (d + tgrad.ones(2, 2, 3)).tolist() == (np.array(_csr_to_numpy(CROW, COL, VAL, (2, 2, 3))) + 1).tolist()
    _err(NotImplementedError, "add: of batched SparseCsr tensors is not supported by tgrad", lambda: d + d)
    h = tgrad.tensor([[[1., 0.], [0., 0.]], [[0., 0.], [3., 4.]]]).to_sparse_csr(dense_dim=1)
    assert (h + h).values().tolist() == [[2., 0.], [6., 8.]] and (h + h).dense_dim() == 1


def _err(exc, msg, fn):
    with pytest.raises(exc) as e:
        fn()
    assert str(e.value).startswith(msg), str(e.value)


def test_pytorch_errors():
    crow, col, val = tgrad.tensor(CROW), tgrad.tensor(COL), tgrad.tensor(VAL)

    def S(*a):
        return tgrad.sparse_csr_tensor(*a, check_invariants=True)

    _err(RuntimeError, "tensor dimensionality must be sum of batch, base, and dense dimensionalities (=1 + 2 + 0) but "
         "got 2", lambda: S(crow, col, val, (2, 2)))
    _err(RuntimeError, "crow_indices and col_indices dimensionalities must be equal but got 2 and 1, respectively",
         lambda: S(crow, col[0], val, (2, 2, 3)))
    _err(RuntimeError, "values must have dimensionality > sum of batch and block dimensionalities (=1 + 0) but got 1",
         lambda: S(crow, col, val[0], (2, 2, 3)))
    _err(RuntimeError, "all batch dimensions of crow_indices (=[2]), col_indices (=[2]), and values (=[2]) must be "
         "equal to tensor batch dimensions (=[3])", lambda: S(crow, col, val, (3, 2, 3)))
    _err(RuntimeError, "tensor dimensionality must be sum of batch, base, and dense dimensionalities (=1 + 2 + 1) but "
         "got 3", lambda: S(crow, col, val.view(2, 3, 1), (2, 2, 3)))
    _err(RuntimeError, "`0 <= col_indices < ncols` is not satisfied.",
         lambda: S(crow, tgrad.tensor([[1, 0, 2], [0, 1, 3]]), val, (2, 2, 3)))
    _err(RuntimeError, "`crow_indices[..., -1] == nnz` is not satisfied.",
         lambda: S(tgrad.tensor([[0, 1, 3], [0, 2, 2]]), col, val, (2, 2, 3)))
    _err(RuntimeError, "`col_indices[..., crow_indices[..., i - 1]:crow_indices[..., i]] for all i = 1, ..., nrows are "
         "sorted and distinct", lambda: S(crow, tgrad.tensor([[1, 0, 2], [1, 0, 1]]), val, (2, 2, 3)))
    _err(RuntimeError, "crow_indices.shape[-1] must be equal to the number of rows + 1 (=4), but got 3",
         lambda: S(crow, col, val, (2, 3, 3)))
    _err(RuntimeError, "Expect the same number of specified elements per batch.",
         lambda: tgrad.tensor([[[1., 0, 2], [0, 3, 0]], [[0., 0, 0], [5, 0, 6]]]).to_sparse_csr())
    _err(RuntimeError, "dense_to_sparse_csr: dense_dim argument must be in [0,0] range, but 1 is given",
         lambda: tgrad.ones(2, 3).to_sparse_csr(dense_dim=1))
    _err(RuntimeError, "dense_to_sparse_csr: dense_dim argument must be in [0,1] range, but 2 is given",
         lambda: tgrad.ones(2, 3, 2).to_sparse_csr(dense_dim=2))
    _err(RuntimeError, "to_sparse_csc: Expected product of batch dimensions to be non-zero.",
         lambda: tgrad.zeros(0, 2, 3).to_sparse_csc())
    c = tgrad.tensor(X).to_sparse_csr()
    h = tgrad.sparse_csr_tensor([0, 1, 2], [0, 2], [[1., 2.], [3., 4.]])
    _err(RuntimeError, "expand is unsupported for SparseCsr tensors", lambda: c @ tgrad.ones(2, 3, 2))
    if c.device.type == "cpu":             # (PyTorch's cuda takes it: test_bmm_cuda)
        _err(NotImplementedError, "Could not run 'aten::bmm.out' with arguments from the 'SparseCsrCPU' backend.",
             lambda: tgrad.bmm(c, tgrad.ones(2, 3, 2)))
    _err(RuntimeError, "Sparse CSR tensors do not have strides", lambda: c.matmul(tgrad.ones(3, 2)))
    _err(RuntimeError, "Sparse CSR tensors do not have strides", lambda: h @ tgrad.ones(3, 2))
    _err(RuntimeError, "mat1 must be a matrix, got 3-D tensor", lambda: tgrad.mm(c, tgrad.ones(3, 2)))
    _err(RuntimeError, "t() expects a tensor with <= 2 dimensions, but self is 3D", lambda: c.t())
    _err(RuntimeError, "transpose(): hybrid sparse compressed tensors with dense dimensions are not supported",
         lambda: h.transpose(0, 1))
    _err(RuntimeError, "transpose(): can only transpose dimensions of the same type (Batch, Sparse, Dense), got "
         "0(Batch) and 1(Sparse)", lambda: c.transpose(0, 1))


def test_bmm_cuda(device):
    """Batched CSR @ dense on cuda (PyTorch's cuda bmm; its cpu refuses it): numpy's batched product,
    and the gradients of values and of the dense operand (each against the dense product's)."""
    if device == "cpu":
        pytest.skip("PyTorch 2.13's cpu has no batched CSR matmul (test_pytorch_errors)")
    rng = np.random.default_rng(2)
    keep = np.zeros((3, 20), bool)
    for b in range(3):
        keep[b, rng.permutation(20)[:6]] = True
    a = (rng.standard_normal((3, 20)) * keep).reshape(3, 4, 5)
    d = rng.standard_normal((3, 5, 2))
    c = tgrad.tensor(a).to_sparse_csr()
    np.testing.assert_allclose(tgrad.bmm(c, tgrad.tensor(d)).cpu().numpy(), a @ d, rtol=1e-5, atol=1e-6)
    v = c.values().detach().requires_grad_(True)
    dd = tgrad.tensor(d, requires_grad=True)
    cs = tgrad.sparse_csr_tensor(c.crow_indices(), c.col_indices(), v, c.shape)
    g = rng.standard_normal((3, 4, 2))
    tgrad.bmm(cs, dd).backward(tgrad.tensor(g))
    ga = g @ np.swapaxes(d, 1, 2)                                           # d(out)/d(a) dense
    rows = [np.nonzero(keep[b].reshape(4, 5)) for b in range(3)]
    np.testing.assert_allclose(v.grad.cpu().numpy(), [ga[b][rows[b]] for b in range(3)], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dd.grad.cpu().numpy(), np.swapaxes(a, 1, 2) @ g, rtol=1e-5, atol=1e-6)


def test_select_sum_and_conversion_errors(device):
    c = tgrad.tensor(X).to_sparse_csr()
    # PyTorch: c[1] is crow [0, 1, 3], col [1, 0, 2], values [4, 5, 6] of size (2, 3); CSC c[1]: ccol [0, 1, 2, 3],
    # row [1, 0, 1], values [5, 4, 6]
    for r in (c[1], c.select(0, 1), c[-1], tgrad.select(c, 0, 1), c.unbind(0)[1]):
        assert r.layout is tgrad.sparse_csr and r.shape == (2, 3)
        assert (r.crow_indices().tolist(), r.col_indices().tolist(), r.values().tolist()) == \
            ([0, 1, 3], [1, 0, 2], [4., 5., 6.])
        assert r.to_dense().tolist() == X[1]
    s = c.to_sparse_csc()[1]
    assert (s.ccol_indices().tolist(), s.row_indices().tolist(), s.values().tolist()) == \
        ([0, 1, 2, 3], [1, 0, 1], [5., 4., 6.])
    _err(IndexError, "index 2 is out of bounds for dimension 0 with size 2", lambda: c[2])
    _err(RuntimeError, "select(): selecting sparse dimensions is not supported for batched sparse compressed tensors.",
         lambda: c.select(1, 0))
    # sum of every element: a dense 0-d tensor (PyTorch: 21.; int32 values: tensor(4) int64)
    assert c.sum().item() == 21. and tgrad.sum(c).dim() == 0 and c.to_sparse_csc().sum().item() == 21.
    assert c.sum(dtype=tgrad.float64).dtype is tgrad.float64
    i = tgrad.ones(2, 2, dtype=tgrad.int32).to_sparse_csr().sum()
    assert (i.item(), i.dtype) == (4, tgrad.int64)
    _err(RuntimeError, "reduction operations on CSR tensors with keepdim=False is unsupported", lambda: c.sum(0))
    # dense_dim given to a compressed-to-compressed conversion (PyTorch's messages)
    _err(RuntimeError, "to_sparse_csr: conversion from SparseCsr to SparseCsr with dense_dim argument given is not "
         "supported", lambda: c.to_sparse_csr(dense_dim=1))
    _err(RuntimeError, "sparse_compressed_to_sparse_csc: conversion from SparseCsr to SparseCsc with dense_dim "
         "argument given is not supported", lambda: c.to_sparse_csc(dense_dim=0))
    _err(RuntimeError, "sparse_compressed_to_sparse_csr: conversion from SparseCsc to SparseCsr with dense_dim "
         "argument given is not supported", lambda: c.to_sparse_csc().to_sparse_csr(dense_dim=0))
    _err(RuntimeError, "to_sparse_csc: conversion from SparseCsc to SparseCsc with dense_dim argument given is not "
         "supported", lambda: c.to_sparse_csc().to_sparse_csc(dense_dim=0))
    assert c.to_sparse_csc().to_sparse_csr().crow_indices().tolist() == [[0, 2, 3], [0, 1, 3]]


def test_batched_save_load(tmp_path):
    c = tgrad.tensor(X).to_sparse_csr(dense_dim=None)
    h = tgrad.tensor(np.arange(24.).reshape(2, 3, 4)).to_sparse_csr(dense_dim=1)
    tgrad.save({"c": c, "h": h}, tmp_path / "s.pt")
    d = tgrad.load(tmp_path / "s.pt")
    assert d["c"].crow_indices().tolist() == c.crow_indices().tolist() and d["c"].to_dense().tolist() == X
    assert d["h"].dense_dim() == 1 and d["h"].to_dense().tolist() == np.arange(24.).reshape(2, 3, 4).tolist()


@pytest.mark.parametrize("shape,dense_dim", [((2, 3, 0), 0), ((2, 0, 3), 0), ((2, 1, 0, 2), 1), ((3, 0, 2), 1),
                                              ((2, 2, 3, 4), 0), ((2, 3, 4, 2), 1)])
def test_round_trips_with_empty_dims(shape, dense_dim):
    """to_sparse_csr / csc(dense_dim) -> to_dense, -> to_sparse (COO) -> to_dense, and the constructors with
    check_invariants over the produced arrays, against the numpy input (every batch the same nnz)."""
    rng = np.random.default_rng(3)
    k = len(shape) - dense_dim
    nb, nm = int(np.prod(shape[:k - 2])), shape[k - 2] * shape[k - 1]
    keep = np.zeros((nb, nm), bool)
    for b in range(nb):
        keep[b, rng.permutation(nm)[:nm // 2]] = True
    a = (rng.standard_normal((nb, nm) + shape[k:]) * keep.reshape((nb, nm) + (1,) * dense_dim)).reshape(shape)
    x = tgrad.tensor(a)
    c, s = x.to_sparse_csr(dense_dim=dense_dim), x.to_sparse_csc(dense_dim=dense_dim)
    for t in (c, s):
        assert (t.shape, t.dense_dim(), t._nnz()) == (shape, dense_dim, nm // 2)
        np.testing.assert_array_equal(t.to_dense().cpu().numpy(), a)
        np.testing.assert_array_equal(t.to_sparse().to_dense().cpu().numpy(), a)
    c2 = tgrad.sparse_csr_tensor(c.crow_indices(), c.col_indices(), c.values(), shape, check_invariants=True)
    s2 = tgrad.sparse_csc_tensor(s.ccol_indices(), s.row_indices(), s.values(), shape, check_invariants=True)
    np.testing.assert_array_equal(c2.to_dense().cpu().numpy(), a)
    np.testing.assert_array_equal(s2.to_dense().cpu().numpy(), a)


def test_from_coo():
    """COO -> CSR / CSC: a hybrid COO of 2 sparse dims keeps its entries (duplicates summed); PyTorch's refusals."""
    x = tgrad.tensor([[[1., 0.], [0., 0.]], [[0., 0.], [3., 4.]]])
    h = x.to_sparse(2)
    c, s = h.to_sparse_csr(), h.to_sparse_csc()
    # PyTorch: crow / ccol [0, 1, 2], col / row [0, 1], values [[1, 0], [3, 4]] (the explicit 0 kept)
    want = ([0, 1, 2], [0, 1], [[1, 0], [3, 4]])
    assert (c.crow_indices().tolist(), c.col_indices().tolist(), c.values().tolist()) == want
    assert (s.ccol_indices().tolist(), s.row_indices().tolist(), s.values().tolist()) == want
    assert c.to_dense().tolist() == x.tolist() and s.to_dense().tolist() == x.tolist()
    assert h.to_sparse(layout=tgrad.sparse_csc).layout is tgrad.sparse_csc
    d = tgrad.sparse_coo_tensor([[0, 0], [1, 1]], [[1., 2.], [3., 4.]], (2, 2, 2)).to_sparse_csr()
    assert (d.crow_indices().tolist(), d.col_indices().tolist(), d.values().tolist()) == ([0, 1, 1], [1], [[4., 6.]])
    _err(RuntimeError, "coo_to_sparse_csr: conversion from Sparse to SparseCsr for input tensors with sparse_dim()!=2 "
         "is not supported", lambda: x.to_sparse(3).to_sparse_csr())
    _err(RuntimeError, "coo_to_sparse_csc: conversion from Sparse to SparseCsc for input tensors with sparse_dim()!=2 "
         "is not supported", lambda: x.to_sparse(3).to_sparse_csc())
    _err(RuntimeError, "coo_to_sparse_csr: conversion from Sparse to SparseCsr with dense_dim argument given is not "
         "supported", lambda: h.to_sparse_csr(dense_dim=1))


def _block_x():
    x = np.arange(1., 49.).reshape(2, 4, 6)
    x[0, :2, :3] = x[1, 2:, 3:] = x[0, 2:, :3] = x[1, :2, :3] = 0
    return x


def test_batched_bsr_bsc(device):
    """Batched BSR / BSC (PyTorch 2.13's arrays for this input, hard-coded), to_dense, constructors, select, errors."""
    x = _block_x()
    b = tgrad.tensor(x).to_sparse_bsr((2, 3))
    assert (b.shape, b.dense_dim(), b.sparse_dim(), b._nnz()) == ((2, 4, 6), 0, 2, 2)
    assert b.crow_indices().tolist() == [[0, 1, 2], [0, 1, 2]] and b.col_indices().tolist() == [[1, 1], [1, 0]]
    blocks = lambda b_, r, c: x[b_, 2 * r:2 * r + 2, 3 * c:3 * c + 3].tolist()     # noqa: E731
    assert b.values().tolist() == [[blocks(0, 0, 1), blocks(0, 1, 1)], [blocks(1, 0, 1), blocks(1, 1, 0)]]
    np.testing.assert_array_equal(b.to_dense().cpu().numpy(), x)
    s = tgrad.tensor(x).to_sparse_bsc((2, 3))
    assert s.ccol_indices().tolist() == [[0, 0, 2], [0, 1, 2]] and s.row_indices().tolist() == [[0, 1], [1, 0]]
    assert s.values().tolist() == [[blocks(0, 0, 1), blocks(0, 1, 1)], [blocks(1, 1, 0), blocks(1, 0, 1)]]
    np.testing.assert_array_equal(s.to_dense().cpu().numpy(), x)
    b2 = tgrad.sparse_bsr_tensor(b.crow_indices(), b.col_indices(), b.values(), check_invariants=True)
    s2 = tgrad.sparse_bsc_tensor(s.ccol_indices(), s.row_indices(), s.values(), (2, 4, 6), check_invariants=True)
    assert b2.shape == s2.shape == (2, 4, 6)
    np.testing.assert_array_equal(b2.to_dense().cpu().numpy(), x)
    np.testing.assert_array_equal(s2.to_dense().cpu().numpy(), x)
    one = b[1]
    assert one.layout is tgrad.sparse_bsr and one.shape == (4, 6) and one.col_indices().tolist() == [1, 0]
    np.testing.assert_array_equal(one.to_dense().cpu().numpy(), x[1])
    y = x.copy()
    y[1] = 0
    for name in ("to_sparse_bsr", "to_sparse_bsc"):
        _err(RuntimeError, "Expect the same number of specified elements per batch.",
             lambda: getattr(tgrad.tensor(y), name)((2, 3)))
    _err(RuntimeError, "expand is unsupported for SparseBsr tensors", lambda: b @ tgrad.ones(2, 6, 2))
    _err(RuntimeError, "Sparse BSR tensors do not have strides", lambda: b.matmul(tgrad.ones(6, 2)))
