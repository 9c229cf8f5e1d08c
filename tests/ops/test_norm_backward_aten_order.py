"""batch_norm's and layer_norm's float32 cpu backward in ATen's order: tgrad's kernels against values PyTorch 2.13
printed (tests/data/norm_backward_ref.npz, made by tests/data/make_norm_backward_ref.py at 2 threads) and against
the numpy models (tgrad.testing.aten_moments) on shapes whose loops take several steps."""
import os
import sys

import numpy as np

import tgrad
from tgrad.kernels import norm as KN
from tgrad.nn import functional as F
from tgrad.testing import aten_moments as AM

CPU_ONLY = True
DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
sys.path.insert(0, DATA)
from make_norm_backward_ref import BN_SHAPES, LN_KS, bn_inputs, ln_inputs  # noqa: E402

R = np.load(os.path.join(DATA, "norm_backward_ref.npz"))


def _threads(n):
    prev = tgrad.get_num_threads()
    tgrad.set_num_threads(n)
    return prev


def _bn_grads(x, g, w, b, rm, rv, training):
    xt = tgrad.tensor(x, requires_grad=True)
    wt = tgrad.tensor(w, requires_grad=True) if w is not None else None
    bt = tgrad.tensor(b, requires_grad=True) if b is not None else None
    F.batch_norm(xt, tgrad.tensor(rm), tgrad.tensor(rv), wt, bt, training=training).backward(tgrad.tensor(g))
    return xt.grad.numpy(), wt.grad.numpy() if wt is not None else None, bt.grad.numpy() if bt is not None else None


def test_batch_norm_backward_matches_pytorch_values():
    """(N, C) inputs (8-wide columns and a tail), (N, C, L) planes (L < 8, tails), training and eval, with and
    without weight: dx, dw, db bit for bit (the other shapes: the model's test below)."""
    prev = _threads(2)
    try:
        for i in (1, 3, 7, 12, 13):
            x, g, w, b, rm, rv = bn_inputs(i, BN_SHAPES[i])
            for training, hw in ((True, True), (False, True), (True, False)):
                k = f"bn{i}_{int(training)}{int(hw)}"
                dx, dw, db = _bn_grads(x, g, w if hw else None, b if hw else None, rm, rv, training)
                if training:
                    np.testing.assert_array_equal(dx, R["dx_" + k], err_msg=k)
                if hw:
                    np.testing.assert_array_equal(dw, R["dw_" + k], err_msg=k)
                    np.testing.assert_array_equal(db, R["db_" + k], err_msg=k)
    finally:
        tgrad.set_num_threads(prev)


def test_batch_norm_backward_model_matches_pytorch_values():
    for i, s in enumerate(BN_SHAPES):
        x, g, w, b, rm, rv = bn_inputs(i, s)
        for training in (True, False):
            k = f"bn{i}_{int(training)}1"
            dx, dw, db = AM.batch_norm_backward(g, x, w, rm, rv, training, threads=2)
            if training:
                np.testing.assert_array_equal(dx, R["dx_" + k], err_msg=k)
            np.testing.assert_array_equal(dw, R["dw_" + k], err_msg=k)
            np.testing.assert_array_equal(db, R["db_" + k], err_msg=k)


def test_batch_norm_backward_equals_model_on_longer_loops(monkeypatch):
    """Tiles of 4 vectors (KN.VEC_BUDGET): planes over several steps of vectors and of planes, (N, C) over 1 and
    3 threads."""
    monkeypatch.setattr(KN, "VEC_BUDGET", 4)
    rng = np.random.default_rng(5)
    cases = [((3, 1, 70), 2), ((7, 2, 12), 2), ((30, 20), 3), ((45, 11), 1)]
    for shape, th in cases:
        x = (rng.normal(size=shape) * 3 + 1).astype(np.float32)
        g = rng.normal(size=shape).astype(np.float32)
        C = shape[1]
        w = rng.normal(size=C).astype(np.float32)
        prev = _threads(th)
        try:
            dx, dw, db = _bn_grads(x, g, w, np.zeros(C, np.float32), np.zeros(C, np.float32),
                                   np.ones(C, np.float32), True)
        finally:
            tgrad.set_num_threads(prev)
        mx, mw, mb = AM.batch_norm_backward(g, x, w, training=True, threads=th)
        np.testing.assert_array_equal(dx, mx, err_msg=str(shape))
        np.testing.assert_array_equal(dw, mw, err_msg=str(shape))
        np.testing.assert_array_equal(db, mb, err_msg=str(shape))


def test_layer_norm_backward_dx_matches_pytorch_values():
    """dx for rows of 5 .. 200 (no whole vector, tails, several vectors), with and without weight / bias, and
    the forward with a bias but no weight: bit for bit (all of LN_KS: the model's test below)."""
    for K in (5, 13, 37, 200):
        x, g, w, b = ln_inputs(K)
        for mode in ("wb", "w", "b", "none"):
            xt = tgrad.tensor(x, requires_grad=True)
            wt = tgrad.tensor(w) if "w" in mode else None
            bt = tgrad.tensor(b) if "b" in mode else None
            y = F.layer_norm(xt, (K,), wt, bt)
            y.backward(tgrad.tensor(g))
            k = f"ln{K}_{mode}"
            np.testing.assert_array_equal(xt.grad.numpy(), R["dx_" + k], err_msg=k)
            if mode == "b":
                np.testing.assert_array_equal(y.detach().numpy(), R["y_" + k], err_msg=k)


def test_layer_norm_backward_dx_model_matches_pytorch_values():
    for K in LN_KS:
        x, g, w, b = ln_inputs(K)
        for mode in ("w", "none"):
            dx = AM.layer_norm_backward(g, x, w if mode == "w" else None)
            np.testing.assert_array_equal(dx, R[f"dx_ln{K}_{mode}"], err_msg=f"{K} {mode}")


def test_layer_norm_backward_dx_equals_model_on_longer_rows(monkeypatch):
    """Rows of 2056 over several programs; rows of 77 in steps of 2 vectors (KN.VEC_BUDGET)."""
    rng = np.random.default_rng(6)
    for M, K, budget in ((40, 2056, KN.VEC_BUDGET), (5, 77, 16)):
        monkeypatch.setattr(KN, "VEC_BUDGET", budget)
        x = (rng.normal(size=(M, K)) * 2 + 1).astype(np.float32)
        g = rng.normal(size=(M, K)).astype(np.float32)
        w = rng.normal(size=K).astype(np.float32)
        xt = tgrad.tensor(x, requires_grad=True)
        F.layer_norm(xt, (K,), tgrad.tensor(w)).backward(tgrad.tensor(g))
        np.testing.assert_array_equal(xt.grad.numpy(), AM.layer_norm_backward(g, x, w), err_msg=str(K))
