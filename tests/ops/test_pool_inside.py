"""Max pooling whose windows all lie in the input (pool_forward_kernel's INSIDE path: tap 0 starts the max) against
a numpy model of ATen's cpu loop (``val > maxval || isnan(val)``, the index starting at the window's first tap):
NaN wins and the last NaN's index is kept, ties keep the first index, an all -inf window points at its first tap;
the same inputs through windows that leave the input (padding, ceil_mode: the general path) agree with the model."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.kernels.runtime import launcher as KT

CPU_ONLY = True     # the cpu executor's tapes, with cpu blocks and with GPU tiles


def _aten_max_pool(x, k, s, p, d, ceil_mode):
    """(values, flat indices ih * W + iw) of max_pool2d as ATen's cpu kernel loops."""
    N, C, H, W = x.shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = k, s, p, d

    def out(i, kk, ss, pp, dd):
        o = (i + 2 * pp - dd * (kk - 1) - 1 + (ss - 1 if ceil_mode else 0)) // ss + 1
        return o - 1 if ceil_mode and (o - 1) * ss >= i + pp else o
    OH, OW = out(H, kh, sh, ph, dh), out(W, kw, sw, pw, dw)
    y, idx = np.empty((N, C, OH, OW), x.dtype), np.empty((N, C, OH, OW), np.int64)
    for n in range(N):
        for c in range(C):
            for oh in range(OH):
                for ow in range(OW):
                    h0, w0 = oh * sh - ph, ow * sw - pw
                    while h0 < 0:
                        h0 += dh
                    while w0 < 0:
                        w0 += dw
                    best, bi = -np.inf, h0 * W + w0
                    for ih in range(oh * sh - ph, min(oh * sh - ph + (kh - 1) * dh + 1, H), dh):
                        for iw in range(ow * sw - pw, min(ow * sw - pw + (kw - 1) * dw + 1, W), dw):
                            if ih < 0 or iw < 0:
                                continue
                            v = x[n, c, ih, iw]
                            if v > best or np.isnan(v):
                                best, bi = v, ih * W + iw
                    y[n, c, oh, ow], idx[n, c, oh, ow] = best, bi
    return y, idx


def _input():
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 8)).astype(np.float32)
    x[0, 0, :2, :2] = [[np.nan, 1.0], [np.nan, 2.0]]          # two NaNs in one 2x2 window: the last one's index
    x[0, 1, :2, :2] = -np.inf                                  # an all -inf window: its first tap
    x[1, 2, 2:4, 2:4] = 0.75                                   # ties: the first tap
    x[1, 0, 5, 5] = np.nan
    return x


@pytest.fixture(params=[False, True], ids=["cpu_blocks", "gpu_tiles"])
def tiles(request):
    old = KT.FORCE_GPU_BLOCKS
    KT.FORCE_GPU_BLOCKS = request.param
    yield
    KT.FORCE_GPU_BLOCKS = old


@pytest.mark.parametrize("k, s, p, d, ceil_mode", [
    ((2, 2), (2, 2), (0, 0), (1, 1), False),      # inside: MaxPool2d(2)
    ((3, 2), (1, 3), (0, 0), (2, 1), False),      # inside: dilation, stride above the window
    ((2, 2), (2, 2), (0, 0), (1, 1), True),       # ceil_mode: the last window column leaves the input
    ((3, 3), (2, 2), (1, 1), (1, 1), False),      # padding
])
def test_max_pool_matches_atens_loop(tiles, k, s, p, d, ceil_mode):
    xn = _input()
    x = tgrad.tensor(xn, requires_grad=True)
    y, i = F.max_pool2d(x, k, s, p, d, ceil_mode=ceil_mode, return_indices=True)
    ry, ri = _aten_max_pool(xn, k, s, p, d, ceil_mode)
    np.testing.assert_array_equal(y.detach().numpy(), ry)
    np.testing.assert_array_equal(i.numpy(), ri)
    g = np.random.default_rng(1).standard_normal(ry.shape).astype(np.float32)
    y.backward(tgrad.tensor(g))
    ref = np.zeros((6, 56), np.float32)
    np.add.at(ref, (np.arange(6)[:, None], ri.reshape(6, -1)), g.reshape(6, -1))
    if all(ss >= (kk - 1) * dd + 1 for kk, ss, dd in zip(k, s, d)):       # disjoint windows: one term an input
        np.testing.assert_array_equal(x.grad.numpy(), ref.reshape(xn.shape))
    else:       # (overlapping windows: the kernel sums an input's terms by tap, ATen by output)
        np.testing.assert_allclose(x.grad.numpy(), ref.reshape(xn.shape), rtol=1e-6, atol=1e-6)


def test_max_pool1d_inside(tiles):
    xn = _input()[0]
    y, i = F.max_pool1d(tgrad.tensor(xn), 3, 2, return_indices=True)
    ry, ri = _aten_max_pool(xn[:, :, None, :], (1, 3), (1, 2), (0, 0), (1, 1), False)
    np.testing.assert_array_equal(y.numpy(), ry[:, :, 0])
    np.testing.assert_array_equal(i.numpy(), ri[:, :, 0])
