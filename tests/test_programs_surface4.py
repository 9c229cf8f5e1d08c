"""Surface that programs of /tmp/progs7 hit: float32 exp/tanh/sigmoid/silu/softplus/elu with ATen's cpu bits
(numpy models: float64 rounded to float32, SLEEF's expf_u10 from tgrad.testing.aten_softmax; values printed by
PyTorch 2.13), and the grad_fn names a double backward through nn.Linear shows."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.testing.aten_softmax import sleef_expf

CPU_ONLY = True     # expectations are the bits of PyTorch's cpu kernels

X = np.concatenate([np.linspace(-6, 6, 61, dtype=np.float32), np.float32([0.1, -0.5, 2.25])])
X64 = X.astype(np.float64)
# PyTorch 2.13 (cpu) at [1.0, -0.5, 2.25, 0.1]
TORCH = {
    "exp": [2.7182817459106445, 0.6065306663513184, 9.487735748291016, 1.1051709651947021],
    "tanh": [0.7615941762924194, -0.46211716532707214, 0.9780260920524597, 0.0996679961681366],
    "sigmoid": [0.7310585975646973, 0.3775406777858734, 0.9046505093574524, 0.5249791741371155],
    "silu": [0.7310585975646973, -0.1887703388929367, 2.035463571548462, 0.05249791964888573],
    "softplus": [1.31326162815094, 0.4740769863128662, 2.3502066135406494, 0.7443966865539551],
    "elu": [1.0, -0.39346933364868164, 2.25, 0.10000000149011612],
}
FNS = {"exp": tgrad.exp, "tanh": tgrad.tanh, "sigmoid": tgrad.sigmoid, "silu": F.silu, "softplus": F.softplus,
       "elu": F.elu}


def _bits(a):
    return np.asarray(a, np.float32).view(np.int32)


def test_float32_transcendentals_match_pytorch_values():
    xs = tgrad.tensor([1.0, -0.5, 2.25, 0.1])
    for name, fn in FNS.items():
        np.testing.assert_array_equal(_bits(fn(xs).numpy()), _bits(TORCH[name]), err_msg=name)


def test_exp_tanh_elu_are_float64_rounded():
    t = tgrad.tensor(X)
    np.testing.assert_array_equal(_bits(tgrad.exp(t).numpy()), _bits(np.exp(X64)))
    np.testing.assert_array_equal(_bits(t.tanh().numpy()), _bits(np.tanh(X64)))
    np.testing.assert_array_equal(_bits(F.elu(t).numpy()), _bits(np.where(X > 0, X, np.expm1(X64))))
    z = tgrad.tensor([0.0, -0.0])
    assert np.signbit(z.tanh().numpy()).tolist() == [False, True]       # tanh(+-0) = +-0
    assert tgrad.exp(tgrad.tensor([1.0], dtype=tgrad.float64)).item() == np.exp(1.0)


def test_sigmoid_silu_softplus_use_sleef_exp():
    t = tgrad.tensor(X)
    e = sleef_expf(-X)
    np.testing.assert_array_equal(_bits(t.sigmoid().numpy()), _bits(np.float32(1) / (np.float32(1) + e)))
    np.testing.assert_array_equal(_bits(F.silu(t).numpy()), _bits(X / (np.float32(1) + e)))
    sp = np.log1p(sleef_expf(2 * X).astype(np.float64)).astype(np.float32) / np.float32(2)
    np.testing.assert_array_equal(_bits(F.softplus(t, beta=2, threshold=5).numpy()),
                                  _bits(np.where(2 * X > 5, X, sp)))
    big = tgrad.tensor([-200.0, 30.0, 200.0])
    np.testing.assert_array_equal(F.softplus(big).numpy(), np.float32([0.0, 30.0, 200.0]))
    np.testing.assert_array_equal(big.sigmoid().numpy(), np.float32([0.0, 1.0, 1.0]))


def test_linear_double_backward_grad_fn_names():
    lin = tgrad.nn.Linear(2, 3)
    x = tgrad.randn(4, 2, requires_grad=True)
    gx, = tgrad.autograd.grad(lin(x).pow(2).sum(), x, create_graph=True)
    gw, = tgrad.autograd.grad(lin(x).pow(2).sum(), lin.weight, create_graph=True)
    assert "MmBackward0" in repr(gx) and gx.grad_fn.name() == "MmBackward0"
    assert gw.grad_fn.name() == "TBackward0"
    w = lin.weight.detach().numpy().astype(np.float64)
    y = x.detach().numpy() @ w.T + lin.bias.detach().numpy()
    np.testing.assert_allclose(gx.detach().numpy(), 2 * y @ w, rtol=1e-5, atol=1e-6)


def test_median_nan_and_nanmedian_match_pytorch():
    n = float("nan")
    x = tgrad.tensor([[1.0, n, 3.0, n], [4.0, 2.0, 5.0, 0.0], [n, n, n, 7.0]])
    assert np.isnan(tgrad.median(x).item()) and x.nanmedian().item() == 3.0
    m = x.median(1)      # PyTorch 2.13: values [nan, 2, nan], indices [1, 1, 0] (the first NaN)
    np.testing.assert_array_equal(m.values.numpy(), [n, 2.0, n])
    assert m.indices.tolist() == [1, 1, 0]
    nm = tgrad.nanmedian(x, 1)
    assert type(nm).__name__ == "nanmedian"
    assert nm.values.tolist() == [1.0, 2.0, 7.0] and nm.indices.tolist() == [0, 1, 3]
    nk = tgrad.nanmedian(x, 0, keepdim=True)
    assert nk.values.tolist() == [[1.0, 2.0, 3.0, 0.0]] and nk.indices.tolist() == [[0, 1, 0, 1]]
    assert np.isnan(tgrad.nanmedian(tgrad.tensor([n, n])).item())
    assert np.isnan(tgrad.tensor([]).nanmedian().item())
    t = tgrad.tensor([3.0, n, 1.0], requires_grad=True)
    t.nanmedian().backward()
    assert t.grad.tolist() == [0.0, 0.0, 1.0]
    assert tgrad.tensor([3, 1, 2]).nanmedian(0).indices.item() == 2


def test_fake_quantize_values_grads_and_errors_match_pytorch():
    x = tgrad.tensor([[-7.0, -0.51, 0.125, 0.075, 1.0, 6.5], [0.3, -0.3, 2.0, -2.0, 0.049, 5.0]], requires_grad=True)
    y = tgrad.fake_quantize_per_tensor_affine(x, 0.05, 3, -10, 100)
    # PyTorch 2.13
    ref = np.float32([[-0.65, -0.5, 0.1, 0.1, 1.0, 4.85], [0.3, -0.3, 2.0, -0.65, 0.05, 4.85]])
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=0, atol=1e-6)
    y.sum().backward()
    assert x.grad.tolist() == [[0, 1, 1, 1, 1, 0], [1, 1, 1, 0, 1, 0]]
    x.grad = None
    y = tgrad.fake_quantize_per_channel_affine(x, tgrad.tensor([0.1, 0.03]), tgrad.tensor([0, -4], dtype=tgrad.int32),
                                              0, -128, 127)
    ref = np.float32([[-7.0, -0.5, 0.1, 0.1, 1.0, 6.5], [0.3, -0.3, 2.01, -2.01, 0.06, 3.93]])
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=0, atol=1e-6)
    (y * tgrad.arange(6.0)).sum().backward()
    assert x.grad.tolist() == [[0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 0]]
    half = tgrad.fake_quantize_per_tensor_affine(tgrad.tensor([0.25, 0.75, -0.25, 2.5]), 0.5, 0, -128, 127)
    assert half.tolist() == [0.0, 1.0, 0.0, 2.5]         # nearbyint: ties to even
    with pytest.raises(RuntimeError, match="`quant_min` should be less than or"):
        tgrad.fake_quantize_per_tensor_affine(x, 0.1, 0, 5, 2)
    with pytest.raises(RuntimeError, match="`zero_point` must be between `quant_min` and `quant_max`."):
        tgrad.fake_quantize_per_tensor_affine(x, 0.1, 300, -128, 127)
    with pytest.raises(RuntimeError, match="Zero-point must be Int32, Float or Half, found Long"):
        tgrad.fake_quantize_per_channel_affine(x, tgrad.tensor([0.1, 0.03]), tgrad.tensor([0, -4]), 0, -128, 127)
    with pytest.raises(RuntimeError, match="dimensions of scale and zero-point are not consistent"):
        tgrad.fake_quantize_per_channel_affine(x, tgrad.tensor([0.1, 0.03]), tgrad.tensor([0, -4], dtype=tgrad.int32),
                                               1, -128, 127)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        tgrad.fake_quantize_per_tensor_affine(tgrad.tensor([1, 2]), 0.1, 0, -128, 127)


def test_cross_entropy_and_nll_loss_grad_fn_names_match_pytorch():
    x = tgrad.randn(4, 3, requires_grad=True)
    t = tgrad.tensor([0, 1, 2, 0])
    p = tgrad.randn(4, 3).softmax(1)
    # names PyTorch 2.13 shows (cross_entropy decomposes into log_softmax + nll_loss, or sums for soft targets)
    assert F.cross_entropy(x, t).grad_fn.name() == "NllLossBackward0"
    assert F.cross_entropy(x[0], t[0], reduction="none").grad_fn.name() == "NllLossBackward0"
    assert F.cross_entropy(x, t, label_smoothing=0.1).grad_fn.name() == "AddBackward0"
    assert F.cross_entropy(x, p).grad_fn.name() == "DivBackward1"
    assert F.cross_entropy(x, p, reduction="sum").grad_fn.name() == "NegBackward0"
    assert "grad_fn=<NllLossBackward0>" in repr(tgrad.nn.CrossEntropyLoss()(x, t))
    for shape, names in (((2, 3, 5), ("NllLoss2DBackward0", "ViewBackward0")),
                         ((2, 3, 5, 2), ("NllLoss2DBackward0", "NllLoss2DBackward0"))):
        xn = tgrad.randn(*shape, requires_grad=True)
        tn = tgrad.zeros((shape[0],) + shape[2:], dtype=tgrad.int64)
        assert F.cross_entropy(xn, tn).grad_fn.name() == names[0]
        assert F.nll_loss(xn, tn, reduction="none").grad_fn.name() == names[1]
    loss = F.cross_entropy(x, t)
    loss.backward()     # the renamed node still runs the fused backward
    s = x.detach().numpy().astype(np.float64)
    sm = np.exp(s) / np.exp(s).sum(1, keepdims=True)
    np.testing.assert_allclose(x.grad.numpy(), (sm - np.eye(3)[[0, 1, 2, 0]]) / 4, rtol=1e-5, atol=1e-7)
