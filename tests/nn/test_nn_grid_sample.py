"""F.affine_grid / F.grid_sample (4-D; bilinear / nearest; zeros / border / reflection; align_corners both
ways): PyTorch 2.13's printed values and gradients (hard-coded, computed with /work/venv-torch), a per-element
numpy reference of PyTorch's formulas, gradcheck / gradgradcheck in float64 for input, grid and theta, errors."""
import warnings

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F

THETA = [[[0.9, -0.3, 0.1], [0.2, 1.1, -0.2]], [[-1.2, 0.4, 0.3], [0.5, 0.7, 0.05]]]

# PyTorch 2.13: F.affine_grid(theta, (2, 3, 4, 5), align_corners=ac): first 8 values and the sum
TORCH_AFFINE = {
    False: ([-0.3949999511241913, -1.1850000619888306, -0.03499997407197952, -1.1050000190734863,
             0.32500001788139343, -1.0250000953674316, 0.6850000023841858, -0.9450000524520874], 5.000000476837158),
    True: ([-0.4999999701976776, -1.5000001192092896, -0.04999997466802597, -1.4000000953674316, 0.4000000059604645,
            -1.3000000715255737, 0.8500000238418579, -1.2000000476837158], 5.0),
}
# PyTorch 2.13: F.grid_sample(sin(arange(120)).reshape(2, 3, 4, 5), affine_grid(theta, (2, 3, 6, 7), False) * 1.3,
# mode, padding_mode, align_corners): the sum and the first 5 values
TORCH_SAMPLE = {
    ("bilinear", "zeros", False): (2.245744228363037, [0.0, 0.0, 0.0, 0.0, 0.0]),
    ("bilinear", "zeros", True): (2.0926661491394043, [0.0, 0.08771803975105286, 0.1527814418077469,
                                                       0.06780761480331421, -0.16419517993927002]),
    ("bilinear", "border", False): (7.440210342407227, [0.5304271578788757, 0.8730829358100891, 0.6774724125862122,
                                                        0.017655830830335617, -0.7327508926391602]),
    ("bilinear", "border", True): (6.731033802032471, [0.7609301209449768, 0.8803257942199707, 0.7238374352455139,
                                                       0.21025608479976654, -0.37839218974113464]),
    ("bilinear", "reflection", False): (2.4822545051574707, [-0.370428204536438, 0.37149420380592346,
                                                             0.7215250134468079, 0.3775629699230194,
                                                             -0.43714264035224915]),
    ("bilinear", "reflection", True): (-0.05288362503051758, [-0.3516659736633301, 0.3191181719303131,
                                                              0.7344037294387817, 0.7178313732147217,
                                                              0.20679892599582672]),
    ("nearest", "zeros", False): (-0.3626246452331543, [0.0, 0.0, 0.0, 0.0, 0.0]),
    ("nearest", "zeros", True): (9.798370361328125, [0.0, 0.0, 0.0, 0.0, 0.0]),
    ("nearest", "border", False): (10.92219352722168, [0.8414709568023682, 0.8414709568023682, 0.9092974066734314,
                                                       0.14112000167369843, -0.756802499294281]),
    ("nearest", "border", True): (13.411009788513184, [0.8414709568023682, 0.9092974066734314, 0.9092974066734314,
                                                       0.14112000167369843, -0.756802499294281]),
    ("nearest", "reflection", False): (3.735067844390869, [-0.279415488243103, -0.279415488243103,
                                                           0.6569865942001343, 0.14112000167369843,
                                                           -0.756802499294281]),
    ("nearest", "reflection", True): (3.464040756225586, [-0.279415488243103, 0.6569865942001343, 0.6569865942001343,
                                                          0.9893582463264465, 0.41211849451065063]),
}


def _x(device, dtype=tgrad.float32):
    return tgrad.arange(2 * 3 * 4 * 5, dtype=dtype, device=device).sin().reshape(2, 3, 4, 5)


@pytest.mark.parametrize("ac", [False, True])
def test_affine_grid_matches_pytorch(device, ac):
    g = F.affine_grid(tgrad.tensor(THETA, device=device), (2, 3, 4, 5), align_corners=ac)
    first, total = TORCH_AFFINE[ac]
    assert g.shape == (2, 4, 5, 2)
    np.testing.assert_allclose(g.flatten().cpu().numpy()[:8], first, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(float(g.sum()), total, rtol=1e-5)


@pytest.mark.parametrize("case", list(TORCH_SAMPLE))
def test_grid_sample_matches_pytorch(device, case):
    mode, pm, ac = case
    g = F.affine_grid(tgrad.tensor(THETA, device=device), (2, 3, 6, 7), align_corners=False) * 1.3
    y = F.grid_sample(_x(device), g, mode=mode, padding_mode=pm, align_corners=ac)
    total, first = TORCH_SAMPLE[case]
    assert y.shape == (2, 3, 6, 7)
    np.testing.assert_allclose(float(y.sum()), total, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y.flatten().cpu().numpy()[:5], first, rtol=1e-5, atol=1e-6)


def test_grid_sample_gradients_match_pytorch(device):
    th = tgrad.tensor(THETA, device=device, requires_grad=True)
    x = _x(device).requires_grad_()
    y = F.grid_sample(x, F.affine_grid(th, (2, 3, 6, 7), align_corners=False) * 1.3, padding_mode="reflection",
                      align_corners=True)
    (y * tgrad.arange(y.numel(), dtype=tgrad.float32, device=device).cos().reshape(y.shape)).sum().backward()
    # PyTorch 2.13's x.grad (first 8, sum) and theta.grad
    np.testing.assert_allclose(x.grad.flatten().cpu().numpy()[:8],
                               [0.2375648021697998, -0.13617056608200073, -1.520778775215149, 0.10855620354413986,
                                0.8420868515968323, -0.5032152533531189, -0.1829269379377365, -0.5845122933387756],
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(x.grad.sum()), 0.6791019439697266, rtol=1e-5)
    np.testing.assert_allclose(th.grad.flatten().cpu().numpy(),
                               [5.030544757843018, -11.260204315185547, 5.729419708251953, 6.657792091369629,
                                -10.355293273925781, 3.738593339920044, 4.819268226623535, -19.281105041503906,
                                -33.85139083862305, 0.0959315299987793, -2.1046090126037598, -2.6357336044311523],
                               rtol=1e-4, atol=1e-4)


def _sample_ref(x, grid, mode, pm, ac):
    """PyTorch's grid_sampler_2d per output element, float64 numpy."""
    n, c, h, w = x.shape

    def coord(g, size):
        v = (g + 1) * (size - 1) / 2 if ac else (g + 1) * size / 2 - 0.5
        if pm == "reflection":
            lo, hi = (0, 2 * (size - 1)) if ac else (-1, 2 * size - 1)
            if lo == hi:
                return 0.0
            mn, span = lo / 2, (hi - lo) / 2
            a = abs(v - mn)
            extra, flips = a % span, np.floor(a / span)
            v = extra + mn if flips % 2 == 0 else span - extra + mn
        return min(max(v, 0), size - 1) if pm != "zeros" else v

    def at(b, iy, ix):
        return x[b, :, iy, ix] if 0 <= ix < w and 0 <= iy < h else np.zeros(c)
    out = np.zeros((n, c) + grid.shape[1:3])
    for b, i, j in np.ndindex(n, *grid.shape[1:3]):
        ix, iy = coord(grid[b, i, j, 0], w), coord(grid[b, i, j, 1], h)
        if mode == "nearest":
            out[b, :, i, j] = at(b, int(np.rint(iy)), int(np.rint(ix)))
            continue
        x0, y0 = int(np.floor(ix)), int(np.floor(iy))
        we, sn = ix - x0, iy - y0
        out[b, :, i, j] = (at(b, y0, x0) * (1 - sn) * (1 - we) + at(b, y0, x0 + 1) * (1 - sn) * we +
                           at(b, y0 + 1, x0) * sn * (1 - we) + at(b, y0 + 1, x0 + 1) * sn * we)
    return out


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("pm", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("ac", [False, True])
def test_grid_sample_numpy(device, mode, pm, ac):
    rng = np.random.default_rng(3)
    x, grid = rng.standard_normal((2, 2, 3, 4)), rng.uniform(-2.5, 2.5, (2, 5, 3, 2))
    y = F.grid_sample(tgrad.tensor(x, device=device), tgrad.tensor(grid, device=device), mode=mode, padding_mode=pm,
                      align_corners=ac)
    np.testing.assert_allclose(y.cpu().numpy(), _sample_ref(x, grid, mode, pm, ac), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("pm", ["zeros", "border", "reflection"])
def test_gradcheck(device, pm):
    rng = np.random.default_rng(4)
    x = tgrad.tensor(rng.standard_normal((1, 1, 3, 4)), device=device, requires_grad=True)
    grid = tgrad.tensor(rng.uniform(-1.6, 1.6, (1, 2, 2, 2)), device=device, requires_grad=True)
    fn = lambda a, b: F.grid_sample(a, b, padding_mode=pm, align_corners=False)  # noqa: E731
    assert tgrad.autograd.gradcheck(fn, (x, grid))
    if pm == "zeros":       # (double backward through the same ops for every padding mode; one keeps it quick)
        assert tgrad.autograd.gradgradcheck(fn, (x[:, :1, :2], grid[:, :2, :1]))
        th = tgrad.tensor(rng.standard_normal((2, 2, 3)), device=device, requires_grad=True)
        assert tgrad.autograd.gradcheck(lambda t: F.affine_grid(t, (2, 1, 3, 4), align_corners=True), (th,))


def test_errors_and_warning(device):
    x, th = _x(device), tgrad.tensor(THETA, device=device)
    g = F.affine_grid(th, (2, 3, 6, 7), align_corners=False)
    with pytest.raises(ValueError, match=r"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                                         r"\(2, 3, 4, 5\)\. Got tgrad\.Size\(\[2, 1, 3\]\)\."):
        F.affine_grid(th[:, :1], (2, 3, 4, 5), align_corners=False)
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: 'foo'"):
        F.grid_sample(x, g, mode="foo", align_corners=False)
    with pytest.raises(ValueError, match="expected padding_mode to be 'zeros', 'border', or 'reflection', but got: "
                                         "'foo'"):
        F.grid_sample(x, g, padding_mode="foo", align_corners=False)
    with pytest.raises(RuntimeError, match=r"expected grid to have size 2 in last dimension, but got grid with sizes "
                                           r"\[2, 6, 7, 1\]"):
        F.grid_sample(x, g[..., :1], align_corners=False)
    with pytest.raises(RuntimeError, match="expected grid and input to have same batch size"):
        F.grid_sample(x, g[:1], align_corners=False)
    with pytest.raises(ValueError, match="Expected theta to have floating point type, but got tgrad.int64"):
        F.affine_grid(th.long(), (2, 3, 4, 5), align_corners=False)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        F.grid_sample(x, g)
        F.affine_grid(th, (2, 3, 4, 5))
    assert [str(m.message).startswith("Default grid_sample and affine_grid behavior has changed") for m in w] == \
        [True, True]
