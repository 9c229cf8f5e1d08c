"""Sparse embedding gradients (``nn.Embedding`` / ``EmbeddingBag`` with ``sparse=True``): PyTorch's uncoalesced
COO gradient (indices = the looked-up ids, values = the rows of the output gradient), its accumulation across
backward calls, zero_grad, against the dense gradient and numbers printed by PyTorch 2.13 (hard-coded)."""
import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F



def _table(n=6, d=3, cls=nn.Embedding, **kw):
    e = cls(n, d, sparse=True, **kw)
    with tgrad.no_grad():
        e.weight.copy_(tgrad.arange(float(n * d)).view(n, d) / 7)
    return e


def test_embedding_sparse_grad_structure_and_dense_equivalence():
    e = _table()
    x = tgrad.tensor([[1, 4, 1, 2], [0, 4, 4, 5]])
    w = tgrad.linspace(-1, 1, 24).view(2, 4, 3)
    (e(x) * w).sum().backward()
    g = e.weight.grad
    assert g.is_sparse and g.layout is tgrad.sparse_coo and not g.is_coalesced() and g.shape == (6, 3)
    assert g._indices().tolist() == [x.view(-1).tolist()]
    assert g._values().tolist() == w.view(-1, 3).tolist()
    d = nn.Embedding(6, 3)
    with tgrad.no_grad():
        d.weight.copy_(e.weight)
    (d(x) * w).sum().backward()
    np.testing.assert_allclose(g.to_dense().cpu().numpy(), d.weight.grad.cpu().numpy(), rtol=1e-6, atol=1e-7)
    assert g.coalesce().indices().tolist() == [[0, 1, 2, 4, 5]]


def test_functional_embedding_sparse():
    w = tgrad.randn(5, 2, requires_grad=True)
    F.embedding(tgrad.tensor([3, 0]), w, sparse=True).sum().backward()
    assert w.grad.is_sparse and w.grad._indices().tolist() == [[3, 0]] and w.grad._values().tolist() == [[1.] * 2] * 2


def test_accumulation_as_pytorch():
    # PyTorch 2.13: e(x).sum().backward() twice -> indices [[1, 3, 1, 1, 3, 1]], six rows of ones (the expanded
    # gradient's values are not contiguous: the two gradients are concatenated)
    e = _table(5, 2)
    x = tgrad.tensor([[1, 3, 1]])
    e(x).sum().backward()
    e(x).sum().backward()
    assert e.weight.grad._indices().tolist() == [[1, 3, 1, 1, 3, 1]]
    assert e.weight.grad._values().tolist() == [[1., 1.]] * 6
    # contiguous values are merged (ATen's add_out_sparse_contiguous)
    e.weight.grad = None
    m = tgrad.tensor([[[1., 2], [3, 4]]])
    (e(tgrad.tensor([[1, 2]])) * m).sum().backward()
    (e(tgrad.tensor([[4, 2]])) * m).sum().backward()
    g = e.weight.grad
    assert g.to_dense().tolist() == [[0, 0], [1, 2], [6, 8], [0, 0], [1, 2]]
    # a dense gradient joins a sparse one: dense result
    e.weight.grad = tgrad.ones(5, 2)
    e(tgrad.tensor([0])).sum().backward()
    assert not e.weight.grad.is_sparse and e.weight.grad.tolist() == [[2., 2.]] + [[1., 1.]] * 4


def test_padding_idx_and_scale_grad_by_freq():
    e = _table(4, 2, padding_idx=1)
    e(tgrad.tensor([1, 2, 1])).sum().backward()
    assert e.weight.grad._indices().tolist() == [[2]] and e.weight.grad._nnz() == 1
    e = _table(4, 2, padding_idx=1)
    e(tgrad.tensor([1, 1])).sum().backward()
    assert e.weight.grad._nnz() == 0 and e.weight.grad._indices().shape == (1, 0)
    e = _table(4, 2, scale_grad_by_freq=True)
    with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse gradients"):
        e(tgrad.tensor([1, 1])).sum().backward()


def test_zero_grad_keeps_an_empty_sparse_grad():
    e = _table()
    opt = tgrad.optim.SGD(e.parameters(), lr=0.1)
    e(tgrad.tensor([1, 2])).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert e.weight.grad.is_sparse and e.weight.grad._nnz() == 0 and e.weight.grad.to_dense().abs().sum().item() == 0
    opt.zero_grad()
    assert e.weight.grad is None


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_sparse_grad(mode):
    b = _table(cls=nn.EmbeddingBag, mode=mode)
    idx, off = tgrad.tensor([1, 4, 1, 2, 0]), tgrad.tensor([0, 2])
    m = tgrad.tensor([[1., 2, 3], [4, 5, 6]])
    (b(idx, off) * m).sum().backward()
    g = b.weight.grad
    # PyTorch 2.13: indices [[1, 4, 1, 2, 0]]; values the bag rows (mean: / bag size 2 and 3)
    rows = [[1., 2, 3]] * 2 + [[4., 5, 6]] * 3
    if mode == "mean":
        rows = [[v / 2 for v in rows[0]]] * 2 + [[np.float32(v) / np.float32(3) for v in rows[2]]] * 3
    assert g._indices().tolist() == [[1, 4, 1, 2, 0]]
    np.testing.assert_array_equal(g._values().cpu().numpy(), np.asarray(rows, np.float32))


def test_embedding_bag_per_sample_weights_and_max():
    b = _table(cls=nn.EmbeddingBag, mode="sum")
    b(tgrad.tensor([1, 4, 2]), tgrad.tensor([0, 1]), per_sample_weights=tgrad.tensor([2., 3., 4.])).sum().backward()
    assert b.weight.grad._values().tolist() == [[2.] * 3, [3.] * 3, [4.] * 3]
    with pytest.raises(ValueError, match="max mode does not support sparse weights"):
        _table(cls=nn.EmbeddingBag, mode="max")(tgrad.tensor([1, 4]), tgrad.tensor([0]))
