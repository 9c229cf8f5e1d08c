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

Three interpreter executors (``TGRAD_EXECUTOR``), bit-identical by test:

- ``trace`` (default): ``direct``, plus trace-and-replay.  The second launch
  with the same key (kernel, grid, constexprs, pointer dtypes, int scalars)
  records the builder ops that depend on the pointers and float scalars;
  later launches replay only those.  Loads/stores whose addresses are one
  pointer plus constant affine offsets under a box-shaped constant mask are
  lowered to numpy strided views (no per-element gather), and the address
  arithmetic that only fed them is dropped; an op or load that repeats an
  earlier one on the same operands (no store in between) is computed once.
  Control flow on a loaded or dynamic value is detected while recording;
  such keys stay on ``direct``.  A ``Launch`` kept by a launcher per launch
  site finds its tape once; its later calls pass only the addresses and
  float scalars to the tape.
- ``direct``: ``triton.language`` is patched for the interpreter once and
  left patched until a GPU compile needs it back; each launch calls the
  rewritten kernel function over the grid itself (no GridExecutor, no
  ``inspect`` per launch, no host copies: our pointers already are host
  memory).
- ``stock``: Triton's own ``InterpretedFunction.run`` (GridExecutor), patching
  and restoring ``tl``/``tl.core`` around every launch.

Float scalar arguments are rounded to fp32 on every path (by a replayed tape
itself), because that is what the GPU JIT passes (so all paths agree bit for bit).

Interpreted launches are serialized by one lock: the interpreter mutates
``triton.language`` and keeps per-launch state in a global builder.  Replays
of tapes made of numpy expressions only (most) touch neither and run unlocked.
"""
import collections
import dataclasses
import math
import os
import threading
import warnings

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

TRITON_VERSION = triton.__version__
_np_f32 = np.float32
_tl_core = tl.core  # a module global, so _patch_lang(_anchor) patches tl AND tl.core


def _anchor():
    pass


LOCK = threading.RLock()
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


def _set_options(debug):
    b = _I.interpreter_builder
    b.options = dataclasses.replace(b.options, debug=debug, sanitize_overflow=debug)


_set_options(os.environ.get("TGRAD_INTERPRET_DEBUG", "") == "1")
EXECUTOR = os.environ.get("TGRAD_EXECUTOR", "trace")
if EXECUTOR not in ("trace", "direct", "stock"):
    raise RuntimeError(f"TGRAD_EXECUTOR must be 'trace', 'direct' or 'stock', got {EXECUTOR!r}")


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
_ptr_types = {}


def _entry(kernel):
    # cached on the object: a dict keyed by the kernel would hash the JITFunction (slow) per launch
    e = kernel.__dict__.get("_tgrad_entry")
    if e is None:
        tw = _twin(kernel)
        fn = tw.rewrite()
        cexpr = frozenset(_I.GridExecutor(kernel.fn, tw.arg_names, (1,)).constexprs)
        e = kernel.__dict__["_tgrad_entry"] = (fn, tuple(tw.arg_names), cexpr)
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


# ---------------------------------------------------------------- trace-and-replay executor
_PURE = {"create_splat", "create_addptr", "create_broadcast", "create_expand_dims", "create_reshape",
         "create_trans", "create_permute", "binary_op", "unary_op", "cast_impl", "create_bitcast",
         "create_int_cast", "create_fp_to_fp", "create_select", "create_cat", "create_join",
         "create_split", "create_get_program_id", "create_make_range"}


class Tape:
    """The recorded, lowered builder ops of one program of one launch key."""

    __slots__ = ("ops", "slots")


class _HostArray:
    __slots__ = ("__array_interface__",)

    def __init__(self, addr, shape, strides, typestr):
        self.__array_interface__ = {"data": (addr, False), "shape": shape, "strides": strides,
                                    "typestr": typestr, "version": 3}


def _view(addr, shape, strides, dtype):
    return np.asarray(_HostArray(addr, shape, strides, dtype.str))


class _Views(dict):
    """address -> numpy view of one load/store site (fixed shape, strides, dtype); addresses recur
    (the caching allocator hands the same blocks out again), so most launches make no view."""

    __slots__ = ("shape", "strides", "dtype")

    def __init__(self, shape, strides, dtype):
        super().__init__()
        self.shape, self.strides, self.dtype = shape, strides, dtype

    def __missing__(self, addr):
        if len(self) >= 64:
            self.clear()
        v = self[addr] = _view(addr, self.shape, self.strides, self.dtype)
        return v


def _affine(rel, itemsize):
    """(start, strides) in bytes if rel[idx] == start + sum(strides * idx) with non-negative strides."""
    flat0 = int(rel.flat[0])
    strides = []
    for ax, n in enumerate(rel.shape):
        if n == 1:
            strides.append(0)
            continue
        idx = [0] * rel.ndim
        idx[ax] = 1
        s = int(rel[tuple(idx)]) - flat0
        if s < 0 or s % itemsize:
            return None
        strides.append(s)
    expect = np.full(rel.shape, flat0, dtype=np.int64)
    for ax, s in enumerate(strides):
        shp = [1] * rel.ndim
        shp[ax] = rel.shape[ax]
        expect = expect + (np.arange(rel.shape[ax], dtype=np.int64) * s).reshape(shp)
    if not np.array_equal(expect, rel):
        return None
    return flat0, tuple(strides)


def _factorize(r):
    """Shape that makes 1-D offsets r piecewise-affine per row (inner dims first found), or None."""
    n = r.size
    if n <= 2:
        return [n]
    d = np.diff(r)
    bad = np.nonzero(d != d[0])[0]
    if bad.size == 0:
        return [n]
    inner = int(bad[0]) + 1
    if n % inner:
        return None
    outer = _factorize(r[::inner])
    return None if outer is None else outer + [inner]


def _prefix_len(mask, n):
    """Length of a 1-D prefix mask (None: everything), or -1 if it is not a prefix."""
    if mask is None:
        return n
    m = np.broadcast_to(mask, (n,))
    c = int(m.sum())
    return c if m[:c].all() else -1


def _pieces(shape, n):
    """Split the first n row-major elements of ``shape`` into (index, flat_start, count) blocks."""
    out = []

    def rec(prefix, shp, cnt, flat0):
        total = int(np.prod(shp)) if shp else 1
        if cnt == total:
            out.append((prefix, flat0, cnt))
            return
        inner = int(np.prod(shp[1:])) if len(shp) > 1 else 1
        q, r = divmod(cnt, inner)
        if q:
            out.append((prefix + (slice(0, q),), flat0, q * inner))
        if r:
            rec(prefix + (q,), shp[1:], r, flat0 + q * inner)
    rec((), tuple(shape), n, 0)
    return tuple(out)


def _nested_load(addr, shape, strides, pieces, n_block, np_dtype, other):
    v = _view(addr, shape, strides, np_dtype)
    out = np.empty(n_block, dtype=np_dtype)
    done = 0
    for idx, f0, cnt in pieces:
        out[f0:f0 + cnt] = v[idx].reshape(-1)
        done = f0 + cnt
    if done < n_block:
        out[done:] = other if np.ndim(other) == 0 else np.broadcast_to(other, (n_block,))[done:]
    return out


def _nested_store(addr, value, shape, strides, pieces, np_dtype):
    v = _view(addr, shape, strides, np_dtype)
    data = np.broadcast_to(value, (int(np.prod(shape)),))
    for idx, f0, cnt in pieces:
        v[idx] = data[f0:f0 + cnt].reshape(v[idx].shape)


def _box(mask, shape):
    """Per-axis valid lengths if mask is the product of prefix masks (None: no mask); else False."""
    if mask is None:
        return tuple(shape)
    m = np.broadcast_to(mask, shape)
    if m.all():
        return tuple(shape)
    lens = []
    for ax in range(m.ndim):
        other = tuple(a for a in range(m.ndim) if a != ax)
        line = m.any(axis=other) if other else m
        c = int(line.sum())
        if not line[:c].all():
            return False
        lens.append(c)
    box = np.zeros(shape, dtype=bool)
    box[tuple(slice(0, c) for c in lens)] = True
    return tuple(lens) if np.array_equal(box, m) else False


class _Val:
    """What record knows of a value at compile time: a slot (``slot`` set) or a constant handle/object."""

    __slots__ = ("slot", "obj", "ty", "np_dtype", "shape")

    def __init__(self, slot, obj, h):
        self.slot, self.obj = slot, obj
        ok = isinstance(h, _I.TensorHandle)
        self.ty = h.dtype if ok else None
        self.np_dtype = h.data.dtype if ok else None
        self.shape = h.data.shape if ok else None


def record(fn, kw, dyn_names, base_values):
    """Run fn(**kw) (one program), recording dynamic builder ops. Returns (tape, replayable).

    A tape op is (name, f, vals, kwargs, out_slots, lowered): ``vals`` are _Val per positional argument,
    ``lowered`` a (kind, params) for loads/stores turned into numpy views (else None)."""
    real = _I.interpreter_builder
    dyn, keep, ops, bad = {}, [], [], []
    prov = {}      # id(handle) -> pointer slot it is (base + constant offsets) of
    slot_h = []    # the recorded handle of each slot (types and shapes for the compiler)

    def reg(h):
        s = len(slot_h)
        if not isinstance(h, _I.TensorHandle):
            bad.append(f"builder returned {type(h).__name__}")
        dyn[id(h)] = s
        keep.append(h)
        slot_h.append(h)
        return s

    for nm, bv in zip(dyn_names, base_values):
        s = reg(kw[nm].handle)
        if bv is not None:
            prov[id(kw[nm].handle)] = s
    bases = dict(enumerate(base_values))

    def val(v):
        s = dyn.get(id(v)) if isinstance(v, _I.TensorHandle) else None
        return _Val(s, v, slot_h[s] if s is not None else v)

    def lower(name, args):
        if name == "create_masked_load":
            ptrs, mask, other = args[0], args[1], args[2]
        elif name == "create_masked_store":
            ptrs, mask, other = args[0], args[2], None
        elif name in ("create_load", "create_store"):     # = masked with an all-true mask (and zero other)
            ptrs, mask, other = args[0], None, None
        else:
            return None
        s = prov.get(id(ptrs))
        if s is None or (mask is not None and id(mask) in dyn) or (other is not None and id(other) in dyn):
            return None
        np_dtype = _I._get_np_dtype(ptrs.get_element_ty())
        rel = ptrs.data.astype(np.int64) - np.int64(bases[s])
        aff = _affine(rel, np_dtype.itemsize)
        box = _box(None if mask is None else mask.data, ptrs.data.shape)
        oth = 0 if other is None else other.data
        if (aff is None or box is False) and rel.ndim == 1:
            n = _prefix_len(None if mask is None else mask.data, rel.size)
            shp = _factorize(rel)
            if n < 0 or shp is None:
                return None
            aff = _affine(rel.reshape(shp), np_dtype.itemsize)
            if aff is None:
                return None
            p = dict(base=s, start=aff[0], strides=aff[1], shape=tuple(shp), pieces=_pieces(shp, n),
                     n=rel.size, np_dtype=np_dtype, other=oth)
            return ("nload" if name.endswith("_load") else "nstore"), p
        if aff is None or box is False:
            return None
        p = dict(base=s, start=aff[0], strides=aff[1], box=box, shape=ptrs.data.shape, np_dtype=np_dtype,
                 other=oth)
        return ("load" if name.endswith("_load") else "store"), p

    def note(f, name, args, kwargs, out, extra=None):
        isdyn = False
        for v in args:
            if isinstance(v, _I.TensorHandle) and id(v) in dyn:
                isdyn = True
        for v in kwargs.values():
            if isinstance(v, _I.TensorHandle) and id(v) in dyn:
                bad.append("dynamic handle passed by keyword")
        keep.append(args)
        keep.append(out)
        if not isdyn:
            return
        vals = [val(v) for v in args]
        if isinstance(out, (tuple, list)):
            slot = tuple(reg(h) for h in out)
        elif out is None:
            slot = None
        else:
            slot = reg(out)
        if name in ("create_splat", "create_addptr", "create_broadcast", "create_expand_dims", "create_reshape"):
            dyn_in = [v for v in args if isinstance(v, _I.TensorHandle) and id(v) in dyn]
            if len(dyn_in) == 1 and id(dyn_in[0]) in prov and out is not None:
                prov[id(out)] = prov[id(dyn_in[0])]
        ops.append((name, f, vals, kwargs, slot, lower(name, args) or extra))

    class Rec:
        def __getattr__(self, name):
            attr = getattr(real, name)
            if not callable(attr) or (name.startswith("get_") and name.endswith("_ty")):
                return attr

            def wrapped(*args, **kwargs):
                out = attr(*args, **kwargs)
                note(attr, name, args, kwargs, out)
                return out
            return wrapped

    patched = []
    for cls in (_I.ReduceOps, _I.ScanOps):
        orig = cls.apply_impl

        def rec_impl(self_, input, orig=orig):
            out = orig(self_, input)
            in_types = [t.type for t in input]
            multi = isinstance(out, (list, tuple))
            outs = tuple(out) if multi else (out,)

            def op(*hs, self_=self_, in_types=in_types, multi=multi, orig=orig):
                r = orig(self_, tuple(tl.tensor(h, ty) for h, ty in zip(hs, in_types)))
                return tuple(t.handle for t in r) if multi else r.handle
            note(op, "reduce_scan", [t.handle for t in input], {},
                 tuple(t.handle for t in outs) if multi else outs[0].handle,
                 ("reduce", (self_, in_types)) if not multi else None)
            return out
        patched.append((cls, orig))
        cls.apply_impl = rec_impl
    tcls = tl.core.tensor
    orig_bool, orig_index = tcls.__bool__, tcls.__index__

    def guard(orig):
        def g(self):
            if id(self.handle) in dyn:
                bad.append("control flow depends on a loaded value or a dynamic argument")
            return orig(self)
        return g
    tcls.__bool__, tcls.__index__ = guard(orig_bool), guard(orig_index)
    sem = _I.interpreter_semantic
    sem.builder = Rec()
    try:
        fn(**kw)
    finally:
        sem.builder = real
        tcls.__bool__, tcls.__index__ = orig_bool, orig_index
        for cls, orig in patched:
            cls.apply_impl = orig
    t = Tape()
    t.ops = _dce(_cse(ops))
    t.slots = [_Val(s, None, h) for s, h in enumerate(slot_h)]
    return t, not bad


# ops that compute their outputs from their operands alone: a repeat with the same operands is a copy
_CSE_OK = _PURE | {"reduce_scan", "create_fma", "create_dot", "create_idiv", "create_sdiv", "create_udiv",
                   "create_rsqrt", "create_fabs", "create_load", "create_masked_load"}
_LOADS = ("create_load", "create_masked_load")
_REDUCTIONS = ("reduce_scan",)


def _const_key(x):
    if isinstance(x, _I.TensorHandle):
        d = x.data
        return ("h", str(x.dtype), d.dtype.str, d.shape, d.tobytes()) if d.size <= 4096 else ("i", id(x))
    if isinstance(x, np.ndarray):
        return ("a", x.dtype.str, x.shape, x.tobytes()) if x.size <= 4096 else ("i", id(x))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__,) + tuple(_const_key(y) for y in x)
    if isinstance(x, dict):
        return ("d",) + tuple((k, _const_key(v)) for k, v in sorted(x.items()))
    try:
        hash(x)
    except TypeError:
        return ("i", id(x))
    return ("o", type(x), x)


def _moved(v, slot):
    n = object.__new__(_Val)
    n.slot, n.obj, n.ty, n.np_dtype, n.shape = slot, v.obj, v.ty, v.np_dtype, v.shape
    return n


def _cse(ops):
    """Drop ops that repeat an earlier op on the same operands (a kernel that reloads a row and recomputes
    its softmax, e.g. cross-entropy's loss and gradient passes): later readers use the first result.

    A load repeats only while no store, atomic or other op of unknown effect ran in between (``epoch``)."""
    seen, sub, out, epoch = {}, {}, [], 0
    for op in ops:
        name, f, vals, kwargs, slot, low = op
        if any(v.slot in sub for v in vals):
            vals = [_moved(v, sub[v.slot]) if v.slot in sub else v for v in vals]
            op = (name, f, vals, kwargs, slot, low)
        if kwargs or slot is None or not (name in _CSE_OK or _kind(name) is not None):
            epoch += 1
            out.append(op)
            continue
        if name in _REDUCTIONS:     # recorded by record()'s rec_impl, not a builder method
            if low is None:             # a multi-output reduction: kept as recorded
                out.append(op)
                continue
            red, in_types = low[1]
            fk = (type(red), _const_key({k: id(v) if callable(v) else v for k, v in vars(red).items()}),
                  tuple(str(t) for t in in_types))
        else:
            fk = (name, _const_key(low[1]) if low is not None else None)
        if low is not None and low[0] in ("load", "nload"):
            args = ()          # a lowered load reads its base pointer (in ``low``), not the address values
        else:
            args = tuple(("s", v.slot) if v.slot is not None else _const_key(v.obj) for v in vals)
        key = (fk, epoch if name in _LOADS else None, args)
        prev = seen.get(key)
        if prev is None:
            seen[key] = slot
            out.append(op)
        elif type(slot) is tuple:
            sub.update(zip(slot, prev))
        else:
            sub[slot] = prev
    return out


def _dce(ops):
    """Drop pure ops whose outputs nothing later reads."""
    used = set()
    keep = []
    for op in reversed(ops):
        name, vals, slot = op[0], op[2], op[4]
        outs = slot if isinstance(slot, tuple) else (() if slot is None else (slot,))
        if (name in _PURE or _kind(name) is not None) and not any(o in used for o in outs):
            continue                              # (_kind: one-line numpy builder methods, e.g. create_fmul)
        low = op[5]
        if low is not None and low[0] in ("load", "nload"):
            pass                                  # reads only its base pointer, an input slot
        elif low is not None and low[0] in ("store", "nstore"):
            if vals[1].slot is not None:
                used.add(vals[1].slot)
        else:
            used.update(v.slot for v in vals if v.slot is not None)
        keep.append(op)
    keep.reverse()
    return keep


# ---------------------------------------------------------------- tape compiler
# A tape becomes one Python function over raw numpy arrays: each builder op the interpreter implements
# as a plain numpy expression is emitted as that expression (same ufunc, same casts, so bit-identical);
# anything else calls the builder on TensorHandles rebuilt from the recorded types.
_B = _I.InterpreterBuilder


def _same_code(name, template):
    f, t = getattr(_B, name, None), getattr(_B, template)
    return getattr(f, "__code__", None) is not None and f.__code__.co_code == t.__code__.co_code \
        and f.__code__.co_names[:-1] == t.__code__.co_names[:-1]


def _builder_kind(name):
    """("binary", ufunc) / ("unary", ufunc) / ("cast", None) / ("bitcast", None) for builder methods that
    are one-line lambdas over binary_op / unary_op / cast_impl (read from their bytecode), else None."""
    f = getattr(_B, name, None)
    if f is None:
        return None
    if f is _B.create_bitcast:
        return ("bitcast", None)
    if _same_code(name, "create_fadd") and f.__code__.co_names[:2] == ("binary_op", "np"):
        return ("binary", getattr(np, f.__code__.co_names[2]))
    if _same_code(name, "create_exp") and f.__code__.co_names[:2] == ("unary_op", "np"):
        return ("unary", getattr(np, f.__code__.co_names[2]))
    for tmpl in ("create_fp_ext", "create_int_cast"):
        if getattr(f, "__code__", None) is not None and f.__code__.co_code == getattr(_B, tmpl).__code__.co_code \
                and f.__code__.co_names == ("cast_impl",):
            return ("cast", None)
    return None


_KINDS = {}


def _kind(name):
    k = _KINDS.get(name, 0)
    if k == 0:
        k = _KINDS[name] = _builder_kind(name)
    return k


def _th(data, dtype):
    # a TensorHandle without the dataclass __init__/__post_init__ (the recorded run validated these types)
    h = _TH_new(_TH)
    h.data = data
    h.dtype = dtype
    h.attr = {}
    return h


_TH = _I.TensorHandle
_TH_new = object.__new__


def _nanred(uf, a, axis, keepdims):
    # np.nanmax / np.nanmin of a plain ndarray: fmax / fmin reduce, warning on an all-NaN slice
    res = uf.reduce(a, axis=axis, out=None, keepdims=keepdims)
    if np.isnan(res).any():
        warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=2)
    return res


def _to_data(ret, np_dtype):
    # ReduceScanOpInterface.to_tensor, data part
    if hasattr(ret, "shape") and ret.shape:
        return ret.astype(np_dtype)
    return np.array([ret]).astype(np_dtype)


def _elem_ty(ty):
    while hasattr(ty, "element_ty"):
        ty = ty.element_ty
    return ty


def _empty(v):
    return np.empty((0,), v.np_dtype)


class _Emitter:
    def __init__(self, kinds):
        self.ns = {"_np": np, "_th": _th, "_nparray": np.array, "_u64": np.uint64, "_f32": np.float32,
                   "_i8": np.int8, "_bool": np.bool_, "_dynh": _dyn_handle, "_bt": np.broadcast_to,
                   "_iload": _I._interpreter.load, "_istore": _I._interpreter.store, "_to_data": _to_data,
                   "_nanred": _nanred, "_nested_load": _nested_load, "_nested_store": _nested_store}
        self.consts = {}
        self.lines = []
        self.kinds = kinds
        self.inputs_used = set()
        self.calls_builder = False
        self.box = None         # (block shape, box, box slices) while compiling a tape box-only (_box_of)

    def k(self, v):
        key = (type(v), id(v))
        name = self.consts.get(key)
        if name is None:
            name = self.consts[key] = f"_k{len(self.consts)}"
            self.ns[name] = v
        return name

    def var(self, p, s):
        if s < len(self.kinds):
            self.inputs_used.add(s)
            return f"x{s}"
        return f"s{p}_{s}"

    def arr(self, p, v):
        """Expression of a value's numpy data."""
        if self.box is None:
            return self.var(p, v.slot) if v.slot is not None else self.k(v.obj.data)
        shape, _, sl = self.box         # block-shaped values are box-shaped; others only as splat sources
        if v.slot is not None:
            if v.slot >= len(self.kinds) and tuple(v.shape) != shape:
                raise _NoBox
            return self.var(p, v.slot)
        d = v.obj.data
        if d.shape != shape:
            raise _NoBox
        return self.k(np.ascontiguousarray(d[sl]))

    def handle(self, p, v, slots):
        if v.slot is not None:
            return f"_th({self.var(p, v.slot)}, {self.k(slots[v.slot].ty)})"
        return self.k(v.obj)


_SMALL_BROADCAST = 8192     # elements: a broadcast up to this size is replayed as a copy

_LOWERED_BY_NAME = frozenset({"create_select", "create_splat", "create_addptr", "create_expand_dims",
                              "create_broadcast", "create_reshape", "create_trans", "create_idiv", "create_sdiv",
                              "create_udiv", "create_rsqrt", "create_fabs", "create_fma", "create_dot",
                              "create_masked_load", "create_masked_store", "create_load", "create_store"})


def _lower_expr(e, p, name, vals, kwargs, out, extra):
    """A numpy expression for one builder op (as InterpreterBuilder computes it), or None."""
    if kwargs or not isinstance(out, _Val) or out.ty is None:
        return None
    a = [e.arr(p, v) if v.ty is not None else None for v in vals]
    kind = _kind(name)
    if kind is not None:
        k, uf = kind
        if k == "binary" and len(vals) == 2 and None not in a:
            if vals[0].np_dtype == np.bool_ and vals[1].np_dtype == np.bool_:
                if uf in (np.bitwise_and, np.bitwise_or, np.bitwise_xor):     # 0/1 in, 0/1 out: no wrapping
                    x = f"{e.k(uf)}({a[0]}, {a[1]})"
                    return x if out.np_dtype == np.bool_ else f"{x}.astype({e.k(out.np_dtype)})"
                # int1 wraps like a 1-bit integer (binary_op's bool branch)
                x = f"({e.k(uf)}({a[0]}.astype(_i8), {a[1]}.astype(_i8)) & 1).astype(_bool)"
                return x if out.np_dtype == np.bool_ else f"{x}.astype({e.k(out.np_dtype)})"
            try:
                raw = uf(_empty(vals[0]), _empty(vals[1])).dtype
            except TypeError:
                return None
            x = f"{e.k(uf)}({a[0]}, {a[1]})"
            return x if raw == out.np_dtype else f"{x}.astype({e.k(out.np_dtype)})"
        if k == "unary" and len(vals) == 1 and a[0] is not None:
            return f"{e.k(uf)}({a[0]})"
        if k in ("cast", "bitcast") and len(vals) >= 2 and a[0] is not None:
            src, dst = vals[0].ty.scalar, vals[1].obj
            dt = _I._get_np_dtype(dst)
            if k == "bitcast":
                return f"{a[0]}.view({e.k(dt)})"
            if {src, dst.scalar} == {tl.bfloat16, tl.float32}:
                return None
            return f"{a[0]}.astype({e.k(dt)})"
        return None
    if name == "create_select" and len(vals) == 3 and None not in a:
        raw = np.where(_empty(vals[0]), _empty(vals[1]), _empty(vals[2])).dtype
        x = f"_np.where({a[0]}, {a[1]}, {a[2]})"
        return x if raw == out.np_dtype else f"{x}.astype({e.k(out.np_dtype)})"
    if name == "create_splat" and len(vals) == 2 and a[1] is not None:
        ty = vals[1].ty
        x = f"{a[1]}[0]" if isinstance(ty, tl.block_type) else a[1]
        # np.full(shape, x, dtype) is empty + copyto(casting="unsafe"); "@" stands for the output (_emit_op)
        dt = e.k(_I._get_np_dtype(ty))
        shape = tuple(vals[0].obj.shape)
        if e.box is not None:
            shape = e.box[1] if shape == e.box[0] else _no_box()
        return f"_np.empty({e.k(shape)}, {dt}); _np.copyto(@, {x}, casting='unsafe')"
    if name == "create_addptr" and len(vals) == 2 and None not in a:
        bw = max(1, _elem_ty(vals[0].ty).primitive_bitwidth // 8)
        if vals[1].slot is None:        # constant offsets: their byte offsets once, here
            return f"({a[0]} + {e.k(bw * vals[1].obj.data.astype(np.uint64))})"
        return f"({a[0]} + {bw} * {a[1]}.astype(_u64))"
    if name == "create_expand_dims" and len(vals) == 2 and a[0] is not None:
        # np.expand_dims(x, axis) is x.reshape(shape with a 1 inserted); the shapes are static
        return f"{a[0]}.reshape({tuple(out.shape)!r})"
    if name == "create_broadcast" and len(vals) == 2 and a[0] is not None:
        if math.prod(out.shape) <= _SMALL_BROADCAST:
            # a contiguous copy: np.broadcast_to's wrapper costs ~2.4 us, and ufuncs run slower on its view
            return f"_np.empty({e.k(tuple(out.shape))}, {e.k(vals[0].np_dtype)}); _np.copyto(@, {a[0]})"
        return f"_bt({a[0]}, {e.k(vals[1].obj)})"
    if name == "create_reshape" and len(vals) == 3 and a[0] is not None:
        return f"{a[0]}.reshape({e.k(vals[1].obj)})"
    if name == "create_trans" and len(vals) == 2 and a[0] is not None:
        return f"_np.transpose({a[0]}, {e.k(vals[1].obj)})"
    if name in ("create_idiv", "create_sdiv", "create_udiv") and len(vals) == 2 and None not in a:
        return f"(({a[0]} - _np.fmod({a[0]}, {a[1]})) // {a[1]})"
    if name == "create_rsqrt" and len(vals) == 1 and a[0] is not None:
        return f"(1 / _np.sqrt({a[0]}))"
    if name == "create_fabs" and len(vals) == 1 and a[0] is not None:
        ty = vals[0].ty
        u = getattr(np, f"uint{ty.primitive_bitwidth}")
        mask = (1 << (ty.primitive_bitwidth - 1)) - 1
        return f"({a[0]}.view({e.k(u)}) & {mask}).view({e.k(_I._get_np_dtype(ty))})"
    if name == "create_fma" and len(vals) == 3 and None not in a:
        if vals[2].np_dtype == np.float32:        # _fma32 broadcasts its operands itself
            return f"{e.k(_fma32)}({a[0]}, {a[1]}, {a[2]})"
        if vals[2].np_dtype != np.float64:
            return None
        return f"{e.k(_I._interpreter.fma_fp64)}(*_np.broadcast_arrays({a[0]}, {a[1]}, {a[2]}))"
    if name == "create_dot" and len(vals) == 5 and None not in a[:3]:
        if any(v.ty.primitive_bitwidth == 8 and v.ty.is_floating() for v in vals[:2]):
            return None
        return f"(_np.matmul({a[0]}, {a[1]}, dtype={e.k(vals[2].np_dtype)}) + {a[2]})"
    if name == "create_masked_load" and len(vals) == 5 and None not in a[:2]:
        dt = _I._get_np_dtype(_elem_ty(vals[0].ty))
        oth = a[2] if a[2] is not None else f"_np.zeros_like({a[0]}, dtype={e.k(dt)})"
        return f"_iload({a[0]}, {a[1]}, {oth}, {e.k(dt)})"
    if extra is not None and extra[0] == "reduce" and len(vals) == 1:
        red, in_types = extra[1]
        # np.sum / np.nanmax / np.nanmin on an ndarray, as numpy implements them
        f = {id(tl.standard._sum_combine): "sum", id(tl.standard._elementwise_max): "_np.fmax",
             id(tl.standard._elementwise_min): "_np.fmin"}.get(id(red.combine_fn))
        if type(red) is not _I.ReduceOps or f is None or a[0] is None:
            return None
        dt = _I._get_np_dtype(in_types[0])
        if f == "sum":
            x = f"_np.add.reduce({a[0]}, {red.axis!r}, None, None, keepdims={red.keep_dims!r})"
        else:
            x = f"_nanred({f}, {a[0]}, {red.axis!r}, {red.keep_dims!r})"
        if type(red.axis) is int and (red.keep_dims or len(vals[0].shape) >= 2):
            return f"{x}.astype({e.k(dt)}, copy=False)"     # an array (not a scalar), fresh: _to_data's cast
        return f"_to_data({x}, {e.k(dt)})"
    return None


def _emit_op(e, p, slots, op):
    name, f, vals, kwargs, out, low = op
    if low is not None and low[0] in ("load", "store", "nload", "nstore"):
        return _emit_lowered(e, p, vals, out, low)
    lines = e.lines
    if e.box is not None and (out is None or type(out) is tuple or tuple(slots[out].shape or ()) != e.box[0]
                              or not (name in _BOX_OPS or _kind(name) is not None)):
        raise _NoBox
    if out is not None and type(out) is not tuple:
        x = _lower_expr(e, p, name, vals, kwargs, slots[out], low)
        if x is not None:
            o = e.var(p, out)
            lines.append(f"{o} = {x.replace('@', o)}")
            return
    if e.box is not None:
        raise _NoBox
    if name == "create_masked_store" and len(vals) == 4 and not kwargs and all(v.ty is not None for v in vals[:3]):
        lines.append(f"_istore({e.arr(p, vals[0])}, {e.arr(p, vals[1])}, {e.arr(p, vals[2])})")
        return
    args = [e.handle(p, v, slots) for v in vals]
    e.calls_builder = True
    lines.append(f"# {name}")
    call = f"{e.k(f)}({', '.join(args)}{', **' + e.k(kwargs) if kwargs else ''})"
    if out is None:
        lines.append(call)
    elif type(out) is tuple:
        lines.append(f"_r = {call}")
        lines.extend(f"{e.var(p, s)} = _r[{i}].data" for i, s in enumerate(out))
    else:
        lines.append(f"{e.var(p, out)} = {call}.data")


def _emit_lowered(e, p, vals, out, low):
    kind, q = low
    lines = e.lines
    dt = e.k(q["np_dtype"])
    addr = f"a{q['base']}" + (f" + {q['start']}" if q["start"] else "")
    if kind == "nload":
        lines.append(f"{e.var(p, out)} = _nested_load({addr}, {q['shape']!r}, {q['strides']!r}, "
                     f"{e.k(q['pieces'])}, {q['n']}, {dt}, {e.k(q['other'])})")
        return
    if kind == "nstore":
        lines.append(f"_nested_store({addr}, {e.arr(p, vals[1])}, {q['shape']!r}, {q['strides']!r}, "
                     f"{e.k(q['pieces'])}, {dt})")
        return
    box, shape = tuple(q["box"]), tuple(q["shape"])
    view = f"{e.k(_Views(box, q['strides'], q['np_dtype']))}[{addr}]"
    sl = e.k(tuple(slice(0, c) for c in box))
    if e.box is not None:       # values are box-shaped already
        lines.append(f"{e.var(p, out)} = _nparray({view})" if kind == "load" else f"{view}[...] = {e.arr(p, vals[1])}")
        return
    if kind == "load":
        o = e.var(p, out)
        if box == shape:
            lines.append(f"{o} = _nparray({view})")
            return
        fill = e.k(np.array(np.broadcast_to(q["other"], shape), dtype=q["np_dtype"]))
        lines.append(f"{o} = {fill}.copy()")
        if all(box):
            lines.append(f"{o}[{sl}] = {view}")
        return
    if all(box):
        data = e.arr(p, vals[1])
        lines.append(f"{view}[...] = {data}" if box == tuple(vals[1].shape) else f"{view}[...] = {data}[{sl}]")


class _NoBox(Exception):
    """An op that a box-only tape cannot take: the tape is compiled whole."""


def _no_box():
    raise _NoBox


_BOX_OPS = frozenset({"create_select", "create_splat", "create_fma"})     # lane-wise, besides _kind's ops


def _box_of(tapes):
    """(block shape, box) if the one program loads and stores only through one box of one block shape, and the
    box is smaller: then no other lane is observable, and a tape of lane-wise ops can compute the box alone."""
    if len(tapes) != 1:
        return None
    found = set()
    for op in tapes[0].ops:
        low = op[5]
        if low is not None and low[0] in ("load", "store", "nload", "nstore"):
            if low[0] not in ("load", "store"):
                return None
            found.add((tuple(low[1]["shape"]), tuple(low[1]["box"])))
    if len(found) != 1:
        return None
    shape, box = found.pop()
    return (shape, box) if box != shape and all(box) else None


def _compile(tapes, kinds):
    """One function ``run(*dyn_args)`` replaying every program's tape. kinds[i]: "ptr" (an address), "f32"
    (a float, rounded to fp32 here) or "int".

    A program of lane-wise ops whose loads and stores share one box (an elementwise launch whose size is not
    a power of 2) is compiled over the box alone: no fill of masked-off lanes, no slicing on store."""
    box = _box_of(tapes)
    if box is not None:
        e = _Emitter(kinds)
        e.box = box + (tuple(slice(0, c) for c in box[1]),)
        try:
            for op in tapes[0].ops:
                _emit_op(e, 0, tapes[0].slots, op)
        except _NoBox:
            box = None
    if box is None:
        e = _Emitter(kinds)
        for p, t in enumerate(tapes):
            for op in t.ops:
                _emit_op(e, p, t.slots, op)
    head = []
    for i in sorted(e.inputs_used):
        kd = kinds[i]
        if kd == "ptr":
            head.append(f"x{i} = _nparray([a{i}], dtype=_u64)")
        elif kd == "f32":
            head.append(f"x{i} = _nparray([a{i}], dtype=_f32)")
        else:
            head.append(f"x{i} = _dynh(a{i}).data")
            e.calls_builder = True      # (conservatively: _dyn_handle builds Triton tensor objects)
    body = head + e.lines or ["pass"]
    src = f"def run({', '.join(f'a{i}' for i in range(len(kinds)))}):\n" + "".join(f"    {ln}\n" for ln in body)
    exec(compile(src, "<tgrad tape>", "exec"), e.ns)
    run = e.ns["run"]
    run.source = src
    return _serialized(run) if e.calls_builder else run


def _serialized(run):
    """A tape that calls the interpreter's builder (so tl patched, JIT calls routed, under LOCK).

    Tapes of numpy expressions only run unlocked: they share nothing mutable but ``_Views`` caches
    (single dict operations) and the memory they are given."""
    def locked(*dyn):
        with LOCK:
            if _scope[0] is None:
                _lang_for_interpreter()
            prev = getattr(_tls, "interp", 0)
            _tls.interp = 1
            try:
                run(*dyn)
            finally:
                _tls.interp = prev
    locked.source = run.source
    return locked


_TAPES = {}
_FAST = {}     # _fast_key(...) -> (kernel, compiled tape or None): the per-launch lookup
_SEEN = {}
TRACE_AFTER = 2          # record a key's tape on its 2nd launch: one-off shapes never pay for recording
MAX_TAPES = 4096


def dynamic_args(kernel, *names):
    """Declare int arguments of ``kernel`` that change between launches without changing its control flow
    (e.g. a random seed/offset): they are replayed as values instead of being part of the trace key."""
    kernel.__dict__["_tgrad_dynamic"] = frozenset(names)
    for p in kernel.params:        # and the GPU JIT does not specialize on their values (no recompiles)
        if p.name in names:
            p.do_not_specialize = True
    return kernel


_LOW29, _MIDPOINT = np.uint64(0x1FFFFFFF), np.uint64(0x10000000)
_EXP32 = np.uint32(0x7F800000)


def _fma32(x, y, z):
    """The interpreter's fma_fp32(x, y, z), bit for bit, in numpy (fma_fp32 loops in C: 6 ns an element).

    x * y is exact in float64, so float32(float64(x y) + z) rounds twice; that differs from one rounding
    only where an inexact float64 sum sits exactly on a float32 rounding midpoint (low 29 mantissa bits
    1 << 28), or in float32's subnormal range (a nonzero sum whose fp32 rounding has exponent 0): those
    elements take fma_fp32.
    """
    if not x.shape == y.shape == z.shape:
        x, y, z = np.broadcast_arrays(x, y, z)
    if x.size <= 256:       # a few elements: the C loop costs less than the numpy passes below
        return _I._interpreter.fma_fp32(x, y, z)
    s = x.astype(np.float64)
    np.multiply(s, y, out=s)
    np.add(s, z, out=s)
    r = s.astype(np.float32)
    flag = (s.view(np.uint64) & _LOW29) == _MIDPOINT
    sub = (r.view(np.uint32) & _EXP32) == 0
    sub &= s != 0       # exact zeros (masked-off lanes, zero gradients) are many and need no fix
    flag |= sub
    idx = np.flatnonzero(flag)
    if idx.size:
        xs, ys = x.ravel()[idx], y.ravel()[idx]
        ps, zs, ss = xs.astype(np.float64) * ys, z.ravel()[idx].astype(np.float64), s.ravel()[idx]
        b = ss - ps                                         # TwoSum: the float64 sum's rounding error
        inexact = ((ps - (ss - b)) + (zs - b) != 0) | (np.abs(ss) < 2.0 ** -126)
        idx = idx[inexact]
        if idx.size:
            rf = r.reshape(-1)
            rf[idx] = _I._interpreter.fma_fp32(x.ravel()[idx], y.ravel()[idx], z.ravel()[idx])
    return r


def _ckey(v):
    return id(v) if callable(v) else v


def _dyn_handle(a):
    if type(a) is float:
        return _I.TensorHandle(np.array([a], dtype=np.float32), tl.float32)
    return _cvt(a).handle


def _fast_key(kernel, grid, args, constexprs):
    """(key, dynamic positions) of a launch: what _FAST keys a tape by, cheap to build and to hash (the
    kernel by id, checked on a hit), and the indices of the arguments a tape takes (pointers, floats and
    ``dynamic_args`` ints, in order)."""
    key = [id(kernel), tuple(grid)]
    pos = []
    dyn_int = kernel.__dict__.get("_tgrad_dynamic")
    if dyn_int:
        for i, (nm, a) in enumerate(zip(_entry(kernel)[1], args)):
            if nm in dyn_int and type(a) is int:
                key.append(("i", -2**31 <= a < 2**31))
                pos.append(i)
            else:
                key.append((type(a), a.dtype if type(a) is Ptr else None if type(a) is float else a))
                if type(a) is Ptr or type(a) is float:
                    pos.append(i)
    else:
        add = key.append
        for i, a in enumerate(args):
            t = type(a)
            if t is int:
                add(a)
            elif t is Ptr:
                add(a.dtype)
                pos.append(i)
            elif t is float:
                add(float)
                pos.append(i)
            else:
                add((t, a))
    for k, v in constexprs.items():
        key.append(k)
        key.append(id(v) if callable(v) else v)
    return tuple(key), tuple(pos)


def _run_trace(kernel, grid, args, constexprs):
    fn, names, cexpr = _entry(kernel)
    dyn_int = kernel.__dict__.get("_tgrad_dynamic", ())
    keyp, dyn_names, dyn_vals = [], [], []
    for nm, a in zip(names, args):
        ta = type(a)
        if ta is Ptr:
            keyp.append(a.dtype)
        elif ta is float:
            keyp.append(float)
        elif nm in dyn_int:
            keyp.append(("i", -2**31 <= a < 2**31))
        else:
            keyp.append(a)
            continue
        dyn_names.append(nm)
        dyn_vals.append(a)
    g = tuple(grid) + (1,) * (3 - len(grid))
    key = (kernel, g, tuple(keyp), tuple((k, _ckey(v)) for k, v in constexprs.items()))
    run = _TAPES.get(key)
    if run is None:
        n = _SEEN.get(key, 0) + 1
        _SEEN[key] = n
        if n < TRACE_AFTER:
            return _run_direct(kernel, grid, args, constexprs)
        if len(_TAPES) >= MAX_TAPES:
            _TAPES.clear()
            _FAST.clear()
            _SEEN.clear()
        hs = [_dyn_handle(a) for a in dyn_vals]
        dyn_pos = {nm: i for i, nm in enumerate(dyn_names)}
        kw = {nm: (tl.tensor(hs[dyn_pos[nm]], hs[dyn_pos[nm]].dtype) if nm in dyn_pos else _cvt(a))
              for nm, a in zip(names, args)}
        kw.update(constexprs)
        base_values = [a.ptr if type(a) is Ptr else None for a in dyn_vals]
        b = _I.interpreter_builder
        b.set_grid_dim(*g)
        tapes, ok = [], True
        for x in range(g[0]):
            for y in range(g[1]):
                for z in range(g[2]):
                    b.set_grid_idx(x, y, z)
                    t, good = record(fn, kw, dyn_names, base_values)
                    ok = ok and good
                    tapes.append(t)
        kinds = ["ptr" if type(a) is Ptr else "f32" if type(a) is float else "int" for a in dyn_vals]
        run = _TAPES[key] = _compile(tapes, kinds) if ok else False
        _FAST[_fast_key(kernel, grid, args, constexprs)[0]] = (kernel, run or None)
        return
    if run is False:
        return _run_direct(kernel, grid, args, constexprs)
    run(*[a.ptr if type(a) is Ptr else a for a in dyn_vals])


# ---------------------------------------------------------------- launch recording (AOT check)
RECORD = None            # a list while tgrad.kernels.aot records launches
DRY_RUN = False          # while recording: skip running the kernels (outputs keep whatever memory held)


def _jit_kwargs(kernel, constexprs):
    """The keyword arguments ``JITFunction.run`` gives its binder and option parser (the options part of the key)."""
    from triton import knobs
    return dict(constexprs, debug=kernel.debug or knobs.runtime.debug,
                instrumentation_mode=knobs.compilation.instrumentation_mode,
                fpsan_homomorphic_casts=knobs.compilation.fpsan_homomorphic_casts)


def _backend(arch):
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend
    return make_backend(GPUTarget("cuda", arch, 32))


def launch_spec(kernel, args, constexprs):
    """(signature, constexprs, attrs) of a launch exactly as the GPU JIT specializes it at run time.

    Triton's own binder and ``_pack_args`` decide it: ``*fp32``/``i32``/``fp32``/``constexpr`` per
    parameter, an int equal to 1 becoming a constexpr, ``tt.divisibility`` 16 on pointers and ints
    that are multiples of 16 (not on ``dynamic_args`` ints: ``do_not_specialize``).  ``compile_aot``
    of it fills the cache entry the JIT looks up, so a GPU run compiles nothing.
    """
    binder = kernel.__dict__.get("_tgrad_aot_binder")
    if binder is None:
        from triton.runtime.jit import create_function_from_signature
        backend = _backend(90)              # argument specialization is the same for every NVIDIA arch
        binder = kernel.__dict__["_tgrad_aot_binder"] = (
            backend, create_function_from_signature(kernel.signature, kernel.params, backend))
    backend, bind = binder
    kwargs = _jit_kwargs(kernel, constexprs)
    bound, specialization, options = bind(*args, **kwargs)
    _, sig, cexpr, attrs = kernel._pack_args(backend, kwargs, bound, specialization, options)
    names = kernel.arg_names
    return sig, {names[k[0]]: v for k, v in cexpr.items()}, attrs


class Launch:
    """``kernel[grid](*args, **constexprs)`` on ``device`` with all but its dynamic arguments fixed.

    Calling it launches with new dynamic arguments (pointer addresses, floats and ``dynamic_args``
    ints, in argument order; those left out keep the values given here).  A launcher keeps one per
    launch site, keyed on everything that decides ``args`` and ``constexprs`` (shapes, strides,
    dtypes, int scalars, device, ``FORCE_GPU_BLOCKS``): a replayed launch then skips rebuilding the
    arguments and the trace key.  Ints declared by ``dynamic_args`` must stay in the int32 / int64
    class of the ones given here.
    """

    __slots__ = ("kernel", "grid", "device", "args", "constexprs", "pos", "dyn", "ndyn", "fkey", "tape", "gpu")

    def __init__(self, kernel, grid, device, args, constexprs):
        self.kernel, self.grid, self.device = kernel, tuple(grid), device
        self.args, self.constexprs = list(args), constexprs
        fkey, self.pos = _fast_key(kernel, self.grid, args, constexprs)
        self.dyn = tuple(args[i].ptr if type(args[i]) is Ptr else args[i] for i in self.pos)
        self.ndyn = len(self.pos)
        self.fkey = fkey if device == "cpu" and 0 not in self.grid else None
        self.tape = None
        self.gpu = None                 # the cuda path's _gpu.Site, made on the first cuda call

    def __call__(self, *dyn):
        if COUNTER.enabled:
            COUNTER.add(self.kernel.__name__)
        if len(dyn) < self.ndyn:
            dyn += self.dyn[len(dyn):]
        if self.device != "cpu" and RECORD is None and 0 not in self.grid:
            gpu = self.gpu
            if gpu is None:
                from . import _gpu
                gpu = self.gpu = _gpu.Site(self)
            gpu(self, dyn)
            return
        tape = self.tape
        if tape is None and self.fkey is not None:
            hit = _FAST.get(self.fkey)
            if hit is not None and hit[0] is self.kernel:
                tape = self.tape = hit[1]
        if tape is not None and EXECUTOR == "trace" and RECORD is None:
            outer, c = _FP_STATE.get(), _fp_cache
            tok = _FP_STATE.set(c[1] if outer is c[0] else _fp_ignore(outer))
            try:
                tape(*dyn)
            finally:
                _FP_STATE.reset(tok)
            return
        args = list(self.args)
        for i, v in zip(self.pos, dyn):
            a = args[i]
            args[i] = Ptr(v, a.dtype) if type(a) is Ptr else v
        _launch(self.kernel, self.grid, self.device, args, self.constexprs)


class Sites(dict):
    """A launcher's cache of Launch objects by launch key (bounded: cleared when full)."""

    __slots__ = ()

    def add(self, key, site):
        if len(self) >= 4096:
            self.clear()
        self[key] = site
        return site


def launch(kernel, grid, device, args, constexprs):
    """Run ``kernel[grid](*args, **constexprs)`` on ``device`` ("cpu" or "cuda").

    ``args`` are Ptr objects and Python ints/floats; ``constexprs`` the
    kernel's ``tl.constexpr`` parameters by name.
    """
    Launch(kernel, grid, device, args, constexprs)()


def _launch(kernel, grid, device, args, constexprs):
    if 0 in grid:
        return
    # float scalars reach kernels as fp32 on every path, as the GPU JIT passes them
    args = [float(_np_f32(a)) if type(a) is float else a for a in args]
    if RECORD is not None:
        RECORD.append((kernel,) + launch_spec(kernel, args, constexprs))
        if DRY_RUN:
            return
    if device == "cpu":
        run_cpu(kernel, grid, args, constexprs)
        return
    from . import _gpu
    _gpu.launch(kernel, grid, device, args, constexprs)


def run_cpu(kernel, grid, args, constexprs):
    """Run ``kernel`` over ``grid`` with the interpreter executor (host addresses; fp32-rounded floats)."""
    with LOCK:
        tok = _FP_STATE.set(_fp_ignore(_FP_STATE.get()))   # masked-off lanes compute garbage (e.g. x / 0)
        _tls.interp = 1
        try:
            if EXECUTOR == "trace":
                _lang_for_interpreter()
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


# ---------------------------------------------------------------- ahead-of-time compile
def compile_aot(kernel, signature, constexprs, arch, attrs=None):
    """Compile ``kernel`` for ``sm_<arch>`` without a GPU, with the options the JIT uses; returns Triton's
    CompiledKernel (and leaves it in Triton's cache, where the JIT finds a launch of the same spec)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    with LOCK:
        _lang_for_compiler()
        src = ASTSource(fn=kernel, signature=signature, constexprs=constexprs, attrs=attrs)
        options = _backend(arch).parse_options(_jit_kwargs(kernel, {})).__dict__
        return triton.compile(src, target=GPUTarget("cuda", arch, 32), options=options)


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
    On cuda the block halves per two dims past two, keeping the index maths in
    registers (1024 elements x 6 dims spill on sm_90; 256 x 6 use ~94 registers).
    """
    if gpu_blocks(device):
        return 1024 >> (max(ndim - 1, 0) // 2)
    return max(16, min(next_pow2(n), 65536))
