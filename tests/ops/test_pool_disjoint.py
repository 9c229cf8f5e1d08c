"""Pooling backward with disjoint windows (stride >= the window's extent; the kernel's DISJOINT path visits the
one window an input can fall in): gradcheck in float64 against finite differences, and the max gradient against
a numpy scatter of the output gradient to the argmax positions."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F

CASES = [  # (kernel, stride, padding, dilation, ceil_mode)
    (2, 2, 0, 1, False), ((2, 3), (3, 4), (1, 0), 1, False), (2, 3, 1, 2, False), (3, 3, 1, 1, True),
    ((1, 2), (2, 2), 0, (1, 2), True)]


@pytest.mark.parametrize("case", CASES)
def test_max_pool2d_gradients(device, case):
    k, s, p, d, ceil = case
    x = tgrad.tensor(np.random.default_rng(0).standard_normal((2, 2, 7, 9)), device=device, requires_grad=True)
    y, idx = F.max_pool2d(x, k, s, p, d, ceil, return_indices=True)
    g = np.random.default_rng(1).standard_normal(tuple(y.shape))
    y.backward(tgrad.tensor(g, device=device))
    ref = np.zeros((4, 63))
    np.add.at(ref, (np.arange(4)[:, None], idx.cpu().numpy().reshape(4, -1)), g.reshape(4, -1))
    np.testing.assert_array_equal(x.grad.cpu().numpy(), ref.reshape(2, 2, 7, 9))
    assert tgrad.autograd.gradcheck(lambda t: F.max_pool2d(t, k, s, p, d, ceil), (x[:1, :1],))


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool2d_gradcheck(device, case, count_include_pad):
    k, s, p, d, ceil = case
    if d != 1:
        return      # avg_pool2d has no dilation
    x = tgrad.tensor(np.random.default_rng(2).standard_normal((1, 2, 7, 9)), device=device, requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda t: F.avg_pool2d(t, k, s, p, ceil, count_include_pad), (x,))


def test_pool1d_gradcheck(device):
    x = tgrad.tensor(np.random.default_rng(3).standard_normal((2, 3, 11)), device=device, requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda t: F.max_pool1d(t, 2, 3, 1), (x,))
    assert tgrad.autograd.gradcheck(lambda t: F.avg_pool1d(t, 3, 4, 1, True), (x,))
