"""What real PyTorch programs hit (issue 14's "programs we do not name"): each test is a failure or gap one
of them met, checked against numpy, tgrad's own out-of-place path, or numbers printed by PyTorch 2.13."""
import numpy as np
import pytest

import tgrad as torch
import tgrad.nn as nn
import tgrad.nn.functional as F


# ------------------------------------------------------------------ in-place activations after Linear
_INPLACE = [
    lambda h: F.relu(h, inplace=True), lambda h: F.silu(h, inplace=True), lambda h: F.elu(h, inplace=True),
    lambda h: F.leaky_relu(h, 0.1, inplace=True), lambda h: F.hardtanh(h, inplace=True),
    lambda h: F.celu(h, 0.5, inplace=True), lambda h: F.rrelu(h, inplace=True), lambda h: F.hardswish(h, True),
    lambda h: F.mish(h, inplace=True), lambda h: F.threshold(h, 0.1, 0.0, inplace=True), lambda h: h.tanh_(),
]


@pytest.mark.parametrize("k", range(len(_INPLACE)))
def test_inplace_activation_after_linear(k):
    """nn.Linear -> nn.ReLU(inplace=True) (and every other in-place activation) backpropagates: linear kept
    its output for backward even without a fused activation, so the in-place op invalidated it."""
    act = _INPLACE[k]
    grads = []
    for inplace in (True, False):
        torch.manual_seed(0)
        lin = nn.Linear(3, 4)
        x = torch.randn(5, 3)
        h = lin(x)
        y = act(h) if inplace else act(h.clone())
        y.square().sum().backward()
        grads.append((lin.weight.grad.numpy(), lin.bias.grad.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-6, atol=1e-7)


def test_inplace_relu_mlp_matches_pytorch():
    """The torchvision idiom Sequential(Linear, ReLU(inplace=True), Linear); PyTorch 2.13 printed the sums."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(inplace=True), nn.Linear(4, 2), nn.Tanh())
    m(torch.randn(2, 3)).sum().backward()
    np.testing.assert_allclose(m[0].weight.grad.numpy()[3], [-0.1280, -0.1232, -0.1476], atol=1e-4)
    assert float(m[0].weight.grad[:3].abs().sum()) == 0.0
