"""The one module that touches Triton's internals: dual-mode launching.

``cpu`` tensors run their kernels in Triton's interpreter, ``cuda`` tensors
through the JIT compiler, in the same process, with ``TRITON_INTERPRET``
unset (see shared TRITON_NOTES.md "dual mode").  What this relies on, and
``tests/test_triton_internals.py`` pins:

- ``triton.runtime.interpreter``: ``_patch_lang``, ``_implicit_cvt``,
  ``interpreter_builder`` (``set_grid_dim``/``set_grid_idx``/``options``),
  ``InterpreterOptions``, ``InterpretedFunction.rewrite``, ``GridExecutor``;
- ``JITFunction.__call__`` (routed to an interpreted twin while an
  interpreted launch runs, so ``tl.sum``, ``tl.randn`` and our own
  ``@triton.jit`` helpers work inside interpreted kernels).

Two interpreter executors:

- ``direct`` (default): ``triton.language`` is patched for the interpreter
  once and left patched until a GPU compile needs it back; each launch calls
  the rewritten kernel function over the grid itself (no GridExecutor, no
  ``inspect`` per launch, no host copies: our pointers already are host
  memory).  About 50x less fixed cost per launch than the stock path.
- ``stock``: Triton's own ``InterpretedFunction.run`` (GridExecutor), patching
  and restoring ``tl``/``tl.core`` around every launch.  Selected with
  ``TGRAD_EXECUTOR=stock``; CI runs the op tests under both.

Interpreted launches are serialized by one lock: the interpreter mutates
``triton.language`` and keeps per-launch state in a global builder.
"""
import collections
import dataclasses
import os
import threading

assert not os.environ.get("TRITON_INTERPRET"), \
    "tgrad routes each launch itself; unset TRITON_INTERPRET (it breaks GPU compiles)"
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")   # silence 3.9's once-per-process warning
os.environ.setdefault("TRITON_DEFAULT_BACKEND", "nvidia")  # never probe HIP (it imports torch)

import numpy as np  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.runtime import interpreter as _I  # noqa: E402
from triton.runtime.interpreter import InterpretedFunction  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402

TRITON_VERSION = triton.__version__
_tl_core = tl.core  # a module global, so _patch_lang(_anchor) patches tl AND tl.core


def _anchor():
    pass


LOCK = threading.RLock()
_tls = threading.local()
_orig_patch_lang = _I._patch_lang
_scope = [None]          # the live patch scope of the direct executor, or None


def _patch_lang_all(fn):
    # stock executor: every launch patches (and restores) both tl and tl.core
    return _orig_patch_lang(_anchor)


_I._patch_lang = _patch_lang_all


def _lang_for_interpreter():
    if _scope[0] is None:
        _scope[0] = _orig_patch_lang(_anchor)


def _lang_for_compiler():
    if _scope[0] is not None:
        _scope[0].restore()
        _scope[0] = None


def _twin(jitfn):
    # cached on the object: hashing a JITFunction while tl is patched fails
    tw = jitfn.__dict__.get("_tgrad_twin")
    if tw is None:
        tw = jitfn.__dict__["_tgrad_twin"] = InterpretedFunction(jitfn.fn)
    return tw


_orig_jit_call = JITFunction.__call__


def _jit_call(self, *args, **kwargs):
    if getattr(_tls, "interp", 0):
        return _twin(self).rewrite()(*args, **kwargs)
    return _orig_jit_call(self, *args, **kwargs)


JITFunction.__call__ = _jit_call


def _set_options(debug):
    b = _I.interpreter_builder
    b.options = dataclasses.replace(b.options, debug=debug, sanitize_overflow=debug)


_set_options(os.environ.get("TGRAD_INTERPRET_DEBUG", "") == "1")
EXECUTOR = os.environ.get("TGRAD_EXECUTOR", "direct")
if EXECUTOR not in ("direct", "stock"):
    raise RuntimeError(f"TGRAD_EXECUTOR must be 'direct' or 'stock', got {EXECUTOR!r}")


class Ptr:
    """A kernel pointer argument: address + numpy dtype (the pointer type Triton sees).

    The stock interpreter calls torch-like methods on pointer arguments to copy
    them to the host; for host memory these are identities / no-ops.
    """

    __slots__ = ("ptr", "dtype")

    def __init__(self, ptr, dtype):
        self.ptr = ptr
        self.dtype = dtype

    def data_ptr(self):
        return self.ptr

    def untyped_storage(self):
        return self

    def cpu(self):
        return self

    def new_empty(self, *a, **k):
        return self

    def set_(self, *a):
        return self

    def storage_offset(self):
        return 0

    def size(self):
        return ()

    def stride(self):
        return ()

    def copy_(self, other):
        pass


# ---------------------------------------------------------------- launch counting
class LaunchCounter:
    """Counts kernel launches per kernel name (read by tgrad.profiler)."""

    def __init__(self):
        self.enabled = False
        self.counts = collections.Counter()

    def add(self, name):
        self.counts[name] += 1


COUNTER = LaunchCounter()


# ---------------------------------------------------------------- direct executor
_entries = {}
_ptr_types = {}


def _entry(kernel):
    e = _entries.get(kernel)
    if e is None:
        tw = _twin(kernel)
        fn = tw.rewrite()
        cexpr = frozenset(_I.GridExecutor(kernel.fn, tw.arg_names, (1,)).constexprs)
        e = _entries[kernel] = (fn, tuple(tw.arg_names), cexpr)
    return e


def _cvt(a):
    if type(a) is Ptr:
        ty = _ptr_types.get(a.dtype)
        if ty is None:
            ty = _ptr_types[a.dtype] = tl.str_to_ty(triton.runtime.jit.mangle_type(a), None)
        return tl.tensor(_I.TensorHandle(np.array([a.ptr], dtype=np.uint64), ty), ty)
    if type(a) is int and -2**31 <= a < 2**31:
        return tl.tensor(_I.TensorHandle(np.array([a], dtype=np.int32), tl.int32), tl.int32)
    return _I._implicit_cvt(a)


def _run_direct(kernel, grid, args, constexprs):
    fn, names, cexpr = _entry(kernel)
    kw = {}
    for nm, a in zip(names, args):
        kw[nm] = _cvt(a)
    kw.update(constexprs)
    if len(kw) != len(names):
        missing = [n for n in names if n not in kw]
        raise TypeError(f"{kernel.__name__}: missing kernel arguments {missing}")
    g = tuple(grid) + (1,) * (3 - len(grid))
    b = _I.interpreter_builder
    b.set_grid_dim(*g)
    for x in range(g[0]):
        for y in range(g[1]):
            for z in range(g[2]):
                b.set_grid_idx(x, y, z)
                fn(**kw)


# ---------------------------------------------------------------- launch recording (AOT check)
RECORD = None            # a list while tgrad.kernels.aot records launches


def launch_spec(kernel, args, constexprs):
    """(signature, constexprs, attrs) of a launch as ``triton.compile(ASTSource(...))`` takes them.

    Signature: Triton's type string per parameter (``*fp32``, ``i32``, ``fp32``,
    ``constexpr``); defaulted constexprs are filled in; attrs mark pointers
    that are 16-byte aligned, as the JIT would specialize them.
    """
    sig, cexpr, attrs = {}, dict(constexprs), {}
    it = iter(args)
    for i, p in enumerate(kernel.params):
        if p.name in constexprs:
            sig[p.name] = "constexpr"
            continue
        if p.is_constexpr:
            if not p.has_default:
                raise TypeError(f"{kernel.__name__}: missing constexpr {p.name}")
            sig[p.name] = "constexpr"
            cexpr[p.name] = p.default
            continue
        a = next(it)
        sig[p.name] = triton.runtime.jit.mangle_type(a)
        if type(a) is Ptr and a.ptr % 16 == 0:
            attrs[(i,)] = [["tt.divisibility", 16]]
    return sig, cexpr, attrs


def launch(kernel, grid, device, args, constexprs):
    """Run ``kernel[grid](*args, **constexprs)`` on ``device`` ("cpu" or "cuda").

    ``args`` are Ptr objects and Python ints/floats; ``constexprs`` the
    kernel's ``tl.constexpr`` parameters by name.
    """
    if COUNTER.enabled:
        COUNTER.add(kernel.__name__)
    if any(g == 0 for g in grid):
        return
    if RECORD is not None:
        RECORD.append((kernel,) + launch_spec(kernel, args, constexprs))
    if device == "cpu":
        with LOCK, np.errstate(all="ignore"):   # masked-off lanes compute garbage (e.g. x / 0)
            _tls.interp = 1
            try:
                if EXECUTOR == "direct":
                    _lang_for_interpreter()
                    _run_direct(kernel, grid, args, constexprs)
                else:
                    _lang_for_compiler()
                    _twin(kernel).run(*args, grid=grid, warmup=False, **constexprs)
            except _I.InterpreterError as e:
                raise RuntimeError(f"kernel {kernel.__name__} failed in the interpreter: {e}") from e
            finally:
                _tls.interp = 0
        return
    with LOCK:
        _lang_for_compiler()
        kernel[grid](*args, **constexprs)


# ---------------------------------------------------------------- ahead-of-time compile
def compile_aot(kernel, signature, constexprs, arch, attrs=None):
    """Compile ``kernel`` for ``sm_<arch>`` without a GPU; returns Triton's CompiledKernel."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    with LOCK:
        _lang_for_compiler()
        src = ASTSource(fn=kernel, signature=signature, constexprs=constexprs, attrs=attrs)
        return triton.compile(src, target=GPUTarget("cuda", arch, 32))


# ---------------------------------------------------------------- block sizes
FORCE_GPU_BLOCKS = False  # set by tgrad.kernels.aot: cpu launches use the GPU's block sizes


def gpu_blocks(device):
    """True when block sizes must be the GPU's: a cuda launch, or a cpu launch recorded for the AOT check."""
    return device != "cpu" or FORCE_GPU_BLOCKS


def next_pow2(n):
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def elementwise_block(n, device):
    """Elements per program: large on cpu (the interpreter pays per program), 1024 on cuda."""
    if gpu_blocks(device):
        return 1024
    return max(16, min(next_pow2(n), 65536))
