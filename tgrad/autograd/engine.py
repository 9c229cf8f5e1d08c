"""The backward engine: iterative, dependency-counted, runs in the calling thread.

1. Walk the graph from the roots (iteratively) and count, for every node, how
   many edges lead into it.
2. Process nodes whose gradients are complete, in order of decreasing
   sequence number among the ready ones (like PyTorch's ready queue); sum the
   gradients that arrive for the same (node, input_nr).
3. Leaves receive their gradient through their ``AccumulateGrad`` node;
   ``autograd.grad`` instead captures the gradients flowing into the requested
   inputs and does not touch ``.grad``.

Unless ``retain_graph``, every node's saved tensors are released after it
ran, so their memory returns to the allocator.
"""
import heapq
import threading

from . import anomaly, grad_mode
from .graph import AccumulateGrad, accumulator_for

_local = threading.local()


def _make_grads(outputs, grad_outputs):
    from .. import creation
    res = []
    for out, g in zip(outputs, grad_outputs):
        if g is None:
            if out.requires_grad:
                if out.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not out.dtype.is_floating_point:
                    raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got "
                                       f"{out.dtype}")
                g = creation.ones_like(out)
        else:
            from ..tensor import Tensor
            if not isinstance(g, Tensor):
                g = creation.tensor(g, dtype=out.dtype, device=out.device)
            if tuple(g.shape) != tuple(out.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {g.shape} and "
                                   f"output[0] has a shape of {out.shape}.")
        res.append(g)
    return res


def _root_edge(t):
    from .graph import edge_of
    return edge_of(t)


def run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs=None, allow_unused=False,
                 accumulate=True):
    """Shared by Tensor.backward / autograd.backward (accumulate=True) and autograd.grad (False)."""
    for o in outputs:
        if not o.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
    if retain_graph is None:
        retain_graph = create_graph
    grads = _make_grads(outputs, grad_outputs)
    roots = [(_root_edge(o), g) for o, g in zip(outputs, grads)]

    # targets for autograd.grad / backward(inputs=...): edge -> position
    capture = {}
    if inputs is not None:
        for i, t in enumerate(inputs):
            if not t.requires_grad:
                raise RuntimeError(f"One of the differentiated Tensors does not require grad")
            if t.grad_fn is not None:
                capture.setdefault((id(t.grad_fn), t._output_nr), []).append(i)
            else:
                capture.setdefault((id(accumulator_for(t)), 0), []).append(i)
    captured = [None] * (len(inputs) if inputs is not None else 0)

    # 1. dependencies
    deps = {}
    nodes = {}
    stack = [e[0] for e, _ in roots if e[0] is not None]
    seen = set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        nodes[id(n)] = n
        for nxt, _ in n.next_functions:
            if nxt is not None:
                deps[id(nxt)] = deps.get(id(nxt), 0) + 1
                if id(nxt) not in seen:
                    stack.append(nxt)

    # with inputs given, only run nodes that lead to one of them
    needed = None
    if inputs is not None:
        needed = _nodes_leading_to(nodes, capture)

    buffers = {}

    def add_grad(node, nr, g):
        slot = buffers.setdefault(id(node), {})
        prev = slot.get(nr)
        slot[nr] = g if prev is None else prev + g

    for (node, nr), g in roots:
        if node is not None:
            add_grad(node, nr, g)

    ready = []
    for (node, _), _ in roots:
        if node is not None and deps.get(id(node), 0) == 0:
            heapq.heappush(ready, (-node._sequence_nr, id(node), node))
    pushed = {id(n) for _, _, n in ready}

    with grad_mode.set_grad_enabled(create_graph):
        while ready:
            _, _, node = heapq.heappop(ready)
            slot = buffers.pop(id(node), {})
            nin = max(slot.keys(), default=-1) + 1
            n_out = len(getattr(node, "_out_meta", ())) or max(nin, 1)
            gin = tuple(slot.get(i) for i in range(n_out))
            key_caps = [(id(node), i) for i in range(n_out)]
            for i, k in enumerate(key_caps):
                if k in capture and gin[i] is not None:
                    for pos in capture[k]:
                        captured[pos] = gin[i] if captured[pos] is None else captured[pos] + gin[i]
            run = needed is None or id(node) in needed
            if isinstance(node, AccumulateGrad) and not accumulate:
                run = False
            if isinstance(node, AccumulateGrad) and accumulate and inputs is not None:
                run = (id(node), 0) in capture
            outs = ()
            if run:
                outs = _run_node(node, gin, retain_graph)
            elif not retain_graph and not isinstance(node, AccumulateGrad):
                node._release()
            for (nxt, nr), g in zip(node.next_functions, outs or [None] * len(node.next_functions)):
                if nxt is None:
                    continue
                if g is not None:
                    add_grad(nxt, nr, g)
                deps[id(nxt)] -= 1
                if deps[id(nxt)] == 0 and id(nxt) not in pushed:
                    pushed.add(id(nxt))
                    heapq.heappush(ready, (-nxt._sequence_nr, id(nxt), nxt))
            if not outs:
                # nodes below that got no gradient still need their counts released
                pass
    if inputs is not None:
        for i, t in enumerate(inputs):
            if captured[i] is None and not allow_unused and not accumulate:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
    return captured


def _nodes_leading_to(nodes, capture):
    """ids of nodes from which a captured (node, nr) is reachable."""
    targets = {k[0] for k in capture}
    memo = {}
    for root in list(nodes.values()):
        stack = [(root, False)]
        while stack:
            n, done = stack.pop()
            if id(n) in memo:
                continue
            if done:
                memo[id(n)] = id(n) in targets or any(
                    m is not None and memo.get(id(m), False) for m, _ in n.next_functions)
                continue
            stack.append((n, True))
            for m, _ in n.next_functions:
                if m is not None and id(m) not in memo:
                    stack.append((m, False))
    return {k for k, v in memo.items() if v}


def _run_node(node, gin, retain_graph):
    gin = list(gin)
    # tensor hooks registered on non-leaf outputs of this node, then node pre-hooks
    for out_nr, ref in getattr(node, "_tensor_pre_hooks", {}).values():
        t = ref()
        if t is None or gin[out_nr] is None:
            continue
        for hook in list(t._tensor_hooks.values()):
            r = hook(gin[out_nr])
            if r is not None:
                gin[out_nr] = r
    for hook in list(node._pre_hooks.values()):
        r = hook(tuple(gin))
        if r is not None:
            gin = list(r)
    # retain_grad() on outputs of this node
    for out_nr, ref in getattr(node, "_retain_refs", {}).values():
        t = ref()
        if t is not None and gin[out_nr] is not None:
            g = gin[out_nr]
            t._grad = g.detach().clone() if t._grad is None else t._grad + g.detach()
    if isinstance(node, AccumulateGrad):
        node.apply(tuple(gin))
        return ()
    if node._released:
        from .graph import FREED_MSG
        raise RuntimeError(FREED_MSG)
    try:
        outs = node.apply(tuple(gin))
    except Exception as e:
        if node._anomaly_trace is not None:
            anomaly.report(node, e)
        raise
    if anomaly.is_anomaly_enabled():
        anomaly.check_nan(node, outs)
    for hook in list(node._hooks.values()):
        r = hook(tuple(outs), tuple(gin))
        if r is not None:
            outs = tuple(r)
    if not retain_graph:
        node._release()
    return outs


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """``tgrad.autograd.backward`` / ``Tensor.backward``: accumulate into leaves' ``.grad``."""
    from ..tensor import Tensor
    if isinstance(tensors, Tensor):
        tensors = (tensors,)
    tensors = tuple(tensors)
    if grad_tensors is None or isinstance(grad_tensors, Tensor):
        grad_tensors = (grad_tensors,) * len(tensors) if grad_tensors is None else (grad_tensors,)
    if inputs is not None:
        inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
        if len(inputs) == 0:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    captured = run_backward(tensors, list(grad_tensors), retain_graph, create_graph, inputs=inputs,
                            allow_unused=True, accumulate=True)
    if inputs is not None:
        # non-leaf inputs get their gradient accumulated into .grad too
        for t, g in zip(inputs, captured):
            if t.grad_fn is not None and g is not None:
                t._grad = g if t._grad is None else t._grad + g


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """``tgrad.autograd.grad``: gradients of ``outputs`` w.r.t. ``inputs``, returned as a tuple."""
    from ..tensor import Tensor
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
        from .. import creation
        res = [creation.zeros_like(t) if g is None else g for t, g in zip(inputs, res)]
    return tuple(res)
