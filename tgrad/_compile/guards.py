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
