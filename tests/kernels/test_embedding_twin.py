"""aten_cpu.c's C twin of kernels/nn.py's embedding_backward_kernel (``nn._embedding_backward_twin``) gives the bits
of the kernel's traced tape (the interpreter's atomic adds, row after row): repeated indices, padding_idx, NaN, inf
and -0.0 gradients, ragged shapes, int32 indices, float64; float16 keeps the tape.  A compiled step's replay calls
it (no builder call at run time)."""

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.kernels import nn as KN
from tgrad.kernels.runtime import native
from tgrad.testing.twins import replayed, run_traced

CPU_ONLY = True
pytestmark = pytest.mark.skipif(native.aten_twin("embedding_backward") is None, reason="no C compiler")


def _case(V, D, shape, dtype, idx_dtype, pad, special):
    rng = np.random.default_rng(V * 100 + D)
    w = tgrad.tensor(rng.standard_normal((V, D)).astype(dtype), requires_grad=True)
    idx = rng.integers(0, min(V, 3) if special else V, shape).astype(idx_dtype)      # (special: many repeats)
    g = (rng.standard_normal(shape + (D,)) * np.exp2(rng.integers(-30, 30, shape + (D,)))).astype(dtype)
    if special:
        g[..., 0, :2] = np.inf
        g[..., -1, -1:] = -np.inf
        g[..., 1, 3:5] = np.nan
        g[..., 2, :] = -0.0
    F.embedding(tgrad.tensor(idx), w, padding_idx=pad).backward(tgrad.tensor(g))
    return w.grad.numpy().tobytes()


def _run(args, twin):
    run, served = run_traced(_case, args, {KN.embedding_backward_kernel: KN._embedding_backward_twin}, twin, ())
    return run, served > 0


CASES = [  # V, D, index shape, dtype, index dtype, padding_idx, special values
    (65, 64, (16, 64), np.float32, np.int64, None, False),
    (10, 7, (33,), np.float32, np.int64, None, True),
    (5, 1, (3, 7), np.float32, np.int32, 2, True),
    (1000, 33, (257,), np.float32, np.int64, -1, False),
    (4, 130, (9, 5), np.float32, np.int64, 0, True),
    (7, 9, (20,), np.float64, np.int64, 3, True),
    (7, 9, (20,), np.float16, np.int64, None, False),
]


@pytest.mark.parametrize("args", CASES)
def test_twin_equals_traced_tape(args):
    got, used = _run(args, True)
    want, unused = _run(args, False)
    assert not unused
    assert used == (args[3] is not np.float16)
    assert got == want


def test_compiled_replay_calls_twin():
    """A compiled embedding step replays the twin (a C call, no interpreter builder) with eager's bits."""
    rng = np.random.default_rng(0)
    data = [tgrad.tensor(rng.integers(0, 9, (6, 5))) for _ in range(5)]

    def run(compiled):
        tgrad.manual_seed(0)
        emb = tgrad.nn.Embedding(9, 4)
        opt = tgrad.optim.SGD(emb.parameters(), lr=0.1)

        def step(x):
            loss = (emb(x) * emb(x[:, :1])).sum()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        f = tgrad.compile(step) if compiled else step
        return [f(x).item() for x in data] + [emb.weight.detach().numpy().tobytes()], f
    want, _ = run(False)
    got, f = run(True)          # (f keeps its replay alive)
    assert got == want
    twin = native.aten_twin("embedding_backward")
    called = replayed(twin)
    assert called
