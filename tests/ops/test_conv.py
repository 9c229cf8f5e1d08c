"""Convolutions: PyTorch's numbers (hard-coded from PyTorch 2.13), errors, grad_fn, modules, launch counts."""
import math

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad import nn
from tgrad.kernels.runtime import COUNTER


def arr(*s, k=1.0, device="cpu"):
    """sin(0, k, 2k, ...) in ``s``: the same inputs the reference numbers were computed from."""
    return tgrad.tensor(np.sin(np.arange(int(np.prod(s))) * k).reshape(s).astype(np.float32), device=device)


def close(t, ref, atol=2e-5):
    np.testing.assert_allclose(t.detach().cpu().numpy(), np.asarray(ref, np.float32), atol=atol, rtol=1e-5)


def test_conv2d_same_even_kernel_matches_pytorch(device):
    """padding='same' with an even kernel pads one more on the right, as PyTorch does."""
    x, w, b = arr(2, 3, 5, 5, device=device), arr(4, 3, 2, 2, k=0.7, device=device), arr(4, k=0.3, device=device)
    y = F.conv2d(x, w, b, padding="same", dilation=(1, 2))
    assert y.shape == (2, 4, 5, 5)
    np.testing.assert_allclose(y.sum().item(), 77.10623931884766, rtol=1e-5)
    close(y[1, 2, 4], [-0.295407772064209, -0.2522551417350769, 0.3823474943637848, 1.1845512390136719,
                       0.8944262862205505])


def test_conv2d_gradients_match_pytorch(device):
    x = arr(2, 3, 5, 5, device=device).requires_grad_()
    w = arr(4, 3, 2, 2, k=0.7, device=device).requires_grad_()
    y = F.conv2d(x, w, arr(4, k=0.3, device=device), stride=2, padding=1)
    assert y.shape == (2, 4, 3, 3) and type(y.grad_fn).__name__ == "ConvolutionBackward0"
    assert y.grad_fn._saved_stride == (2, 2) and y.grad_fn._saved_padding == (1, 1)
    assert y.grad_fn._saved_transposed is False and y.grad_fn._saved_groups == 1
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.sum().item(), 17.54957389831543, rtol=1e-5)
    close(x.grad[0, 1, 2], [1.9694031476974487, 3.8010973930358887, 3.3774795532226562, -6.061582565307617,
                            -4.499390602111816], atol=1e-4)
    close(w.grad[3, 2], [[8.735153198242188, 6.035524368286133], [12.648542404174805, 20.35025405883789]], atol=1e-4)


def test_conv_transpose2d_output_size_matches_pytorch(device):
    tgrad.manual_seed(0)
    m = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1).to(device)
    with tgrad.no_grad():
        m.weight.copy_(arr(3, 2, 3, 3, k=0.5, device=device))
        m.bias.copy_(tgrad.tensor([0.5, -0.25], device=device))
    y = m(arr(2, 3, 5, 5, device=device), output_size=[10, 10])
    assert y.shape == (2, 2, 10, 10)
    np.testing.assert_allclose(y.sum().item(), 56.0314826965332, rtol=1e-5)
    close(y[0, 1, 9], [0.4253103733062744, 0.8911145925521851, 0.43600982427597046, 0.46455055475234985,
                       -0.18400484323501587, -0.6189679503440857, -0.8646953105926514, -1.3632590770721436,
                       -0.9802377223968506, -1.0073974132537842])
    with pytest.raises(ValueError, match="requested an output size of"):
        m(arr(2, 3, 5, 5, device=device), output_size=[12, 12])


def test_conv1d_same_matches_pytorch(device):
    y = F.conv1d(arr(2, 3, 9, device=device), arr(2, 3, 4, k=0.9, device=device), padding="same")
    close(y[1], [[3.341519832611084, 1.9512079954147339, -1.4365640878677368, -3.503565788269043, -2.349405288696289,
                  0.9647877812385559, 3.3919591903686523, 2.8544728755950928, 1.182424545288086],
                 [-0.7387170791625977, -5.493941307067871, -4.023268222808838, 1.1463792324066162, 5.262051105499268,
                  4.5398173332214355, -0.3563033938407898, -2.7532379627227783, -1.7098959684371948]], atol=1e-4)


def test_unbatched_input_and_tgrad_namespace(device):
    x, w = arr(3, 5, 5, device=device), arr(4, 3, 3, 3, k=0.2, device=device)
    y = F.conv2d(x, w, padding=1)
    assert y.shape == (4, 5, 5)
    np.testing.assert_array_equal(y.cpu().numpy(), tgrad.conv2d(x.unsqueeze(0), w, padding=1)[0].cpu().numpy())
    assert F.conv_transpose1d(arr(3, 4, device=device), arr(3, 2, 2, device=device), stride=2).shape == (2, 8)


@pytest.mark.parametrize("call,err,msg", [
    (lambda x: F.conv2d(x, tgrad.zeros(4, 5, 3, 3)), RuntimeError,
     r"Given groups=1, weight of size \[4, 5, 3, 3\], expected input\[2, 3, 8, 8\] to have 5 channels, but got 3"),
    (lambda x: F.conv2d(x, tgrad.zeros(4, 3, 3, 3), tgrad.zeros(3)), RuntimeError,
     r"expected bias to be 1-dimensional with 4 elements, but got bias of size \[3\]"),
    (lambda x: F.conv2d(x, tgrad.zeros(4, 3, 9, 9)), RuntimeError, r"Kernel size can't be greater than actual input"),
    (lambda x: F.conv2d(x, tgrad.zeros(4, 3, 3, 3), stride=2, padding="same"), RuntimeError,
     "padding='same' is not supported for strided convolutions"),
    (lambda x: F.conv2d(x, tgrad.zeros(4, 3, 3, 3), padding="foo"), RuntimeError, "Invalid padding string: 'foo'"),
    (lambda x: F.conv2d(x[0, 0], tgrad.zeros(4, 3, 3, 3)), RuntimeError,
     r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got input of size: \[8, 8\]"),
    (lambda x: F.conv2d(x, tgrad.zeros(4, 3, 3, 3, dtype=tgrad.float64)), RuntimeError, "should be the same"),
    (lambda x: F.conv_transpose2d(x, tgrad.zeros(3, 4, 3, 3), stride=2, output_padding=2), RuntimeError,
     "output padding must be smaller than either stride or dilation"),
])
def test_errors(call, err, msg):
    with pytest.raises(err, match=msg):
        call(tgrad.zeros(2, 3, 8, 8))


def test_module_repr_shapes_and_init():
    m = nn.Conv2d(4, 8, (3, 5), stride=(2, 1), padding=(1, 2), dilation=2, groups=2)
    assert repr(m) == "Conv2d(4, 8, kernel_size=(3, 5), stride=(2, 1), padding=(1, 2), dilation=(2, 2), groups=2)"
    assert repr(nn.Conv1d(3, 4, 3, padding="same", bias=False)) == \
        "Conv1d(3, 4, kernel_size=(3,), stride=(1,), padding=same, bias=False)"
    assert repr(nn.ConvTranspose2d(3, 4, 3, stride=2, output_padding=1)) == \
        "ConvTranspose2d(3, 4, kernel_size=(3, 3), stride=(2, 2), output_padding=(1, 1))"
    assert m.weight.shape == (8, 2, 3, 5) and m.bias.shape == (8,)
    assert nn.ConvTranspose2d(4, 6, 3, groups=2).weight.shape == (4, 3, 3, 3)
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]
    # kaiming_uniform_(a=sqrt(5)) and the bias both draw from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = 2*3*5
    assert nn.init._calculate_fan_in_and_fan_out(m.weight) == (30, 120)
    bound = 1 / math.sqrt(30)
    for p in (m.weight, m.bias):
        a = p.detach().cpu().numpy()
        assert np.abs(a).max() <= bound and np.abs(a).max() > 0.5 * bound
    for bad, msg in [(dict(groups=3), "in_channels must be divisible by groups"),
                     (dict(padding="same", stride=2), "padding='same' is not supported for strided convolutions"),
                     (dict(padding="full"), "Invalid padding string 'full'")]:
        with pytest.raises(ValueError, match=msg):
            nn.Conv2d(4, 8, 3, **bad)


def test_launch_counts(device):
    """One launch forward; backward: one for the input gradient, one for the weight's, one bias sum."""
    x = arr(4, 3, 8, 8, device=device).requires_grad_()
    m = nn.Conv2d(3, 8, 3, padding=1).to(device)
    COUNTER.enabled = True
    try:
        COUNTER.counts.clear()
        y = m(x)
        assert dict(COUNTER.counts) == {"conv_forward_kernel": 1}
        g = tgrad.ones_like(y)
        COUNTER.counts.clear()
        y.backward(g)
        counts = dict(COUNTER.counts)
    finally:
        COUNTER.enabled = False
    assert counts.pop("conv_input_grad_kernel") == 1 and counts.pop("conv_weight_grad_kernel") == 1
    assert counts == {"accumulate_rows_kernel": 1} or sum(counts.values()) <= 2, counts     # the bias sum (+ a copy)


def test_double_backward_through_conv_and_weight_grad(device):
    """Second order: the gradient of sum(dL/dx ^ 2) with respect to the weight, against finite differences."""
    x = tgrad.tensor(np.random.default_rng(0).normal(size=(1, 2, 4, 4)), device=device, requires_grad=True)
    w = tgrad.tensor(np.random.default_rng(1).normal(size=(3, 2, 2, 2)), device=device, requires_grad=True)
    assert tgrad.autograd.gradgradcheck(lambda a, b: F.conv2d(a, b, stride=2, padding=1), (x, w))
    assert tgrad.autograd.gradgradcheck(lambda a, b: F.conv_transpose2d(a, b.transpose(0, 1), stride=2), (x, w))
