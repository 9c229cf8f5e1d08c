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
