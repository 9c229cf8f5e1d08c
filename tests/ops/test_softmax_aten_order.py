"""float32 log_softmax / softmax over the last dim, their backwards, and cross_entropy / nll_loss (class targets)
run in ATen's cpu order: bit for bit against the loop-for-loop numpy model of SoftMaxKernel.cpp / LossNLL.cpp
with SLEEF's exp and log (tgrad.testing.aten_softmax), and against values PyTorch 2.13 printed."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.testing import aten_softmax as A

CPU_ONLY = True     # the order is ATen's cpu one; cuda keeps its own


def _eq(got, want):
    np.testing.assert_array_equal(np.asarray(got.detach().cpu().numpy()), np.asarray(want))


def _data():
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(64, 10)) * 2).astype(np.float32)
    t = rng.integers(0, 10, 64)
    w = rng.uniform(0.5, 2, 10).astype(np.float32)
    return x, t, w


def test_pytorch_values():
    """Printed by PyTorch 2.13 (AVX2 build) for the inputs of _data()."""
    x, t, w = _data()
    X, T, W = tgrad.tensor(x), tgrad.tensor(t), tgrad.tensor(w)
    assert F.cross_entropy(X, T).item() == 3.8275644779205322
    assert F.cross_entropy(X, T, weight=W).item() == 3.8738560676574707
    assert F.cross_entropy(X, T, reduction="sum").item() == 244.96412658691406
    assert F.log_softmax(X, 1)[:2, :4].flatten().tolist() == [
        -3.144174575805664, -3.659844398498535, -2.1147894859313965, -3.1858344078063965,
        -3.851710081100464, -2.5225093364715576, -7.255222797393799, -3.0427446365356445]
    assert F.softmax(X, 1)[:2, :4].flatten().tolist() == [
        0.04310249537229538, 0.02573651447892189, 0.12065868824720383, 0.04134372994303703,
        0.021243378520011902, 0.08025796711444855, 0.0007064749370329082, 0.047703780233860016]
    xr = X.clone().requires_grad_()
    F.cross_entropy(xr, T).backward()
    assert xr.grad[0, :5].tolist() == [-0.014951523393392563, 0.000402133067836985, 0.0018852920038625598,
                                       0.0006459958385676146, 0.00017940641555469483]
    xr = X.clone().requires_grad_()
    (F.log_softmax(xr, 1) * tgrad.arange(10.)).sum().backward()
    assert xr.grad[0, :4].tolist() == [-1.9396119117736816, -0.15814323723316193, -3.429641008377075,
                                       1.1395319700241089]
    xr = X.clone().requires_grad_()
    (F.softmax(xr, 1) * tgrad.arange(10.)).sum().backward()
    assert xr.grad[0, :4].tolist() == [-0.22246073186397552, -0.10709486156702042, -0.381426602602005,
                                       -0.08935219049453735]


def test_model_matches_pytorch_values():
    """The numpy model gives PyTorch's numbers (the same anchors)."""
    x, t, w = _data()
    assert A.nll_loss(A.log_softmax_lastdim(x), t) == np.float32(3.8275644779205322)
    assert A.nll_loss(A.log_softmax_lastdim(x), t, w) == np.float32(3.8738560676574707)
    assert A.nll_loss(A.log_softmax_lastdim(x), t, reduction="sum") == np.float32(244.96412658691406)
    assert A.softmax_lastdim(x)[0, 2] == np.float32(0.12065868824720383)
    g = np.tile(np.arange(10, dtype=np.float32), (64, 1))
    assert A.log_softmax_backward_lastdim(g, A.log_softmax_lastdim(x))[0, 0] == np.float32(-1.9396119117736816)
    assert A.softmax_backward_lastdim(g, A.softmax_lastdim(x))[0, 0] == np.float32(-0.22246073186397552)
    # exp / log: within an ulp of the correctly rounded values (and not them: SLEEF's own roundings)
    v = np.linspace(-100, 80, 20001, dtype=np.float32)
    ref = np.exp(v.astype(np.float64))
    assert np.all(np.abs(A.sleef_expf(v) - ref) <= np.spacing(ref.astype(np.float32)))
    u = np.linspace(1e-3, 5000, 20001, dtype=np.float32)
    ref = np.log(u.astype(np.float64))
    assert np.all(np.abs(A.sleef_logf(u) - ref) <= np.abs(np.spacing(ref.astype(np.float32))))


@pytest.mark.parametrize("shape", [(64, 10), (7, 3), (3, 1), (5, 8), (33, 17), (6, 1000), (2, 4100)])
def test_softmax_bit_for_bit(device, shape):
    rng = np.random.default_rng(sum(shape))
    x = (rng.normal(size=shape) * 3).astype(np.float32)
    g = rng.normal(size=shape).astype(np.float32)
    for log, fwd, bwd in ((True, A.log_softmax_lastdim, A.log_softmax_backward_lastdim),
                          (False, A.softmax_lastdim, A.softmax_backward_lastdim)):
        xr = tgrad.tensor(x, requires_grad=True)
        y = (F.log_softmax if log else F.softmax)(xr, -1)
        _eq(y, fwd(x))
        y.backward(tgrad.tensor(g))
        _eq(xr.grad, bwd(g, fwd(x)))


@pytest.mark.parametrize("n,k", [(64, 10), (1, 10), (600, 3), (8, 1000)])   # 600: three cascade levels
def test_cross_entropy_bit_for_bit(device, n, k):
    rng = np.random.default_rng(n + k)
    x = (rng.normal(size=(n, k)) * 2).astype(np.float32)
    t = rng.integers(0, k, n)
    w = rng.uniform(0.5, 2, k).astype(np.float32)
    lsm = A.log_softmax_lastdim(x)
    X, T, W = tgrad.tensor(x), tgrad.tensor(t), tgrad.tensor(w)
    for red in ("mean", "sum"):
        for wt in (None, w):
            want = A.nll_loss(lsm, t, wt, red)
            _eq(F.cross_entropy(X, T, weight=None if wt is None else W, reduction=red), want)
            _eq(F.nll_loss(tgrad.tensor(lsm), T, weight=None if wt is None else W, reduction=red), want)
    _eq(F.cross_entropy(X, T, reduction="none"), -lsm[np.arange(n), t])
    # the gradient: nll_loss_backward's -1/n at the targets through log_softmax_backward
    xr = tgrad.tensor(x, requires_grad=True)
    F.cross_entropy(xr, T).backward()
    gi = np.zeros_like(x)
    gi[np.arange(n), t] = -(np.float32(1) / np.float32(n))
    _eq(xr.grad, A.log_softmax_backward_lastdim(gi, lsm))


def test_cross_entropy_ignored_rows():
    """Rows with ignore_index drop out of the sum and of the mean's count (none at a cascade step here)."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(40, 5)).astype(np.float32)
    t = rng.integers(0, 5, 40)
    t[[3, 7, 21]] = -100
    lsm = A.log_softmax_lastdim(x)
    _eq(F.cross_entropy(tgrad.tensor(x), tgrad.tensor(t)), A.nll_loss(lsm, t))
