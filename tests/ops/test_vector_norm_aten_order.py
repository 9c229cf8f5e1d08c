"""float32 2-norms over the last dim (linalg.vector_norm, norm, F.normalize, a full norm of a contiguous tensor)
in ATen's cpu order: against values PyTorch 2.13 printed (tests/data/vector_norm_ref.npz, made by
tests/data/make_vector_norm_ref.py) and the numpy model tgrad.testing.aten_norm."""
import os
import sys

import numpy as np

import tgrad
from tgrad.nn import functional as F
from tgrad.testing.aten_norm import vector_norm2_lastdim

CPU_ONLY = True
DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
sys.path.insert(0, DATA)
from make_vector_norm_ref import inputs  # noqa: E402

R = np.load(os.path.join(DATA, "vector_norm_ref.npz"))
X = inputs()


def test_vector_norm_matches_pytorch_values():
    """Rows shorter than a vector, vectors and tails, 2,500 vectors a row; the full norm of up to 2^16
    elements; bit for bit."""
    for K, x in X.items():
        t = tgrad.tensor(x)
        np.testing.assert_array_equal(tgrad.linalg.vector_norm(t, dim=1).numpy(), R[f"rows{K}"], err_msg=str(K))
        np.testing.assert_array_equal(t.norm(dim=-1).numpy(), R[f"rows{K}"], err_msg=str(K))
        if x.size <= 65536:                 # ATen's order up to 2^16 elements a row (kernels/reduce.py)
            assert tgrad.linalg.vector_norm(t).item() == R[f"full{K}"], K
            assert tgrad.norm(t).item() == R[f"full{K}"], K
        if K <= 100:
            np.testing.assert_array_equal(F.normalize(t, dim=1).numpy(), R[f"normalize{K}"], err_msg=str(K))


def test_model_matches_pytorch_values():
    for K, x in X.items():
        np.testing.assert_array_equal(vector_norm2_lastdim(x), R[f"rows{K}"], err_msg=str(K))
        assert vector_norm2_lastdim(x.reshape(-1)) == R[f"full{K}"], K


def test_long_rows_and_trailing_dims_equal_model():
    """Rows of 2^16 (the longest in ATen's order) and two trailing dims reduced (PyTorch 2.13 gives the model's
    values there too); longer rows keep tgrad's one-pass sum: close to float64."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 65536)).astype(np.float32)
    np.testing.assert_array_equal(tgrad.linalg.vector_norm(tgrad.tensor(x), dim=1).numpy(), vector_norm2_lastdim(x))
    y = rng.normal(size=(3, 4, 50)).astype(np.float32)
    np.testing.assert_array_equal(tgrad.linalg.vector_norm(tgrad.tensor(y), dim=(1, 2)).numpy(),
                                  vector_norm2_lastdim(y.reshape(3, 200)))
    z = rng.normal(size=70000).astype(np.float32)
    np.testing.assert_allclose(tgrad.linalg.vector_norm(tgrad.tensor(z)).item(),
                               np.sqrt((z.astype(np.float64) ** 2).sum()), rtol=1e-6)
