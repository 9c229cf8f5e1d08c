"""scatter_reduce / index_reduce: PyTorch's forms and numbers, integer mean, error texts, in-place forms and
autograd nodes (values against numpy and gradcheck live in the OpInfos, tgrad/testing/opinfos/segment.py)."""
import warnings

import numpy as np
import pytest

import tgrad

SRC = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
IDX = [0, 1, 0, 1, 2, 1]
# PyTorch 2.13: tensor([1., 2, 3, 4]).scatter_reduce(0, IDX, SRC, reduce, include_self=...)
WANT = {("sum", True): [5, 14, 8, 4], ("sum", False): [4, 12, 5, 4], ("prod", True): [3, 96, 15, 4],
        ("prod", False): [3, 48, 5, 4], ("mean", True): [5 / 3, 3.5, 4, 4], ("mean", False): [2, 4, 5, 4],
        ("amax", True): [3, 6, 5, 4], ("amax", False): [3, 6, 5, 4], ("amin", True): [1, 2, 3, 4],
        ("amin", False): [1, 2, 5, 4]}


@pytest.mark.parametrize("reduce,include_self", list(WANT))
def test_scatter_reduce_as_pytorch(reduce, include_self):
    x, i, s = tgrad.tensor([1.0, 2.0, 3.0, 4.0]), tgrad.tensor(IDX), tgrad.tensor(SRC)
    for r in (x.scatter_reduce(0, i, s, reduce, include_self=include_self),
              tgrad.scatter_reduce(x, 0, i, s, reduce, include_self=include_self)):
        np.testing.assert_allclose(r.cpu().numpy(), WANT[reduce, include_self], rtol=1e-6)
    np.testing.assert_array_equal(x.cpu().numpy(), [1, 2, 3, 4])
    y = x.clone()
    assert y.scatter_reduce_(0, i, s, reduce, include_self=include_self) is y
    np.testing.assert_allclose(y.cpu().numpy(), WANT[reduce, include_self], rtol=1e-6)


def test_integer_mean_floors_and_int32_index():
    # PyTorch 2.13: [1, 2, 3, 4] -> [1, 3, 4, 4] / [2, 4, 5, 4]; [-1, -2] <- [-3, 1, 1] at [0, 0, 1] -> [-1, -1]
    x, s = tgrad.tensor([1, 2, 3, 4]), tgrad.tensor([1, 2, 3, 4, 5, 6])
    np.testing.assert_array_equal(x.scatter_reduce(0, tgrad.tensor(IDX), s, "mean").cpu().numpy(), [1, 3, 4, 4])
    np.testing.assert_array_equal(x.scatter_reduce(0, tgrad.tensor(IDX), s, "mean", include_self=False).cpu().numpy(),
                                  [2, 4, 5, 4])
    r = tgrad.tensor([-1, -2]).scatter_reduce(0, tgrad.tensor([0, 0, 1]), tgrad.tensor([-3, 1, 1]), "mean")
    np.testing.assert_array_equal(r.cpu().numpy(), [-1, -1])
    r = tgrad.tensor([1.0, 2.0, 3.0, 4.0]).scatter_reduce(0, tgrad.tensor(IDX, dtype=tgrad.int32), tgrad.tensor(SRC),
                                                         "sum")
    np.testing.assert_allclose(r.cpu().numpy(), WANT["sum", True])


def test_nan_propagates_through_amax():
    r = tgrad.tensor([1.0, float("nan")]).scatter_reduce(0, tgrad.tensor([0, 0, 1]),
                                                         tgrad.tensor([float("nan"), 2.0, 3.0]), "amax")
    assert np.isnan(r.cpu().numpy()).all()


def test_index_reduce_as_pytorch():
    src = tgrad.arange(9.0).reshape(3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w = tgrad.ones(3, 3)
        assert w.index_reduce_(0, tgrad.tensor([0, 2, 0]), src, "mean") is w
        r = tgrad.ones(3, 3).index_reduce(0, tgrad.tensor([0, 2, 0]), src, "amax", include_self=False)
        p = tgrad.index_reduce(tgrad.full((2, 3), 2.0), 1, tgrad.tensor([2, 2]), tgrad.ones(2, 2) * 3, "prod")
    np.testing.assert_allclose(w.cpu().numpy(), [[7 / 3, 3, 11 / 3], [1, 1, 1], [2, 2.5, 3]], rtol=1e-6)
    np.testing.assert_array_equal(r.cpu().numpy(), [[6, 7, 8], [1, 1, 1], [3, 4, 5]])
    np.testing.assert_array_equal(p.cpu().numpy(), [[2, 2, 18], [2, 2, 18]])


def test_bad_input():
    x, i, s = tgrad.tensor([1.0, 2.0, 3.0, 4.0]), tgrad.tensor(IDX), tgrad.tensor(SRC)
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, amax or amin, got foo"):
        x.scatter_reduce(0, i, s, "foo")
    with pytest.raises(RuntimeError, match=r"scatter\(\): Expected self.dtype to be equal to src.dtype"):
        x.scatter_reduce(0, i, s.double(), "sum")
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0 with size 4"):
        x.scatter_reduce(0, i + 5, s, "sum")
    with pytest.raises(RuntimeError, match=r"scatter\(\): Expected dtype int32/int64 for index"):
        x.scatter_reduce(0, i.float(), s, "sum")
    np.testing.assert_array_equal(x.cpu().numpy(), [1, 2, 3, 4])
    o = tgrad.ones(3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match=r"index_reduce\(\): Expected reduce to be one of prod, mean, amax or "
                                               r"amin but got sum."):
            o.index_reduce_(0, tgrad.tensor([0, 2]), tgrad.ones(2, 3), "sum")
        with pytest.raises(IndexError, match="index out of range in self"):
            o.index_reduce_(0, tgrad.tensor([0, 5]), tgrad.ones(2, 3), "prod")
        with pytest.raises(RuntimeError, match=r"index_reduce_\(\): Number of indices \(2\) should be equal to "
                                               r"source.size\(dim\): \(3\), for dim: 0"):
            o.index_reduce_(0, tgrad.tensor([0, 1]), tgrad.ones(3, 3), "prod")
        with pytest.raises(RuntimeError, match="source tensor shape must match self tensor shape, excluding the "
                                               r"specified dimension. Got self.shape = \[3, 3\] source.shape = \[2, 2\]"):
            o.index_reduce_(0, tgrad.tensor([0, 1]), tgrad.ones(2, 2), "prod")
        with pytest.raises(IndexError, match=r"index_reduce_\(\): Index is supposed to be a vector, but got dim: 2 "
                                             r"with type: Long and size: \[1, 2\]"):
            o.index_reduce_(0, tgrad.tensor([[0, 1]]), tgrad.ones(2, 3), "prod")
    np.testing.assert_array_equal(o.cpu().numpy(), np.ones((3, 3)))


def test_autograd_nodes_and_shared_amax_gradient():
    x = tgrad.tensor([3.0, 1.0], requires_grad=True)
    s = tgrad.tensor([3.0, 0.5, 2.0], requires_grad=True)
    y = x.scatter_reduce(0, tgrad.tensor([0, 0, 1]), s, "amax")
    assert type(y.grad_fn).__name__ == "ScatterReduceBackward0"
    y.sum().backward()
    # PyTorch 2.13: a tie between self and src at position 0 shares the gradient: x.grad [0.5, 0], s.grad [0.5, 0, 1]
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [0.5, 0.0])
    np.testing.assert_array_equal(s.grad.cpu().numpy(), [0.5, 0.0, 1.0])
    a = tgrad.ones(3, 2, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = (a * 1).index_reduce_(0, tgrad.tensor([0, 2, 0]), tgrad.full((3, 2), 2.0), "prod")
    assert type(b.grad_fn).__name__ == "IndexReduceBackward0"
    b.sum().backward()
    np.testing.assert_array_equal(a.grad.cpu().numpy(), [[4, 4], [1, 1], [2, 2]])
