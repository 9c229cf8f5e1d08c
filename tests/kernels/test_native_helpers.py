"""The native helpers of the cpu executor (runtime/aten_cpu.c via native.native_helper): SLEEF's exp / log and
the 8-lane sums of kernels/_lang.py and nll_loss's cascade (kernels/loss.py) computed by one C ufunc per call give the same bits as the helpers' Triton
bodies run op by op (the numpy-traced path, which native.aten_ufunc None selects) and as the numpy model
tgrad/testing/aten_softmax.py, on edge cases: every float32 exponent, subnormals, signed zeros, +-inf, NaN,
the exp cut-offs, huge and tiny values; and a traced kernel's tape holds one ufunc call per helper."""
import numpy as np
import pytest
import triton
import triton.language as tl

from tgrad.kernels import _lang
from tgrad.kernels._lang import kptr, lanes_add, lanes_fold, sleef_exp, sleef_log
from tgrad.kernels.loss import _cascade
from tgrad.kernels.random import keep_scale
from tgrad.kernels.runtime import launcher as T
from tgrad.kernels.runtime import native
from tgrad.kernels.runtime import trace as TR
from tgrad.testing import aten_softmax as A
import tgrad

CPU_ONLY = True
F = np.float32
NATIVE = native.aten_ufunc("sleef_expf") is not None


@triton.jit
def sleef_kernel(x_ptr, e_ptr, l_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(e_ptr + offs, sleef_exp(x))
    tl.store(l_ptr + offs, sleef_log(x))


@triton.jit
def lanes_kernel(v_ptr, a_ptr, acc_ptr, out_ptr, ROWS: tl.constexpr, BLOCK: tl.constexpr, LANES: tl.constexpr):
    r = tl.arange(0, ROWS)
    acc = tl.load(a_ptr + r[:, None] * LANES + tl.arange(0, LANES)[None, :])
    v = tl.load(v_ptr + r[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :])
    acc = lanes_add(acc, v, ROWS, BLOCK, LANES)
    tl.store(acc_ptr + r[:, None] * LANES + tl.arange(0, LANES)[None, :], acc)
    tl.store(out_ptr + r, lanes_fold(acc, ROWS, LANES))


def edge_values():
    """Every float32 exponent (both signs, a few mantissas each), subnormals, zeros, infs, NaNs, the exp
    cut-offs and their neighbours, and random bit patterns: a multiple of 1024 values."""
    rng = np.random.default_rng(0)
    exps = np.arange(256, dtype=np.uint32) << 23
    mant = np.concatenate([[0, 1, 0x400000, 0x7FFFFF], rng.integers(0, 1 << 23, 12)]).astype(np.uint32)
    bits = (exps[:, None] | mant[None, :]).ravel()
    bits = np.concatenate([bits, bits | 0x80000000, rng.integers(0, 1 << 32, 6000, dtype=np.uint64).astype(np.uint32)])
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 0.75, 1.5, 2.0, 1e-45, 1.17549435e-38,
                        3.4028235e38, -104.0, 100.0, 88.72283, 88.72284, -87.33655, -103.97208, 1e-8, -1e-8], F)
    with np.errstate(over="ignore"):
        near = np.concatenate([np.nextafter(special, F(np.inf)), np.nextafter(special, F(-np.inf))]).astype(F)
    dense = np.linspace(-110, 110, 20000, dtype=F)
    x = np.concatenate([bits.view(F), special, near, dense, rng.uniform(0, 3, 4000).astype(F)])
    return np.concatenate([x, np.zeros(-x.size % 1024, F)])


def _same(a, b):
    return (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))


def _launch(kernel, grid, host_ins, n_outs, shapes, constexprs, native_on, monkeypatch, ints=()):
    """Outputs of 3 trace launches (interpreted, recorded, replayed) with the helpers native or traced."""
    TR.clear_tapes()
    prev = T.EXECUTOR
    with monkeypatch.context() as m:
        if not native_on:
            m.setitem(native._built, "tgrad_aten_cpu", None)
        try:
            T.EXECUTOR = "trace"
            outs = []
            for _ in range(3):
                ins = [tgrad.tensor(a) for a in host_ins]
                res = [tgrad.empty(s) for s in shapes]
                T.launch(kernel, grid, "cpu", [kptr(t) for t in ins + res] + list(ints), constexprs)
                outs.append([r.numpy().copy() for r in res])
            src = [v.source for k, v in TR._TAPES.items() if k[0] is kernel and v]
        finally:
            T.EXECUTOR = prev
            TR.clear_tapes()
    for o in outs[1:]:
        assert all(_same(a, b).all() for a, b in zip(outs[0], o))       # direct = recorded = replayed
    return outs[-1], src[-1]


@pytest.mark.skipif(not NATIVE, reason="no C compiler: no native helpers")
def test_sleef_native_equals_traced_and_model(monkeypatch):
    x = edge_values()
    B = 1024
    (e_n, l_n), src_n = _launch(sleef_kernel, (x.size // B,), [x], 2, [x.shape, x.shape], {"BLOCK": B}, True,
                                monkeypatch)
    (e_t, l_t), src_t = _launch(sleef_kernel, (x.size // B,), [x], 2, [x.shape, x.shape], {"BLOCK": B}, False,
                                monkeypatch)
    assert _same(e_n, e_t).all(), x[~_same(e_n, e_t)][:10]
    assert _same(l_n, l_t).all(), x[~_same(l_n, l_t)][:10]
    with np.errstate(all="ignore"):
        ok = np.isfinite(x)
        assert _same(e_n[ok], A.sleef_expf(x[ok])).all()
        pos = x >= np.finfo(F).tiny
        assert _same(l_n[pos], A.sleef_logf(x[pos])).all()
    assert np.isinf(l_n[x == 0]).all() and np.isnan(l_n[x < 0]).all()
    # the traced tape computes each helper in one native call (its body would be dozens of numpy lines)
    assert len(src_n.splitlines()) < len(src_t.splitlines()) // 4


@pytest.mark.skipif(not NATIVE, reason="no C compiler: no native helpers")
@pytest.mark.parametrize("rows,block,lanes", [(4, 64, 8), (2, 8, 8), (8, 16, 1), (1, 128, 8)])
def test_lanes_native_equals_traced_and_model(rows, block, lanes, monkeypatch):
    rng = np.random.default_rng(rows * block + lanes)
    v = (rng.standard_normal((rows, block)) * np.exp2(rng.integers(-30, 30, (rows, block)))).astype(F)
    v[0, :5] = [np.inf, -np.inf, np.nan, -0.0, 1e-45]
    v[-1, ::lanes] = -0.0                   # a lane of -0s: the helper's tl.sum makes it +0
    acc = rng.standard_normal((rows, lanes)).astype(F)
    acc[-1] = -0.0
    shapes = [(rows, lanes), (rows,)]
    cx = {"ROWS": rows, "BLOCK": block, "LANES": lanes}
    (a_n, f_n), src_n = _launch(lanes_kernel, (1,), [v, acc], 2, shapes, cx, True, monkeypatch)
    (a_t, f_t), src_t = _launch(lanes_kernel, (1,), [v, acc], 2, shapes, cx, False, monkeypatch)
    assert _same(a_n, a_t).all() and _same(f_n, f_t).all()
    # the model: each lane left to right, folded by the AVX2 tree
    want = acc.copy()
    for c in range(0, block, lanes):
        want = v[:, c:c + lanes] + want if c == 0 else want + v[:, c:c + lanes]
    assert _same(a_n, want + F(0)).all()          # (+ 0: the helper's tl.sum turns -0 to +0)
    if lanes == 8:
        assert _same(f_n, A.vec_reduce_tree(a_n, np.add)).all()
        assert "lanes_fold8" not in src_t and src_n.count("_k") < src_t.count("_k")


def test_fallback_without_native(monkeypatch):
    """TGRAD_NATIVE=0 (no ufunc): the helpers run their Triton bodies and give the model's bits."""
    monkeypatch.setitem(native._built, "tgrad_aten_cpu", None)
    x = edge_values()[:2048]
    (e, l), src = _launch(sleef_kernel, (2,), [x], 2, [x.shape, x.shape], {"BLOCK": 1024}, False, monkeypatch)
    assert "create_native" not in src and len(src.splitlines()) > 50
    with np.errstate(all="ignore"):
        ok = np.isfinite(x)
        assert _same(e[ok], A.sleef_expf(x[ok])).all()
        pos = x >= np.finfo(F).tiny
        assert _same(l[pos], A.sleef_logf(x[pos])).all()


@triton.jit
def cascade_kernel(v_ptr, out_ptr, M, NB: tl.constexpr, LEVELS: tl.constexpr):
    i = tl.arange(0, NB)
    v = tl.load(v_ptr + i, mask=i < M - 1, other=0.0)
    tl.store(out_ptr + tl.arange(0, 1), tl.zeros([1], tl.float32) + _cascade(v, M - 1, NB, LEVELS))


@pytest.mark.skipif(not NATIVE, reason="no C compiler: no native helpers")
@pytest.mark.parametrize("m,nb,levels", [(1, 16, 1), (17, 16, 1), (64, 256, 2), (256, 256, 2), (300, 4096, 3),
                                         (4097, 4096, 3), (5000, 65536, 4)])
def test_cascade_native_equals_traced(m, nb, levels, monkeypatch):
    rng = np.random.default_rng(m)
    v = (rng.standard_normal(max(m, 1)) * np.exp2(rng.integers(-20, 20, max(m, 1)))).astype(F)
    if m > 40:
        v[3:40:2] = -0.0
        v[5] = -v[4]
    cx = {"NB": nb, "LEVELS": levels}
    (o_n,), src_n = _launch(cascade_kernel, (1,), [v], 1, [(1,)], cx, True, monkeypatch, ints=[m])
    (o_t,), src_t = _launch(cascade_kernel, (1,), [v], 1, [(1,)], cx, False, monkeypatch, ints=[m])
    assert _same(o_n, o_t).all(), (o_n, o_t)
    assert f"nll_cascade_{levels}" not in src_t and len(src_n.splitlines()) < len(src_t.splitlines())


@triton.jit
def keep_kernel(w_ptr, out_ptr, q53, scale, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    hi = tl.load(w_ptr + 2 * i)
    lo = tl.load(w_ptr + 2 * i + 1)
    tl.store(out_ptr + i, keep_scale(hi, lo, q53, scale.to(tl.float32)))


@pytest.mark.skipif(not NATIVE, reason="no C compiler: no native helpers")
@pytest.mark.parametrize("q53", [0, 1, 12345, 1 << 31, (1 << 53) - 1, 1 << 53, 3 << 50])
def test_keep_scale_native_equals_traced(q53, monkeypatch):
    """dropout's factor (kernels/random.py's keep_scale): scale where a word pair's 53 bits are < q53, else +0;
    words at the edges (0, all ones, the bits around q53, above bit 53) and random ones."""
    rng = np.random.default_rng(q53 % 1000)
    w = rng.integers(0, 1 << 32, (1024, 2), dtype=np.uint64)
    for k, v in enumerate([0, 1, q53 - 1, q53, q53 + 1, (1 << 53) - 1, (1 << 64) - 1, q53 | (0x7FF << 53)]):
        v %= 1 << 64
        w[k] = (v >> 32, v & 0xFFFFFFFF)
    w = w.astype(np.uint32).view(np.int32).ravel()
    cx = {"BLOCK": 1024}
    (o_n,), src_n = _launch(keep_kernel, (1,), [w], 1, [(1024,)], cx, True, monkeypatch, ints=[q53, 1.25])
    (o_t,), src_t = _launch(keep_kernel, (1,), [w], 1, [(1024,)], cx, False, monkeypatch, ints=[q53, 1.25])
    assert _same(o_n, o_t).all()
    u = w.view(np.uint32).astype(np.uint64)
    want = np.where((((u[0::2] & 0x1FFFFF) << np.uint64(32)) | u[1::2]) < np.uint64(q53), F(1.25), F(0))
    assert _same(o_n, want).all()
    assert len(src_n.splitlines()) < len(src_t.splitlines())


@pytest.mark.skipif(not NATIVE, reason="no C compiler: no native helpers")
def test_mt19937_fill_equals_numpy(monkeypatch):
    """aten_cpu.c's mt19937_fill gives numpy MT19937's random_raw words and leaves its state (key, pos) where
    random_raw leaves it, across twist boundaries; the cpu generator's draws go through it."""
    fill = native.mt19937_fill()
    for seed in (0, 5, 2 ** 31 + 7):
        a, b = np.random.MT19937(0), np.random.MT19937(0)
        a._legacy_seeding(seed)
        b._legacy_seeding(seed)
        for n in (1, 5, 618, 624, 625, 1000, 1248, 3, 70000):
            want = a.random_raw(n).astype(np.uint32)
            got = np.empty(n, np.uint32)
            fill(b.ctypes.state_address, got.ctypes.data, n)
            assert (want == got).all(), (seed, n)
            sa, sb = a.state["state"], b.state["state"]
            assert sa["pos"] == sb["pos"] and (sa["key"] == sb["key"]).all()
    g = tgrad.Generator()
    g.manual_seed(3)
    ref = np.random.MT19937(0)
    ref._legacy_seeding(3)
    assert (g._raw(700) == ref.random_raw(700).astype(np.uint32)).all()
    assert (g._take(50).numpy().view(np.uint32) == ref.random_raw(50).astype(np.uint32)).all()
    monkeypatch.setitem(native._built, "tgrad_aten_cpu", None)         # no C: numpy's random_raw, the same words
    assert (g._raw(1000) == ref.random_raw(1000).astype(np.uint32)).all()


def test_glibc_ufuncs_are_the_c_librarys_functions():
    """kernels/random.py's libm (aten_cpu.c's glibc_<f>): Python's math (glibc) element by element, bit for bit,
    with C's answers where Python raises; numpy's float64 loops may differ in last bits (AVX-512 machines)."""
    import math
    from tgrad.kernels import random as KR
    from tgrad.kernels.runtime import native
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.random(4000), rng.standard_normal(4000) * 30, [0.0, -0.0, 1.0, -1.0, np.inf, np.nan]])
    for name in ("log", "log1p", "exp", "sin", "cos", "tan"):
        got = KR.libm(name, x)
        want = np.array([KR._c_semantics(getattr(math, name), getattr(KR._libm, name))(v) for v in x.tolist()])
        assert got.tobytes() == want.tobytes() or np.array_equal(got, want, equal_nan=True), name
        if native.aten_ufunc(f"glibc_{name}") is None:
            pytest.skip("no C compiler: the fallback is the reference itself")


def test_every_native_module_builds_where_a_compiler_is():
    """A C error in aten_cpu.c / nn_cpu.c / optim_cpu.c only warns at run time (the numpy paths are exact, slower):
    here, where Triton's launcher has its C compiler, every listed ufunc must exist."""
    import shutil
    import os
    if os.environ.get("TGRAD_NATIVE", "1") == "0" or not (shutil.which("gcc") or shutil.which("cc")):
        pytest.skip("no C compiler or TGRAD_NATIVE=0")
    for name in native.ATEN + native.NN + native.OPTIM:
        assert native.aten_ufunc(name) is not None, name


@pytest.mark.skipif(not NATIVE, reason="no C compiler: no native helpers")
def test_contiguous_loops_equal_strided():
    """The C loops' contiguous fast paths (vectorized by the compiler: sleef exp / log, gelu_tanh and its backward,
    fma_rows row after row) give the bits of their element-at-a-time strided paths, on random bit patterns (NaN,
    inf, subnormals, signed zeros among them) and on odd lengths."""
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 2 ** 32, 2 ** 18 + 3, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([bits.view(F), np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 88.7, -103.9, 104.0,
                                                  1e-45, -1e-45], F)])
    x2 = np.empty(2 * x.size, F)
    x2[::2] = x                          # a strided view of the same values
    g = rng.standard_normal(x.size).astype(F)
    g2 = np.empty(2 * x.size, F)
    g2[::2] = g
    with np.errstate(all="ignore"):
        for name, args, sargs in (("sleef_expf", (x,), (x2[::2],)), ("sleef_logf", (x,), (x2[::2],)),
                                  ("gelu_tanh_f32", (x,), (x2[::2],)),
                                  ("gelu_tanh_backward_f32", (g, x), (g2[::2], x2[::2]))):
            f = native.aten_ufunc(name)
            a, b = f(*args), f(*sargs)
            assert np.array_equal(a.view(np.uint32), b.view(np.uint32)), name
        f = native.aten_ufunc("fma_rows")
        acc = g[:37].copy()
        a, b = x[:37 * 100].reshape(100, 37), g[:37 * 100].reshape(100, 37)
        want = acc.copy()
        for i in range(100):            # one fma per row, row after row, each column on its own
            want = np.array([f(want[j:j + 1], a[i:i + 1, j:j + 1], b[i:i + 1, j:j + 1])[0] for j in range(37)], F)
        for got in (f(acc, a, b), f(acc, np.asfortranarray(a), b)):
            assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
