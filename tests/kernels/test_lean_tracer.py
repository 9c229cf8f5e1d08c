"""The lean tracer (runtime/internals.py ``LEAN``: tgrad's versions of Triton's tensor and block-type constructors
and broadcast, made faster for recording tapes) records the same tapes as Triton's own language layer: every
generic tape's builder ops, every compiled tape's source and constants, and the outputs, byte for byte, over
matmuls, broadcasts, reductions, indexing and an optimizer step; and a generic tape compiled lazily (only when a
program runs it) is the one compiled at once."""
import numpy as np

import tgrad
import tgrad.nn.functional as F
from tgrad.kernels.runtime import internals as I
from tgrad.kernels.runtime import trace as TR

CPU_ONLY = True     # the cpu executor's tapes


def _norm(x):
    """A comparable form of a recorded value: arrays by bytes, Triton types by name, functions by name."""
    if isinstance(x, I._I.TensorHandle):
        return ("h", str(x.dtype), _norm(x.data))
    if isinstance(x, np.ndarray):
        return ("a", x.dtype.str, x.shape, x.tobytes())
    if isinstance(x, (list, tuple)):
        return (type(x).__name__,) + tuple(_norm(y) for y in x)
    if isinstance(x, dict):
        return ("d",) + tuple((k, _norm(v)) for k, v in sorted(x.items(), key=lambda kv: str(kv[0])))
    if isinstance(x, (I.tl.dtype, I.tl.core.base_type)):
        return ("t", type(x).__name__, str(x))
    if isinstance(x, (int, float, str, bool, type(None), np.generic, np.dtype)):
        return ("v", type(x).__name__, repr(x))
    if callable(x):
        return ("f", getattr(x, "__qualname__", None) or type(x).__name__)
    return ("o", type(x).__name__, _norm(vars(x)) if hasattr(x, "__dict__") else repr(x))


def _op(op):
    name, f, vals, kwargs, slot, low = op
    return (name, [("s", v.slot) if v.slot is not None else _norm(v.obj) for v in vals], _norm(kwargs), slot,
            _norm(low) if name != "reduce_scan" else None)


def _workload():
    """Outputs of a small program touching the common kernels (matmul with bias/relu and its backward,
    broadcasts with scalars and rows, reductions, softmax, cross-entropy, where, indexing, SGD)."""
    rng = np.random.default_rng(0)
    tgrad.manual_seed(0)
    x = tgrad.tensor(rng.standard_normal((24, 20)).astype(np.float32), requires_grad=True)
    w = tgrad.tensor(rng.standard_normal((36, 20)).astype(np.float32), requires_grad=True)
    b = tgrad.tensor(rng.standard_normal(36).astype(np.float32), requires_grad=True)
    y = tgrad.tensor(rng.integers(0, 36, 24))
    h = F.relu(F.linear(x, w, b))
    z = (h * 0.5 + b[None, :] - 1).softmax(-1)
    loss = F.cross_entropy(h, y) + z.sum() * 0.1 + tgrad.where(h > 1.0, h, -h).mean() + h[:, 3:9].max(1)[0].sum()
    loss.backward()
    opt = tgrad.optim.SGD([w, b], lr=0.1, momentum=0.9)
    opt.step()
    c = (x.detach() @ w.detach().t()).cumsum(1) % 3.0 + (x.detach().abs().sqrt() ** 2).sum(1, keepdim=True)[::2].repeat(2, 1)
    return [t.detach().numpy().copy() for t in (loss, x.grad, w, b, c)]


def _traced():
    """(outputs, digests of every recorded tape and compiled tape in order) of _workload's 1st and 2nd run."""
    seen = []
    rec, comp = TR.record, TR._compile

    def record(*a, **k):
        t, good = rec(*a, **k)
        seen.append(("record", good, [_op(op) for op in t.ops], t.guards,
                     None if t.gops is None else [_op(op) for op in t.gops]))
        return t, good

    def compile_(tapes, kinds):
        run = comp(tapes, kinds)
        seen.append(("compile", run.source, _norm({k: v for k, v in run.__globals__.items() if k.startswith("_k")})))
        return run
    TR.record, TR._compile = record, compile_
    try:
        TR.clear_tapes()
        outs = [_workload() for _ in range(2)]
    finally:
        TR.record, TR._compile = rec, comp
    return outs, seen


def test_lean_tapes_equal_the_reference():
    lean_outs, lean = _traced()
    with I.reference_language():
        ref_outs, ref = _traced()
    assert len(lean) == len(ref) > 40 and sum(s[0] == "compile" for s in ref) > 20
    for a, b in zip(lean, ref):
        assert a == b
    for xs, ys in zip(lean_outs, ref_outs):
        for u, v in zip(xs, ys):
            assert u.dtype == v.dtype and u.shape == v.shape and u.tobytes() == v.tobytes()


def test_the_lean_language_is_in_place_and_restored():
    for owner, name, lean, orig in I.LEAN:
        assert getattr(owner, name) is lean and lean is not orig
    with I.reference_language():
        assert all(getattr(owner, name) is orig for owner, name, _, orig in I.LEAN)
    assert all(getattr(owner, name) is lean for owner, name, lean, _ in I.LEAN)
