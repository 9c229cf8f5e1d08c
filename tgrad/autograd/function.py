"""Custom autograd Functions: ``class Exp(Function)`` with static ``forward``/``backward``, ``Exp.apply(x)``.

Each call of ``apply`` makes one node of the class ``<Name>Backward``; that
node is also the ``ctx`` the forward and backward see (as in PyTorch), so
``y.grad_fn.saved_tensors`` and attributes set on ctx are reachable from the
graph.  Forward runs without recording; its outputs get the node as grad_fn.
"""
import functools

from ..tensor import Tensor, zeros
from . import grad_mode
from .graph import FREED_MSG, Node, SavedTensor, delayed_error, edge_of, set_history


def _is_tensor(x):
    return isinstance(x, Tensor)


class FunctionCtx:
    """What ``forward``/``setup_context`` use to hand information to ``backward``."""

    def save_for_backward(self, *tensors):
        """Tensors (or None) for backward; read back, version-checked, as ``ctx.saved_tensors``."""
        for i, t in enumerate(tensors):
            if t is not None and not _is_tensor(t):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} is of type "
                                f"{type(t).__name__}")
        self.to_save = tensors

    def mark_dirty(self, *tensors):
        """The forward modified these inputs in place (and returns them)."""
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors):
        """These outputs get no gradient (backward receives zeros for them)."""
        self.non_differentiable = tensors

    def set_materialize_grads(self, value):
        """If False, backward receives None (not zeros) for outputs that got no gradient."""
        self.materialize_grads = bool(value)


class BackwardCFunction(Node, FunctionCtx):
    """The node of one ``Function.apply`` call (and the ctx of that call)."""

    _forward_cls = None

    def __init__(self):
        super().__init__()
        self.to_save = ()
        self.dirty_tensors = ()
        self.non_differentiable = ()
        self.materialize_grads = True
        self.needs_input_grad = ()
        self._saved_list = None

    @property
    def saved_tensors(self):
        if self._saved_list is None:
            return tuple(self.to_save)
        if self._released:
            raise RuntimeError(FREED_MSG)
        return tuple(s.unpack() if s is not None else None for s in self._saved_list)

    def _release(self):
        for s in self._saved_list or ():
            if s is not None:
                s.release()
        self._released = True

    def apply(self, grads):
        """Engine entry: grads (one per output) -> grads for the tensor inputs (next_functions)."""
        cls = self._forward_cls
        grads = list(grads)
        if self.materialize_grads:
            for i, g in enumerate(grads):
                if g is None and self._out_meta[i] is not None:
                    shape, dtype, device = self._out_meta[i]
                    grads[i] = zeros(shape, dtype, device)
        res = cls.backward(self, *grads)
        if not isinstance(res, tuple):
            res = (res,)
        n = len(self._arg_is_tensor)
        if len(res) > n and all(r is None for r in res[n:]):
            res = res[:n]
        if len(res) != n:
            raise RuntimeError(f"function {self._name} returned an incorrect number of gradients (expected {n}, "
                               f"got {len(res)})")
        out = []
        for i, (r, is_t) in enumerate(zip(res, self._arg_is_tensor)):
            if r is not None and not _is_tensor(r):
                raise RuntimeError(f"expected Variable or None (got {type(r).__name__})")
            if is_t:
                out.append(self._validate(i, r))
        return tuple(out)

    def _validate(self, i, g):
        meta = self._input_meta[i]
        if g is None or meta is None:
            return None
        shape, dtype = meta
        if tuple(g.shape) != shape:
            if not _expandable(shape, tuple(g.shape)):
                raise RuntimeError(f"Function {self._name} returned an invalid gradient at index {i} - got "
                                   f"{list(g.shape)} but expected shape compatible with {list(shape)}")
            g = g.sum_to_size(shape)
        if g.dtype is not dtype:
            g = g.to(dtype)
        return g


def _expandable(shape, target):
    if len(shape) > len(target):
        return False
    return all(s == t or s == 1 for s, t in zip(reversed(shape), reversed(target)))


class FunctionMeta(type):
    """Gives every Function subclass its node class ``<Name>Backward``."""

    def __init__(cls, name, bases, attrs):
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls,
                                                                          "_name": name + "Backward"})
        super().__init__(name, bases, attrs)


class Function(metaclass=FunctionMeta):
    """Base class of custom differentiable operations.

    Subclasses define ``forward(ctx, *args)`` (or ``forward(*args)`` plus
    ``setup_context(ctx, inputs, output)``) and ``backward(ctx, *grad_outputs)``
    returning one gradient (or None) per forward argument; call ``apply``.
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = cls._backward_cls()
        ctx.needs_input_grad = tuple(_is_tensor(a) and a.requires_grad for a in args)
        record = grad_mode.is_recording() and any(ctx.needs_input_grad)
        with grad_mode.no_grad():
            if cls.setup_context is Function.setup_context:
                out = cls.forward(ctx, *args, **kwargs)
            else:
                out = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, out)
        is_tuple = isinstance(out, tuple)
        outs = list(out) if is_tuple else [out]
        outs = _wrap_outputs(ctx, args, outs, record)
        return tuple(outs) if is_tuple else outs[0]


def _wrap_outputs(ctx, args, outs, record):
    """Attach ``ctx`` as grad_fn of the outputs (dirty inputs are rebased), then save tensors."""
    dirty = {id(t) for t in ctx.dirty_tensors}
    nondiff = {id(t) for t in ctx.non_differentiable}
    input_ids = {id(a) for a in args if _is_tensor(a)}
    for t in ctx.dirty_tensors:
        if t.requires_grad and t.grad_fn is None and record:
            raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
    if record:
        ctx._arg_is_tensor = tuple(_is_tensor(a) for a in args)
        tensors_in = [a for a in args if _is_tensor(a)]
        ctx.next_functions = tuple(edge_of(a) for a in tensors_in)
        ctx._input_meta = tuple((tuple(a.shape), a.dtype) if _is_tensor(a) else None for a in args)
    res = []
    for i, o in enumerate(outs):
        if _is_tensor(o):
            if id(o) in input_ids and id(o) not in dirty:
                o = o._detached_alias()     # returning an input unchanged gives a new tensor
            if record and id(o) not in nondiff:
                set_history(o, ctx, i)
                if id(o) in dirty:
                    o._tensor_hooks = {}
            elif record and id(o) in dirty:
                o._grad_fn = None
                o._requires_grad = False
        res.append(o)
    if record:
        ctx._out_meta = tuple((tuple(o.shape), o.dtype, o.device) if _is_tensor(o) else None for o in res)
        out_nr = {id(o): i for i, o in enumerate(res) if _is_tensor(o)}
        ctx._saved_list = [None if t is None else
                           SavedTensor(t, output_nr=out_nr[id(t)], grad_fn=ctx) if id(t) in out_nr else
                           SavedTensor(t) for t in ctx.to_save]
        ctx.to_save = ()
    return res


def once_differentiable(fn):
    """Decorate a Function's backward that is not itself differentiable: it runs without recording,
    and differentiating its result again raises."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with grad_mode.no_grad():
            outputs = fn(ctx, *args)
        if not grad_mode.is_grad_enabled():
            return outputs
        single = not isinstance(outputs, tuple)
        res = delayed_error((outputs,) if single else outputs, args,
                            "trying to differentiate twice a function that was marked with @once_differentiable")
        return res[0] if single else res
    return wrapper
