"""Native helpers of the cpu executor, built on first use with the system C compiler (the one Triton's own
launcher needs) through Triton's build cache, with a numpy fallback where none builds (or ``TGRAD_NATIVE=0``).

- ``fma_ufunc()``: ``fma.c``'s numpy ufunc ``fma(x, y, z)``, x y + z rounded once (float32 and float64,
  broadcasting like any ufunc): the CPU's FMA instruction, else C99 ``fmaf``/``fma``.  An exact fp32 fma
  in numpy alone (``tape_ops._fma32``) costs ~2.3 ns an element; this ~0.3 ns.
- ``aten_ufunc(name)``: ``aten_cpu.c``'s float32 ufuncs ``sleef_expf``, ``sleef_logf``, ``lanes_add``,
  ``lanes_fold8``, ``nll_cascade_<levels>``, ``keep_scale``: the C twins of ``kernels/_lang.py``'s ``sleef_exp``,
  ``sleef_log``, ``lanes_add``, ``lanes_fold`` (8 lanes), ``kernels/loss.py``'s ``_cascade`` and
  ``kernels/random.py``'s ``keep_scale``, the same float32 operations
  in the same order.  ``optim_cpu.c``'s ``OPTIM`` ufuncs (``adam_m_*``, ``adam_v_*``, ``adam_p_*``, ``sgd_buf_*``,
  ``sgd_p_*``, one per structural flag combination) are ``kernels/optim.py``'s element-update helpers, likewise
  (``aten_ufunc`` gives either module's by name); its ``STEPS`` (``adam_step_*``, ``sgd_step_*``) run an update's
  helpers per element in one pass (the compiled replay's optimizer steps).
- ``cross_entropy_f32()``: ``aten_cpu.c``'s C twins of whole kernels (kernels/loss.py's cross-entropy forward and
  backward on float32 class-index rows), the launch's tape on cpu (``launcher.cpu_twin``).
- ``aten_twin(name)``: more of ``aten_cpu.c``'s whole-kernel twins (``embedding_backward``: kernels/nn.py's).
- ``cnn_twins()``: ``cnn_cpu.c``'s C twins of kernels/norm.py's batch_norm kernels and kernels/pool.py's max-pool
  kernels (float32), likewise a cpu launch's tape.
- ``mt19937_fill()``: ``aten_cpu.c``'s ``mt19937_fill``: the next words of a numpy ``MT19937`` engine written at an
  address, its state advanced (the cpu generator's draws, ``tgrad/random.py``).
- ``native_helper(name, rule)``: marks a ``@triton.jit`` helper so that an interpreted launch (direct or
  traced) computes a call of it as ONE builder op, ``create_native(ufunc, *handles)`` (internals.py), which a
  tape replays as one ufunc call, in place of one numpy pass per Triton op of its body (SLEEF's exp is ~25).
  ``rule(*args)`` says whether a call maps (its tensor arguments and the result's block shape) or not (the
  helper's body is interpreted).  On cuda the helper compiles as the Triton code it is.
"""
import os

import numpy as np
import triton.language as tl

from ..._native import build
from .internals import _I

_HERE = os.path.dirname(os.path.abspath(__file__))
_built = {}


def _build(src, module, what):
    """The module built from ``src`` (C file beside this one), or None: no compiler, or ``TGRAD_NATIVE=0``."""
    try:
        return _built[module]
    except KeyError:
        pass
    m = _built[module] = build(os.path.join(_HERE, src), module, what,
                               "the cpu executor computes it in numpy (slower)", include_dirs=[np.get_include()],
                               libraries=["m"], ccflags=["-fno-math-errno", "-ffp-contract=off"])
    return m


def fma_ufunc():
    """The fma ufunc, or None when it cannot be built (no C compiler, or ``TGRAD_NATIVE=0``)."""
    m = _build("fma.c", "tgrad_fma", "fma")
    return None if m is None else m.fma


ATEN = (("sleef_expf", "sleef_logf", "lanes_add", "lanes_fold8", "fma_rows", "select", "keep_scale", "row_moments")
        + tuple(f"nll_cascade_{n}" for n in range(1, 6))
        + tuple(f"glibc_{f}" for f in ("log", "log1p", "exp", "sin", "cos", "tan")))
NN = ("gelu_tanh_f32", "gelu_tanh_backward_f32", "gelu_f32", "gelu_backward_f32", "lstm_gate_f32", "lstm_tanh_f32",
      "lstm_dc_f32", "lstm_gate_grad_f32")       # nn_cpu.c's
OPTIM = (tuple(f"adam_m_{w}{low}" for w in "01" for low in "01") + ("adam_v_0", "adam_v_1", "adam_p_0", "adam_p_1")
         + tuple(f"sgd_p_{w}{mo}{x}" for w in "01" for mo in "012" for x in "01")
         + tuple(f"sgd_buf_{w}{mo}{x}" for w in "01" for mo in "12" for x in "01"))       # optim_cpu.c's
STEPS = (tuple(f"adam_step_{w}{low}{d}" for w, d in ("00", "10", "01") for low in "01")
         + tuple(f"sgd_step_{w}{mo}{x}" for w in "01" for mo in "12" for x in "01"))     # optim_cpu.c's fused steps
_MODULES = (("aten_cpu.c", "tgrad_aten_cpu", "SLEEF exp/log", ATEN), ("nn_cpu.c", "tgrad_nn_cpu", "activations", NN),
            ("optim_cpu.c", "tgrad_optim_cpu", "optimizer updates", OPTIM))


def mt19937_fill():
    """aten_cpu.c's ``mt19937_fill(state_address, out_address, n)`` (numpy MT19937 words), or None."""
    m = _build("aten_cpu.c", "tgrad_aten_cpu", "SLEEF exp/log")
    return None if m is None else m.mt19937_fill


def cross_entropy_f32():
    """aten_cpu.c's ``(cross_entropy_f32, cross_entropy_backward_f32)``: the C twins of kernels/loss.py's two
    cross-entropy kernels for float32 class-index rows (loss.py's ``_ce_twin``), or None when not built."""
    m = _build("aten_cpu.c", "tgrad_aten_cpu", "SLEEF exp/log")
    return None if m is None else (m.cross_entropy_f32, m.cross_entropy_backward_f32)


def aten_twin(name):
    """aten_cpu.c's C twin of a whole kernel by name (``embedding_backward``, ...: its docstring), or None when not
    built."""
    m = _build("aten_cpu.c", "tgrad_aten_cpu", "SLEEF exp/log")
    return None if m is None else getattr(m, name)
def cnn_twins():
    """cnn_cpu.c's module (``batch_norm_f32``, ``batch_norm_backward_f32``, ``max_pool_f32``,
    ``max_pool_backward_f32``: the C twins of kernels/norm.py's and kernels/pool.py's kernels), or None when not
    built (or the cpu has no FMA instruction, which its arithmetic is compiled for)."""
    m = _build("cnn_cpu.c", "tgrad_cnn_cpu", "batch_norm / max-pool twins")
    return m if m is not None and m.hardware else None


def aten_ufunc(name):
    """One of ``ATEN`` (aten_cpu.c), ``NN`` (nn_cpu.c) or ``OPTIM`` / ``STEPS`` (optim_cpu.c), or None when it
    cannot be built."""
    src, module, what, _ = _MODULES[2 if name in OPTIM or name in STEPS else 1 if name in NN else 0]
    m = _build(src, module, what)
    return None if m is None else getattr(m, name)


def run_loops():
    """optim_cpu.c's ``run_loops(ufunc, plan)`` (one of its ufuncs' loop over many operand sets in one call), or None."""
    m = _build("optim_cpu.c", "tgrad_optim_cpu", "optimizer updates")
    return None if m is None else m.run_loops


def name_of(f):
    """``name`` if ``f`` is the built ``aten_ufunc(name)`` (tape_cache stores it by name), else None."""
    for _, module, _, names in _MODULES:
        m = _built.get(module)
        for n in names if m is not None else ():
            if getattr(m, n) is f:
                return n
    return None


def elementwise_ufuncs():
    """The built ``OPTIM`` ufuncs: element by element in scalar C, exact whatever the operands' layout (a tape
    may pass them views of tensor memory, tape._peephole)."""
    m = _built.get("tgrad_optim_cpu")
    return frozenset() if m is None else frozenset(getattr(m, n) for n in OPTIM)


def _cval(v):
    return getattr(v, "value", v)


def _f32_block(x):
    return isinstance(x, tl.tensor) and x.type.is_block() and x.dtype == tl.float32


def elementwise(x, *params):
    """Rule of a float32 map helper f(x[, scalar params]): (the arguments, the result's shape) or None."""
    return ((x,), x.shape) if _f32_block(x) else None


def elementwise2(g, x, *params):
    """Rule of a float32 map helper f(g, x[, scalar params]) of two same-shaped blocks."""
    ok = _f32_block(g) and _f32_block(x) and list(g.shape) == list(x.shape)
    return ((g, x), x.shape) if ok else None


def rule_broadcast(x, *others):
    """Rule of a float32 map helper f(x, *others) whose other blocks broadcast to x's shape."""
    ok = _f32_block(x) and all(_f32_block(o) and len(o.shape) == len(x.shape) and
                               all(_cval(d) in (1, _cval(e)) for d, e in zip(o.shape, x.shape)) for o in others)
    return ((x,) + others, x.shape) if ok else None


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


def rule_fma_rows(acc, a, b, ROWS, BLOCK, ROUND=None):
    """``fma_rows(acc, a, b, ROWS, BLOCK)`` of _lang.py: acc float32 [BLOCK], a and b float32 [ROWS, BLOCK]; with
    a ``ROUND`` dtype the Triton body runs."""
    rows, block = _cval(ROWS), _cval(BLOCK)
    ok = (_cval(ROUND) is None and _f32_block(acc) and _f32_block(a) and _f32_block(b) and list(acc.shape) == [block]
          and list(a.shape) == [rows, block] and list(b.shape) == [rows, block])
    return ((acc, a, b), acc.shape) if ok else None


def rule_cascade(v, n, NB, LEVELS):
    """``_cascade(v, n, NB, LEVELS)`` of loss.py: v float32 [NB], n an int scalar; names its ufunc by LEVELS."""
    ok = (_f32_block(v) and list(v.shape) == [_cval(NB)] and isinstance(n, tl.tensor) and not n.type.is_block()
          and n.dtype in (tl.int32, tl.int64) and 1 <= _cval(LEVELS) <= 5 and _cval(NB) >= 16 ** _cval(LEVELS))
    return ((v, n), None, f"nll_cascade_{_cval(LEVELS)}") if ok else None


def rule_keep_scale(hi, lo, q53, scale):
    """kernels/random.py's ``keep_scale``: int32 blocks hi, lo of one shape, an int scalar q53, a float32 scalar."""
    ok = (all(isinstance(t, tl.tensor) and t.type.is_block() and t.dtype == tl.int32 for t in (hi, lo))
          and list(hi.shape) == list(lo.shape) and isinstance(q53, tl.tensor) and not q53.type.is_block()
          and q53.dtype in (tl.int32, tl.int64) and _f32_scalar(scale))
    return ((hi, lo, q53, scale), hi.shape) if ok else None


def _f32_scalar(x):
    return isinstance(x, tl.tensor) and not x.type.is_block() and x.dtype == tl.float32


def _same_blocks(blocks, scalars):
    return (all(_f32_block(b) and list(b.shape) == list(blocks[0].shape) for b in blocks)
            and all(_f32_scalar(s) for s in scalars))


def rule_adam_m(m, g, p, w1, wd, HAS_WD, DECOUPLED, LERP_LOW):
    """kernels/optim.py's ``_adam_m``: float32 blocks m, g, p and scalars w1, wd; ufunc adam_m_<W><L>."""
    if not _same_blocks((m, g, p), (w1, wd)):
        return None
    w = int(bool(_cval(HAS_WD)) and not _cval(DECOUPLED))
    return (m, g, p, w1, wd), m.shape, f"adam_m_{w}{int(bool(_cval(LERP_LOW)))}"


def rule_adam_v(v, g, p, beta2, w2, wd, HAS_WD, DECOUPLED):
    if not _same_blocks((v, g, p), (beta2, w2, wd)):
        return None
    return (v, g, p, beta2, w2, wd), v.shape, f"adam_v_{int(bool(_cval(HAS_WD)) and not _cval(DECOUPLED))}"


def rule_adam_p(p, m, v, step_size, bc2_sqrt, eps, decay, HAS_WD, DECOUPLED):
    if not _same_blocks((p, m, v), (step_size, bc2_sqrt, eps, decay)):
        return None
    return (p, m, v, step_size, bc2_sqrt, eps, decay), p.shape, \
        f"adam_p_{int(bool(_cval(HAS_WD)) and bool(_cval(DECOUPLED)))}"


def rule_sgd_buf(buf, g, p, momentum, damp, wd, HAS_WD, MOMENTUM, FIRST):
    """kernels/optim.py's ``_sgd_buf`` (not where its body is g itself or one op, as fast traced)."""
    if not _same_blocks((buf, g, p), (momentum, damp, wd)) or _cval(MOMENTUM) not in (1, 2) or \
            _cval(FIRST) and not _cval(HAS_WD):
        return None
    return (buf, g, p, momentum, damp, wd), g.shape, \
        f"sgd_buf_{int(bool(_cval(HAS_WD)))}{int(_cval(MOMENTUM))}{int(bool(_cval(FIRST)))}"


def rule_sgd_p(p, g, buf, neg_lr, momentum, wd, HAS_WD, MOMENTUM, NESTEROV):
    """``_sgd_p`` where its body is more than one fma (weight decay or nesterov)."""
    if not _same_blocks((p, g, buf), (neg_lr, momentum, wd)) or _cval(MOMENTUM) not in (0, 1, 2) or \
            not (_cval(MOMENTUM) and _cval(NESTEROV) or _cval(HAS_WD)):
        return None
    return (p, g, buf, neg_lr, momentum, wd), p.shape, \
        f"sgd_p_{int(bool(_cval(HAS_WD)))}{int(_cval(MOMENTUM))}{int(bool(_cval(NESTEROV)))}"


def native_helper(name, rule):
    """Decorator for a ``@triton.jit`` helper computed by ``aten_ufunc(name)`` in interpreted launches where
    ``rule`` maps the call (see the module docstring): ``rule(*args)`` is None (not mapped) or (tensor arguments,
    the result's block shape or None for a scalar[, the ufunc's name in place of ``name``[, ``post``]]): the call
    returns ``post(result)`` when given (e.g. a (rows, 2) result split in two)."""
    def mark(jitfn):
        def call(*args, **kwargs):
            m = None if kwargs else rule(*args)
            f = None if m is None else aten_ufunc(m[2] if len(m) > 2 else name)
            if f is None:
                return NotImplemented
            ins, shape = m[:2]
            h = _I.interpreter_semantic.builder.create_native(f, *[t.handle for t in ins])
            t = tl.tensor(h, tl.float32 if shape is None else tl.block_type(tl.float32, list(shape)))
            return m[3](t) if len(m) > 3 else t
        jitfn.__dict__["_tgrad_native"] = call
        return jitfn
    return mark
