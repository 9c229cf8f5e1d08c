"""Guards: where a step's state is found (its arguments, ``self``, closure cells, the globals it names) and
the cache key read from it on every call (shapes, strides, dtypes, devices, requires_grad, ``.grad``
presence, storage sharing, training flags, Python numbers, the objects whose methods run as host calls, grad mode
and the autocast state)."""
import types

from ..autograd import dispatch as _dispatch
from ..autograd.grad_mode import _state as _grad_state
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from ..optim.lr_scheduler import LRScheduler
from ..optim.optimizer import Optimizer
from ..random import Generator
from ..tensor import _NO_HOOKS, Tensor

WALK_DEPTH = 4


class Sources:
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
_NUMBERS = {bool, int, float}


class Walk:
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
        i = id(v)
        seen = self._seen
        if i in seen or depth > WALK_DEPTH:
            return
        seen.add(i)
        if t in _TENSOR_TYPES or isinstance(v, Tensor):
            self._tensor(v, depth)
            return
        if isinstance(v, Module):
            self._module(v, depth)
            return
        if isinstance(v, Optimizer):
            self.objects.append(v)
            self.key.append(("O", i))
            for g in v.param_groups:
                self.visit(g["params"], depth + 1)
            return
        if isinstance(v, LRScheduler):
            self.objects.append(v)
            self.key.append(("S", i))
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

    def _module(self, v, depth):
        """A module (already marked seen): its flag, hooks, parameters and buffers, submodules (at its depth),
        public numbers.  The parameters' tensor keys are made here (``_tensor`` inlined: a model's walk is
        mostly this loop)."""
        key, seen, tensors = self.key, self._seen, self.tensors
        key.append(("M", id(v), v.training))
        if v._forward_pre_hooks or v._forward_hooks or v._backward_hooks or v._backward_pre_hooks:
            key.append((tuple(v._forward_pre_hooks), tuple(v._forward_hooks), tuple(v._backward_hooks),
                        tuple(v._backward_pre_hooks)))
        inner = depth < WALK_DEPTH
        for d in (v._parameters, v._buffers):
            for name, x in d.items():
                key.append(name)
                if inner and type(x) in _TENSOR_TYPES and id(x) not in seen and x._tensor_hooks is _NO_HOOKS \
                        and not x._view_mode and "_post_accumulate_hooks" not in x.__dict__:
                    seen.add(id(x))
                    tensors.append(x)
                    g = x._grad
                    key.append(("T", x._shape, x._strides, x.dtype, x._storage.device, x._requires_grad,
                                x._grad_fn is None, g is None))
                    if g is not None:
                        self.visit(g, depth + 1)
                elif inner and type(x) in _TENSOR_TYPES and id(x) not in seen:
                    self._tensor(x, depth + 1)      # (visit's tensor branch, without its type tests)
                else:
                    self.visit(x, depth + 1)
        for name, x in v._modules.items():      # a submodule at its parent's depth: all of a model's tensors
            key.append(name)
            if id(x) not in seen and isinstance(x, Module):
                seen.add(id(x))
                self._module(x, depth)
            else:
                self.visit(x, depth)
        key += [(name, x) for name, x in v.__dict__.items() if type(x) in _NUMBERS and name[0] != "_"]

    def _tensor(self, v, depth):
        self._seen.add(id(v))
        self.tensors.append(v)
        g = v._grad
        self.key.append(("T", v._shape, v._strides, v.dtype, v._storage.device, v._requires_grad,
                         (v.grad_fn if v._view_mode else v._grad_fn) is None, g is None))
        if v._tensor_hooks or v.__dict__.get("_post_accumulate_hooks"):      # hooks added or removed
            self.key.append((tuple(v._tensor_hooks), tuple(v.__dict__.get("_post_accumulate_hooks", ()))))
        if g is not None:
            self.visit(g, depth)

    def signature(self):
        """The cache key: structure, metadata and storage sharing of the found tensors, numbers, modes."""
        share, first = [], {}
        for i, t in enumerate(self.tensors):
            share.append(first.setdefault((id(t._storage), t._offset), i))     # views at one address
        amp = None
        cast = _dispatch.AUTOCAST
        if cast is not None:    # an autocast region entered: the device types it casts and to what (amp's state,
            g = cast.__globals__                # read through its hook: amp lies above this layer)
            amp = tuple((k, d) for k, (on, d) in g["_state"]().items() if on) or None
            amp = amp and (amp, g["is_autocast_cache_enabled"]())
        return (_grad_state.grad, amp, tuple(self.key), tuple(share))


def fast_guard(roots, walk):
    """A generated check ``guard(roots)`` that is True only when ``Walk(roots)`` would find the very objects
    ``walk`` found, in the same order, with the same key: the roots and every container's contents compared by
    identity (lists, dicts, a module's ``__dict__``, ``_parameters``, ``_buffers``, ``_modules``, an optimizer's
    groups), each tensor's metadata (shape, strides, dtype, storage and offset, requires_grad, grad_fn's absence,
    its ``.grad``), grad mode and autocast off.  One pass of compares instead of the walk, its key and hash; None
    where it does not apply (hooks, views, autocast on): the walk decides."""
    if _dispatch.AUTOCAST is not None:
        return None
    e = _Emit()
    e.lines.append(f"len(R) == {len(roots)}")
    for i, r in enumerate(roots):
        e.lines.append(f"R[{i}] is {e.k(r)}")
    for r in roots:
        e.visit(r, 0)
    if not e.ok:
        return None
    e.lines.append(f"_gs.grad is {e.k(_grad_state.grad)}")
    e.lines.append("_dispatch.AUTOCAST is None")
    e.ns.update(_gs=_grad_state, _dispatch=_dispatch, _id=id)
    src = "def guard(R):\n    return (" + "\n            and ".join(e.lines) + ")\n"
    exec(compile(src, "<tgrad.compile guard>", "exec"), e.ns)
    g = e.ns.pop("guard")
    w = Walk(roots)
    if not g(roots) or w.signature() != walk.signature() or w.objects != walk.objects or \
            [id(t) for t in w.tensors] != [id(t) for t in walk.tensors]:
        return None
    g.source = src
    return g


class _Emit:
    """``fast_guard``'s walk: Walk's traversal (the same order, depth limits and seen set), emitting the compares
    that hold the objects it reaches and the key it would make."""

    def __init__(self):
        self.ns, self.lines, self._names, self.seen, self.ok = {}, [], {}, set(), True

    def k(self, v):
        """The namespace name of object ``v`` (kept alive by the guard)."""
        name = self._names.get(id(v))
        if name is None:
            name = self._names[id(v)] = f"o{len(self._names)}"
            self.ns[name] = v
        return name

    def same(self, expr, values):
        """``expr`` (a list) holds ``values``, by identity."""
        self.lines.append(" and ".join([f"len({expr}) == {len(values)}"] +
                                       [f"{expr}[{i}] is {self.k(x)}" for i, x in enumerate(values)]))

    def items(self, d):
        """Dict ``d`` holds its keys and values (by identity; string keys by value, in order)."""
        o = self.k(d)
        if not d:
            self.lines.append(f"not {o}")
        elif all(type(x) is str for x in d):
            self.lines.append(" and ".join([f"(*{o},) == {tuple(d)!r}"] +
                                           [f"{o}[{x!r}] is {self.k(y)}" for x, y in d.items()]))
        else:
            self.same(f"[*{o}]", list(d))
            self.same(f"[*{o}.values()]", list(d.values()))

    def visit(self, v, depth):
        t = type(v)
        if t is bool or t is int or t is float or t is str or v is None:
            return              # (the container's compare holds it)
        if id(v) in self.seen or depth > WALK_DEPTH:
            return
        self.seen.add(id(v))
        o = self.k(v)
        if t in _TENSOR_TYPES or isinstance(v, Tensor):
            self.tensor(v, depth)
        elif isinstance(v, Module):
            self.module(v, depth)
        elif isinstance(v, Optimizer):
            self.same(f"{o}.param_groups", v.param_groups)
            for g in v.param_groups:
                self.lines.append(f"{self.k(g)}['params'] is {self.k(g['params'])}")
                self.visit(g["params"], depth + 1)
        elif isinstance(v, LRScheduler):
            self.lines.append(f"{o}.optimizer is {self.k(v.optimizer)}")
            self.visit(v.optimizer, depth + 1)
        elif t is list or t is tuple:
            if t is list:
                self.same(o, v)
            for x in v:
                self.visit(x, depth + 1)
        elif t is dict:
            self.items(v)
            for x in v.values():
                self.visit(x, depth + 1)
        elif isinstance(v, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type,
                            types.ModuleType, Generator)):
            return
        else:
            d = getattr(v, "__dict__", None)
            self.lines.append(f"type({o}) is {self.k(t)}")
            if d is not None and type(d) is dict:
                self.lines.append(f"type({o}.__dict__) is dict")
                self.same(f"[*{o}.__dict__.values()]", list(d.values()))
                for x in d.values():
                    self.visit(x, depth + 1)
            else:
                self.ok = False

    def tensor(self, v, depth):
        if v._tensor_hooks or v.__dict__.get("_post_accumulate_hooks") or v._view_mode:
            self.ok = False
            return
        o, g = self.k(v), v._grad
        hooks = (f"'_post_accumulate_hooks' not in {o}.__dict__" if "_post_accumulate_hooks" not in v.__dict__ else
                 f"not {o}.__dict__.get('_post_accumulate_hooks')")
        self.lines.append(f"{o}._shape == {v._shape!r} and {o}._strides == {v._strides!r} and {o}.dtype is "
                          f"{self.k(v.dtype)} and {o}._storage is {self.k(v._storage)} and {o}._offset == "
                          f"{v._offset!r} and {o}._requires_grad is {v._requires_grad!r} and not {o}._view_mode and "
                          f"{o}._grad_fn is {'None' if v._grad_fn is None else 'not None'} and not {o}._tensor_hooks "
                          f"and {hooks} and {o}._grad is {self.k(g)}")
        if g is not None:
            self.visit(g, depth)

    def module(self, v, depth):
        if v._forward_pre_hooks or v._forward_hooks or v._backward_hooks or v._backward_pre_hooks:
            self.ok = False
            return
        o = self.k(v)
        # what the walk reads: the attribute names (in order), training, the hooks, the three dicts, public numbers
        d = v.__dict__
        dk = self.k(d)
        public = " and ".join(f"{dk}[{n!r}] is {self.k(x)}" for n, x in d.items() if n[0] != "_" and n != "training")
        self.lines.append(f"{o}.__dict__ is {dk} and (*{dk},) == {tuple(d)!r} and {o}.training is {v.training!r} and "
                          f"{o}._parameters is {self.k(v._parameters)} and {o}._buffers is {self.k(v._buffers)} and "
                          f"{o}._modules is {self.k(v._modules)}" + (" and " + public if public else ""))
        self.lines.append(" and ".join(f"not {o}.{h}" for h in
                                       ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks", "_backward_pre_hooks")))
        for x in (v._parameters, v._buffers, v._modules):
            self.items(x)
        inner = depth < WALK_DEPTH
        for d in (v._parameters, v._buffers):
            for x in d.values():
                if inner and type(x) in _TENSOR_TYPES and id(x) not in self.seen:
                    self.seen.add(id(x))
                    self.tensor(x, depth + 1)
                else:
                    self.visit(x, depth + 1)
        for x in v._modules.values():
            if id(x) not in self.seen and isinstance(x, Module):
                self.seen.add(id(x))
                self.module(x, depth)
            else:
                self.visit(x, depth)
