"""F.interpolate / nn.Upsample: PyTorch 2.13's printed values (hard-coded, computed with /work/venv-torch),
a numpy nearest reference, gradients by finite differences, PyTorch's errors and reprs."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad import nn

X = ((np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4) * np.float32(0.37) - 1) ** 3).astype(np.float32)

# F.interpolate(x, ...).flatten().tolist() in PyTorch 2.13 for x = (arange(12).reshape(1, 1, 3, 4) * 0.37 - 1) ** 3
TORCH = {
    "bilinear size (5, 7)": (dict(size=(5, 7), mode="bilinear"), [
        -1.0, -0.7321596145629883, -0.3036150336265564, -0.13381147384643555, -0.01622549444437027,
        -0.005421495530754328, 0.001331000472418964, -0.5557631850242615, -0.3231256306171417, 0.04909435659646988,
        0.40570783615112305, 0.7795708179473877, 1.2897863388061523, 1.6086708307266235, 0.11059200763702393,
        0.29042524099349976, 0.5781583786010742, 1.2149866819381714, 1.9732651710510254, 3.232597589492798,
        4.019680023193359, 4.561959743499756, 5.730993270874023, 7.601447105407715, 10.185698509216309,
        12.995601654052734, 16.6712589263916, 18.968544006347656, 7.529536724090576, 9.358036994934082,
        12.283636093139648, 16.166170120239258, 20.343822479248047, 25.630361557006836, 28.9344482421875]),
    "bilinear align_corners x1.7": (dict(scale_factor=1.7, mode="bilinear", align_corners=True), [
        -1.0, -0.5500282049179077, -0.20355278253555298, -0.06407018005847931, -0.010013196617364883,
        0.001331000472418964, -0.44470399618148804, -0.06865820288658142, 0.32545846700668335, 0.7557166814804077,
        1.3436839580535889, 2.010505437850952, 0.11059200763702393, 0.41271182894706726, 0.8544696569442749,
        1.5755034685134888, 2.697381019592285, 4.019680023193359, 3.8200643062591553, 5.507064342498779,
        7.455269813537598, 9.925886154174805, 13.040481567382812, 16.47706413269043, 7.529536724090576,
        10.60141658782959, 14.056069374084473, 18.276269912719727, 23.383581161499023, 28.9344482421875]),
    "nearest-exact size (2, 5)": (dict(size=(2, 5), mode="nearest-exact"), [
        -1.0, -0.2500469982624054, -0.017575997859239578, -0.017575997859239578, 0.001331000472418964,
        7.529536724090576, 12.649335861206055, 19.683002471923828, 19.683002471923828, 28.9344482421875]),
    "area size (2, 2)": (dict(size=(2, 2), mode="area"), [
        -0.13133248686790466, 1.4548207521438599, 5.225897312164307, 13.613245010375977]),
}


@pytest.mark.parametrize("case", list(TORCH))
def test_matches_pytorch(device, case):
    kw, ref = TORCH[case]
    y = F.interpolate(tgrad.tensor(X, device=device), **kw)
    np.testing.assert_allclose(y.flatten().tolist(), ref, rtol=2e-6, atol=1e-7)


def test_linear_recompute_scale_factor_matches_pytorch():
    y = F.interpolate(tgrad.tensor(X[:, :, 0]), scale_factor=2.5, mode="linear", recompute_scale_factor=True)
    ref = [-1.0, -0.9250046610832214, -0.6250234842300415, -0.3250422775745392, -0.18030567467212677,
           -0.08731728792190552, -0.015685295686125755, -0.008122499100863934, -0.0005596976261585951,
           0.001331000472418964]
    np.testing.assert_allclose(y.flatten().tolist(), ref, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("kw,rows,cols", [(dict(scale_factor=2), [0, 0, 1, 1, 2, 2], [0, 0, 1, 1, 2, 2, 3, 3]),
                                          (dict(scale_factor=(2, 1.5)), [0, 0, 1, 1, 2, 2], [0, 0, 1, 2, 2, 3]),
                                          (dict(size=(2, 3)), [0, 1], [0, 1, 2])])
def test_nearest_is_a_gather(device, kw, rows, cols):
    y = F.interpolate(tgrad.tensor(X, device=device), **kw)
    np.testing.assert_array_equal(y.cpu().numpy(), X[:, :, rows][:, :, :, cols])
    np.testing.assert_array_equal(nn.Upsample(**kw)(tgrad.tensor(X, device=device)).cpu().numpy(),
                                  X[:, :, rows][:, :, :, cols])


@pytest.mark.parametrize("kw", [dict(size=(4, 5), mode="bilinear"), dict(scale_factor=2, mode="bilinear",
                                                                         align_corners=True),
                                dict(scale_factor=2, mode="nearest"), dict(size=(2, 3, 4), mode="trilinear")])
def test_gradients(kw):
    shape = (1, 2, 2, 3, 2) if kw["mode"] == "trilinear" else (1, 2, 3, 2)
    x = tgrad.tensor(np.random.default_rng(0).standard_normal(shape), requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda t: F.interpolate(t, **kw), (x,))


@pytest.mark.parametrize("call,err,msg", [
    (lambda x: F.interpolate(x), ValueError, "either size or scale_factor should be defined"),
    (lambda x: F.interpolate(x, size=3, scale_factor=2), ValueError, "only one of size or scale_factor should be defined"),
    (lambda x: F.interpolate(x, size=3, align_corners=True), ValueError,
     "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear"),
    (lambda x: F.interpolate(x, size=3, mode="linear"), NotImplementedError, "Got 4D input, but linear mode needs 3D input"),
    (lambda x: F.interpolate(x, size=3, mode="foo"), NotImplementedError,
     "Input Error: Only 3D, 4D and 5D input Tensors supported (got 4D) for the modes: nearest | linear | bilinear | "
     "bicubic | trilinear | lanczos | area | nearest-exact (got foo)"),
    (lambda x: F.interpolate(x, size=(3, 3, 3)), ValueError,
     "Input and output must have the same number of spatial dimensions, but got input with spatial dimensions of "
     "[4, 4] and output size of (3, 3, 3)."),
    (lambda x: F.interpolate(x[0, 0], size=3), NotImplementedError,
     "Input Error: Only 3D, 4D and 5D input Tensors supported (got 2D)"),
])
def test_errors(call, err, msg):
    with pytest.raises(err) as e:
        call(tgrad.zeros(1, 1, 4, 4))
    assert str(e.value).startswith(msg)


def test_module_reprs():
    # as PyTorch 2.13 prints them
    assert repr(nn.Upsample(scale_factor=2, mode="nearest")) == "Upsample(scale_factor=2.0, mode='nearest')"
    assert repr(nn.Upsample(size=(3, 4), mode="bilinear", align_corners=True)) == "Upsample(size=(3, 4), mode='bilinear')"
    assert repr(nn.UpsamplingNearest2d(scale_factor=2)) == "UpsamplingNearest2d(scale_factor=2.0, mode='nearest')"
    assert repr(nn.UpsamplingBilinear2d(size=3)) == "UpsamplingBilinear2d(size=3, mode='bilinear')"
    y = nn.UpsamplingBilinear2d(scale_factor=1.7)(tgrad.tensor(X))
    np.testing.assert_allclose(y.flatten().tolist(), TORCH["bilinear align_corners x1.7"][1], rtol=2e-6, atol=1e-7)
