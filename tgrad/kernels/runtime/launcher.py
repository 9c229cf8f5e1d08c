"""The launch path: ``Launch``/``launch`` route a kernel to the GPU JIT or to an interpreter executor.

Three interpreter executors for ``cpu`` (``TGRAD_EXECUTOR``), bit-identical by test: ``trace`` (the
default: ``direct`` plus trace-and-replay, ``trace.py``), ``direct`` (``direct.py``) and ``stock``
(Triton's own ``InterpretedFunction.run``, patching and restoring ``tl`` around every launch).  Float
scalar arguments are rounded to fp32 on every path (by a replayed tape itself), because that is what
the GPU JIT passes, so all paths agree bit for bit.
"""
import collections
import functools
import os

import numpy as np
import triton

from . import gpu, host_state
from .direct import Ptr, _run_direct
from .host_state import FP_STATE as _FP_STATE
from .host_state import LOCK, keep_heap
from .host_state import fp_ignore as _fp_ignore
from .internals import _I, _lang_for_compiler, _lang_for_interpreter, _tls, _twin, jit_options, jit_spec
from .trace import _COLD, _FAST, CACHES, _fast_key, _run_trace, touch

_np_f32 = np.float32

EXECUTOR = os.environ.get("TGRAD_EXECUTOR", "trace")
if EXECUTOR not in ("trace", "direct", "stock"):
    raise RuntimeError(f"TGRAD_EXECUTOR must be 'trace', 'direct' or 'stock', got {EXECUTOR!r}")


# ---------------------------------------------------------------- the launch path: cpu/gpu fork
def launch(kernel, grid, device, args, constexprs):
    """Run ``kernel[grid](*args, **constexprs)`` on ``device`` ("cpu" or "cuda").

    ``args`` are Ptr objects and Python ints/floats; ``constexprs`` the
    kernel's ``tl.constexpr`` parameters by name.
    """
    Launch(kernel, grid, device, args, constexprs)()


def _launch(kernel, grid, device, args, constexprs, options=None):
    if 0 in grid or device == "meta":       # meta tensors: the launcher made the outputs, nothing to compute
        return
    if device == "cpu":
        run_cpu(kernel, grid, args, constexprs)
        return
    gpu.launch(kernel, grid, device, args, constexprs, options)


def run_cpu(kernel, grid, args, constexprs):
    """Run ``kernel`` over ``grid`` with the interpreter executor (host addresses; fp32-rounded floats)."""
    with LOCK:
        tok = _FP_STATE.set(_fp_ignore(_FP_STATE.get()))   # masked-off lanes compute garbage (e.g. x / 0)
        _tls.interp = 1
        try:
            if EXECUTOR == "trace":
                keep_heap()             # (tl is patched where a program is interpreted: trace.py, direct.py)
                _run_trace(kernel, grid, args, constexprs)
            elif EXECUTOR == "direct":
                _lang_for_interpreter()
                _run_direct(kernel, grid, args, constexprs)
            else:
                _lang_for_compiler()
                _twin(kernel).run(*args, grid=grid, warmup=False, **constexprs)
        except _I.InterpreterError as e:
            raise RuntimeError(f"kernel {kernel.__name__} failed in the interpreter: {e}") from e
        finally:
            _tls.interp = 0
            _FP_STATE.reset(tok)


# ---------------------------------------------------------------- launch counting
class LaunchCounter:
    """Counts kernel launches per kernel name (read by tgrad.profiler)."""

    def __init__(self):
        self.enabled = False
        self.counts = collections.Counter()

    def add(self, name):
        self.counts[name] += 1


COUNTER = LaunchCounter()


# ---------------------------------------------------------------- launch recording
# The one recording hook: None, or a recorder called as ``RECORD(site, dyn)`` before every kernel launch
# (every launch goes through ``Launch.__call__``) with the Launch and its dynamic arguments.  A recorder
# whose ``exact`` is true sends each launch down the plain path (arguments rebuilt, no replayed tape, no
# cuda Site), where ``DRY_RUN`` can skip it.  Recorders: ``SpecRecord`` (tgrad.kernels.aot and tests: the
# Triton specialization of each launch) and tgrad.compile's (the launches of a step, to replay them).
RECORD = None
DRY_RUN = False          # while an exact recorder records: skip running the kernels (outputs keep old memory)


class SpecRecord(list):
    """A recorder collecting ``(kernel, signature, constexprs, attrs)`` of every non-empty launch
    (``launch_spec``): ``launcher.RECORD = rec = SpecRecord()``; ``options[i]``: entry i's Launch options."""

    exact = True
    takes_memsets = False       # (a zero fill launches its kernel: recorded)

    def __init__(self):
        super().__init__()
        self.options = []

    def __call__(self, site, dyn):
        if 0 not in site.grid:
            self.append((site.kernel,) + launch_spec(site.kernel, site.bind(dyn), site.constexprs))
            self.options.append(site.options)


def launch_spec(kernel, args, constexprs):
    """(signature, constexprs, attrs) of a launch exactly as the GPU JIT specializes it at run time.

    Triton's own binder decides (``internals.jit_spec``): ``*fp32``/``i32``/``fp32``/``constexpr`` per
    parameter, an int equal to 1 becoming a constexpr, ``tt.divisibility`` 16 on pointers and ints that
    are multiples of 16 (not on ``dynamic_args`` ints).  ``compile_aot`` of it fills the cache entry the
    JIT looks up, so a GPU run of the recorded workload compiles nothing.
    """
    return jit_spec(kernel, args, constexprs)


def _run_tape(tape, dyn):
    """Replay a compiled cpu tape under the launch's floating-point error state (numpy's, cached per state)."""
    outer, c = _FP_STATE.get(), host_state.fp_cache
    tok = _FP_STATE.set(c[1] if outer is c[0] else _fp_ignore(outer))
    try:
        tape(*dyn)
    finally:
        _FP_STATE.reset(tok)


class Launch:
    """``kernel[grid](*args, **constexprs)`` on ``device`` with all but its dynamic arguments fixed.

    Calling it launches with new dynamic arguments (pointer addresses, floats and ``dynamic_args``
    ints, in argument order; those left out keep the values given here).  A launcher keeps one per
    launch site, keyed on everything that decides ``args`` and ``constexprs`` (shapes, strides,
    dtypes, int scalars, device, ``FORCE_GPU_BLOCKS``): a replayed launch then skips rebuilding the
    arguments and the trace key.  Ints declared by ``dynamic_args`` must stay in the int32 / int64
    class of the ones given here.

    ``options``: the GPU compile options to try (``num_stages``, ``num_warps``), a tuple of dicts, the
    preferred first: a cuda launch uses the first whose kernel fits the device's shared memory (the AOT
    compile tries them in the same order); None: Triton's defaults.  The cpu executors ignore them.
    """

    __slots__ = ("kernel", "grid", "device", "args", "constexprs", "options", "pos", "dyn", "ndyn", "fkey",
                 "tape", "gpu")

    def __init__(self, kernel, grid, device, args, constexprs, options=None):
        self.kernel, self.grid, self.device = kernel, tuple(grid), device
        self.args, self.constexprs, self.options = list(args), constexprs, options
        fkey, self.pos = _fast_key(kernel, self.grid, args, constexprs)
        self.dyn = tuple(args[i].ptr if type(args[i]) is Ptr else args[i] for i in self.pos)
        self.ndyn = len(self.pos)
        self.fkey = fkey if device == "cpu" and 0 not in self.grid else None
        self.tape = None
        self.gpu = None                 # the cuda path's gpu.site, made on the first cuda call
        twin = kernel.__dict__.get("_tgrad_cpu_twin") if self.fkey is not None else None
        if twin is not None:
            self.tape = twin(self.args, constexprs, self.grid)

    def __call__(self, *dyn):
        tape = self.tape
        if tape is not None and RECORD is None and not COUNTER.enabled and EXECUTOR == "trace":
            # the common cpu launch, a replayed tape, tested first (host time per op): _run_tape written out
            if len(dyn) < self.ndyn:
                dyn += self.dyn[len(dyn):]
            outer, c = _FP_STATE.get(), host_state.fp_cache
            tok = _FP_STATE.set(c[1] if outer is c[0] else _fp_ignore(outer))
            try:
                tape(*dyn)
            finally:
                _FP_STATE.reset(tok)
            return
        if self.device == "meta":       # no memory, nothing to compute: the outputs' metadata is all there is
            return
        if COUNTER.enabled:
            COUNTER.add(self.kernel.__name__)
        if len(dyn) < self.ndyn:
            dyn += self.dyn[len(dyn):]
        rec = RECORD
        if rec is not None:
            rec(self, dyn)
            if rec.exact:
                if not DRY_RUN:
                    _launch(self.kernel, self.grid, self.device, self.bind(dyn), self.constexprs, self.options)
                return
        site = self.gpu
        if site is not None:
            site(self, dyn)
            return
        if self.device != "cpu" and 0 not in self.grid:
            site = self.gpu = gpu.site(self)
            site(self, dyn)
            return
        tape = self.tape
        if tape is None and self.fkey is not None:
            hit = _FAST.get(self.fkey)
            if hit is not None and hit[0] is self.kernel:
                tape = self.tape = hit[1]
                if _COLD:
                    touch(hit[2])
        if tape is not None and EXECUTOR == "trace":
            _run_tape(tape, dyn)
            return
        _launch(self.kernel, self.grid, self.device, self.bind(dyn), self.constexprs)

    def bind(self, dyn):
        """The launch's arguments with ``dyn`` in place; float scalars rounded to fp32 (as the GPU JIT passes
        them, so every path agrees)."""
        args = list(self.args)
        for i, v in zip(self.pos, dyn):
            a = args[i]
            args[i] = Ptr(v, a.dtype) if type(a) is Ptr else v
        return [float(_np_f32(a)) if type(a) is float else a for a in args]


class CpuTwin(functools.partial):
    """A kernel's C twin bound to a cpu launch's fixed arguments, its tape (``Launch.tape``, the compiled replay's
    call): ``twin(*dyn)`` computes what the kernel's traced tape computes, the same bits (``cpu_twin``)."""


def cpu_twin(kernel, make):
    """Give ``kernel`` a C twin on the cpu: ``make(args, constexprs, grid)`` is the CpuTwin of a cpu Launch or None
    (the kernel's traced tape runs).  Only the ``trace`` executor's Launch calls it; other executors, cuda launches and
    exact recorders (AOT, the fake driver) run the kernel itself."""
    kernel.__dict__["_tgrad_cpu_twin"] = make
    return kernel


def tape_fallback(kernel, grid, args, constexprs):
    """``run(*dyn)``: ``kernel`` over ``grid`` on the cpu (its traced tape) with the dynamic arguments ``dyn`` in
    place of those in ``args``: a C twin's way back for inputs it does not take (cnn_cpu.c: non-finite ones)."""
    def run(*dyn):
        a = list(args)
        for i, v in zip(_fast_key(kernel, grid, args, constexprs)[1], dyn):
            a[i] = Ptr(v, a[i].dtype) if type(a[i]) is Ptr else v
        run_cpu(kernel, grid, a, constexprs)
    return run


class Sites(dict):
    """A launcher's cache of Launch objects by launch key (bounded: cleared when full, and with the tapes
    when those pass ``trace.MAX_TAPE_BYTES``)."""

    __slots__ = ()

    def __init__(self):
        super().__init__()
        CACHES.append(self)

    def add(self, key, site):
        if len(self) >= 4096:
            self.clear()
        self[key] = site
        return site


# ---------------------------------------------------------------- ahead-of-time compile
def compile_aot(kernel, signature, constexprs, arch, attrs=None, options=None):
    """Compile ``kernel`` for ``sm_<arch>`` without a GPU, with the options the JIT uses (``options``: a Launch's
    ``num_stages``/``num_warps``); returns Triton's CompiledKernel (left in Triton's cache, where the JIT finds
    a launch of the same specialization)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    with LOCK:
        _lang_for_compiler()
        src = ASTSource(fn=kernel, signature=signature, constexprs=constexprs, attrs=attrs)
        return triton.compile(src, target=GPUTarget("cuda", arch, 32), options=jit_options(kernel, arch, options))


# ---------------------------------------------------------------- block sizes
FORCE_GPU_BLOCKS = False  # set by tgrad.kernels.aot: cpu launches use the GPU's block sizes


def gpu_blocks(device):
    """True when block sizes must be the GPU's: a cuda launch, or a cpu launch recorded for the AOT check."""
    return device != "cpu" or FORCE_GPU_BLOCKS


def cdiv(a, b):
    """ceil(a / b) of host ints (``triton.cdiv`` is a constexpr function: ~3 us a call through its wrapper)."""
    return (a + b - 1) // b


def next_pow2(n):
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def elementwise_block(n, device, ndim=0):
    """Elements per program: large on cpu (the interpreter pays per program), 1024 on cuda.

    ``ndim``: the most dims any operand is addressed through (strided launches).
    On cuda the block halves from two dims on and per two dims past three, keeping the index maths in
    registers (1024 elements x 6 dims spill on sm_90, 1024 x 2 dims of three strided operands 4-12 bytes on
    sm_80; 256 x 6 use ~94 registers).
    """
    if gpu_blocks(device):
        return 1024 >> (max(ndim - 1, 0) // 2 + (ndim == 2))
    return max(16, min(next_pow2(n), 65536))
