"""F.interpolate(mode='bicubic'): PyTorch 2.13's printed values (hard-coded, computed with /work/venv-torch),
a per-element numpy reference of PyTorch's cubic convolution (A = -0.75, taps clamped to the border), gradcheck
and gradgradcheck in float64, PyTorch's error for non-4-D input."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad import nn

X = ((np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4) * np.float32(0.37) - 1) ** 3).astype(np.float32)

# F.interpolate(torch.tensor(X), mode='bicubic', **kw).flatten().tolist() in PyTorch 2.13
TORCH = {
    "size (5, 7)": (dict(size=(5, 7)), [
        -1.1833722591400146, -0.851589024066925, -0.38371041417121887, -0.17287839949131012, -0.198063924908638,
        -0.31082668900489807, -0.4033653736114502, -1.1351977586746216, -1.0051438808441162, -0.8084161281585693,
        -0.6904525756835938, -0.5633706450462341, -0.34421131014823914, -0.19776491820812225, 0.06063329428434372,
        0.20826369524002075, 0.529805064201355, 1.0555837154388428, 1.9974533319473267, 3.342641592025757,
        4.238336563110352, 4.4024505615234375, 5.5614399909973145, 7.628856182098389, 10.146912574768066,
        13.488032341003418, 17.580310821533203, 20.21904182434082, 7.689821720123291, 9.670309066772461,
        13.135665893554688, 17.1922607421875, 22.31705665588379, 28.41034507751465, 32.31129455566406]),
    "align_corners x1.7": (dict(scale_factor=1.7, align_corners=True), [
        -1.0, -0.566135585308075, -0.1375904232263565, -0.04230691120028496, 0.01486685685813427,
        0.001331000472418964, -1.1402299404144287, -1.0399196147918701, -0.908474862575531, -0.8444991111755371,
        -0.5826568603515625, -0.325253963470459, 0.11059201508760452, 0.2889680862426758, 0.821075975894928,
        1.4048629999160767, 2.800722122192383, 4.019680023193359, 3.9241819381713867, 5.176258563995361,
        7.578778266906738, 9.67801284790039, 13.677637100219727, 16.853784561157227, 7.529536247253418,
        9.903217315673828, 14.156730651855469, 17.679819107055664, 24.032203674316406, 28.9344482421875]),
    "size (2, 3)": (dict(size=(2, 3)), [
        -0.9371649026870728, -0.32894518971443176, 0.0019179955124855042, 6.371402740478516, 12.48249626159668,
        22.42111587524414]),
    "scale (2.5, 0.6)": (dict(scale_factor=(2.5, 0.6)), [
        -0.8847719430923462, -0.219710573554039, -0.7542262077331543, 0.012164207175374031, -1.0886300802230835,
        -0.7759094834327698, -0.3972441554069519, 0.5800824165344238, 2.695258617401123, 7.002923965454102,
        6.411884307861328, 14.784700393676758, 9.269872665405273, 20.768428802490234]),
}


@pytest.mark.parametrize("case", list(TORCH))
def test_matches_pytorch(device, case):
    kw, ref = TORCH[case]
    y = F.interpolate(tgrad.tensor(X, device=device), mode="bicubic", **kw)
    np.testing.assert_allclose(y.cpu().numpy().ravel(), ref, rtol=1e-5, atol=1e-5)


def _cubic_ref(x, out, align_corners):
    """out[n, c, i, j] = sum_{a, b} wy_a(i) wx_b(j) x[n, c, clamp(fy(i) - 1 + a), clamp(fx(j) - 1 + b)], float64."""
    A = -0.75

    def weights(t):
        near = lambda v: ((A + 2) * v - (A + 3)) * v * v + 1                 # noqa: E731
        far = lambda v: ((A * v - 5 * A) * v + 8 * A) * v - 4 * A            # noqa: E731
        return [far(t + 1), near(t), near(1 - t), far(2 - t)]

    def src(i, n, m):
        if align_corners:
            return i * (n - 1) / (m - 1) if m > 1 else 0.0
        return (i + 0.5) * n / m - 0.5

    H, W = x.shape[2:]
    y = np.zeros(x.shape[:2] + tuple(out))
    for i in range(out[0]):
        sy = src(i, H, out[0])
        fy = min(int(np.floor(sy)), H - 1)
        wy = weights(min(max(sy - fy, 0), 1))
        for j in range(out[1]):
            sx = src(j, W, out[1])
            fx = min(int(np.floor(sx)), W - 1)
            wx = weights(min(max(sx - fx, 0), 1))
            for a in range(4):
                for b in range(4):
                    y[:, :, i, j] += wy[a] * wx[b] * x[:, :, min(max(fy - 1 + a, 0), H - 1),
                                                       min(max(fx - 1 + b, 0), W - 1)]
    return y


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("out", [(7, 9), (2, 3), (1, 5)])
def test_matches_numpy_reference(device, align_corners, out):
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 4))
    y = F.interpolate(tgrad.tensor(x, device=device), size=out, mode="bicubic", align_corners=align_corners)
    np.testing.assert_allclose(y.cpu().numpy(), _cubic_ref(x, out, align_corners), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("align_corners", [False, True])
def test_gradcheck(device, align_corners):
    x = tgrad.tensor(np.random.default_rng(1).standard_normal((1, 2, 4, 3)), device=device, requires_grad=True)
    fn = lambda t: F.interpolate(t, size=(5, 7), mode="bicubic", align_corners=align_corners)  # noqa: E731
    assert tgrad.autograd.gradcheck(fn, (x,))
    assert tgrad.autograd.gradgradcheck(fn, (x,))


def test_upsample_module_and_errors(device):
    x = tgrad.tensor(X, device=device)
    up = nn.Upsample(scale_factor=1.7, mode="bicubic", align_corners=True)
    np.testing.assert_allclose(up(x).cpu().numpy().ravel(), TORCH["align_corners x1.7"][1], rtol=1e-5, atol=1e-5)
    with pytest.raises(NotImplementedError, match=r"Only 3D, 4D and 5D input Tensors supported \(got 3D\).*"
                                                  r"\(got bicubic\)"):
        F.interpolate(tgrad.zeros(1, 1, 4, device=device), size=3, mode="bicubic")
