"""layer_norm's weight / bias gradients in ATen's float32 cpu order (kernels/norm.py layer_norm_param_backward):
tgrad against values PyTorch 2.13 printed at 1 and 2 threads (tests/data/layer_norm_param_ref.npz, made by
tests/data/make_layer_norm_param_ref.py), and against the numpy model (tgrad.testing.aten_moments) on random
shapes whose loops take several steps; the model itself against the printed values."""
import os
import sys

import numpy as np

import tgrad
from tgrad.nn import functional as F
from tgrad.testing import aten_moments as AM

CPU_ONLY = True
DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
sys.path.insert(0, DATA)
from make_layer_norm_param_ref import SHAPES, inputs  # noqa: E402

R = np.load(os.path.join(DATA, "layer_norm_param_ref.npz"))


def _grads(x, g, ns, threads):
    prev = tgrad.get_num_threads()
    tgrad.set_num_threads(threads)
    try:
        dt = tgrad.float64 if x.dtype == np.float64 else tgrad.float32
        w, b = tgrad.ones(ns, dtype=dt, requires_grad=True), tgrad.zeros(ns, dtype=dt, requires_grad=True)
        F.layer_norm(tgrad.tensor(x, requires_grad=True), ns, w, b).backward(tgrad.tensor(g))
        return w.grad.numpy(), b.grad.numpy()
    finally:
        tgrad.set_num_threads(prev)


def test_layer_norm_param_grads_match_pytorch_values():
    for threads in (1, 2):
        for i, s in enumerate(SHAPES):
            x, g = inputs(i, s)
            dw, db = _grads(x, g, s[-2:] if len(s) == 4 else s[-1:], threads)
            np.testing.assert_array_equal(dw, R[f"dw{i}_{threads}"], err_msg=f"{s} {threads}")
            np.testing.assert_array_equal(db, R[f"db{i}_{threads}"], err_msg=f"{s} {threads}")


def test_layer_norm_param_model_matches_pytorch_values():
    for threads in (1, 2):
        for i, s in enumerate(SHAPES):
            x, g = inputs(i, s)
            K = s[-1] * (s[-2] if len(s) == 4 else 1)
            dw, db = AM.layer_norm_param_backward(g.reshape(-1, K), x.reshape(-1, K), threads=threads)
            np.testing.assert_array_equal(dw, R[f"dw{i}_{threads}"].reshape(-1), err_msg=f"{s} {threads}")
            np.testing.assert_array_equal(db, R[f"db{i}_{threads}"].reshape(-1), err_msg=f"{s} {threads}")


def test_layer_norm_param_grads_equal_model_on_random_shapes():
    """Rows around the 8-lane vectors and 16-vector chunks, row counts over several row blocks and thread splits
    (M < threads included), rows wider than one column block (4096)."""
    rng = np.random.default_rng(11)
    for M, K, threads in ((1, 3, 2), (3, 8, 2), (17, 129, 2), (600, 40, 2), (5, 4100, 2), (70, 7, 3), (9, 255, 1)):
        x = (rng.normal(size=(M, K)) * 3 + 1).astype(np.float32)
        g = rng.normal(size=(M, K)).astype(np.float32)
        dw, db = _grads(x, g, (K,), threads)
        mw, mb = AM.layer_norm_param_backward(g, x, threads=threads)
        np.testing.assert_array_equal(dw, mw, err_msg=f"{M} {K} {threads}")
        np.testing.assert_array_equal(db, mb, err_msg=f"{M} {K} {threads}")


def test_layer_norm_param_grads_float64_and_empty():
    rng = np.random.default_rng(12)
    x, g = rng.normal(size=(6, 5)), rng.normal(size=(6, 5))
    dw, db = _grads(x, g, (5,), 2)
    xh = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(dw, (g * xh).sum(0), rtol=1e-12)
    np.testing.assert_allclose(db, g.sum(0), rtol=1e-12)
    dw, db = _grads(np.zeros((0, 4), np.float32), np.zeros((0, 4), np.float32), (4,), 2)
    assert dw.tolist() == [0.0] * 4 and db.tolist() == [0.0] * 4
