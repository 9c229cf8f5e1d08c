"""Sparse CSR tensors: construction, conversions, to_dense, matmul with dense and PyTorch's printing and errors,
against numpy and strings printed by PyTorch 2.13 (/work/venv-torch, torch -> tgrad, hard-coded here)."""
import re

import numpy as np
import pytest

import tgrad


class _on:
    """PyTorch's cpu repr ``text``; on cuda the device suffix leads the suffixes (then the 80-column wrap moves):
    compared with the line breaks between suffixes folded."""

    def __init__(self, device, text):
        self.device, self.text = device, text

    def __eq__(self, got):
        if self.device == "cpu":
            return got == self.text
        want = re.sub(r"(size=\([^)]*\), nnz=)", r"device='cuda:0', \1", self.text, count=1)
        return re.sub(r",\n +", ", ", got) == re.sub(r",\n +", ", ", want)

    def __repr__(self):
        return repr(self.text)


X = [[0., 1.5, 0.], [0., 0., 0.], [-2., 0., 3.]]


def test_to_sparse_csr_metadata_and_repr(device):
    c = tgrad.tensor(X).to_sparse_csr()
    assert c.layout is tgrad.sparse_csr and c.is_sparse_csr and not c.is_sparse and isinstance(c, tgrad.Tensor)
    assert (c._nnz(), c.shape, c.dtype, c.dim()) == (3, (3, 3), tgrad.float32, 2)
    assert c.crow_indices().tolist() == [0, 1, 1, 3] and c.col_indices().tolist() == [1, 0, 2]
    assert c.values().tolist() == [1.5, -2., 3.]
    assert repr(c) == _on(device, "tensor(crow_indices=tensor([0, 1, 1, 3]),\n       col_indices=tensor([1, 0, 2]),\n"
                                  "       values=tensor([ 1.5000, -2.0000,  3.0000]), size=(3, 3), nnz=3,\n"
                                  "       layout=tgrad.sparse_csr)")
    e = tgrad.zeros(2, 3).to_sparse_csr()
    assert repr(e) == _on(device, "tensor(crow_indices=tensor([0, 0, 0]),\n       col_indices=tensor([], size=(0,)),\n"
                                  "       values=tensor([], size=(0,)), size=(2, 3), nnz=0,\n"
                                  "       layout=tgrad.sparse_csr)")
    d = tgrad.sparse_csr_tensor(tgrad.tensor([0, 2, 2]), tgrad.tensor([0, 3]), tgrad.tensor([1., 2.], dtype=tgrad.float64))
    assert repr(d) == _on(device, "tensor(crow_indices=tensor([0, 2, 2]),\n       col_indices=tensor([0, 3]),\n"
                                  "       values=tensor([1., 2.]), size=(2, 4), nnz=2, dtype=tgrad.float64,\n"
                                  "       layout=tgrad.sparse_csr)")
    i = tgrad.sparse_csr_tensor([0, 1, 3], [2, 0, 1], [1, 2, 3])
    assert repr(i) == _on(device, "tensor(crow_indices=tensor([0, 1, 3]),\n       col_indices=tensor([2, 0, 1]),\n"
                                  "       values=tensor([1, 2, 3]), size=(2, 3), nnz=3, layout=tgrad.sparse_csr)")


def test_conversions_round_trip():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((7, 5)) * (rng.random((7, 5)) < 0.4)
    a[3] = 0                                    # an empty row
    x = tgrad.tensor(a)
    for c in (x.to_sparse_csr(), x.to_sparse(layout=tgrad.sparse_csr), x.to_sparse().to_sparse_csr()):
        nz = np.nonzero(a)
        assert c.crow_indices().tolist() == np.concatenate([[0], np.cumsum((a != 0).sum(1))]).tolist()
        assert c.col_indices().tolist() == nz[1].tolist() and c.values().tolist() == a[nz].tolist()
        assert c.to_dense().tolist() == a.tolist()
        coo = c.to_sparse()
        assert coo.is_coalesced() and coo.indices().tolist() == [nz[0].tolist(), nz[1].tolist()]
    c = x.to_sparse_csr()
    assert c.to_sparse_csr() is c and c.to_sparse(layout=tgrad.sparse_csr) is c


def test_matmul_with_dense_against_numpy_and_gradients():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((9, 6)) * (rng.random((9, 6)) < 0.5)
    a[0] = 0
    m = rng.standard_normal((6, 4))
    c = tgrad.tensor(a).to_sparse_csr()
    d = tgrad.tensor(m)
    for r in (c @ d, c.mm(d), c.matmul(d), tgrad.mm(c, d), tgrad.sparse.mm(c, d)):
        np.testing.assert_allclose(r.cpu().numpy(), a @ m, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tgrad.sparse.addmm(tgrad.ones(9, 4, dtype=tgrad.float64), c, d).cpu().numpy(),
                               a @ m + 1, rtol=1e-12)
    # PyTorch 2.13: (csr(values) @ ones(3, 2)).sum().backward() -> values.grad = [2., 2., 2.]
    v = tgrad.tensor([1., 2., 3.], dtype=tgrad.float64, requires_grad=True)
    s = tgrad.sparse_csr_tensor(tgrad.tensor([0, 2, 2, 3]), tgrad.tensor([0, 2, 1]), v, (3, 3))
    (s @ tgrad.ones(3, 2, dtype=tgrad.float64)).sum().backward()
    assert v.grad.tolist() == [2., 2., 2.]
    dm = tgrad.tensor(m, requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda v, dm: tgrad.sparse_csr_tensor(
        tgrad.tensor([0, 2, 2, 3]), tgrad.tensor([0, 2, 1]), v, (3, 6)) @ dm, (v.detach().requires_grad_(), dm))
    assert tgrad.autograd.gradcheck(lambda v: tgrad.sparse_csr_tensor(
        tgrad.tensor([0, 2, 2, 3]), tgrad.tensor([0, 2, 1]), v, (3, 3)).to_dense() * 3, (v.detach().requires_grad_(),))


def test_pytorch_errors():
    c = tgrad.tensor(X).to_sparse_csr()
    T = tgrad.tensor
    bad = [((T([0, 2, 1]), T([0, 3]), T([1., 2.]), (2, 4)), r"`crow_indices\[\.\.\., -1\] == nnz` is not satisfied"),
           ((T([0, 2, 2]), T([0, 5]), T([1., 2.]), (2, 4)), "`0 <= col_indices < ncols` is not satisfied"),
           ((T([0, 2]), T([0, 1]), T([1., 2., 3.]), (1, 4)),
            r"col_indices.shape\[-1\] must be equal to nnz \(=3\) as defined by values.shape\[0\], but got 2"),
           ((T([0, 2, 2]), T([0, 1]), T([1., 2.]), (3, 4)),
            r"crow_indices.shape\[-1\] must be equal to the number of rows \+ 1 \(=4\), but got 3"),
           ((T([1, 2, 2]), T([0, 1]), T([1., 2.]), (2, 4)), r"`crow_indices\[\.\.\., 0\] == 0` is not satisfied"),
           ((T([0, 2, 2]), T([1, 1]), T([1., 2.]), (2, 4)), "are sorted and distinct along the last dimension"),
           ((T([0., 2, 2]), T([1, 1]), T([1., 2.]), (2, 4)),
            "crow_indices and col_indices must have the same dtype, bot got Float and Long, respectively")]
    for args, msg in bad:
        with pytest.raises(RuntimeError, match=msg):
            tgrad.sparse_csr_tensor(*args, check_invariants=True)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(3x3 and 4x2\)"):
        c @ tgrad.ones(4, 2)
    with pytest.raises(TypeError, match="can't convert SparseCsr layout tensor to numpy"):
        c.numpy()
    with pytest.raises(RuntimeError, match="Sparse CSR tensors do not have strides"):
        c.stride()
    with pytest.raises(RuntimeError, match="indices expected sparse coordinate tensor layout but got SparseCsr"):
        c.indices()
    with pytest.raises(RuntimeError, match="col_indices expected sparse row compressed tensor layout but got Strided"):
        tgrad.tensor(X).col_indices()
    with pytest.raises(RuntimeError, match="crow_indices expected sparse row compressed tensor layout but got Sparse"):
        tgrad.tensor(X).to_sparse().crow_indices()
    with pytest.raises(NotImplementedError, match="'aten::view' with arguments from the 'SparseCsr(CPU|CUDA)' backend"):
        c.view(-1)


def test_csc_as_pytorch(device):
    # PyTorch 2.13's reprs and values (torch -> tgrad)
    x = tgrad.tensor(X)
    c = x.to_sparse_csc()
    assert c.layout is tgrad.sparse_csc and not c.is_sparse_csr and not c.is_sparse
    assert c.ccol_indices().tolist() == [0, 1, 2, 3] and c.row_indices().tolist() == [2, 0, 2]
    assert c.values().tolist() == [-2., 1.5, 3.]
    assert repr(c) == _on(device, "tensor(ccol_indices=tensor([0, 1, 2, 3]),\n       row_indices=tensor([2, 0, 2]),\n"
                                  "       values=tensor([-2.0000,  1.5000,  3.0000]), size=(3, 3), nnz=3,\n"
                                  "       layout=tgrad.sparse_csc)")
    coo = c.to_sparse()             # the entries in column order, uncoalesced
    assert coo._indices().tolist() == [[2, 0, 2], [0, 1, 2]] and not coo.is_coalesced()
    for y in (c, x.to_sparse(layout=tgrad.sparse_csc), x.to_sparse_csr().to_sparse_csc(), x.to_sparse().to_sparse_csc()):
        assert y.to_dense().tolist() == X and y.row_indices().tolist() == [2, 0, 2]
    assert c.to_sparse_csr().crow_indices().tolist() == [0, 1, 1, 3]
    d = tgrad.arange(6.).view(3, 2)
    assert (c @ d).tolist() == tgrad.sparse.mm(c, d).tolist() == [[3., 4.5], [0., 0.], [12., 13.]]
    s = tgrad.sparse_csc_tensor([0, 1, 1, 3], [1, 0, 2], [1., 2., 3.])
    assert repr(s) == _on(device, "tensor(ccol_indices=tensor([0, 1, 1, 3]),\n       row_indices=tensor([1, 0, 2]),\n"
                                  "       values=tensor([1., 2., 3.]), size=(3, 3), nnz=3,\n"
                                  "       layout=tgrad.sparse_csc)")
    with pytest.raises(RuntimeError, match="crow_indices expected sparse row compressed tensor layout but got SparseCsc"):
        c.crow_indices()
    with pytest.raises(RuntimeError, match="row_indices expected sparse column compressed tensor layout but got SparseCsr"):
        x.to_sparse_csr().row_indices()
    with pytest.raises(TypeError, match="can't convert SparseCsc layout tensor to numpy"):
        c.numpy()
    v = tgrad.tensor([1., 2., 3.], dtype=tgrad.float64, requires_grad=True)
    (tgrad.sparse_csc_tensor([0, 1, 1, 3], [1, 0, 2], v, (3, 3)) @ tgrad.ones(3, 2, dtype=tgrad.float64)).sum().backward()
    assert v.grad.tolist() == [2., 2., 2.]
