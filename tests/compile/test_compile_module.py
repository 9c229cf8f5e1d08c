"""``tgrad.compile(model)`` (a compiled Module, as ``torch.compile(model)``): in a training loop whose backward and
optimizer step run outside, its forward runs eagerly with one warning naming the Module and what to compile
instead, and the numbers are eager's; under ``no_grad`` its forward is replayed."""
import warnings

import numpy as np

import tgrad
from tgrad import nn

CPU_ONLY = True     # tgrad.compile's cpu replay (conftest)


def _net():
    tgrad.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 3 * 3, 3))


def _train(model, call, steps=4):
    opt = tgrad.optim.SGD(model.parameters(), lr=0.1)
    x = tgrad.tensor(np.random.default_rng(0).standard_normal((2, 1, 8, 8)).astype(np.float32))
    y = tgrad.tensor([0, 2])
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(call(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_compiled_module_in_training_runs_eagerly_with_one_warning():
    ref_model = _net()
    ref = _train(ref_model, ref_model)
    model = _net()
    cm = tgrad.compile(model)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        losses = _train(model, cm)
    assert losses == ref and losses[-1] < losses[0]
    msgs = [m for m in w if "tgrad.compile" in str(m.message)]
    assert len(msgs) == 1
    text = str(msgs[0].message)
    assert "Sequential.forward runs eagerly" in text and "no backward ran" in text
    assert "compile the whole training step" in text
    assert msgs[0].filename == __file__         # points at the caller of the compiled module


def test_compiled_module_replays_under_no_grad():
    model = _net().eval()
    cm = tgrad.compile(model)
    xs = [tgrad.tensor(np.random.default_rng(i).standard_normal((2, 1, 8, 8)).astype(np.float32)) for i in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with tgrad.no_grad():
            outs = [cm(x).numpy().copy() for x in xs]
            refs = [model(x).numpy() for x in xs]
    for o, r in zip(outs, refs):
        np.testing.assert_array_equal(o, r)
    assert cm._call._cache and all(e.run is not None for e in cm._call._cache.values())
