"""Graph nodes: ``Node`` (one per recorded op), ``AccumulateGrad`` (one per leaf), saved tensors.

A node holds ``next_functions``: one ``(node, input_nr)`` edge per input
(``(None, 0)`` for inputs that do not require grad), the input metadata the
engine needs to reduce broadcast gradients, and the tensors its backward rule
saved.  Calling a node runs its backward rule: ``grad_fn(grad)`` returns the
input gradients (one tensor, or a tuple when there are several).
"""
import threading
import weakref

from . import grad_mode

_seq = [0]
_seq_lock = threading.Lock()


def _next_seq():
    with _seq_lock:
        _seq[0] += 1
        return _seq[0]


class RemovableHandle:
    """Returned by ``register_*hook``; ``remove()`` unregisters the hook."""

    _next_id = [0]

    def __init__(self, hooks_dict):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        RemovableHandle._next_id[0] += 1
        self.id = RemovableHandle._next_id[0]

    def remove(self):
        d = self.hooks_dict_ref()
        if d is not None:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


FREED_MSG = ("Trying to backward through the graph a second time (or directly access saved tensors "
             "after they have already been freed). Saved intermediate values of the graph are freed "
             "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
             "backward through the graph a second time or if you need to access saved tensors after "
             "calling backward.")


class SavedTensor:
    """A tensor saved for backward: remembers its version; checks it on unpack.

    An op's own output is stored without its grad_fn (no reference cycle) and
    unpacked as a new Tensor object sharing storage, as PyTorch does.
    ``saved_tensors_hooks`` may replace the stored value (pack/unpack).
    """

    __slots__ = ("tensor", "version", "is_output", "packed", "unpack_hook", "grad_fn_ref", "requires_grad")

    def __init__(self, t, is_output=False, grad_fn=None):
        from . import saved_hooks
        self.version = t._version[0]
        self.is_output = is_output
        self.requires_grad = t.requires_grad
        self.grad_fn_ref = weakref.ref(grad_fn) if (is_output and grad_fn is not None) else None
        hooks = saved_hooks.current()
        if hooks is not None:
            pack, self.unpack_hook = hooks
            self.packed = pack(t)
            self.tensor = None
        else:
            self.packed = None
            self.unpack_hook = None
            self.tensor = t._detached_alias() if is_output else t

    def unpack(self, node):
        if self.tensor is None and self.packed is None:
            raise RuntimeError(FREED_MSG)
        if self.unpack_hook is not None:
            return self.unpack_hook(self.packed)
        t = self.tensor
        if t._version[0] != self.version:
            from ..dtypes import TENSOR_TYPE_NAMES
            tname = f"tgrad.{TENSOR_TYPE_NAMES[t.dtype]}"
            if t.device.type == "cuda":
                tname = f"tgrad.cuda.{TENSOR_TYPE_NAMES[t.dtype]}"
            shape = list(t.shape)
            role = f"output {0} of {node.name()}" if self.is_output else ""
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an inplace "
                f"operation: [{tname} {shape}]{', which is ' + role if role else ''} is at version "
                f"{t._version[0]}; expected version {self.version} instead. Hint: enable anomaly detection "
                "to find the operation that failed to compute its gradient, with "
                "tgrad.autograd.set_detect_anomaly(True).")
        if self.is_output:
            out = t._detached_alias()
            if self.requires_grad:
                out._requires_grad = True
                out.grad_fn = self.grad_fn_ref() if self.grad_fn_ref is not None else None
            return out
        return t

    def release(self):
        self.tensor = None
        self.packed = None


class Node:
    """Base class of graph nodes (``AddBackward0`` ... are subclasses made per op)."""

    _name = "Node"

    def __init__(self):
        self.next_functions = ()
        self._saved = {}
        self._attrs = {}
        self._input_meta = ()
        self._hooks = {}
        self._pre_hooks = {}
        self._retain_grad_hooks = {}
        self._sequence_nr = _next_seq()
        self._released = False
        self._anomaly_trace = None
        self.metadata = {}

    def name(self):
        return self._name

    def __repr__(self):
        return f"<{self._name} object at {hex(id(self))}>"

    @property
    def requires_grad(self):
        return True

    # -- saved values: grad_fn._saved_self, _saved_other, _saved_result, _saved_exponent, ...
    def __getattr__(self, item):
        if item.startswith("_saved_"):
            key = item[len("_saved_"):]
            saved = self.__dict__.get("_saved", {})
            if key in saved:
                return saved[key].unpack(self)
            attrs = self.__dict__.get("_attrs", {})
            if key in attrs:
                return attrs[key]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{item}'")

    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) -> None or replacement grad_inputs; runs after the node."""
        h = RemovableHandle(self._hooks)
        self._hooks[h.id] = fn
        return h

    def register_prehook(self, fn):
        """fn(grad_outputs) -> None or replacement grad_outputs; runs before the node."""
        h = RemovableHandle(self._pre_hooks)
        self._pre_hooks[h.id] = fn
        return h

    def _saved_tensors(self):
        if self._released:
            raise RuntimeError(FREED_MSG)
        return {k: v.unpack(self) for k, v in self._saved.items()}

    def _release(self):
        for s in self._saved.values():
            s.release()
        self._released = True

    def apply(self, grads):
        """Run the backward rule: grads (one per output) -> tuple of grads (one per input)."""
        raise NotImplementedError

    def __call__(self, *grads):
        with grad_mode.enable_grad() if False else _nullcontext():
            res = self.apply(tuple(grads))
        if len(res) == 1:
            return res[0]
        return tuple(res)


class _nullcontext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class AccumulateGrad(Node):
    """Leaf node: adds the incoming gradient into ``variable.grad``."""

    _name = "torch::autograd::AccumulateGrad"
    _lock = threading.Lock()

    def __init__(self, variable):
        super().__init__()
        self.variable = variable
        self._post_hooks = {}

    def __repr__(self):
        return f"<AccumulateGrad object at {hex(id(self))}>"

    def apply(self, grads):
        g = grads[0]
        var = self.variable
        if g is None:
            return ()
        for hook in list(var._tensor_hooks.values()):
            r = hook(g)
            if r is not None:
                g = r
        with AccumulateGrad._lock:
            if var._grad is None:
                if grad_mode.is_grad_enabled() and g.requires_grad:
                    var._grad = g._copy_recorded()           # clone under grad mode (CopyBackwards)
                elif g._base is None and g.is_contiguous() and not g.requires_grad and g._shares_only_with_engine:
                    var._grad = g                             # steal a fresh buffer
                else:
                    var._grad = g.detach().clone()
            else:
                if grad_mode.is_grad_enabled():
                    var._grad = var._grad + g
                else:
                    var._grad.add_(g)
        for hook in list(self._post_hooks.values()):
            hook(var)
        return ()


def accumulator_for(t):
    """The (cached) AccumulateGrad node of leaf ``t``."""
    ref = t._grad_accumulator
    acc = ref() if ref is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        t._grad_accumulator = weakref.ref(acc)
    return acc


def edge_of(t):
    """Graph edge for tensor ``t`` as an input: (node, input_nr) or (None, 0)."""
    if t is None or not t.requires_grad:
        return (None, 0)
    if t.grad_fn is not None:
        return (t.grad_fn, t._output_nr)
    return (accumulator_for(t), 0)
