"""CSR / CSC arithmetic as PyTorch 2.13: scalar mul / neg, same-layout add (with alpha), dense + compressed,
dense @ CSR / CSC, addmm, transpose (CSR.t() is CSC), and PyTorch's errors for sub / div / mixed layouts.
Reprs printed by /work/venv-torch (torch -> tgrad); the float bits against numpy loops that printed PyTorch's
bits for the same data (dense @ sparse: each product rounded, then added in row order, no fma;
a.add(b, alpha): a + round(alpha * b))."""
import numpy as np
import pytest

import tgrad

X = [[0., 1.5, 0.], [0., 0., 0.], [-2., 0., 3.]]


def _c(device, layout="csr"):
    x = tgrad.tensor(X, device=device)
    return x.to_sparse_csr() if layout == "csr" else x.to_sparse_csc()


def _fold(s):
    return s.replace(", device='cuda:0'", "")


def test_scalar_mul_neg_add_repr(device):
    c = _c(device)
    want = ("tensor(crow_indices=tensor([0, 1, 1, 3]),\n       col_indices=tensor([1, 0, 2]),\n"
            "       values=tensor([ 3., -4.,  6.]), size=(3, 3), nnz=3,\n       layout=tgrad.sparse_csr)")
    for r in (c * 2, 2 * c, c + c, c.clone().mul_(2)):
        assert r.layout is tgrad.sparse_csr
        assert _fold(repr(r)).replace("\n", "").replace(" ", "") == want.replace("\n", "").replace(" ", "")
    assert (-c).values().tolist() == [-1.5, 2., -3.]
    assert c.add(c, alpha=2).values().tolist() == [4.5, -6., 9.]
    assert (c + tgrad.ones(3, 3, device=device)).tolist() == [[1., 2.5, 1.], [1., 1., 1.], [-1., 1., 4.]]
    assert (tgrad.ones(3, 3, device=device) + c).tolist() == [[1., 2.5, 1.], [1., 1., 1.], [-1., 1., 4.]]
    s = _c(device, "csc")
    r = s + s
    assert r.layout is tgrad.sparse_csc and r.ccol_indices().tolist() == [0, 1, 2, 3]
    assert r.row_indices().tolist() == [2, 0, 2] and r.values().tolist() == [-4., 3., 6.]
    assert (s * 2).values().tolist() == [-4., 3., 6.]


def test_errors(device):
    c, s = _c(device), _c(device, "csc")
    for f in (lambda: c - c, lambda: c / 2):
        with pytest.raises(RuntimeError, match="^unsupported tensor layout: SparseCsr$"):
            f()
    with pytest.raises(RuntimeError, match="^crow_indices expected sparse row compressed tensor layout but got "
                                           "SparseCsc$"):
        c + s


def test_transpose_is_the_other_layout(device):
    c = _c(device)
    for t in (c.t(), c.transpose(0, 1), c.transpose(-1, 0)):
        assert t.layout is tgrad.sparse_csc and t.shape == (3, 3)
        assert t.ccol_indices().tolist() == [0, 1, 1, 3] and t.row_indices().tolist() == [1, 0, 2]
        assert np.array_equal(t.to_dense().cpu().numpy(), np.array(X).T)
    assert c.t().t().layout is tgrad.sparse_csr and c.transpose(1, 1) is c


def _data():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((7, 9)).astype(np.float32)
    a[rng.random((7, 9)) < 0.6] = 0
    b = rng.standard_normal((7, 9)).astype(np.float32)
    b[rng.random((7, 9)) < 0.6] = 0
    return a, b, rng.standard_normal((5, 7)).astype(np.float32), rng.standard_normal((9, 4)).astype(np.float32)


def test_dense_at_compressed_bits(device):
    a, _, x, y = _data()
    want = np.zeros((5, 9), np.float32)
    for k in range(7):
        for j in range(9):
            if a[k, j]:
                want[:, j] = want[:, j] + x[:, k] * a[k, j]       # (float32 ops: each product rounded)
    xt, at = tgrad.tensor(x, device=device), tgrad.tensor(a, device=device)
    for s in (at.to_sparse_csr(), at.to_sparse_csc()):
        assert np.array_equal((xt @ s).cpu().numpy(), want)
        assert np.array_equal(xt.mm(s).cpu().numpy(), want)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(9x4 and 7x9\)"):
        tgrad.tensor(y, device=device) @ at.to_sparse_csr()
    got = tgrad.addmm(tgrad.zeros(7, 4, device=device), at.to_sparse_csr(), tgrad.tensor(y, device=device),
                      beta=0.5, alpha=2.)
    np.testing.assert_allclose(got.cpu().numpy(), 2 * (a @ y), rtol=1e-5, atol=1e-5)
    got = tgrad.sparse.addmm(tgrad.ones(7, 4, device=device), at.to_sparse_csr(), tgrad.tensor(y, device=device))
    np.testing.assert_allclose(got.cpu().numpy(), 1 + a @ y, rtol=1e-5, atol=1e-5)


def test_add_with_alpha_bits(device):
    a, b, _, _ = _data()
    r = tgrad.tensor(a, device=device).to_sparse_csr().add(tgrad.tensor(b, device=device).to_sparse_csr(),
                                                             alpha=0.3)
    assert r.layout is tgrad.sparse_csr and r._nnz() == int(((a != 0) | (b != 0)).sum())
    assert np.array_equal(r.to_dense().cpu().numpy(), a + np.float32(0.3) * b)


def test_csr_mm_grad_fn_and_gradients(device):
    v = tgrad.tensor([1.5, -2., 3.], device=device, requires_grad=True)
    c = tgrad.sparse_csr_tensor(tgrad.tensor([0, 1, 1, 3]), tgrad.tensor([1, 0, 2]), v, (3, 3), device=device)
    d = tgrad.tensor([[0.5, -1.], [2., 0.25], [1., 1.]], device=device, requires_grad=True)
    r = c @ d
    assert type(r.grad_fn).__name__ == "MmBackward0"        # (PyTorch's, for CSR @ dense)
    g = tgrad.tensor([[1., 2.], [3., 4.], [5., 6.]], device=device)
    r.backward(g)
    gn, dn = g.cpu().numpy(), d.detach().cpu().numpy()
    assert v.grad.tolist() == [gn[0] @ dn[1], gn[2] @ dn[0], gn[2] @ dn[2]]     # (grad @ d^T at the pattern)
    assert d.grad.tolist() == (np.array(X, np.float32).T @ gn).tolist()
