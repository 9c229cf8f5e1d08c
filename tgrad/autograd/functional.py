"""``tgrad.autograd.functional``: vjp, jvp, vhp, hvp, jacobian and hessian of a function of tensors, built on
``autograd.grad`` as PyTorch builds them (jvp and hvp by the double-backward trick; the Jacobian row by row).

``inputs`` is a tensor or a tuple of tensors; results follow its structure and the function's.  Without
``create_graph`` the results are detached; with it they are differentiable (inputs that require grad keep
their graph).  ``strict=True`` raises where an output does not depend on an input; else the zeros.
"""
from ..tensor import Tensor
from . import dispatch
from .engine import grad as _grad
from .grad_mode import enable_grad


def _as_tuple(x, arg_name, fn_name):
    is_tuple = isinstance(x, tuple)
    xs = x if is_tuple else (x,)
    for i, t in enumerate(xs):
        if not isinstance(t, Tensor):
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                            + (f"the value at index {i} has type {type(t)}." if is_tuple else
                               f"the given {arg_name} has type {type(t)}."))
    return is_tuple, xs


def _tuple_postprocess(res, flags):
    """Unwrap the tuples the caller did not pass: ``flags`` is one bool, or two for a nested result."""
    if isinstance(flags, tuple):
        if not flags[1]:
            res = tuple(r[0] for r in res)
        if not flags[0]:
            res = res[0]
    elif not flags:
        res = res[0]
    return res


def _prepare(inputs, create_graph, need_graph=True):
    """Inputs the function is differentiated at: views keeping an input's graph under create_graph, else
    detached leaves that require grad."""
    return tuple(t.view_as(t) if create_graph and t.requires_grad else t.detach().requires_grad_(need_graph)
                 for t in inputs)


def _post(xs, create_graph):
    return tuple(None if x is None else (x if create_graph else x.detach()) for x in xs)


def _check_outputs(outputs, fn_name):
    return _as_tuple(outputs, "outputs of the user-provided function", fn_name)


def _check_differentiable(outputs, strict):
    if strict:
        for i, o in enumerate(outputs):
            if not o.requires_grad:
                raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The outputs "
                                   "must be computed in a differentiable manner from the input when running in strict "
                                   "mode.")


def _grads(outputs, inputs, grad_outputs, create_graph, strict, retain_graph=None, what="input"):
    """autograd.grad of ``outputs`` w.r.t. ``inputs``; zeros (or, ``strict``, an error) for an unused input."""
    _check_differentiable(outputs, strict and what == "input")
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if pairs:
        gs = _grad([o for o, _ in pairs], inputs, [g for _, g in pairs], retain_graph=retain_graph,
                   create_graph=create_graph, allow_unused=True)
    else:
        gs = (None,) * len(inputs)
    res = []
    for i, (g, x) in enumerate(zip(gs, inputs)):
        if g is None:
            if strict:
                raise RuntimeError(f"The output of the user-provided function is independent of {what} {i}. This is "
                                   "not allowed in strict mode.")
            g = x.new_zeros(x.shape)
        res.append(g)
    return tuple(res)


def _fill_v(v, outputs, fn_name):
    if v is None:
        if len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function returns a single "
                               "Tensor with a single element.")
        return (outputs[0].new_ones(outputs[0].shape),)
    _, vs = _as_tuple(v, "v", fn_name)
    if len(vs) != len(outputs):
        raise RuntimeError(f"v is a tuple of invalid length: should be {len(outputs)} but got {len(vs)}.")
    for i, (a, b) in enumerate(zip(vs, outputs)):
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(f"Entry {i} in v has invalid size: should be {tuple(b.shape)} but got "
                               f"{tuple(a.shape)}.")
    return vs


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product at ``inputs``."""
    with enable_grad():
        is_tuple, ins = _as_tuple(inputs, "inputs", "vjp")
        ins = _prepare(ins, create_graph)
        out_tuple, outs = _check_outputs(func(*ins), "vjp")
        vs = _fill_v(v, outs, "vjp")
        res = _grads(outs, ins, vs, create_graph, strict)
    return _tuple_postprocess(_post(outs, create_graph), out_tuple), _tuple_postprocess(_post(res, create_graph),
                                                                                        is_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product, by the double-backward trick (the vjp with a dummy
    cotangent u, differentiated w.r.t. u along v)."""
    with enable_grad():
        is_tuple, ins = _as_tuple(inputs, "inputs", "jvp")
        ins = _prepare(ins, create_graph)
        if v is None:
            if len(ins) != 1 or ins[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the input to the user-provided function is a "
                                   "single Tensor with a single element.")
            vs = (ins[0].new_ones(ins[0].shape),)
        else:
            vs = _fill_v(v, ins, "jvp")
        out_tuple, outs = _check_outputs(func(*ins), "jvp")
        us = tuple(o.new_zeros(o.shape).requires_grad_(True) for o in outs)
        g = _grads(outs, ins, us, True, strict)
        res = _grads(g, us, vs, create_graph, strict, what="output")
    return _tuple_postprocess(_post(outs, create_graph), out_tuple), _tuple_postprocess(_post(res, create_graph),
                                                                                        out_tuple)


def _scalar_output(outs, fn_name):
    if len(outs) != 1 or outs[0].numel() != 1:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor with a single element.")


def _scalar_jacobian(func, inputs, v, create_graph, strict, fn_name):
    """(is_tuple, inputs, outputs, v, d func / d inputs kept differentiable) of a one-element function."""
    is_tuple, ins = _as_tuple(inputs, "inputs", fn_name)
    ins = _prepare(ins, create_graph)
    _, outs = _check_outputs(func(*ins), fn_name)
    _scalar_output(outs, fn_name)
    vs = _fill_v(v, ins, fn_name)
    return is_tuple, ins, outs, vs, _grads(outs, ins, (outs[0].new_ones(outs[0].shape),), True, strict)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H): the vector-Hessian product of a scalar function."""
    with enable_grad():
        is_tuple, ins, outs, vs, jac = _scalar_jacobian(func, inputs, v, create_graph, strict, "vhp")
        res = _grads(jac, ins, vs, create_graph, strict)
    return _post(outs, create_graph)[0], _tuple_postprocess(_post(res, create_graph), is_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v): the Hessian-vector product of a scalar function (double-backward trick)."""
    with enable_grad():
        is_tuple, ins, outs, vs, jac = _scalar_jacobian(func, inputs, v, create_graph, strict, "hvp")
        us = tuple(x.new_zeros(x.shape).requires_grad_(True) for x in ins)
        dbl = _grads(jac, ins, us, True, strict)
        res = _grads(dbl, us, vs, create_graph, strict)
    return _post(outs, create_graph)[0], _tuple_postprocess(_post(res, create_graph), is_tuple)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """J[i][j] = d outputs[i] / d inputs[j], of shape outputs[i].shape + inputs[j].shape, one backward per output
    element (``vectorize`` and ``strategy='forward-mode'`` give the same values)."""
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function '
                         'has more outputs than inputs, "forward-mode" tends to be more performant. Otherwise, '
                         'prefer to use "reverse-mode".')
    with enable_grad():
        is_tuple, ins = _as_tuple(inputs, "inputs", "jacobian")
        ins = _prepare(ins, create_graph)
        out_tuple, outs = _check_outputs(func(*ins), "jacobian")
        _check_differentiable(outs, strict)
        jac = []
        for i, out in enumerate(outs):
            rows = [[] for _ in ins]
            flat = out.reshape(-1)
            for j in range(flat.numel()):
                gs = _grad((flat[j],), ins, (flat.new_ones(()),), retain_graph=True, create_graph=create_graph,
                           allow_unused=True) if out.requires_grad else (None,) * len(ins)
                for k, (g, x) in enumerate(zip(gs, ins)):
                    if g is None and strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is independent of input {k}. "
                                           "This is not allowed in strict mode.")
                    rows[k].append(x.new_zeros(x.shape) if g is None else g)
            per_input = []
            for k, x in enumerate(ins):
                shape = tuple(out.shape) + tuple(x.shape)
                per_input.append(dispatch.call("stack", *rows[k], dim=0).reshape(shape) if rows[k] else
                                 x.new_zeros(shape))
            jac.append(_post(per_input, create_graph))
    return _tuple_postprocess(tuple(jac), (out_tuple, is_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """H[i][j] = d^2 func / d inputs[i] d inputs[j] of a function returning one element, of shape
    inputs[i].shape + inputs[j].shape: the Jacobian of the Jacobian."""
    is_tuple, ins = _as_tuple(inputs, "inputs", "hessian")

    def single(*xs):
        out = func(*xs)
        _, outs = _check_outputs(out, "hessian")
        _scalar_output(outs, "hessian")
        return outs[0].squeeze()

    def jac_func(*xs):
        return jacobian(single, xs, create_graph=True, strict=strict)

    res = jacobian(jac_func, ins, create_graph=create_graph, strict=strict)
    return _tuple_postprocess(res, (is_tuple, is_tuple))
