"""The recorder: one eager call of the step with every launch, allocation, free, host copy, memset, random
draw and host call (``Optimizer.step``/``zero_grad``, ``Module.zero_grad``/``train``, ``LRScheduler.step``)
noted in order, with the ``.grad`` each leaf holds between them; what a replay cannot reproduce (a value
read back mid-step, host data copied in, ``optimizer.step(closure)``) is noted as the reason to stay eager."""
import ctypes
import functools
import types

from ..autograd import engine as _engine
from ..kernels.runtime import launcher as _L
from .. import ops as _ops
from ..nn.modules.module import Module
from ..optim.lr_scheduler import LRScheduler
from ..optim import optimizer as _optim_mod
from ..optim.optimizer import Optimizer
from ..optim.adam import Adam, AdamW
from ..optim.sgd import SGD
from ..random import Generator
from ..tensor import Tensor


class Eager(Exception):
    """The recorded step cannot be replayed (the reason is the message)."""


class Desc:
    """Where a tensor is (storage address, offset, shape, strides, dtype), without a reference to it."""

    __slots__ = ("ptr", "_offset", "_shape", "_strides", "dtype", "_requires_grad")

    def __init__(self, t):
        self.ptr, self._offset, self._shape, self._strides = t._storage.ptr, t._offset, t._shape, t._strides
        self.dtype, self._requires_grad = t.dtype, t._requires_grad


class Recorder:
    """Collects, during one eager call, the launches, allocations, frees, random draws, host calls and
    the ``.grad`` each leaf holds between them."""

    def __init__(self, leaves):
        # ("L", launch, dyn) | ("H", func, obj, args, kwargs, sgd) | ("G", [(leaf, desc)]) | ("C", dst, src, n)
        # | ("S", ptr, byte, n) | ("R", generator, n, (seed, offset))
        self.events = []
        self.blocks = {}          # block ptr -> [size, malloc event index, free event index or None]
        self.deferred = []        # freed blocks, given back after the recording
        self.depth = 0            # > 0 inside a host call: its launches and allocations are its own
        self.reason = None
        self.leaves = leaves
        self.grads = [id(l._grad) for l in leaves]
        self.backward_ran = False
        self.sub = None           # the launches of the SGD step being recorded (None: not capturable)

    exact = False           # launches run as in eager (launcher.RECORD)

    @property
    def takes_memsets(self):
        """A zero fill may be a memset (recorded as one), as in eager: not in a host call (its launches are kept)."""
        return self.depth == 0

    def __call__(self, site, dyn):
        if self.depth == 0:
            self.events.append(("L", site, dyn))
        elif self.sub is not None:
            self.sub.append((site, dyn))

    def malloc(self, orig, nbytes):
        b = orig(nbytes)
        if self.depth == 0:
            self.blocks[b.ptr] = [b.size, len(self.events), None, b]
        else:
            self.sub = None         # a host call through temporaries: its launches are not kept
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
        else:
            self.sub = None

    def memset(self, orig, ptr, byte, n):
        orig(ptr, byte, n)
        if self.depth == 0:
            self.events.append(("S", ptr, byte, n))
        else:
            self.sub = None

    def take(self, orig, gen, n):
        r = orig(gen, n)
        if self.depth == 0:     # cpu (mt19937): r is a words tensor, kept as its address only
            self.events.append(("R", gen, n, r if type(r) is tuple else r.data_ptr()))
        else:
            self.sub = None
        return r

    def sync_grads(self):
        """Record the ``.grad`` changes since the last look (made by backward, outside host calls)."""
        changed = []
        for i, leaf in enumerate(self.leaves):
            g = leaf._grad
            if id(g) != self.grads[i]:
                self.grads[i] = id(g)
                # a description, not the tensor: holding it would keep a freed gradient alive
                changed.append((leaf, None if g is None else Desc(g)))
        if changed:
            self.events.append(("G", changed))

    def host(self, func, obj, *args, **kwargs):
        if self.depth:
            return func(obj, *args, **kwargs)
        if isinstance(obj, Optimizer) and (args or kwargs.get("closure") is not None):
            self.reason = "optimizer.step(closure) runs the model inside the optimizer"
        elif tensors_of([args, kwargs], []):
            self.reason = f"{type(obj).__name__}.{func.__name__}() is given a tensor (read on the host)"
        self.sync_grads()
        # an SGD step's launches are kept with what it reads: the replay relaunches them while that is unchanged;
        # an Adam step's reads only (the replay computes its update, see replay._adam_lines)
        snap = (None if args or kwargs else sgd_reads(obj) if func is _SGD_STEP else
                sgd_reads(obj, (Adam, AdamW)) if func is _ADAM_STEP and _cpu_params(obj) else None)
        self.sub = [] if snap is not None else None
        ev = ["H", func, obj, args, kwargs, None]
        self.events.append(ev)
        self.depth += 1
        try:
            return func(obj, *args, **kwargs)
        finally:
            self.depth -= 1
            self.grads = [id(l._grad) for l in self.leaves]   # host calls' own changes replay themselves
            if self.sub is not None or snap is not None and func is _ADAM_STEP:
                ev[5] = (snap, self.sub)
            self.sub = None

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
    """[(class, name, its function there, its wrapper, the wrapper's recorder box)] of the host calls: the
    classes' own ``step``/``zero_grad`` (Optimizer, LRScheduler and subclasses), Module's ``zero_grad`` and ``train``."""
    out = []

    def sub(c, names):
        d = c.__dict__
        for name in names:
            if name in d:
                out.append(_wrapper(c, name, d[name]))
        for s in c.__subclasses__():
            sub(s, names)
    sub(Optimizer, ("step", "zero_grad"))
    sub(LRScheduler, ("step",))
    out += [_wrapper(Module, name, Module.__dict__[name]) for name in ("zero_grad", "train")]
    return out


_WRAPPERS = {}          # (class, name, function) -> _host_classes' entry


def _wrapper(cls, name, func):
    """A host call's wrapper, made once per (class, name, function): it reads its recorder from its box, set while
    a recording runs (a recording call makes no functions)."""
    w = _WRAPPERS.get((cls, name, func))
    if w is None:
        box = [None]

        def wrapped(obj, *a, _f=func, **k):
            rec = box[0]
            return _f(obj, *a, **k) if rec is None else rec.host(_f, obj, *a, **k)
        functools.update_wrapper(wrapped, func)
        if len(_WRAPPERS) >= 1024:
            _WRAPPERS.clear()
        w = _WRAPPERS[cls, name, func] = (cls, name, func, wrapped, box)
    return w


# reading a value back to Python (tgrad's own value checks, e.g. cross_entropy's target range, read through
# _host_copy: they are not replayed, as PyTorch's CUDA graphs skip host checks)
_READBACKS = ("item", "tolist", "numpy", "__bool__", "__int__", "__float__", "__index__", "__array__",
              "__repr__", "__str__", "__format__")


class Patches:
    """Install the recorder's hooks (class and instance attributes: nothing costs when not recording)."""

    def __init__(self, rec, allocators, objects):
        self.rec, self.allocators, self.saved, self.objects = rec, allocators, [], objects

    def __enter__(self):
        rec = self.rec
        self.boxes = []
        for cls, name, func, wrapped, box in _host_classes():
            self.boxes.append((box, box[0]))
            box[0] = rec
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
            if al.device.type == "cuda":    # a scalar operand is queued on the stream (Storage.write_queued)
                hta = be.memcpy_htod_async
                be.memcpy_htod_async = lambda d, s, n, st, _o=hta: rec.copy(lambda d, s, n: _o(d, s, n, st),
                                                                             d, s, n, True)
        self.outer = _L.RECORD
        _L.RECORD = rec
        return self

    def _set(self, cls, name, value):
        self.saved.append((cls, name, cls.__dict__[name]))
        setattr(cls, name, value)

    def __exit__(self, *exc):
        _L.RECORD = self.outer
        for al in self.allocators:
            del al.malloc, al.free
            del al.backend.memcpy_htod, al.backend.memcpy_dtod, al.backend.memset
            al.backend.__dict__.pop("memcpy_htod_async", None)
        for cls, name, value in reversed(self.saved):
            if isinstance(cls, (type, types.ModuleType)):
                setattr(cls, name, value)
            else:
                cls.__dict__[name] = value
        for box, prev in reversed(self.boxes):
            box[0] = prev


_SGD_STEP = SGD.__dict__["step"]
_ADAM_STEP = Adam.__dict__["step"]
_PLAIN = (int, float, bool, str, type(None))


def _step_hooks(opt):
    """True when step hooks run around ``opt.step`` (Python calls: the step runs for real in the replay)."""
    return bool(opt.__dict__.get("_optimizer_step_pre_hooks") or opt.__dict__.get("_optimizer_step_post_hooks")
                or _optim_mod._global_optimizer_pre_hooks or _optim_mod._global_optimizer_post_hooks)


def _cpu_params(opt):
    """True when every parameter of ``opt`` is on cpu (the cpu replay computes an Adam step; cuda runs it)."""
    return all(p._storage.device.type == "cpu" for g in opt.param_groups for p in g["params"])


def sgd_reads(opt, classes=(SGD,)):
    """What an ``SGD.step`` (or the step of another of ``classes``) reads, as objects to check by identity and
    plain values to compare: [(group, [(name, value)], params list, [(param, its .grad as a Desc, state dict,
    [(name, value)])])], or None when something else (an instance ``step``, a tensor hyper-parameter) decides it."""
    if type(opt) not in classes or "step" in opt.__dict__ or _step_hooks(opt):
        return None
    groups = []
    for g in opt.param_groups:
        hyper = [(k, v) for k, v in g.items() if k != "params"]
        if any(type(v) not in _PLAIN and not (type(v) is tuple and all(type(x) in _PLAIN for x in v))
               for _, v in hyper):        # (Adam's betas: a tuple)
            return None
        ps = []
        for p in g["params"]:
            st = opt.state.get(p)
            ps.append((p, None if p._grad is None else Desc(p._grad), st, list(st.items()) if st else []))
        groups.append((g, hyper, g["params"], ps))
    return groups


def tensors_of(x, out):
    """The tensors in ``x`` (nested lists, tuples, dicts), appended to ``out``."""
    if isinstance(x, Tensor):
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for y in x:
            tensors_of(y, out)
    elif isinstance(x, dict):
        for y in x.values():
            tensors_of(y, out)
    return out
