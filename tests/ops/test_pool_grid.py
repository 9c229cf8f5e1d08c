"""The pool kernels' plane blocks (kernels/_lang.py ``row_block``: whole planes or plane rows on cpu, dense cuda tiles): planes whose
sizes are not powers of 2 against numpy, forward and gradient, and the traced cpu tapes stay small (window taps
are strided views, not per-lane gathers)."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.kernels import pool as KP
from tgrad.kernels.runtime import launcher as KT
from tgrad.kernels.runtime import trace

CPU_ONLY = True     # tests the cpu executor's block choices and traced tapes (conftest)


def _windows(x, k, s, p, fill):
    """(N, C, OH, OW, k*k) windows of x padded by ``fill`` (PyTorch's floor-mode output size)."""
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), constant_values=fill)
    oh, ow = (xp.shape[2] - k) // s + 1, (xp.shape[3] - k) // s + 1
    return np.stack([xp[:, :, i:i + s * oh:s, j:j + s * ow:s] for i in range(k) for j in range(k)], -1)


@pytest.fixture(params=[False, True], ids=["cpu_blocks", "gpu_tiles"])
def tiles(request):
    old = KT.FORCE_GPU_BLOCKS
    KT.FORCE_GPU_BLOCKS = request.param
    yield
    KT.FORCE_GPU_BLOCKS = old


@pytest.mark.parametrize("shape, k, s, p", [((3, 5, 9, 7), 2, 2, 0), ((2, 3, 13, 6), 3, 2, 1), ((1, 2, 24, 24), 2, 2, 0)])
def test_pools_on_padded_grid_match_numpy(tiles, shape, k, s, p):
    rng = np.random.default_rng(0)
    xn = rng.standard_normal(shape)
    x = tgrad.tensor(xn, requires_grad=True)
    y, idx = F.max_pool2d(x, k, s, p, return_indices=True)
    win = _windows(xn, k, s, p, -np.inf)
    np.testing.assert_array_equal(y.detach().numpy(), win.max(-1))
    g = rng.standard_normal(tuple(y.shape))
    y.backward(tgrad.tensor(g))
    ref = np.zeros((shape[0] * shape[1], shape[2] * shape[3]))
    np.add.at(ref, (np.arange(ref.shape[0])[:, None], idx.numpy().reshape(ref.shape[0], -1)), g.reshape(ref.shape[0], -1))
    np.testing.assert_allclose(x.grad.numpy(), ref.reshape(shape), rtol=1e-12, atol=1e-12)   # (overlaps: sum order)
    # avg (count_include_pad): the window mean, and its adjoint: each window spreads g / k^2 over its taps
    x.grad = None
    ya = F.avg_pool2d(x, k, s, p)
    np.testing.assert_allclose(ya.detach().numpy(), _windows(xn, k, s, p, 0.0).mean(-1), rtol=1e-12, atol=1e-12)
    ya.backward(tgrad.tensor(g))
    dxp = np.zeros((shape[0], shape[1], shape[2] + 2 * p, shape[3] + 2 * p))
    oh, ow = g.shape[2:]
    for i in range(k):
        for j in range(k):
            dxp[:, :, i:i + s * oh:s, j:j + s * ow:s] += g / (k * k)
    np.testing.assert_allclose(x.grad.numpy(), dxp[:, :, p:p + shape[2], p:p + shape[3]], rtol=1e-12, atol=1e-12)


def test_adaptive_pool_on_padded_grid(tiles):
    xn = np.random.default_rng(1).standard_normal((2, 3, 9, 7))
    x = tgrad.tensor(xn, requires_grad=True)
    y = F.adaptive_avg_pool2d(x, (5, 3))
    ref = np.empty((2, 3, 5, 3))
    for i in range(5):
        for j in range(3):
            h0, h1 = i * 9 // 5, -(-(i + 1) * 9 // 5)
            w0, w1 = j * 7 // 3, -(-(j + 1) * 7 // 3)
            ref[:, :, i, j] = xn[:, :, h0:h1, w0:w1].mean((2, 3))
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-12, atol=1e-12)
    assert tgrad.autograd.gradcheck(lambda t: F.adaptive_avg_pool2d(t, (5, 3)), (x[:1, :2],))


def test_traced_pool_tapes_stay_small(monkeypatch):
    """The MNIST CNN's max pool (batch 8 of 64 x 24 x 24): once traced, the pool kernels' loads and stores are
    strided views, no per-lane gathers (with dense lanes, blocks straddled planes: 33 MB forward, 29 MB backward;
    now ~10 MB each, the per-lane window indices the argmax compares).  (The kernels' tapes: their C twins off.)"""
    monkeypatch.setattr(KP, "cnn_twins", lambda: None)
    x = tgrad.tensor(np.random.default_rng(0).standard_normal((8, 64, 24, 24)).astype(np.float32), requires_grad=True)
    trace.clear_tapes()
    for _ in range(trace.TRACE_AFTER + 1):
        F.max_pool2d(x, 2).sum().backward()
    sizes = {k[0].__name__: r.nbytes for k, r in trace._TAPES.items() if r and k[0].__name__.startswith("pool")}
    assert set(sizes) == {"pool_forward_kernel", "pool_backward_kernel"}, sizes
    assert max(sizes.values()) < LIMIT, sizes


LIMIT = 16 << 20
