"""gradcheck / gradgradcheck: analytical Jacobians (from backward) against central finite differences.

For ``func(*inputs)`` with outputs y and differentiable inputs x:
numerical J[:, j] = (f(x + eps e_j) - f(x - eps e_j)) / (2 eps), analytical
J[i, :] = d y_i / d x from ``autograd.grad`` with a one-hot grad_output;
they must agree within ``atol + rtol * |numerical|``.  Use float64 inputs.

Complex inputs and outputs count as their (real, imaginary) float pairs, as PyTorch's gradcheck splits them:
a column per part of an input (perturbed apart), a row per part of an output (the analytical row of Re y_i
from grad_output 1 at i, of Im y_i from grad_output 1j: PyTorch's convention grad = dL/dRe + i dL/dIm).
"""
import numpy as np

from ..tensor import Tensor, from_host, zeros
from . import dispatch, engine, grad_mode


class GradcheckError(RuntimeError):
    pass


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,) if not isinstance(x, list) else tuple(x)


def _outputs(func, inputs):
    out = _as_tuple(func(*inputs))
    return [o for o in out if isinstance(o, Tensor) and (o.dtype.is_floating_point or o.dtype.is_complex)]


def _floats(arr):
    """A host array as flat float64s: a complex one as its (real, imaginary) pairs."""
    a = np.asarray(arr).reshape(-1)
    return a.astype(np.complex128).view(np.float64) if np.iscomplexobj(a) else a.astype(np.float64)


def _parts(t):
    return 2 if t.dtype.is_complex else 1


def _set_values(t, arr):
    with grad_mode.no_grad():
        t.copy_(from_host(arr, t.dtype, t.device))


def _numerical(func, inputs, diff_idx, eps):
    """List over diff inputs of arrays (n_out_total, n_in)."""
    res = []
    for k in diff_idx:
        x = inputs[k]
        orig = x.detach()._host_copy()
        flat = _floats(orig).copy()
        cols = []
        for j in range(flat.size):
            vals = []
            for sign in (1, -1):
                p = flat.copy()
                p[j] = p[j] + sign * eps
                _set_values(x, (p.view(np.complex128) if x.dtype.is_complex else p).reshape(orig.shape))
                outs = _outputs(func, inputs)   # grad mode stays on: gradgradcheck's func needs it
                vals.append(np.concatenate([_floats(o._host_copy()) for o in outs]) if outs else np.zeros(0))
            cols.append((vals[0] - vals[1]) / (2 * eps))
        _set_values(x, orig)
        if cols:
            res.append(np.stack(cols, axis=1))
        else:                                           # an empty input: a Jacobian without columns
            res.append(np.zeros((sum(o.numel() * _parts(o) for o in _outputs(func, inputs)), 0)))
    return res


def _analytical(func, inputs, diff_idx, check_dtypes=False):
    outs = _outputs(func, inputs)
    sizes = [o.numel() for o in outs]
    n_out = sum(n * _parts(o) for n, o in zip(sizes, outs))
    jac = [np.zeros((n_out, inputs[k].numel() * _parts(inputs[k]))) for k in diff_idx]
    row = 0
    for oi, o in enumerate(outs):
        if not o.requires_grad:
            row += sizes[oi] * _parts(o)
            continue
        for r in range(sizes[oi] * _parts(o)):
            i, part = divmod(r, _parts(o))
            g = np.zeros(sizes[oi], np.complex128 if o.dtype.is_complex else np.float64)
            g[i] = 1j if part else 1.0
            go = from_host(g.reshape(tuple(o.shape)), o.dtype, o.device)
            grads = engine.grad([o], [inputs[k] for k in diff_idx], grad_outputs=[go], retain_graph=True,
                                allow_unused=True)
            for c, gr in enumerate(grads):
                if gr is not None:
                    if check_dtypes and gr.dtype != inputs[diff_idx[c]].dtype:
                        raise GradcheckError("Gradient has dtype mismatch")
                    if tuple(gr.shape) != tuple(inputs[diff_idx[c]].shape):
                        raise GradcheckError(f"grad for input {diff_idx[c]} has shape {tuple(gr.shape)}, "
                                             f"expected {tuple(inputs[diff_idx[c]].shape)}")
                    jac[c][row + r] = _floats(gr._host_copy())
        row += sizes[oi] * _parts(o)
    return jac


def _unsupported(**flags):
    for name, on in flags.items():
        if on:
            raise NotImplementedError(f"gradcheck: {name}=True is not supported by tgrad (no forward-mode AD, "
                                      "no vmap, no masked tensors)")


def _fail(raise_exception, msg):
    if raise_exception:
        raise GradcheckError(msg)
    return False


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True,
              fast_mode=False, masked=None):
    """True when analytical and numerical Jacobians of ``func`` at ``inputs`` agree.

    As PyTorch: ``nondet_tol`` bounds the difference of two analytical Jacobians (reentrant backward),
    ``check_undefined_grad`` checks that zero output gradients give zero (or no) input gradients,
    ``check_grad_dtypes`` that gradients have their inputs' dtypes.  ``fast_mode=True`` runs the full
    check (stricter than PyTorch's random projection).  Forward-mode AD, vmap (batched) and masked
    checks raise NotImplementedError.
    """
    _unsupported(check_batched_grad=check_batched_grad, check_batched_forward_grad=check_batched_forward_grad,
                 check_forward_ad=check_forward_ad, masked=masked)
    inputs = _as_tuple(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of "
                         "the them have requires_grad=True.")
    for i in diff_idx:
        if inputs[i].dtype.name not in ("float64", "complex128"):
            import warnings
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point. This "
                          "check will likely fail if all the inputs are not of double precision floating "
                          "point. ", UserWarning, stacklevel=2)
    if not check_backward_ad:
        return True
    ana = _analytical(func, inputs, diff_idx, check_grad_dtypes)
    again = _analytical(func, inputs, diff_idx, False)
    for c, k in enumerate(diff_idx):
        if not np.all(np.abs(ana[c] - again[c]) <= nondet_tol):
            return _fail(raise_exception, f"Backward is not reentrant, i.e., running backward with same input and "
                         f"grad_output multiple times gives different values, although analytical gradient "
                         f"matches numerical gradient.The tolerance for nondeterminism was {nondet_tol}.")
    num = _numerical(func, inputs, diff_idx, eps)
    for c, k in enumerate(diff_idx):
        a, n = ana[c], num[c]
        if not np.allclose(a, n, rtol=rtol, atol=atol):
            bad = np.argwhere(~np.isclose(a, n, rtol=rtol, atol=atol))[0]
            return _fail(raise_exception, f"Jacobian mismatch for output {bad[0]} with respect to input {k},\n"
                         f"numerical:{n}\nanalytical:{a}\n")
    if check_undefined_grad and not _zero_grads_give_zero(func, inputs, diff_idx):
        return _fail(raise_exception, "Expected backward function to handle undefined output grads. Please "
                     "look at \"Notes about undefined output gradients\" in \"tools/autograd/derivatives.yaml\"")
    return True


def _zero_grads_give_zero(func, inputs, diff_idx):
    outs = [o for o in _outputs(func, inputs) if o.requires_grad]
    if not outs:
        return True
    grads = engine.grad(outs, [inputs[k] for k in diff_idx], grad_outputs=[zeros(o.shape, o.dtype, o.device)
                                                                           for o in outs],
                        allow_unused=True)
    return all(g is None or not np.any(g._host_copy()) for g in grads)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, gen_non_contig_grad_outputs=False,
                  raise_exception=True, nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
                  check_batched_grad=False, check_fwd_over_rev=False, check_rev_over_rev=True,
                  fast_mode=False, masked=False):
    """gradcheck of the function (inputs, grad_outputs) -> d(sum(outputs * grad_outputs))/d(inputs).

    ``gen_non_contig_grad_outputs``: the generated grad_outputs are strided views; ``check_rev_over_rev=False``
    checks nothing (as PyTorch); forward-over-reverse, vmap and masked checks raise NotImplementedError.
    """
    _unsupported(check_batched_grad=check_batched_grad, check_fwd_over_rev=check_fwd_over_rev, masked=masked)
    if not check_rev_over_rev:
        return True
    inputs = _as_tuple(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if grad_outputs is None:
        outs = _outputs(func, inputs)
        grad_outputs = tuple(_random_like(o, gen_non_contig_grad_outputs) for o in outs if o.requires_grad)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def new_func(*args):
        ins, gos = args[:n_in], args[n_in:]
        outs = [o for o in _outputs(func, ins) if o.requires_grad]
        grads = engine.grad(outs, [ins[i] for i in diff_idx], grad_outputs=list(gos), create_graph=True,
                            allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(new_func, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad, check_grad_dtypes=check_grad_dtypes)


def _random_like(o, non_contig):
    """A leaf shaped like ``o`` drawn from the global generator as PyTorch's ``make_tensor(low=-1, high=1)``
    (uniform_ over the shape, over (re, im) pairs for complex, so later draws match); ``non_contig``: every other
    element of a doubled buffer."""
    t = zeros(tuple(o.shape), o.dtype, o.device)
    (dispatch.call("view_as_real", t) if o.dtype.is_complex else t).uniform_(-1, 1)
    if non_contig and t.numel() > 1:
        t = t.repeat_interleave(2, dim=-1)[..., ::2]
    return t.detach().requires_grad_(True)
