"""Sparse x sparse products as PyTorch 2.13: CSR @ CSR -> CSR (each row's columns in the order they first appear,
ATen's cpu _csr_matmult), COO @ COO (torch.sparse.mm) -> coalesced COO, both with the products summed in
Gustavson's order; CSR * CSR / COO * COO -> the intersection; CSR * dense -> CSR's pattern.  Against an independent
numpy Gustavson (bit for bit in float64) and PyTorch-printed arrays; gradients w.r.t. the values by finite
differences."""
import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck


def _gustavson(A, B):
    """numpy/Python reference: per row, columns in first-appearance order, sums in product order."""
    crow, cols, vals = [0], [], []
    for i in range(A.shape[0]):
        order, sums = [], {}
        for k in np.nonzero(A[i])[0]:
            for j in np.nonzero(B[k])[0]:
                if j not in sums:
                    order.append(j)
                    sums[j] = 0.0
                sums[j] += A[i, k] * B[k, j]
        cols += order
        vals += [sums[j] for j in order]
        crow.append(len(cols))
    return crow, [int(c) for c in cols], vals


def _rand(rng, shape, p=0.4):
    return rng.standard_normal(shape) * (rng.random(shape) < p)


def test_csr_at_csr_and_coo_at_coo(device):
    a = tgrad.tensor([[1., 0, 2], [0, 3, 0]], dtype=tgrad.float64, device=device)
    b = tgrad.tensor([[0., 6], [4, 0], [5, 7]], dtype=tgrad.float64, device=device)
    c = a.to_sparse_csr() @ b.to_sparse_csr()
    # PyTorch 2.13: crow [0, 2, 3], col [1, 0, 0] (unsorted), values [20, 10, 12]
    assert c.layout is tgrad.sparse_csr and c.shape == (2, 2)
    assert (c.crow_indices().tolist(), c.col_indices().tolist(), c.values().tolist()) == \
        ([0, 2, 3], [1, 0, 0], [20.0, 10.0, 12.0])
    for r in (tgrad.mm(a.to_sparse_csr(), b.to_sparse_csr()), tgrad.sparse.mm(a.to_sparse_csr(), b.to_sparse_csr())):
        assert r.col_indices().tolist() == [1, 0, 0]
    o = tgrad.sparse.mm(a.to_sparse(), b.to_sparse())
    assert o.layout is tgrad.sparse_coo and o.is_coalesced()
    assert (o._indices().tolist(), o._values().tolist()) == ([[0, 0, 1], [0, 1, 0]], [10.0, 20.0, 12.0])
    assert (a.to_sparse() @ b.to_sparse())._values().tolist() == [10.0, 20.0, 12.0]
    rng = np.random.default_rng(0)
    for n, k, m in ((4, 5, 3), (7, 1, 6), (1, 6, 1), (6, 8, 9)):
        A, B = _rand(rng, (n, k)), _rand(rng, (k, m))
        crow, cols, vals = _gustavson(A, B)
        ta, tb = tgrad.tensor(A, device=device), tgrad.tensor(B, device=device)
        c = ta.to_sparse_csr() @ tb.to_sparse_csr()
        assert c.crow_indices().tolist() == crow and c.col_indices().tolist() == cols
        assert c.values().cpu().numpy().tobytes() == np.array(vals, dtype=np.float64).tobytes()
        np.testing.assert_allclose(c.to_dense().cpu().numpy(), A @ B, atol=1e-12)
        o = tgrad.sparse.mm(ta.to_sparse(), tb.to_sparse())
        rows = np.repeat(np.arange(n), np.diff(crow))
        srt = np.lexsort((np.array(cols, dtype=np.int64), rows))
        assert o._indices().tolist() == [rows[srt].tolist(), np.array(cols, dtype=np.int64)[srt].tolist()]
        assert o._values().cpu().numpy().tobytes() == np.array(vals, dtype=np.float64)[srt].tobytes()
    z = tgrad.zeros(3, 2, device=device).to_sparse_csr() @ tgrad.ones(2, 4, device=device).to_sparse_csr()
    assert (z.crow_indices().tolist(), z._nnz(), z.shape) == ([0, 0, 0, 0], 0, (3, 4))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x3\)"):
        a.to_sparse_csr() @ a.to_sparse_csr()


def test_sparse_mul_sparse_and_dense(device):
    rng = np.random.default_rng(1)
    A, B = _rand(rng, (4, 5), 0.5), _rand(rng, (4, 5), 0.5)
    ta, tb = tgrad.tensor(A, device=device), tgrad.tensor(B, device=device)
    both = (A != 0) & (B != 0)
    for r in (ta.to_sparse_csr() * tb.to_sparse_csr(), ta.to_sparse_csr().mul(tb.to_sparse())):
        assert r.layout is tgrad.sparse_csr and r._nnz() == both.sum()
        assert r.crow_indices().tolist() == [0] + np.cumsum(both.sum(1)).tolist()
        assert r.col_indices().tolist() == np.nonzero(both)[1].tolist()
        assert r.values().cpu().numpy().tobytes() == (A * B)[both].tobytes()
    o = ta.to_sparse() * tb.to_sparse()
    assert o.layout is tgrad.sparse_coo and o._indices().tolist() == [x.tolist() for x in np.nonzero(both)]
    np.testing.assert_array_equal(o._values().cpu().numpy(), (A * B)[both])
    # PyTorch 2.13: [[1, 0, 2], [0, 3, 0]] * [[0, 4, 5], [6, 0, 7]] -> crow [0, 1, 1], col [2], values [10]
    x = tgrad.tensor([[1., 0, 2], [0, 3, 0]], device=device).to_sparse_csr()
    y = tgrad.tensor([[0., 4, 5], [6, 0, 7]], device=device)
    r = x * y.to_sparse_csr()
    assert (r.crow_indices().tolist(), r.col_indices().tolist(), r.values().tolist()) == ([0, 1, 1], [2], [10.0])
    # with a dense tensor: x's pattern kept (zero products stored), either order
    for r in (x * y, y * x):
        assert r.layout is tgrad.sparse_csr
        assert (r.crow_indices().tolist(), r.col_indices().tolist(), r.values().tolist()) == \
            ([0, 2, 3], [0, 2, 1], [0.0, 10.0, 0.0])
    with pytest.raises(RuntimeError, match="expects sparse inputs with equal dimensionality"):
        x * tgrad.ones(2, 4, device=device).to_sparse_csr()


def test_sparse_sparse_gradients_through_values(device):
    """d/d(values) of CSR @ CSR, COO @ COO and CSR * CSR, by finite differences (float64)."""
    rng = np.random.default_rng(2)
    A, B = _rand(rng, (3, 4), 0.6), _rand(rng, (4, 3), 0.6)
    ca, cb = tgrad.tensor(A, device=device).to_sparse_csr(), tgrad.tensor(B, device=device).to_sparse_csr()
    ia = tgrad.tensor(A, device=device).to_sparse()._indices()
    ib = tgrad.tensor(B, device=device).to_sparse()._indices()
    va = ca.values().clone().requires_grad_()
    vb = cb.values().clone().requires_grad_()

    def csr(u, v):
        x = tgrad.sparse_csr_tensor(ca.crow_indices(), ca.col_indices(), u, (3, 4))
        y = tgrad.sparse_csr_tensor(cb.crow_indices(), cb.col_indices(), v, (4, 3))
        return (x @ y).values()

    def coo(u, v):
        return tgrad.sparse.mm(tgrad.sparse_coo_tensor(ia, u, (3, 4)), tgrad.sparse_coo_tensor(ib, v, (4, 3)))._values()

    cc = tgrad.tensor(_rand(rng, (3, 4), 0.6), device=device).to_sparse_csr()
    vc = cc.values().clone().requires_grad_()

    def mul(u, w):
        x = tgrad.sparse_csr_tensor(ca.crow_indices(), ca.col_indices(), u, (3, 4))
        return (x * tgrad.sparse_csr_tensor(cc.crow_indices(), cc.col_indices(), w, (3, 4))).values()

    assert gradcheck(csr, (va, vb))
    assert gradcheck(coo, (va, vb))
    assert mul(va, vc).numel() > 0 and gradcheck(mul, (va, vc))


def test_coo_leaf_gradients(device):
    """A COO leaf that requires grad gets PyTorch's gradient on its own pattern (SparseSparseMatmulBackward0 of
    sparse.mm, and through to_dense / sparse @ dense): values as PyTorch 2.13 printed them."""
    a = tgrad.tensor([[1., 0, 2], [0, 3, 0]], dtype=tgrad.float64, device=device)
    b = tgrad.tensor([[0., 6], [4, 0], [5, 7]], dtype=tgrad.float64, device=device)
    x, y = a.to_sparse().requires_grad_(), b.to_sparse().requires_grad_()
    assert x.requires_grad and x.is_leaf and x.grad is None
    z = tgrad.sparse.mm(x, y)
    s = tgrad.sparse.sum(z)
    assert s.item() == 42.0
    s.backward()
    gx, gy = x.grad, y.grad
    assert gx.layout is tgrad.sparse_coo and gx.shape == (2, 3)
    assert (gx._indices().tolist(), gx._values().tolist()) == ([[0, 0, 1], [0, 2, 1]], [6.0, 12.0, 4.0])
    assert (gy._indices().tolist(), gy._values().tolist()) == ([[0, 1, 2, 2], [1, 0, 0, 1]], [1.0, 3.0, 2.0, 2.0])
    tgrad.sparse.mm(x, y).to_dense().sum().backward()           # accumulates
    assert x.grad._values().tolist() == [12.0, 24.0, 8.0]
    x.grad = None
    assert x.grad is None
    (tgrad.sparse.mm(x, tgrad.ones(3, 2, dtype=tgrad.float64, device=device))).sum().backward()
    assert x.grad._values().tolist() == [2.0, 2.0, 2.0]
    x.grad = None
    (x.to_dense() * 2).sum().backward()
    assert (x.grad._indices().tolist(), x.grad._values().tolist()) == ([[0, 0, 1], [0, 2, 1]], [2.0, 2.0, 2.0])
    assert not x.detach().requires_grad and not x.requires_grad_(False).requires_grad


def test_mul_layout_combinations(device):
    """PyTorch 2.13's a * b over layouts (printed by it): a CSR self takes a CSC's pattern (in CSR), a dense or COO
    operand keeps the sparse one's pattern, any other mix with a compressed tensor fails writing a CSR result."""
    a = tgrad.tensor([[1., 0, 2], [0, 3, 0]], dtype=tgrad.float64, device=device)
    b = tgrad.tensor([[0., 4, 5], [6, 0, 7]], dtype=tgrad.float64, device=device)
    r = a.to_sparse_csr() * b.to_sparse_csc()
    assert r.layout is tgrad.sparse_csr
    assert (r.crow_indices().tolist(), r.col_indices().tolist(), r.values().tolist()) == \
        ([0, 2, 4], [1, 2, 0, 2], [0.0, 10.0, 0.0, 0.0])
    r = a.to_sparse() * b
    assert r.layout is tgrad.sparse_coo
    assert (r._indices().tolist(), r._values().tolist()) == ([[0, 0, 1], [0, 2, 1]], [0.0, 10.0, 0.0])
    r = a * b.to_sparse()
    assert r.layout is tgrad.sparse_coo
    assert (r._indices().tolist(), r._values().tolist()) == ([[0, 0, 1, 1], [1, 2, 0, 2]], [0.0, 10.0, 0.0, 0.0])
    for f in (lambda: a.to_sparse_csc() * b.to_sparse_csr(), lambda: a.to_sparse_csc() * b,
              lambda: a.to_sparse() * b.to_sparse_csr(), lambda: a * b.to_sparse_csc(),
              lambda: a.to_sparse_csc() * b.to_sparse()):
        with pytest.raises(RuntimeError, match="Expected result Tensor to be of format CSR"):
            f()


def test_sparse_results_print_pytorch_grad_fn(device):
    """A sparse result whose values carry a graph prints the grad_fn PyTorch 2.13 records for it."""
    a = tgrad.tensor([[1., 0, 2], [0, 3, 0]], dtype=tgrad.float64, device=device)
    b = tgrad.tensor([[0., 6], [4, 0], [5, 7]], dtype=tgrad.float64, device=device)
    x = a.to_sparse().requires_grad_()
    for r, name in ((tgrad.sparse.mm(x, b.to_sparse()), "SparseSparseMatmulBackward0"), (x * 2, "MulBackward0"),
                    (tgrad.sparse.sum(x, 0), "SparseSumBackward0"), (x * a, "MulBackward0")):
        assert repr(r).endswith(f"grad_fn=<{name}>)")
    assert repr(x).endswith("requires_grad=True)")
    assert "grad_fn" not in repr(tgrad.sparse.mm(a.to_sparse(), b.to_sparse()))
