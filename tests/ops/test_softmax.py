"""softmax / log_softmax: large values, fp16, long rows and strided views (with the other row kernels), the Tensor and tgrad forms."""
import numpy as np
import pytest

import tgrad
from tgrad.autograd import dispatch


def call(name, *a, **k):
    return dispatch.call(name, *a, **k)


def T(a, device, dtype=None, requires_grad=False):
    return tgrad.tensor(np.asarray(a), dtype=dtype, device=device, requires_grad=requires_grad)


def test_softmax_large_values_and_fp16(device):
    x = T([[1000.0, 1000.0, -1000.0]], device, tgrad.float32)
    np.testing.assert_allclose(call("softmax", x, dim=1).cpu().numpy(), [[0.5, 0.5, 0.0]])
    np.testing.assert_allclose(call("log_softmax", x, dim=1).cpu().numpy(), [[-np.log(2), -np.log(2), -2000 - np.log(2)]],
                               rtol=1e-6)
    h = T([[1.0, 2.0, 3.0]], device, tgrad.float16)
    y = call("softmax", h, dim=-1)
    assert y.dtype is tgrad.float16
    e = np.exp([1.0, 2.0, 3.0])
    np.testing.assert_allclose(y.cpu().numpy().astype(np.float64), [e / e.sum()], atol=1e-3)


def _log_softmax_np(x, axis):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


@pytest.mark.parametrize("gpu_blocks", [False, True])
def test_row_kernels_loop_over_long_rows_and_strided_views(device, gpu_blocks, monkeypatch):
    """K > one block (GPU block sizes loop over K), softmax over a middle dim of a permuted, step-sliced view."""
    import tgrad.kernels.runtime.launcher as TT
    monkeypatch.setattr(TT, "FORCE_GPU_BLOCKS", gpu_blocks)
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 2500))
    x = T(a, device, tgrad.float64)
    np.testing.assert_allclose(call("log_softmax", x, dim=1).cpu().numpy(), _log_softmax_np(a, 1), atol=1e-12)
    t = rng.integers(0, 2500, 3)
    ce = call("cross_entropy", x, T(t, device), None)
    np.testing.assert_allclose(ce.item(), -_log_softmax_np(a, 1)[np.arange(3), t].mean(), rtol=1e-12)
    ln = call("layer_norm", x, None, None, normalized_shape=(2500,), eps=1e-5)
    np.testing.assert_allclose(ln.cpu().numpy(), (a - a.mean(1, keepdims=True)) / np.sqrt(a.var(1, keepdims=True) + 1e-5),
                               atol=1e-10)
    b = rng.normal(size=(4, 6, 5, 2))
    v = T(b, device, tgrad.float64).permute(2, 0, 3, 1)[:, ::2]     # (5, 2, 2, 6), no mergeable outer dims
    want = np.exp(_log_softmax_np(b.transpose(2, 0, 3, 1)[:, ::2], 2))
    np.testing.assert_allclose(call("softmax", v, dim=2).cpu().numpy(), want, atol=1e-12)
    x4 = T(rng.normal(size=(2, 5, 3, 4)), device, tgrad.float64).transpose(2, 3)
    t4 = rng.integers(0, 5, (2, 4, 3))
    want = -np.take_along_axis(_log_softmax_np(x4.cpu().numpy(), 1), t4[:, None], 1)[:, 0]
    np.testing.assert_allclose(call("cross_entropy", x4, T(t4, device), None, reduction="none").cpu().numpy(), want,
                               atol=1e-12)


def _softmax_np(a, dim):
    e = np.exp(a - a.max(dim, keepdims=True))
    return e / e.sum(dim, keepdims=True)


def test_softmax_log_softmax_forms(device):
    a = np.random.default_rng(3).standard_normal((3, 4))
    x = T(a, device, tgrad.float32)
    for got, dim in [(tgrad.softmax(x, 1), 1), (x.softmax(0), 0), (x.softmax(dim=-1), 1)]:
        np.testing.assert_allclose(got.cpu().numpy(), _softmax_np(a, dim), rtol=1e-5, atol=1e-7)
    for got, dim in [(tgrad.log_softmax(x, 0), 0), (x.log_softmax(1), 1)]:
        np.testing.assert_allclose(got.cpu().numpy(), np.log(_softmax_np(a, dim)), rtol=1e-5, atol=1e-6)
    assert tgrad.softmax(x, 1, tgrad.float64).dtype is tgrad.float64
    assert x.log_softmax(1, dtype=tgrad.float64).dtype is tgrad.float64
    assert x.softmax(1).grad_fn is None and type(T(a, device, requires_grad=True).softmax(1).grad_fn).__name__ \
        == "SoftmaxBackward0"
    with pytest.raises(TypeError):
        x.softmax()
