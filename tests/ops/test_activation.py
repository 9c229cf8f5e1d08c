"""Activations beyond the OpInfo tests: softplus's threshold, in-place forms, one fused backward launch,
gelu's second derivative."""
import numpy as np
import pytest

import tgrad
from tgrad.autograd import dispatch
from tgrad.kernels.runtime import launcher as T


def t(v, dtype=None):
    return tgrad.tensor(v, dtype=dtype)


def vals(x):
    return x.detach()._host_copy()


def test_softplus_threshold_and_large_inputs():
    x = t([-100.0, -20.0, 0.0, 10.0, 10.5, 100.0], tgrad.float64)
    got = vals(dispatch.call("softplus", x, beta=2.0, threshold=21.0))
    xn = vals(x)
    np.testing.assert_allclose(got, np.where(2 * xn > 21, xn, np.logaddexp(0, 2 * xn) / 2), rtol=1e-13)
    assert vals(dispatch.call("softplus", x))[-1] == 100.0


def test_inplace_activation_backward():
    a = tgrad.tensor([-1.0, 0.5, 2.0], requires_grad=True)
    y = a * 1.0
    dispatch.call_inplace("sigmoid", y)
    y.sum().backward()
    s = 1 / (1 + np.exp(-np.array([-1.0, 0.5, 2.0])))
    np.testing.assert_allclose(vals(a.grad), s * (1 - s), rtol=1e-6)


@pytest.mark.parametrize("name,node", [("relu", "ThresholdBackwardBackward0"), ("tanh", "TanhBackwardBackward0"),
                                       ("gelu", "GeluBackwardBackward0"), ("silu", "SiluBackwardBackward0"),
                                       ("softplus", "SoftplusBackwardBackward0")])
def test_activation_backward_is_one_launch_and_differentiable(name, node):
    x = tgrad.tensor([-1.0, 0.5, 2.0], requires_grad=True)
    y = dispatch.call(name, x)
    go = tgrad.ones_like(y)
    T.COUNTER.counts.clear()
    T.COUNTER.enabled = True
    try:
        g, = tgrad.autograd.grad(y, x, go, create_graph=True)
    finally:
        T.COUNTER.enabled = False
    assert sum(T.COUNTER.counts.values()) == 1, dict(T.COUNTER.counts)
    assert g.grad_fn.name() == node


def test_gelu_second_derivative_matches_formula():
    xs = np.array([-2.0, -0.3, 0.7, 1.9])
    for approximate in ("none", "tanh"):
        x = tgrad.tensor(xs, dtype=tgrad.float64, requires_grad=True)
        g, = tgrad.autograd.grad(dispatch.call("gelu", x, approximate=approximate).sum(), x, create_graph=True)
        gg, = tgrad.autograd.grad(g.sum(), x)
        h = 1e-5

        def d1(v):
            xv = tgrad.tensor(v, dtype=tgrad.float64, requires_grad=True)
            return vals(tgrad.autograd.grad(dispatch.call("gelu", xv, approximate=approximate).sum(), xv)[0])
        np.testing.assert_allclose(vals(gg), (d1(xs + h) - d1(xs - h)) / (2 * h), rtol=1e-6)


def test_hardswish_hardsigmoid_round_as_aten_on_every_device(device):
    # ATen: hardsigmoid = min(max(x + 3, 0), 6) / 6, hardswish = x * that / 6 (each step rounded), the backward
    # of hardsigmoid grad * (1 / 6) (float32 bits); NaN stays NaN
    x = (np.random.default_rng(0).standard_normal(3000) * 3).astype(np.float32)
    g = np.random.default_rng(1).standard_normal(3000).astype(np.float32)
    t = tgrad.tensor(x, device=device, requires_grad=True)
    r = np.minimum(np.maximum(x + np.float32(3), np.float32(0)), np.float32(6))
    hs, hsig = tgrad.nn.functional.hardswish(t), tgrad.nn.functional.hardsigmoid(t)
    assert hs.detach().cpu().numpy().view(np.int32).tolist() == (x * r / np.float32(6)).view(np.int32).tolist()
    assert hsig.detach().cpu().numpy().view(np.int32).tolist() == (r / np.float32(6)).view(np.int32).tolist()
    gt = tgrad.tensor(g, device=device)
    d, = tgrad.autograd.grad(hsig, t, gt)
    want = np.where((x > -3) & (x < 3), g * np.float32(1 / 6), np.float32(0))
    assert d.cpu().numpy().view(np.int32).tolist() == want.view(np.int32).tolist()
    nan = tgrad.tensor([float("nan")], device=device)
    assert tgrad.nn.functional.hardswish(nan).isnan().item() and tgrad.nn.functional.hardsigmoid(nan).isnan().item()
