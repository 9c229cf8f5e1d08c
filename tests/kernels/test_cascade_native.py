"""cascade_sum's lane folds (kernels/reduce.py ``_fold_rows``, ``_ilp_fold``) computed by aten_cpu.c's lanes_add
ufunc (one native pass each) give the same bits as their Triton bodies run op by op (native helpers off), for
sums and means of every plan shape (short rows, leftover vectors and scalars, chunked rows, split full sums,
column sums, x * y products, float64), on rows with signed zeros, infs, NaNs and huge values; and an 80-element
mean's tape is shorter with them."""
import numpy as np
import pytest

import tgrad
from tgrad.kernels.reduce import cascade_sum_kernel
from tgrad.kernels.runtime import launcher as T
from tgrad.kernels.runtime import native
from tgrad.kernels.runtime import trace as TR

CPU_ONLY = True
NATIVE = native.aten_ufunc("lanes_add") is not None


def _values(n, kind, rng):
    if kind == "neg0":
        return np.full(n, -0.0, np.float32)
    v = (rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n))).astype(np.float32)
    if kind == "special" and n > 8:
        v[:4] = [-0.0, 1e-45, 3e38, 3e38]       # an overflow to inf in the middle of a lane
        v[-1] = -0.0
    if kind == "nan" and n > 2:
        v[n // 2] = np.nan
    return v


def _sums(n, kind, dtype):
    rng = np.random.default_rng(n)
    a = _values(n, kind, rng).astype(dtype)
    b = _values(n, "plain", rng).astype(dtype)
    x, y = tgrad.tensor(a), tgrad.tensor(b)
    outs = [x.sum(), x.mean(), x.reshape(n, 1).sum(0)]
    w = tgrad.ones(1, dtype=x.dtype, requires_grad=True)
    (w * x).backward(y)                         # mul_sum_to_size: w.grad = the sum of y * x (MUL)
    outs.append(w.grad)
    if n % 4 == 0:
        outs += [x.reshape(4, n // 4).sum(0), x.reshape(4, n // 4).mean(1)]
    return [o.detach().numpy().copy() for o in outs]


def _run(n, kind, dtype, native_on, monkeypatch):
    TR.clear_tapes()
    with monkeypatch.context() as m:
        if not native_on:
            m.setitem(native._built, "tgrad_aten_cpu", None)
        prev = T.EXECUTOR
        try:
            T.EXECUTOR = "trace"
            first = _sums(n, kind, dtype)
            again = _sums(n, kind, dtype)       # replayed tapes
        finally:
            T.EXECUTOR = prev
            TR.clear_tapes()
    for a, b in zip(first, again):
        assert a.tobytes() == b.tobytes()
    return first


@pytest.mark.skipif(not NATIVE, reason="no C compiler: no native helpers")
@pytest.mark.parametrize("n,kind", [(80, "neg0"), (80, "special"), (257, "special"), (8200, "nan"), (8200, "neg0"),
                                    (70000, "special"), (1000, "float64")])
def test_native_folds_equal_traced_bodies(n, kind, monkeypatch):
    dtype = np.float64 if kind == "float64" else np.float32
    with np.errstate(all="ignore"):
        got = _run(n, kind, dtype, True, monkeypatch)
        want = _run(n, kind, dtype, False, monkeypatch)
    for g, w in zip(got, want):
        assert g.tobytes() == w.tobytes(), (g, w)


@pytest.mark.skipif(not NATIVE, reason="no C compiler: no native helpers")
def test_mean_tape_is_short(monkeypatch):
    x = tgrad.tensor(np.arange(80, dtype=np.float32))

    def tape_lines(native_on):
        TR.clear_tapes()
        with monkeypatch.context() as m:
            if not native_on:
                m.setitem(native._built, "tgrad_aten_cpu", None)
            prev = T.EXECUTOR
            try:
                T.EXECUTOR = "trace"
                for _ in range(3):
                    x.mean()
                return max(len(v.source.splitlines()) for k, v in TR._TAPES.items()
                           if k[0] is cascade_sum_kernel and v)
            finally:
                T.EXECUTOR = prev
                TR.clear_tapes()
    assert tape_lines(True) * 2 < tape_lines(False)
