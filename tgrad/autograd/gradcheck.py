"""gradcheck / gradgradcheck: analytical Jacobians (from backward) against central finite differences.

For ``func(*inputs)`` with outputs y and differentiable inputs x:
numerical J[:, j] = (f(x + eps e_j) - f(x - eps e_j)) / (2 eps), analytical
J[i, :] = d y_i / d x from ``autograd.grad`` with a one-hot grad_output;
they must agree within ``atol + rtol * |numerical|``.  Use float64 inputs.
"""
import numpy as np

from ..tensor import Tensor, from_host
from . import engine, grad_mode


class GradcheckError(RuntimeError):
    pass


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,) if not isinstance(x, list) else tuple(x)


def _outputs(func, inputs):
    out = _as_tuple(func(*inputs))
    return [o for o in out if isinstance(o, Tensor) and o.dtype.is_floating_point]


def _set_values(t, arr):
    with grad_mode.no_grad():
        t.copy_(from_host(arr, t.dtype, t.device))


def _numerical(func, inputs, diff_idx, eps):
    """List over diff inputs of arrays (n_out_total, n_in)."""
    res = []
    for k in diff_idx:
        x = inputs[k]
        orig = x.detach()._host_copy()
        flat = orig.reshape(-1).copy()
        cols = []
        for j in range(flat.size):
            vals = []
            for sign in (1, -1):
                p = flat.copy()
                p[j] = p[j] + sign * eps
                _set_values(x, p.reshape(orig.shape))
                outs = _outputs(func, inputs)   # grad mode stays on: gradgradcheck's func needs it
                vals.append(np.concatenate([o._host_copy().reshape(-1).astype(np.float64) for o in outs])
                            if outs else np.zeros(0))
            cols.append((vals[0] - vals[1]) / (2 * eps))
        _set_values(x, orig)
        if cols:
            res.append(np.stack(cols, axis=1))
        else:                                           # an empty input: a Jacobian without columns
            res.append(np.zeros((sum(o.numel() for o in _outputs(func, inputs)), 0)))
    return res


def _analytical(func, inputs, diff_idx):
    outs = _outputs(func, inputs)
    sizes = [o.numel() for o in outs]
    n_out = sum(sizes)
    jac = [np.zeros((n_out, inputs[k].numel())) for k in diff_idx]
    row = 0
    for oi, o in enumerate(outs):
        if not o.requires_grad:
            row += sizes[oi]
            continue
        for i in range(sizes[oi]):
            g = np.zeros(sizes[oi])
            g[i] = 1.0
            go = from_host(g.reshape(tuple(o.shape)), o.dtype, o.device)
            grads = engine.grad([o], [inputs[k] for k in diff_idx], grad_outputs=[go], retain_graph=True,
                                allow_unused=True)
            for c, gr in enumerate(grads):
                if gr is not None:
                    if tuple(gr.shape) != tuple(inputs[diff_idx[c]].shape):
                        raise GradcheckError(f"grad for input {diff_idx[c]} has shape {tuple(gr.shape)}, "
                                             f"expected {tuple(inputs[diff_idx[c]].shape)}")
                    jac[c][row + i] = gr._host_copy().reshape(-1)
        row += sizes[oi]
    return jac


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True,
              fast_mode=False, masked=None):
    """True when analytical and numerical Jacobians of ``func`` at ``inputs`` agree."""
    inputs = _as_tuple(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of "
                         "the them have requires_grad=True.")
    for i in diff_idx:
        if inputs[i].dtype.name != "float64":
            import warnings
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point. This "
                          "check will likely fail if all the inputs are not of double precision floating "
                          "point. ", UserWarning, stacklevel=2)
    ana = _analytical(func, inputs, diff_idx)
    num = _numerical(func, inputs, diff_idx, eps)
    for c, k in enumerate(diff_idx):
        a, n = ana[c], num[c]
        if not np.allclose(a, n, rtol=rtol, atol=atol):
            if raise_exception:
                bad = np.argwhere(~np.isclose(a, n, rtol=rtol, atol=atol))[0]
                raise GradcheckError(
                    f"Jacobian mismatch for output {bad[0]} with respect to input {k},\n"
                    f"numerical:{n}\nanalytical:{a}\n")
            return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, gen_non_contig_grad_outputs=False,
                  raise_exception=True, nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
                  check_batched_grad=False, check_fwd_over_rev=False, check_rev_over_rev=True,
                  fast_mode=False, masked=False):
    """gradcheck of the function (inputs, grad_outputs) -> d(sum(outputs * grad_outputs))/d(inputs)."""
    inputs = _as_tuple(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if grad_outputs is None:
        outs = _outputs(func, inputs)
        rng = np.random.default_rng(0)
        grad_outputs = tuple(
            from_host(rng.standard_normal(tuple(o.shape)), o.dtype, o.device).requires_grad_()
            for o in outs if o.requires_grad)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def new_func(*args):
        ins, gos = args[:n_in], args[n_in:]
        outs = [o for o in _outputs(func, ins) if o.requires_grad]
        grads = engine.grad(outs, [ins[i] for i in diff_idx], grad_outputs=list(gos), create_graph=True,
                            allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(new_func, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
