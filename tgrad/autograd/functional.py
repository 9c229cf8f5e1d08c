"""``tgrad.autograd.functional``: jacobian, hessian, vjp, jvp, vhp, hvp of a function of tensors, by reverse
mode (one ``autograd.grad`` per output element for jacobian; jvp by the double-backward trick), as PyTorch's
module computes them (same argument forms, output nesting, ``strict`` and ``create_graph``)."""
from ..ops import call as _call
from ..tensor import Tensor
from . import grad_mode
from .engine import grad as _grad

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


def _as_tuple(x, arg_name, fn_name):
    """(is_tuple, tuple of tensors)."""
    is_tuple = isinstance(x, tuple)
    xs = x if is_tuple else (x,)
    for i, t in enumerate(xs):
        if not isinstance(t, Tensor):
            where = f"{arg_name}" if not is_tuple else f"Entry {i} in {arg_name}"
            raise TypeError(f"The {where} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                            f"the value at index {i} has type {type(t)}.")
    return is_tuple, xs


def _prepare(inputs, create_graph):
    """Inputs that require grad, detached from their history unless ``create_graph``."""
    return tuple(t if create_graph and t.requires_grad else t.detach().requires_grad_(True) for t in inputs)


def _check_outputs(outs, strict):
    for i, o in enumerate(outs):
        if strict and not o.requires_grad:
            raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The outputs "
                               "must be computed in a differentiable manner from the input when running in strict "
                               "mode.")


def _grads(outputs, inputs, grad_outputs, create_graph, strict, what):
    _check_outputs(outputs, strict)
    keep = [k for k, o in enumerate(outputs) if o.requires_grad]
    if keep:
        gos = None if grad_outputs is None else tuple(grad_outputs[k] for k in keep)
        gs = _grad(tuple(outputs[k] for k in keep), inputs, gos, retain_graph=True, create_graph=create_graph,
                   allow_unused=True)
    else:
        gs = (None,) * len(inputs)
    res = []
    for i, (g, x) in enumerate(zip(gs, inputs)):
        if g is None:
            if strict:
                raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This "
                                   f"is not allowed in strict mode{what}.")
            g = x.new_zeros(x.shape)
        res.append(g)
    return tuple(res)


def _detach(ts, create_graph):
    return tuple(t if create_graph else t.detach() for t in ts)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J)."""
    is_in, inputs = _as_tuple(inputs, "inputs", "vjp")
    with grad_mode.enable_grad():
        inputs = _prepare(inputs, create_graph)
        out = func(*inputs)
        is_out, outs = _as_tuple(out, "outputs of the user-provided function", "vjp")
        if v is None:
            if any(o.numel() != 1 for o in outs):
                raise RuntimeError("The vector v can only be None if the user-provided function returns a single "
                                   "Tensor with a single element.")
            vs = tuple(o.new_ones(o.shape) for o in outs)
        else:
            vs = _as_tuple(v, "v", "vjp")[1]
        gs = _grads(outs, inputs, vs, create_graph, strict, "")
    outs, gs = _detach(outs, create_graph), _detach(gs, create_graph)
    return (outs if is_out else outs[0]), (gs if is_in else gs[0])


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v), by differentiating u -> v^T (u^T J) in u."""
    is_in, inputs = _as_tuple(inputs, "inputs", "jvp")
    with grad_mode.enable_grad():
        inputs = _prepare(inputs, create_graph)
        out = func(*inputs)
        is_out, outs = _as_tuple(out, "outputs of the user-provided function", "jvp")
        if v is None:
            if any(x.numel() != 1 for x in inputs):
                raise RuntimeError("The vector v can only be None if the input to the user-provided function is a "
                                   "single Tensor with a single element.")
            vs = tuple(x.new_ones(x.shape) for x in inputs)
        else:
            vs = _as_tuple(v, "v", "jvp")[1]
        us = tuple(o.new_zeros(o.shape).requires_grad_(True) for o in outs)
        gu = _grad(outs, inputs, us, retain_graph=True, create_graph=True, allow_unused=True)
        pairs = [(g, w) for g, w in zip(gu, vs) if g is not None]
        if pairs:
            jv = _grads(tuple(g for g, _ in pairs), us, tuple(w for _, w in pairs), create_graph, strict, "")
        else:
            jv = tuple(o.new_zeros(o.shape) for o in outs)
    outs, jv = _detach(outs, create_graph), _detach(jv, create_graph)
    return (outs if is_out else outs[0]), (jv if is_out else jv[0])


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """d func / d inputs: one tensor of shape out.shape + in.shape per (output, input) pair, nested as
    PyTorch nests them (tuple of outputs, each a tuple over inputs; single ones unwrapped)."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                         'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                         'Otherwise, prefer to use "reverse-mode".')
    is_in, inputs = _as_tuple(inputs, "inputs", "jacobian")
    with grad_mode.enable_grad():
        inputs = _prepare(inputs, create_graph)
        out = func(*inputs)
        is_out, outs = _as_tuple(out, "outputs of the user-provided function", "jacobian")
        _check_outputs(outs, strict)
        jac = []
        for o in outs:
            flat = o.reshape(-1)
            rows = [[] for _ in inputs]
            for k in range(flat.numel() if o.requires_grad else 0):
                gs = _grad(flat[k], inputs, retain_graph=True, create_graph=create_graph, allow_unused=True)
                for i, (g, x) in enumerate(zip(gs, inputs)):
                    if g is None:
                        if strict:
                            raise RuntimeError(f"Output {len(jac)} of the user-provided function is independent "
                                               f"of input {i}. This is not allowed in strict mode.")
                        g = x.new_zeros(x.shape)
                    rows[i].append(g)
            per_in = []
            for i, x in enumerate(inputs):
                j = _stack(rows[i]) if rows[i] else x.new_zeros((flat.numel(),) + tuple(x.shape))
                j = j.reshape(tuple(o.shape) + tuple(x.shape))
                per_in.append(j if create_graph else j.detach())
            jac.append(tuple(per_in) if is_in else per_in[0])
    return tuple(jac) if is_out else jac[0]


def _stack(rows):
    """rows (tensors of one shape) stacked along a new dim 0 (through unsqueeze + cat's op)."""
    return _call("cat", *[r.unsqueeze(0) for r in rows], dim=0)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The jacobian of the gradient of a scalar ``func``."""
    is_in, inputs_t = _as_tuple(inputs, "inputs", "hessian")

    def jac_func(*inp):
        out = func(*inp)
        _, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor containing a single "
                               "element")
        return jacobian(func, inp, create_graph=True, strict=strict)

    res = jacobian(jac_func, inputs_t, create_graph=create_graph, strict=strict)
    return res if is_in else res[0][0]


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H)."""
    is_in, inputs = _as_tuple(inputs, "inputs", "vhp")
    with grad_mode.enable_grad():
        inputs = _prepare(inputs, create_graph)
        out = func(*inputs)
        _, outs = _as_tuple(out, "outputs of the user-provided function", "vhp")
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError("The function given to vhp should return a single Tensor with a single element.")
        if v is None:
            if any(x.numel() != 1 for x in inputs):
                raise RuntimeError("The vector v can only be None if the input to the user-provided function is a "
                                   "single Tensor with a single element.")
            vs = tuple(x.new_ones(x.shape) for x in inputs)
        else:
            vs = _as_tuple(v, "v", "vhp")[1]
        g = _grads(outs, inputs, None, True, strict, "")
        h = _grads(g, inputs, vs, create_graph, strict, "")
    o = outs[0] if create_graph else outs[0].detach()
    h = _detach(h, create_graph)
    return o, (h if is_in else h[0])


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) (H is symmetric for a twice continuously differentiable func: v^T H transposed)."""
    return vhp(func, inputs, v, create_graph, strict)
