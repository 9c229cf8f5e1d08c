"""The activation helpers of runtime/nn_cpu.c (via native.native_helper): GELU (erf, and its tanh approximation)
forward and backward computed by one C ufunc per call give the same bits as the helpers' Triton bodies run op by op (the
numpy-traced path, which an unbuilt module selects), on edge cases (every float32 exponent, subnormals, signed
zeros, +-inf, NaN); the ops built on them agree with the numpy formula; a tape of them stores by name."""
import pickle

import numpy as np
import pytest
import triton
import triton.language as tl

import tgrad
from tgrad.kernels import activation as KA
from tgrad.kernels import rnn as RNN
from tgrad.kernels._lang import kptr
from tgrad.kernels.runtime import launcher as T
from tgrad.kernels.runtime import native, tape_cache
from tgrad.kernels.runtime import trace as TR

CPU_ONLY = True
F = np.float32
NATIVE = native.aten_ufunc("gelu_tanh_f32") is not None


@triton.jit
def gelu_kernel(g_ptr, x_ptr, y_ptr, dx_ptr, FN: tl.constexpr, BACKWARD: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    g = tl.load(g_ptr + offs)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, FN(x, 0.0, 0.0, 0.0))
    tl.store(dx_ptr + offs, BACKWARD(g, x, 0.0, 0.0))


PAIRS = {"tanh": (KA.gelu_tanh_fn, KA.gelu_tanh_backward_fn), "none": (KA.gelu_fn, KA.gelu_backward_fn)}


def edge_values(rng):
    """Every float32 exponent with a few mantissas, both signs, specials, a dense range: a multiple of 1024."""
    exps = np.arange(256, dtype=np.uint32) << 23
    mant = np.concatenate([[0, 1, 0x400000, 0x7FFFFF], rng.integers(0, 1 << 23, 12)]).astype(np.uint32)
    bits = (exps[:, None] | mant[None, :]).ravel()
    bits = np.concatenate([bits, bits | 0x80000000, rng.integers(0, 1 << 32, 3000, dtype=np.uint64).astype(np.uint32)])
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 3.4028235e38, -3.4028235e38,
                        9.0, -9.0, 10.0, -10.0, 1e-4, -1e-4], F)
    x = np.concatenate([bits.view(F), special, np.linspace(-12, 12, 6000, dtype=F)])
    return np.concatenate([x, np.zeros(-x.size % 1024, F)])


def _same(a, b):
    return (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))


def _run(x, g, fns, native_on, monkeypatch):
    """(y, dx) of 3 trace launches (interpreted, recorded, replayed), the helpers native or traced; the tape source."""
    TR.clear_tapes()
    prev = T.EXECUTOR
    with monkeypatch.context() as m:
        if not native_on:
            m.setitem(native._built, "tgrad_nn_cpu", None)
        try:
            T.EXECUTOR = "trace"
            outs = []
            for _ in range(3):
                ins = [tgrad.tensor(g), tgrad.tensor(x)]
                res = [tgrad.empty(x.shape), tgrad.empty(x.shape)]
                T.launch(gelu_kernel, (x.size // 1024,), "cpu", [kptr(t) for t in ins + res],
                         {"FN": fns[0], "BACKWARD": fns[1], "BLOCK": 1024})
                outs.append([r.numpy().copy() for r in res])
            tape = [v for k, v in TR._TAPES.items() if k[0] is gelu_kernel and v][-1]
        finally:
            T.EXECUTOR = prev
            TR.clear_tapes()
    for o in outs[1:]:
        assert all(_same(a, b).all() for a, b in zip(outs[0], o))       # direct = recorded = replayed
    return outs[-1], tape


@pytest.mark.skipif(not NATIVE, reason="no C compiler: no native helpers")
@pytest.mark.parametrize("approximate", ["tanh", "none"])
def test_gelu_native_equals_traced(approximate, monkeypatch):
    rng = np.random.default_rng(0)
    x = edge_values(rng)
    if approximate == "none":           # (the traced erf is np.vectorize(math.erf): fewer values)
        x = np.concatenate([x[:8192], x[-6144:]])
    g = rng.standard_normal(x.size).astype(F)
    g[:7] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-45, 3e38]
    with np.errstate(all="ignore"):
        (y_n, d_n), tape_n = _run(x, g, PAIRS[approximate], True, monkeypatch)
        (y_t, d_t), tape_t = _run(x, g, PAIRS[approximate], False, monkeypatch)
    assert _same(y_n, y_t).all(), x[~_same(y_n, y_t)][:10]
    assert _same(d_n, d_t).all(), x[~_same(d_n, d_t)][:10]
    # one native call per helper in place of its body's numpy lines
    assert "_k" in tape_n.source and len(tape_n.source.splitlines()) < len(tape_t.source.splitlines()) // 2


def test_gelu_tanh_op_against_numpy():
    """F.gelu(approximate='tanh') and its gradient (native where built) against the float64 formula."""
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((64, 300)) * 3).astype(F)
    xt = tgrad.tensor(x, requires_grad=True)
    y = tgrad.nn.functional.gelu(xt, approximate="tanh")
    y.sum().backward()
    x64 = x.astype(np.float64)
    k = np.sqrt(2 / np.pi)
    t = np.tanh(k * (x64 + 0.044715 * x64 ** 3))
    np.testing.assert_allclose(y.detach().numpy(), 0.5 * x64 * (1 + t), rtol=2e-6, atol=1e-6)
    dx = 0.5 * (1 + t) + 0.5 * x64 * (1 - t * t) * k * (1 + 3 * 0.044715 * x64 ** 2)
    np.testing.assert_allclose(xt.grad.numpy(), dx, rtol=2e-5, atol=2e-6)    # (t rounds to -1 below x ~ -5.5)


def test_gelu_op_against_erf():
    """F.gelu (erf) and its gradient (native where built) against math.erf in float64."""
    import math
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((32, 100)) * 3).astype(F)
    xt = tgrad.tensor(x, requires_grad=True)
    y = tgrad.nn.functional.gelu(xt)
    y.sum().backward()
    x64 = x.astype(np.float64)
    cdf = 0.5 * (1 + np.vectorize(math.erf)(x64 / math.sqrt(2)))
    np.testing.assert_allclose(y.detach().numpy(), x64 * cdf, rtol=2e-6, atol=1e-7)
    dx = cdf + x64 * np.exp(-0.5 * x64 * x64) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(xt.grad.numpy(), dx, rtol=2e-5, atol=1e-6)


@pytest.mark.skipif(not NATIVE, reason="no C compiler: no native helpers")
@pytest.mark.parametrize("pickler", ["_Pickler", "_OpsPickler"])
def test_tape_cache_stores_nn_ufuncs_by_name(pickler):
    """Tapes and builder ops holding an nn_cpu.c ufunc pickle it as its name and load back the same ufunc."""
    import io
    for name in native.NN:
        f = native.aten_ufunc(name)
        assert native.name_of(f) == name
        buf = io.BytesIO()
        getattr(tape_cache, pickler)(buf).dump([f, 1.0])
        assert pickle.loads(buf.getvalue())[0] is f


@triton.jit
def _gate2(x, p0, p1, p2):
    q = tl.arange(0, 4)[None, :, None]
    a = tl.reshape(x, (64, 4, 4))
    return tl.reshape(RNN._gate_act(a, tl.where(q == 2, -2.0, -1.0), tl.where(q == 2, 2.0, 1.0),
                                    tl.where(q == 2, -1.0, 0.0)), (1024,))


@triton.jit
def _tanh_s2(g, x, p0, p1):
    return g * RNN._tanh_s(x)


@pytest.mark.skipif(not NATIVE, reason="no C compiler: no native helpers")
def test_lstm_cell_helpers_native_equals_traced(monkeypatch):
    """kernels/rnn.py's LSTM gate activation (sigmoid, and tanh as 2 sigmoid(2a) - 1 for the g gate, broadcast
    constants) and _tanh_s as nn_cpu.c's ufuncs give the Triton bodies' bits."""
    rng = np.random.default_rng(4)
    x = edge_values(rng)
    g = np.ones(x.size, F)
    with np.errstate(all="ignore"):
        (y_n, d_n), tape_n = _run(x, g, (_gate2, _tanh_s2), True, monkeypatch)
        (y_t, d_t), tape_t = _run(x, g, (_gate2, _tanh_s2), False, monkeypatch)
        assert _same(y_n, y_t).all(), x[~_same(y_n, y_t)][:10]
        assert _same(d_n, d_t).all(), x[~_same(d_n, d_t)][:10]
        ok = np.abs(x) < 20
        np.testing.assert_allclose(d_n[ok], np.tanh(x[ok].astype(np.float64)), atol=3e-7)
    assert len(tape_n.source.splitlines()) < len(tape_t.source.splitlines())


@pytest.mark.skipif(not NATIVE, reason="no C compiler: no native helpers")
def test_lstm_native_equals_traced(monkeypatch):
    """A 2-layer LSTM's output and gradients: the same bits with the cell helpers native or traced."""
    def run():
        tgrad.manual_seed(0)
        lstm = tgrad.nn.LSTM(5, 7, 2, batch_first=True)
        x = tgrad.tensor(np.random.default_rng(5).standard_normal((3, 6, 5)).astype(F), requires_grad=True)
        y, (h, c) = lstm(x)
        (y.sum() + h.sum() + c.sum()).backward()
        return [y.detach().numpy(), x.grad.numpy()] + [p.grad.numpy() for p in lstm.parameters()]
    TR.clear_tapes()
    got = run()
    with monkeypatch.context() as m:
        m.setitem(native._built, "tgrad_nn_cpu", None)
        TR.clear_tapes()
        want = run()
    TR.clear_tapes()
    for a, b in zip(got, want):
        assert _same(a, b).all()
