"""The numpy model of ATen's cpu float32 layer_norm moments (tgrad.testing.aten_moments) against values
PyTorch 2.13 printed (the reference a layer_norm kernel in ATen's order will be tested against)."""
import numpy as np

from tgrad.testing import aten_moments as AM

CPU_ONLY = True


def test_layer_norm_model_matches_pytorch_values():
    """torch.ops.aten.native_layer_norm(x, [200], None, None, 1e-5) printed by PyTorch 2.13 (AVX2 build) for
    x = rng.normal(size=(4, 200)) * 3 + 1 (float32, rng = np.random.default_rng(0)): two chunks, the second
    partial, then the lanes; every value bit for bit."""
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(4, 200)) * 3 + 1).astype(np.float32)
    y, mean, rstd = AM.layer_norm(x)
    assert mean.tolist() == [1.045789361000061, 0.7344906330108643, 1.0153028964996338, 0.8899827599525452]
    assert rstd.tolist() == [0.3467961251735687, 0.3251124918460846, 0.33344894647598267, 0.32982897758483887]
    assert y[:, 0].tolist() == [0.11492870002985, -0.5608503222465515, -0.3656679391860962, -1.1083813905715942]


def test_moments_model_shapes():
    """Rows shorter than a vector (the scalar tail only), one whole chunk, many chunks: close to float64."""
    rng = np.random.default_rng(1)
    for n in (5, 128, 1000, 4100):
        x = rng.normal(size=(3, n)).astype(np.float32) * 2 + 1
        mean, var = AM.rowwise_moments(x)
        np.testing.assert_allclose(mean, x.astype(np.float64).mean(1), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(var, x.astype(np.float64).var(1), rtol=1e-5)


# ------------------------------------------------------------------ the kernels in ATen's order
import tgrad  # noqa: E402
from tgrad.nn import functional as F  # noqa: E402


def test_layer_norm_kernel_matches_pytorch_values():
    """tgrad's float32 layer_norm gives the PyTorch 2.13 values printed above (same x), bit for bit."""
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(4, 200)) * 3 + 1).astype(np.float32)
    y = F.layer_norm(tgrad.tensor(x), (200,)).numpy()
    assert y[:, 0].tolist() == [0.11492870002985, -0.5608503222465515, -0.3656679391860962, -1.1083813905715942]


def test_layer_norm_kernel_equals_model():
    """Row lengths across the cascade's cases (no whole vector, one partial chunk, 2^k chunks, an odd count of
    chunks, a scalar tail), with and without the affine step: every value equal to the model's."""
    rng = np.random.default_rng(2)
    for K in (3, 8, 21, 128, 200, 256, 520, 1000, 2056):
        x = (rng.normal(size=(5, K)) * 2 - 1).astype(np.float32)
        w = rng.normal(size=K).astype(np.float32)
        b = rng.normal(size=K).astype(np.float32)
        for ww, bb in ((None, None), (w, b), (w, None), (None, b)):
            y = F.layer_norm(tgrad.tensor(x), (K,), None if ww is None else tgrad.tensor(ww),
                             None if bb is None else tgrad.tensor(bb)).numpy()
            np.testing.assert_array_equal(y, AM.layer_norm(x, ww, bb)[0])


def _x637():
    rng = np.random.default_rng(0)
    return (rng.normal(size=(6, 37)) * 3 + 1).astype(np.float32)


def test_var_std_match_pytorch_values():
    """Values PyTorch 2.13 printed for this x: std(0), var(1) (double Welford, rounded once), std() and
    var(correction=0) (std_var_all_cpu: the float mean, then double squares)."""
    x = tgrad.tensor(_x637())
    assert x.std(0)[:6].tolist() == [2.625746965408325, 2.605658531188965, 2.631970167160034, 2.302358627319336,
                                     2.655552864074707, 4.412823677062988]
    assert x.var(1).tolist() == [5.375893592834473, 9.874464988708496, 9.844731330871582, 7.940770149230957,
                                 8.193474769592285, 11.144754409790039]
    assert x.std().item() == 2.9562957286834717
    assert x.var(correction=0).item() == 8.700316429138184


def test_var_std_are_float64_rounded_once():
    """Over dims: the float64 variance rounded to float32 (ATen accumulates in double), on many shapes."""
    rng = np.random.default_rng(3)
    for shape in ((7, 3), (40, 9), (3, 300), (5, 4, 6)):
        x = (rng.normal(size=shape) * 3 + 2).astype(np.float32)
        for d in range(len(shape)):
            for c in (0, 1):
                ref = x.astype(np.float64).var(axis=d, ddof=c)
                np.testing.assert_array_equal(tgrad.tensor(x).var(d, correction=c).numpy(), ref.astype(np.float32))
                np.testing.assert_array_equal(tgrad.tensor(x).std(d, correction=c).numpy(),
                                              np.sqrt(ref).astype(np.float32))


def test_std_backward_matches_pytorch_values():
    """d std(0).sum() / dx[:, 0] as PyTorch 2.13 printed it (std_backward then var_backward's order)."""
    x = tgrad.tensor(_x637()).requires_grad_()
    x.std(0).sum().backward()
    assert x.grad[:, 0].tolist() == [-0.03386221453547478, -0.09220992028713226, 0.3537488579750061,
                                     -0.03762126341462135, -0.2462502419948578, 0.05619478598237038]


def _with_threads(n, f):
    prev = tgrad.get_num_threads()
    tgrad.set_num_threads(n)
    try:
        return f()
    finally:
        tgrad.set_num_threads(prev)


def test_batch_norm_matches_pytorch_values():
    """F.batch_norm(training=True) at 2 threads: y[:, 0] and the running statistics PyTorch 2.13 printed, for an
    (N, C) input (per-thread float sums) and an (N, C, L) one (double sums)."""
    rng = np.random.default_rng(1)
    x2 = (rng.normal(size=(10, 5)) * 2 - 1).astype(np.float32)
    w = rng.normal(size=5).astype(np.float32)
    b = rng.normal(size=5).astype(np.float32)
    x3 = (rng.normal(size=(4, 3, 6)) * 2 - 1).astype(np.float32)

    def run():
        rm, rv = tgrad.zeros(5), tgrad.ones(5)
        y = F.batch_norm(tgrad.tensor(x2), rm, rv, tgrad.tensor(w), tgrad.tensor(b), True, 0.1, 1e-5)
        rm3, rv3 = tgrad.zeros(3), tgrad.ones(3)
        y3 = F.batch_norm(tgrad.tensor(x3), rm3, rv3, None, None, True, 0.1, 1e-5)
        return y, rm, rv, y3, rv3

    y, rm, rv, y3, rv3 = _with_threads(2, run)
    assert y[:, 0].tolist() == [-1.0009135007858276, -0.9694232940673828, -1.1000052690505981, -0.9217861890792847,
                                -1.1063413619995117, -1.6990745067596436, -0.44720345735549927, -0.9017226696014404,
                                -1.4923499822616577, -1.079053282737732]
    assert rm.tolist() == [-0.07625221461057663, -0.13705885410308838, -0.13698996603488922, -0.07607606798410416,
                           -0.1097009927034378]
    assert rv.tolist() == [1.3687090873718262, 1.0331497192382812, 1.1535921096801758, 1.2924957275390625,
                           1.3361252546310425]
    assert y3[0, :, 0].tolist() == [0.43822789192199707, 0.14132672548294067, -0.8529528379440308]
    assert rv3.tolist() == [1.100721001625061, 1.4338560104370117, 1.2314159870147705]


def test_batch_norm_equals_model():
    """Training forward and running statistics equal to the model's on (N, C) and (N, C, H, W) shapes, at 1, 2
    and 3 threads."""
    rng = np.random.default_rng(4)
    for shape in ((7, 3), (33, 20), (64, 9), (4, 3, 5), (3, 4, 2, 5)):
        C = shape[1]
        x = (rng.normal(size=shape) * 2 + 1).astype(np.float32)
        w = rng.normal(size=C).astype(np.float32)
        b = rng.normal(size=C).astype(np.float32)
        rm0 = rng.normal(size=C).astype(np.float32)
        rv0 = rng.uniform(0.5, 2, size=C).astype(np.float32)
        for th in (1, 2, 3):
            def run():
                rm, rv = tgrad.tensor(rm0), tgrad.tensor(rv0)
                y = F.batch_norm(tgrad.tensor(x), rm, rv, tgrad.tensor(w), tgrad.tensor(b), True, 0.1, 1e-5)
                return y.numpy(), rm.numpy(), rv.numpy()
            y, rm, rv = _with_threads(th, run)
            ym, rmm, rvm = AM.batch_norm_train(x, w, b, rm0, rv0, threads=th)
            np.testing.assert_array_equal(y, ym)
            np.testing.assert_array_equal(rm, rmm)
            np.testing.assert_array_equal(rv, rvm)
