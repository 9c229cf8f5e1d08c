"""tgrad.compile's fast guard (guards.fast_guard): after a replay, a call whose roots, containers and tensor state
are the last replay's skips the walk; any change the walk's key would see makes the guard fail (the walk decides)."""
import numpy as np

import tgrad
import tgrad.nn as nn
from tgrad._compile.guards import Walk

CPU_ONLY = True
SHIFT = 0.5         # a global number the step reads


def _setup():
    tgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 2))
    opt = tgrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    state = {"x": tgrad.randn(3, 4), "scale": 1.0}

    def step():
        loss = (model(state["x"]) * state["scale"] + SHIFT).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    return model, opt, state, step


def _mutations(model, opt, state):
    """(change, undo) pairs, each a change the walk's key (or the objects it finds) would see."""
    lin, w = model[0], model[0].weight
    old_w, old_x = w.data, state["x"]
    return [
        (lambda: model.eval(), lambda: model.train()),
        (lambda: setattr(lin, "in_features", 5), lambda: setattr(lin, "in_features", 4)),
        (lambda: setattr(lin, "extra", 3), lambda: delattr(lin, "extra")),
        (lambda: state.__setitem__("scale", 2.0), lambda: state.__setitem__("scale", 1.0)),
        (lambda: state.__setitem__("x", tgrad.randn(3, 4)), lambda: state.__setitem__("x", old_x)),
        (lambda: setattr(w, "data", tgrad.randn(5, 4)), lambda: setattr(w, "data", old_w)),
        (lambda: w.requires_grad_(False), lambda: w.requires_grad_(True)),
        (lambda: setattr(w, "grad", tgrad.zeros(5, 4)), lambda: setattr(w, "grad", None)),
        (lambda: opt.param_groups[0]["params"].append(tgrad.zeros(1)),
         lambda: opt.param_groups[0]["params"].pop()),
        (lambda: globals().__setitem__("SHIFT", 0.25), lambda: globals().__setitem__("SHIFT", 0.5)),
        (lambda: tgrad.set_grad_enabled(False), lambda: tgrad.set_grad_enabled(True)),
    ]


def test_fast_guard_fails_on_what_the_walk_sees():
    model, opt, state, step = _setup()
    f = tgrad.compile(step)
    for _ in range(4):
        f()
    assert f._fast is not None
    guard, _, walk = f._fast
    roots = f._sources.roots((), {})
    assert guard(roots)
    key, seen = walk.signature(), 0
    for i, (change, undo) in enumerate(_mutations(model, opt, state)):
        change()
        try:
            w2 = Walk(f._sources.roots((), {}))
            changed = w2.signature() != key or [id(t) for t in w2.tensors] != [id(t) for t in walk.tensors]
            seen += changed
            # a change the walk sees fails the guard (the guard may fail on more: a parameter's new storage)
            assert not (changed and guard(f._sources.roots((), {}))), i
        finally:
            undo()
        assert guard(f._sources.roots((), {})), i
    assert seen >= len(_mutations(model, opt, state)) - 1


def test_fast_guarded_replays_follow_eager():
    """A compiled step and its eager twin see the same changes between calls: the same losses and parameters."""
    runs = []
    for compiled in (False, True):
        model, opt, state, step = _setup()
        f = tgrad.compile(step) if compiled else step
        losses = []
        for i in range(14):
            if i == 6:
                state["scale"] = 2.0
            if i == 9:
                model[0].weight.requires_grad_(False)
            if i == 11:
                state["scale"], state["x"] = 1.0, state["x"] * 2
            losses.append(f().item())
        runs.append((losses, [p.detach().numpy().copy() for p in model.parameters()]))
    assert runs[0][0] == runs[1][0]
    assert all(np.array_equal(a, b) for a, b in zip(runs[0][1], runs[1][1]))
