"""Pins every Triton internal that tgrad/kernels/runtime/ relies on, and the dual-mode behaviour.

A Triton upgrade that renames or changes one of these fails here, loudly,
instead of as wrong numbers somewhere else.  pyproject.toml pins Triton to
the minor version these pass on.
"""
import contextlib
import dataclasses
import inspect
import io
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import triton
import triton.language as tl
from triton.runtime import interpreter as I
from triton.runtime.jit import JITFunction, mangle_type

import tgrad
from tgrad.kernels.runtime import host_state as HS
from tgrad.kernels.runtime import internals as TI
from tgrad.kernels.runtime import launcher as T
from tgrad.kernels.runtime import tape as TP
from tgrad.kernels.runtime import trace as TR
from tgrad.kernels._lang import kptr

ROOT = Path(__file__).resolve().parents[2]
SOURCE = "".join(p.read_text() for p in sorted((ROOT / "tgrad" / "kernels" / "runtime").glob("*.py")))
EXECUTORS = sorted({"direct", "stock", T.EXECUTOR})   # T.EXECUTOR: the default (or TGRAD_EXECUTOR's choice)


CPU_ONLY = True     # tests the cpu executors: runs on cpu under --device cuda too (conftest)


@triton.jit
def _scale(x, s):
    return x * s


@triton.jit
def scaled_sum_kernel(x_ptr, out_ptr, n, s, BLOCK: tl.constexpr):
    """out[0] = sum(s * x[:n]); calls a @triton.jit helper and a tl library function (tl.sum)."""
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(_scale(x, s), axis=0))


@triton.jit
def bad_arange_kernel(out_ptr, BLOCK: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, BLOCK), 1.0)


@triton.jit
def assert_positive_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_assert(x > 0, "x must be positive")


@pytest.fixture
def executor():
    prev = T.EXECUTOR
    yield
    T.EXECUTOR = prev


def _scaled_sum(x, s=2.0):
    out = tgrad.zeros(1)
    T.launch(scaled_sum_kernel, (1,), "cpu", [kptr(x), kptr(out), x.numel(), s], {"BLOCK": 16})
    return out.item()


# ------------------------------------------------------------------ names, signatures, fields
def test_triton_version_is_the_pinned_minor():
    assert triton.__version__.startswith("3.9.")
    pin = re.search(r'"triton>=([\d.]+),<([\d.]+)"', (ROOT / "pyproject.toml").read_text())
    assert pin and pin.groups() == ("3.9", "3.10")


def test_interpreter_module_names_used_exist():
    used = set(re.findall(r"\b_I\.(\w+)", SOURCE))
    assert {"_patch_lang", "_implicit_cvt", "interpreter_builder", "GridExecutor", "TensorHandle",
            "InterpreterError"} <= used
    missing = sorted(n for n in used if not hasattr(I, n))
    assert not missing, f"triton.runtime.interpreter lacks {missing}"


def test_builder_methods_named_in_source_exist():
    """Builder ops the trace executor lowers by name (if renamed, lowering would silently stop)."""
    names = set(re.findall(r'name == "(\w+)"', SOURCE)) | {"set_grid_dim", "set_grid_idx"}
    missing = sorted(n for n in names if not hasattr(I.interpreter_builder, n))
    assert not missing, f"interpreter_builder lacks {missing}"


def test_interpreter_signatures():
    assert list(inspect.signature(TI._orig_patch_lang).parameters) == ["fn"]
    assert list(inspect.signature(I._implicit_cvt).parameters) == ["arg"]
    assert list(inspect.signature(I.GridExecutor.__init__).parameters)[:4] == ["self", "fn", "arg_names", "grid"]
    assert list(inspect.signature(I.InterpretedFunction.run).parameters) == ["self", "args", "grid", "warmup",
                                                                            "kwargs"]
    assert list(inspect.signature(I.InterpretedFunction.rewrite).parameters) == ["self"]
    assert list(inspect.signature(I.TensorHandle.__init__).parameters)[:3] == ["self", "data", "dtype"]
    b = I.interpreter_builder
    assert list(inspect.signature(b.set_grid_dim).parameters) == ["nx", "ny", "nz"]
    assert list(inspect.signature(b.set_grid_idx).parameters) == ["x", "y", "z"]
    assert issubclass(I.InterpreterError, Exception)


def test_interpreter_options_fields():
    fields = {f.name for f in dataclasses.fields(I.InterpreterOptions)}
    assert {"debug", "sanitize_overflow"} <= fields
    assert isinstance(I.interpreter_builder.options, I.InterpreterOptions)
    assert I.interpreter_builder.options.debug == (os.environ.get("TGRAD_INTERPRET_DEBUG") == "1")


def test_value_conversions():
    h = I.TensorHandle(np.array([7], dtype=np.int32), tl.int32)
    assert h.data.tolist() == [7] and h.dtype == tl.int32
    assert I._implicit_cvt(1.5) == 1.5                        # floats pass through as Python floats
    assert I._implicit_cvt(2 ** 40).dtype == tl.int64 and I._implicit_cvt(True).dtype == tl.int1
    p = I._implicit_cvt(T.Ptr(4096, np.dtype(np.float16)))    # anything with data_ptr() is a pointer
    assert p.dtype.element_ty == tl.float16 and p.handle.data.tolist() == [4096]
    ty = tl.str_to_ty("*bf16", None)
    assert ty.is_ptr() and ty.element_ty == tl.bfloat16
    assert mangle_type(3) == "i32" and mangle_type(2 ** 31) == "i64" and mangle_type(0.5) == "fp32"


def test_jit_function_metadata():
    k = scaled_sum_kernel
    assert isinstance(k, JITFunction) and callable(k.fn) and k.__name__ == "scaled_sum_kernel"
    assert k.arg_names == ["x_ptr", "out_ptr", "n", "s", "BLOCK"]
    p = k.params[-1]
    assert (p.name, p.is_constexpr, p.has_default) == ("BLOCK", True, False)
    assert not k.params[0].is_constexpr


def test_grid_executor_constexprs_and_interpreted_twin():
    tw = TI._twin(scaled_sum_kernel)
    assert TI._twin(scaled_sum_kernel) is tw                   # cached on the JITFunction
    assert isinstance(tw, I.InterpretedFunction) and list(tw.arg_names) == scaled_sum_kernel.arg_names
    assert set(I.GridExecutor(scaled_sum_kernel.fn, tw.arg_names, (1,)).constexprs) == {"BLOCK"}
    assert callable(tw.rewrite())


def test_patch_lang_patches_and_restores_tl_and_tl_core():
    with TI.LOCK:
        TI._lang_for_compiler()
        before = (tl.arange, tl.core.arange, tl.sum)
        scope = TI._orig_patch_lang(TI._anchor)
        try:
            assert tl.arange is not before[0] and tl.core.arange is not before[1]
        finally:
            scope.restore()
        assert (tl.arange, tl.core.arange, tl.sum) == before


def test_jit_call_is_routed():
    assert JITFunction.__call__ is TI._jit_call
    x = tgrad.arange(5.0)
    assert _scaled_sum(x) == 20.0                             # the helper _scale ran interpreted
    assert not getattr(TI._tls, "interp", 0)
    with pytest.raises(Exception, match="outside of the scope of a kernel"):
        _scale(1.0, 2.0)                                      # outside a launch: Triton's own behaviour


def test_compile_side_internals_used_by_the_aot_check(tmp_path):
    from triton.backends.nvidia.compiler import get_ptxas
    from triton import knobs
    assert os.access(get_ptxas(80).path, os.X_OK) and os.access(get_ptxas(90).path, os.X_OK)
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "s": "fp32", "BLOCK": "constexpr"}
    prev = knobs.cache.dir, knobs.nvidia.dump_ptxas_log
    out = io.StringIO()
    try:
        knobs.cache.dir, knobs.nvidia.dump_ptxas_log = str(tmp_path), True     # a cache miss runs ptxas -v
        with contextlib.redirect_stdout(out):
            k = T.compile_aot(scaled_sum_kernel, sig, {"BLOCK": 32}, 90, {(0,): [["tt.divisibility", 16]]})
    finally:
        knobs.cache.dir, knobs.nvidia.dump_ptxas_log = prev
    assert re.search(r"Used \d+ registers", out.getvalue()) and "bytes spill stores" in out.getvalue()
    assert len(k.hash) > 16 and isinstance(k.metadata.shared, int) and ".target sm_90a" in k.asm["ptx"]


# ------------------------------------------------------------------ behaviour
@pytest.mark.parametrize("ex", EXECUTORS)
def test_interpret_then_compile_then_interpret(ex, executor):
    """The dual-mode trap: a GPU compile between interpreted launches (tl must be restored, then re-patched)."""
    T.EXECUTOR = ex
    x = tgrad.arange(7.0)
    assert _scaled_sum(x, 0.5) == 10.5
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "s": "fp32", "BLOCK": "constexpr"}
    k = T.compile_aot(scaled_sum_kernel, sig, {"BLOCK": 16}, 80)
    assert ".entry scaled_sum_kernel" in k.asm["ptx"] and len(k.asm["cubin"]) > 0
    assert isinstance(k.metadata.shared, int)
    for _ in range(3):                                        # trace records on the 2nd launch, replays on the 3rd
        assert _scaled_sum(x, 0.5) == 10.5
    assert (tgrad.ones(3) * 2).tolist() == [2.0, 2.0, 2.0]


def _workload():
    tgrad.manual_seed(7)
    a = tgrad.randn(5, 33)
    b = tgrad.rand(33, dtype=tgrad.float64)
    h = a.to(tgrad.bfloat16)
    outs = [a + b, a.t() * 3.0, (a / 1.7).exp(), a ** 3, h * h + 1, a.sum(1), a.mean(), a.sum(0),
            h.float() - a, (a * 100).to(tgrad.int16), tgrad.randn(2, 40), tgrad.randint(0, 9, (17,))]
    return [o.cpu().numpy().copy() for o in outs]


def test_executors_are_bit_identical(executor):
    results = {}
    for ex in EXECUTORS:
        T.EXECUTOR = ex
        runs = [_workload() for _ in range(3)]                # 3 runs: trace records, then replays
        for r in runs[1:]:
            for x, y in zip(runs[0], r):
                assert x.tobytes() == y.tobytes(), ex
        results[ex] = runs[0]
    first = results[EXECUTORS[0]]
    for ex, res in results.items():
        for i, (x, y) in enumerate(zip(first, res)):
            assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), f"output {i}: {EXECUTORS[0]} vs {ex}"


@pytest.mark.parametrize("ex", EXECUTORS)
def test_failed_interpreted_launch_leaves_a_clean_state(ex, executor):
    T.EXECUTOR = ex
    out = tgrad.zeros(4)
    with pytest.raises(Exception, match="power of 2|arange"):
        T.launch(bad_arange_kernel, (1,), "cpu", [kptr(out)], {"BLOCK": 3})
    assert not getattr(TI._tls, "interp", 0)
    assert _scaled_sum(tgrad.ones(4), 1.0) == 4.0
    sig = {"out_ptr": "*fp32", "BLOCK": "constexpr"}
    assert T.compile_aot(bad_arange_kernel, sig, {"BLOCK": 4}, 90).asm["ptx"]


def test_interpret_debug_turns_on_device_assert():
    x = tgrad.tensor([1.0, -1.0])
    with TI.LOCK:
        TI._set_options(True)
        try:
            with pytest.raises(Exception, match="x must be positive"):
                T.launch(assert_positive_kernel, (1,), "cpu", [kptr(x)], {"BLOCK": 2})
        finally:
            TI._set_options(os.environ.get("TGRAD_INTERPRET_DEBUG", "") == "1")
    if not I.interpreter_builder.options.debug:
        T.launch(assert_positive_kernel, (1,), "cpu", [kptr(x)], {"BLOCK": 2})   # compiled out, like the GPU


def test_concurrent_interpreted_launches_are_serialized():
    errors = []

    def work(k):
        try:
            for i in range(15):
                x = tgrad.full((k + 3, 7), float(i))
                y = (x * 2 + k).sum(1)
                assert y.tolist() == [7.0 * (2 * i + k)] * (k + 3)
                # unlocked replays (above) interleaved with locked ones (argmax, cumsum call the builder)
                z = x + tgrad.arange(7.0)
                assert z.argmax(1).tolist() == [6] * (k + 3)
                assert z.cumsum(1)[:, -1].tolist() == [7.0 * i + 21.0] * (k + 3)
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_replays_silence_and_restore_the_callers_numpy_error_state():
    """Launches (recorded and replayed, locked or not, in any thread) never raise or warn on x / 0, and
    leave each thread's numpy error state as it was."""
    results, errors = [], []

    def work():
        try:
            x, z = tgrad.tensor([1.0, 0.0, -1.0]), tgrad.zeros(3)
            with np.errstate(all="raise"):
                for _ in range(4):                      # direct, record, then replays
                    results.append((x / z).tolist())
                assert np.geterr() == dict(divide="raise", over="raise", under="raise", invalid="raise")
                with pytest.raises(FloatingPointError):
                    np.float64(1.0) / np.float64(0.0)
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    work()
    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(results) == 16 and all(r[0] == np.inf and r[1] != r[1] and r[2] == -np.inf for r in results)


def test_tapes_that_call_the_builder_replay_under_the_lock():
    """A tape whose ops are all numpy expressions replays unlocked; one that calls the interpreter's builder
    (argmax's two-output reduction) is wrapped to take LOCK, as the interpreter is not thread-safe."""
    x = tgrad.randn(5, 11)
    for _ in range(2):
        x.argmax(1)
        x.sum(1)
    sites, call = [], T.Launch.__call__
    T.Launch.__call__ = lambda self, *dyn: (sites.append(self), call(self, *dyn))[1]
    try:
        x.argmax(1)
        x.sum(1)
    finally:
        T.Launch.__call__ = call
    tapes = [s.tape for s in sites]
    assert [t.__name__ for t in tapes] == ["locked", "run"]
    assert all(("# " in t.source) == (t.__name__ == "locked") for t in tapes)
    held = []

    def run(*dyn):
        held.append((TI.LOCK._is_owned(), TI._tls.interp, TI._scope[0] is not None))
    run.source = ""
    TP._serialized(run)(1)
    assert held == [(True, 1, True)] and getattr(TI._tls, "interp", 0) == 0


def _env_run(code, **env):
    e = dict(os.environ, PYTHONPATH=str(ROOT), **env)
    return subprocess.run([sys.executable, "-c", code], env=e, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_environment_switches():
    r = _env_run("import tgrad.kernels.runtime.launcher as T; from triton.runtime import interpreter as I; "
                 "print(T.EXECUTOR, I.interpreter_builder.options.debug, I.interpreter_builder.options.sanitize_overflow)",
                 TGRAD_EXECUTOR="stock", TGRAD_INTERPRET_DEBUG="1")
    assert r.returncode == 0 and r.stdout.split() == ["stock", "True", "True"], r.stderr
    r = _env_run("import tgrad", TGRAD_EXECUTOR="fast")
    assert r.returncode != 0 and "TGRAD_EXECUTOR must be" in r.stderr
    r = _env_run("import tgrad", TRITON_INTERPRET="1")
    assert r.returncode != 0 and "unset TRITON_INTERPRET" in r.stderr


def test_random_replay_takes_new_seed_and_offset(executor):
    """random_kernel's seed and offset are dynamic: a replayed tape draws new numbers, the stock ones (a
    Philox generator: cuda's; the cpu default generator's words kernels are checked alike)."""
    draws = {}
    g = tgrad.Generator("cpu", _philox=True)
    for ex in EXECUTORS:
        T.EXECUTOR = ex
        out = []
        for seed in range(4):
            g.manual_seed(seed)
            out += [tgrad.randn(300, generator=g).numpy().copy(), tgrad.randn(300, generator=g).numpy().copy()]
            tgrad.manual_seed(seed)
            out += [tgrad.randn(300).cpu().numpy().copy(), tgrad.rand(300).cpu().numpy().copy()]
        draws[ex] = out
    assert len({d.tobytes() for d in draws["trace"]}) == 16
    from tgrad.kernels.random import random_kernel
    if "trace" in EXECUTORS:   # one tape serves every seed and offset
        assert [v for k, v in TR._TAPES.items() if k[0] is random_kernel and v] != []
    for ex in EXECUTORS:
        assert all(a.tobytes() == b.tobytes() for a, b in zip(draws[EXECUTORS[0]], draws[ex])), ex


def test_numpy_error_state_internals():
    """The replay path silences FP warnings through numpy's own error-state context variable."""
    import numpy as np
    from numpy._core import umath
    assert hasattr(umath, "_extobj_contextvar") and callable(umath._make_extobj)
    a = np.array([1.0, 0.0], np.float32)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        token = HS.FP_STATE.set(umath._make_extobj(all="ignore"))
        try:
            a / 0.0                                     # no RuntimeWarning inside the silenced section
        finally:
            HS.FP_STATE.reset(token)
