"""sort / argsort / msort / topk: PyTorch 2.13's results (NaN, -0.0, ties), return types, grads, errors."""
import numpy as np
import pytest

import tgrad


def T(a, device, dtype=None, requires_grad=False):
    return tgrad.tensor(a, dtype=dtype, device=device, requires_grad=requires_grad)


def test_nan_signed_zero_and_ties_as_pytorch(device):
    """PyTorch 2.13: NaN sorts as the largest value, -0.0 == 0.0, equal elements keep their order (stable)."""
    x = T([1.0, float("nan"), -0.0, 0.0, -float("inf"), 2.0, float("nan")], device)
    v, i = tgrad.sort(x, stable=True)
    assert i.cpu().tolist() == [4, 2, 3, 0, 5, 1, 6]
    assert np.signbit(v.cpu().numpy()[1]) and not np.signbit(v.cpu().numpy()[2])
    v, i = tgrad.sort(x, descending=True, stable=True)
    assert i.cpu().tolist() == [1, 6, 5, 0, 2, 3, 4]
    assert tgrad.argsort(x).cpu().tolist() == [4, 2, 3, 0, 5, 1, 6]
    v, i = tgrad.topk(x, 3)
    assert i.cpu().tolist() == [1, 6, 5]
    v, i = tgrad.topk(x, 2, largest=False)
    assert i.cpu().tolist()[0] == 4 and i.cpu().tolist()[1] in (2, 3)   # topk's ties are unspecified (PyTorch: 3)


def test_integer_and_bool_dtypes(device):
    x = T([[3, -1, 3, 7], [0, 0, -5, 2]], device)
    v, i = x.sort(dim=1, descending=True)
    assert v.dtype == tgrad.int64 and v.cpu().tolist() == [[7, 3, 3, -1], [2, 0, 0, -5]]
    assert i.cpu().tolist() == [[3, 0, 2, 1], [3, 0, 1, 2]]
    b = T([True, False, True], device)
    assert b.sort().values.cpu().tolist() == [False, True, True] and b.sort().indices.cpu().tolist() == [1, 0, 2]
    big = T([2**62, -2**62, 5, -(2**63)], device)
    assert big.argsort().cpu().tolist() == [3, 1, 2, 0]
    x8 = T([3, 1, 2], device, tgrad.uint8)
    assert x8.topk(2).values.cpu().tolist() == [3, 2]


def test_return_types_and_methods(device):
    x = T([[0.5, -1.0, 2.0], [1.0, 1.0, 0.0]], device)
    r = tgrad.sort(x)
    assert type(r).__name__ == "sort" and isinstance(r, tuple)
    assert repr(r).startswith("tgrad.return_types.sort(\nvalues=tensor(")
    t = x.topk(2, dim=0)
    assert type(t) is tgrad.return_types.topk and t.values.cpu().tolist() == [[1.0, 1.0, 2.0], [0.5, -1.0, 0.0]]
    assert t.indices.cpu().tolist() == [[1, 1, 0], [0, 0, 1]]
    assert tgrad.msort(x).cpu().tolist() == [[0.5, -1.0, 0.0], [1.0, 1.0, 2.0]]
    assert x.argsort(dim=0, descending=True).cpu().tolist() == [[1, 1, 0], [0, 0, 1]]
    assert tgrad.sort(T(3.0, device)).indices.item() == 0
    assert tuple(x.topk(0).values.shape) == (2, 0)


def test_grads_and_grad_fn(device):
    x = T([[0.5, -1.0, 2.0], [1.0, 3.0, 0.0]], device, requires_grad=True)
    v = x.sort(1).values
    assert type(v.grad_fn).__name__ == "SortBackward0"
    assert type(x.sort(stable=True).values.grad_fn).__name__ == "SortBackward1"
    t = x.topk(2).values
    assert type(t.grad_fn).__name__ == "TopkBackward0"
    assert not x.argsort().requires_grad
    (t * T([[1.0, 2.0], [3.0, 4.0]], device)).sum().backward()
    assert x.grad.cpu().tolist() == [[2.0, 0.0, 1.0], [4.0, 3.0, 0.0]]


def test_errors(device):
    x = T(np.zeros((3, 4)), device)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        x.topk(5)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        x.topk(-1)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        x.sort(dim=2)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        tgrad.topk(T(2.0, device), 2)


def test_large_rows_match_numpy(device):
    rng = np.random.default_rng(0)
    a = rng.integers(0, 50, (3, 3000)).astype(np.float32)
    v, i = T(a, device).sort(dim=1, descending=True, stable=True)
    ri = np.argsort(-a, axis=1, kind="stable")
    np.testing.assert_array_equal(i.cpu().numpy(), ri)
    np.testing.assert_array_equal(v.cpu().numpy(), np.take_along_axis(a, ri, 1))
