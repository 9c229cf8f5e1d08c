"""THE op table: op name -> (forward, backward, grad_fn name, saved values).

Each family module (``elementwise``, ``reduce``, ...) holds its forward
functions (launch Triton kernels, no autograd), its backward rules (written
with tgrad ops, so they are differentiable again) and a list ``ENTRIES``;
this file puts the lists together explicitly.  Nothing registers itself.

Contract of an entry (see ``Op``):

- ``forward(*inputs, **attrs)`` -> Tensor or tuple of Tensors; inputs are
  Tensors (or None for optional ones) already on one device; attrs keyword-only.
- ``backward(ctx, *grad_outputs)`` -> one gradient (or None) per input, of the
  broadcast shape; the engine sums it back to each input's shape, casts to its
  dtype, accumulates and pads ``None``.
- ``node``: the grad_fn class name PyTorch uses; ``save``: which inputs /
  ``result`` the backward needs (exposed as ``grad_fn._saved_<name>``; attrs
  are exposed the same way); ``meta``: the input geometry PyTorch's node also
  exposes, from the metadata every node keeps (``"self_sym_sizes"`` is
  ``grad_fn._saved_self_sym_sizes``; ``_sym_strides`` and ``_sym_numel`` too).
- ``variants``: the public forms of the op under its own name, as PyTorch's ``native_functions.yaml``
  declares them: ``"method"`` (``Tensor.<name>``), ``"function"`` (``tgrad.<name>``); ``()`` for an
  internal op.  ``inplace``: ``Tensor.<name>_`` exists.  tests/test_api_surface.py holds the package to it.
"""
import math

import numpy as np

from .. import tensor as _tensor
from .._state import state as _grad_state
from ..tensor import empty


class Op:
    __slots__ = ("name", "forward", "backward", "node", "inputs", "save", "outputs",
                 "nondiff_outputs", "view", "once_differentiable", "meta", "variants", "inplace", "save_if",
                 "reads_conj")

    def __init__(self, name, forward, backward=None, node=None, inputs=("self",), save=(), outputs=1,
                 nondiff_outputs=(), view=False, once_differentiable=False, meta=(), variants=(), inplace=False,
                 save_if=None, reads_conj=False):
        self.name = name
        self.forward = forward
        self.backward = backward
        self.node = node
        self.inputs = tuple(inputs)
        self.save = tuple(save)
        self.outputs = outputs
        self.nondiff_outputs = tuple(nondiff_outputs)
        self.view = view
        self.once_differentiable = once_differentiable
        self.meta = tuple(meta)
        self.variants = tuple(variants)
        self.inplace = inplace
        # {saved key: predicate(attrs)}: that key is saved only when the call's attrs satisfy it (linear keeps
        # its output only for a fused activation, so an in-place op on a plain linear's output stays legal)
        self.save_if = save_if
        # the forward reads a conjugate view's values itself (PyTorch's fft kernels take the conj bit): the
        # dispatcher passes it unresolved, so no CloneBackward0 is recorded before the op's node
        self.reads_conj = reads_conj

    def __repr__(self):
        return f"Op({self.name!r}, node={self.node!r})"


def implicit_seed(grad):
    """True if ``grad`` is loss.backward()'s unmodified implicit seed (a host copy of 1, made by the engine)
    and no graph is recorded: a backward rule may then use a constant it already knows for grad = 1."""
    if not grad.__dict__.get("_implicit_seed", False) or grad._version_counter[0] != 0:
        return False
    return not _grad_state.grad


def call(name, *args, **attrs):
    """Run op ``name`` through the dispatcher, as backward rules do for table-only ops, so that under
    ``create_graph`` they record a graph.  The dispatcher sits above the table; the table reaches it
    through Tensor's one upward seam (``tgrad.tensor._call``), looked up when called."""
    return _tensor._call(name, *args, **attrs)


_HOST_FULL = {}     # host_constant's key -> (read-only numpy array, its address, its bytes)


def host_full(shape, value, dtype, device, broadcast=False):
    """A new contiguous tensor of ``shape`` holding ``value`` (a Python number, rounded to ``dtype`` as
    numpy does), copied from a cached host array: no kernel launch (the engine's implicit seed, mean's
    backward of it).  ``broadcast``: only one element is copied, which every element reads (strides 0)."""
    src = () if broadcast else shape
    # -0.0 == 0.0, but not as a fill value: a zero's key holds its sign
    key = (src, dtype, value) if value else (src, dtype, value, math.copysign(1.0, value))
    t = host_constant(key, lambda: np.full(src, value, dtype.np), dtype, device)
    if broadcast:           # t is new and nobody else has seen it
        t._shape, t._strides = tuple(shape), (0,) * len(shape)
    return t


def host_constant(key, make, dtype, device):
    """A new contiguous tensor copied from the contiguous host array ``make()`` (of ``dtype``'s numpy type), kept
    read-only under ``key``: its values must be a function of ``key``, so tgrad.compile may replay the copy."""
    c = _HOST_FULL.get(key)
    if c is None:
        a = make()
        a.setflags(write=False)
        if len(_HOST_FULL) >= 1024:
            _HOST_FULL.clear()
        c = _HOST_FULL[key] = (a, a.ctypes.data, a.nbytes)
    t = empty(c[0].shape, dtype, device)
    if c[2]:
        st = t._storage     # a fresh block of c[2] bytes: no range check needed
        st.allocator.backend.memcpy_htod(st.ptr, c[1], c[2])
    return t


from . import (activation, amp, as_strided, attention, compare, complex, conv, elementwise, fft, index,  # noqa: E402
               linalg, loss, matmul, nn, norm, optim, pool, random, reduce, rnn, scan, segment,  # (they import Op)
               shape, softmax, sort, sparse, special, unary)


def _build():
    table = {}
    for family in (elementwise, unary, activation, compare, reduce, shape, as_strided, index, optim, softmax, loss,
                   norm, nn, matmul, conv, pool, rnn, sort, random, attention, amp, linalg, scan, segment, sparse,
                   special, complex, fft):
        for op in family.ENTRIES:
            if op.name in table:
                raise RuntimeError(f"op {op.name!r} defined twice")
            table[op.name] = op
    return table


TABLE = _build()
