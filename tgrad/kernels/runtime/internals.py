"""Every Triton internal tgrad relies on, in one place: dual-mode launching.

``cpu`` tensors run their kernels in Triton's interpreter, ``cuda`` tensors
through the JIT compiler, in the same process, with ``TRITON_INTERPRET``
unset (see shared TRITON_NOTES.md "dual mode").  What this relies on, and
``tests/test_triton_internals.py`` pins:

- ``triton.runtime.interpreter``: ``_patch_lang``, ``_implicit_cvt``,
  ``interpreter_builder`` (``set_grid_dim``/``set_grid_idx``/``options``),
  ``InterpreterOptions``, ``InterpretedFunction.rewrite``, ``GridExecutor``;
- ``JITFunction.__call__`` (routed to an interpreted twin while an
  interpreted launch runs, so ``tl.sum``, ``tl.randn`` and our own
  ``@triton.jit`` helpers work inside interpreted kernels);
- numpy's floating-point error-state context variable (``_extobj_contextvar``);
- ``ReduceOps.sum`` (replaced: sums reduce a C-contiguous array, see ``_sum_contiguous``).

Interpreted launches are serialized by ``LOCK``: the interpreter mutates
``triton.language`` and keeps per-launch state in a global builder.  ``LOCK``
is held across ``fork()`` so a child (a DataLoader worker) never inherits it
taken by a thread that does not exist there, nor ``tl`` half patched.
"""
import dataclasses
import os
import threading

assert not os.environ.get("TRITON_INTERPRET"), \
    "tgrad routes each launch itself; unset TRITON_INTERPRET (it breaks GPU compiles)"
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")   # silence 3.9's once-per-process warning
os.environ.setdefault("TRITON_DEFAULT_BACKEND", "nvidia")  # never probe HIP (it imports torch)

import numpy as np  # noqa: E402
from numpy._core import umath as _umath  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.runtime import interpreter as _I  # noqa: E402
from triton.runtime.interpreter import InterpretedFunction  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402

from ...memory import allocator as _allocator  # noqa: E402,F401  (its fork hooks first: see LOCK)

TRITON_VERSION = triton.__version__
_tl_core = tl.core  # a module global, so _patch_lang(_anchor) patches tl AND tl.core


def _anchor():
    pass


LOCK = threading.RLock()


def _after_fork():
    LOCK.release()


if hasattr(os, "register_at_fork"):
    # registered after the allocator's hook (imported above), so a fork takes LOCK first, then the
    # allocator's locks: the order launches nest them in (issue 16: workers froze on their first op)
    os.register_at_fork(before=LOCK.acquire, after_in_parent=_after_fork, after_in_child=_after_fork)
# np.errstate(all="ignore") is ~1 us a use; interpreted launches set the same numpy context variable
# it sets, to the state it would make.  _fp_cache is (outer state, its all-ignore twin), replaced whole:
# replays of pure tapes read it without LOCK.
_FP_STATE = _umath._extobj_contextvar
_fp_cache = (None, None)


def _fp_ignore(outer):
    """The all-ignore state made from ``outer``, the current (un-silenced) state."""
    global _fp_cache
    c = _fp_cache
    if outer is not c[0]:
        c = _fp_cache = (outer, _umath._make_extobj(all="ignore"))
    return c[1]


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
        _keep_heap()


_heap_kept = [False]


def _keep_heap():
    """Keep freed numpy temporaries in the (glibc) heap instead of unmapping them.

    Interpreted programs allocate and free a few MB of block-sized arrays per
    launch; with glibc's defaults (128 KiB mmap threshold, heap trimmed when
    its free top exceeds ~2x that) each launch page-faults them in again:
    the SGD step of a 784x256 layer took 2800 faults and 3.8 ms instead of
    0.9 ms.  Done once, on the first interpreted launch (GPU-only processes
    keep their defaults); a threshold set in glibc's own environment variable
    (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``) is left as set.
    """
    if _heap_kept[0]:
        return
    _heap_kept[0] = True
    import ctypes
    import platform
    if platform.libc_ver()[0] != "glibc":
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    if "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        mallopt(-3, 32 << 20)     # M_MMAP_THRESHOLD: glibc's own dynamic maximum on 64-bit
    if "MALLOC_TRIM_THRESHOLD_" not in os.environ:
        mallopt(-1, 128 << 20)    # M_TRIM_THRESHOLD


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


def _sum_contiguous(self, input):
    """``tl.sum`` in the interpreter: ``np.sum`` of a C-contiguous copy.  numpy's summation order depends on
    the memory layout (pairwise along a contiguous axis, row by row otherwise); the direct run sees gathered
    (contiguous) blocks, a replayed tape strided views: same layout on every path, same bits (issue 16)."""
    return self.to_tensor(np.sum(np.ascontiguousarray(input.handle.data), axis=self.axis, keepdims=self.keep_dims),
                          input.dtype)


_I.ReduceOps.sum = _sum_contiguous


def _set_options(debug):
    b = _I.interpreter_builder
    b.options = dataclasses.replace(b.options, debug=debug, sanitize_overflow=debug)


_set_options(os.environ.get("TGRAD_INTERPRET_DEBUG", "") == "1")
