"""Calling an op: run its forward from the table, record a graph node when grad is needed.

``call(name, *inputs, **attrs)`` is how every Tensor method reaches a kernel;
``call_inplace`` does the same for ``x.op_(...)``: it writes into ``x``,
bumps its version counter and rebases ``x.grad_fn`` onto the new node.
"""
from .. import ops as _ops
from . import anomaly, grad_mode
from .graph import Node, SavedTensor, edge_of

_node_classes = {}
# When sets, the names of ops run forward / backward are added (op coverage tests, AOT workload).
RECORD_FORWARD = None
RECORD_BACKWARD = None


def node_class(name):
    """The Node subclass for a grad_fn name (``AddBackward0``), made once."""
    cls = _node_classes.get(name)
    if cls is None:
        cls = _node_classes[name] = type(name, (OpNode,), {"_name": name})
    return cls


class Ctx:
    """What a backward rule sees: saved tensors, attrs, which inputs need a gradient, input metadata."""

    __slots__ = ("saved", "attrs", "needs_input_grad", "input_meta")

    def __init__(self, saved, attrs, needs_input_grad, input_meta):
        self.saved = saved
        self.attrs = attrs
        self.needs_input_grad = needs_input_grad
        self.input_meta = input_meta


class InputMeta:
    __slots__ = ("shape", "dtype", "device")

    def __init__(self, t):
        self.shape = tuple(t.shape)
        self.dtype = t.dtype
        self.device = t.device


class OpNode(Node):
    """A node recorded for an op-table entry."""

    def __init__(self, op):
        super().__init__()
        self.op = op

    def apply(self, grads):
        op = self.op
        if RECORD_BACKWARD is not None:
            RECORD_BACKWARD.add(op.name)
        if op.once_differentiable and grad_mode.is_grad_enabled() and any(
                g is not None and g.requires_grad for g in grads):
            raise RuntimeError(f"the derivative for '{op.name}' is not implemented for double backward "
                               f"({self._name} is only once differentiable)")
        saved = self._saved_tensors()
        grads = list(grads)
        outs = self._out_meta
        for i, g in enumerate(grads):
            if g is None and i not in op.nondiff_outputs:
                from .. import creation
                grads[i] = creation.zeros(outs[i][0], dtype=outs[i][1], device=outs[i][2])
        needs = tuple(e[0] is not None for e in self.next_functions)
        ctx = Ctx(saved, self._attrs, needs, self._input_meta)
        res = op.backward(ctx, *grads)
        if not isinstance(res, tuple):
            res = (res,)
        if len(res) != len(self.next_functions):
            raise RuntimeError(f"{self._name}: backward returned {len(res)} gradients, expected "
                               f"{len(self.next_functions)}")
        return tuple(_reduce_to(g, meta) if (g is not None and need) else None
                     for g, meta, need in zip(res, self._input_meta, needs))


def _reduce_to(g, meta):
    """Sum a broadcast gradient back to the input's shape and cast to its dtype."""
    if meta is None:
        return g
    if tuple(g.shape) != meta.shape:
        g = g.sum_to_size(meta.shape)
    if g.dtype is not meta.dtype and meta.dtype.is_floating_point:
        g = g.to(meta.dtype)
    return g


def _tensors(args):
    from ..tensor import Tensor
    return [a for a in args if isinstance(a, Tensor)]


def check_devices(op_name, tensors):
    dev = None
    for t in tensors:
        if dev is None:
            dev = t.device
        elif t.device != dev and t.dim() > 0:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two "
                               f"devices, {dev} and {t.device}! (when checking arguments for {op_name})")


def _needs_grad(op, inputs):
    if op.backward is None or not grad_mode.is_grad_enabled():
        return False
    return any(t is not None and t.requires_grad for t in inputs)


def _check_inference(op, inputs):
    if grad_mode.is_inference_mode_enabled():
        return
    for t in inputs:
        if t is not None and t._inference:
            raise RuntimeError("Inference tensors cannot be saved for backward. To work around you can make "
                               "a clone to get a normal tensor and use it in autograd.")


def call(name, *inputs, **attrs):
    op = _ops.TABLE[name]
    if RECORD_FORWARD is not None:
        RECORD_FORWARD.add(name)
    ins = list(inputs) if op.inputs == ("*tensors",) else list(inputs[:len(op.inputs)])  # cat/stack: variadic
    check_devices(name, _tensors(ins))
    needs = _needs_grad(op, ins)
    if needs:
        _check_inference(op, ins)
    out = op.forward(*inputs, **attrs)
    if needs:
        _record(op, ins, attrs, out)
    return out


def _record(op, inputs, attrs, out):
    outs = out if isinstance(out, tuple) else (out,)
    node = node_class(op.node)(op)
    node.next_functions = tuple(edge_of(t) for t in inputs)
    node._input_meta = tuple(InputMeta(t) if t is not None else None for t in inputs)
    node._out_meta = tuple((tuple(o.shape), o.dtype, o.device) for o in outs)
    node._attrs = dict(attrs)
    if anomaly.is_anomaly_enabled():
        node._anomaly_trace = anomaly.creation_trace()
    for i, o in enumerate(outs):
        if i in op.nondiff_outputs:
            continue
        o._requires_grad = True
        o.grad_fn = node
        o._output_nr = i
    names = op.inputs
    for key in op.save:
        if key.startswith("result"):
            k = int(key[6:] or 0)
            node._saved[key] = SavedTensor(outs[k], is_output=True, grad_fn=node)
        else:
            t = inputs[names.index(key)]
            if t is not None:
                node._saved[key] = SavedTensor(t)


def call_inplace(name, self, *inputs, **attrs):
    """``self.<name>_(*inputs)``: compute into self, bump its version, rebase its grad_fn."""
    op = _ops.TABLE[name]
    if RECORD_FORWARD is not None:
        RECORD_FORWARD.add(name)
    ins = [self] + list(inputs[:len(op.inputs) - 1])
    check_devices(name, _tensors(ins))
    grad_on = grad_mode.is_grad_enabled()
    if grad_on and self.requires_grad and self.grad_fn is None and self._base is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    if self._inference and not grad_mode.is_inference_mode_enabled():
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed.You can "
                           "make a clone to get a normal tensor before doing inplace update.See "
                           "https://github.com/pytorch/rfcs/pull/17 for more details.")
    needs = _needs_grad(op, ins)
    if needs and self._base is not None:
        return _inplace_on_view(op, name, self, inputs, attrs)
    old_edge = edge_of(self) if needs else None
    old_self = None
    if needs and "self" in op.save:
        old_self = self.clone()    # the backward needs the value before it is overwritten
    op.forward(self, *inputs, out=self, **attrs)
    self._version[0] += 1
    if needs:
        rec_ins = [old_self if old_self is not None else self] + list(inputs[:len(op.inputs) - 1])
        _record(op, rec_ins, attrs, self)
        edges = list(self.grad_fn.next_functions)
        edges[0] = old_edge
        self.grad_fn.next_functions = tuple(edges)
    return self


def _inplace_on_view(op, name, view, inputs, attrs):
    """In-place op on a view whose base takes part in autograd (CopySlices). Not done yet."""
    raise NotImplementedError(
        f"{name}_: in-place operation on a view of a tensor that requires grad is not supported yet")
