"""``tgrad.compile(step)`` (whole-step capture) of the examples' training loops on the device under test: an MLP
(SGD with momentum; AdamW with OneCycleLR as examples/train_mlp.py), a CNN (Conv2d/BatchNorm2d/MaxPool2d/Dropout, AdamW
with OneCycleLR as examples/train_cnn.py) and examples/train_gpt.py's GPT (attention dropout, AdamW,
``clip_grad_norm_``), each a new batch per call, replayed bit for bit as eager runs it.

The GPT's attention regenerates its dropout in the backward from the forward's Philox key and counter (cuda): an
earlier draw than the step's last one, which the cuda replay once passed as the recorded constant (stale masks
in the backward from the first replay on)."""
import warnings

import numpy as np
import pytest

import tgrad
from tgrad import nn
from test_compile_train import _cnn, _data, _gpt, _mlp


def _np(t):
    return t.detach().cpu().numpy().copy()


def _opt(kind, model):
    if kind == "sgd":
        return tgrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), None
    if kind == "gpt":
        decay = [p for p in model.parameters() if p.dim() >= 2]
        rest = [p for p in model.parameters() if p.dim() < 2]
        return tgrad.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                                 lr=3e-3, betas=(0.9, 0.99)), None
    opt = tgrad.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-4)
    return opt, tgrad.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=20)


def _run(make, data_kind, opt_kind, steps, compiled):
    model = make()
    opt, sched = _opt(opt_kind, model)

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        if data_kind == "gpt":
            _, loss = model(x, y)
        else:
            loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if data_kind == "gpt":
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if sched is not None:
            sched.step()
        return loss
    f = tgrad.compile(step) if compiled else step
    tgrad.manual_seed(1)
    losses = [_np(f(x, y)) for x, y in _data(data_kind, steps)]
    return losses, [_np(p) for p in model.parameters()], f


@pytest.mark.parametrize("make,data_kind,opt_kind,steps", [
    (_mlp, "mlp", "sgd", 8),
    (_mlp, "mlp", "adamw", 8),
    (_cnn, "cnn", "adamw", 6),
    (_gpt, "gpt", "gpt", 6),
], ids=["mlp_sgd_momentum", "mlp_adamw_onecycle", "cnn_adamw_onecycle", "gpt_adamw_clip"])
def test_examples_training_steps_replay_bit_identically(make, data_kind, opt_kind, steps):
    ref = _run(make, data_kind, opt_kind, steps, False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # no "runs eagerly", no cache thrash
        out = _run(make, data_kind, opt_kind, steps, True)
    for i, (a, b) in enumerate(zip(out[0], ref[0])):
        np.testing.assert_array_equal(a, b, err_msg=f"loss {i}")
    for a, b in zip(out[1], ref[1]):
        np.testing.assert_array_equal(a, b)
    entries = list(out[2]._cache.values())
    assert not any(e.eager for e in entries) and any(e.run is not None for e in entries)
    # .grad None at call 1, then set: two guard keys, the second's first call eager, its second recorded
    assert sum(e.calls for e in entries) == 3       # (the other calls replayed)


@pytest.mark.cpu_only(reason="the cpu replay's Adam update")
@pytest.mark.parametrize("kind", ["adam", "adamw_amsgrad"])
def test_replayed_adam_update_skips_dispatch(kind, monkeypatch):
    """A replay runs Adam's update as optim_cpu.c's ufuncs over whole tensors (no dispatch of ``adam_step``, whose
    step count makes a new memo key every step) and (constant learning rate) in the program itself, not through
    ``Adam.step``, eager's bits; amsgrad takes the dispatched kernel."""
    from tgrad.autograd import dispatch
    from tgrad.optim import adam
    calls = []
    orig = dispatch.call

    def call(name, *a, **k):
        calls.append(name)
        return orig(name, *a, **k)

    def run(compiled):
        model = _mlp()
        opt = (tgrad.optim.Adam(model.parameters(), lr=1e-2) if kind == "adam" else
               tgrad.optim.AdamW(model.parameters(), lr=1e-2, amsgrad=True))

        def step(x, y):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        f = tgrad.compile(step) if compiled else step
        data = _data("mlp", 8)
        losses = [_np(f(x, y)) for x, y in data[:5]]        # (call 3 records, 4 and 5 replay tiers 1 and 2)
        calls.clear()
        losses += [_np(f(x, y)) for x, y in data[5:]]
        return losses, [_np(p) for p in model.parameters()]
    ref = run(False)
    monkeypatch.setattr(dispatch, "call", call)
    bump = adam._bump_step
    monkeypatch.setattr(adam, "_bump_step", lambda t: calls.append("Adam.step") or bump(t))
    out = run(True)
    assert all(np.array_equal(a, b) for a, b in zip(out[0] + out[1], ref[0] + ref[1]))
    assert ("adam_step" in calls) == ("Adam.step" in calls) == (kind != "adam"), calls


@pytest.mark.cpu_only(reason="the cpu replay's SGD update")
@pytest.mark.parametrize("kw", [dict(momentum=0.0, weight_decay=0.01), dict(momentum=0.9, dampening=0.1),
                                dict(momentum=0.9, nesterov=True, weight_decay=0.01),
                                dict(momentum=0.9, maximize=True)], ids=["plain_wd", "dampening", "nesterov_wd",
                                                                          "maximize"])
def test_replayed_sgd_update_native(kw, monkeypatch):
    """A replay runs SGD's update as optim_cpu.c's ufuncs (or the exact fma) over whole tensors, eager's bits: with
    momentum its fused step's loop over every parameter in one ``run_loops`` call; maximize relaunches the recorded
    launches."""
    from tgrad._compile import replay
    runs, loops = [], []
    orig, real = replay._sgd_run, replay.run_loops()
    monkeypatch.setattr(replay, "_sgd_run", lambda items: runs.append(1) or orig(items))
    if real is not None:
        monkeypatch.setattr(replay, "run_loops", lambda: lambda u, plan: loops.append(1) or real(u, plan))

    def run(compiled):
        model = _mlp()
        opt = tgrad.optim.SGD(model.parameters(), lr=0.05, **kw)

        def step(x, y):
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        f = tgrad.compile(step) if compiled else step
        losses = [_np(f(x, y)) for x, y in _data("mlp", 8)]
        return losses, [_np(p) for p in model.parameters()]
    ref = run(False)
    out = run(True)
    assert all(np.array_equal(a, b) for a, b in zip(out[0] + out[1], ref[0] + ref[1]))
    assert bool(runs or loops) == ("maximize" not in kw)
    if real is not None:
        assert bool(loops) == (kw["momentum"] > 0 and "maximize" not in kw) and not (runs and loops)


def test_adam_constant_lr_replays_bit_identically():
    """Adam with a constant learning rate (the step's only host work is the optimizer's): eager's bits on the
    device under test (cpu: the update in the program; cuda: Adam.step runs, no CUDA graph freezes its step count)."""
    def run(compiled):
        model = _mlp()
        opt = tgrad.optim.Adam(model.parameters(), lr=1e-2)

        def step(x, y):
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        f = tgrad.compile(step) if compiled else step
        x, y = _data("mlp", 1)[0]          # one batch: the same addresses each call (cuda: a graph's key)
        losses = [_np(f(x, y)) for _ in range(8)]
        return losses + [_np(p) for p in model.parameters()]
    ref = run(False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = run(True)
    for a, b in zip(out, ref):
        np.testing.assert_array_equal(a, b)
