"""``tgrad.compile``: whole-step capture and replay (DESIGN §8).

Call 1 of a guard key runs eagerly (warm-up: kernels traced, optimizer state made), call 2 runs eagerly
while every kernel launch is recorded, later calls replay the record as one generated Python program:
each launch's compiled tape (``Launch.tape``) called with pre-bound addresses, no dispatch, no graph, no
allocator call.  The parts, in the order a call meets them:

- ``guards``: what the step reads is found by walking its arguments, ``self``, closure and globals; the
  cache key is grad mode, each found tensor's shape, strides, dtype, device, requires_grad, ``.grad``
  presence and storage sharing, hooks registered on modules and tensors, modules' training flags, Python
  numbers found, the objects whose methods run as host calls.  A miss warms up and records again; the
  cache is bounded (a warning when it thrashes).  After a replay, ``fast_guard`` compiles what that walk read into
  one check by identity (the same roots, containers' contents, tensor states): while it holds, the next call
  replays without the walk, its key and its hash.
- ``record``: call 2 under the recorder.  Host calls (``Optimizer.step``/``zero_grad``,
  ``Module.zero_grad``, ``LRScheduler.step``: Python state machines whose step counts and learning rates
  reach kernels as scalars) run for real in the replay, in order, between the replayed launches.  A draw
  of the generator (``Generator._take``) is replayed as a new draw, its seed and offset passed to the
  kernels that used them (cpu: new mt19937 words written where the recorded draw's were): replay is
  bit-identical to eager.
- ``plan``: the static memory plan (one arena, temporaries packed by lifetime; ``.grad`` in the arena;
  each output written into a block no live tensor holds, so ``.item()`` later or a list of losses is safe).
- ``replay``: the generated program, run with the bound tensors' addresses of this call (a new batch, a
  reloaded state dict or a replaced parameter is read where it now is).  On cpu in two tiers: the recording
  call builds the recorded calls as a list (each launch's tape, the host calls; nothing generated or compiled);
  after the first replay the program is generated again with the tapes inlined and fused (``fuse``), and SGD
  and Adam/AdamW steps (while what they read is as recorded) as optim_cpu.c's updates over whole tensors, or
  SGD's launches.

- ``aot``: ``tgrad.compile(model)`` called with grad mode on and tensors that require grad (a training loop whose
  loss, backward and optimizer step run outside): the forward replayed as one autograd node,
  ``CompiledFunctionBackward``, whose backward is the recorded backward of that forward (AOTAutograd's split).
  A compiled function whose recording finds outputs that require grad and no backward is recorded that way at its
  next call.  On cpu and on cuda.

Stays eager, with one warning naming the reason: a value read back mid-step (``.item()``, ``bool``,
``.numpy()``, ``.tolist()``), a tensor made in the step that outlives it other than the outputs and
``.grad`` (e.g. a graph kept for a backward outside a compiled function), a tensor it reads that the walk cannot
find,
Python values returned besides tensors, a tensor printed, ``optimizer.step(closure)``, host data copied
into a tensor inside the step; for a compiled Module in training also a double backward and a backward given
other output gradients than recorded (``aot``).  Not replayed: tgrad's own host-side value checks (e.g. cross_entropy's
target range) and the Python side effects of hooks (their kernels are replayed).  On cuda (``cuda_replay``)
the same program runs pre-packed launches, and one CUDA graph per call where the driver has graphs.
"""
import functools
import warnings
import weakref

from ..nn.modules.module import Module
from ..autograd.grad_mode import _state as _grad_state
from ..kernels.runtime import launcher as _L
from . import aot, cuda_replay
from .guards import Sources, Walk, fast_guard
from .record import tensors_of
from .replay import MISS, capture

NO_BACKWARD = "an output requires grad and no backward ran"


class _Config:
    """``torch._dynamo.config``: the settings compile reads (entries per compiled function)."""
    cache_size_limit = 8


config = _Config()
FAST_BUILDS = 4         # fast guards made per compiled function (each miss of one drops it: a step whose roots change
                        # every call stops making them); none for a function given tensors (a new batch each call,
                        # mostly: a guard holding the last one would keep its memory a call longer)
_COMPILED = weakref.WeakSet()    # every CompiledFunction, for reset()
_depth = [0]                     # calls of compiled functions running (is_compiling)


class _Entry:
    """One guard key's state: calls so far, then its replay, or the reason it stays eager."""

    __slots__ = ("calls", "run", "eager", "restarts", "aot", "__weakref__")

    def __init__(self):
        self.calls, self.run, self.eager, self.restarts = 0, None, None, 0
        self.aot = False        # a function whose outputs get their backward outside: captured as a Module's forward


class CompiledFunction:
    """``fn`` compiled: see the module docstring."""

    def __init__(self, fn, fullgraph=False, module=None):
        self._fn = fn
        self._module = module        # the Module whose forward this is (tgrad.compile(model))
        self._name = f"{type(module).__name__}.forward" if module is not None else fn.__name__
        self._fullgraph = fullgraph
        self._sources = Sources(fn)
        self._cache = {}
        self._fast = None           # (guards.fast_guard, its entry, its walk) after a replay
        self._fast_builds = 0
        self._warned = set()
        functools.update_wrapper(self, fn, updated=())
        _COMPILED.add(self)

    def _warn(self, msg, depth=0):
        """``depth``: frames between the caller of ``_warn`` and ``_call``."""
        if msg not in self._warned:
            self._warned.add(msg)
            warnings.warn(msg, stacklevel=depth + (4 if self._module is None else 5))   # (5: the OptimizedModule's caller)

    def __call__(self, *args, **kwargs):
        _depth[0] += 1
        try:
            return self._call(args, kwargs)
        finally:
            _depth[0] -= 1

    def _call(self, args, kwargs):
        roots = self._sources.roots(args, kwargs)
        fast = self._fast
        if fast is not None:        # (guard, entry, walk): the last replay's objects, state and key still hold
            if fast[0](roots) and fast[1].run is not None:
                res = fast[1].run(fast[2])
                if res is not MISS:
                    return res
            self._fast = None
        walk = Walk(roots)
        key = walk.signature()
        try:
            e = self._cache.get(key)        # (hashes the key once: a tuple's hash is not cached)
        except TypeError:
            self._warn(f"tgrad.compile: {self._name}: an argument or captured value is unhashable; "
                       "running eagerly")
            return self._fn(*args, **kwargs)
        if e is None:
            if len(self._cache) >= config.cache_size_limit:
                self._warn(f"tgrad.compile: {self._name} hit config.cache_size_limit "
                           f"({config.cache_size_limit}): recompiling on every new guard (shapes, requires_grad, "
                           "training mode, numbers it reads); the oldest record is dropped")
                self._cache.pop(next(iter(self._cache)))
                self._fast = None
            e = self._cache[key] = _Entry()
        if e.eager is not None:
            return self._fn(*args, **kwargs)
        if e.run is not None:
            res = e.run(walk)
            if res is not MISS:
                if self._fast is None and self._fast_builds < FAST_BUILDS and not tensors_of([args, kwargs], []):
                    self._fast_builds += 1
                    g = fast_guard(roots, walk)
                    self._fast = None if g is None else (g, e, walk)
                return res
            return self._fn(*args, **kwargs)
        e.calls += 1
        if e.calls == 1:
            return self._fn(*args, **kwargs)
        if (self._module is not None or e.aot) and _grad_state.grad and any(t._requires_grad for t in walk.tensors):
            if _L.RECORD is not None:       # inside a step being recorded: that recording has its launches
                e.calls -= 1
                return self._fn(*args, **kwargs)
            result, e.run, reason = aot.capture(self._fn, args, kwargs, walk, e, _weak_fall_back(self, e))
        else:
            result, e.run, reason = capture(self._fn, args, kwargs, walk, cuda_replay.build)
        if reason is not None and reason.startswith(NO_BACKWARD) and not e.aot:
            e.aot, e.calls = True, 1        # a forward (not a whole step): recorded as one at the next call
        elif reason is not None:
            if self._fullgraph:
                self._cache.pop(key, None)
                self._fast = None
                raise RuntimeError(f"tgrad.compile(fullgraph=True): {self._name} cannot be captured: {reason}")
            self._fall_back(e, reason)
        return result

    def _fall_back(self, e, reason):
        """Entry ``e`` runs eagerly from now on, with one warning giving the reason."""
        e.eager, e.run = reason, None
        self._warn(f"tgrad.compile: {self._name} runs eagerly: {reason}", 1)


def _weak_fall_back(f, e):
    """``f._fall_back(e, reason)`` through weak references.  The entry's Training keeps it: a strong one would close
    a cycle (f -> its cache -> e -> the Training -> f), and a dropped compiled model (its parameters, replay arenas,
    CUDA graphs) would go back to the allocator at some later garbage collection instead of at once."""
    fr, er = weakref.ref(f), weakref.ref(e)

    def fail(reason):
        f, e = fr(), er()
        if f is not None and e is not None:
            f._fall_back(e, reason)
    return fail


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


def reset():
    """``torch._dynamo.reset()`` / ``torch.compiler.reset()``: every compiled function forgets its records (and
    warnings); its next calls warm up and record again."""
    for f in list(_COMPILED):
        f._cache.clear()
        f._fast, f._fast_builds = None, 0
        f._warned.clear()


def is_compiling():
    """``torch.compiler.is_compiling()``: True inside a call of a compiled function (PyTorch: while dynamo traces
    it; tgrad runs the Python of a compiled step at its warm-up and recording calls, and replays the rest)."""
    return _depth[0] > 0


def disable(fn=None, recursive=True, *, reason=None):
    """``torch.compiler.disable``: ``fn`` unchanged (PyTorch runs it outside the graph; tgrad's capture gives
    eager's numbers either way); without ``fn``, a decorator.  ``recursive``, ``reason``: no effect here."""
    if fn is None:
        return lambda f: disable(f, recursive, reason=reason)
    return fn


class OptimizedModule:
    """A Module compiled for its forward: calls replay; attributes are the module's (``_orig_mod``).  As in
    PyTorch the module is the child ``_orig_mod`` of the compiled one: state_dict keys, named_* names and the
    repr carry that prefix (a plain Module holding it as its one child answers those)."""

    _NESTED = ("state_dict", "load_state_dict", "named_parameters", "named_buffers", "named_modules",
               "named_children", "modules", "children")

    def __init__(self, mod, fullgraph=False):
        self.__dict__["_orig_mod"] = mod
        self.__dict__["_call"] = CompiledFunction(mod._call_impl, fullgraph, module=mod)
        # nn.Module from the module's own classes: nn sits on this floor and imports this package
        module_cls = next(c for c in type(mod).__mro__ if c.__name__ == "Module" and c.__module__.startswith("tgrad."))
        holder = module_cls()
        holder._orig_mod = mod
        self.__dict__["_holder"] = holder

    def __repr__(self):
        return "OptimizedModule" + repr(self._holder)[len("Module"):]

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def __getattr__(self, name):
        if name in OptimizedModule._NESTED:
            return getattr(self.__dict__["_holder"], name)
        return getattr(self.__dict__["_orig_mod"], name)

    def __setattr__(self, name, value):
        setattr(self._orig_mod, name, value)
