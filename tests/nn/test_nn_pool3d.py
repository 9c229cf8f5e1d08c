"""3-D pooling (max / avg / adaptive) against a numpy reference over explicit windows, gradients by finite
differences, module reprs as PyTorch 2.13 prints them, PyTorch's errors."""
import itertools

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad import nn


def _ref(x, k, s, p, reduce, include_pad=True, ceil=False):
    """Pool the last 3 dims of x over explicit windows (pads count in the divisor when include_pad)."""
    n, c = x.shape[:2]
    sizes = x.shape[2:]
    out = [(((L + 2 * pp - kk + (ss - 1 if ceil else 0)) // ss) + 1) for L, kk, ss, pp in zip(sizes, k, s, p)]
    out = [o - 1 if ceil and (o - 1) * ss >= L + pp else o for o, L, ss, pp in zip(out, sizes, s, p)]
    y = np.zeros((n, c, *out), x.dtype)
    for o in itertools.product(*[range(v) for v in out]):
        lo = [oi * ss - pp for oi, ss, pp in zip(o, s, p)]
        hi = [min(l0 + kk, L + pp) for l0, kk, L, pp in zip(lo, k, sizes, p)]
        cl = [(max(a, 0), min(b, L)) for a, b, L in zip(lo, hi, sizes)]
        win = x[:, :, cl[0][0]:cl[0][1], cl[1][0]:cl[1][1], cl[2][0]:cl[2][1]]
        if reduce == "max":
            y[(slice(None), slice(None)) + o] = win.max(axis=(2, 3, 4))
        else:
            div = np.prod([b - a for a, b in zip(lo, hi)]) if include_pad else np.prod([b - a for a, b in cl])
            y[(slice(None), slice(None)) + o] = win.sum(axis=(2, 3, 4)) / div
    return y


X = np.random.default_rng(0).standard_normal((2, 3, 5, 6, 7)).astype(np.float32)


@pytest.mark.parametrize("k,s,p,ceil", [((2, 2, 2), (2, 2, 2), (0, 0, 0), False), ((3, 2, 3), (2, 1, 2), (1, 1, 1), False),
                                        ((2, 3, 2), (2, 2, 3), (1, 0, 1), True)])
def test_max_and_avg_pool3d_match_windows(device, k, s, p, ceil):
    x = tgrad.tensor(X, device=device)
    np.testing.assert_array_equal(F.max_pool3d(x, k, s, p, ceil_mode=ceil).cpu().numpy(),
                                  _ref(X, k, s, p, "max", ceil=ceil))
    np.testing.assert_allclose(F.avg_pool3d(x, k, s, p, ceil_mode=ceil).cpu().numpy(),
                               _ref(X, k, s, p, "avg", ceil=ceil), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(F.avg_pool3d(x, k, s, p, ceil_mode=ceil, count_include_pad=False).cpu().numpy(),
                               _ref(X, k, s, p, "avg", include_pad=False, ceil=ceil), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(F.avg_pool3d(x, k, s, p, ceil_mode=ceil, divisor_override=5).cpu().numpy(),
                               _ref(X, k, s, p, "avg", ceil=ceil) * _div(X, k, s, p, ceil) / 5, rtol=1e-5, atol=1e-5)


def _div(x, k, s, p, ceil):
    """Each window's size clipped to the padded input (the count_include_pad divisor)."""
    sizes, out = x.shape[2:], _ref(x, k, s, p, "max", ceil=ceil).shape[2:]
    d = np.zeros(out)
    for o in itertools.product(*[range(v) for v in out]):
        lo = [oi * ss - pp for oi, ss, pp in zip(o, s, p)]
        hi = [min(l0 + kk, L + pp) for l0, kk, L, pp in zip(lo, k, sizes, p)]
        d[o] = np.prod([b - a for a, b in zip(lo, hi)])
    return d


def test_adaptive_pool3d_and_unbatched(device):
    x = tgrad.tensor(X, device=device)
    ya = F.adaptive_avg_pool3d(x, (2, 3, None))
    assert ya.shape == (2, 3, 2, 3, 7)
    # adaptive windows [floor(o L / O), ceil((o + 1) L / O))
    win = lambda L, O: [(o * L // O, -(-(o + 1) * L // O)) for o in range(O)]     # noqa: E731
    ref = np.zeros((2, 3, 2, 3, 7), np.float32)
    refm = np.zeros_like(ref)
    for (i, (a, b)), (j, (c, d)), w in itertools.product(enumerate(win(5, 2)), enumerate(win(6, 3)), range(7)):
        ref[:, :, i, j, w] = X[:, :, a:b, c:d, w].mean(axis=(2, 3))
        refm[:, :, i, j, w] = X[:, :, a:b, c:d, w].max(axis=(2, 3))
    np.testing.assert_allclose(ya.cpu().numpy(), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(F.adaptive_max_pool3d(x, (2, 3, 7)).cpu().numpy(), refm)
    np.testing.assert_array_equal(nn.AdaptiveMaxPool3d((2, 3, 7))(x[0]).cpu().numpy(), refm[0])
    np.testing.assert_array_equal(nn.MaxPool3d(2)(x[1]).cpu().numpy(), _ref(X[1:], (2,) * 3, (2,) * 3, (0,) * 3, "max")[0])


def test_gradients():
    x = tgrad.tensor(np.random.default_rng(1).standard_normal((1, 2, 3, 4, 3)), requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda t: F.max_pool3d(t, 2, 1, 1), (x,))
    assert tgrad.autograd.gradcheck(lambda t: F.avg_pool3d(t, 2, 1, 1, count_include_pad=False), (x,))
    assert tgrad.autograd.gradcheck(lambda t: F.adaptive_avg_pool3d(t, (2, 3, 2)), (x,))


def test_reprs_and_errors():
    # as PyTorch 2.13 prints them
    assert repr(nn.MaxPool3d(2)) == "MaxPool3d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    assert repr(nn.MaxPool3d((2, 3, 1), stride=1, padding=(1, 1, 0))) == \
        "MaxPool3d(kernel_size=(2, 3, 1), stride=1, padding=(1, 1, 0), dilation=1, ceil_mode=False)"
    assert repr(nn.AvgPool3d(2)) == "AvgPool3d(kernel_size=2, stride=2, padding=0)"
    assert repr(nn.AdaptiveAvgPool3d((1, 2, 3))) == "AdaptiveAvgPool3d(output_size=(1, 2, 3))"
    assert repr(nn.AdaptiveMaxPool3d(2)) == "AdaptiveMaxPool3d(output_size=2)"
    with pytest.raises(RuntimeError, match=r"non-empty 4D or 5D \(batch mode\) tensor expected for input"):
        F.max_pool3d(tgrad.zeros(2, 3, 4), 2)
    with pytest.raises(RuntimeError, match=r"adaptive_avg_pool3d\(\): Expected 4D or 5D tensor, but got \[2, 3\]"):
        F.adaptive_avg_pool3d(tgrad.zeros(2, 3), 2)
