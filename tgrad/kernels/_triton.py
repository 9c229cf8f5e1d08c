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
  arithmetic that only fed them is dropped.  Control flow on a loaded or
  dynamic value is detected while recording; such keys stay on ``direct``.
- ``direct``: ``triton.language`` is patched for the interpreter once and
  left patched until a GPU compile needs it back; each launch calls the
  rewritten kernel function over the grid itself (no GridExecutor, no
  ``inspect`` per launch, no host copies: our pointers already are host
  memory).
- ``stock``: Triton's own ``InterpretedFunction.run`` (GridExecutor), patching
  and restoring ``tl``/``tl.core`` around every launch.

Float scalar arguments are rounded to fp32 before any launch, on every path,
because that is what the GPU JIT passes (so all paths agree bit for bit).

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
_np_f32 = np.float32
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


# ---------------------------------------------------------------- trace-and-replay executor
_PURE = {"create_splat", "create_addptr", "create_broadcast", "create_expand_dims", "create_reshape",
         "create_trans", "create_permute", "binary_op", "unary_op", "cast_impl", "create_bitcast",
         "create_int_cast", "create_fp_to_fp", "create_select", "create_cat", "create_join",
         "create_split", "create_get_program_id", "create_make_range"}


class Tape:
    """The recorded, lowered builder ops of one program of one launch key."""

    __slots__ = ("ops", "nslots")


class _HostArray:
    __slots__ = ("__array_interface__",)

    def __init__(self, addr, shape, strides, typestr):
        self.__array_interface__ = {"data": (addr, False), "shape": shape, "strides": strides,
                                    "typestr": typestr, "version": 3}


def _view(addr, shape, strides, dtype):
    return np.asarray(_HostArray(addr, shape, strides, dtype.str))


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


def _nested_load(base, start, strides, shape, pieces, n_block, np_dtype, other, tt):
    v = _view(int(base.data[0]) + start, shape, strides, np_dtype)
    out = np.empty(n_block, dtype=np_dtype)
    done = 0
    for idx, f0, cnt in pieces:
        out[f0:f0 + cnt] = v[idx].reshape(-1)
        done = f0 + cnt
    if done < n_block:
        out[done:] = other if np.ndim(other) == 0 else np.broadcast_to(other, (n_block,))[done:]
    return _I.TensorHandle(out, tt)


def _nested_store(base, value, start, strides, shape, pieces, np_dtype):
    v = _view(int(base.data[0]) + start, shape, strides, np_dtype)
    data = np.broadcast_to(value.data, (int(np.prod(shape)),))
    for idx, f0, cnt in pieces:
        v[idx] = data[f0:f0 + cnt].reshape(v[idx].shape)
    return None


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


def _lowered_load(base, start, strides, box, shape, np_dtype, other, tt):
    full = tuple(box) == tuple(shape)
    v = _view(int(base.data[0]) + start, box, strides, np_dtype) if all(box) else None
    if full:
        out = np.array(v)
    else:
        out = np.array(np.broadcast_to(other, shape), dtype=np_dtype)
        if v is not None:
            out[tuple(slice(0, c) for c in box)] = v
    return _I.TensorHandle(out, tt)


def _lowered_store(base, value, start, strides, box, np_dtype):
    if not all(box):
        return None
    v = _view(int(base.data[0]) + start, box, strides, np_dtype)
    data = np.broadcast_to(value.data, value.data.shape)
    v[...] = data[tuple(slice(0, c) for c in box)]
    return None


def record(fn, kw, dyn_names, base_values):
    """Run fn(**kw) (one program), recording dynamic builder ops. Returns (tape, replayable)."""
    real = _I.interpreter_builder
    dyn, keep, ops, bad = {}, [], [], []
    prov = {}      # id(handle) -> pointer slot it is (base + constant offsets) of
    nslots = [0]

    def reg(h):
        s = nslots[0]
        nslots[0] += 1
        dyn[id(h)] = s
        keep.append(h)
        return s

    for nm, bv in zip(dyn_names, base_values):
        s = reg(kw[nm].handle)
        if bv is not None:
            prov[id(kw[nm].handle)] = s
    bases = dict(enumerate(base_values))

    def lower(name, args):
        if name == "create_masked_load":
            ptrs, mask, other = args[0], args[1], args[2]
        elif name == "create_masked_store":
            ptrs, mask, other = args[0], args[2], None
        else:
            return None
        s = prov.get(id(ptrs))
        if s is None or (mask is not None and id(mask) in dyn) or (other is not None and id(other) in dyn):
            return None
        np_dtype = _I._get_np_dtype(ptrs.get_element_ty())
        rel = ptrs.data.astype(np.int64) - np.int64(bases[s])
        aff = _affine(rel, np_dtype.itemsize)
        box = _box(None if mask is None else mask.data, ptrs.data.shape)
        if (aff is None or box is False) and rel.ndim == 1:
            return lower_nested(name, args, s, rel, np_dtype, mask, other)
        if aff is None or box is False:
            return None
        start, strides = aff
        if name == "create_masked_load":
            oth = 0 if other is None else other.data
            tt = ptrs.get_element_ty()
            return (_lowered_load, ((True, s), (False, start), (False, strides), (False, box),
                                    (False, ptrs.data.shape), (False, np_dtype), (False, oth), (False, tt)))
        val = args[1]
        return (_lowered_store, ((True, s), (id(val) in dyn, dyn.get(id(val), val)), (False, start),
                                 (False, strides), (False, box), (False, np_dtype)))

    def lower_nested(name, args, s, rel, np_dtype, mask, other):
        n = _prefix_len(None if mask is None else mask.data, rel.size)
        shp = _factorize(rel)
        if n < 0 or shp is None:
            return None
        aff = _affine(rel.reshape(shp), np_dtype.itemsize)
        if aff is None:
            return None
        start, strides = aff
        pieces = _pieces(shp, n)
        if name == "create_masked_load":
            oth = 0 if other is None else other.data
            return (_nested_load, ((True, s), (False, start), (False, strides), (False, tuple(shp)),
                                   (False, pieces), (False, rel.size), (False, np_dtype), (False, oth),
                                   (False, args[0].get_element_ty())))
        val = args[1]
        return (_nested_store, ((True, s), (id(val) in dyn, dyn.get(id(val), val)), (False, start),
                                (False, strides), (False, tuple(shp)), (False, pieces), (False, np_dtype)))

    def note(f, name, args, kwargs, out):
        spec, isdyn = [], False
        for v in args:
            if isinstance(v, _I.TensorHandle) and id(v) in dyn:
                spec.append((True, dyn[id(v)]))
                isdyn = True
            else:
                spec.append((False, v))
        for v in kwargs.values():
            if isinstance(v, _I.TensorHandle) and id(v) in dyn:
                bad.append("dynamic handle passed by keyword")
        keep.append(args)
        keep.append(out)
        if not isdyn:
            return
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
        low = lower(name, args)
        if low is not None:
            ops.append((low[0], low[1], {}, slot, name))
        else:
            ops.append((f, tuple(spec), kwargs, slot, name))

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
                 tuple(t.handle for t in outs) if multi else outs[0].handle)
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
    t.ops = _dce(ops)
    t.nslots = nslots[0]
    return t, not bad


def _dce(ops):
    """Drop pure ops whose outputs nothing later reads."""
    used = set()
    keep = []
    for f, spec, kwargs, slot, name in reversed(ops):
        outs = slot if isinstance(slot, tuple) else (() if slot is None else (slot,))
        if name in _PURE and not any(o in used for o in outs):
            continue
        for d, v in spec:
            if d:
                used.add(v)
        keep.append((f, spec, kwargs, slot))
    keep.reverse()
    return keep


def replay(tape, handles):
    slots = [None] * tape.nslots
    slots[:len(handles)] = handles
    for f, spec, kwargs, out in tape.ops:
        r = f(*[slots[v] if d else v for d, v in spec], **kwargs)
        if out is not None:
            if type(out) is tuple:
                for s, h in zip(out, r):
                    slots[s] = h
            else:
                slots[out] = r



_TAPES = {}
_SEEN = {}
TRACE_AFTER = 2          # record a key's tape on its 2nd launch: one-off shapes never pay for recording
MAX_TAPES = 4096


def dynamic_args(kernel, *names):
    """Declare int arguments of ``kernel`` that change between launches without changing its control flow
    (e.g. a random seed/offset): they are replayed as values instead of being part of the trace key."""
    kernel.__dict__["_tgrad_dynamic"] = frozenset(names)
    return kernel


def _ckey(v):
    return id(v) if callable(v) else v


def _dyn_handle(a):
    if type(a) is float:
        return _I.TensorHandle(np.array([a], dtype=np.float32), tl.float32)
    return _cvt(a).handle


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
    tapes = _TAPES.get(key)
    if tapes is None:
        n = _SEEN.get(key, 0) + 1
        _SEEN[key] = n
        if n < TRACE_AFTER:
            return _run_direct(kernel, grid, args, constexprs)
        if len(_TAPES) >= MAX_TAPES:
            _TAPES.clear()
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
        _TAPES[key] = tapes if ok else False
        return
    if tapes is False:
        return _run_direct(kernel, grid, args, constexprs)
    hs = [_dyn_handle(a) for a in dyn_vals]
    for tape in tapes:
        replay(tape, hs)


# ---------------------------------------------------------------- launch recording (AOT check)
RECORD = None            # a list while tgrad.kernels.aot records launches
DRY_RUN = False          # while recording: skip running the kernels (outputs keep whatever memory held)


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
    # float scalars reach kernels as fp32 on every path, as the GPU JIT passes them
    args = [float(_np_f32(a)) if type(a) is float else a for a in args]
    if RECORD is not None:
        RECORD.append((kernel,) + launch_spec(kernel, args, constexprs))
        if DRY_RUN:
            return
    if device == "cpu":
        with LOCK, np.errstate(all="ignore"):   # masked-off lanes compute garbage (e.g. x / 0)
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


def elementwise_block(n, device, ndim=0):
    """Elements per program: large on cpu (the interpreter pays per program), 1024 on cuda.

    ``ndim``: the most dims any operand is addressed through (strided launches).
    On cuda the block halves per two dims past two, keeping the index maths in
    registers (1024 elements x 6 dims spill on sm_90; 256 x 6 use ~94 registers).
    """
    if gpu_blocks(device):
        return 1024 >> (max(ndim - 1, 0) // 2)
    return max(16, min(next_pow2(n), 65536))
