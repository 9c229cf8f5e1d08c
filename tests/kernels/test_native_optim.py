"""The optimizer updates' native helpers (runtime/optim_cpu.c via native.native_helper: kernels/optim.py's _adam_m,
_adam_v, _adam_p, _sgd_buf, _sgd_p) give the same bits as the helpers' Triton bodies run op by op (the traced
path, which ``native._built["tgrad_optim_cpu"] = None`` selects): Adam / AdamW / amsgrad / maximize / weight decay
and SGD's momentum variants, on edge values (signed zeros, infs, NaNs, subnormals, huge and tiny values) and edge
hyper-parameters (huge / subnormal lr, eps 0, both lerp sides); float64 keeps its traced fp64 path; 20 steps of
tgrad.optim.Adam give the same bits with and without the native path."""
import io
import pickle

import numpy as np
import pytest

import tgrad
from tgrad.kernels import optim as K
from tgrad.kernels.runtime import launcher as T
from tgrad.kernels.runtime import native, tape_cache
from tgrad.kernels.runtime import trace as TR
from tgrad.ops import optim as O

CPU_ONLY = True
F = np.float32
NATIVE = native.aten_ufunc("adam_p_0") is not None
pytestmark = pytest.mark.skipif(not NATIVE, reason="no C compiler: no native helpers")
SIZES = (4096, 37, 1)


def _values(n, rng, positive=False):
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-40, 40, n))).astype(F)
    edge = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-39, 3.4e38, -3.4e38, 1.0, -1.0], F)
    k = min(n, edge.size)
    x[rng.permutation(n)[:k]] = edge[:k]
    return np.abs(x) if positive else x


def _same(a, b):
    u = np.uint32 if a.dtype == F else np.uint64
    return (a.view(u) == b.view(u)) | (np.isnan(a) & np.isnan(b))


def _run(step, n_states, kwargs, native_on, monkeypatch, dtype=F, positive=(), seed=0):
    """(params and states after 3 trace launches: interpreted, recorded, replayed; the tapes' source)."""
    TR.clear_tapes()
    prev = T.EXECUTOR
    outs = []
    with monkeypatch.context() as m, np.errstate(all="ignore"):
        if not native_on:
            m.setitem(native._built, "tgrad_optim_cpu", None)
        try:
            T.EXECUTOR = "trace"
            for _ in range(3):
                rng = np.random.default_rng(seed)
                cols = [[tgrad.tensor(_values(n, rng, j in positive).astype(dtype)) for j in range(2 + n_states)]
                        for n in SIZES]
                step(*[[c[j] for c in cols] for j in range(2 + n_states)], **kwargs)
                outs.append([t.numpy().copy() for c in cols for t in c if t is not c[1]])
            src = "\n".join(v.source for k, v in TR._TAPES.items() if k[0] is K.multi_tensor_kernel and v)
        finally:
            T.EXECUTOR = prev
            TR.clear_tapes()
    for o in outs[1:]:
        assert all(_same(a, b).all() for a, b in zip(outs[0], o))     # interpreted = recorded = replayed
    return outs[-1], src


ADAM = [dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, step=1, amsgrad=False, maximize=False,
             decoupled_weight_decay=False),
        dict(lr=3e30, beta1=0.3, beta2=0.5, eps=0.0, weight_decay=0.1, step=7, amsgrad=True, maximize=True,
             decoupled_weight_decay=False),
        dict(lr=1e-40, beta1=0.9, beta2=0.99, eps=1e-30, weight_decay=1e-2, step=3, amsgrad=False, maximize=False,
             decoupled_weight_decay=True),
        dict(lr=0.5, beta1=0.0, beta2=0.0, eps=1e30, weight_decay=2.0, step=1000, amsgrad=True, maximize=True,
             decoupled_weight_decay=True),
        dict(lr=1e-2, beta1=0.6, beta2=0.999, eps=1e-8, weight_decay=1e-4, step=2, amsgrad=False, maximize=False,
             decoupled_weight_decay=False)]


@pytest.mark.parametrize("kw", ADAM, ids=range(len(ADAM)))
def test_adam_native_equals_traced(kw, monkeypatch):
    for positive in ((), (3, 4)):           # arbitrary states, then the second moments >= 0
        got, src_n = _run(O.adam_step_forward, 3, kw, True, monkeypatch, positive=positive, seed=len(positive))
        want, src_t = _run(O.adam_step_forward, 3, kw, False, monkeypatch, positive=positive, seed=len(positive))
        for a, b in zip(got, want):
            assert _same(a, b).all(), (a[~_same(a, b)][:5], b[~_same(a, b)][:5])
        # one ufunc call per helper in place of its body's numpy lines
        assert len(src_n.splitlines()) < len(src_t.splitlines())


SGD = [dict(lr=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False, first=False),
       dict(lr=1e30, momentum=0.9, dampening=0.0, weight_decay=0.1, nesterov=True, maximize=True, first=True),
       dict(lr=1e-40, momentum=0.9, dampening=0.0, weight_decay=0.0, nesterov=True, maximize=False, first=False),
       dict(lr=0.01, momentum=0.5, dampening=0.3, weight_decay=1e-3, nesterov=False, maximize=False, first=False),
       dict(lr=0.01, momentum=0.5, dampening=0.3, weight_decay=0.0, nesterov=False, maximize=True, first=True),
       dict(lr=2.0, momentum=0.0, dampening=0.0, weight_decay=5.0, nesterov=False, maximize=True, first=False)]


@pytest.mark.parametrize("kw", SGD, ids=range(len(SGD)))
def test_sgd_native_equals_traced(kw, monkeypatch):
    got, src_n = _run(O.sgd_step_forward, 1, kw, True, monkeypatch)
    want, src_t = _run(O.sgd_step_forward, 1, kw, False, monkeypatch)
    for a, b in zip(got, want):
        assert _same(a, b).all(), (a[~_same(a, b)][:5], b[~_same(a, b)][:5])
    assert len(src_n.splitlines()) <= len(src_t.splitlines())


def test_float64_keeps_its_path(monkeypatch):
    """float64 maths is not the float32 helpers': the rule declines, the fp64 body runs (no native call)."""
    calls = []
    with monkeypatch.context() as m:
        real = native.aten_ufunc
        m.setattr(native, "aten_ufunc", lambda name: calls.append(name) or real(name))
        got, _ = _run(O.adam_step_forward, 3, ADAM[1], True, monkeypatch, dtype=np.float64)
    assert not [c for c in calls if c in native.OPTIM]
    assert all(a.dtype == np.float64 for a in got)


def _adam_run(native_on, monkeypatch, dtype=None):
    rng = np.random.default_rng(5)
    TR.clear_tapes()
    with monkeypatch.context() as m:
        if not native_on:
            m.setitem(native._built, "tgrad_optim_cpu", None)
        ws = [tgrad.tensor(rng.standard_normal(s).astype(F)).to(dtype or tgrad.float32).requires_grad_()
              for s in ((64, 33), (33,), (5, 7))]
        opt = tgrad.optim.AdamW(ws, lr=1e-2, weight_decay=0.05, amsgrad=True)
        for i in range(20):
            opt.zero_grad()
            loss = sum(((w * w).sum() * (i + 1) + w.sum()) for w in ws)
            loss.backward()
            opt.step()
        out = [w.detach().float().numpy().copy() for w in ws]
    TR.clear_tapes()
    return out


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_adam_20_steps_same_bits(dtype, monkeypatch):
    """(bfloat16 parameters: fp32 maths, the native helpers, bfloat16 stores.)"""
    dt = getattr(tgrad, dtype)
    got, want = _adam_run(True, monkeypatch, dt), _adam_run(False, monkeypatch, dt)
    for a, b in zip(got, want):
        assert _same(a, b).all()


def test_tape_cache_stores_optim_ufuncs_by_name():
    """tape_cache's picklers (compiled tapes, builder ops) store these ufuncs by name (runtime/native.name_of)."""
    for name in native.OPTIM:
        f = native.aten_ufunc(name)
        assert native.name_of(f) == name
        for pickler in (tape_cache._Pickler, tape_cache._OpsPickler):
            buf = io.BytesIO()
            pickler(buf).dump([f])
            assert pickle.loads(buf.getvalue())[0] is f


def test_ufunc_strided_equals_contiguous():
    """The ufuncs' two loops (contiguous blocks with broadcast scalars; any strides) give the same bits."""
    rng = np.random.default_rng(3)
    for name in native.OPTIM:
        f = native.aten_ufunc(name)
        blocks = [_values(301, rng) for _ in range(3)]
        scalars = [np.array([v], F) for v in (0.3, 0.7, 1e-8, 0.99)[:f.nin - 3]]
        with np.errstate(all="ignore"):
            flat = f(*blocks, *scalars)
            strided = f(*[np.repeat(b, 2)[::2] for b in blocks], *[np.full(301, s[0], F) for s in scalars])
        assert _same(flat, strided).all(), name


@pytest.mark.parametrize("strided", [False, True])
def test_fused_steps_equal_their_helpers(strided):
    """optim_cpu.c's fused steps (the compiled replay's Adam/SGD updates) give the separate ufuncs' bits: adam_step =
    adam_m, adam_v, then adam_p of the new m and v; sgd_step = sgd_buf, then sgd_p of the new buffer (edge values,
    both lerp sides, every weight-decay / momentum / nesterov kind, contiguous and strided operands, in place)."""
    rng = np.random.default_rng(4)
    u = native.aten_ufunc

    def lay(a):
        return np.repeat(a, 2)[::2] if strided else a.copy()
    for n in SIZES:
        for w, d in ("00", "10", "01"):
            for w1 in (0.1, 0.9):
                x = [np.array([v], F) for v in (1e-3, w1, 0.999, 1e-3, 1e-8, 0.01, 0.99, 0.7)]
                low = int(w1 < 0.5)
                P, G, M = (_values(n, rng) for _ in range(3))
                V = _values(n, rng, positive=True)
                a, b = [lay(t) for t in (P, G, M, V)], [lay(t) for t in (P, G, M, V)]
                with np.errstate(all="ignore"):
                    u(f"adam_m_{w}{low}")(a[2], a[1], a[0], x[1], x[5], out=a[2])
                    u(f"adam_v_{w}")(a[3], a[1], a[0], x[2], x[3], x[5], out=a[3])
                    u(f"adam_p_{d}")(a[0], a[2], a[3], x[0], x[7], x[4], x[6], out=a[0])
                    u(f"adam_step_{w}{low}{d}")(*b, *x, out=(b[2], b[3], b[0]))
                for s, t in zip(a, b):
                    assert _same(s, t).all(), (n, w, d, w1)
        for w in "01":
            for mo in "12":
                for nest in "01":
                    x = [np.array([v], F) for v in (-0.01, 0.9, 0.8, 0.001 if w == "1" else 0.0)]
                    P, G, U = (_values(n, rng) for _ in range(3))
                    a, b = [lay(t) for t in (P, G, U)], [lay(t) for t in (P, G, U)]
                    with np.errstate(all="ignore"):
                        u(f"sgd_buf_{w}{mo}0")(a[2], a[1], a[0], x[1], x[2], x[3], out=a[2])
                        u(f"sgd_p_{w}{mo}{nest}")(a[0], a[1], a[2], x[0], x[1], x[3], out=a[0])
                        u(f"sgd_step_{w}{mo}{nest}")(*b, *x, out=(b[2], b[0]))
                    for s, t in zip(a, b):
                        assert _same(s, t).all(), (n, w, mo, nest)
