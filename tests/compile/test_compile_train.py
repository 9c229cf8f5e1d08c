"""``tgrad.compile(model)`` in a training loop whose loss, ``loss.backward()`` and ``optimizer.step()`` run outside
(AOTAutograd's split, tgrad/_compile/aot.py): bit-identical to eager over many steps of an MLP, a CNN
(Conv2d/BatchNorm2d/MaxPool2d/Dropout) and examples/train_gpt.py's GPT, with the forward and backward replayed
from call 3 on (``CompiledFunctionBackward`` nodes)."""
import gc
import importlib.util
import os
import sys
import warnings

import numpy as np
import pytest

import tgrad
from tgrad import nn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _mlp():
    tgrad.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 16), nn.Tanh(),
                         nn.Linear(16, 3))


def _cnn():
    tgrad.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(4, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Dropout(0.25), nn.Linear(8 * 2 * 2, 5))


def _gpt_module():
    """examples/train_gpt.py imported as a module (its model classes; ``main`` not run)."""
    argv, sys.argv = sys.argv, ["train_gpt.py", "--fast"]
    try:
        spec = importlib.util.spec_from_file_location("_train_gpt_for_compile", os.path.join(ROOT, "examples",
                                                                                              "train_gpt.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.argv = argv
    return mod


def _gpt():
    tgrad.manual_seed(0)
    return _gpt_module().GPT(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16, dropout=0.1)


def _data(kind, steps):
    rng = np.random.default_rng(0)
    out = []
    for _ in range(steps):
        if kind == "mlp":
            x = rng.standard_normal((4, 8)).astype(np.float32)
            y = rng.integers(0, 3, 4)
        elif kind == "cnn":
            x = rng.standard_normal((4, 1, 8, 8)).astype(np.float32)
            y = rng.integers(0, 5, 4)
        else:
            d = rng.integers(0, 11, (2, 9))
            x, y = d[:, :-1].copy(), d[:, 1:].copy()
        out.append((tgrad.tensor(x), tgrad.tensor(y)))
    return out


def _train(kind, model, call, opt, steps, clip=False):
    """Losses, the kinds of node the outputs came from, final parameters and optimizer state."""
    tgrad.manual_seed(1)
    losses, kinds = [], []
    for x, y in _data(kind, steps):
        opt.zero_grad()
        if kind == "gpt":
            _, loss = call(x, y)
        else:
            loss = nn.functional.cross_entropy(call(x), y)
        node = _compiled_node(loss)
        kinds.append(None if node is None else type(node.state).__name__)
        loss.backward()
        if clip:
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    params = {k: v.cpu().numpy().copy() for k, v in model.state_dict().items()}
    return losses, kinds, params


def _compiled_node(t):
    """The CompiledFunctionBackward node ``t`` was computed from, if any (a walk down its graph)."""
    seen, stack = set(), [t.grad_fn]
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        if n.name() == "CompiledFunctionBackward":
            return n
        stack += [m for m, _ in n.next_functions]
    return None


def _same(ref, out):
    assert out[0] == ref[0]
    assert ref[2].keys() == out[2].keys()
    for k in ref[2]:
        np.testing.assert_array_equal(out[2][k], ref[2][k], err_msg=k)


@pytest.mark.parametrize("kind,make,opt,steps", [
    ("mlp", _mlp, lambda ps: tgrad.optim.SGD(ps, lr=0.1, momentum=0.9), 12),
    ("cnn", _cnn, lambda ps: tgrad.optim.Adam(ps, lr=1e-2), 8),
    ("gpt", _gpt, lambda ps: tgrad.optim.AdamW(ps, lr=3e-3, betas=(0.9, 0.99)), 8),
])
def test_compiled_module_trains_bit_identically(kind, make, opt, steps):
    m = make()
    ref = _train(kind, m, m, opt(m.parameters()), steps, clip=kind == "gpt")
    m = make()
    cm = tgrad.compile(m)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = _train(kind, m, cm, opt(m.parameters()), steps, clip=kind == "gpt")
    _same(ref, out)
    assert kind == "gpt" or ref[0][-1] < ref[0][0]      # (the GPT: 8 steps on random tokens)
    # call 1 eager, call 2 recorded (its backward too), then forward and backward replayed
    assert out[1] == [None, "_Recording"] + ["tuple"] * (steps - 2)


def test_a_dropped_compiled_model_frees_its_memory_at_once():
    """A compiled model in training, its optimizer and what its replays hold (programs, arenas, saved blocks, the
    last outputs, CUDA graphs) go back to the allocator with the last reference, not at a later garbage
    collection: no reference cycle holds them (memory freed at some collection's whim moves every later block's
    address, and with it a later replay's CUDA graph address sets)."""
    gc.collect()
    base = tgrad.memory_allocated()
    gc.disable()
    try:
        m = _mlp()
        cm = tgrad.compile(m)
        out = _train("mlp", m, cm, tgrad.optim.SGD(m.parameters(), lr=0.1, momentum=0.9), 6)
        assert out[1][2:] == ["tuple"] * 4      # replayed: forward and backward
        del m, cm, out
        assert tgrad.memory_allocated() == base
    finally:
        gc.enable()


def test_two_calls_before_one_backward_and_gradient_accumulation():
    xs = _data("mlp", 12)

    def run(call, model):
        tgrad.manual_seed(3)
        opt = tgrad.optim.SGD(model.parameters(), lr=0.05)
        losses = []
        for i in range(0, 12, 3):
            opt.zero_grad()
            (x1, y1), (x2, y2), (x3, y3) = xs[i:i + 3]
            a = nn.functional.cross_entropy(call(x1), y1)
            b = nn.functional.cross_entropy(call(x2), y2)       # two forwards alive, then one backward
            (a + 2 * b).backward()
            c = nn.functional.cross_entropy(call(x3), y3)
            c.backward(retain_graph=True)       # accumulated into .grad
            c.backward()                        # through the retained graph again
            opt.step()
            losses += [a.item(), b.item(), c.item()]
        return losses, [p.detach().cpu().numpy().copy() for p in model.parameters()]
    m = _mlp()
    ref = run(m, m)
    m = _mlp()
    cm = tgrad.compile(m)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = run(cm, m)
    assert out[0] == ref[0]
    for a, b in zip(out[1], ref[1]):
        np.testing.assert_array_equal(a, b)
    tr = next(iter(cm._call._cache.values())).run
    assert type(tr).__name__ == "Training" and tr.bwd is not None


def test_parameter_hooks_frozen_layer_and_state_dict():
    xs = _data("mlp", 10)

    def run(call, model):
        tgrad.manual_seed(3)
        seen = []
        model[0].weight.register_hook(lambda g: g * 0.5)
        model[5].bias.register_hook(lambda g: seen.append(g.cpu().numpy().copy()))
        opt = tgrad.optim.Adam(model.parameters(), lr=0.01)
        losses = []
        for i, (x, y) in enumerate(xs):
            if i == 4:
                model[3].weight.requires_grad_(False)      # a frozen layer, toggled after compiling
            if i == 7:
                model[3].weight.requires_grad_(True)
            if i == 6:
                sd = {k: v.clone() for k, v in model.state_dict().items()}
                model.load_state_dict({k: v * 0.9 if v.is_floating_point() else v for k, v in sd.items()})
            opt.zero_grad()
            loss = nn.functional.cross_entropy(call(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, seen, [p.detach().cpu().numpy().copy() for p in model.parameters()]
    m = _mlp()
    ref = run(m, m)
    m = _mlp()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = run(tgrad.compile(m), m)
    assert out[0] == ref[0] and len(out[1]) == len(ref[1]) == 10
    for a, b in zip(out[1] + out[2], ref[1] + ref[2]):
        np.testing.assert_array_equal(a, b)


def test_eval_mode_and_no_grad_between_training_calls():
    m = _cnn()
    cm = tgrad.compile(m)
    ref_m = _cnn()
    opt, ref_opt = tgrad.optim.SGD(m.parameters(), lr=0.1), tgrad.optim.SGD(ref_m.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for x, y in _data("cnn", 8):
            for call, o in ((cm, opt), (ref_m, ref_opt)):
                tgrad.manual_seed(5)
                o.zero_grad()
                nn.functional.cross_entropy(call(x), y).backward()
                o.step()
            m.eval(), ref_m.eval()
            with tgrad.no_grad():
                np.testing.assert_array_equal(cm(x).cpu().numpy(), ref_m(x).cpu().numpy())
            m.train(), ref_m.train()
    for a, b in zip(m.state_dict().values(), ref_m.state_dict().values()):
        np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())


def test_double_backward_falls_back_with_one_warning():
    m = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    cm = tgrad.compile(m)
    x = tgrad.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(3):
            cm(x).sum().backward()              # call 3 replayed
        y = cm(x).sum()                         # call 4 replayed: its double backward raises
        with pytest.raises(RuntimeError, match="double backward"):
            tgrad.autograd.grad(y, m[0].weight, create_graph=True)
        for _ in range(2):                      # eager from now on
            xx = x.clone().requires_grad_(True)
            g, = tgrad.autograd.grad(cm(xx).sum(), xx, create_graph=True)
            gg, = tgrad.autograd.grad(g.sum(), xx)
            xr = x.clone().requires_grad_(True)
            gr, = tgrad.autograd.grad(m(xr).sum(), xr, create_graph=True)
            np.testing.assert_array_equal(gg.cpu().numpy(), tgrad.autograd.grad(gr.sum(), xr)[0].cpu().numpy())
    msgs = [str(m_.message) for m_ in w if "tgrad.compile" in str(m_.message)]
    assert len(msgs) == 1 and "runs eagerly" in msgs[0] and "double backward" in msgs[0]


def test_other_output_gradient_falls_back():
    """The recorded backward took loss.backward()'s implicit 1; a given gradient is another backward."""
    m = nn.Sequential(nn.Linear(3, 2))
    cm = tgrad.compile(m)
    x = tgrad.tensor(np.ones((2, 3), np.float32))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(3):
            cm(x).sum().backward()
        out = cm(x)
        with pytest.raises(RuntimeError, match="other output gradients"):
            out.backward(tgrad.ones(2, 2))
        m.zero_grad()
        cm(x).backward(tgrad.full((2, 2), 2.0))        # eager now
        ref = m[0].weight.grad.cpu().numpy().copy()
        m.zero_grad()
        m(x).backward(tgrad.full((2, 2), 2.0))
        np.testing.assert_array_equal(ref, m[0].weight.grad.cpu().numpy())
    assert sum("runs eagerly" in str(m_.message) for m_ in w) == 1


def test_input_gradients_through_an_eager_stem_and_autocast_guard():
    """Gradients to the inputs (a leaf, and the output of an eager layer: a non-leaf); a call under autocast is
    another guard (not the float32 replay); a parameter changed in place before backward raises, as in eager."""
    stem = nn.Linear(8, 8)
    head, ref_head = _mlp(), _mlp()
    ch = tgrad.compile(head)

    def run(call, model, x0, amp=False):
        x = x0.clone().requires_grad_(True)
        with tgrad.autocast(x.device.type, enabled=amp):
            out = call(stem(x) * x)
        out.float().pow(2).sum().backward()
        g = [t.grad.cpu().numpy().copy() for t in [x] + list(model.parameters()) + [stem.weight]]
        model.zero_grad(), stem.zero_grad()
        return out.detach().float().cpu().numpy(), g
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for i, (x, _) in enumerate(_data("mlp", 7)):
            tgrad.manual_seed(i)
            a = run(ch, head, x, amp=i >= 4)
            tgrad.manual_seed(i)
            b = run(ref_head, ref_head, x, amp=i >= 4)
            for u, v in zip([a[0]] + a[1], [b[0]] + b[1]):
                np.testing.assert_array_equal(u, v)
        x = _data("mlp", 1)[0][0]
        out = ch(stem(x))
        assert out.grad_fn.name() == "CompiledFunctionBackward"
        with tgrad.no_grad():
            head[3].weight.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.pow(2).sum().backward()


def test_outputs_never_backwarded_run_eagerly_with_one_warning():
    """An evaluation with grad mode on: the recorded call's outputs die before any backward, twice more after
    recording again, then the forward runs eagerly (one warning saying to use no_grad)."""
    m = _mlp().eval()
    cm = tgrad.compile(m)
    x = _data("mlp", 1)[0][0]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        outs = [cm(x).detach().cpu().numpy().copy() for _ in range(10)]
    msgs = [str(m_.message) for m_ in w if "tgrad.compile" in str(m_.message)]
    assert len(msgs) == 1 and "no backward ran" in msgs[0] and "no_grad" in msgs[0]
    for o in outs:
        np.testing.assert_array_equal(o, m(x).detach().cpu().numpy())


def test_compiled_function_with_backward_outside():
    """``tgrad.compile(fn)`` of a forward-and-loss function, backward and step outside: call 2 finds outputs that
    require grad and no backward (a whole step would have one), call 3 records it as a forward (its backward too), then it replays."""
    def run(m, compiled):
        def loss_fn(x, y):
            return nn.functional.cross_entropy(m(x), y)
        f = tgrad.compile(loss_fn) if compiled else loss_fn
        opt = tgrad.optim.SGD(m.parameters(), lr=0.1)
        tgrad.manual_seed(2)
        losses, names = [], []
        for x, y in _data("cnn", 8):
            opt.zero_grad()
            loss = f(x, y)
            names.append(loss.grad_fn.name())
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, names, [p.detach().cpu().numpy().copy() for p in m.parameters()]
    ref = run(_cnn(), False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = run(_cnn(), True)
    assert out[0] == ref[0]
    for a, b in zip(out[2], ref[2]):
        np.testing.assert_array_equal(a, b)
    assert out[1] == ["NllLossBackward0"] * 2 + ["CompiledFunctionBackward"] * 6


def test_tensor_kept_by_the_forward_runs_eagerly_with_one_warning():
    """A forward storing a tensor it made on the Module (not in its outputs' graph): a replay would leave the
    attribute stale, so it stays eager, with the reason."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 3)

        def forward(self, x):
            h = self.lin(x)
            self.last_norm = h.detach().abs().sum(1)
            return h
    tgrad.manual_seed(0)
    m = Net()
    cm = tgrad.compile(m)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for x, _ in _data("mlp", 4):
            cm(x).sum().backward()
            np.testing.assert_array_equal(m.last_norm.cpu().numpy(), m.lin(x).detach().abs().sum(1).cpu().numpy())
    msgs = [str(m_.message) for m_ in w if "tgrad.compile" in str(m_.message)]
    assert len(msgs) == 1 and "outlives" in msgs[0]
