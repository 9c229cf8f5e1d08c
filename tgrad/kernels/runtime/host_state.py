"""The host-process state interpreted launches run in, outside Triton: their lock, numpy's floating-point
error state and glibc's heap thresholds.

- ``LOCK`` serializes interpreted launches (the interpreter mutates ``triton.language`` and keeps
  per-launch state in a global builder).  It is held across ``fork()`` so a child (a DataLoader worker)
  never inherits it taken by a thread that does not exist there, nor ``tl`` half patched.

- numpy's error-state context variable (``umath._extobj_contextvar``, pinned by
  ``tests/kernels/test_triton_internals.py``): masked-off lanes compute garbage (e.g. x / 0), so interpreted
  launches run with every floating-point error ignored.  ``np.errstate(all="ignore")`` costs ~1 us a use;
  launches set the same context variable it sets, to the state it would make.
- ``keep_heap``: freed numpy temporaries stay in glibc's heap between launches.
"""
import ctypes
import os
import platform
import threading

from numpy._core import umath as _umath

from ...memory import allocator as _allocator  # noqa: F401  (its fork hooks first: see LOCK)

LOCK = threading.RLock()


def _after_fork():
    LOCK.release()


if hasattr(os, "register_at_fork"):
    # registered after the allocator's hook (imported above), so a fork takes LOCK first, then the
    # allocator's locks: the order launches nest them in (issue 16: workers froze on their first op)
    os.register_at_fork(before=LOCK.acquire, after_in_parent=_after_fork, after_in_child=_after_fork)

FP_STATE = _umath._extobj_contextvar
# (outer state, its all-ignore twin), replaced whole: replays of pure tapes read it without a lock
fp_cache = (None, None)


def fp_ignore(outer):
    """The all-ignore state made from ``outer``, the current (un-silenced) state."""
    global fp_cache
    c = fp_cache
    if outer is not c[0]:
        c = fp_cache = (outer, _umath._make_extobj(all="ignore"))
    return c[1]


_heap_kept = [False]


def keep_heap():
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
