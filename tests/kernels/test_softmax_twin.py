"""aten_cpu.c's C twins of kernels/softmax.py's softmax_kernel and softmax_backward_kernel (``softmax._softmax_twin``:
float32 in ATen's lastdim order) give the bits of the kernels' traced tapes: softmax and log_softmax, forward and
backward, rows shorter than a vector (1 lane), ragged K, K past one BLOCK_K block, strided rows, NaN, inf, -inf rows
and -0.0; a softmax over a non-last dim (ATen's threads' order) and float64 keep the tape."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.kernels import softmax as KS
from tgrad.kernels._lang import row_tiles
from tgrad.kernels.runtime import native
from tgrad.testing.twins import run_traced

CPU_ONLY = True
pytestmark = pytest.mark.skipif(native.aten_twin("softmax_f32") is None, reason="no C compiler")


def _case(M, K, log, dim, dtype, special, strided):
    rng = np.random.default_rng(M * 1000 + K)
    x = (rng.standard_normal((M, K)) * np.exp2(rng.integers(-4, 6, (M, K)))).astype(dtype)
    if special:
        x[rng.random((M, K)) < 0.05] = np.nan
        x[rng.random((M, K)) < 0.05] = np.inf
        x[rng.random((M, K)) < 0.1] = -np.inf
        x[0] = -np.inf
        if M > 1:
            x[1, ::2] = -0.0
            x[1, 1::2] = -3.0
        if M > 2:
            x[2] = 0.0
            x[2, ::3] = -0.0
        if M > 3:
            x[3] = np.nan
    xt = tgrad.tensor(np.ascontiguousarray(x.T)).t() if strided else tgrad.tensor(x)
    xt.requires_grad_(True)
    y = (F.log_softmax if log else F.softmax)(xt, dim)
    g = (rng.standard_normal((M, K)) * np.exp2(rng.integers(-4, 6, (M, K)))).astype(dtype)
    if special:
        g[rng.random((M, K)) < 0.05] = np.nan
        g[:, -1] = -0.0
    y.backward(tgrad.tensor(g))
    return [y.detach().numpy().tobytes(), xt.grad.numpy().tobytes()]


def _run(args, twin):
    return run_traced(_case, args, {KS.softmax_kernel: lambda a, c, g: KS._softmax_twin(a, c, g, False),
                                     KS.softmax_backward_kernel: lambda a, c, g: KS._softmax_twin(a, c, g, True)},
                      twin, (KS._SITES,))


CASES = [  # M, K, log, dim, dtype, special, strided
    (1024, 64, False, 1, np.float32, False, False),
    (1, 1, False, 1, np.float32, False, False),
    (7, 5, False, 1, np.float32, True, False),
    (9, 5, True, 1, np.float32, True, False),
    (33, 17, False, 1, np.float32, True, False),
    (33, 17, True, 1, np.float32, True, True),
    (40, 100, False, 1, np.float32, True, True),
    (5, 70000, False, 1, np.float32, True, False),
    (5, 70000, True, 1, np.float32, True, False),
    (12, 9, False, 0, np.float32, True, False),
    (12, 9, False, 1, np.float64, True, False),
    (2, 5000, False, 1, np.float32, True, False),
    (2, 5000, True, 1, np.float32, True, True),
    (1, 64, False, 1, np.float32, True, False),
    (3000, 32, False, 1, np.float32, True, False),      # (rows in batches of the twin's scratch)
    (3000, 24, True, 1, np.float32, True, False),
]


@pytest.mark.parametrize("args", CASES)
def test_twin_equals_traced_tape(args):
    got, used = _run(args, True)
    want, unused = _run(args, False)
    assert not unused
    rows, _ = row_tiles(args[0], args[1], "cpu")
    assert used == (0 if args[3] != 1 or args[4] is not np.float32 or rows < 2 else 1 if args[2] else 2)
    assert got == want
