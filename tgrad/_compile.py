"""``tgrad.compile``: whole-step capture and replay (DESIGN §8).

Call 1 of a guard key runs eagerly (warm-up: kernels traced, optimizer state made), call 2 runs eagerly
while every kernel launch is recorded, later calls replay the record as one generated Python program:
each launch's compiled tape (``Launch.tape``) called with pre-bound addresses, no dispatch, no graph, no
allocator call.

- Memory plan: every block the step allocates is a temporary with a lifetime (malloc .. free) in the
  recorded call; the plan packs them into one arena by lifetime (greedy by size), so a replay holds
  about the eager step's peak.  ``.grad`` tensors backward leaves behind live in the arena; each output
  is written into a fresh block per call (a returned tensor is never overwritten: ``.item()`` later is
  safe, a list of losses keeps its values).
- Binding: tensors the step reads but did not make (parameters, their ``.grad``, inputs, closure and
  global tensors, module buffers) are found by walking the step's arguments, closure and globals, and
  bound by address on every call (a new batch, a reloaded state dict or a replaced parameter is read
  where it now is).
- Host calls: ``Optimizer.step``, ``Optimizer.zero_grad``, ``Module.zero_grad`` and
  ``LRScheduler.step`` are Python state machines (step counts, learning rates read as kernel scalars):
  they run for real in the replay, in order, between the replayed launches.
- Randomness: a draw of the generator (``Generator._take``) is replayed as a new draw, its seed and
  offset passed to the kernels that used them (cpu: new mt19937 words written where the recorded draw's
  were): replay is bit-identical to eager.
- Guards (the cache key): grad mode, each found tensor's shape, strides, dtype, device, requires_grad,
  ``.grad`` presence and storage sharing, modules' training flags, Python numbers found, the objects
  whose methods run as host calls.  A miss warms up and records again; the cache is bounded.
- Stays eager, with one warning naming the reason: a value read back mid-step (``.item()``, ``bool``,
  ``.numpy()``, ``.tolist()``), a tensor made in the step that outlives it other than the outputs and
  ``.grad`` (e.g. a graph kept for a backward outside), a tensor it reads that the walk cannot find, an
  output that requires grad when no backward ran in the step (``tgrad.compile(model)`` in training),
  Python values returned besides tensors, a tensor printed, ``optimizer.step(closure)``.
- Not replayed: tgrad's own host-side value checks (e.g. cross_entropy's target range) and the Python
  side effects of hooks (their kernels are replayed).  cpu only for now (a cuda step stays eager).
"""
import bisect
import builtins
import ctypes
import functools
import types
import warnings

from .autograd import dispatch as _dispatch
from .autograd import engine as _engine
from .autograd.grad_mode import _state as _grad_state
from .device import device as _device
from .kernels.runtime import internals as _internals
from .kernels.runtime import launcher as _L
from .kernels.runtime.direct import Ptr, _entry
from .kernels.runtime.internals import _FP_STATE, _fp_ignore
from .kernels.runtime.trace import _FAST
from . import ops as _ops
from .memory import Storage
from .memory.allocator import get_allocator
from .nn.modules.module import Module
from .nn.parameter import Parameter
from .optim import optimizer as _optim
from .optim.lr_scheduler import LRScheduler
from .optim.optimizer import Optimizer
from .random import Generator
from .tensor import Tensor, _new

CACHE_SIZE_LIMIT = 8         # entries per compiled function (torch._dynamo.config.cache_size_limit)
_WALK_DEPTH = 4


class _Eager(Exception):
    """The recorded step cannot be replayed (the reason is the message)."""


# ---------------------------------------------------------------- finding what the step reads
class _Sources:
    """Where the step's state can be read: ``self``, closure cells and the globals it names (of the step and
    of the user functions it reaches), found once; their contents are read on every call."""

    def __init__(self, fn):
        self.selfs, self.cells, self.globs = [], [], []
        self._seen = set()
        self._add(fn, 0)

    def _add(self, f, depth):
        if id(f) in self._seen or depth > 2:
            return
        self._seen.add(id(f))
        if isinstance(f, types.MethodType):
            self.selfs.append(f.__self__)
            f = f.__func__
        code = getattr(f, "__code__", None)
        if code is None or (f.__module__ or "").split(".")[0] == "tgrad":
            return      # tgrad's own functions read no user state
        for c in f.__closure__ or ():
            self.cells.append(c)
            try:
                v = c.cell_contents
            except ValueError:
                continue
            if isinstance(v, types.FunctionType):
                self._add(v, depth + 1)
        g = f.__globals__
        for name in sorted(_names(code)):
            v = g.get(name)
            if v is not None and not isinstance(v, (types.ModuleType, type)):
                self.globs.append((g, name))
                if isinstance(v, types.FunctionType):
                    self._add(v, depth + 1)

    def roots(self, args, kwargs):
        out = list(args)
        if kwargs:
            out += kwargs.values()
        out += self.selfs
        for c in self.cells:
            try:
                out.append(c.cell_contents)
            except ValueError:
                out.append(None)
        for g, name in self.globs:
            out.append(g.get(name))
        return out


def _names(code):
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _names(c)
    return names


_TENSOR_TYPES = {Tensor, Parameter}


class _Walk:
    """Tensors, modules, host-call objects and Python numbers reachable from the roots, in a fixed order."""

    def __init__(self, roots):
        self.tensors, self.key, self.objects = [], [], []
        self._seen = set()
        for r in roots:
            self.visit(r, 0)

    def visit(self, v, depth):
        t = type(v)
        if t is bool or t is int or t is float or t is str or v is None:
            self.key.append(v)
            return
        if id(v) in self._seen or depth > _WALK_DEPTH:
            return
        self._seen.add(id(v))
        if t in _TENSOR_TYPES or isinstance(v, Tensor):
            self.tensors.append(v)
            g = v._grad
            self.key.append(("T", v._shape, v._strides, v.dtype, v._storage.device, v._requires_grad,
                             v.grad_fn is None, g is None))
            if g is not None:
                self.visit(g, depth)
            return
        if isinstance(v, Module):
            self.key.append(("M", id(v), v.training))
            for d in (v._parameters, v._buffers, v._modules):
                for name, x in d.items():
                    self.key.append(name)
                    self.visit(x, depth + 1)
            for name, x in v.__dict__.items():
                if type(x) in (bool, int, float) and not name.startswith("_"):
                    self.key.append((name, x))
            return
        if isinstance(v, Optimizer):
            self.objects.append(v)
            self.key.append(("O", id(v)))
            for g in v.param_groups:
                self.visit(g["params"], depth + 1)
            return
        if isinstance(v, LRScheduler):
            self.objects.append(v)
            self.key.append(("S", id(v)))
            self.visit(v.optimizer, depth + 1)
            return
        if t is list or t is tuple:
            self.key.append((t, len(v)))
            for x in v:
                self.visit(x, depth + 1)
            return
        if t is dict:
            for k, x in v.items():
                self.key.append(k if type(k) in (str, int) else id(k))
                self.visit(x, depth + 1)
            return
        if isinstance(v, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type,
                          types.ModuleType, Generator)):
            return
        d = getattr(v, "__dict__", None)
        if d is not None and type(d) is dict:
            self.key.append(type(v))
            for name, x in d.items():
                self.visit(x, depth + 1)

    def signature(self):
        """The cache key: structure, metadata and storage sharing of the found tensors, numbers, modes."""
        share, first = [], {}
        for i, t in enumerate(self.tensors):
            share.append(first.setdefault((id(t._storage), t._offset), i))     # views at one address
        return (_grad_state.grad, tuple(self.key), tuple(share))


# ---------------------------------------------------------------- the recorder
class _Desc:
    """Where a tensor is (storage address, offset, shape, strides, dtype), without a reference to it."""

    __slots__ = ("ptr", "_offset", "_shape", "_strides", "dtype", "_requires_grad")

    def __init__(self, t):
        self.ptr, self._offset, self._shape, self._strides = t._storage.ptr, t._offset, t._shape, t._strides
        self.dtype, self._requires_grad = t.dtype, t._requires_grad


class _Recorder:
    """Collects, during one eager call, the launches, allocations, frees, random draws, host calls and
    the ``.grad`` each leaf holds between them."""

    def __init__(self, leaves):
        self.events = []          # ("L", launch, dyn) | ("H", func, obj, args, kwargs) | ("G", [(leaf, desc)])
        self.blocks = {}          # block ptr -> [size, malloc event index, free event index or None]
        self.deferred = []        # freed blocks, given back after the recording
        self.depth = 0            # > 0 inside a host call: its launches and allocations are its own
        self.reason = None
        self.leaves = leaves
        self.grads = [id(l._grad) for l in leaves]
        self.backward_ran = False

    def launch(self, site, dyn):
        if self.depth == 0:
            self.events.append(("L", site, dyn))

    def malloc(self, orig, nbytes):
        b = orig(nbytes)
        if self.depth == 0:
            self.blocks[b.ptr] = [b.size, len(self.events), None, b]
        return b

    def free(self, orig, block):
        rec = self.blocks.get(block.ptr)
        if rec is not None and rec[3] is block and rec[2] is None:
            rec[2] = len(self.events)
            self.deferred.append((orig, block))     # not reused within the call: addresses stay unique
            return
        orig(block)

    def copy(self, orig, dst, src, n, from_host):
        """A host-to-device copy replays the bytes copied now: allowed from tgrad's cached constants
        (backward's seed of ones, mean's 1/n) and for one scalar (a Python number wrapped as an operand:
        the guards hold the numbers the step reads); other host data may differ next call
        (``tgrad.tensor(values)`` in the step), so such a step stays eager."""
        orig(dst, src, n)
        if self.depth == 0:
            if from_host:
                if n > 8 and not _constant_host(src, n) and self.reason is None:
                    self.reason = ("the step copies host data into a tensor (e.g. tgrad.tensor(...) of Python "
                                   "values), which may differ next call: pass such tensors as arguments")
                src = bytes(src[:n]) if type(src) is bytes else ctypes.string_at(src, n)
            self.events.append(("C", dst, src, n))

    def memset(self, orig, ptr, byte, n):
        orig(ptr, byte, n)
        if self.depth == 0:
            self.events.append(("S", ptr, byte, n))

    def take(self, orig, gen, n):
        r = orig(gen, n)
        if self.depth == 0:     # cpu (mt19937): r is a words tensor, kept as its address only
            self.events.append(("R", gen, n, r if type(r) is tuple else r.data_ptr()))
        return r

    def sync_grads(self):
        """Record the ``.grad`` changes since the last look (made by backward, outside host calls)."""
        changed = []
        for i, leaf in enumerate(self.leaves):
            g = leaf._grad
            if id(g) != self.grads[i]:
                self.grads[i] = id(g)
                # a description, not the tensor: holding it would keep a freed gradient alive
                changed.append((leaf, None if g is None else _Desc(g)))
        if changed:
            self.events.append(("G", changed))

    def host(self, func, obj, *args, **kwargs):
        if self.depth:
            return func(obj, *args, **kwargs)
        if isinstance(obj, Optimizer) and (args or kwargs.get("closure") is not None):
            self.reason = "optimizer.step(closure) runs the model inside the optimizer"
        elif _tensors_of([args, kwargs], []):
            self.reason = f"{type(obj).__name__}.{func.__name__}() is given a tensor (read on the host)"
        self.sync_grads()
        self.events.append(("H", func, obj, args, kwargs))
        self.depth += 1
        try:
            return func(obj, *args, **kwargs)
        finally:
            self.depth -= 1
            self.grads = [id(l._grad) for l in self.leaves]   # host calls' own changes replay themselves

    def readback(self, what):
        if self.depth == 0 and self.reason is None:
            self.reason = (f"the step reads a tensor's value back to Python (Tensor.{what}) while it runs; "
                           "a replay cannot take a data-dependent path")


def _constant_host(src, n):
    """True if ``src`` (an address) lies in one of the read-only host arrays tgrad's ops keep cached."""
    if type(src) is not int:
        return False
    return any(addr <= src and src + n <= addr + nbytes for _, addr, nbytes in _ops._HOST_FULL.values())


def _host_classes():
    out = []

    def sub(c, names):
        for name in names:
            if name in c.__dict__:
                out.append((c, name, c.__dict__[name]))
        for s in c.__subclasses__():
            sub(s, names)
    sub(Optimizer, ("step", "zero_grad"))
    sub(LRScheduler, ("step",))
    out += [(Module, name, Module.__dict__[name]) for name in ("zero_grad", "train")]
    return out


# reading a value back to Python (tgrad's own value checks, e.g. cross_entropy's target range, read through
# _host_copy: they are not replayed, as PyTorch's CUDA graphs skip host checks)
_READBACKS = ("item", "tolist", "numpy", "__bool__", "__int__", "__float__", "__index__", "__array__",
              "__repr__", "__str__", "__format__")


class _Patches:
    """Install the recorder's hooks (class and instance attributes: nothing costs when not recording)."""

    def __init__(self, rec, allocators, objects):
        self.rec, self.allocators, self.saved, self.objects = rec, allocators, [], objects

    def __enter__(self):
        rec = self.rec
        for cls, name, func in _host_classes():
            def wrapped(obj, *a, _f=func, **k):
                return rec.host(_f, obj, *a, **k)
            functools.update_wrapper(wrapped, func)
            self._set(cls, name, wrapped)
        for obj in self.objects:        # an instance's own step (the wrapper an LRScheduler puts on its optimizer)
            for name in ("step", "zero_grad"):
                inst = obj.__dict__.get(name)
                if inst is not None:
                    def call(o, *a, _i=inst, **k):
                        return _i(*a, **k)
                    self.saved.append((obj, name, inst))
                    obj.__dict__[name] = functools.partial(rec.host, call, obj)
        run_backward = _engine.run_backward

        def backward(*a, **k):
            rec.backward_ran = True
            return run_backward(*a, **k)
        self.saved.append((_engine, "run_backward", run_backward))
        _engine.run_backward = backward
        take = Generator._take
        self._set(Generator, "_take", lambda g, n: rec.take(take, g, n))
        for name in _READBACKS:
            orig = Tensor.__dict__[name]

            def rb(t, *a, _o=orig, _n=name, **k):
                rec.readback(_n)
                return _o(t, *a, **k)
            self._set(Tensor, name, rb)
        for al in self.allocators:
            m, f = al.malloc, al.free
            al.malloc = lambda n, _m=m: rec.malloc(_m, n)
            al.free = lambda b, _f=f: rec.free(_f, b)
            be = al.backend
            htod, dtod, mset = be.memcpy_htod, be.memcpy_dtod, be.memset
            be.memcpy_htod = lambda d, s, n, _o=htod: rec.copy(_o, d, s, n, True)
            be.memcpy_dtod = lambda d, s, n, _o=dtod: rec.copy(_o, d, s, n, False)
            be.memset = lambda p, b, n, _o=mset: rec.memset(_o, p, b, n)
        _L.RECORDER = rec.launch
        return self

    def _set(self, cls, name, value):
        self.saved.append((cls, name, cls.__dict__[name]))
        setattr(cls, name, value)

    def __exit__(self, *exc):
        _L.RECORDER = None
        for al in self.allocators:
            del al.malloc, al.free
            del al.backend.memcpy_htod, al.backend.memcpy_dtod, al.backend.memset
        for cls, name, value in reversed(self.saved):
            if isinstance(cls, (type, types.ModuleType)):
                setattr(cls, name, value)
            else:
                cls.__dict__[name] = value


# ---------------------------------------------------------------- the memory plan
def _plan(blocks):
    """Offsets in one arena for blocks [(size, start, end)], no two with overlapping lifetimes sharing
    bytes (greedy by size, lowest fitting offset).  Returns (offsets, arena bytes)."""
    order = sorted(range(len(blocks)), key=lambda i: (-blocks[i][0], blocks[i][1]))
    placed, offs, top = [], [0] * len(blocks), 0
    for i in order:
        size, s, e = blocks[i]
        busy = sorted((o, o + sz) for (o, sz, s2, e2) in placed if s2 < e and s < e2)
        off = 0
        for lo, hi in busy:
            if off + size <= lo:
                break
            off = max(off, hi)
        offs[i] = off
        placed.append((off, size, s, e))
        top = max(top, off + size)
    return offs, top


# ---------------------------------------------------------------- a recorded step
class _Entry:
    """One guard key's state: calls so far, then its replay, or the reason it stays eager."""

    __slots__ = ("calls", "run", "eager")

    def __init__(self):
        self.calls, self.run, self.eager = 0, None, None


def _tensors_of(x, out):
    if isinstance(x, Tensor):
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for y in x:
            _tensors_of(y, out)
    elif isinstance(x, dict):
        for y in x.values():
            _tensors_of(y, out)
    return out


def _only_tensors(x):
    if x is None or isinstance(x, Tensor):
        return True
    if isinstance(x, (list, tuple)):
        return all(_only_tensors(y) for y in x)
    if isinstance(x, dict):
        return all(_only_tensors(y) for y in x.values())
    return False


def _rebuild(x, fresh, place=None):
    """``x`` with each tensor (or each ``place`` marker) replaced by the next of ``fresh``."""
    if x is place or (place is None and isinstance(x, Tensor)):
        return next(fresh)
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*[_rebuild(y, fresh, place) for y in x])
    if isinstance(x, (list, tuple)):
        return type(x)(_rebuild(y, fresh, place) for y in x)
    if isinstance(x, dict):
        return {k: _rebuild(v, fresh, place) for k, v in x.items()}
    return x


def _record(fn, args, kwargs, walk):
    """Run the step once eagerly under the recorder; returns (its result, the replay of it)."""
    leaves = [t for t in walk.tensors if t._requires_grad and t.grad_fn is None]
    devices = {t._storage.device for t in walk.tensors} | {_device("cpu")}
    allocators = [get_allocator(d) for d in devices]
    rec = _Recorder(leaves)
    with _Patches(rec, allocators, walk.objects):
        result = fn(*args, **kwargs)
        rec.sync_grads()
    try:
        return result, _build(rec, result, walk, allocators), None
    except _Eager as ex:
        return result, None, str(ex)
    finally:
        for orig, block in rec.deferred:
            orig(block)


def _build(rec, result, walk, allocators):
    if rec.reason:
        raise _Eager(rec.reason)
    if len(allocators) != 1 or allocators[0].device.type != "cpu":
        raise _Eager("tgrad.compile replays cpu steps (cuda: not yet)")
    outs = _tensors_of(result, [])
    if any(o._requires_grad for o in outs) and not rec.backward_ran:
        raise _Eager("an output requires grad and no backward ran in the step (a backward outside would need "
                     "the graph the replay does not build)")
    if not _only_tensors(result):
        raise _Eager("it returns Python values besides tensors (a replay returns tensors it computes; "
                     "other values would be the recorded ones)")
    end = len(rec.events)
    # blocks still allocated at the end: outputs get a fresh block per call (the program writes into it),
    # .grad tensors are planned (live to the end); any other means a tensor made in the step outlives it
    # somewhere the replay does not know
    out_blocks = {}
    for o in outs:
        b = o._storage._block
        if b is None or b.ptr not in rec.blocks or rec.blocks[b.ptr][2] is not None:
            raise _Eager("an output is not made by the step (returned as is: aliasing)")
        out_blocks.setdefault(b.ptr, (len(out_blocks), o._storage.nbytes))
    accounted = {leaf._grad._storage.ptr for leaf in rec.leaves
                 if leaf._grad is not None and leaf._grad._storage._block is not None}
    temps = []
    for ptr, (size, s, e, block) in rec.blocks.items():
        if ptr in out_blocks:
            continue
        if e is None:
            if ptr not in accounted:
                raise _Eager("a tensor made in the step outlives it (kept in a graph or an object the replay "
                             "does not update)")
            e = end + 1
        temps.append((ptr, size, s, e))
    temps.sort()
    offs, size = _plan([(sz, s, e) for _, sz, s, e in temps])
    arena = Storage(max(size, 1), allocators[0].device)
    starts = [t[0] for t in temps]

    def relocate(p):
        i = bisect.bisect_right(starts, p) - 1
        if i >= 0 and p < temps[i][0] + temps[i][1]:
            return arena.ptr + offs[i] + p - temps[i][0]
        return None

    # bound tensors: found by the walk, not made in the step; a pointer binds to the first one containing it
    bound = []          # (lo, hi, walk index)
    for i, t in enumerate(walk.tensors):
        st = t._storage
        if relocate(st.ptr) is None and st.nbytes:
            bound.append((st.ptr, st.ptr + st.nbytes, i, t.data_ptr()))

    def bind(p):
        for lo, hi, i, base in bound:
            if lo <= p < hi:
                return i, p - base
        return None

    ns = {"_arena": arena, "_mm": ctypes.memmove, "_ms": ctypes.memset}
    views = {}
    lines, used = [], set()

    out_starts = sorted((p, j, n) for p, (j, n) in out_blocks.items())

    def ptr(v):
        r = relocate(v)
        if r is not None:
            return str(r)
        for lo, j, n in out_starts:
            if lo <= v < lo + n:
                return f"o{j} + {v - lo}" if v - lo else f"o{j}"
        b = bind(v)
        if b is None:
            raise _Eager("the step reads a tensor that tgrad.compile cannot find from its arguments, closure "
                         "or globals")
        used.add(b[0])
        return f"b{b[0]} + {b[1]}" if b[1] else f"b{b[0]}"

    def k(v):
        name = f"k{len(ns)}"
        ns[name] = v
        return name
    last = None         # the last random draw: (key, offset, its names in the program)
    for ev in rec.events:
        kind = ev[0]
        if kind == "R":
            _, gen, n, r = ev
            if type(r) is int:      # cpu: fresh words written where the step's kernels read them
                lines.append(f"{k(gen)}._refill({ptr(r)}, {n})")
                continue
            tv = f"r{len(ns)}"
            lines.append(f"{tv}k, {tv}o = {k(gen)}._take({n})")
            last = r + (tv,)
        elif kind == "C":
            _, dst, src, n = ev
            lines.append(f"_mm({ptr(dst)}, {k(src) if type(src) is bytes else ptr(src)}, {n})")
        elif kind == "S":
            _, dst, byte, n = ev
            lines.append(f"_ms({ptr(dst)}, {byte}, {n})")
        elif kind == "H":
            _, func, obj, a, kw = ev
            lines.append(f"{k(func)}({k(obj)}, *{k(a)}, **{k(kw)})")
        elif kind == "G":
            for leaf, g in ev[1]:
                if g is None:
                    lines.append(f"{k(leaf)}._grad = None")
                    continue
                lines.append(f"{k(leaf)}._grad = {k(_arena_view(g, relocate, arena, views))}")
        else:
            _, site, dyn = ev
            args = []
            dyn_int = site.kernel.__dict__.get("_tgrad_dynamic", ())
            names = None
            for pos, v in zip(site.pos, dyn):
                a = site.args[pos]
                if type(a) is Ptr:
                    args.append(ptr(v) if v else "0")
                elif type(v) is int and dyn_int and last is not None and v in last[:2]:
                    if names is None:
                        names = _entry(site.kernel)[1]
                    if names[pos] not in dyn_int:
                        args.append(repr(v))
                        continue
                    tv = last[2]
                    args.append(f"{tv}k" if v == last[0] and names[pos] in ("seed", "key") else f"{tv}o")
                elif type(v) is float and v != v or v in (float("inf"), float("-inf")):
                    args.append(k(v))
                else:
                    args.append(repr(v))
            hit = _FAST.get(site.fkey) if site.fkey is not None else None
            tape = hit[1] if hit is not None and hit[0] is site.kernel else None
            call = k(tape) if tape is not None and _L.EXECUTOR == "trace" else k(site)
            lines.append(f"{call}({', '.join(args)})")
    head = [f"b{i} = B[{i}]" for i in sorted(used)] + [f"o{j} = O[{j}]" for j in range(len(out_blocks))]
    src = "def replay(B, O):\n" + "".join(f"    {ln}\n" for ln in head + lines or ["pass"])
    exec(builtins.compile(src, "<tgrad.compile replay>", "exec"), ns)
    # state after the recording: .grad set by backward is now the arena's copy
    arena_arr = arena.host_array("u1", arena.nbytes)
    for leaf in rec.leaves:
        g = leaf._grad
        if g is not None:
            r = relocate(g._storage.ptr)
            if r is not None:
                v = _arena_view(g, relocate, arena, views)
                _copy(arena_arr, arena, g, v)
                leaf._grad = v
    blocks = [n for _, (j, n) in sorted(out_blocks.items(), key=lambda kv: kv[1][0])]
    outs = [(out_blocks[o._storage.ptr][0], o._offset, o._shape, o._strides, o.dtype) for o in outs]
    return _Replay(ns["replay"], arena, blocks, outs, _rebuild(result, iter([_OUT] * len(outs))), sorted(used),
                   src)


_OUT = object()     # an output's place in the result's structure


def _arena_view(t, relocate, arena, views):
    """The arena's tensor at the place ``t`` (a tensor or a _Desc) had in the recording (one per place)."""
    r = relocate(t.ptr if type(t) is _Desc else t._storage.ptr)
    key = (r, t._offset, t._shape, t._strides, t.dtype)
    v = views.get(key)
    if v is None:
        off = (r - arena.ptr) // t.dtype.itemsize + t._offset
        v = views[key] = _new(arena, off, t._shape, t._strides, t.dtype)
    return v


def _copy(arena_arr, arena, src, dst):
    n = src._storage.nbytes
    s = src._storage.host_array("u1", n)
    o = dst._offset * dst.dtype.itemsize - src._offset * src.dtype.itemsize
    arena_arr[o:o + n] = s


class _Replay:
    """A recorded step: ``run(B, O)`` with the bound tensors' addresses B and the outputs' fresh blocks O."""

    __slots__ = ("run", "arena", "blocks", "outs", "template", "used", "source", "lo", "hi")

    def __init__(self, run, arena, blocks, outs, template, used, source):
        self.run, self.arena, self.blocks, self.outs = run, arena, blocks, outs
        self.template, self.used, self.source = template, used, source
        self.lo, self.hi = arena.ptr, arena.ptr + arena.nbytes

    def __call__(self, walk):
        ts = walk.tensors
        B = [0] * (self.used[-1] + 1 if self.used else 0)
        for i in self.used:
            p = ts[i].data_ptr()
            if self.lo <= p < self.hi:
                return _MISS        # a tensor of this step's arena read as an input (a .grad it left)
            B[i] = p
        dev = self.arena.device
        stores = [Storage(n, dev) for n in self.blocks]
        outer, c = _FP_STATE.get(), _internals._fp_cache
        tok = _FP_STATE.set(c[1] if outer is c[0] else _fp_ignore(outer))
        _optim._FUSED_REPLAY = _FUSED
        try:
            self.run(B, [st.ptr for st in stores])
        finally:
            _optim._FUSED_REPLAY = None
            _FP_STATE.reset(tok)
        fresh = iter([_new(stores[j], off, shape, strides, dtype) for j, off, shape, strides, dtype in self.outs])
        return _rebuild(self.template, fresh, _OUT)


_MISS = object()


class _FusedMemo(dict):
    """The launches of optimizer updates (``Optimizer._fused``) seen in replays, by op, hyper-parameters and
    tensor addresses and shapes: the optimizer's Python still runs (step counts, learning rates), a repeated
    update skips dispatch and relaunches (a new learning rate or step count is a new entry)."""

    def __call__(self, name, params, grads, states, attrs):
        key = [name, tuple(attrs.items())]
        for group in (params, grads) + states:
            for t in group:
                key.append(None if t is None else (t.data_ptr(), t._shape, t.dtype))
        key = tuple(key)
        launches = self.get(key)
        if launches is None:
            if len(self) >= 256:
                self.clear()
            launches = []
            al = params[0]._storage.allocator
            m = al.malloc

            def malloc(n):              # an update through temporaries (non-contiguous tensors) is not kept
                launches.append(None)
                return m(n)
            _L.RECORDER = lambda site, dyn: launches.append((site, dyn))
            al.malloc = malloc
            try:
                _dispatch.call(name, params, grads, *states, **attrs)
            finally:
                _L.RECORDER = None
                del al.malloc
            self[key] = launches if None not in launches else False
            return True
        if launches is False:
            return False
        for site, dyn in launches:
            site(*dyn)
        return True


_FUSED = _FusedMemo()


# ---------------------------------------------------------------- the public API
class CompiledFunction:
    """``fn`` compiled: see the module docstring."""

    def __init__(self, fn, fullgraph=False):
        self._fn = fn
        self._fullgraph = fullgraph
        self._sources = _Sources(fn)
        self._cache = {}
        self._warned = set()
        functools.update_wrapper(self, fn, updated=())

    def _warn(self, msg):
        if msg not in self._warned:
            self._warned.add(msg)
            warnings.warn(msg, stacklevel=3)

    def __call__(self, *args, **kwargs):
        walk = _Walk(self._sources.roots(args, kwargs))
        try:
            key = walk.signature()
            hash(key)
        except TypeError:
            self._warn(f"tgrad.compile: {self._fn.__name__}: an argument or captured value is unhashable; "
                       "running eagerly")
            return self._fn(*args, **kwargs)
        e = self._cache.get(key)
        if e is None:
            if len(self._cache) >= CACHE_SIZE_LIMIT:
                self._warn(f"tgrad.compile: {self._fn.__name__} hit config.cache_size_limit "
                           f"({CACHE_SIZE_LIMIT}): recompiling on every new guard (shapes, requires_grad, "
                           "training mode, numbers it reads); the oldest record is dropped")
                self._cache.pop(next(iter(self._cache)))
            e = self._cache[key] = _Entry()
        if e.eager is not None:
            return self._fn(*args, **kwargs)
        if e.run is not None:
            res = e.run(walk)
            if res is not _MISS:
                return res
            return self._fn(*args, **kwargs)
        e.calls += 1
        if e.calls == 1:
            return self._fn(*args, **kwargs)
        result, e.run, reason = _record(self._fn, args, kwargs, walk)
        if reason is not None:
            if self._fullgraph:
                self._cache.pop(key, None)
                raise RuntimeError(f"tgrad.compile(fullgraph=True): {self._fn.__name__} cannot be captured: {reason}")
            e.eager = reason
            self._warn(f"tgrad.compile: {self._fn.__name__} runs eagerly: {reason}")
        return result


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            disable=False):
    """``tgrad.compile(fn)`` / ``@tgrad.compile``: capture and replay ``fn`` (a step function or a Module).

    ``fullgraph=True``: a step that cannot be captured raises instead of running eagerly with a warning.
    ``backend``, ``mode``, ``dynamic``, ``options`` select among PyTorch's compilers; tgrad has one
    (capture and replay), so any value runs it: the numbers are eager's either way."""
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, disable=disable)
    if not callable(model):
        raise RuntimeError("compile(): model must be a callable")
    if disable:
        return model
    if isinstance(model, Module):
        return OptimizedModule(model, fullgraph)
    return CompiledFunction(model, fullgraph)


class OptimizedModule:
    """A Module compiled for its forward: calls replay; attributes are the module's (``_orig_mod``)."""

    def __init__(self, mod, fullgraph=False):
        self.__dict__["_orig_mod"] = mod
        self.__dict__["_call"] = CompiledFunction(mod.__call__, fullgraph)

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.__dict__["_orig_mod"], name)

    def __setattr__(self, name, value):
        setattr(self._orig_mod, name, value)
