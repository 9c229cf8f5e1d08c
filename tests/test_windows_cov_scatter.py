"""Window functions, cov/corrcoef, index_copy, *_scatter, isposinf/isneginf, in-place aliases, mH/H/adjoint:
against numpy and values printed by PyTorch 2.13 (the windows: its float32 bits, hard-coded below)."""
import numpy as np
import pytest

import tgrad as torch

CPU_ONLY = True     # composites of ops that the device suites test; the values here are cpu's

# PyTorch 2.13: [f(8), f(7, periodic=False)] for each window, float32 values (exact in JSON)
WINDOWS = {"hann_window": [[0.0, 0.1464466154575348, 0.5, 0.8535534143447876, 1.0, 0.853553295135498, 0.5, 0.14644649624824524], [0.0, 0.25, 0.75, 1.0, 0.7499999403953552, 0.2500000596046448, 0.0]], "hamming_window": [[0.08000001311302185, 0.2147308886051178, 0.5400000214576721, 0.8652691841125488, 1.0, 0.8652690649032593, 0.5400000214576721, 0.21473079919815063], [0.08000001311302185, 0.3100000321865082, 0.7700000405311584, 1.0, 0.7699999809265137, 0.31000006198883057, 0.08000001311302185]], "bartlett_window": [[0.0, 0.25, 0.5, 0.75, 1.0, 0.75, 0.5, 0.25], [0.0, 0.3333333432674408, 0.6666666865348816, 1.0, 0.6666666269302368, 0.33333325386047363, 0.0]], "blackman_window": [[-2.9802322387695312e-08, 0.06644660234451294, 0.3400000035762787, 0.7735533714294434, 1.0, 0.7735532522201538, 0.3399999737739563, 0.06644654273986816], [-2.9802322387695312e-08, 0.12999999523162842, 0.6299999952316284, 1.0, 0.6299999356269836, 0.1300000250339508, -2.9802322387695312e-08]]}


@pytest.mark.parametrize("name", sorted(WINDOWS))
def test_windows_are_pytorchs_bits(name):
    f = getattr(torch, name)
    periodic, symmetric = WINDOWS[name]
    assert f(8).tolist() == periodic and f(7, periodic=False).tolist() == symmetric
    assert f(8).dtype is torch.float32 and f(1).tolist() == [1.0] and f(0).shape == (0,)
    ref = {"hann_window": np.hanning, "hamming_window": np.hamming, "bartlett_window": np.bartlett,
           "blackman_window": np.blackman}[name]
    np.testing.assert_allclose(f(9, periodic=False, dtype=torch.float64).tolist(), ref(9), atol=1e-15)
    with pytest.raises(RuntimeError, match="expects floating point dtypes"):
        f(4, dtype=torch.int64)


def test_cov_and_corrcoef_match_numpy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 7))
    fw, aw = np.array([1, 2, 1, 3, 1, 1, 2]), rng.uniform(size=7)
    t = torch.tensor(x)
    np.testing.assert_allclose(torch.cov(t).tolist(), np.cov(x), rtol=1e-13)
    np.testing.assert_allclose(t.cov(correction=0).tolist(), np.cov(x, ddof=0), rtol=1e-13)
    np.testing.assert_allclose(torch.cov(t, fweights=torch.tensor(fw), aweights=torch.tensor(aw)).tolist(),
                               np.cov(x, fweights=fw, aweights=aw), rtol=1e-13)
    np.testing.assert_allclose(torch.corrcoef(t).tolist(), np.corrcoef(x), rtol=1e-13)
    assert torch.cov(t[0]).item() == pytest.approx(np.cov(x[0]), rel=1e-13)
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        torch.cov(torch.ones(2, 1))
    with pytest.raises(ValueError, match="expected input to have two or fewer dimensions"):
        torch.cov(torch.ones(2, 2, 2))


def test_index_copy_and_scatters():
    src = torch.arange(6.).reshape(2, 3)
    out = torch.zeros(5, 3).index_copy(0, torch.tensor([4, 1]), src)
    ref = np.zeros((5, 3))
    ref[[4, 1]] = np.arange(6.).reshape(2, 3)
    assert out.tolist() == ref.tolist()
    b = torch.zeros(3, 5)
    b.index_copy_(1, torch.tensor([0, 2]), src.t())
    assert b[:, [0, 2]].tolist() == src.t().tolist() and b.sum().item() == 15
    w = torch.zeros(4, 4, requires_grad=True)
    s = torch.ones(4, requires_grad=True)
    y = torch.select_scatter(w, s * 2, 0, 1)
    assert y[1].tolist() == [2.0] * 4 and y.sum().item() == 8
    y.sum().backward()
    g = np.ones((4, 4))
    g[1] = 0
    assert w.grad.tolist() == g.tolist() and s.grad.tolist() == [2.0] * 4
    z = torch.slice_scatter(torch.zeros(4, 6), torch.ones(4, 3), 1, 0, 6, 2)
    assert z.tolist() == [[1.0, 0.0] * 3] * 4
    d = torch.diagonal_scatter(torch.zeros(3, 3), torch.ones(2), 1)
    assert d.tolist() == np.eye(3, k=1).tolist()
    with pytest.raises(RuntimeError, match="expected src to have a size equal to the slice of self"):
        torch.select_scatter(torch.zeros(4, 4), torch.ones(3), 0, 1)


def test_predicates_aliases_and_adjoints():
    t = torch.tensor([1.0, float("inf"), -float("inf"), float("nan")])
    assert torch.isposinf(t).tolist() == [False, True, False, False]
    assert t.isneginf().tolist() == [False, False, True, False] and t.isreal().all().item()
    assert torch.isposinf(torch.tensor([1, 2])).tolist() == [False, False]
    m = torch.arange(6.).reshape(2, 3)
    assert m.mH.tolist() == m.H.tolist() == m.adjoint().tolist() == torch.adjoint(m).tolist() == m.t().tolist()
    with pytest.raises(RuntimeError, match="tensor.H is only supported on matrices"):
        torch.zeros(2, 2, 2).H
    c = torch.ones(3, 3)
    c.addmm_(torch.ones(3, 2), torch.ones(2, 3), beta=0.5, alpha=2)
    assert c.tolist() == [[4.5] * 3] * 3
    c.cumsum_(0)
    assert c[:, 0].tolist() == [4.5, 9.0, 13.5]
    c.divide_(2).multiply_(3).subtract_(7).absolute_()
    assert c[:, 0].tolist() == [0.25, 6.5, 13.25]
    assert torch.ones(3).greater_(torch.tensor([0.0, 1.0, 2.0])).tolist() == [1.0, 0.0, 0.0]
    leaf = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        leaf.cumsum_(0)


def test_channel_shuffle_and_torch_level_functional_names():
    x = torch.arange(8.0).reshape(1, 4, 2)
    # PyTorch 2.13: torch.channel_shuffle(x, 2)
    assert torch.channel_shuffle(x, 2).tolist() == [[[0.0, 1.0], [4.0, 5.0], [2.0, 3.0], [6.0, 7.0]]]
    assert torch.nn.ChannelShuffle(2)(x).tolist() == torch.nn.functional.channel_shuffle(x, 2).tolist()
    assert repr(torch.nn.ChannelShuffle(2)) == "ChannelShuffle(groups=2)"
    with pytest.raises(RuntimeError, match="Number of channels must be divisible by groups. Got 5 channels and 2"):
        torch.channel_shuffle(torch.zeros(1, 5, 2, 2), 2)
    with pytest.raises(RuntimeError, match="channel_shuffle expects input with > 2 dims, but got input with sizes"):
        torch.channel_shuffle(torch.zeros(5), 1)
    F = torch.nn.functional
    for name in ("alpha_dropout", "bilinear", "celu", "conv3d", "conv_transpose3d", "feature_alpha_dropout",
                 "hardshrink", "max_pool3d", "pairwise_distance", "pixel_shuffle", "pixel_unshuffle", "prelu",
                 "rms_norm", "rrelu", "threshold"):
        assert getattr(torch, name) is getattr(F, name), name
    assert torch.threshold(torch.tensor([0.5, 2.0]), 1.0, -1.0).tolist() == [-1.0, 2.0]


def test_sinc_and_ldexp():
    x = torch.tensor([0.0, 0.5, -1.25, 3.0, 1e-20], requires_grad=True)
    y = torch.sinc(x)
    # PyTorch 2.13's float32 bits of torch.sinc(x)
    assert [v.hex() for v in y.tolist()] == ["0x1.0000000000000p+0", "0x1.45f3060000000p-1", "-0x1.70c5040000000p-3",
                                             "-0x1.5bcb660000000p-29", "0x1.0000000000000p+0"]
    y.sum().backward()
    xs = np.array([0.5, -1.25, 3.0])
    ref = (np.pi * xs * np.cos(np.pi * xs) - np.sin(np.pi * xs)) / (np.pi * xs * xs)
    np.testing.assert_allclose(x.grad.tolist()[1:4], ref, rtol=1e-6)
    assert x.grad.tolist()[0] == 0.0 and x.grad.tolist()[4] == 0.0
    assert torch.sinc(torch.tensor([0, 1])).dtype is torch.float32
    assert torch.ldexp(torch.tensor([1.5, -2.0]), torch.tensor([3, -2])).tolist() == [12.0, -0.5]
    t = torch.tensor([1.0, 3.0])
    t.ldexp_(torch.tensor([2, 1]))
    assert t.tolist() == [4.0, 6.0] and torch.sinc_(torch.tensor([0.0])).tolist() == [1.0]


def test_kaiser_window_matches_pytorch():
    """I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta) in the window's dtype, against PyTorch's printed windows
    (tests/data/make_kaiser_ref.py): float32 bit for bit, float64 within 2 ulp; the length-0/1 and periodic
    rules exactly."""
    import os
    ref = np.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "kaiser_ref.npz"))
    for key in ref.files:
        n, rest = key.split("_", 1)
        if rest == "f64":
            got = torch.kaiser_window(int(n), dtype=torch.float64).numpy()
        else:
            periodic, beta = rest.split("_")
            got = torch.kaiser_window(int(n), periodic == "True", float(beta)).numpy()
        want = ref[key]
        assert got.dtype == want.dtype and got.shape == want.shape, key
        if want.size:
            ulps = np.abs(got - want) / np.spacing(np.abs(want))
            assert ulps.max() <= (2 if want.dtype == np.float64 else 0), (key, ulps.max())
    np.testing.assert_array_equal(torch.kaiser_window(7, beta=0.0).numpy(), np.ones(7, np.float32))
    np.testing.assert_array_equal(torch.kaiser_window(8, True).numpy(), torch.kaiser_window(9, False).numpy()[:-1])
    with pytest.raises(RuntimeError, match="kaiser_window expects floating point dtypes"):
        torch.kaiser_window(4, dtype=torch.int64)
    with pytest.raises(RuntimeError, match="kaiser_window requires non-negative window_length"):
        torch.kaiser_window(-1)
