"""cummax / cummin / logcumsumexp: PyTorch's forms, NaN and infinity rules, error texts, autograd (values against
numpy and gradcheck live in the OpInfos, tgrad/testing/opinfos/scan.py)."""
import math

import numpy as np
import pytest

import tgrad


def test_forms_and_return_types():
    x = tgrad.tensor([[1.0, 3.0, 3.0, 2.0], [0.0, -1.0, 4.0, 4.0]])
    for r in (tgrad.cummax(x, 1), x.cummax(1), x.cummax(dim=-1)):
        assert type(r).__name__ == "cummax" and r._fields == ("values", "indices")
        np.testing.assert_array_equal(r.values.cpu().numpy(), [[1, 3, 3, 3], [0, 0, 4, 4]])
        np.testing.assert_array_equal(r.indices.cpu().numpy(), [[0, 1, 2, 2], [0, 0, 2, 3]])  # a later tie wins
        assert r.indices.dtype is tgrad.int64
    r = tgrad.cummin(x, 0)
    np.testing.assert_array_equal(r.values.cpu().numpy(), [[1, 3, 3, 2], [0, -1, 3, 2]])
    np.testing.assert_array_equal(r.indices.cpu().numpy(), [[0, 0, 0, 0], [1, 1, 0, 0]])
    np.testing.assert_allclose(tgrad.logcumsumexp(x, 1).cpu().numpy(), np.logaddexp.accumulate(x.cpu().numpy(), 1),
                               rtol=1e-6)


def test_nan_and_infinities_as_pytorch():
    # PyTorch 2.13: cummax([1, 3, 3, nan, 2, nan]) -> values [1, 3, 3, nan, nan, nan], indices [0, 1, 2, 3, 3, 5]
    r = tgrad.tensor([1.0, 3.0, 3.0, math.nan, 2.0, math.nan]).cummax(0)
    np.testing.assert_array_equal(r.values.cpu().numpy(), [1, 3, 3, np.nan, np.nan, np.nan])
    np.testing.assert_array_equal(r.indices.cpu().numpy(), [0, 1, 2, 3, 3, 5])
    # PyTorch 2.13: logcumsumexp([-inf, -inf, 1, inf, inf]) -> [-inf, -inf, 1, inf, inf]
    y = tgrad.tensor([-math.inf, -math.inf, 1.0, math.inf, math.inf]).logcumsumexp(0)
    np.testing.assert_array_equal(y.cpu().numpy(), [-np.inf, -np.inf, 1.0, np.inf, np.inf])


def test_integer_bool_scalar_and_empty():
    r = tgrad.cummin(tgrad.tensor([3, 1, 1, 2]), 0)
    np.testing.assert_array_equal(r.values.cpu().numpy(), [3, 1, 1, 1])
    np.testing.assert_array_equal(r.indices.cpu().numpy(), [0, 1, 2, 2])
    b = tgrad.cummax(tgrad.tensor([False, True, False]), 0)
    assert b.values.dtype is tgrad.bool
    np.testing.assert_array_equal(b.values.cpu().numpy(), [False, True, True])
    np.testing.assert_array_equal(b.indices.cpu().numpy(), [0, 1, 1])
    s = tgrad.cummax(tgrad.tensor(5.0), 0)
    assert s.values.shape == () and s.values.item() == 5.0 and s.indices.item() == 0
    e = tgrad.cummax(tgrad.zeros(0, 3), 0)
    assert e.values.shape == (0, 3) and e.indices.shape == (0, 3)


def test_bad_input():
    with pytest.raises(NotImplementedError, match="\"logcumsumexp_out_cpu\" not implemented for 'Long'"):
        tgrad.logcumsumexp(tgrad.tensor([1, 2]), 0)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        tgrad.cummax(tgrad.ones(2, 3), 2)


def test_autograd_nodes_and_gradients():
    x = tgrad.tensor([[1.0, 3.0, 2.0, 5.0]], dtype=tgrad.float64, requires_grad=True)
    v, i = x.cummax(1)
    assert type(v.grad_fn).__name__ == "CummaxBackward0" and not i.requires_grad
    v.sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [[1, 2, 0, 1]])      # each position counts its uses
    x.grad = None
    y = x.logcumsumexp(1)
    assert type(y.grad_fn).__name__ == "LogcumsumexpBackward0"
    (y * tgrad.tensor([[1.0, -2.0, 0.5, 3.0]], dtype=tgrad.float64)).sum().backward()
    xn, g = np.array([1.0, 3.0, 2.0, 5.0]), np.array([1.0, -2.0, 0.5, 3.0])
    r = np.logaddexp.accumulate(xn)
    want = [sum(g[k] * np.exp(xn[j] - r[k]) for k in range(j, 4)) for j in range(4)]
    np.testing.assert_allclose(x.grad.cpu().numpy()[0], want, rtol=1e-12)


def test_float32_cumsum_cumprod_carry_float64_on_every_device(device):
    # ATen's cpu cumsum / cumprod of float32 accumulate in double and round each output once
    a = (np.random.default_rng(0).standard_normal(3000) * 3).astype(np.float32)
    t = tgrad.tensor(a, device=device)
    assert t.cumsum(0).cpu().numpy().view(np.int32).tolist() == \
        np.cumsum(a.astype(np.float64)).astype(np.float32).view(np.int32).tolist()
    p = (1 + a[:200] * 0.001).astype(np.float32)
    assert tgrad.tensor(p, device=device).cumprod(0).cpu().numpy().view(np.int32).tolist() == \
        np.cumprod(p.astype(np.float64)).astype(np.float32).view(np.int32).tolist()
