"""Calling an op: run its forward from the table, record a graph node when grad is needed.

``call(name, *inputs, **attrs)`` is how every Tensor method reaches a kernel;
``call_inplace`` does the same for ``x.op_(...)``: it writes into ``x``,
bumps its version counter and rebases ``x.grad_fn`` onto the new node;
``call_inplace_view`` for ``x.t_()`` and the other in-place view ops, which
change ``x``'s geometry instead of its elements.

In-place on a view of a tensor that takes part in autograd rebases the
view's base instead (PyTorch's ``CopySlices``): the base's new grad_fn sends
the gradient of the written region through the op's backward and the rest
straight through; the view becomes an ``AsStridedBackward0`` of the base.
"""
import math
import threading
import weakref

from .. import dtypes as _D
from .. import ops as _ops
from .._state import state as _grad_state
from ..kernels.runtime import launcher as _launcher
from ..memory import meta as _meta
from ..tensor import CONJ_ALIVE as _CONJ_ALIVE, Tensor, scalar, zeros
from . import grad_mode
from .graph import Node, SavedTensor, _op_name, delayed_error, edge_of, set_history

_TABLE = _ops.TABLE
_node_classes = {}
_VARIADIC = ("*tensors",)
# When sets, the names of ops run forward / backward are added (op coverage tests, AOT workload).
RECORD_FORWARD = None
RECORD_BACKWARD = None
# Set by tgrad.profiler while a profile runs: launches are attributed to the outermost op being run
# (``_tls.op``); when False the cost is one global test per call.
PROFILING = False
# Set by tgrad.amp while an autocast region is active: (op name, inputs) -> inputs cast by its policy.
AUTOCAST = None
_tls = threading.local()
_tls.op = None


def current_op():
    """The op whose forward/backward is running on this thread (only tracked while profiling)."""
    return getattr(_tls, "op", None)


def _labelled(label, fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` with ``label`` as the current op, unless an outer op already is."""
    if getattr(_tls, "op", None) is not None:
        return fn(*args, **kwargs)
    _tls.op = label
    try:
        return fn(*args, **kwargs)
    finally:
        _tls.op = None


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
    """Shape, dtype, device and strided geometry of an op input, as it was at forward time."""

    __slots__ = ("shape", "dtype", "device", "stride", "offset")

    def __init__(self, t):
        self.shape = t._shape           # tuples, as shape / device / stride() / storage_offset() give them
        self.dtype = t.dtype
        self.device = t._storage.device
        self.stride = t._strides
        self.offset = t._offset


class OpNode(Node):
    """A node recorded for an op-table entry."""

    op = None       # the entry, set by _make_node

    def __getattr__(self, item):
        """``_saved_self_sym_sizes`` / ``_sym_strides`` / ``_sym_numel`` of the inputs the entry lists in ``meta``."""
        op = self.__dict__.get("op")
        key = item[len("_saved_"):]
        if op is not None and item.startswith("_saved_") and key in op.meta:
            name, _, what = key.rpartition("_sym_")
            meta = self._input_meta[op.inputs.index(name)]
            if what == "sizes":
                return meta.shape
            if what == "strides":
                return meta.stride
            return math.prod(meta.shape)
        return super().__getattr__(item)

    def apply(self, grads):
        op = self.op
        if RECORD_BACKWARD is not None:
            RECORD_BACKWARD.add(op.name)
        if PROFILING and current_op() is None:
            return _labelled(op.name + ".backward", self.apply, grads)      # comes back here labelled
        if op.once_differentiable and _grad_state.grad:
            saved = list(self._saved_tensors().values())
            with grad_mode.no_grad():
                res = self.apply(grads)
            return delayed_error(res, list(grads) + saved,
                                 f"the derivative for '{op.name}' is not implemented for double backward "
                                 f"({self._name} is only once differentiable)")
        saved = self._saved
        if saved:
            saved = self._saved_tensors()
        if len(grads) != 1 or grads[0] is None:
            for i, g in enumerate(grads):
                if g is None and i not in op.nondiff_outputs:
                    shape, dtype, device = self._out_meta[i]
                    grads = grads[:i] + (zeros(shape, dtype, device),) + grads[i + 1:]
        edges = self.next_functions
        n = len(edges)
        if n == 1:          # (the usual one or two inputs without a comprehension's frame)
            needs = (edges[0][0] is not None,)
        elif n == 2:
            needs = (edges[0][0] is not None, edges[1][0] is not None)
        else:
            needs = tuple([e[0] is not None for e in edges])
        ctx = Ctx(saved, self._attrs, needs, self._input_meta)
        try:
            res = op.backward(ctx, *grads)
        except RuntimeError as e:     # a rule reading a meta tensor's values on the host: again, reading zeros
            if not _meta_refusal(e, grads):
                raise
            res = _zero_reads(op.backward, ctx, *grads)
        if type(res) is not tuple:
            res = tuple(res) if isinstance(res, tuple) else (res,)
        if len(res) != n:
            raise RuntimeError(f"{self._name}: backward returned {len(res)} gradients, expected {n}")
        metas = self._input_meta
        i = 0
        for g in res:       # usually there is nothing to drop, sum back or cast
            if g is not None:
                meta = metas[i]
                if not needs[i] or g._shape != meta.shape or g.dtype is not meta.dtype:
                    return tuple([None if g is None or not need else
                                  g if g._shape == meta.shape and g.dtype is meta.dtype else _reduce_to(g, meta)
                                  for g, meta, need in zip(res, metas, needs)])
            i += 1
        return res


def _reduce_to(g, meta):
    """Sum a broadcast gradient back to the input's shape and cast to its dtype."""
    if g._shape != meta.shape:
        g = call("sum_to_size", g, size=meta.shape)
    if g.dtype._kind == 3 and meta.dtype._kind != 3:     # a real input's gradient: the real part (PyTorch)
        g = call("real", g)
    if g.dtype is not meta.dtype and (meta.dtype.is_floating_point or meta.dtype._kind == 3):
        g = g.to(meta.dtype)
    return g


def _tensors(args):
    return [a for a in args if isinstance(a, Tensor)]


def check_devices(op_name, tensors):
    """One device for all tensors, except 0-d cpu tensors (PyTorch's cpu scalars), which join any device."""
    dev = None
    for t in tensors:
        if t.dim() == 0 and t.device.type == "cpu":
            continue
        if dev is None:
            dev = t.device
        elif t.device != dev:
            if "meta" in (t.device.type, dev.type):
                raise RuntimeError(f"Tensor on device {t.device} is not on the expected device {dev}!")
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two "
                               f"devices, {dev} and {t.device}! (when checking arguments for {op_name})")


def _check_same_device(op_name, inputs):
    """check_devices(op_name, _tensors(inputs)) without building the list when all share one device object.

    Returns None, or ``inputs`` with 0-d cpu tensors copied to the others' device (PyTorch's cpu scalars:
    a kernel on a GPU cannot read host memory)."""
    dev = None
    for t in inputs:
        if isinstance(t, Tensor):
            d = t._storage.device
            if dev is None:
                dev = d
            elif d is not dev:
                check_devices(op_name, _tensors(inputs))
                return _scalars_moved(inputs)
    return None


def _scalars_moved(inputs):
    dev = next((t.device for t in inputs if isinstance(t, Tensor) and t.device.type != "cpu"), None)
    if dev is None:
        return None
    return tuple((t.to(dev) if t.requires_grad else scalar(t.item(), t.dtype, dev))    # scalar: no device wait
                 if isinstance(t, Tensor) and t.device.type == "cpu" and t.dim() == 0 else t for t in inputs)


def _needs_grad(op, inputs):
    return _grad_state.recording and op.backward is not None and _any_requires_grad(inputs)


def _any_requires_grad(inputs):
    for t in inputs:    # = t.requires_grad, inlined (no property call on the common non-view input)
        if t is not None and (t._requires_grad or t._view_mode is not None and t._base.requires_grad):
            return True
    return False


class _Spec:
    """What recording a node for an op entry needs, derived from the entry once (``_spec``)."""

    __slots__ = ("op", "cls", "n_inputs", "saves", "saved_inputs")

    def __init__(self, op):
        self.op = op
        self.cls = node_class(op.node) if op.node is not None else None
        self.n_inputs = None if op.inputs == _VARIADIC else len(op.inputs)
        # (key, is_result, index into the outputs or the inputs), in op.save's order
        self.saves = tuple((k, True, int(k[6:] or 0)) if k.startswith("result") else (k, False, op.inputs.index(k))
                           for k in op.save)
        self.saved_inputs = tuple(i for _, is_result, i in self.saves if not is_result)


_specs = {}     # Op -> _Spec (an entry's name, inputs, save and node never change; its rules may be patched)


def _spec(op):
    s = _specs.get(op)
    if s is None:
        s = _specs[op] = _Spec(op)
    return s


def _check_inference(spec, inputs):
    """Inference tensors may take part in a recorded op only if the op does not save them (only called
    when recording, so never in inference mode)."""
    for i in spec.saved_inputs:
        t = inputs[i]
        if t is not None and t._inference:
            raise RuntimeError(
                "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
                "inference mode in computation tracked by autograd. To work around this, you can make a "
                "clone to get a normal tensor and use it in autograd, or use `tgrad.no_grad()` instead of "
                "`tgrad.inference_mode()`.")


def call(name, *inputs, **attrs):
    if AUTOCAST is not None:
        inputs = AUTOCAST(name, inputs)
    op = _TABLE[name]
    if RECORD_FORWARD is not None:
        RECORD_FORWARD.add(name)
    spec = _specs.get(op) or _spec(op)
    if _CONJ_ALIVE[0] and not op.view and op is not _RESOLVE_CONJ and not op.reads_conj:
        inputs = _resolve_conj(inputs)
    n = spec.n_inputs
    ins = inputs if n is None or len(inputs) == n else inputs[:n]       # None: cat/stack, variadic
    if len(ins) > 1:
        moved = _check_same_device(name, ins)
        if moved is not None:
            inputs, ins = moved + inputs[len(moved):], moved
    needs = _grad_state.recording and op.backward is not None and _any_requires_grad(ins)
    if needs and spec.saved_inputs:
        _check_inference(spec, ins)
    try:
        out = _labelled(name, op.forward, *inputs, **attrs) if PROFILING else op.forward(*inputs, **attrs)
    except RuntimeError as e:     # (a bare raise: no frame holding the error, whose traceback holds the frame)
        if not _meta_refusal(e, ins) or op.name in _COPIES:
            raise
        out = _meta_forward(op, inputs, attrs)
    if op.view:
        mode = ("multi" if isinstance(out, tuple) else True) if grad_mode.is_grad_enabled() else False
        for o in (out if isinstance(out, tuple) else (out,)):
            if o._base is not None:
                o._view_mode = mode
    if needs:
        _record(spec, ins, attrs, out)
    return out


_RESOLVE_CONJ = _TABLE["resolve_conj"]


# ------------------------------------------------------------------ meta tensors
# On the meta device a forward runs as on any other: it checks its inputs and makes its outputs (a meta
# Storage allocates nothing) and its launches are skipped (kernels.runtime.launcher), so its outputs carry the
# shapes, dtypes and strides the op gives, and the graph is recorded as usual.  A forward that reads values
# on the host (a bounds check, a tie order, a host algorithm) hits the no-data error: it runs again reading
# zeros, unless the result's shape depends on the values (then PyTorch's error).

# ops whose result's shape depends on the values: name -> ATen's name in PyTorch's message (None: nonzero's)
DATA_DEPENDENT = {"nonzero": None, "masked_select": "masked_select", "unique": "_unique2",
                  "unique_consecutive": "unique_consecutive", "bincount": "bincount", "equal": "equal"}


_COPIES = ("to_device", "copy_")     # copying a meta tensor's values out raises (PyTorch's NotImplementedError)


def meta_unsupported(name):
    """PyTorch's NotImplementedError for op ``name`` (a key of DATA_DEPENDENT) on meta tensors."""
    return NotImplementedError(_meta.unsupported(DATA_DEPENDENT[name]))


def check_meta(name, *tensors):
    """Raise PyTorch's error for the data-dependent op ``name`` (not an op-table entry) if a tensor is meta."""
    if any(t._storage.device.type == "meta" for t in tensors) and not _meta.READS.zeros:
        raise meta_unsupported(name)


def _meta_forward(op, inputs, attrs, out=None):
    """``op``'s forward after it refused to read a meta input's values (or a nested data-dependent op did):
    PyTorch's error for a data-dependent op, else the forward again reading zeros (nested data-dependent ops
    too: their results do not leave the forward)."""
    if op.name in DATA_DEPENDENT:
        raise meta_unsupported(op.name) from None
    if out is None:
        return _zero_reads(op.forward, *inputs, **attrs)
    return _zero_reads(op.forward, out, *inputs, out=out, **attrs)


def _meta_refusal(err, tensors):
    """True when ``err`` refuses to read the values of a meta tensor (one of ``tensors`` is meta)."""
    return (bool(err.args) and type(err.args[0]) is str and err.args[0] in _meta.REFUSALS
            and any(isinstance(t, Tensor) and t._storage.device.type == "meta" for t in tensors))


def _zero_reads(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` with reads of meta memory giving zeros."""
    reads, outer = _meta.READS, _meta.READS.zeros
    reads.zeros = True
    try:
        return fn(*args, **kwargs)
    finally:
        reads.zeros = outer


def _resolve_conj(inputs):
    """Conjugate views among ``inputs`` replaced by their values (``resolve_conj``, recorded: CloneBackward0):
    every op but a view op reads values, never the stored conjugates."""
    for t in inputs:
        if getattr(t, "_is_conj", False):
            break
    else:
        return inputs
    return tuple(call("resolve_conj", t) if isinstance(t, Tensor) and t._is_conj else t for t in inputs)


def _make_node(spec, inputs, attrs):
    """``attrs``: a dict of the caller's own (a call's ``**attrs``), kept as is."""
    node = spec.cls()
    node.op = spec.op
    node.next_functions = tuple(map(edge_of, inputs))
    node._input_meta = tuple([InputMeta(t) if t is not None else None for t in inputs])
    if attrs:
        node._attrs = attrs
    return node


def _save(node, spec, inputs, outs, results_are_outputs=True, extra=None):
    """Save what the backward rule needs; ``result`` is saved as the node's own output; ``extra``: more
    tensors a forward made for the backward ({key: tensor})."""
    saved = {}
    cond = spec.op.save_if
    for key, is_result, i in spec.saves:
        if cond is not None and key in cond and not cond[key](node._attrs):
            continue
        if is_result:
            saved[key] = (SavedTensor(outs[i], output_nr=i, grad_fn=node) if results_are_outputs
                          else SavedTensor(outs[i]))
        elif inputs[i] is not None:
            saved[key] = SavedTensor(inputs[i])
    if extra:
        for key, t in extra.items():
            saved[key] = SavedTensor(t)
    if saved:
        node._saved = saved


def _record(spec, inputs, attrs, out):
    if type(out) is tuple:
        node = _make_node(spec, inputs, attrs)
        nondiff = spec.op.nondiff_outputs
        outs = out
        node._out_meta = tuple([(o._shape, o.dtype, o._storage.device) for o in out])
        for i, o in enumerate(out):
            if i not in nondiff and o.dtype._kind >= 2:    # (integer results never require grad)
                set_history(o, node, i)
    else:   # one output, the common case: _make_node and set_history written out (host time per op)
        node = spec.cls()
        node.op = spec.op
        if len(inputs) == 2:    # the usual two inputs without map's and a comprehension's frames
            a, b = inputs
            node.next_functions = (edge_of(a), edge_of(b))
            node._input_meta = (InputMeta(a) if a is not None else None, InputMeta(b) if b is not None else None)
        else:
            node.next_functions = tuple(map(edge_of, inputs))
            node._input_meta = tuple([InputMeta(t) if t is not None else None for t in inputs])
        if attrs:
            node._attrs = attrs
        outs = (out,)
        node._out_meta = ((out._shape, out.dtype, out._storage.device),)
        if 0 not in spec.op.nondiff_outputs and out.dtype._kind >= 2:
            out._requires_grad = True
            out._grad_fn = node
            out._output_nr = 0
            out._grad_fn_version = out._version_counter[0]
    extra = outs[0].__dict__.pop("_forward_saved", None)
    if spec.saves or extra:
        _save(node, spec, inputs, outs, extra=extra)


# ------------------------------------------------------------------ Python numbers as kernel arguments
_FLT_MAX = 3.4028234663852886e38
_scalar_forward = _ops.elementwise.scalar_forward


def _scalar_arg(self, value):
    """``value`` (a Python int or float) as the fp32 kernel argument of ``self <op> value``, or None when the op
    must wrap it as a 0-dim tensor: a graph may be recorded (the node saves that tensor), autocast, op recording,
    an AOT recording or profiling is on, ``self`` is not a float32 cpu tensor, or fp32 would not hold ``value`` as the 0-dim
    float32 operand does (beyond fp32's range, NaN, or an int past 2**53).  Same result dtype (float32) and bits."""
    t = type(value)
    if t is float:
        if not -_FLT_MAX <= value <= _FLT_MAX:
            return None
    elif t is int:
        if not -9007199254740992 <= value <= 9007199254740992:
            return None
        value = float(value)
    else:
        return None
    if (self.dtype is not _D.float32 or AUTOCAST is not None or RECORD_FORWARD is not None or PROFILING
            or self._storage.launch_device != "cpu" or _launcher.FORCE_GPU_BLOCKS):
        return None     # (FORCE_GPU_BLOCKS: an AOT recording on cpu launches what cuda would: the 0-dim operand)
    if _grad_state.recording and (self._requires_grad or self._view_mode is not None and self._base.requires_grad):
        return None
    return value


def call_scalar(name, self, value):
    """``self <name> value`` for op ``name`` in ("add", "sub", "rsub", "mul", "div") with alpha 1 and no rounding
    mode, when ``value`` can be a kernel argument (``_scalar_arg``); else None (the caller wraps it)."""
    v = _scalar_arg(self, value)
    if v is None:
        return None
    return _scalar_forward(name, self, v)


def call_inplace_scalar(name, self, value):
    """``self.<name>_(value)`` as ``call_scalar``, or None: PyTorch's in-place checks, then the version moves."""
    v = _scalar_arg(self, value)
    if v is None:
        return None
    _check_inplace(_TABLE[name], self, (self,), False)
    _scalar_forward(name, self, v, self)
    self._version_counter[0] += 1
    return self


# ------------------------------------------------------------------ in-place
def _check_inplace(op, t, ins, needs, writes=True):
    """PyTorch's refusals of ``t.op_(...)``; ``writes``: the op writes t's elements (not a view op like t_)."""
    if needs and t._view_mode is False:
        raise RuntimeError(
            "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given "
            "that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by "
            "moving both the view and the inplace either both inside the no_grad block (if you don't want "
            "the inplace to be tracked) or both outside (if you want the inplace to be tracked).")
    if needs and t._view_mode == "multi" and t.grad_fn is not None:
        raise RuntimeError(
            f"Output {t._output_nr} of {_op_name(t.grad_fn)} is a view and is being modified inplace. "
            "This view is the output of a function that returns multiple views. Such functions do not allow "
            "the output views to be modified inplace. You should replace the inplace operation by an "
            "out-of-place one.")
    if writes and 0 in t._strides and any(st == 0 and sz > 1 for sz, st in zip(t._shape, t._strides)):
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                           "single memory location. Please clone() the tensor before performing the operation.")
    if t._inference and not grad_mode.is_inference_mode_enabled():
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed.You can "
                           "make a clone to get a normal tensor before doing inplace update.See "
                           "https://github.com/pytorch/rfcs/pull/17 for more details.")
    if grad_mode.is_grad_enabled():
        if t._view_mode is None:
            if t.requires_grad and t.grad_fn is None:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        elif t._base.requires_grad and t._base.grad_fn is None:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
    if needs:
        _check_inference(_spec(op), ins)


def _original_self(op, t):
    """The value of ``t`` before the op overwrites it, if the backward rule needs it (a recorded clone,
    so that double backward still reaches t's history)."""
    return t.clone() if "self" in op.save else t


def _rebase(t, node):
    """Give ``t`` a new grad_fn after an in-place op; retain_grad follows, earlier tensor hooks stay."""
    old = t._grad_fn
    set_history(t, node, 0)
    if old is None:
        return
    if t._retains_grad:
        old.__dict__.get("_retain_refs", {}).pop(id(t), None)
        node.__dict__.setdefault("_retain_refs", {})[id(t)] = (0, weakref.ref(t))
    t._tensor_hooks = {}


def add_into(dst, src):
    """``dst.add_(src)`` with grad mode off, as AccumulateGrad sums a gradient into an existing ``.grad``: the
    same launch (add_forward's, out=dst) and version bump without the dispatcher's general path.  False, and
    nothing done, unless both are plain tensors of one shape, dtype and device and dst is a normal tensor
    with no broadcast (0-stride) dims, outside a profile or op recording: then the caller runs ``dst.add_(src)``."""
    if (type(dst) is not Tensor or type(src) is not Tensor or dst._shape != src._shape or dst.dtype is not src.dtype
            or dst._storage.device is not src._storage.device or 0 in dst._strides or dst._inference
            or PROFILING or RECORD_FORWARD is not None or not dst.dtype.is_floating_point or _grad_state.grad):
        return False
    _add_noalpha(dst, src, dst)
    dst._version_counter[0] += 1
    return True


def _add_noalpha(x, y, out):
    _binary_kernel(_add_noalpha_fn, x, y, out, *_ALPHA_ONE)


_binary_kernel = _ops.elementwise.K.binary
_add_noalpha_fn = _ops.elementwise.K.add_noalpha_fn
_ALPHA_ONE = _ops.elementwise._ALPHA_ONE


def _plain_inplace(op, self, inputs):
    """True when ``self.op_(*inputs)`` records nothing and passes every check of ``_check_inplace``: self a
    plain tensor, no view, no inference tensor, no broadcast (0-stride) dims, no leaf requiring grad in grad mode,
    nothing requiring grad while recording, all tensor inputs on self's device object; no profile or op
    recording.  ``call_inplace`` then only runs the forward and bumps the version (host time per op)."""
    if (type(self) is not Tensor or self._view_mode is not None or self._inference or 0 in self._strides
            or PROFILING or RECORD_FORWARD is not None):
        return False
    if self._requires_grad and _grad_state.grad:
        return False
    rec = _grad_state.recording
    dev = self._storage.device
    n = len(op.inputs) - 1
    for t in inputs:
        if n == 0:
            break
        n -= 1
        if isinstance(t, Tensor) and (t._storage.device is not dev or rec and t.requires_grad):
            return False
    return True


def call_inplace(name, self, *inputs, **attrs):
    """``self.<name>_(*inputs)``: compute into self, bump its version, rebase its grad_fn."""
    op = _ops.TABLE[name]
    if _CONJ_ALIVE[0]:
        inputs = _resolve_conj(inputs)
        if self._is_conj:
            return _inplace_on_conj(name, self, inputs, attrs)
    if _plain_inplace(op, self, inputs):
        try:
            op.forward(self, *inputs, out=self, **attrs)
        except RuntimeError as e:
            if not _meta_refusal(e, (self,) + tuple(inputs)) or op.name in _COPIES:
                raise
            _meta_forward(op, inputs, attrs, out=self)
        self._version_counter[0] += 1
        return self
    if RECORD_FORWARD is not None:
        RECORD_FORWARD.add(name)
    others = list(inputs[:len(op.inputs) - 1])
    ins = [self] + others
    dev = self._storage.device
    for t in others:
        if isinstance(t, Tensor) and t._storage.device is not dev:     # (one device object: nothing to check)
            if name == "copy_":     # copies across devices (its forward)
                break
            check_devices(name, _tensors(ins))
            if self.device.type != "cpu":
                moved = _scalars_moved(ins)
                if moved is not None:
                    others = list(moved[1:])
                    inputs = tuple(others) + tuple(inputs[len(others):])
                    ins = [self] + others
            break
    needs = _needs_grad(op, ins)
    _check_inplace(op, self, ins, needs)
    if needs:
        if self._view_mode:
            return _inplace_on_view(op, self, inputs, others, attrs)
        old_edge = edge_of(self)
        old_self = _original_self(op, self)
    if PROFILING:
        _labelled(name, op.forward, self, *inputs, out=self, **attrs)
    else:
        try:
            op.forward(self, *inputs, out=self, **attrs)
        except RuntimeError as e:
            if not _meta_refusal(e, (self,) + tuple(inputs)) or op.name in _COPIES:
                raise
            _meta_forward(op, inputs, attrs, out=self)
    self._version_counter[0] += 1
    if needs:
        node = _make_node(_spec(op), [old_self] + others, attrs)
        node.next_functions = (old_edge,) + node.next_functions[1:]
        node._out_meta = ((tuple(self.shape), self.dtype, self.device),)
        _rebase(self, node)
        _save(node, _spec(op), [old_self] + others, (self,))
    return self


def _inplace_on_conj(name, self, inputs, attrs):
    """``self.<name>_(...)`` on a conjugate view writes through it, as PyTorch's: the result's conjugates go to
    the shared memory.  With a gradient to track, recorded as PyTorch does: r = op(self) out of place, then
    conj(r) copied into the plain view self.conj() of the same memory (CopySlices on the base)."""
    op = _ops.TABLE[name]
    if _needs_grad(op, [self] + list(inputs[:len(op.inputs) - 1])):
        _check_inplace(op, self, [self] + list(inputs[:len(op.inputs) - 1]), True)
        r = call(name, self, *inputs, **attrs)
        self.conj().copy_(r.conj())
        return self
    _check_inplace(op, self, [self], False)
    r = call(name, self, *inputs, **attrs)
    raw = self._view_of(self._shape, self._strides)
    raw._is_conj = False
    _ops.complex.KC.unary(_ops.complex.KC.CONJ, r, raw)
    self._version_counter[0] += 1
    return self


def call_inplace_view(name, self, **attrs):
    """``self.t_()``, ``self.unsqueeze_(0)``, ...: ``self`` takes the geometry of the view op ``name`` of
    itself (no element moves); its version moves and, when recorded, its grad_fn becomes that op's node
    (``TBackward1``), whose input is self's previous history."""
    op = _ops.TABLE[name]
    needs = _needs_grad(op, [self])
    _check_inplace(op, self, [self], needs, writes=False)
    out = call(name, self, **attrs)
    self._shape, self._strides, self._offset = out._shape, out._strides, out._offset
    self._version_counter[0] += 1
    if needs:     # unlike _rebase, retain_grad and hooks stay on the old node (PyTorch: old-shaped gradients)
        set_history(self, out._grad_fn, 0)
    return self


class CopySlices(Node):
    """grad_fn of a base after an in-place op on one of its views.

    Input 0 is the base before the op; the others are the op's other inputs.
    Backward: the view region of the incoming gradient goes through the op's
    backward (``fn``); the rest of it passes to the old base unchanged.
    """

    _name = "torch::autograd::CopySlices"     # PyTorch's name(); the repr says <CopySlices ...>

    def __init__(self, base, view, fn, base_edge):
        super().__init__()
        self.fn = fn
        self.next_functions = (base_edge,) + fn.next_functions[1:]
        self._base_geom = (tuple(base.shape), base.stride(), base.storage_offset())
        self._view_geom = (tuple(view.shape), view.stride(), view.storage_offset())
        self._out_meta = ((tuple(base.shape), base.dtype, base.device),)

    def apply(self, grads):
        g = grads[0]
        if g is None:
            return (None,) * len(self.next_functions)
        grad_slice = call("restride", g, src_geom=self._base_geom, dst_geom=self._view_geom)
        res = self.fn.apply((grad_slice,))
        result = None
        if self.next_functions[0][0] is not None:
            g0 = res[0] if res[0] is not None else grad_slice.mul(0)
            result = call("copy_slices", g, g0, self_geom=self._base_geom, src_geom=self._view_geom)
        return (result,) + tuple(res[1:])

    def _release(self):
        self.fn._release()
        super()._release()


def _inplace_on_view(op, view, inputs, others, attrs):
    base = view._base
    old_view_edge = edge_of(view)
    old_view = _original_self(op, view)
    base_edge = edge_of(base)
    if PROFILING:
        _labelled(op.name, op.forward, view, *inputs, out=view, **attrs)
    else:
        try:
            op.forward(view, *inputs, out=view, **attrs)
        except RuntimeError as e:
            if not _meta_refusal(e, (view,) + tuple(inputs)) or op.name in _COPIES:
                raise
            _meta_forward(op, inputs, attrs, out=view)
    view._version_counter[0] += 1
    fn = _make_node(_spec(op), [old_view] + others, attrs)
    fn.next_functions = (old_view_edge,) + fn.next_functions[1:]
    fn._out_meta = ((tuple(view.shape), view.dtype, view.device),)
    _save(fn, _spec(op), [old_view] + others, (view,), results_are_outputs=False)
    _rebase(base, CopySlices(base, view, fn, base_edge))
    _rebase(view, _as_strided_node(base, view))
    return view


def _as_strided_node(base, view):
    """``AsStridedBackward0`` taking ``base`` to ``view``'s geometry."""
    attrs = {"size": tuple(view.shape), "stride": view.stride(), "storage_offset": view.storage_offset()}
    node = _make_node(_spec(_ops.TABLE["as_strided"]), [base], attrs)
    node._out_meta = ((tuple(view.shape), view.dtype, view.device),)
    return node


def refresh_view_grad_fn(view):
    """Called by ``Tensor.grad_fn`` when a view's version moved since its grad_fn was set: the base (or
    another view of it) was modified in place, so the view's history is now its base's."""
    view._grad_fn_version = view._version_counter[0]
    if view._view_mode and view._base.requires_grad:
        if view._is_conj:       # a conjugate view: ConjBackward0 over the plain view of the base (PyTorch's node)
            with grad_mode.enable_grad():
                plain = call("as_strided", view._base, size=tuple(view.shape), stride=view.stride(),
                             storage_offset=view.storage_offset())
                _rebase(view, call("conj", plain)._grad_fn)
            return
        _rebase(view, _as_strided_node(view._base, view))
