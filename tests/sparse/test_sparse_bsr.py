"""Block sparse BSR / BSC tensors (2-D): to_sparse_bsr / to_sparse_bsc / to_sparse(layout=, blocksize=),
sparse_bsr_tensor / sparse_bsc_tensor, crow/col (ccol/row) indices and block values, to_dense, @ dense, and
PyTorch 2.13's reprs and errors (printed by /work/venv-torch, torch -> tgrad, hard-coded here)."""
import numpy as np
import pytest

import tgrad

X = [[0., 1.5, 0., 0.], [0., 0., 0., 0.], [-2., 0., 3., 0.], [0., 0., 0., 4.]]
BLOCKS = ("values=tensor([[[ 0.0000,  1.5000],\n                       [ 0.0000,  0.0000]],\n\n"
          "                      [[-2.0000,  0.0000],\n                       [ 0.0000,  0.0000]],\n\n"
          "                      [[ 3.0000,  0.0000],\n                       [ 0.0000,  4.0000]]]), size=(4, 4), nnz=3,\n")


def _fold(text):
    return text.replace("device='cuda:0', ", "").replace(" ", "").replace("\n", "")


def test_to_sparse_bsr_and_bsc(device):
    x = tgrad.tensor(X, device=device)
    b = x.to_sparse_bsr((2, 2))
    assert b.layout is tgrad.sparse_bsr and b._nnz() == 3 and b.shape == (4, 4)
    assert b.crow_indices().tolist() == [0, 1, 3] and b.col_indices().tolist() == [0, 0, 1]
    assert b.values().shape == (3, 2, 2)
    want = "tensor(crow_indices=tensor([0, 1, 3]),\n       col_indices=tensor([0, 0, 1]),\n       " + BLOCKS + \
           "       layout=tgrad.sparse_bsr)"
    assert _fold(repr(b)) == _fold(want)
    if device == "cpu":
        assert repr(b) == want
    c = x.to_sparse_bsc((2, 2))
    assert c.layout is tgrad.sparse_bsc
    assert c.ccol_indices().tolist() == [0, 2, 3] and c.row_indices().tolist() == [0, 1, 1]
    assert _fold(repr(c)) == _fold("tensor(ccol_indices=tensor([0, 2, 3]),\n       row_indices=tensor([0, 1, 1]),\n"
                                   "       " + BLOCKS + "       layout=tgrad.sparse_bsc)")
    for s in (b, c, x.to_sparse(layout=tgrad.sparse_bsr, blocksize=(2, 2)),
              x.to_sparse(layout=tgrad.sparse_bsc, blocksize=2)):
        assert s.to_dense().tolist() == X
    d = np.arange(8.).reshape(4, 2).astype(np.float32)
    assert (b @ tgrad.tensor(d, device=device)).tolist() == (np.array(X, np.float32) @ d).tolist()
    assert (c.mm(tgrad.tensor(d, device=device))).tolist() == (np.array(X, np.float32) @ d).tolist()


def test_block_shapes_other_than_square(device):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((6, 8)).astype(np.float32)
    a[rng.random((6, 8)) < 0.7] = 0
    b = tgrad.tensor(a, device=device).to_sparse_bsr((3, 2))
    grid = a.reshape(2, 3, 4, 2).transpose(0, 2, 1, 3)
    nz = np.argwhere(np.abs(grid).sum((2, 3)) > 0)
    assert b.col_indices().tolist() == nz[:, 1].tolist()
    assert np.array_equal(b.values().cpu().numpy(), grid[nz[:, 0], nz[:, 1]])
    assert np.array_equal(b.to_dense().cpu().numpy(), a)
    c = tgrad.tensor(a, device=device).to_sparse_bsc((3, 2))
    nzc = np.argwhere(np.abs(grid).sum((2, 3)).T > 0)
    assert c.row_indices().tolist() == nzc[:, 1].tolist()
    assert np.array_equal(c.to_dense().cpu().numpy(), a)


def test_sparse_bsr_tensor(device):
    t = tgrad.sparse_bsr_tensor(tgrad.tensor([0, 1, 2]), tgrad.tensor([0, 1]), tgrad.ones(2, 2, 2), (4, 4),
                                device=device)
    assert _fold(repr(t)) == _fold(
        "tensor(crow_indices=tensor([0, 1, 2]),\n       col_indices=tensor([0, 1]),\n"
        "       values=tensor([[[1., 1.],\n                       [1., 1.]],\n\n"
        "                      [[1., 1.],\n                       [1., 1.]]]), size=(4, 4), nnz=2,\n"
        "       layout=tgrad.sparse_bsr)")
    assert t.to_dense().tolist() == np.kron(np.eye(2), np.ones((2, 2))).tolist()
    s = tgrad.sparse_bsc_tensor([0, 1, 2], [1, 0], tgrad.ones(2, 2, 2), device=device)
    assert s.shape == (4, 4) and s.to_dense().tolist() == np.kron([[0, 1], [1, 0]], np.ones((2, 2))).tolist()


def test_errors(device):
    x = tgrad.tensor(X, device=device)
    with pytest.raises(RuntimeError, match=r"^dense_to_sparse_bsr: tensor sparse size \(4,4\) must be divisible by "
                                           r"given blocksize \(3,3\)$"):
        x.to_sparse_bsr((3, 3))
    b = x.to_sparse_bsr((2, 2))
    with pytest.raises(RuntimeError, match="^sparse_compressed_to_sparse_csr: expected SparseCsr or SparseCsc layout "
                                           "but got SparseBsr$"):
        b.to_sparse_csr()
    with pytest.raises(TypeError, match="can't convert SparseBsr layout tensor to numpy"):
        b.numpy()


def _np_blocks(x, r, c, bsc=False):
    """numpy: the (R, C, *dense) blocks of x (n, m, *dense) holding a nonzero, row (column) major, and their
    (major, minor) block indices."""
    n, m = x.shape[:2]
    out = []
    for i in range(n // r):
        for j in range(m // c):
            blk = x[i * r:(i + 1) * r, j * c:(j + 1) * c]
            if blk.any():
                out.append(((j, i) if bsc else (i, j), blk))
    out.sort(key=lambda e: e[0])
    return [e[0] for e in out], np.stack([e[1] for e in out])


def test_hybrid_blocks(device):
    """Hybrid BSR / BSC (dense dims after the blocks, PyTorch 2.13): values (*B, nnz, R, C, *dense);
    to_sparse_bsr / bsc(blocksize, dense_dim), sparse_bsr / bsc_tensor with dense dims, to_dense; the index arrays
    as PyTorch printed them, blocks and round trips against numpy."""
    a = np.arange(48.).reshape(4, 6, 2)
    a = a * (a % 5 != 0)
    a[0:2, 0:3] = 0
    x = tgrad.tensor(a, device=device)
    for layout, fn in ((tgrad.sparse_bsr, x.to_sparse_bsr), (tgrad.sparse_bsc, x.to_sparse_bsc)):
        b = fn((2, 3), dense_dim=1)
        idx = (b.crow_indices(), b.col_indices()) if layout is tgrad.sparse_bsr else (b.ccol_indices(),
                                                                                      b.row_indices())
        assert b.layout is layout and (b.dense_dim(), b.sparse_dim(), b.shape) == (1, 2, (4, 6, 2))
        assert idx[0].tolist() == [0, 1, 3] and idx[1].tolist() == [1, 0, 1]      # PyTorch's
        keys, blocks = _np_blocks(a, 2, 3, layout is tgrad.sparse_bsc)
        np.testing.assert_array_equal(b.values().cpu().numpy(), blocks)
        np.testing.assert_array_equal(b.to_dense().cpu().numpy(), a)
    assert x.to_sparse(layout=tgrad.sparse_bsr, blocksize=(2, 3), dense_dim=1).values().shape == (3, 2, 3, 2)
    ab = np.stack([a, a * 2 - 1 * (a != 0)])        # (the same blocks hold entries in both batches)
    bb = tgrad.tensor(ab, device=device).to_sparse_bsr((2, 3), dense_dim=1)
    assert bb.values().shape == (2, 3, 2, 3, 2)
    np.testing.assert_array_equal(bb.to_dense().cpu().numpy(), ab)
    assert tgrad.ones(4, 4, 2, 3, device=device).to_sparse_bsr(2, dense_dim=2).values().shape == (4, 2, 2, 2, 3)
    # the constructors (PyTorch: row 0 = [[0, 1], [2, 3], 0, 0] ...)
    v = tgrad.arange(16., device=device).reshape(2, 2, 2, 2)
    h = tgrad.sparse_bsr_tensor(tgrad.tensor([0, 1, 2]), tgrad.tensor([0, 1]), v, size=(4, 4, 2), device=device)
    assert (h.shape, h.dense_dim(), h._nnz()) == ((4, 4, 2), 1, 2)
    assert tgrad.sparse_bsr_tensor(tgrad.tensor([0, 1, 2]), tgrad.tensor([0, 1]), v, device=device).shape == (4, 4, 2)
    ref = np.zeros((4, 4, 2))
    ref[:2, :2] = np.arange(8.).reshape(2, 2, 2)
    ref[2:, 2:] = np.arange(8., 16.).reshape(2, 2, 2)
    np.testing.assert_array_equal(h.to_dense().cpu().numpy(), ref)
    w = np.arange(24.).reshape(2, 1, 3, 4)
    hc = tgrad.sparse_bsc_tensor(tgrad.tensor([0, 1, 2]), tgrad.tensor([1, 0]), tgrad.tensor(w), size=(2, 6, 4),
                                 device=device)
    ref = np.zeros((2, 6, 4))
    ref[1, 0:3], ref[0, 3:6] = w[0, 0], w[1, 0]
    np.testing.assert_array_equal(hc.to_dense().cpu().numpy(), ref)
    with pytest.raises(RuntimeError, match="Sparse BSR tensors do not have strides"):
        h @ tgrad.ones(4, 2, device=device)
