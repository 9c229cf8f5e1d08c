"""group_norm's float32 cpu forward in ATen's order (kernels/norm.py group_norm_kernel, ATEN): tgrad against
values PyTorch 2.13 printed (tests/data/group_norm_ref.npz, made by tests/data/make_group_norm_ref.py) and
against the numpy model (tgrad.testing.aten_moments.group_norm) on groups of several 16-vector chunks."""
import os
import sys

import numpy as np

import tgrad
from tgrad.nn import functional as F
from tgrad.testing import aten_moments as AM

CPU_ONLY = True
DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
sys.path.insert(0, DATA)
from make_group_norm_ref import CASES, MODES, inputs  # noqa: E402

R = np.load(os.path.join(DATA, "group_norm_ref.npz"))


def _gn(x, G, w, b):
    return F.group_norm(tgrad.tensor(x), G, None if w is None else tgrad.tensor(w),
                        None if b is None else tgrad.tensor(b)).numpy()


def test_group_norm_matches_pytorch_values():
    for i, (s, G) in enumerate(CASES):
        x, w, b, _ = inputs(i, s)
        for mode in MODES:
            wm, bm = (w if "w" in mode else None), (b if "b" in mode else None)
            np.testing.assert_array_equal(_gn(x, G, wm, bm), R[f"y{i}_{mode}"], err_msg=f"{s} {G} {mode}")
            np.testing.assert_array_equal(AM.group_norm(x, G, wm, bm), R[f"y{i}_{mode}"], err_msg=f"model {s}")


def test_group_norm_equals_model_on_longer_groups():
    rng = np.random.default_rng(21)
    for s, G in (((2, 4, 300), 2), ((1, 3, 7, 129), 3), ((3, 2, 1), 1)):
        x = (rng.normal(size=s) * 3 - 1).astype(np.float32)
        w, b = rng.normal(size=s[1]).astype(np.float32), rng.normal(size=s[1]).astype(np.float32)
        for wm, bm in ((w, b), (None, None), (None, b)):
            np.testing.assert_array_equal(_gn(x, G, wm, bm), AM.group_norm(x, G, wm, bm), err_msg=str(s))


def test_group_norm_param_grads_model_matches_pytorch_values():
    for i, (s, G) in enumerate(CASES):
        x, w, b, g = inputs(i, s)
        dw, db = AM.group_norm_param_backward(g, x, G)
        np.testing.assert_array_equal(dw, R[f"dw{i}"], err_msg=f"{s} {G}")
        np.testing.assert_array_equal(db, R[f"db{i}"], err_msg=f"{s} {G}")


def _gn_grads(x, g, G):
    C = x.shape[1]
    w, b = tgrad.ones(C, requires_grad=True), tgrad.zeros(C, requires_grad=True)
    F.group_norm(tgrad.tensor(x, requires_grad=True), G, w, b).backward(tgrad.tensor(g))
    return w.grad.numpy(), b.grad.numpy()


def test_group_norm_param_grads_match_pytorch_values():
    for i, (s, G) in enumerate(CASES):
        x, _, _, g = inputs(i, s)
        dw, db = _gn_grads(x, g, G)
        np.testing.assert_array_equal(dw, R[f"dw{i}"], err_msg=f"{s} {G}")
        np.testing.assert_array_equal(db, R[f"db{i}"], err_msg=f"{s} {G}")


def test_group_norm_param_grads_equal_model_on_random_shapes():
    """Planes of 1 .. 7 (left to right), 8, 9 .. 300 (vectors, a padded tail), several samples."""
    rng = np.random.default_rng(22)
    for s, G in (((3, 4, 7), 2), ((2, 6, 8), 3), ((4, 4, 9), 1), ((2, 4, 300), 2), ((1, 3, 7, 5), 3), ((5, 2), 1)):
        x = (rng.normal(size=s) * 3 - 1).astype(np.float32)
        g = rng.normal(size=s).astype(np.float32)
        dw, db = _gn_grads(x, g, G)
        mw, mb = AM.group_norm_param_backward(g, x, G)
        np.testing.assert_array_equal(dw, mw, err_msg=str(s))
        np.testing.assert_array_equal(db, mb, err_msg=str(s))
