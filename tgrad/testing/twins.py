"""Test support for a kernel's C twin on cpu (``launcher.cpu_twin``): run a case three times under the
``trace`` executor with the twin made or refused, so a test compares the twin's bits with the traced tape's."""
import gc

import numpy as np

from .._compile.replay import Replay
from ..kernels.runtime import launcher as _launcher
from ..kernels.runtime import trace as _trace


def run_traced(case, args, twins, on, caches=()):
    """``case(*args)`` three times under the trace executor (the 3rd launch of a key replays its traced tape), each
    kernel in ``twins`` (kernel -> ``make(args, constexprs, grid)``, its twin's maker) given its twin (``on``) or none;
    tapes and ``caches`` (dicts of launch sites) cleared before and after.  All three runs must agree.  Returns (the
    3rd run, the number of launches the twin served)."""
    _trace.clear_tapes()
    for c in caches:
        c.clear()
    made, saved = [], {k: k.__dict__.get("_tgrad_cpu_twin") for k in twins}
    for kernel, make in twins.items():
        kernel._tgrad_cpu_twin = (lambda a, c, g, make=make: made.append(make(a, c, g)) or made[-1]) if on else \
            (lambda a, c, g: None)
    prev = _launcher.EXECUTOR
    try:
        _launcher.EXECUTOR = "trace"
        with np.errstate(all="ignore"):
            runs = [case(*args) for _ in range(3)]
    finally:
        _launcher.EXECUTOR = prev
        for kernel, old in saved.items():
            if old is None:
                kernel.__dict__.pop("_tgrad_cpu_twin", None)
            else:
                kernel._tgrad_cpu_twin = old
        _trace.clear_tapes()
        for c in caches:
            c.clear()
    assert runs[0] == runs[1] == runs[2]
    return runs[2], sum(type(t) is _launcher.CpuTwin for t in made)


def replayed(func):
    """The C twins of ``func`` (a native function) that a live compiled replay program calls."""
    return [v for r in gc.get_objects() if isinstance(r, Replay) for v in r.run.__globals__.values()
            if type(v) is _launcher.CpuTwin and v.func is func]
