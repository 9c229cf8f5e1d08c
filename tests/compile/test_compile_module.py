"""``tgrad.compile(model)`` (a compiled Module, as ``torch.compile(model)``): in a training loop whose backward and
optimizer step run outside, its forward and backward are replayed (test_compile_train.py has the rest), a forward
that cannot be replayed runs eagerly with one warning naming the Module; under ``no_grad`` its forward is replayed."""
import warnings

import numpy as np

import tgrad
from tgrad import nn


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


def test_compiled_module_in_training_replays_forward_and_backward():
    ref_model = _net()
    ref = _train(ref_model, ref_model)
    model = _net()
    cm = tgrad.compile(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        losses = _train(model, cm)
    assert losses == ref and losses[-1] < losses[0]
    for p, q in zip(model.parameters(), ref_model.parameters()):
        np.testing.assert_array_equal(p.detach().cpu().numpy(), q.detach().cpu().numpy())
    tr, = [e.run for e in cm._call._cache.values()]
    assert tr.bwd is not None and tr.bwd.regen is None       # the backward recorded, then replayed
    model.zero_grad()       # (.grad None, as at the calls in _train: the same guards)
    assert cm(tgrad.zeros(2, 1, 8, 8)).grad_fn.name() == "CompiledFunctionBackward"


def test_compiled_module_forward_that_cannot_be_replayed_runs_eagerly_with_one_warning():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 2)

        def forward(self, x):
            y = self.lin(x)
            return y * 2 if y.sum().item() > 0 else y       # a value read back: a data-dependent path
    tgrad.manual_seed(0)
    model = Net()
    cm = tgrad.compile(model)
    x = tgrad.ones(4, 3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(4):
            cm(x).sum().backward()
    msgs = [m for m in w if "tgrad.compile" in str(m.message)]
    assert len(msgs) == 1
    assert "Net.forward runs eagerly" in str(msgs[0].message) and "Tensor.item" in str(msgs[0].message)
    assert msgs[0].filename == __file__         # points at the caller of the compiled module
    model.zero_grad()
    model(x).sum().backward()
    g = model.lin.weight.grad.cpu().numpy().copy()
    model.zero_grad()
    cm(x).sum().backward()
    np.testing.assert_array_equal(model.lin.weight.grad.cpu().numpy(), g)


def test_compiled_module_replays_under_no_grad():
    model = _net().eval()
    cm = tgrad.compile(model)
    xs = [tgrad.tensor(np.random.default_rng(i).standard_normal((2, 1, 8, 8)).astype(np.float32)) for i in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with tgrad.no_grad():
            outs = [cm(x).cpu().numpy().copy() for x in xs]
            refs = [model(x).cpu().numpy() for x in xs]
    for o, r in zip(outs, refs):
        np.testing.assert_array_equal(o, r)
    assert cm._call._cache and all(e.run is not None for e in cm._call._cache.values())


def test_module_compile_in_place_replays_and_keeps_the_module():
    """``model.compile()`` (PyTorch's Module.compile): calls go through tgrad.compile's capture and replay, with
    eager's numbers; the module keeps its type and state_dict; ``disable=True`` leaves it eager."""
    ref_model = _net()
    ref = _train(ref_model, ref_model)
    model = _net()
    assert model.compile() is None
    assert type(model) is nn.Sequential and list(model.state_dict()) == list(ref_model.state_dict())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        losses = _train(model, model)
    assert losses == ref
    call = model.__dict__["_compiled_call_impl"]
    tr, = [e.run for e in call._cache.values()]
    assert tr.bwd is not None and tr.bwd.regen is None       # replayed, not run eagerly
    eager = _net()
    eager.compile(disable=True)
    assert eager.__dict__["_compiled_call_impl"] is None
