"""The ``trace`` executor: trace-and-replay of interpreted kernels.

A kernel's first launch with given dtypes and constexprs records program (0, 0, 0) as a shape-generic tape:
its int arguments (sizes, strides) and program ids are inputs, so any grid and sizes replay it with no
interpreter; control flow on values computed from them alone (a loop's trip count, ``if pid < n``) is a
guard, checked per program, and a program failing every guard is recorded as one more tape.  The second
launch with the same key (kernel, grid, constexprs, pointer dtypes, int scalars) records a specialized
tape of the builder ops that depend on the pointers and float scalars (replaying a generic tape's builder
ops where one applies, else through the interpreter); later launches replay only those.
Loads/stores whose addresses are one pointer plus constant affine offsets under a box-shaped constant
mask are lowered to numpy strided views (no per-element gather), and the address arithmetic that only
fed them is dropped; an op or load that repeats an earlier one on the same operands (no store in
between) is computed once.  Control flow on a loaded or dynamic value is detected while recording;
such keys stay on ``direct``.  Replays of tapes made of numpy expressions only run without ``LOCK``.
Tapes are kept up to ``MAX_TAPE_BYTES`` (an estimate), the least recently used shapes' dropped first
(``cache_info()``), and on disk across processes (``tape_cache``): a launch key or generic key traced by an
earlier run is loaded.  Recording goes through tgrad's lean versions of Triton's language internals
(``internals.LEAN``: the same builder calls, ``tests/kernels/test_lean_tracer.py``).
"""
import gc
import os

import numpy as np
import triton.language as tl

from . import tape_cache
from .direct import Ptr, _cvt, _entry, _run_direct
from .internals import _I, _lang_for_interpreter, do_not_specialize
from .tape import _compile, _compile_check
from .tape_ops import (_affine, _box, _dyn_handle, _factorize, _fine_shape, _interval_box, _kind, _pad_to, _pieces,
                       _prefix_len, _Val)


_NO = object()
# int ops a generic tape's guards may be computed through (besides _PURE and _kind's one-line numpy ops)
_INT_PURE = frozenset({"create_idiv", "create_sdiv", "create_udiv"})
_PURE = {"create_splat", "create_addptr", "create_broadcast", "create_expand_dims", "create_reshape",
         "create_trans", "create_permute", "binary_op", "unary_op", "cast_impl", "create_bitcast",
         "create_int_cast", "create_fp_to_fp", "create_select", "create_cat", "create_join",
         "create_split", "create_get_program_id", "create_make_range"}


class Tape:
    """The recorded, lowered builder ops of one program of one launch key."""

    __slots__ = ("ops", "slots", "guards", "gops")




def _lower_split(name, base, rel, mask, np_dtype, other):
    """("sload" / "sstore", params) if, once each axis is split (_fine_shape, padded at its end), the mask is a
    box of intervals and the offsets are affine over it: the access is one strided view (an implicit GEMM's
    tap, a pooling window's stride-s taps as a stride-0 axis), else None."""
    per_axis = _fine_shape(rel, None if mask is None else mask.data)
    if per_axis is None or sum(len(f) for f in per_axis) > 32:
        return None
    fine = tuple(x for f in per_axis for x in f)
    padded = tuple(int(np.prod(f)) for f in per_axis)
    m = np.ones(rel.shape, bool) if mask is None else np.broadcast_to(mask.data, rel.shape)
    lims = _interval_box(_pad_to(m, padded, False).reshape(fine), fine)
    if lims is False:
        return None
    start, strides = 0, (0,) * len(fine)
    if lims is not None:
        sub = _pad_to(rel, padded, None).reshape(fine)[tuple(slice(lo, hi) for lo, hi in lims)]
        aff = _affine(sub, np_dtype.itemsize)
        if aff is None:
            return None
        start, strides = aff
    p = dict(base=base, start=start, strides=strides, lims=lims, fine=fine, shape=rel.shape, padded=padded,
             np_dtype=np_dtype, other=other)
    return ("sload" if name.endswith("_load") else "sstore"), p


def record(fn, kw, dyn_names, base_values, generic=None, replay=None):
    """``_record`` with Python's cyclic garbage collector paused: a recording makes thousands of short-lived
    objects, which collections mid-recording promote to the oldest generation, so that a full collection of
    the whole heap (~50 ms with Triton loaded) follows a few recordings later."""
    was = gc.isenabled()
    gc.disable()
    try:
        return _record(fn, kw, dyn_names, base_values, generic, replay)
    finally:
        if was:
            gc.enable()


def _record(fn, kw, dyn_names, base_values, generic=None, replay=None):
    """Run fn(**kw) (one program), recording dynamic builder ops. Returns (tape, replayable).

    A tape op is (name, f, vals, kwargs, out_slots, lowered): ``vals`` are _Val per positional argument,
    ``lowered`` a (kind, params) for loads/stores turned into numpy views (else None).

    ``generic``: ``(ints, globals)`` for a shape-generic tape: the int arguments are among ``dyn_names`` (their
    indices in ``ints``: those whose values the tape may depend on through control flow) and the program ids
    are three more inputs (slots ``len(dyn_names)`` + axis), so the tape replays any program of any grid and
    sizes that passes its guards (``tape.guards``, checked by ``tape.compile_check``): control flow on a value
    computed from those ints and program ids alone (``if pid < n``; ``range(0, K, B)``, whose trip count is
    guarded when its start and step are constants).  Control flow on anything else: not replayable.
    ``tape.gops``: its ops for ``replay``.

    ``replay``: ``(gops, inputs)``: instead of running fn, run the ops of a generic tape whose guards this
    program passes (its builder ops, with ``inputs`` the handles of its arguments and program ids): the same
    builder ops on the same values as fn would run, without the interpreter's language layer."""
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
    n_in = len(dyn_names)
    guards, ipure = [], set()     # generic: its guards, and the slots computed from ints and program ids alone
    if generic is not None:
        ipure.update(generic[0])
        ipure.update(reg(_I.TensorHandle(np.zeros(1, np.int32), tl.int32)) for _ in range(3))

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
        if aff is None or box is False:
            low = _lower_split(name, s, rel, mask, np_dtype, oth)
            if low is not None:
                return low
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
        # a pointer bitcast keeps the addresses (tl.load/store of a *i1 go through one to *i8)
        if name in ("create_splat", "create_addptr", "create_broadcast", "create_expand_dims", "create_reshape") or (
                name == "create_bitcast" and out is not None and out.dtype.is_ptr()):
            dyn_in = [v for v in args if isinstance(v, _I.TensorHandle) and id(v) in dyn]
            if len(dyn_in) == 1 and id(dyn_in[0]) in prov and out is not None:
                prov[id(out)] = prov[id(dyn_in[0])]
        ops.append((name, f, vals, kwargs, slot, lower(name, args) or extra))
        if ipure and (name in _PURE or name in _INT_PURE or _kind(name) is not None):
            if all(v.slot is None or v.slot in ipure for v in vals) and slot is not None:
                ipure.update(slot if type(slot) is tuple else (slot,))

    class Rec:
        def __getattr__(self, name):
            attr = getattr(real, name)
            if not callable(attr) or (name.startswith("get_") and name.endswith("_ty")):
                return attr

            def wrapped(*args, **kwargs):
                out = attr(*args, **kwargs)
                if generic is not None and name == "create_get_program_id":
                    dyn[id(out)] = n_in + args[0]       # the program id: an input of the tape
                    keep.append(out)
                    return out
                if generic is not None and name == "create_get_num_programs":
                    bad.append("the grid's size is read")
                note(attr, name, args, kwargs, out)
                return out
            self.__dict__[name] = wrapped       # (made once per method and recording)
            return wrapped

    patched = []
    for cls in (_I.ReduceOps, _I.ScanOps) if replay is None else ():
        orig = cls.apply_impl

        def rec_impl(self_, input, orig=orig):
            out = orig(self_, input)
            in_types = [t.type for t in input]
            scan1 = type(self_) is _I.ScanOps and len(input) == 1 and len(out) == 1   # one cumsum: lowered
            multi = isinstance(out, (list, tuple)) and not scan1
            outs = tuple(out) if multi or scan1 else (out,)

            op = _RedOp(self_, in_types, multi, scan1, orig)
            note(op, "reduce_scan", [t.handle for t in input], {},
                 tuple(t.handle for t in outs) if multi else outs[0].handle,
                 (("scan" if scan1 else "reduce"), (self_, in_types)) if not multi else None)
            return out
        patched.append((cls, orig))
        cls.apply_impl = rec_impl
    tcls = tl.core.tensor
    orig_bool, orig_index = tcls.__bool__, tcls.__index__

    def guard(orig, kind):
        def g(self):
            r = orig(self)
            s = dyn.get(id(self.handle))
            if s is not None:
                if s in ipure:
                    guards.append((kind, s, r))
                else:
                    bad.append("control flow depends on a loaded value or a dynamic argument")
            return r
        return g

    def grange(*a):
        """``range`` in the kernel's module while a generic tape records: a bound computed from ints and
        program ids, with a constant start and step, is guarded by its trip count, not its value."""
        if len(a) >= 2 and type(a[0]) is int and (len(a) == 2 or type(a[2]) is int) and \
                isinstance(a[1], tl.core.tensor) and dyn.get(id(a[1].handle)) in ipure:
            end = int(a[1].handle.data.squeeze())
            step = a[2] if len(a) == 3 else 1
            r = range(a[0], end, step)
            guards.append(("trips", dyn[id(a[1].handle)], (a[0], step, len(r))))
            return r
        return range(*a)
    if replay is not None:
        _replay(Rec(), note, *replay)
        return _tape(ops, slot_h, guards, None), not bad
    tcls.__bool__, tcls.__index__ = guard(orig_bool, "bool"), guard(orig_index, "index")
    sem = _I.interpreter_semantic
    sem.builder = Rec()
    glb = generic[1] if generic is not None else None
    if glb is not None:
        had = glb.get("range", _NO)
        glb["range"] = grange
    try:
        fn(**kw)
    finally:
        sem.builder = real
        tcls.__bool__, tcls.__index__ = orig_bool, orig_index
        if glb is not None:
            if had is _NO:
                del glb["range"]
            else:
                glb["range"] = had
        for cls, orig in patched:
            cls.apply_impl = orig
    return _tape(ops, slot_h, guards, generic), not bad


class _RedOp:
    """A recorded reduction or scan as a function of its input handles (a class, so a generic tape's ops pickle)."""

    __slots__ = ("red", "in_types", "multi", "scan1", "orig")

    def __init__(self, red, in_types, multi, scan1, orig):
        self.red, self.in_types, self.multi, self.scan1, self.orig = red, in_types, multi, scan1, orig

    def __call__(self, *hs):
        r = self.orig(self.red, tuple(tl.tensor(h, ty) for h, ty in zip(hs, self.in_types)))
        r = r[0] if self.scan1 else r
        return tuple(t.handle for t in r) if self.multi else r.handle

    def __reduce__(self):
        return _RedOp, (self.red, self.in_types, self.multi, self.scan1, self.orig)


def _tape(ops, slot_h, guards, generic):
    t = Tape()
    t.ops = _dce(_cse(ops))
    t.slots = [_Val(s, None, h) for s, h in enumerate(slot_h)]
    t.guards = guards
    # a generic tape's ops without the recorded values (slots keep only types and shapes)
    t.gops = None if generic is None else [
        (name, f, [v if v.slot is None else t.slots[v.slot] for v in vals], kwargs, slot,
         low if name in _REDUCTIONS else None) for name, f, vals, kwargs, slot, low in ops]
    return t


def _replay(rec, note, gops, inputs):
    """Run the builder ops of a generic tape on ``inputs`` (handles by slot) through ``rec``, the recording
    builder (reductions, which are not builder methods, straight to ``note``)."""
    h = dict(enumerate(inputs))
    for name, f, vals, kwargs, slot, extra in gops:
        args = [h[v.slot] if v.slot is not None else v.obj for v in vals]
        if name in _REDUCTIONS:
            out = f(*args)
            note(f, name, args, {}, out, extra)
        else:
            out = getattr(rec, name)(*args, **kwargs)
        if type(slot) is tuple:
            h.update(zip(slot, out))
        elif slot is not None:
            h[slot] = out


# ops that compute their outputs from their operands alone: a repeat with the same operands is a copy
_CSE_OK = _PURE | {"reduce_scan", "create_fma", "create_native", "create_dot", "create_idiv", "create_sdiv", "create_udiv",
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
        if low is not None and low[0] in ("load", "nload", "sload"):
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
        if (name in _PURE or _kind(name) is not None or name in _REDUCTIONS or name == "create_native") and \
                not any(o in used for o in outs):
            continue                              # (_kind: one-line numpy builder methods, e.g. create_fmul)
        low = op[5]
        if low is not None and low[0] in ("load", "nload", "sload"):
            pass                                  # reads only its base pointer, an input slot
        elif low is not None and low[0] in ("store", "nstore", "sstore"):
            if vals[1].slot is not None:
                used.add(vals[1].slot)
        else:
            used.update(v.slot for v in vals if v.slot is not None)
        keep.append(op)
    keep.reverse()
    return keep


_TAPES = {}    # trace key -> compiled tape (or False), least recently used first (at _epoch granularity)
_FAST = {}     # _fast_key(...) -> (kernel, compiled tape or None, trace key): the per-launch lookup
_SEEN = {}
_FKEY = {}     # _TAPES key -> its _FAST key
_GENERIC = {}  # (kernel, argument classes, constexprs) -> [(guard check or None, compiled tape, its ops)], or False
GENERIC = True           # a key's first launch runs the shape-generic tape (made on the kernel's first launch)
MAX_GUARDED = 16         # shape-generic tapes kept per generic key (each for other outcomes of its guards)
TRACE_AFTER = 2          # record a key's tape on its 2nd launch: one-off shapes never pay for recording
MAX_TAPES = 4096
# the compiled tapes of all shapes seen (and their cpu launches) keep at most about this many bytes (least
# recently used out)
MAX_TAPE_BYTES = int(os.environ.get("TGRAD_TAPE_BYTES", 256 << 20))
CACHES = []              # launchers' Sites (their Launch objects hold tapes): cleared with the tapes
_bytes = [0]             # bytes of the tapes in _TAPES and _GENERIC (tape.py's estimate)
_evicted = [0]
_COLD = set()            # keys of _TAPES not used since the last _epoch
_mark = [0]              # _bytes at the last _epoch


class _Key(tuple):
    """A trace key, the kernel first, hashed by the kernel's id: a JITFunction hashes its source and its
    dependencies' (Triton's ``cache_key``, ~1 ms a kernel, paid by a fresh process's first launches)."""

    __slots__ = ()

    def __hash__(self):
        return hash((id(self[0]),) + self[1:])


def _epoch():
    """Start telling used shapes from unused ones: every key of _TAPES is cold and every launcher's cpu launch lets
    its tape go; a launch called again finds its tape (``_FAST``, ``touch``), which moves its key to the recent end
    of _TAPES.  So the front of _TAPES holds the keys no launch used since, least recently used first, at no cost
    to a replayed launch (one lookup per live launch and epoch; an epoch per quarter of the budget of new tapes)."""
    _COLD.clear()
    _COLD.update(_TAPES)
    _mark[0] = _bytes[0]
    for c in CACHES:
        for site in c.values():
            if getattr(site, "device", None) == "cpu":
                site.tape = None


def touch(key):
    """Mark the shape ``key`` used (its tapes go after those of shapes not used since the last ``_epoch``)."""
    if key in _COLD:
        _COLD.discard(key)
        _TAPES[key] = _TAPES.pop(key)


def _evict():
    """Drop the least recently used shapes' tapes until the rest keep at most 3/4 of ``MAX_TAPE_BYTES`` and of
    ``MAX_TAPES``, and the launchers' cpu launches holding them or no tape (a shape seen again loads its tape from
    disk, or runs its generic tape and is specialized again); then, while still past the budget, the least recently
    used kernels' generic tapes."""
    gone = set()
    for key in list(_TAPES):
        if _bytes[0] <= MAX_TAPE_BYTES * 3 // 4 and len(_TAPES) < MAX_TAPES * 3 // 4:
            break
        run = _TAPES.pop(key)
        _COLD.discard(key)
        _SEEN.pop(key, None)
        _FAST.pop(_FKEY.pop(key, None), None)
        _evicted[0] += 1
        if run:
            _bytes[0] -= run.nbytes
            gone.add(id(run))
    for gkey in list(_GENERIC):
        if _bytes[0] <= MAX_TAPE_BYTES * 3 // 4:
            break
        entries = _GENERIC.pop(gkey)
        _evicted[0] += 1
        _bytes[0] -= sum(f.nbytes for e in entries or () for f in e[:2] if f is not None)
    if _bytes[0] > MAX_TAPE_BYTES * 3 // 4:
        clear_tapes()
        return
    for c in CACHES:        # the cpu launches of evicted shapes, and those without a tape (one-off shapes, or not
        # called since the last _epoch), go too
        drop = []
        for k, site in c.items():
            if id(getattr(site, "tape", None)) in gone:
                site.tape = None            # (a Launch held elsewhere, e.g. by a compiled step, lets it go too)
            if getattr(site, "device", None) == "cpu" and site.tape is None:
                drop.append(k)
        for k in drop:
            del c[k]


def cache_info():
    """What the cpu tape caches hold: ``tapes`` (launch keys with a compiled tape), ``generic`` (shape-generic
    tapes), ``bytes`` (their estimate, kept under ``max_bytes``), ``evicted`` (keys dropped for the budget so
    far), ``sites`` (launchers' cached launches) and ``disk`` (tape_cache.STATS)."""
    return {"tapes": sum(1 for r in _TAPES.values() if r), "generic": sum(len(e) for e in _GENERIC.values() if e),
            "bytes": _bytes[0], "max_bytes": MAX_TAPE_BYTES, "evicted": _evicted[0],
            "sites": sum(len(c) for c in CACHES), "disk": dict(tape_cache.STATS)}


def clear_tapes():
    """Forget every recorded tape and every launcher's cached launch (each key is traced again when it recurs)."""
    _TAPES.clear()
    _FAST.clear()
    _SEEN.clear()
    _FKEY.clear()
    _GENERIC.clear()
    _COLD.clear()
    for c in CACHES:
        c.clear()
    _bytes[0] = _mark[0] = 0


def dynamic_args(kernel, *names):
    """Declare int arguments of ``kernel`` that change between launches without changing its control flow
    (e.g. a random seed/offset): they are replayed as values instead of being part of the trace key."""
    kernel.__dict__["_tgrad_dynamic"] = frozenset(names)
    do_not_specialize(kernel, names)      # nor does the GPU JIT specialize on them (no recompiles)
    return kernel


def _ckey(v):
    return id(v) if callable(v) else v


def _fast_key(kernel, grid, args, constexprs):
    """(key, dynamic positions) of a launch: what _FAST keys a tape by, cheap to build and to hash (the
    kernel by id, checked on a hit), and the indices of the arguments a tape takes (pointers, floats and
    ``dynamic_args`` ints, in order)."""
    key = [id(kernel), tuple(grid)]
    pos = []
    dyn_int = kernel.__dict__.get("_tgrad_dynamic")
    if dyn_int:
        for i, (nm, a) in enumerate(zip(_arg_names(kernel), args)):
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


def _int_class(a):
    # the interpreter's type for an int argument (_cvt / _implicit_cvt): int32, int64 or uint64
    return 0 if -2**31 <= a < 2**31 else 1 if -2**63 <= a < 2**63 else 2


def _generic_args(kernel, names, args, ckey):
    """(generic key, names, values, tape arguments) of a launch: its pointers, floats and ints in order."""
    keyp, gnames, gargs, gvals = [], [], [], []
    for nm, a in zip(names, args):
        ta = type(a)
        if ta is Ptr:
            keyp.append(a.dtype)
        elif ta is float:
            keyp.append(float)
        elif ta is int:
            keyp.append(("i", _int_class(a)))
        else:
            keyp.append((ta, a))
            continue
        gnames.append(nm)
        gargs.append(a)
        gvals.append(a.ptr if ta is Ptr else a)
    return _Key((kernel, tuple(keyp), ckey)), gnames, gargs, gvals


def _generic_for(entries, gvals, x, y, z):
    """The first (check, run, ops) of ``entries`` whose guards program (x, y, z) passes, or None."""
    for e in entries:
        if e[0] is None or e[0](*gvals, x, y, z):
            return e
    return None


def _run_generic(kernel, fn, names, g, args, constexprs, ckey):
    """Run a launch through the shape-generic tapes of its kernel, dtypes and constexprs: per program, the
    first tape whose guards pass; a program none takes is recorded (run by the interpreter), and its tape
    kept for the next.  The interpreter (``direct``) alone where a kernel cannot have one.  ``fn``: the
    interpreted kernel, or None (made when a program is recorded)."""
    dyn_int = kernel.__dict__.get("_tgrad_dynamic", ())
    gkey, gnames, gargs, gvals = _generic_args(kernel, names, args, ckey)
    entries = _GENERIC.pop(gkey, None)
    if entries is None:
        entries = _disk_generic(gkey, gargs, constexprs, None)
    _GENERIC[gkey] = entries            # (the recent end: generic tapes go least recently used first)
    if entries is False:
        return _run_direct(kernel, g, args, constexprs)
    kw = None
    b = _I.interpreter_builder
    for x in range(g[0]):
        for y in range(g[1]):
            for z in range(g[2]):
                e = _generic_for(entries, gvals, x, y, z)
                if e is not None:
                    e[1](*gvals, x, y, z)
                else:
                    if kw is None:
                        _lang_for_interpreter()
                        fn = fn or _entry(kernel)[0]
                        hs = [_dyn_handle(a) for a in gargs]
                        kw = {nm: _cvt(a) for nm, a in zip(names, args) if nm not in gnames}    # (few)
                        kw.update({nm: tl.tensor(h, h.dtype) for nm, h in zip(gnames, hs)})
                        kw.update(constexprs)
                        b.set_grid_dim(*g)
                        ints = [i for i, (nm, a) in enumerate(zip(gnames, gargs))
                                if type(a) is int and nm not in dyn_int]
                        bases = [a.ptr if type(a) is Ptr else None for a in gargs]
                        kinds = _generic_kinds(gargs)
                    b.set_grid_idx(x, y, z)
                    if _GENERIC.get(gkey) is False:
                        fn(**kw)
                        continue
                    t, good = record(fn, kw, gnames, bases, (ints, fn.__globals__))
                    if not good:
                        _GENERIC[gkey] = False      # (control flow on loaded values: no tape of it replays)
                        continue
                    run = _compile([t], kinds)     # now: a new shape's first launch runs it at once
                    check = _compile_check(t.gops, t.slots, kinds, t.guards) if t.guards else None
                    _bytes[0] += run.nbytes + (check.nbytes if check else 0)
                    if len(entries) >= MAX_GUARDED:
                        _bytes[0] -= sum(f.nbytes for f in entries.pop(0)[:2] if f is not None)
                    entries.append((check, run, t.gops))
                    _disk_generic(gkey, gargs, constexprs, entries)


def _arg_names(kernel):
    # the kernel's parameter names, without rewriting its source for the interpreter (``_entry``: a tape
    # loaded from disk never needs the interpreted function)
    n = kernel.__dict__.get("_tgrad_names")
    if n is None:
        n = kernel.__dict__["_tgrad_names"] = tuple(kernel.arg_names)
    return n


def _run_trace(kernel, grid, args, constexprs):
    names = _arg_names(kernel)
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
    ckey = tuple((k, _ckey(v)) for k, v in constexprs.items())
    key = _Key((kernel, g, tuple(keyp), ckey))
    run = _TAPES.get(key)
    if run is not None and _COLD:
        touch(key)
    if run is None:
        n = _SEEN.get(key, 0) + 1
        if len(_SEEN) > 4 * MAX_TAPES:
            _SEEN.clear()          # (keys launched once, never traced)
        _SEEN[key] = n
        if n == 1 and tape_cache.ENABLED:
            hit = tape_cache.get(tape_cache.key("spec", kernel, g, tuple(keyp), tuple(constexprs.items())),
                                 _kinds(dyn_vals))
            if hit is not None:     # traced by an earlier process
                run = _install(key, hit[0], kernel, grid, args, constexprs)
                return run(*[a.ptr if type(a) is Ptr else a for a in dyn_vals])
        if n < TRACE_AFTER:
            if GENERIC:
                return _run_generic(kernel, None, names, g, args, constexprs, ckey)
            return _run_direct(kernel, grid, args, constexprs)
        _lang_for_interpreter()     # (a launch replaying tapes alone never patches tl: ~1 ms of a fresh process)
        hs = [_dyn_handle(a) for a in dyn_vals]
        dyn_pos = {nm: i for i, nm in enumerate(dyn_names)}
        kw = {nm: (tl.tensor(hs[dyn_pos[nm]], hs[dyn_pos[nm]].dtype) if nm in dyn_pos else _cvt(a))
              for nm, a in zip(names, args)}
        kw.update(constexprs)
        base_values = [a.ptr if type(a) is Ptr else None for a in dyn_vals]
        b = _I.interpreter_builder
        b.set_grid_dim(*g)
        tapes, ok = [], True
        entries = _GENERIC.get(_generic_args(kernel, names, args, ckey)[0]) if GENERIC else None
        if entries:
            _, gnames, _, gvals = _generic_args(kernel, names, args, ckey)
            ins = [kw[nm].handle for nm in gnames]
        for x in range(g[0]):
            for y in range(g[1]):
                for z in range(g[2]):
                    b.set_grid_idx(x, y, z)
                    e = _generic_for(entries, gvals, x, y, z) if entries else None
                    if e is not None and type(e[2]) is _DiskOps:
                        e = _load_ops(entries, e)
                    if e is not None and e[2] is not None:     # the generic tape's builder ops
                        pid = [_I.TensorHandle(np.array([i], dtype=np.int32), tl.int32) for i in (x, y, z)]
                        t, good = record(None, kw, dyn_names, base_values, replay=(e[2], ins + pid))
                    else:
                        t, good = record(_entry(kernel)[0], kw, dyn_names, base_values)
                    ok = ok and good
                    tapes.append(t)
        run = _compile(tapes, _kinds(dyn_vals)) if ok else False
        if run and tape_cache.ENABLED:
            tape_cache.put(tape_cache.key("spec", kernel, g, tuple(keyp), tuple(constexprs.items())), [run])
        _install(key, run, kernel, grid, args, constexprs)
        return
    if run is False:
        return _run_direct(kernel, grid, args, constexprs)
    run(*[a.ptr if type(a) is Ptr else a for a in dyn_vals])


def _kinds(dyn_vals):
    return ["ptr" if type(a) is Ptr else "f32" if type(a) is float else "int" for a in dyn_vals]


def _install(key, run, kernel, grid, args, constexprs):
    """Keep ``run`` (a compiled tape, or False: the key stays on ``direct``) as the tape of ``key``."""
    if len(_TAPES) >= MAX_TAPES or _bytes[0] > MAX_TAPE_BYTES:
        _evict()
        _epoch()
    elif _bytes[0] - _mark[0] > MAX_TAPE_BYTES // 4:
        _epoch()
    _TAPES[key] = run
    if run:
        _bytes[0] += run.nbytes
    fk = _FKEY[key] = _fast_key(kernel, grid, args, constexprs)[0]
    _FAST[fk] = (kernel, run or None, key)
    return run


def _generic_kinds(gargs):
    return ["ptr" if type(a) is Ptr else "f32" if type(a) is float else
            "i32" if _int_class(a) == 0 else "int" for a in gargs] + ["i32"] * 3


class _DiskOps:
    """The builder ops of entry ``index`` of ``n`` generic tapes stored under ``name``: read when a key first
    specializes through them (``_load_ops``), not when the tapes are loaded."""

    __slots__ = ("name", "index", "n")

    def __init__(self, name, index, n):
        self.name, self.index, self.n = name, index, n


def _load_ops(entries, e):
    """``e`` (an entry of ``entries`` whose ops are on disk) with its ops read (None if unreadable), in place."""
    d = e[2]
    ops = tape_cache.get_ops(d.name)
    ops = ops[d.index] if ops is not None and len(ops) == d.n else None
    new = (e[0], e[1], ops)
    for i, f in enumerate(entries):
        if f is e:
            entries[i] = new
    return new


def _disk_generic(gkey, gargs, constexprs, entries):
    """The generic tapes of ``gkey`` an earlier process stored, with their builder ops where those were stored (so
    a key's specialized tape is recorded by replaying them, not through the interpreter), or [] (``entries``
    None); else store ``entries``."""
    if not tape_cache.ENABLED:
        return [] if entries is None else None
    name = tape_cache.key("generic", gkey[0], gkey[1], tuple(constexprs.items()))
    if entries is not None:
        for e in list(entries):
            if type(e[2]) is _DiskOps:
                _load_ops(entries, e)
        tape_cache.put(name, [f for e in entries for f in e[:2]])
        tape_cache.put_ops(name, [e[2] for e in entries])
        return None
    hit = tape_cache.get(name, _generic_kinds(gargs))
    if not hit:
        return []
    out = [(hit[i], hit[i + 1], _DiskOps(name, i // 2, len(hit) // 2)) for i in range(0, len(hit), 2)]
    _bytes[0] += sum(f.nbytes for f in hit if f is not None)
    return out
