"""A new shape's first launches (issue 18, warm-up): the interpreter's rewrite of a jit function from the source
the JITFunction read (same code, cached on disk by source), pointer types without Triton's mangler, and a
generic tape's builder ops loaded from disk, so a later process specializes a new shape by replaying them
(never through the interpreter), bit for bit as ``direct``."""
import numpy as np
import pytest
import triton
import triton.language as tl
import ml_dtypes

from tgrad.kernels import elementwise
from tgrad.kernels.runtime import direct as D
from tgrad.kernels.runtime import internals as IN
from tgrad.kernels.runtime import launcher as L
from tgrad.kernels.runtime import tape_cache as TC
from tgrad.kernels.runtime import trace as TR
from tgrad.kernels.runtime.direct import Ptr
from tgrad.kernels.runtime.launcher import run_cpu

CPU_ONLY = True     # tests the cpu executor: runs on cpu under --device cuda too (conftest)


@triton.jit
def rows_kernel(x_ptr, out_ptr, M, K, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rk = tl.arange(0, BLOCK_K)
    v = tl.load(x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
    s = tl.sum(v * v, axis=1)
    mx = tl.max(v, axis=1)
    tl.store(out_ptr + rm, s + tl.cumsum(mx, 0) * 0.5, mask=rm < M)


def _stock_rewrite(jitfn):
    return IN.InterpretedFunction(jitfn.fn).rewriter.rewrite_ast()


@pytest.mark.parametrize("jitfn", [rows_kernel, elementwise.binary_kernel, tl.standard._sum_combine, tl.standard.sum])
def test_rewrite_is_tritons(jitfn, monkeypatch):
    """Same code object (bytecode, constants, names, file and lines) as Triton's rewrite, with and without the
    code cache (a dict here), the second time loaded from it."""
    ref = _stock_rewrite(jitfn).__code__
    store = {}
    monkeypatch.setattr(IN, "CODE_CACHE", [None])
    for cache in (None, (store.get, store.__setitem__), (store.get, store.__setitem__)):
        IN.CODE_CACHE[0] = cache
        got = IN._rewrite_ast(IN.InterpretedFunction(jitfn.fn).rewriter, jitfn).__code__
        for attr in ("co_code", "co_consts", "co_names", "co_varnames", "co_filename", "co_firstlineno",
                     "co_linetable"):
            assert getattr(got, attr) == getattr(ref, attr), attr
    assert len(store) == 1


def test_pointer_types_are_tritons():
    for name in D._PTR_NAMES:
        dt = np.dtype(getattr(ml_dtypes, name, None) or name)
        assert D._ptr_type(dt) == tl.str_to_ty(triton.runtime.jit.mangle_type(Ptr(0, dt)), None), name


@pytest.fixture
def disk(tmp_path, monkeypatch):
    monkeypatch.setattr(TC, "ENABLED", True)
    monkeypatch.setattr(TC, "DIR", str(tmp_path))
    monkeypatch.setitem(TC._state, "disk_bytes", None)
    TR.clear_tapes()
    modes = []
    orig = TR.record

    def counting(fn, kw, dyn_names, base_values, generic=None, replay=None):
        modes.append("generic" if generic is not None else "replay" if replay is not None else "interpreter")
        return orig(fn, kw, dyn_names, base_values, generic, replay)
    monkeypatch.setattr(TR, "record", counting)
    yield modes
    TR.clear_tapes()


def _rows(M, K, executor=run_cpu):
    x = np.random.default_rng(M * K).standard_normal((M, K)).astype(np.float32)
    out = np.full(M, np.nan, np.float32)
    executor(rows_kernel, (-(-M // 16),), [Ptr(x.ctypes.data, x.dtype), Ptr(out.ctypes.data, out.dtype), M, K],
             {"BLOCK_M": 16, "BLOCK_K": 32})
    return out


def _direct(kernel, grid, args, constexprs):
    prev, L.EXECUTOR = L.EXECUTOR, "direct"
    try:
        run_cpu(kernel, grid, args, constexprs)
    finally:
        L.EXECUTOR = prev


def test_a_later_process_specializes_by_replaying_loaded_ops(disk, monkeypatch):
    ref = _rows(40, 30)
    assert disk == ["generic"]
    TR.clear_tapes()                        # as a new process: the generic tape and its ops on disk
    reads = []
    get_ops = TC.get_ops
    monkeypatch.setattr(TC, "get_ops", lambda name: reads.append(name) or get_ops(name))
    for M, K in ((40, 30), (70, 20), (5, 31)):
        del disk[:]
        first = _rows(M, K)
        assert len(reads) == (0 if M == 40 else 1)       # the ops are read when a key first specializes
        second = _rows(M, K)
        assert disk == ["replay"] * (-(-M // 16))     # the second launch: each program replays, none interpreted
        assert len(reads) == 1
        want = _rows(M, K, executor=_direct)
        np.testing.assert_array_equal(first, want)
        np.testing.assert_array_equal(second, want)
        np.testing.assert_array_equal(_rows(M, K), want)     # the specialized tape
    np.testing.assert_array_equal(_rows(40, 30), ref)


def test_unreadable_ops_fall_back_to_the_interpreter(disk):
    _rows(40, 30)
    for f in TC.os.listdir(TC.DIR):
        if f.endswith(".ops"):
            with open(TC.os.path.join(TC.DIR, f), "wb") as fh:
                fh.write(b"not a pickle")
    TR.clear_tapes()
    del disk[:]
    _rows(33, 30)
    np.testing.assert_array_equal(_rows(33, 30), _rows(33, 30, executor=_direct))
    assert "interpreter" in disk and "replay" not in disk


def test_launch_caches_are_bounded_with_the_tapes(monkeypatch):
    """Past the tapes' byte budget, the launchers' cpu launches of evicted and one-off shapes go with the tapes:
    many sizes keep a bounded number of launches and tape bytes."""
    import tgrad
    TR.clear_tapes()
    monkeypatch.setattr(TR, "MAX_TAPE_BYTES", 1 << 17)
    sizes = range(1, 301, 3)
    for n in sizes:
        x = tgrad.arange(n, dtype=tgrad.float32)
        for _ in range(2):
            y = x * 2.0 + 1.0
        assert y[-1].item() == 2.0 * (n - 1) + 1.0
    info = TR.cache_info()
    # (the budget is enforced when a shape's tape is installed; generic tapes traced since may pass it by their size)
    assert info["evicted"] > 0 and info["bytes"] <= TR.MAX_TAPE_BYTES * 9 // 8
    assert info["sites"] < len(sizes)         # (without dropping them: a launch per size and kernel)
    TR.clear_tapes()


def test_builder_ops_holding_native_ufuncs_are_stored(tmp_path, monkeypatch):
    """A generic tape's ops may hold aten_cpu.c's ufuncs (create_native): they are stored by name and read back
    as the same ufunc (pickling them by default reached pytest's py.error module and raised IndexError)."""
    from tgrad.kernels.runtime import native
    f = native.aten_ufunc("sleef_expf")
    if f is None:
        pytest.skip("no C compiler: no native helpers")
    monkeypatch.setattr(TC, "DIR", str(tmp_path))
    TC.put_ops("native_ops", [[("create_native", None, (f, 1), {}, 0, None)]])
    got = TC.get_ops("native_ops")
    assert got is not None and got[0][0][2][0] is f
