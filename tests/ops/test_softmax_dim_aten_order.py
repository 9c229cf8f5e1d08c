"""float32 softmax / log_softmax over a dim that is not the last, in ATen's cpu order: tgrad's kernels and the
numpy model tgrad.testing.aten_softmax_dim against values PyTorch 2.13 printed at 2 threads
(tests/data/softmax_dim_ref.npz, made by tests/data/make_softmax_dim_ref.py)."""
import os
import sys

import numpy as np

import tgrad
from tgrad.testing.aten_softmax_dim import softmax_dim

CPU_ONLY = True
DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
sys.path.insert(0, DATA)
from make_softmax_dim_ref import CASES, inputs  # noqa: E402

R = np.load(os.path.join(DATA, "softmax_dim_ref.npz"))


def test_softmax_over_a_dim_matches_pytorch_values():
    prev = tgrad.get_num_threads()
    tgrad.set_num_threads(2)
    try:
        for i, (x, (shape, dim)) in enumerate(zip(inputs(), CASES)):
            t = tgrad.tensor(x)
            np.testing.assert_array_equal(tgrad.softmax(t, dim=dim).numpy(), R[f"softmax{i}"], err_msg=str(shape))
            np.testing.assert_array_equal(t.log_softmax(dim).numpy(), R[f"log_softmax{i}"], err_msg=str(shape))
    finally:
        tgrad.set_num_threads(prev)


def test_model_matches_pytorch_values():
    for i, (x, (shape, dim)) in enumerate(zip(inputs(), CASES)):
        o = int(np.prod(shape[:dim]))
        x3 = x.reshape(o, shape[dim], -1)
        for log, name in ((False, "softmax"), (True, "log_softmax")):
            np.testing.assert_array_equal(softmax_dim(x3, log).reshape(shape), R[f"{name}{i}"], err_msg=str(shape))


def test_one_thread_and_long_dims_equal_model():
    """One thread (whole inner rows in vectors, no chunk split) and a dim longer than one block of columns."""
    rng = np.random.default_rng(3)
    prev = tgrad.get_num_threads()
    try:
        for th, shape in ((1, (3, 5, 12)), (3, (2, 5, 11)), (2, (1, 70000, 2))):
            tgrad.set_num_threads(th)
            x = (rng.normal(size=shape) * 2).astype(np.float32)
            np.testing.assert_array_equal(tgrad.softmax(tgrad.tensor(x), dim=1).numpy(),
                                          softmax_dim(x, False, th), err_msg=f"{th} {shape}")
            np.testing.assert_array_equal(tgrad.log_softmax(tgrad.tensor(x), dim=1).numpy(),
                                          softmax_dim(x, True, th), err_msg=f"{th} {shape}")
    finally:
        tgrad.set_num_threads(prev)
