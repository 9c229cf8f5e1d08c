"""The backward engine: iterative, dependency-counted, runs in the calling thread.

1. Walk the graph from the roots (iteratively) and count, for every node, how
   many edges lead into it.
2. Process nodes whose gradients are complete, in order of decreasing
   ``_priority`` among the ready ones (like PyTorch's ready queue: ready
   AccumulateGrad nodes first, then the latest created); sum the
   gradients that arrive for the same (node, input_nr).
3. Leaves receive their gradient through their ``AccumulateGrad`` node
   (which takes a first gradient over without a copy when nobody else holds
   it: the engine keeps no reference to a gradient once it handed it on);
   ``autograd.grad`` instead captures the gradients flowing into the requested
   inputs and does not touch ``.grad``.

Before a node runs: hooks registered on the tensors it produced
(``Tensor.register_hook``), then ``retain_grad`` captures, then the node's
own pre-hooks; after it: its post-hooks.  A requested input's node that
does not run (``autograd.grad``) still runs the first two before its
gradient is captured; one that runs captures first (PyTorch's order).
Unless ``retain_graph``, every node's saved tensors are released once it
ran, so their memory returns to the allocator.

A ReluBackward0 right after a ``linear`` node is folded into that node's
backward when nothing can observe the gradient in between (``_fold_target``;
one launch less per hidden layer, issue #6).

The implicit gradient of a scalar output (``loss.backward()``) is a 1 copied
from the host (no kernel launch) and is marked ``g._implicit_seed = True``:
while its version counter is 0 it still holds exactly 1, so a backward rule
that receives it with grad mode off may return a gradient it already
computed in forward (cross-entropy does).  The mark is dropped when the seed
becomes a leaf's ``.grad``.
"""
import heapq
import os
import threading
import warnings

import numpy as np

from ..kernels.elementwise import fill
from ..ops import host_full
from ..tensor import Tensor, empty_like, from_host
from . import anomaly, grad_mode
from .graph import AccumulateGrad, edge_of, run_tensor_hooks


def _make_grads(outputs, grad_outputs):
    """The gradient fed into each output: given (cast to its dtype), or ones for a scalar."""
    res = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if g is None:       # (run_backward checked that every output requires grad)
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            dt = out.dtype
            if not dt.is_floating_point:
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {dt}")
            g = host_full(out._shape, 1, dt, out._storage.device)
            g._implicit_seed = True         # a copy from the host, no kernel launch (issue #6)
        else:
            if not isinstance(g, Tensor):
                g = from_host(np.asarray(g), out.dtype, out.device)
            if tuple(g.shape) != tuple(out.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and "
                                   f"output[{i}] has a shape of {out.shape}.")
            if g.dtype is not out.dtype:
                g = g.to(out.dtype)
        res.append(g)
    return res


def run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs=None, allow_unused=False,
                 accumulate=True):
    """Shared by Tensor.backward / autograd.backward (accumulate=True) and autograd.grad (False).

    Returns, when ``inputs`` is given, the gradient that reached each of them (None if none did).
    """
    for i, o in enumerate(outputs):
        if not o.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
    if retain_graph is None:
        retain_graph = create_graph
    grads = _make_grads(outputs, grad_outputs)
    roots = [(edge_of(o), g) for o, g in zip(outputs, grads)]

    # targets for autograd.grad / backward(inputs=...): (node, input_nr) -> positions in inputs
    capture = {}
    captured = []
    capture_nodes = ()
    if inputs is not None:
        for i, t in enumerate(inputs):
            if not t.requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            capture.setdefault(edge_of(t), []).append(i)
        captured = [None] * len(inputs)
        capture_nodes = {k[0] for k in capture}

    # 1. dependencies: node -> number of edges leading into it (nodes are keyed by identity; the roots
    # start at 0); a node is walked when first reached
    deps = {node: 0 for (node, _), _ in roots if node is not None}
    stack = list(deps)
    pop, push = stack.pop, stack.append
    while stack:
        for nxt, _ in pop().next_functions:
            if nxt is not None:
                if nxt in deps:
                    deps[nxt] += 1
                else:
                    deps[nxt] = 1
                    push(nxt)
    needed = None       # the nodes to run, unless all of them
    if inputs is not None or not accumulate:
        needed = _nodes_leading_to(deps, capture)
        if accumulate:
            needed.update(n for n, _ in capture if isinstance(n, AccumulateGrad))

    # 2. run nodes whose gradients are complete
    buffers = {}        # node -> [gradient or None per output]
    ready = []          # heap of (-priority, node): priorities are unique
    heappush, heappop = heapq.heappush, heapq.heappop
    for (node, nr), g in roots:
        if node is not None:
            first = node not in buffers
            _add_grad(buffers, node, nr, g)
            if first and not deps[node]:
                heappush(ready, (-node._priority, node))
    # From here on a gradient is referenced only by ``buffers`` (and ``captured``) between nodes, so that
    # AccumulateGrad can tell whether anyone else holds it (see AccumulateGrad._accumulate).
    roots = grads = g = None

    anomaly_state = anomaly._state
    fold = FOLD_RELU_INTO_LINEAR and not create_graph and not anomaly_state.enabled
    folded = {}     # linear node -> the relu output whose mask its backward applies (_fold_target)

    grad_was = grad_mode._state.grad
    grad_mode._set_grad(create_graph)
    try:
        while ready:
            node = heappop(ready)[1]
            gin = buffers.pop(node, None) or [None] * (len(node._out_meta) or 1)
            run = needed is None or node in needed
            if capture:
                if not run and node in capture_nodes:
                    _run_tensor_pre_hooks(node, gin)    # a node that runs calls them after the capture (PyTorch)
                _capture(node, gin, capture, captured)
            if fold and run and node._name == "ReluBackward0":
                lin = _fold_target(node, gin, deps, buffers, needed, capture)
            else:
                lin = None
            if lin is not None:         # relu's backward is left to the linear node below it
                folded[lin] = node._saved_tensors()["result"]
                if not retain_graph:
                    node._release()
                outs = (gin[0],)
            elif run:       # hooks, then the node's backward
                if node._tensor_pre_hooks or node._retain_refs:     # (an AccumulateGrad has none: it runs its
                    _run_tensor_pre_hooks(node, gin)                # variable's hooks itself)
                if node._pre_hooks:
                    gin = _run_pre_hooks(node, gin)
                if isinstance(node, AccumulateGrad):
                    node._accumulate(gin)   # gin (the engine's only reference) is emptied: the grad may be stolen
                    continue
                if not gin or gin[0] is None and _all_none(gin):
                    outs = (None,) * len(node.next_functions)
                else:
                    try:
                        outs = (node.apply(tuple(gin)) if not folded or node not in folded else
                                _apply_folded(node, gin, folded.pop(node)))
                        if anomaly_state.enabled:
                            anomaly.check_nan(node, outs)
                    except Exception:
                        if node._anomaly_trace is not None:
                            anomaly.report(node)
                        raise
                if node._hooks:
                    outs = _run_post_hooks(node, outs, gin)
                if not retain_graph:
                    node._release()
            else:
                outs = (None,) * len(node.next_functions)    # nodes not run keep their saved tensors
            gin = None
            for (nxt, nr), g in zip(node.next_functions, outs):
                if nxt is None:
                    continue
                if g is not None:
                    if nr == 0 and nxt not in buffers and len(nxt._out_meta) <= 1:
                        buffers[nxt] = [g]      # _add_grad's first gradient of a one-output node
                    else:
                        _add_grad(buffers, nxt, nr, g)
                left = deps[nxt] - 1
                deps[nxt] = left
                if not left:
                    heappush(ready, (-nxt._priority, nxt))
            outs = g = None
    finally:
        grad_mode._set_grad(grad_was)
    if inputs is not None and not allow_unused:
        for i, g in enumerate(captured):
            if g is None:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in "
                                   "the graph. Set allow_unused=True if this is the desired behavior.")
    return captured


def _add_grad(buffers, node, nr, g):
    """Sum ``g`` into the gradient buffered for output ``nr`` of ``node``."""
    buf = buffers.get(node)
    if buf is None:
        n = len(node._out_meta)
        if n <= 1 and nr == 0:
            buffers[node] = [g]
            return
        buf = buffers[node] = [None] * max(n, nr + 1)
    elif nr >= len(buf):
        buf.extend([None] * (nr + 1 - len(buf)))
    prev = buf[nr]
    buf[nr] = g if prev is None else prev + g


def _capture(node, gin, capture, captured):
    """autograd.grad / inputs=: keep the gradients flowing into the requested (node, input_nr)."""
    for i, g in enumerate(gin):
        for pos in capture.get((node, i), ()) if g is not None else ():
            captured[pos] = g if captured[pos] is None else captured[pos] + g


def _nodes_leading_to(nodes, capture):
    """The nodes whose backward must run: some captured (node, nr) lies below them."""
    targets = {k[0] for k in capture}
    memo = {}
    for root in nodes:
        stack = [(root, False)]
        while stack:
            n, done = stack.pop()
            if n in memo:
                continue
            if done:
                memo[n] = any(m is not None and (m in targets or memo.get(m, False)) for m, _ in n.next_functions)
                continue
            stack.append((n, True))
            for m, _ in n.next_functions:
                if m is not None and m not in memo:
                    stack.append((m, False))
    return {k for k, v in memo.items() if v}


FOLD_RELU_INTO_LINEAR = True


def _has_hooks(node):
    return bool(node._pre_hooks or node._hooks or node._retain_refs
                or any(hooks for _, hooks in node._tensor_pre_hooks.values()))


def _fold_target(node, gin, deps, buffers, needed, capture):
    """The linear node into whose backward this ReluBackward0 may be folded, else None.

    Why (issue #6, launches per training step): for ``relu(linear(x, W, b))``
    the linear backward kernels can apply relu's mask (v > 0, v the relu
    output) to the gradient as they load it, so relu's own
    ``where(v > 0, g, 0)`` launch is saved.  Only when nothing can observe the
    gradient in between: h = linear(...) has no other gradient coming
    (``deps`` 1, nothing buffered), no hooks or retain_grad on either node,
    h is not a requested input, and grad mode and anomaly mode are off
    (checked by the caller).  ``FOLD_RELU_INTO_LINEAR = False`` turns it off.
    """
    op = node.__dict__.get("op")        # OpNodes only (getattr would raise and catch in other nodes)
    if op is None or op.name != "relu" or len(node.next_functions) != 1 or gin[0] is None:
        return None
    lin, nr = node.next_functions[0]
    lop = lin.__dict__.get("op")
    if lop is None or lop.name != "linear" or lin._attrs.get("activation") is not None:
        return None
    meta = node._input_meta[0]
    if (deps.get(lin) != 1 or lin in buffers or (lin, nr) in capture
            or (needed is not None and lin not in needed) or node._released or lin._released
            or _has_hooks(node) or _has_hooks(lin)
            or gin[0].dtype is not meta.dtype or tuple(gin[0].shape) != meta.shape):
        return None
    return lin


_fold_lock = threading.Lock()


def _reset_lock_in_child():
    global _fold_lock
    _fold_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_lock_in_child)


def _apply_folded(node, gin, relu_output):
    """A linear node's backward with relu's mask applied to the incoming gradient (``_fold_target``);
    the rule reads ``relu_output`` from its attrs (locked: two threads may run backward on one graph)."""
    with _fold_lock:
        attrs = node._attrs
        node._attrs = dict(attrs, relu_output=relu_output)
        try:
            return node.apply(tuple(gin))
        finally:
            node._attrs = attrs


def _run_tensor_pre_hooks(node, gin):
    """Hooks registered on the tensors ``node`` produced (``Tensor.register_hook``; a leaf's hooks are its
    AccumulateGrad's), then ``retain_grad`` captures; ``gin`` is updated in place."""
    if isinstance(node, AccumulateGrad):
        if gin and gin[0] is not None:
            gin[0] = run_tensor_hooks(node.variable._tensor_hooks, gin[0])
        return
    for out_nr, hooks in list(node._tensor_pre_hooks.values()):
        if gin[out_nr] is not None:
            gin[out_nr] = run_tensor_hooks(hooks, gin[out_nr])
    for out_nr, ref in list(node._retain_refs.values()):
        t = ref()
        g = gin[out_nr]
        if t is not None and g is not None:
            t._grad = g.clone() if t._grad is None else t._grad + g


def _all_none(gs):
    for g in gs:
        if g is not None:
            return False
    return True


def _run_pre_hooks(node, gin):
    for hook in list(node._pre_hooks.values()):
        r = hook(tuple(gin))
        if r is not None:
            gin = list(r)
    return gin


def _run_post_hooks(node, outs, gin):
    for hook in list(node._hooks.values()):
        r = hook(tuple(outs), tuple(gin))
        if r is not None:
            outs = tuple(r)
    return outs


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None):
    """``tgrad.autograd.backward``: accumulate d(sum of tensors * grad_tensors)/d(leaf) into ``.grad``."""
    if grad_variables is not None:
        grad_tensors = grad_variables
    tensors = (tensors,) if isinstance(tensors, Tensor) else tuple(tensors)
    if grad_tensors is None:
        grad_tensors = [None] * len(tensors)
    elif isinstance(grad_tensors, Tensor):
        grad_tensors = [grad_tensors]
    else:
        grad_tensors = list(grad_tensors)
    if inputs is not None:
        inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
        if len(inputs) == 0:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    if create_graph:
        warnings.warn("Using backward() with create_graph=True will create a reference cycle between the parameter "
                      "and its gradient which can cause a memory leak. We recommend using autograd.grad when "
                      "creating the graph to avoid this. If you have to use this function, make sure to reset the "
                      ".grad fields of your parameters to None after use to break the cycle and avoid the leak.",
                      UserWarning, stacklevel=3)
    for t in inputs or ():
        if t.grad_fn is not None:
            t.retain_grad()     # non-leaf inputs get their gradient in .grad (PyTorch does the same)
    run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs=inputs, allow_unused=True,
                 accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """``tgrad.autograd.grad``: gradients of ``outputs`` w.r.t. ``inputs``, returned as a tuple."""
    if is_grads_batched:
        raise NotImplementedError("autograd.grad(is_grads_batched=True) is not supported")
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                      "gradient for other parts of the graph, please use torch.autograd.backward.", stacklevel=2)
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but "
                         "got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs]
    res = run_backward(outputs, list(grad_outputs), retain_graph, create_graph, inputs=inputs,
                       allow_unused=allow_unused, accumulate=False)
    if materialize_grads:
        res = [fill(empty_like(t), 0) if g is None else g for t, g in zip(inputs, res)]
    return tuple(res)
