"""The conv kernels' padded pixel grid (kernels/_lang.py ``row_grid``): row blocks never straddle an image, the
results match a numpy reference on cpu and GPU tiles, and the traced cpu tape stays small (taps are views)."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.kernels._lang import row_grid
from tgrad.kernels.runtime import launcher as KT
from tgrad.kernels.runtime import trace

CPU_ONLY = True     # tests the cpu executor's traced conv tapes (conftest)


@pytest.mark.parametrize("h, w, bm", [(24, 24, 2048), (24, 24, 32), (26, 26, 256), (7, 5, 32), (1, 300, 256),
                                      (1, 1000, 256), (100, 3, 64)])
def test_row_grid_blocks_hold_whole_images_or_rows(h, w, bm):
    ph, pw = row_grid(h, w, bm)
    assert ph >= h and pw >= w
    if ph * pw <= bm:                       # a block holds whole padded images
        assert bm % (ph * pw) == 0
    elif pw <= bm:                          # a block holds whole padded image rows, within one image
        assert bm % pw == 0 and ph % (bm // pw) == 0
    else:                                   # a block is part of one padded row
        assert pw % bm == 0
    assert ph * pw < 4 * h * w + 4 * bm     # the padding stays bounded


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
    """Images whose pixel counts are not powers of 2 (the old dense row blocks straddled images): forward and
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
