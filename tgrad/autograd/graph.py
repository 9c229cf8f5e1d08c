"""Graph nodes: ``Node`` (one per recorded op), ``AccumulateGrad`` (one per leaf), saved tensors.

A node holds ``next_functions``: one ``(node, input_nr)`` edge per input
(``(None, 0)`` for inputs that do not require grad), the input metadata the
engine needs to reduce broadcast gradients, and the tensors its backward rule
saved.  Calling a node runs its backward rule: ``grad_fn(grad)`` returns the
input gradients (one tensor, or a tuple when there are several).

``tgrad.autograd.graph`` also exposes ``saved_tensors_hooks`` and
``save_on_cpu``, as ``torch.autograd.graph`` does.
"""
import itertools
import os
import re
import threading
import types
import weakref
from sys import getrefcount

from ..dtypes import TENSOR_TYPE_NAMES
from ..kernels._geometry import contiguous_strides, non_overlapping_and_dense
from .. import tensor as _tensor
from ..tensor import Tensor, contiguous_format, empty_like
from . import anomaly, grad_mode, saved_hooks
from .saved_hooks import disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks  # noqa: F401

_seq = itertools.count(1)      # next() of a count is atomic under the GIL
_seq_lock = threading.Lock()


def _reset_locks_in_child():
    """Fresh locks in a forked child (another thread may have held one at the fork: issue 16)."""
    global _seq_lock
    _seq_lock = threading.Lock()
    AccumulateGrad._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_locks_in_child)
_EMPTY = types.MappingProxyType({})
_grad_state = grad_mode._state


class RemovableHandle:
    """Returned by ``register_*hook``; ``remove()`` unregisters the hook."""

    _next_id = [0]

    def __init__(self, hooks_dict):
        self.hooks_dict = hooks_dict
        with _seq_lock:
            RemovableHandle._next_id[0] += 1
            self.id = RemovableHandle._next_id[0]

    def remove(self):
        self.hooks_dict.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


FREED_MSG = ("Trying to backward through the graph a second time (or directly access saved tensors "
             "after they have already been freed). Saved intermediate values of the graph are freed "
             "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
             "backward through the graph a second time or if you need to access saved tensors after "
             "calling backward.")


def _op_name(node):
    """``ExpBackward0`` -> ``Exp``, ``TBackward1`` -> ``T1``: how PyTorch (2.13) names a tensor's producer in
    the version error (``torch::autograd::CopySlices`` stays whole)."""
    return re.sub(r"Backward0?$", "", re.sub(r"Backward([1-9]\d*)$", r"\1", node.name()))


def version_error(t, saved_version, producer=None, output_nr=0):
    tname = ("tgrad.cuda." if t.device.type == "cuda" else "tgrad.") + TENSOR_TYPE_NAMES[t.dtype]
    which = f", which is output {output_nr} of {_op_name(producer)}," if producer is not None else ""
    if anomaly.is_anomaly_enabled():
        hint = ("Hint: the backtrace further above shows the operation that failed to compute its gradient. "
                "The variable in question was changed in there or anywhere later. Good luck!")
    else:
        hint = ("Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
                "with tgrad.autograd.set_detect_anomaly(True).")
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace operation: "
        f"[{tname} {list(t.shape)}]{which} is at version {t._version}; expected version {saved_version} "
        f"instead. {hint}")


class SavedTensor:
    """A tensor saved for backward: remembers its version; checks it on unpack.

    An op's own output is stored without its grad_fn (no reference cycle) and
    unpacked as a new Tensor object sharing storage, as PyTorch does; an input
    is unpacked as the very same object.  Under ``saved_tensors_hooks`` the
    stored value is ``pack(t)`` and unpacking returns ``unpack(packed)``.
    """

    __slots__ = ("tensor", "version", "output_nr", "packed", "unpack_hook", "grad_fn_ref", "requires_grad")

    def __init__(self, t, output_nr=None, grad_fn=None):
        self.version = t._version_counter[0]
        self.output_nr = output_nr
        self.requires_grad = output_nr is not None and t.requires_grad      # only an output's is used
        self.grad_fn_ref = weakref.ref(grad_fn) if grad_fn is not None else None
        self.packed = self.unpack_hook = None
        if saved_hooks._state.stack:
            packed = saved_hooks.pack(t)
            self.packed, self.unpack_hook = (packed[0],), packed[1]
            self.tensor = None
        else:
            self.tensor = t._detached_alias() if output_nr is not None else t

    def unpack(self):
        t = self.tensor     # set only when there is no unpack_hook
        if t is not None and self.output_nr is None and t._version_counter[0] == self.version:
            return t        # a saved input, unchanged
        if self.unpack_hook is not None:
            if self.packed is None:
                raise RuntimeError(FREED_MSG)
            return self.unpack_hook(self.packed[0])
        t = self.tensor
        if t is None:
            raise RuntimeError(FREED_MSG)
        if t._version_counter[0] != self.version:
            if self.output_nr is not None:
                node = self.grad_fn_ref() if self.grad_fn_ref is not None else None
                raise version_error(t, self.version, node, self.output_nr)
            raise version_error(t, self.version, t.grad_fn, t._output_nr)
        if self.output_nr is None:
            return t
        out = t._detached_alias()
        node = self.grad_fn_ref() if self.grad_fn_ref is not None else None
        if self.requires_grad and node is not None:
            out._requires_grad = True
            out._grad_fn = node
            out._output_nr = self.output_nr
        return out

    def release(self):
        self.tensor = None
        self.packed = None


class Node:
    """Base class of graph nodes (``AddBackward0`` ... are subclasses made per op)."""

    _name = "Node"
    # Class-level defaults (read-only empties) for what most nodes never get: a node gets its own dict
    # when something is saved, recorded or registered on it; recording a node stays cheap.
    next_functions = ()
    _saved = _EMPTY
    _attrs = _EMPTY
    _input_meta = ()
    _out_meta = ()                  # (shape, dtype, device) per output
    _hooks = _EMPTY
    _pre_hooks = _EMPTY
    _tensor_pre_hooks = _EMPTY      # {id: (output_nr, a tensor's hooks dict)}, set by Tensor.register_hook
    _retain_refs = _EMPTY           # {id(tensor): (output_nr, weakref)}, set by Tensor.retain_grad
    _released = False
    _anomaly_trace = None

    def __init__(self):
        self._priority = next(_seq)     # the engine runs ready nodes by decreasing priority
        if anomaly._state.enabled:
            self._anomaly_trace = anomaly.creation_trace()

    def _sequence_nr(self):
        """PyTorch's creation counter of the node (AccumulateGrad: 2**64 - 1)."""
        return self._priority

    @property
    def metadata(self):
        d = self.__dict__
        if "_metadata" not in d:
            d["_metadata"] = {}
        return d["_metadata"]

    def name(self):
        return self._name

    def __repr__(self):
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    @property
    def requires_grad(self):
        return True

    def __getattr__(self, item):
        """``grad_fn._saved_self``, ``_saved_other``, ``_saved_result``, ``_saved_exponent`` ..."""
        if item.startswith("_saved_"):
            key = item[len("_saved_"):]
            saved = self.__dict__.get("_saved", {})
            if key in saved:
                return saved[key].unpack()
            attrs = self.__dict__.get("_attrs", {})
            if key in attrs:
                return attrs[key]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{item}'")

    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) -> None or replacement grad_inputs; runs after the node."""
        hooks = self.__dict__.setdefault("_hooks", {})
        h = RemovableHandle(hooks)
        hooks[h.id] = fn
        return h

    def register_prehook(self, fn):
        """fn(grad_outputs) -> None or replacement grad_outputs; runs before the node."""
        hooks = self.__dict__.setdefault("_pre_hooks", {})
        h = RemovableHandle(hooks)
        hooks[h.id] = fn
        return h

    def _saved_tensors(self):
        """Unpacked saved tensors; a released one raises (a node that saved none runs again, as in PyTorch)."""
        return {k: v.unpack() for k, v in self._saved.items()}

    def _release(self):
        saved = self._saved
        if saved:
            for s in saved.values():
                s.release()
        self._released = True

    def apply(self, grads):
        """Run the backward rule: grads (one per output) -> tuple of grads (one per input)."""
        raise NotImplementedError

    def __call__(self, *grads):
        res = self.apply(tuple(grads))
        return res[0] if len(res) == 1 else tuple(res)


class AccumulateGrad(Node):
    """Leaf node: adds the incoming gradient into ``variable.grad`` (serialized across threads).

    A first gradient is stolen (becomes ``.grad`` without a copy) when grad
    mode is off, nobody else references it (the engine hands it over in a
    one-element list and keeps no reference), it is no view and shares no
    storage, and its strides obey the layout contract; otherwise it is
    cloned.  This is PyTorch's ``accumulateGrad`` rule (use_count <= expected).
    """

    _name = "torch::autograd::AccumulateGrad"
    _lock = threading.Lock()

    def __init__(self, variable):
        Node.__init__(self)
        self._priority += 2 ** 64     # before any other ready node, as PyTorch's UINT64_MAX sequence number
        self.variable = variable

    def _sequence_nr(self):
        return 2 ** 64 - 1

    def apply(self, grads):
        return self._accumulate([grads[0]])     # grads (the caller's) still holds it: never stolen

    def _accumulate(self, box):
        """``box``: a list holding the incoming gradient, emptied here, so that when the caller passed the
        only reference, ``g`` is the only one left and the gradient may be stolen."""
        g = box[0]
        box.clear()
        var = self.variable
        if g is None:
            return ()
        if var._tensor_hooks:
            g = run_tensor_hooks(var._tensor_hooks, g)
        grad_enabled = _grad_state.grad
        with self._lock:
            if g.is_sparse or var._grad is not None and var._grad.is_sparse:
                _accumulate_sparse(var, g)
            elif var._grad is None:
                if grad_enabled:
                    var._grad = g._copy_recorded() if g.requires_grad else _clone_obey_contract(g, var)
                # refs to g: the local and getrefcount's argument; to its storage: g's and the argument
                elif (getrefcount(g) <= 2 and getrefcount(g._storage) <= 2 and g._base is None
                      and g._storage._owner is None and _obeys_layout_contract(g, var)):
                    g.__dict__.pop("_implicit_seed", None)
                    var._grad = g._detached_alias() if g.requires_grad else g
                else:
                    var._grad = _clone_obey_contract(g, var)
            elif grad_enabled:
                var._grad = var._grad + g
            elif not _tensor._dispatch.add_into(var._grad, g):    # (grad mode is off: nothing is recorded,
                var._grad.add_(g)                                   # so g needs no detach())
        hooks = var.__dict__.get("_post_accumulate_hooks")
        for hook in list(hooks.values()) if hooks else ():
            hook(var)
        return ()


def _accumulate_sparse(var, g):
    """PyTorch's accumulateGrad cases with a sparse side: a first sparse gradient is kept (cloned unless it is
    a temporary), sparse + dense gives dense, otherwise ``.grad + g`` (sparse + sparse merges or concatenates)."""
    old = var._grad
    if old is None:
        var._grad = g if getrefcount(g) <= 3 and not g.requires_grad else g.clone()
    elif old.is_sparse and not g.is_sparse:
        var._grad = g + old
    elif not old.is_sparse and not _grad_state.grad:
        old.add_(g)
    else:
        var._grad = old + g


def _non_overlapping_and_dense(t):
    return t._strides == contiguous_strides(t._shape) or non_overlapping_and_dense(t._shape, t._strides)


def _clone_obey_contract(g, var):
    """PyTorch's ``clone_obey_contract``: a copy of g with var's strides if var is non-overlapping and dense,
    else a contiguous one."""
    if not _non_overlapping_and_dense(var):
        return g.detach().clone(memory_format=contiguous_format)
    return empty_like(var, g.dtype, g.device).copy_(g.detach())


def _obeys_layout_contract(g, var):
    """PyTorch's ``obeys_layout_contract``: g has var's strides (where size != 1, and no 0-stride
    size-1 dims) if var is non-overlapping and dense, else g is contiguous."""
    vs = var._strides
    if g._strides == vs and vs == contiguous_strides(var._shape):    # both contiguous (no 0 strides)
        return True
    if not _non_overlapping_and_dense(var):
        return g.is_contiguous()
    for size, gs, vs in zip(g._shape, g._strides, vs):
        if (gs != vs) if size != 1 else gs == 0:
            return False
    return True


def run_tensor_hooks(hooks, g):
    """``Tensor.register_hook`` hooks in order; each may return a replacement of the same shape."""
    for hook in list(hooks.values()):
        r = hook(g)
        if r is not None:
            if tuple(r.shape) != tuple(g.shape):
                raise RuntimeError(f"hook '{getattr(hook, '__name__', hook)}' has changed the size of value")
            g = r
    return g


class DelayedError(Node):
    """Stands for a backward that is not differentiable: raises if the engine reaches it."""

    _name = "DelayedError"

    def __init__(self, msg):
        super().__init__()
        self.msg = msg

    def apply(self, grads):
        raise RuntimeError(self.msg)


def delayed_error(outputs, inputs, msg):
    """outputs of a once-differentiable backward: if some input requires grad, route them through a
    DelayedError node so that only differentiating them (again) fails."""
    edges = tuple(edge_of(t) for t in inputs if t is not None and t.requires_grad)
    if not grad_mode.is_grad_enabled() or not edges:
        return outputs
    node = DelayedError(msg)
    node.next_functions = edges
    res = []
    for o in outputs:
        if o is not None:
            o = o.detach()
            set_history(o, node, 0)
        res.append(o)
    return tuple(res)


def set_history(t, node, output_nr):
    """Make ``node`` the grad_fn of ``t`` (its output ``output_nr``)."""
    t._requires_grad = True
    t._grad_fn = node
    t._output_nr = output_nr
    t._grad_fn_version = t._version_counter[0]


def accumulator_for(t):
    """The (cached, weakly held) AccumulateGrad node of leaf ``t``."""
    ref = t._grad_accumulator
    acc = ref() if ref is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        t._grad_accumulator = weakref.ref(acc)
    return acc


def edge_of(t):
    """Graph edge for tensor ``t`` as an input: (node, input_nr) or (None, 0)."""
    # t.requires_grad inlined; the grad_fn property differs from _grad_fn only for views (a refresh)
    if t is None or not (t._requires_grad or t._view_mode is not None and t._base.requires_grad):
        return (None, 0)
    fn = t.grad_fn if t._view_mode else t._grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    return (accumulator_for(t), 0)


_CPP_NAMES = {"float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double",
              "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
              "uint8": "unsigned char", "bool": "bool"}
def check_grad_assignment(t, value):
    """``t.grad = value`` must match t's shape, dtype and device (PyTorch's messages)."""
    if value is None:
        return
    if not isinstance(value, Tensor):
        raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                        f"{type(value).__name__}")
    if value.dtype is not t.dtype:
        raise RuntimeError(
            f"attempting to assign a gradient with dtype '{_CPP_NAMES[value.dtype.name]}' to a tensor with "
            f"grad_dtype '{t.dtype.legacy_name}'. The gradient must match the tensor's grad_dtype "
            "(defaults to the tensor's dtype). You can set the tensor's grad_dtype attribute with a specific "
            "dtype, or None to allow any dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor "
            "and its gradient may break downstream systems that assume they match.")
    if value.device != t.device:
        raise RuntimeError(f"attempting to assign a gradient with device type '{value.device.type}' to a "
                           f"tensor with device type '{t.device.type}'. Please ensure that the gradient and "
                           "the tensor are on the same device")
    if tuple(value.shape) != tuple(t.shape):
        raise RuntimeError(f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of size "
                           f"'{list(t.shape)}'. Please ensure that the gradient and the tensor are the same size")


from ._draw import draw, to_dot  # noqa: E402,F401  (drawing a graph; reads nodes only)
