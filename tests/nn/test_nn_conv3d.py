"""conv3d / nn.Conv3d against a numpy reference (a sum over the kernel taps of strided slices), gradients by
finite differences, 'same' padding, padding_mode, unbatched input, PyTorch's repr and errors."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad import nn


def ref_conv3d(x, w, b, s, p, d, g):
    x = np.pad(x, ((0, 0), (0, 0)) + tuple((q, q) for q in p))
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    ks = w.shape[2:]
    out = [(x.shape[2 + i] - d[i] * (ks[i] - 1) - 1) // s[i] + 1 for i in range(3)]
    y = np.zeros((n, o, *out))
    og = o // g
    for gi in range(g):
        xg, wg = x[:, gi * cg:(gi + 1) * cg], w[gi * og:(gi + 1) * og]
        for a in range(ks[0]):
            for bb in range(ks[1]):
                for e in range(ks[2]):
                    sl = xg[:, :, a * d[0]:a * d[0] + (out[0] - 1) * s[0] + 1:s[0],
                            bb * d[1]:bb * d[1] + (out[1] - 1) * s[1] + 1:s[1],
                            e * d[2]:e * d[2] + (out[2] - 1) * s[2] + 1:s[2]]
                    y[:, gi * og:(gi + 1) * og] += np.einsum("ncdhw,oc->nodhw", sl, wg[:, :, a, bb, e])
    return y + (0 if b is None else b.reshape(1, -1, 1, 1, 1))


RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 4, 5, 6, 5)).astype(np.float32)
W = RNG.standard_normal((6, 2, 3, 2, 3)).astype(np.float32)
B = RNG.standard_normal(6).astype(np.float32)


@pytest.mark.parametrize("s,p,d,g", [((1, 1, 1), (0, 0, 0), (1, 1, 1), 1), ((2, 1, 2), (1, 0, 1), (1, 2, 1), 2)])
def test_conv3d_matches_reference(device, s, p, d, g):
    w = W if g == 2 else RNG.standard_normal((6, 4, 3, 2, 3)).astype(np.float32)
    y = F.conv3d(tgrad.tensor(X, device=device), tgrad.tensor(w, device=device), tgrad.tensor(B, device=device),
                 stride=s, padding=p, dilation=d, groups=g)
    np.testing.assert_allclose(y.cpu().numpy(), ref_conv3d(X, w, B, s, p, d, g), rtol=1e-4, atol=1e-4)


def test_same_padding_unbatched_and_module(device):
    w = W[:, :, :2]                               # even depth kernel: the extra zero on the right, as PyTorch
    y = F.conv3d(tgrad.tensor(X, device=device), tgrad.tensor(w, device=device), padding="same", groups=2)
    xp = np.pad(X, ((0, 0), (0, 0), (0, 1), (0, 1), (1, 1)))
    np.testing.assert_allclose(y.cpu().numpy(), ref_conv3d(xp, w, None, (1,) * 3, (0,) * 3, (1,) * 3, 2),
                               rtol=1e-4, atol=1e-4)
    conv = nn.Conv3d(4, 6, 3, stride=2, padding=1, padding_mode="reflect")
    assert repr(conv) == ("Conv3d(4, 6, kernel_size=(3, 3, 3), stride=(2, 2, 2), padding=(1, 1, 1), "
                          "padding_mode=reflect)")       # as PyTorch 2.13 prints it
    yc = conv(tgrad.tensor(X[0]))                           # unbatched
    xr = np.pad(X[:1], ((0, 0), (0, 0), (1, 1), (1, 1), (1, 1)), mode="reflect")
    np.testing.assert_allclose(yc.detach().cpu().numpy(), ref_conv3d(xr, conv.weight.detach().cpu().numpy(),
                                                                      conv.bias.detach().cpu().numpy(), (2,) * 3,
                                                                      (0,) * 3, (1,) * 3, 1)[0], rtol=1e-4, atol=1e-5)


def test_gradients():
    x = tgrad.tensor(RNG.standard_normal((1, 2, 3, 3, 2)), requires_grad=True)
    w = tgrad.tensor(RNG.standard_normal((2, 1, 2, 2, 1)), requires_grad=True)
    b = tgrad.tensor(RNG.standard_normal(2), requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda a, c, e: F.conv3d(a, c, e, stride=(1, 2, 1), padding=1, groups=2), (x, w, b))


def test_errors():
    with pytest.raises(RuntimeError, match=r"Expected 4D \(unbatched\) or 5D \(batched\) input to conv3d, but got "
                                           r"input of size: \[2, 3, 4\]"):
        F.conv3d(tgrad.zeros(2, 3, 4), tgrad.zeros(1, 3, 1, 1, 1))
    with pytest.raises(RuntimeError, match=r"Calculated padded input size per channel: \(1 x 4 x 4\). Kernel size: "
                                           r"\(3 x 3 x 3\). Kernel size can't be greater than actual input size"):
        F.conv3d(tgrad.zeros(1, 2, 1, 4, 4), tgrad.zeros(1, 2, 3, 3, 3))


def ref_conv_transpose3d(x, w, b, s, p, op, d, g):
    """Scatter: y[n, o, i * s - p + k * d] += x[n, c, i] w[c, o, k] (per group), output_padding extends the end."""
    n, c = x.shape[:2]
    cin, og = w.shape[:2]
    ks = w.shape[2:]
    full = [(x.shape[2 + i] - 1) * s[i] + d[i] * (ks[i] - 1) + 1 + op[i] for i in range(3)]
    y = np.zeros((n, og * g, *full))
    cg = c // g
    for gi in range(g):
        xg, wg = x[:, gi * cg:(gi + 1) * cg], w[gi * cg:(gi + 1) * cg]
        for a in range(ks[0]):
            for bb in range(ks[1]):
                for e in range(ks[2]):
                    dst = (slice(None), slice(gi * og, (gi + 1) * og),
                           slice(a * d[0], a * d[0] + (x.shape[2] - 1) * s[0] + 1, s[0]),
                           slice(bb * d[1], bb * d[1] + (x.shape[3] - 1) * s[1] + 1, s[1]),
                           slice(e * d[2], e * d[2] + (x.shape[4] - 1) * s[2] + 1, s[2]))
                    y[dst] += np.einsum("ncdhw,co->nodhw", xg, wg[:, :, a, bb, e])
    y = y[:, :, p[0]:full[0] - p[0], p[1]:full[1] - p[1], p[2]:full[2] - p[2]]
    return y + (0 if b is None else b.reshape(1, -1, 1, 1, 1))


@pytest.mark.parametrize("s,p,op,d,g", [((1, 1, 1), (0, 0, 0), (0, 0, 0), (1, 1, 1), 1),
                                        ((2, 1, 2), (1, 0, 1), (1, 0, 1), (1, 2, 1), 2)])
def test_conv_transpose3d_matches_reference(device, s, p, op, d, g):
    x = RNG.standard_normal((2, 4, 3, 4, 3)).astype(np.float32)
    w = RNG.standard_normal((4, 3, 3, 2, 2)).astype(np.float32)
    b = RNG.standard_normal(3 * g).astype(np.float32)
    y = F.conv_transpose3d(tgrad.tensor(x, device=device), tgrad.tensor(w, device=device),
                           tgrad.tensor(b, device=device), s, p, op, g, d)
    np.testing.assert_allclose(y.cpu().numpy(), ref_conv_transpose3d(x, w, b, s, p, op, d, g), rtol=1e-4, atol=1e-4)


def test_conv_transpose3d_module_gradients_and_output_size():
    m = nn.ConvTranspose3d(2, 2, 3, stride=2, padding=1, groups=2)
    x = tgrad.tensor(RNG.standard_normal((1, 2, 2, 3, 2)).astype(np.float32))
    assert m(x, output_size=(4, 6, 4)).shape == (1, 2, 4, 6, 4)
    assert m(x[0]).shape == (2, 3, 5, 3)
    assert repr(m) == "ConvTranspose3d(2, 2, kernel_size=(3, 3, 3), stride=(2, 2, 2), padding=(1, 1, 1), groups=2)"
    xx = tgrad.tensor(RNG.standard_normal((1, 2, 2, 2, 2)), requires_grad=True)
    w = tgrad.tensor(RNG.standard_normal((2, 1, 2, 1, 2)), requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda a, c: F.conv_transpose3d(a, c, stride=(2, 1, 1), padding=(1, 0, 0),
                                                                    groups=2), (xx, w))
