"""F.lp_pool1d/2d/3d and nn.LPPool1d/2d/3d (PyTorch's composite: avg_pool of x^p times the window size, then
^(1/p); max_pool of |x| at p = inf): against numpy window sums, gradcheck, PyTorch's repr."""
import itertools

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad import nn

CPU_ONLY = True     # composites of pooling ops that the device suites test


def _ref(x, p, ks, st):
    """(sum over each window of x^p)^(1/p) over the trailing len(ks) dims (floor mode, no padding)."""
    nd = len(ks)
    outs = [(x.shape[-nd + i] - ks[i]) // st[i] + 1 for i in range(nd)]
    y = np.zeros(x.shape[:-nd] + tuple(outs))
    for idx in itertools.product(*[range(o) for o in outs]):
        sl = tuple(slice(i * s, i * s + k) for i, s, k in zip(idx, st, ks))
        win = x[(Ellipsis,) + sl]
        y[(Ellipsis,) + idx] = (np.abs(win).max(axis=tuple(range(-nd, 0))) if p == float("inf")
                                else (win ** p).sum(axis=tuple(range(-nd, 0))) ** (1 / p))
    return y


@pytest.mark.parametrize("nd,p,ks,st", [(1, 2, (3,), (3,)), (1, 3.0, (2,), (1,)), (2, 2, (2, 3), (2, 3)),
                                        (2, 1.5, (3, 3), (2, 1)), (2, float("inf"), (2, 2), (2, 2)),
                                        (3, 2, (2, 2, 2), (2, 2, 2)), (3, 4, (2, 3, 2), (1, 2, 1))])
def test_lp_pool_against_window_sums(nd, p, ks, st):
    rng = np.random.default_rng(nd)
    x = rng.uniform(0.1, 2.0, (2, 3) + (7, 8, 6)[:nd])
    f = {1: F.lp_pool1d, 2: F.lp_pool2d, 3: F.lp_pool3d}[nd]
    stride = None if ks == st else st
    got = f(tgrad.tensor(x), p, ks if nd > 1 else ks[0], stride if nd > 1 or stride is None else stride[0])
    np.testing.assert_allclose(got.numpy(), _ref(x, p, ks, st), rtol=1e-5)
    m = {1: nn.LPPool1d, 2: nn.LPPool2d, 3: nn.LPPool3d}[nd](p, ks, stride)
    np.testing.assert_allclose(m(tgrad.tensor(x)).numpy(), got.numpy(), rtol=0)


def test_lp_pool_gradcheck_and_repr():
    rng = np.random.default_rng(0)
    x = tgrad.tensor(rng.uniform(0.2, 2.0, (1, 2, 5, 6)), dtype=tgrad.float64, requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda t: F.lp_pool2d(t, 2.5, 2, stride=(1, 2), ceil_mode=True), (x,))
    assert repr(nn.LPPool2d(2, 3, stride=2)) == "LPPool2d(norm_type=2, kernel_size=3, stride=2, ceil_mode=False)"
    # a window of zeros: value 0, gradient 0 (not NaN), as PyTorch
    z = tgrad.zeros(1, 1, 4, dtype=tgrad.float64, requires_grad=True)
    F.lp_pool1d(z, 2, 2).sum().backward()
    assert z.grad.tolist() == [[[0.0, 0.0, 0.0, 0.0]]]
