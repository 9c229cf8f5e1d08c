"""Native helpers of the cpu executor, built on first use with the system C compiler (the one Triton's own
launcher needs) through Triton's build cache, with a numpy fallback where none builds (or ``TGRAD_NATIVE=0``).

- ``fma_ufunc()``: ``fma.c``'s numpy ufunc ``fma(x, y, z)``, x y + z rounded once (float32 and float64,
  broadcasting like any ufunc): the CPU's FMA instruction, else C99 ``fmaf``/``fma``.  An exact fp32 fma
  in numpy alone (``tape_ops._fma32``) costs ~2.3 ns an element; this ~0.3 ns.
- ``aten_ufunc(name)``: ``aten_cpu.c``'s float32 ufuncs ``sleef_expf``, ``sleef_logf``, ``lanes_add``,
  ``lanes_fold8``, ``nll_cascade_<levels>``: the C twins of ``kernels/_lang.py``'s ``sleef_exp``, ``sleef_log``,
  ``lanes_add``, ``lanes_fold`` (8 lanes) and ``kernels/loss.py``'s ``_cascade``, the same float32 operations
  in the same order.
- ``native_helper(name, rule)``: marks a ``@triton.jit`` helper so that an interpreted launch (direct or
  traced) computes a call of it as ONE builder op, ``create_native(ufunc, *handles)`` (internals.py), which a
  tape replays as one ufunc call, in place of one numpy pass per Triton op of its body (SLEEF's exp is ~25).
  ``rule(*args)`` says whether a call maps (its tensor arguments and the result's block shape) or not (the
  helper's body is interpreted).  On cuda the helper compiles as the Triton code it is.
"""
import os
import warnings

import numpy as np
import triton.language as tl
from triton.runtime.build import compile_module_from_file

from .internals import _I

_HERE = os.path.dirname(os.path.abspath(__file__))
_built = {}


def _build(src, module, what):
    """The module built from ``src`` (C file beside this one), or None: no compiler, or ``TGRAD_NATIVE=0``."""
    try:
        return _built[module]
    except KeyError:
        pass
    m = None
    if os.environ.get("TGRAD_NATIVE", "1") != "0":
        try:
            m = compile_module_from_file(os.path.join(_HERE, src), module, include_dirs=[np.get_include()],
                                         libraries=["m"], ccflags=["-fno-math-errno", "-ffp-contract=off"])
        except Exception as e:          # no compiler, no headers: the numpy path is exact, only slower
            warnings.warn(f"tgrad: building the native {what} failed ({type(e).__name__}: {e}); the cpu executor "
                          f"computes it in numpy (slower)", RuntimeWarning, stacklevel=3)
    _built[module] = m
    return m


def fma_ufunc():
    """The fma ufunc, or None when it cannot be built (no C compiler, or ``TGRAD_NATIVE=0``)."""
    m = _build("fma.c", "tgrad_fma", "fma")
    return None if m is None else m.fma


ATEN = (("sleef_expf", "sleef_logf", "lanes_add", "lanes_fold8", "fma_rows")
        + tuple(f"nll_cascade_{n}" for n in range(1, 6)))


def aten_ufunc(name):
    """One of ``ATEN`` (aten_cpu.c), or None when it cannot be built."""
    m = _build("aten_cpu.c", "tgrad_aten_cpu", "SLEEF exp/log")
    return None if m is None else getattr(m, name)


def name_of(f):
    """``name`` if ``f`` is the built ``aten_ufunc(name)`` (tape_cache stores it by name), else None."""
    m = _built.get("tgrad_aten_cpu")
    for n in ATEN if m is not None else ():
        if getattr(m, n) is f:
            return n
    return None


def _cval(v):
    return getattr(v, "value", v)


def _f32_block(x):
    return isinstance(x, tl.tensor) and x.type.is_block() and x.dtype == tl.float32


def elementwise(x):
    """Rule of a float32 map helper f(x): (the arguments, the result's shape) or None."""
    return ((x,), x.shape) if _f32_block(x) else None


def rule_lanes_add(acc, v, ROWS, BLOCK, LANES):
    rows, block, lanes = _cval(ROWS), _cval(BLOCK), _cval(LANES)
    if not (_f32_block(acc) and _f32_block(v) and list(acc.shape) == [rows, lanes] and list(v.shape) == [rows, block]
            and block % lanes == 0):
        return None
    return (acc, v), acc.shape


def rule_lanes_fold(acc, ROWS, LANES):
    if _cval(LANES) != 8 or not _f32_block(acc) or list(acc.shape) != [_cval(ROWS), 8]:
        return None
    return (acc,), [_cval(ROWS)]


def rule_fma_rows(acc, a, b, ROWS, BLOCK):
    """``fma_rows(acc, a, b, ROWS, BLOCK)`` of _lang.py: acc float32 [BLOCK], a and b float32 [ROWS, BLOCK]."""
    rows, block = _cval(ROWS), _cval(BLOCK)
    ok = (_f32_block(acc) and _f32_block(a) and _f32_block(b) and list(acc.shape) == [block]
          and list(a.shape) == [rows, block] and list(b.shape) == [rows, block])
    return ((acc, a, b), acc.shape) if ok else None


def rule_cascade(v, n, NB, LEVELS):
    """``_cascade(v, n, NB, LEVELS)`` of loss.py: v float32 [NB], n an int scalar; names its ufunc by LEVELS."""
    ok = (_f32_block(v) and list(v.shape) == [_cval(NB)] and isinstance(n, tl.tensor) and not n.type.is_block()
          and n.dtype in (tl.int32, tl.int64) and 1 <= _cval(LEVELS) <= 5 and _cval(NB) >= 16 ** _cval(LEVELS))
    return ((v, n), None, f"nll_cascade_{_cval(LEVELS)}") if ok else None


def native_helper(name, rule):
    """Decorator for a ``@triton.jit`` helper computed by ``aten_ufunc(name)`` in interpreted launches where
    ``rule`` maps the call (see the module docstring): ``rule(*args)`` is None (not mapped) or (tensor arguments,
    the result's block shape or None for a scalar[, the ufunc's name in place of ``name``])."""
    def mark(jitfn):
        def call(*args, **kwargs):
            m = None if kwargs else rule(*args)
            f = None if m is None else aten_ufunc(m[2] if len(m) > 2 else name)
            if f is None:
                return NotImplemented
            ins, shape = m[:2]
            h = _I.interpreter_semantic.builder.create_native(f, *[t.handle for t in ins])
            return tl.tensor(h, tl.float32 if shape is None else tl.block_type(tl.float32, list(shape)))
        jitfn.__dict__["_tgrad_native"] = call
        return jitfn
    return mark
