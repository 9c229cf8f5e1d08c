"""max_pool3d / adaptive_max_pool3d with return_indices, max_unpool1d/2d/3d and nn.MaxUnpool*d: PyTorch 2.13's
printed indices (hard-coded, computed with /work/venv-torch), a numpy brute-force reference, gradcheck in
float64, PyTorch's errors."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad import nn

X = np.sin(np.arange(2 * 2 * 4 * 4 * 4, dtype=np.float32)).reshape(2, 2, 4, 4, 4)

# F.max_pool3d(x, return_indices=True, **kw)[1]: (shape, first 16 flat indices, sum) in PyTorch 2.13
TORCH_POOL3D = [
    (dict(kernel_size=2), [2, 2, 2, 2, 2], [20, 2, 8, 14, 33, 39, 45, 58, 0, 19, 13, 26, 32, 38, 57, 63], 1012),
    (dict(kernel_size=(2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0), dilation=(2, 1, 1)), [2, 2, 4, 2, 2],
     [20, 19, 20, 27, 33, 39, 8, 14, 52, 51, 52, 58, 33, 39, 45, 39], 2138),
    (dict(kernel_size=3, stride=2, padding=1, ceil_mode=True), [2, 2, 3, 3, 3],
     [20, 2, 7, 8, 14, 27, 13, 14, 15, 33, 33, 39, 52, 58, 39, 45], 4297),
]


def _pool3d_ref(x, k, s, p):
    """(values, flat argmax) of max pooling with the first maximum in (kd, kh, kw) order, numpy loops."""
    n, c, D, H, W = x.shape
    out = [(D + 2 * p[i] - k[i]) // s[i] + 1 if i == 0 else ((H, W)[i - 1] + 2 * p[i] - k[i]) // s[i] + 1
           for i in range(3)]
    y = np.full((n, c, *out), -np.inf, x.dtype)
    idx = np.zeros((n, c, *out), np.int64)
    for od, oh, ow in np.ndindex(*out):
        for kd, kh, kw in np.ndindex(*k):
            d, h, w = od * s[0] - p[0] + kd, oh * s[1] - p[1] + kh, ow * s[2] - p[2] + kw
            if 0 <= d < D and 0 <= h < H and 0 <= w < W:
                v = x[:, :, d, h, w]
                take = v > y[:, :, od, oh, ow]
                y[:, :, od, oh, ow] = np.where(take, v, y[:, :, od, oh, ow])
                idx[:, :, od, oh, ow] = np.where(take, (d * H + h) * W + w, idx[:, :, od, oh, ow])
    return y, idx


@pytest.mark.parametrize("case", range(len(TORCH_POOL3D)))
def test_max_pool3d_indices_match_pytorch(device, case):
    kw, shape, first, total = TORCH_POOL3D[case]
    y, i = F.max_pool3d(tgrad.tensor(X, device=device), return_indices=True, **kw)
    assert list(i.shape) == shape and i.dtype is tgrad.int64
    assert i.flatten().tolist()[:16] == first and int(i.sum()) == total
    np.testing.assert_array_equal(y.cpu().numpy(), np.take_along_axis(X.reshape(2, 2, -1), i.cpu().numpy()
                                                                       .reshape(2, 2, -1), 2).reshape(shape))


@pytest.mark.parametrize("k,s,p", [((2, 2, 2), (2, 2, 2), (0, 0, 0)), ((3, 2, 2), (1, 2, 1), (1, 0, 1))])
def test_max_pool3d_indices_numpy(device, k, s, p):
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 4, 6)).astype(np.float32)
    y, i = nn.MaxPool3d(k, s, p, return_indices=True)(tgrad.tensor(x, device=device))
    ry, ri = _pool3d_ref(x, k, s, p)
    np.testing.assert_array_equal(y.cpu().numpy(), ry)
    np.testing.assert_array_equal(i.cpu().numpy(), ri)
    y1, i1 = F.max_pool3d_with_indices(tgrad.tensor(x[0], device=device), k, s, p)     # unbatched
    np.testing.assert_array_equal(i1.cpu().numpy(), ri[0])


def test_adaptive_max_pool3d_indices(device):
    y, i = F.adaptive_max_pool3d(tgrad.tensor(X, device=device), (3, 2, 3), return_indices=True)
    # PyTorch 2.13: shape [2, 2, 3, 2, 3], first 16 indices, sum
    assert list(i.shape) == [2, 2, 3, 2, 3] and int(i.sum()) == 2293
    assert i.flatten().tolist()[:16] == [20, 2, 2, 8, 14, 14, 33, 33, 39, 45, 46, 27, 33, 33, 39, 45]
    y2, i2 = nn.AdaptiveMaxPool3d((3, 2, 3), return_indices=True)(tgrad.tensor(X, device=device))
    np.testing.assert_array_equal(i2.cpu().numpy(), i.cpu().numpy())


def test_max_unpool_inverts_pool(device):
    x = tgrad.tensor(X, device=device)
    for shape, pool, unpool in (([64], F.max_pool1d, F.max_unpool1d), ([4, 16], F.max_pool2d, F.max_unpool2d),
                                ([4, 4, 4], F.max_pool3d, F.max_unpool3d)):
        t = x.reshape(2, 2, *shape)
        y, i = pool(t, 2, return_indices=True)
        u = unpool(y, i, 2)
        assert u.shape == t.shape
        ref = np.zeros((4, t[0, 0].numel()), np.float32)
        np.put_along_axis(ref, i.cpu().numpy().reshape(4, -1), y.cpu().numpy().reshape(4, -1), 1)
        np.testing.assert_array_equal(u.cpu().numpy(), ref.reshape(t.shape))


def test_max_unpool_values_match_pytorch(device):
    x = tgrad.tensor(X, device=device)
    y, i = F.max_pool2d(x[0, :, 0], 2, return_indices=True)
    u = F.max_unpool2d(y, i, 2)                   # unbatched (C, H, W)
    # PyTorch 2.13: the flattened (2, 4, 4) result's nonzeros
    nz = u.flatten().cpu().numpy()
    assert u.shape == (2, 4, 4) and np.flatnonzero(nz).tolist() == [1, 2, 8, 14, 16, 23, 29, 30]
    y, i = F.max_pool1d(x[0, :, 0, 0], 2, stride=1, return_indices=True)
    u = nn.MaxUnpool1d(2, stride=1)(y, i, output_size=[4])
    np.testing.assert_allclose(u.flatten().cpu().numpy(), [0.0, 0.8414709568023682, 0.9092974066734314, 0.0,
                                                           0.9200260639190674, 0.82682865858078,
                                                           -0.026551153510808945, 0.0], rtol=1e-6)


def test_max_unpool_gradcheck(device):
    rng = np.random.default_rng(2)
    x = tgrad.tensor(rng.standard_normal((1, 2, 4, 6)), device=device)
    y, i = F.max_pool2d(x, 2, return_indices=True)
    y = y.detach().requires_grad_()
    assert tgrad.autograd.gradcheck(lambda t: F.max_unpool2d(t, i, 2, output_size=(5, 7)), (y,))
    assert tgrad.autograd.gradgradcheck(lambda t: F.max_unpool2d(t, i, 2), (y,))
    x3 = tgrad.tensor(rng.standard_normal((1, 1, 4, 4, 2)), device=device, requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda t: F.max_pool3d(t, 2, return_indices=True)[0], (x3,))


def test_modules_and_errors(device):
    assert repr(nn.MaxUnpool2d(2, stride=1, padding=1)) == "MaxUnpool2d(kernel_size=(2, 2), stride=(1, 1), padding=(1, 1))"
    assert repr(nn.MaxUnpool1d(2)) == "MaxUnpool1d(kernel_size=(2,), stride=(2,), padding=(0,))"
    assert repr(nn.MaxUnpool3d(2)) == "MaxUnpool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0))"
    one = tgrad.ones(1, 1, 2, 2, device=device)
    with pytest.raises(RuntimeError, match=r"Found an invalid max index: 99 \(output volumes are of size 4x4\)"):
        F.max_unpool2d(one, tgrad.tensor([[[[0, 1], [2, 99]]]], device=device), 2)
    with pytest.raises(RuntimeError, match=r"Found an invalid max index: 99 \(output volumes are of size 4x4x4\)"):
        F.max_unpool3d(tgrad.ones(1, 1, 2, 2, 2, device=device), tgrad.full((1, 1, 2, 2, 2), 99, device=device), 2)
    with pytest.raises(RuntimeError, match=r"Expected shape of indices to be same as that of the input tensor "
                                           r"\(\[1, 1, 2, 2\]\) but got indices tensor with shape: \[1, 1, 2, 3\]"):
        F.max_unpool2d(one, tgrad.zeros(1, 1, 2, 3, dtype=tgrad.int64, device=device), 2)
    with pytest.raises(RuntimeError, match="elements in indices should be type int64 but got: Int"):
        F.max_unpool2d(one, tgrad.zeros(1, 1, 2, 2, dtype=tgrad.int32, device=device), 2)
    with pytest.raises(ValueError, match="output_size should be a sequence containing 2 or 4 elements, but it has "
                                         "a length of '3'"):
        F.max_unpool2d(one, tgrad.zeros(1, 1, 2, 2, dtype=tgrad.int64, device=device), 2, output_size=(1, 2, 3))
    with pytest.raises(ValueError, match=r'invalid output_size "\(9, 9\)" \(dim 0 must be between 2 and 6\)'):
        F.max_unpool2d(one, tgrad.zeros(1, 1, 2, 2, dtype=tgrad.int64, device=device), 2, output_size=(9, 9))
    u = F.max_unpool2d(one, tgrad.zeros(1, 1, 2, 2, dtype=tgrad.int64, device=device), 2, output_size=(1, 1, 5, 5))
    assert u.shape == (1, 1, 5, 5)
