"""No silently ignored argument: every parameter of a public function is used by its body, or is listed
here with the reason ignoring it cannot change a result (and the docstring or README says so).

The scan reads each function's source: a parameter whose name never appears in the body is ignored.
A new ignored parameter fails ``test_no_new_silently_ignored_argument``; an entry that is used again
fails ``test_known_ignored_list_is_current``.
"""
import ast
import inspect
import textwrap

import tgrad
import tgrad.nn.functional as F
from tgrad import nn, optim
from tgrad.utils import data

NAMESPACES = [("tgrad.", tgrad), ("Tensor.", tgrad.Tensor), ("F.", F), ("nn.", nn), ("optim.", optim),
              ("lr_scheduler.", optim.lr_scheduler), ("data.", data), ("cuda.", tgrad.cuda),
              ("autograd.", tgrad.autograd)]

# qualified name -> {parameter: why ignoring it gives PyTorch's result}
KNOWN_IGNORED = {
    "tgrad.Tensor.copy_": {"non_blocking": "copies are synchronous: the values a synchronized PyTorch copy gives"},
    "tgrad.empty": {"pin_memory": "pinning changes copy speed, not values"},
    "tgrad.batch_norm": {"cudnn_enabled": "a backend switch of PyTorch's; same values"},
    "tgrad.layer_norm": {"cudnn_enable": "a backend switch of PyTorch's; same values"},
    "tgrad.tensor": {"pin_memory": "pinning changes copy speed, not values"},
    "autograd.gradcheck": {"fast_mode": "the full check runs (stricter than the fast one)"},
    "autograd.gradgradcheck": {"fast_mode": "the full check runs (stricter than the fast one)"},
    "nn.Identity.__init__": {"args": "PyTorch's Identity ignores its arguments", "kwargs": "as args"},
    "tgrad.max_pool1d_with_indices": {"return_indices": "PyTorch's *_with_indices also always return indices"},
    "F.max_pool2d_with_indices": {"return_indices": "PyTorch's *_with_indices also always return indices"},
    "F.adaptive_max_pool1d_with_indices": {"return_indices": "PyTorch's *_with_indices also always return indices"},
    "F.adaptive_max_pool2d_with_indices": {"return_indices": "PyTorch's *_with_indices also always return indices"},
    "F.adaptive_max_pool3d_with_indices": {"return_indices": "PyTorch's *_with_indices also always return indices"},
    "F.max_pool3d_with_indices": {"return_indices": "PyTorch's *_with_indices also always return indices"},
    "tgrad.Tensor.pin_memory": {"device": "deprecated and unused in PyTorch too"},
    "tgrad.Tensor.is_pinned": {"device": "deprecated and unused in PyTorch too"},
    "cuda.Event.__init__": {"blocking": "how synchronize() waits (spin or block), not what it returns"},
    "tgrad.load": {"mmap": "the file is read whole: the same tensors as a memory-mapped load"},
    "tgrad.unique": {"sorted": "PyTorch's cpu unique sorts with sorted=False too (2.13 prints sorted values)"},
    "tgrad.isin": {"assume_unique": "a speed hint in PyTorch; the same result"},
    "tgrad.tril_indices": {"layout": "only the strided layout exists"},
    "tgrad.triu_indices": {"layout": "only the strided layout exists"},
    "tgrad.vmap": {"chunk_size": "the function already runs one slice per call: chunks change memory, not values"},
    "tgrad.Tensor.to_dense": {"masked_grad": "a dense tensor's to_dense is itself; the flag is about sparse inputs"},
    **{f"tgrad.{w}_window": {"pin_memory": "pinning changes copy speed, not values"}
       for w in ("bartlett", "blackman", "hamming", "hann", "kaiser")},
}


def _abstract(fn_node):
    body = [b for b in fn_node.body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
    return not body or all(isinstance(b, (ast.Raise, ast.Pass)) for b in body)


def _ignored(fn):
    try:
        src = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return []
    node = ast.parse(src).body[0]
    if not isinstance(node, ast.FunctionDef) or _abstract(node):
        return []
    a = node.args
    params = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
    params += [v.arg for v in (a.vararg, a.kwarg) if v is not None]
    used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    if used & {"locals", "vars"}:
        return []
    return [p for p in params if p not in used and p not in ("self", "cls", "ctx")]


def _functions():
    seen = set()
    for prefix, ns in NAMESPACES:
        items = vars(ns).items() if isinstance(ns, type) else ((n, getattr(ns, n)) for n in dir(ns))
        for name, obj in items:
            if name.startswith("_") and name != "__init__":
                continue
            if isinstance(obj, type) and obj.__module__.startswith("tgrad") and not isinstance(ns, type):
                for m, fn in vars(obj).items():
                    if m.startswith("_") and m != "__init__":
                        continue
                    fn = fn.__func__ if isinstance(fn, (staticmethod, classmethod)) else fn
                    if inspect.isfunction(fn) and fn not in seen:
                        seen.add(fn)
                        yield f"{prefix}{name}.{m}", fn
                continue
            obj = obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj
            if inspect.isfunction(obj) and obj.__module__.startswith("tgrad") and obj not in seen:
                seen.add(obj)
                yield f"{prefix}{name}", obj


def _scan():
    return {name: ign for name, fn in _functions() if (ign := _ignored(fn))}


def test_no_new_silently_ignored_argument():
    new = {n: [p for p in ps if p not in KNOWN_IGNORED.get(n, {})] for n, ps in _scan().items()}
    new = {n: ps for n, ps in new.items() if ps}
    assert not new, f"arguments accepted and ignored: {new} (use them, raise NotImplementedError, or list them " \
                    f"in KNOWN_IGNORED with the reason the result cannot differ from PyTorch's)"


def test_known_ignored_list_is_current():
    found = _scan()
    stale = {n: [p for p in ps if p not in found.get(n, [])] for n, ps in KNOWN_IGNORED.items()}
    stale = {n: ps for n, ps in stale.items() if ps}
    assert not stale, f"KNOWN_IGNORED lists arguments that are used now: {stale}"


def test_the_scan_finds_an_ignored_argument():
    def f(x, unused, *, also=None):
        """doc"""
        return x
    assert _ignored(f) == ["unused", "also"]


def test_formerly_ignored_arguments_now_act():
    t = tgrad.zeros(5)
    assert tgrad.empty(3, 2, out=t) is t and t.shape == (3, 2)
    assert tgrad.randperm(4, dtype=tgrad.float32, requires_grad=True).requires_grad
    x = tgrad.arange(6.).reshape(2, 3).t()
    assert not x.float().is_contiguous() and x.float(memory_format=tgrad.contiguous_format).is_contiguous()
    assert x.to(memory_format=tgrad.contiguous_format).is_contiguous()
    assert x.repeat_interleave(2, dim=0, output_size=6).shape == (6, 2)
    import pytest
    with pytest.raises(RuntimeError, match="allocated size does not match required size"):
        x.repeat_interleave(2, dim=0, output_size=5)
    with pytest.raises(NotImplementedError, match="sparse_grad"):
        x.gather(0, tgrad.zeros(1, 2, dtype=tgrad.int64), sparse_grad=True)
    y = tgrad.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="only_inputs argument is deprecated"):
        tgrad.autograd.grad((y * 2).sum(), y, only_inputs=False)
