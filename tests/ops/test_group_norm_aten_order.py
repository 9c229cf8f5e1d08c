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
        x, w, b = inputs(i, s)
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
