"""The conv (and pool) kernels' pixel blocks (kernels/_lang.py ``row_block``: whole images or whole image rows per
program on cpu, no padding of H or W): the results match a numpy reference on cpu and GPU tiles, and the traced
cpu tape stays small (taps are views)."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.kernels._lang import row_block
from tgrad.kernels.runtime import launcher as KT
from tgrad.kernels.runtime import trace

CPU_ONLY = True     # tests the cpu executor's traced conv tapes (conftest)


@pytest.mark.parametrize("nb, h, w, cap", [(16, 24, 24, 2048), (16, 24, 24, 4096), (4, 26, 26, 2048),
                                           (32, 8, 8, 2048), (3, 7, 5, 32), (2, 100, 30, 512), (1, 1, 300, 256),
                                           (2, 1, 1000, 256), (1, 13, 1, 4)])
def test_conv_row_blocks_hold_whole_images_or_image_rows(nb, h, w, cap):
    """cpu: ROWS live pixels in a power-of-2 BLOCK <= cap, a whole number of images (or, when an image does not fit,
    a divisor of h of whole image rows: no block straddles an image), the fewest padded lanes; cuda-sized: dense."""
    block, rows = row_block(nb, h, w, cap, "cpu")
    assert block & (block - 1) == 0 and rows <= block <= cap
    p = h * w
    if w > cap:
        assert rows == block == cap
    elif p <= cap:
        assert rows % p == 0 and rows // p <= nb
        lanes = -(-nb // (rows // p)) * block
        # no other whole-image block does better
        for b in (1 << i for i in range(12)):
            if p <= b <= cap:
                k = min(b // p, nb)
                assert lanes <= -(-nb // k) * b
    else:
        assert rows % w == 0 and h % (rows // w) == 0
    assert row_block(nb, h, w, cap, "cuda") == (cap, cap)


def _conv_ref(x, w, pad):
    n, c, hh, ww = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = hh + 2 * pad - kh + 1, ww + 2 * pad - kw + 1
    y = np.zeros((n, o, oh, ow))
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("nchw,oc->nohw", xp[:, :, i:i + oh, j:j + ow], w[:, :, i, j])
    return y


@pytest.mark.parametrize("gpu_tiles", [False, True])
@pytest.mark.parametrize("shape, pad", [((3, 2, 9, 7), 0), ((5, 3, 6, 11), 1)])
def test_conv_on_padded_grid_matches_numpy(shape, pad, gpu_tiles):
    """Images whose pixel counts are not powers of 2 (cpu blocks hold whole images, cuda blocks straddle them): forward and
    both gradients against numpy (the gradients as convolutions of the numpy reference's adjoint)."""
    rng = np.random.default_rng(0)
    xn = rng.standard_normal(shape)
    wn = rng.standard_normal((4, shape[1], 3, 3))
    old = KT.FORCE_GPU_BLOCKS
    KT.FORCE_GPU_BLOCKS = gpu_tiles
    try:
        x = tgrad.tensor(xn, requires_grad=True)
        w = tgrad.tensor(wn, requires_grad=True)
        y = F.conv2d(x, w, padding=pad)
        gn = rng.standard_normal(y.shape)
        y.backward(tgrad.tensor(gn))
    finally:
        KT.FORCE_GPU_BLOCKS = old
    np.testing.assert_allclose(y.detach().numpy(), _conv_ref(xn, wn, pad), rtol=1e-10, atol=1e-10)
    # <g, conv(x, w)> is linear in x and in w: its gradients by finite differences of the numpy reference
    eps = 1e-6
    for t, ref in ((x, xn), (w, wn)):
        idx = tuple(rng.integers(0, s) for s in ref.shape)
        d = np.zeros_like(ref)
        d[idx] = eps
        args = (xn + d, wn) if t is x else (xn, wn + d)
        fd = ((_conv_ref(*args, pad) - _conv_ref(xn, wn, pad)) * gn).sum() / eps
        np.testing.assert_allclose(t.grad.numpy()[idx], fd, rtol=1e-6, atol=1e-6)


def test_traced_conv_tapes_stay_small():
    """The MNIST CNN's second conv (batch 4): once traced, the three conv kernels' tapes hold no per-tap index
    arrays or per-site fill arrays (each was 0.5-1 MB a tap and program before the padded grid)."""
    rng = np.random.default_rng(0)
    x = tgrad.tensor(rng.standard_normal((4, 32, 26, 26)).astype(np.float32), requires_grad=True)
    w = tgrad.tensor(rng.standard_normal((64, 32, 3, 3)).astype(np.float32), requires_grad=True)
    trace.clear_tapes()
    for _ in range(trace.TRACE_AFTER):
        F.conv2d(x, w).sum().backward()
    sizes = {k[0].__name__: r.nbytes for k, r in trace._TAPES.items() if r and k[0].__name__.startswith("conv")}
    assert set(sizes) == {"conv_forward_kernel", "conv_input_grad_kernel", "conv_weight_grad_kernel"}
    assert max(sizes.values()) < 4 << 20, sizes
