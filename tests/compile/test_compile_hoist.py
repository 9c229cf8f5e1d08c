"""tgrad.compile's cpu program, tier 3 (``_compile/hoist.py``): after one instrumented run of the fused program,
small ufunc results live in fixed buffers written with ``out=`` and views of them are evaluated once; the
numbers stay eager's bit for bit, call after call."""
import re

import numpy as np

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
from tgrad._compile import hoist as H
from tgrad._compile import replay as R

CPU_ONLY = True     # tests the cpu replay program (conftest)


def _linreg():
    rng = np.random.default_rng(5)
    x = tgrad.tensor(rng.random((40, 1), dtype=np.float32))
    y = tgrad.tensor((1 + 2 * x.numpy() + 0.1 * rng.standard_normal((40, 1))).astype(np.float32))
    tgrad.manual_seed(1)
    b = tgrad.randn(1, requires_grad=True)
    w = tgrad.randn(1, requires_grad=True)
    opt = tgrad.optim.SGD([b, w], lr=0.1)

    def step():
        loss = ((b + w * x - y) ** 2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    return step, [b, w]


def _mlp():
    tgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 9), nn.ReLU(), nn.Linear(9, 3))
    rng = np.random.default_rng(2)
    x = tgrad.tensor(rng.standard_normal((7, 6)).astype(np.float32))
    y = tgrad.tensor(rng.integers(0, 3, 7))
    opt = tgrad.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def step():
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    return step, list(model.parameters())


def _run(make, compiled, calls=25):
    step, params = make()
    f = tgrad.compile(step) if compiled else step
    out = [f().detach().numpy().copy() for _ in range(calls)]
    return out + [p.detach().numpy().copy() for p in params], f


def test_hoisted_program_matches_eager_bits():
    for make in (_linreg, _mlp):
        want, _ = _run(make, False)
        got, f = _run(make, True)
        assert all(np.array_equal(a, b) for a, b in zip(want, got))
        run = next(e.run for e in f._cache.values() if e.run is not None)
        assert run.hoist is None and re.search(r", out=h_t\d+s\d+_\d+\)", run.source), run.source


def test_reduction_views_leave_the_program(monkeypatch):
    monkeypatch.setattr(R, "HOIST", False)
    _, f = _run(_linreg, True, calls=5)
    fused = next(e.run for e in f._cache.values() if e.run is not None).source
    monkeypatch.setattr(R, "HOIST", True)
    _, f = _run(_linreg, True, calls=5)
    hoisted = next(e.run for e in f._cache.values() if e.run is not None).source

    def views(src):
        return len(re.findall(r"\.reshape\(|\.transpose\(|\[\.\.\., \d\]", src))
    # (the cascade sums' lane folds are native calls now: few views are left in the fused program, none hoisted)
    assert views(fused) > 0 and views(hoisted) < views(fused)
    assert hoisted.count("\n") < fused.count("\n")


def test_hoist_keeps_what_it_cannot_prove():
    ns = {"_np": np, "c0_k1": np.add, "c0_k2": np.arange(6.0).reshape(2, 3)}
    src = "def replay(B, O):\n    t0 = c0_k1(c0_k2, c0_k2)\n    t1 = t0.transpose(c0_k3)\n    t0 = c0_k1(t1, t1)\n"
    ns["c0_k3"] = (1, 0)
    rec = {"t0": np.zeros((2, 3)), "t1": np.zeros((3, 2))}
    out = H.hoist(src, ns, rec)
    assert "out=" not in out              # t0 is bound twice: not hoisted, nor its views
    src = "def replay(B, O):\n    t0 = c0_k1(c0_k2, c0_k2)\n    t1 = t0[c0_k4]\n    t2 = c0_k1(t1, t1)\n"
    ns["c0_k4"] = np.array([1, 0])        # a gather: a copy, kept as a line
    rec = {"t0": np.zeros((2, 3)), "t1": np.zeros((2, 3)), "t2": np.zeros((2, 3))}
    out = H.hoist(src, ns, rec)
    assert "    t1 = h_t0[c0_k4]" in out and "c0_k1(t1, t1, out=h_t2)" in out
    exec(out, ns)
    ns["replay"](None, None)
    np.testing.assert_array_equal(ns["h_t2"], 2 * (2 * ns["c0_k2"])[[1, 0]])


def test_constant_selects_and_small_gemms_in_buffers():
    """``np.where`` on a constant mask with one constant side: a buffer holding that side, the other copied in where
    selected; a small GEMM plus its addend: ``np.matmul`` into a buffer, the addend added in place (not the np.dot
    of a K = 1 product).  The same elements as the lines they replace, run after run."""
    from tgrad.kernels.runtime import blas
    rng = np.random.default_rng(0)
    f32 = np.dtype(np.float32)
    ns = {"_np": np, "c0_k1": rng.random(8) > 0.5, "c0_k2": np.float32([-0.0]), "c0_k3": blas.matmul_small,
          "c0_k4": f32, "c0_k5": rng.standard_normal((3, 4)).astype(f32),
          "c0_k6": rng.standard_normal((3, 1)).astype(f32),
          "c0_k7": rng.standard_normal((1, 4)).astype(f32), "x": rng.standard_normal(8).astype(f32),
          "a": rng.standard_normal((3, 5)).astype(f32), "b": rng.standard_normal((5, 4)).astype(f32)}
    src = ("def replay(B, O):\n    t0 = _np.where(c0_k1, x, c0_k2)\n    t1 = _np.where(c0_k1, c0_k2, t0)\n"
           "    t2 = (c0_k3(a, b, c0_k4) + c0_k5)\n    t3 = c0_k3(c0_k6, c0_k7, c0_k4)\n    return t1, t2, t3\n")
    ref = {}
    exec(src, dict(ns), ref)
    rec = dict(zip(("t1", "t2", "t3"), ref["replay"](None, None)), t0=np.where(ns["c0_k1"], ns["x"], ns["c0_k2"]))
    out = H.hoist(src, ns, rec)
    assert "_np.copyto(h_t0, x, where=c0_k1)" in out and "_np.copyto(h_t1, h_t0, where=h_t1_m)" in out
    assert "_np.matmul(a, b, dtype=c0_k4, out=h_t2); _np.add(h_t2, c0_k5, out=h_t2)" in out
    assert "t3 = c0_k3(c0_k6, c0_k7, c0_k4)" in out          # (K = 1: matmul_small's np.dot, kept)
    exec(out, ns)
    for _ in range(2):
        ns["x"][...] = rng.standard_normal(8)
        ns["a"][...] = rng.standard_normal((3, 5))
        got = ns["replay"](None, None)
        want = [np.where(ns["c0_k1"], ns["x"], ns["c0_k2"])]
        want = [np.where(ns["c0_k1"], ns["c0_k2"], want[0]), blas.matmul_small(ns["a"], ns["b"], f32) + ns["c0_k5"],
                blas.matmul_small(ns["c0_k6"], ns["c0_k7"], f32)]
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and np.array_equal(g.view(np.uint8), w.view(np.uint8))


def test_zero_accumulator_of_a_gemm_is_not_added():
    """A GEMM plus a constant +0.0 accumulator (a tape's ``tl.zeros``): the GEMM alone, in a buffer or not (np.matmul
    never returns -0.0, and x + 0.0 is x for every other x); a nonzero or a -0.0 addend, or a K = 1 product (np.dot:
    -0.0 * 1 is -0.0), keeps its add.  The same bits as the lines they replace."""
    from tgrad.kernels.runtime import blas
    rng = np.random.default_rng(1)
    f32 = np.dtype(np.float32)
    a = rng.standard_normal((3, 5)).astype(f32)
    a[0] = -0.0                         # a row of -0.0 products: +0.0 out of the GEMM
    ns = {"_np": np, "c0_k3": blas.matmul_small, "c0_k4": f32, "c0_k5": np.zeros((3, 4), f32),
          "c0_k6": np.full((3, 4), -0.0, f32), "c0_k7": np.zeros((200, 4), f32), "c0_k8": np.zeros((1, 1), f32),
          "a": a, "b": rng.standard_normal((5, 4)).astype(f32), "big": rng.standard_normal((200, 5)).astype(f32),
          "d": np.full((1, 1), -0.0, f32), "e": np.ones((1, 1), f32)}
    src = ("def replay(B, O):\n    t0 = (c0_k3(a, b, c0_k4) + c0_k5)\n    t1 = (c0_k3(a, b, c0_k4) + c0_k6)\n"
           "    t2 = (c0_k3(big, b, c0_k4) + c0_k7)\n    t3 = (c0_k3(d, e, c0_k4) + c0_k8)\n    return t0, t1, t2, t3\n")
    ref = {}
    exec(src, dict(ns), ref)
    want = ref["replay"](None, None)
    assert not np.signbit(want[0][0]).any() and np.signbit(want[3]).all() is np.False_   # (K = 1: -0.0 + 0.0)
    monkey = H.GEMM_ELEMS
    try:
        H.GEMM_ELEMS = 100              # t2 (800 elements) is not given a buffer: its add is dropped in place
        out = H.hoist(src, ns, dict(zip(("t0", "t1", "t2", "t3"), want)))
    finally:
        H.GEMM_ELEMS = monkey
    assert "_np.matmul(a, b, dtype=c0_k4, out=h_t0)\n" in out
    assert "_np.add(h_t1, c0_k6, out=h_t1)" in out
    assert "    t2 = c0_k3(big, b, c0_k4)\n" in out
    assert "    t3 = c0_k3(d, e, c0_k4); _np.add(t3, 0.0, out=t3)\n" in out   # (K = 1: +0.0 added in place)
    exec(out, ns)
    got = ns["replay"](None, None)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape and np.array_equal(g.view(np.uint8), w.view(np.uint8))


def test_loads_read_their_view_where_no_copy_is_needed():
    """A tape's load ``t = _nparray(view)`` becomes the view itself where ``t`` only goes to pure calls up to its
    ``del`` and nothing in between may write memory; a store, a launch's call in between, or ``t`` written (an
    ``out=``) keep the copy.  The same numbers either way."""
    rng = np.random.default_rng(3)
    f32 = np.dtype(np.float32)
    mem = rng.standard_normal(12).astype(f32)
    ns = {"_np": np, "_nparray": np.array, "c0_k1": np.add, "v0": mem[:6], "v1": mem[6:], "v2": np.zeros(6, f32),
          "k9": lambda: None}
    lines = ["def replay(B, O):",
             "    t0 = _nparray(v0)", "    t1 = c0_k1(t0, t0)", "    del t0",                  # uncopied
             "    t2 = _nparray(v1)", "    v0[...] = t1", "    t3 = c0_k1(t2, t1)", "    del t2",  # a store between
             "    t4 = _nparray(v0)", "    k9()", "    t5 = c0_k1(t4, t3)", "    del t4",          # a launch between
             "    t6 = _nparray(v1)", "    c0_k1(t6, t5, out=t6)", "    v2[...] = t6", "    del t6"]   # t6 written
    out = H._uncopied(lines, ns)
    assert out[1] == "    t0 = v0"
    assert [ln for ln in out if "_nparray" in ln] == [lines[4], lines[8], lines[12]]
    ns2 = dict(ns)
    exec("\n".join(out) + "\n", ns2)
    ref = dict(ns, v0=mem[:6].copy(), v1=mem[6:].copy(), v2=np.zeros(6, f32))
    exec("\n".join(lines) + "\n", ref)
    ref["replay"](None, None)
    ns2["replay"](None, None)
    for name in ("v0", "v1", "v2"):
        assert np.array_equal(ns2[name], ref[name])
    # writes into the program's own buffers keep no copy; into a buffer that is a view of memory (a hoisted view), do
    ns.update(h_own=np.zeros(6, f32), h_view=mem[:6])
    for buf, kept in (("h_own", False), ("h_view", True)):
        lines = ["def replay(B, O):", "    t0 = _nparray(v0)", f"    c0_k1(v1, v1, out={buf})",
                 "    t1 = c0_k1(t0, t0)", "    del t0"]
        assert ("_nparray" in H._uncopied(lines, ns)[1]) == kept
