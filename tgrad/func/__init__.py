"""``tgrad.func`` (PyTorch's ``torch.func``): function transforms over tgrad's autograd.

``grad``/``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``/``jacfwd``, ``hessian``, ``vmap``, ``functional_call``
and ``stack_module_state``.  The transforms are built on ``autograd.grad`` (jvp by the double-backward trick,
``jacfwd`` by reverse mode: same values), and ``vmap`` runs the function once per slice of the batch dimension
and stacks the results: PyTorch's semantics for the programs that use them (per-sample gradients, Jacobians and
Hessians, ensembles), at the cost of one call per sample.  Transforms nest (``grad(grad(f))``, ``vmap(grad(f))``);
inputs that require grad keep their graph through a transform's result.
"""
import contextlib

from .. import autograd as _ag
from .._creation import tensor as _tensor
from .._functional import stack
from ..autograd.grad_mode import enable_grad
from ..tensor import Tensor

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "stack_module_state",
           "vjp", "vmap"]


# ------------------------------------------------------------------ pytrees of tuples, lists and dicts
def _flatten(tree):
    """(leaves, rebuild): the leaves of nested tuples/lists/dicts, and a function rebuilding the tree from new
    leaves."""
    if isinstance(tree, (tuple, list)):
        parts = [_flatten(t) for t in tree]
        counts = [len(p[0]) for p in parts]

        def rebuild(leaves):
            out, i = [], 0
            for (_, r), n in zip(parts, counts):
                out.append(r(leaves[i:i + n]))
                i += n
            return type(tree)(out) if not hasattr(tree, "_fields") else type(tree)(*out)
        return [x for p in parts for x in p[0]], rebuild
    if isinstance(tree, dict):
        keys = list(tree)
        leaves, rebuild_values = _flatten([tree[k] for k in keys])
        return leaves, lambda new: dict(zip(keys, rebuild_values(new)))
    return [tree], lambda new: new[0]


def _tree_map(f, tree):
    leaves, rebuild = _flatten(tree)
    return rebuild([f(x) for x in leaves])


# ------------------------------------------------------------------ grad and friends
def _argnums(argnums, n):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums:
        raise RuntimeError("argnums must be non-empty")
    for a in nums:
        if not isinstance(a, int):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(a)}")
        if not -n <= a < n:
            raise RuntimeError(f"Got argnums={a}, but only {n} positional inputs")
    return tuple(a % n for a in nums)


def _track(x):
    """``x`` as an input to differentiate at: a view keeping its graph when it requires grad (an outer transform
    or the caller differentiates through the result), else a new leaf."""
    if not isinstance(x, Tensor):
        raise RuntimeError(f"Expected tensors, got unsupported type {type(x)}")
    return x.view_as(x) if x.requires_grad else x.detach().requires_grad_(True)


def _outer(xs):
    return any(isinstance(x, Tensor) and x.requires_grad for x in _flatten(xs)[0])


def _split_aux(out, has_aux, name):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{name}(f, ...)(*args): output of function f should be a tuple: (output, aux) if "
                           "has_aux is True")
    return out


def _reaches_outer(tensors, own):
    """True if the graph of ``tensors`` reaches a leaf that requires grad other than the transform's own inputs
    ``own`` (a tensor the function captured): the result must then stay differentiable w.r.t. it."""
    own = {id(t) for t in own}
    seen, todo = set(), [t.grad_fn for t in tensors if isinstance(t, Tensor) and t.grad_fn is not None]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        var = getattr(node, "variable", None)
        if var is not None and id(var) not in own:
            return True
        todo.extend(n for n, _ in node.next_functions)
    return False


def _finish(x, keep):
    return _tree_map(lambda t: t if keep or not isinstance(t, Tensor) else t.detach(), x)


def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning (gradient of ``func``'s one-element output w.r.t. the ``argnums`` arguments, output)
    (with ``has_aux``: (grad, (output, aux)))."""
    def wrapper(*args, **kwargs):
        nums = _argnums(argnums, len(args))
        keep, graph = _outer(args) or _outer(kwargs), _ag.is_grad_enabled()
        with enable_grad():
            args = list(args)
            for a in nums:
                args[a] = _tree_map(_track, args[a])
            out, aux = _split_aux(func(*args, **kwargs), has_aux, "grad_and_value")
            if not isinstance(out, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(out)}")
            if out.numel() != 1:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   f"tensor with {out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs "
                                   "instead?")
            leaves = [x for a in nums for x in _flatten(args[a])[0]]
            gs = _ag.grad(out, leaves, create_graph=graph, allow_unused=True) if out.requires_grad else \
                (None,) * len(leaves)
        keep = keep or (graph and _reaches_outer(list(gs) + [out], leaves))
        gs = [x.new_zeros(x.shape) if g is None else g for g, x in zip(gs, leaves)]
        res, i = [], 0
        for a in nums:
            n = len(_flatten(args[a])[0])
            res.append(_flatten(args[a])[1](gs[i:i + n]))
            i += n
        g = res[0] if isinstance(argnums, int) else tuple(res)
        value = out if aux is None else (out, aux)
        return _finish(g, keep), _finish(value, keep)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """A function returning the gradient of ``func``'s one-element output w.r.t. its ``argnums`` arguments
    (pytrees of tensors), with ``has_aux``: (grad, aux)."""
    gv = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn[, aux]): vjp_fn(cotangents) is the tuple of the primals' cotangents."""
    keep = _outer(primals)
    with enable_grad():
        xs = _tree_map(_track, primals)
        out, aux = _split_aux(func(*xs), has_aux, "vjp")
    leaves = _flatten(xs)[0]
    outs, _ = _flatten(out)

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        cts = _flatten(cotangents)[0]
        if len(cts) != len(outs):
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function: {len(cts)} cotangents for {len(outs)} outputs")
        pairs = [(o, c) for o, c in zip(outs, cts) if o.requires_grad]
        with enable_grad():
            gs = _ag.grad([o for o, _ in pairs], leaves, [c for _, c in pairs], retain_graph=retain_graph,
                          create_graph=keep if create_graph is None else create_graph,
                          allow_unused=True) if pairs else (None,) * len(leaves)
        gs = [x.new_zeros(x.shape) if g is None else g for g, x in zip(gs, leaves)]
        return _finish(_flatten(xs)[1](gs), keep or bool(create_graph))
    res = (_finish(out, keep), vjp_fn)
    return res + (_finish(aux, keep),) if has_aux else res


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), J tangents[, aux]): the Jacobian-vector product (double-backward trick)."""
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to be tuples. E.g. it should "
                           "be valid to call f(*primals).")
    if len(_flatten(primals)[0]) != len(_flatten(tangents)[0]):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           "structure.")
    keep = _outer(primals) or _outer(tangents)
    with enable_grad():
        xs = _tree_map(_track, primals)
        out, aux = _split_aux(func(*xs), has_aux, "jvp")
        outs, rebuild = _flatten(out)
        leaves, tans = _flatten(xs)[0], _flatten(tangents)[0]
        us = [o.new_zeros(o.shape).requires_grad_(True) for o in outs]
        pairs = [(o, u) for o, u in zip(outs, us) if o.requires_grad]
        gs = _ag.grad([o for o, _ in pairs], leaves, [u for _, u in pairs], create_graph=True,
                      allow_unused=True) if pairs else (None,) * len(leaves)
        used = [(g, t) for g, t in zip(gs, tans) if g is not None and g.requires_grad]
        js = _ag.grad([g for g, _ in used], us, [t for _, t in used], create_graph=keep,
                      allow_unused=True) if used else (None,) * len(us)
    js = [o.new_zeros(o.shape) if j is None else j for j, o in zip(js, outs)]
    res = (_finish(out, keep), _finish(rebuild(js), keep))
    return res + (_finish(aux, keep),) if has_aux else res


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """A function returning the Jacobian of ``func`` w.r.t. its ``argnums`` arguments: for each output, a tensor
    of shape output.shape + input.shape (tuples for several outputs / argnums), by one vjp per output element."""
    def wrapper(*args, **kwargs):
        nums = _argnums(argnums, len(args))
        keep = _outer(args) or _outer(kwargs)
        with enable_grad():
            args = list(args)
            for a in nums:
                args[a] = _tree_map(_track, args[a])
            out, aux = _split_aux(func(*args, **kwargs), has_aux, "jacrev")
            outs, rebuild = _flatten(out)
            per_arg = [_flatten(args[a]) for a in nums]
            leaves = [x for lv, _ in per_arg for x in lv]
            jac = []
            for o in outs:
                flat, rows = o.reshape(-1), [[] for _ in leaves]
                for j in range(flat.numel()):
                    gs = _ag.grad(flat[j], leaves, retain_graph=True, create_graph=True, allow_unused=True) \
                        if o.requires_grad else (None,) * len(leaves)
                    for k, (g, x) in enumerate(zip(gs, leaves)):
                        rows[k].append(x.new_zeros(x.shape) if g is None else g)
                blocks = [stack(r).reshape(tuple(o.shape) + tuple(x.shape)) if r else
                          x.new_zeros(tuple(o.shape) + tuple(x.shape)) for r, x in zip(rows, leaves)]
                res, i = [], 0
                for lv, rb in per_arg:
                    res.append(rb(blocks[i:i + len(lv)]))
                    i += len(lv)
                jac.append(res[0] if isinstance(argnums, int) else tuple(res))
        j = rebuild(jac)
        return (_finish(j, keep), _finish(aux, keep)) if has_aux else _finish(j, keep)
    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of ``func`` column by column: d out / d x[j] = jvp(func, x, e_j) for each element j of each
    ``argnums`` input (forward products, so zeros carry forward mode's signs as PyTorch's), shaped as ``jacrev``'s."""
    def wrapper(*args, **kwargs):
        nums = _argnums(argnums, len(args))
        per_arg = [_flatten(args[a]) for a in nums]
        leaves = [x for lv, _ in per_arg for x in lv]

        def f(*xs):
            a, i = list(args), 0
            for n, (lv, rb) in zip(nums, per_arg):
                a[n] = rb(list(xs[i:i + len(lv)]))
                i += len(lv)
            return func(*a, **kwargs)
        cols, res = [[] for _ in leaves], None
        for k, x in enumerate(leaves):
            for j in range(x.numel()):
                e = x.new_zeros(x.numel())
                e[j] = 1
                tans = tuple(e.reshape(x.shape) if i == k else y.new_zeros(y.shape) for i, y in enumerate(leaves))
                res = jvp(f, tuple(leaves), tans, has_aux=has_aux)
                cols[k].append(_flatten(res[1])[0])
        if res is None:                                     # every input is empty: no column to take
            out = f(*leaves)
            res = (out[0], None, out[1]) if has_aux else (out, None)
        outs, rebuild = _flatten(res[0])
        jac = []
        for oi, o in enumerate(outs):
            blocks = [stack([c[oi] for c in cols[k]], -1).reshape(tuple(o.shape) + tuple(x.shape)) if cols[k] else
                      o.new_zeros(tuple(o.shape) + tuple(x.shape)) for k, x in enumerate(leaves)]
            parts, i = [], 0
            for lv, rb in per_arg:
                parts.append(rb(blocks[i:i + len(lv)]))
                i += len(lv)
            jac.append(parts[0] if isinstance(argnums, int) else tuple(parts))
        j = rebuild(jac)
        return (j, res[2]) if has_aux else j
    return wrapper


def hessian(func, argnums=0):
    """The Hessian of a function with one-element output w.r.t. its ``argnums`` arguments: jacfwd(jacrev(func))."""
    return jacfwd(jacrev(func, argnums), argnums)


# ------------------------------------------------------------------ vmap
def _in_dims(in_dims, args):
    if isinstance(in_dims, int) or in_dims is None:
        return [in_dims] * len(args)
    if not isinstance(in_dims, (tuple, list)) or len(in_dims) != len(args):
        raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a (potentially "
                         f"nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    return list(in_dims)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``func`` mapped over the ``in_dims`` dimension of its arguments (None: not mapped), results stacked at
    ``out_dims``: one call per slice."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")

    def wrapper(*args, **kwargs):
        dims = _in_dims(in_dims, args)
        sizes = set()
        flat_args = []
        for a, d in zip(args, dims):
            leaves, rebuild = _flatten(a)
            ds = [d] * len(leaves) if not isinstance(d, (tuple, list, dict)) else _flatten(d)[0]
            if len(ds) != len(leaves):
                raise ValueError(f"vmap: in_dims {d} does not match the structure of its input")
            for x, dd in zip(leaves, ds):
                if dd is not None:
                    if not isinstance(x, Tensor):
                        raise ValueError(f"vmap: Got in_dim={dd} for an input but the input is of type {type(x)}. "
                                         "We cannot vmap over non-Tensor arguments, please use None as the "
                                         "respective in_dim")
                    if not -x.dim() <= dd < max(x.dim(), 1) or x.dim() == 0:
                        raise ValueError(f"vmap: Got in_dim={dd} for some input, but that input is a Tensor of "
                                         f"dimensionality {x.dim()} so expected in_dim to satisfy "
                                         f"-{x.dim()} <= in_dim < {x.dim()}.")
                    sizes.add(x.shape[dd])
            flat_args.append((leaves, rebuild, ds))
        if not sizes:
            raise ValueError("vmap: at least one input must be mapped over (got in_dims all None)")
        if len(sizes) > 1:
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                             f"{sorted(sizes)} for the mapped dimension")
        n = sizes.pop()
        results = []
        for i in range(n):
            call_args = [rb([x if d is None else x.select(d, i) for x, d in zip(lv, ds)])
                         for lv, rb, ds in flat_args]
            results.append(func(*call_args, **kwargs))
        leaves0, rebuild = _flatten(results[0])
        per_leaf = list(zip(*[_flatten(r)[0] for r in results]))
        ods = [out_dims] * len(leaves0) if isinstance(out_dims, int) or out_dims is None else _flatten(out_dims)[0]
        outs = []
        for vals, od in zip(per_leaf, ods):
            if od is None:
                outs.append(vals[0])
            else:
                vals = [v if isinstance(v, Tensor) else _tensor(v) for v in vals]   # a Python number returned
                outs.append(stack(vals, dim=od))
        return rebuild(outs)
    return wrapper


# ------------------------------------------------------------------ modules as functions
@contextlib.contextmanager
def _swapped(module, values, tie_weights, strict):
    named = dict(module.named_parameters(remove_duplicate=False))
    named.update(dict(module.named_buffers(remove_duplicate=False)))
    if strict:
        missing = sorted(set(named) - set(values))
        unexpected = sorted(set(values) - set(named))
        if missing or unexpected:
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t"
                               + (f"Unexpected key(s): {', '.join(map(repr, unexpected))}." if unexpected else "")
                               + (f"Missing key(s): {', '.join(map(repr, missing))}." if missing else ""))
    values = dict(values)
    if tie_weights:             # a tensor given for one name of a tied parameter stands for all its names
        by_id = {}
        for name, t in named.items():
            by_id.setdefault(id(t), []).append(name)
        for names in by_id.values():
            given = [n for n in names if n in values]
            for n in names:
                if given and n not in values:
                    values[n] = values[given[0]]
    saved = []
    try:
        for name, t in values.items():
            *path, leaf = name.split(".")
            mod = module
            for p in path:
                mod = getattr(mod, p)
            store = mod._parameters if leaf in mod._parameters else mod._buffers if leaf in mod._buffers else None
            if store is None:
                saved.append((mod, None, leaf, mod.__dict__.get(leaf)))
                mod.__dict__[leaf] = t
            else:
                saved.append((mod, store, leaf, store[leaf]))
                store[leaf] = t
        yield
    finally:
        for mod, store, leaf, old in reversed(saved):
            if store is None:
                mod.__dict__.pop(leaf, None)
                if old is not None:
                    mod.__dict__[leaf] = old
            else:
                store[leaf] = old


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with its parameters and buffers replaced by the tensors of the given dict(s)
    (by qualified name; the module itself is unchanged afterwards)."""
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, (tuple, list)):
        merged = {}
        for d in dicts:
            for k in d:
                if k in merged:
                    raise ValueError(f"{k} appeared in multiple dictionaries; behavior of functional call is "
                                     "ambiguous")
            merged.update(d)
        dicts = merged
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _swapped(module, dicts, tie_weights, strict):
        return module(*args, **(kwargs or {}))


def stack_module_state(models):
    """(params, buffers): each name's tensors of the ``models`` (same architecture) stacked on a new first
    dimension; the stacked parameters are new leaves that require grad as the originals do."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if len({type(m) for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    params = {k: stack([dict(m.named_parameters())[k].detach() for m in models]).requires_grad_(v.requires_grad)
              for k, v in models[0].named_parameters()}
    buffers = {k: stack([dict(m.named_buffers())[k] for m in models]) for k, _ in models[0].named_buffers()}
    return params, buffers
