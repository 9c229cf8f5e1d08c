"""aten_cpu.c's one-pass C twin of kernels/nn.py's dropout_kernel on the cpu generator's mt19937 words
(``nn._dropout_twin``) gives the bits of the kernel's traced tape: y, the mask and the gradient, ragged sizes,
NaN, inf and -0.0 inputs, several p; float64 keeps the tape.  A compiled step's replay calls it."""

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.kernels import nn as KN
from tgrad.kernels.runtime import native
from tgrad.testing.twins import replayed, run_traced

CPU_ONLY = True
pytestmark = pytest.mark.skipif(native.aten_twin("dropout_words_f32") is None, reason="no C compiler")


def _case(n, p, dtype, special):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-30, 30, n))).astype(dtype)
    if special:
        x[::7] = np.nan
        x[1::7] = np.inf
        x[2::7] = -np.inf
        x[3::7] = -0.0
    tgrad.manual_seed(n)
    xt = tgrad.tensor(x, requires_grad=True)
    y = F.dropout(xt, p=p, training=True)
    y.backward(tgrad.tensor(rng.standard_normal(n).astype(dtype)))
    return [y.detach().numpy().tobytes(), xt.grad.numpy().tobytes()]


def _run(args, twin):
    run, served = run_traced(_case, args, {KN.dropout_kernel: KN._dropout_twin}, twin, ())
    return run, served > 0


CASES = [(65536, 0.1, np.float32, False), (1, 0.5, np.float32, False), (1000, 0.5, np.float32, True),
         (4097, 0.9, np.float32, True), (33, 1e-9, np.float32, True), (77, 0.3, np.float64, True)]


@pytest.mark.parametrize("args", CASES)
def test_twin_equals_traced_tape(args):
    got, used = _run(args, True)
    want, unused = _run(args, False)
    assert not unused
    assert used == (args[2] is np.float32)
    assert got == want


def test_compiled_replay_calls_twin():
    """A compiled step with dropout replays the twin with eager's bits (the draws renewed each call)."""
    rng = np.random.default_rng(0)
    data = [tgrad.tensor(rng.standard_normal((8, 6)).astype(np.float32)) for _ in range(5)]

    def run(compiled):
        tgrad.manual_seed(0)
        lin = tgrad.nn.Linear(6, 6)
        opt = tgrad.optim.SGD(lin.parameters(), lr=0.1)

        def step(x):
            loss = F.dropout(lin(x), p=0.4, training=True).sum()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        f = tgrad.compile(step) if compiled else step
        return [f(x).item() for x in data] + [lin.weight.detach().numpy().tobytes()], f
    want, _ = run(False)
    got, f = run(True)          # (f keeps its replay alive)
    assert got == want
    twin = native.aten_twin("dropout_words_f32")
    assert replayed(twin)


def test_twin_compare_at_equal_high_words():
    """The twin's 53-bit compare (two 32-bit ones) where the high 21 bits equal q53's: keep iff word53 < q53."""
    f = native.aten_twin("dropout_words_f32")
    rng = np.random.default_rng(1)
    n = 4099
    x = rng.standard_normal(n).astype(np.float32)
    scale = np.float64(1 / 0.7)
    for q53 in ((0x1234 << 32) | 0x80000001, (0x1234 << 32) | 0x7FFFFFFF, (0x1234 << 32), 2 ** 53, 1, 0):
        w = rng.integers(0, 2 ** 32, 2 * n, dtype=np.uint64).astype(np.uint32)
        w[0::2] = (q53 >> 32) | (rng.integers(0, 2048, n, dtype=np.uint32) << 21)     # (bits past 21 ignored)
        w[1::2][:8] = [0, 1, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFF, q53 & 0xFFFFFFFF, (q53 - 1) & 0xFFFFFFFF]
        y, mask = np.empty_like(x), np.empty(n, np.bool_)
        f(n, q53, int(scale.view(np.int64)), x.ctypes.data, y.ctypes.data, mask.ctypes.data, w.ctypes.data)
        u = ((w[0::2].astype(np.uint64) & 0x1FFFFF) << np.uint64(32)) | w[1::2].astype(np.uint64)
        keep = u < np.uint64(q53)
        assert (mask == keep).all()
        assert y.tobytes() == (x * np.where(keep, np.float32(scale), np.float32(0))).tobytes()
