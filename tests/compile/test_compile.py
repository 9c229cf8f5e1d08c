"""tgrad.compile: replayed steps give eager's bits; guards re-record; what cannot replay stays eager."""
import gc
import os
import sys
import warnings

import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import steps as S  # noqa: E402


def _np(t):
    return t.detach().cpu().numpy().copy()


def _params(step):
    if hasattr(step, "params"):
        return [_np(p) for p in step.params]
    cells = [c.cell_contents for c in step.__closure__]
    model = next(c for c in cells if isinstance(c, nn.Module))
    return [_np(p) for p in model.parameters()]


def _same(xs, ys):
    return len(xs) == len(ys) and all(np.array_equal(x, y) for x, y in zip(xs, ys))


@pytest.mark.parametrize("name", ["a", "b", "c", "d", "e"])
def test_replayed_steps_are_bit_identical(name):
    n = 200
    eager, comp = S.build(name, tgrad), S.build(name, tgrad)
    compiled = tgrad.compile(comp)
    for i in range(n):
        le, lc = eager(), compiled()
        assert np.array_equal(_np(le), _np(lc)), (name, i)
    assert _same(_params(eager), _params(comp))
    entries = list(compiled._cache.values())
    assert any(e.run is not None for e in entries) and not any(e.eager for e in entries)    # replayed


def _mlp(seed=0, dropout=0.0):
    tgrad.manual_seed(seed)
    layers = [nn.Linear(6, 8), nn.ReLU()] + ([nn.Dropout(dropout)] if dropout else []) + [nn.Linear(8, 3)]
    return nn.Sequential(*layers)


def _data(n=5, seed=1):
    rng = np.random.default_rng(seed)
    return (tgrad.tensor(rng.standard_normal((n, 6)).astype(np.float32)),
            tgrad.tensor(rng.integers(0, 3, n)))


def _pair(make_step, calls, between=None):
    """Run make_step's step eagerly and compiled side by side; returns both (losses, params)."""
    out = []
    for comp in (False, True):
        model, opt, step, extra = make_step()
        f = tgrad.compile(step) if comp else step
        losses = []
        for i in range(calls):
            if between is not None:
                between(i, model, opt, extra)
            losses.append(_np(f()))
        out.append((losses, [_np(p) for p in model.parameters()], f))
    (le, pe, _), (lc, pc, f) = out
    assert _same(le, lc) and _same(pe, pc)
    return f


def _standard(dropout=0.0, sched=False, hook=None, retain=False, zero_first=False):
    def make():
        model = _mlp(dropout=dropout)
        x, y = _data()
        opt = tgrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        sch = tgrad.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5) if sched else None
        if hook is not None:
            hook(model)

        def step():
            if zero_first:
                opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            if retain:
                loss.backward(retain_graph=True)
            loss.backward()
            opt.step()
            if not zero_first:
                opt.zero_grad()
            if sch is not None:
                sch.step()
            return loss
        return model, opt, step, {"x": x, "sched": sch}
    return make


def test_lr_scheduler_and_lr_edits_are_honoured():
    def between(i, model, opt, extra):
        if i == 7:
            opt.param_groups[0]["lr"] = 0.05
    f = _pair(_standard(sched=True), 12, between)
    assert len(f._cache) == 1


def test_hooks_and_retain_graph():
    def hook(model):
        model[0].weight.register_hook(lambda g: g * 0.5)
        model[2].register_forward_hook(lambda m, i, o: o * 2)
    _pair(_standard(hook=hook), 8)
    _pair(_standard(retain=True), 8)


def test_grads_left_after_the_step():
    f = _pair(_standard(zero_first=True), 8)
    assert len(f._cache) <= 2


def test_dropout_draws_fresh_numbers_each_call():
    f = _pair(_standard(dropout=0.5), 10)
    model = _mlp(dropout=0.5)
    x, _ = _data()
    g = tgrad.compile(lambda: model(x))
    with tgrad.no_grad():
        outs = [_np(g()) for _ in range(5)]
    assert not np.array_equal(outs[3], outs[4])
    assert f._cache


def test_gradient_accumulation_across_calls():
    def make():
        model = _mlp()
        x, y = _data()
        opt = tgrad.optim.SGD(model.parameters(), lr=0.1)

        def step():
            loss = F.cross_entropy(model(x), y) / 4
            loss.backward()
            return loss
        return model, opt, step, None

    def between(i, model, opt, extra):
        if i % 4 == 0 and i:
            opt.step()
            opt.zero_grad()
    _pair(make, 16, between)


def test_frozen_layers_and_toggling_requires_grad():
    def make():
        m, o, s, e = _standard()()
        m[0].weight.requires_grad_(False)
        return m, o, s, e

    def between(i, model, opt, extra):
        if i == 5:
            model[0].weight.requires_grad_(True)
        if i == 9:
            model[2].bias.requires_grad_(False)
    f = _pair(make, 14, between)
    assert len(f._cache) == 3


def test_train_eval_and_module_compile():
    model = _mlp(dropout=0.3)
    cm = tgrad.compile(model)
    ref = _mlp(dropout=0.3)
    rng = np.random.default_rng(3)
    for mode in ("eval", "train", "eval"):
        getattr(model, mode)()
        getattr(ref, mode)()
        for i, n in enumerate((5, 5, 5, 7, 5)):
            x = tgrad.tensor(rng.standard_normal((n, 6)).astype(np.float32))
            with tgrad.no_grad():
                tgrad.manual_seed(i)        # both draw the same dropout masks
                y = _np(cm(x))
                tgrad.manual_seed(i)
                assert np.array_equal(y, _np(ref(x)))
    assert cm.training is False and cm._orig_mod is model


def test_state_dict_between_calls():
    def between(i, model, opt, extra):
        if i == 4:
            extra["saved"] = ({k: v.clone() for k, v in model.state_dict().items()}, opt.state_dict())
        if i == 8:
            model.load_state_dict(extra["saved"][0])
            opt.load_state_dict(extra["saved"][1])

    def make():
        m, o, s, e = _standard()()
        return m, o, s, {}
    _pair(make, 12, between)


def test_new_input_tensors_are_read_where_they_are():
    model = _mlp()
    f = tgrad.compile(lambda x: model(x))
    rng = np.random.default_rng(5)
    with tgrad.no_grad():
        for _ in range(5):
            x = tgrad.tensor(rng.standard_normal((4, 6)).astype(np.float32))
            assert np.array_equal(_np(f(x)), _np(model(x)))


def test_item_mid_step_stays_eager_with_one_warning():
    def make():
        m, o, s, e = _standard()()

        def step():
            loss = s()
            if loss.item() > 100:       # data-dependent control flow
                raise AssertionError
            return loss
        return m, o, step, e
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        f = _pair(make, 6)
    msgs = [str(x.message) for x in w if "tgrad.compile" in str(x.message)]
    assert len(msgs) == 1 and "Tensor.item" in msgs[0] and "eagerly" in msgs[0]
    assert all(e.eager for e in f._cache.values())


def test_outputs_are_fresh_tensors():
    step = S.build("a", tgrad)
    f = tgrad.compile(step)
    losses = [f() for _ in range(6)]
    ref = S.build("a", tgrad)
    expect = [ref().item() for _ in range(6)]
    assert [x.item() for x in losses] == expect
    # an output nothing holds any more gives its block to the next call's; a held one keeps its own (on cpu a
    # live numpy view alone holds it)
    out = f().detach()
    kept, addr = out.cpu().numpy().copy(), out.data_ptr()
    holder = out.numpy() if out.device.type == "cpu" else out
    del out
    ptrs = {f().data_ptr() for _ in range(4)}
    now = holder if isinstance(holder, np.ndarray) else holder.cpu().numpy()
    assert len(ptrs) == 1 and np.array_equal(now, kept) and addr not in ptrs


def test_memory_of_a_replay_within_eager_peak_and_freed_on_del():
    """... and freed with the last reference, without a garbage collection (no cycle holds it)."""
    gc.collect()
    gc.disable()
    try:
        step = S.build("b", tgrad)
        for _ in range(3):
            step()
        base = tgrad.memory_allocated()
        tgrad.reset_peak_memory_stats()
        step()
        eager_peak = tgrad.max_memory_allocated() - base
        f = tgrad.compile(step)
        for _ in range(4):
            f()
        assert f._fast is not None      # (its fast guard made)
        tgrad.reset_peak_memory_stats()
        loss = f()
        del loss
        assert tgrad.max_memory_allocated() - base <= eager_peak
        del f
        assert tgrad.memory_allocated() == base
    finally:
        gc.enable()


def test_cache_bound_warns():
    model = _mlp()
    f = tgrad.compile(lambda x: model(x))
    with warnings.catch_warnings(record=True) as w, tgrad.no_grad():
        warnings.simplefilter("always")
        for n in range(1, 12):
            f(tgrad.zeros(n, 6))
    assert any("cache_size_limit" in str(x.message) for x in w)
    assert len(f._cache) <= 8


def test_decorator_and_disable():
    @tgrad.compile
    def g(x):
        return x * 2 + 1

    @tgrad.compile(disable=True)
    def h(x):
        return x

    x = tgrad.arange(4.0)
    for _ in range(4):
        assert g(x).tolist() == [1.0, 3.0, 5.0, 7.0]
    assert h(x) is x


@pytest.mark.parametrize("body", ["print", "python_value"])
def test_host_side_effects_stay_eager(body, capsys):
    model = _mlp()
    x, _ = _data()

    def step():
        y = model(x).sum()
        if body == "print":
            print(y)
            return y
        return y, len(x)
    f = tgrad.compile(step)
    with warnings.catch_warnings(record=True) as w, tgrad.no_grad():
        warnings.simplefilter("always")
        outs = [f() for _ in range(4)]
    assert sum("runs eagerly" in str(m.message) for m in w) == 1
    if body == "print":
        assert capsys.readouterr().out.count("tensor(") == 4
    else:
        assert outs[3][1] == 5


def test_set_num_threads():
    n = tgrad.get_num_threads()
    try:
        for k in (2, 1):
            tgrad.set_num_threads(k)
            assert tgrad.get_num_threads() == k
        a = tgrad.randn(40, 30)
        assert np.allclose((a @ a.T).cpu().numpy(), a.cpu().numpy() @ a.cpu().numpy().T, atol=1e-4)
    finally:
        tgrad.set_num_threads(n)
    with pytest.raises(RuntimeError, match="positive integer"):
        tgrad.set_num_threads(0)


def test_module_in_training_with_backward_outside_accumulates():
    """A compiled Module's forward and backward replayed (tgrad/_compile/aot.py), gradients accumulated in .grad."""
    model = _mlp()
    cm = tgrad.compile(model)
    ref = _mlp()
    x, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(6):
            for m in (cm, ref):
                F.cross_entropy(m(x), y).backward()
    assert F.cross_entropy(cm(x), y).grad_fn.next_functions[0][0].name() == "CompiledFunctionBackward"
    assert _same([_np(p.grad) for p in model.parameters()], [_np(p.grad) for p in ref.parameters()])


def test_host_data_copied_inside_the_step_stays_eager():
    """A tensor built from host data inside the step (a numpy buffer the guards cannot see) would replay
    stale bytes: the step stays eager, with the reason."""
    w = tgrad.ones(3, requires_grad=True)
    data = np.zeros(3, dtype=np.float32)

    @tgrad.compile
    def step():
        return (w * tgrad.tensor(data)).sum()

    outs = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(5):
            data[:] = [i, 1.0, 2.0]
            outs.append(step().item())
    assert outs == [3.0 + i for i in range(5)]
    assert any("copies host data" in str(c.message) for c in caught)


def test_fullgraph_raises_instead_of_running_eagerly():
    w = tgrad.ones(3, requires_grad=True)

    @tgrad.compile(fullgraph=True)
    def step():
        loss = (w * 2).sum()
        if loss.item() > 0:         # a value read back mid-step
            return loss
        return -loss

    step()
    with pytest.raises(RuntimeError, match="fullgraph=True.*cannot be captured"):
        step()


def test_hooks_added_and_removed_after_compiling_are_guards():
    """A hook registered (or removed) between calls changes the step: it is re-recorded, never replayed
    without (or with) the hook's kernels."""
    def between(i, model, opt, extra):
        if i == 4:
            extra["h"] = [model[2].register_forward_hook(lambda m, inp, out: out * 2),
                          model[0].weight.register_hook(lambda g: g * 0.5),
                          model[0].register_forward_pre_hook(lambda m, inp: (inp[0] + 1,))]
        if i == 9:
            for h in extra["h"]:
                h.remove()

    def make():
        m, o, s, e = _standard()()
        return m, o, s, {}
    f = _pair(make, 14, between)
    assert len(f._cache) == 2 and all(e.run is not None for e in f._cache.values())


SCALE = 1.0     # a module-level number the step below reads


def test_python_numbers_read_by_the_step_are_guards():
    """Numbers the step reads (a global, a closure dict's value) are part of the guard: a new value is
    recorded again (as eager would compute it), an old value replays its record."""
    cfg = {"shift": 0.0}
    w = nn.Parameter(tgrad.ones(3))

    def step():
        loss = ((w * SCALE + cfg["shift"]) ** 2).sum()
        loss.backward()
        return loss

    global SCALE
    f = tgrad.compile(step)
    vals = []
    for i in range(12):
        SCALE, cfg["shift"] = (1.0, 0.0) if i < 4 else (2.0, 0.0) if i < 8 else (1.0, 0.5)
        w.grad = None
        vals.append((f().item(), w.grad.tolist()))
    SCALE = 1.0
    assert vals[3] == (3.0, [2.0] * 3)
    assert vals[7] == (12.0, [8.0] * 3)
    assert vals[11] == (6.75, [3.0] * 3)
    assert len(f._cache) == 3 and all(e.run is not None for e in f._cache.values())


def test_sgd_step_replays_its_launches_while_what_it_reads_is_unchanged():
    """An SGD step in a replay relaunches its recorded kernels without its Python while its groups,
    hyper-parameters, parameters, gradients and state are the recorded objects and values; another learning
    rate or a reloaded state runs ``SGD.step`` itself (eager's numbers: test_lr_scheduler_..., test_state_dict_...)."""
    code = tgrad.optim.SGD.step.__code__
    calls = []

    def prof(frame, event, arg):
        if event == "call" and frame.f_code is code:
            calls.append(1)
    model, opt, step, _ = _standard()()
    f = tgrad.compile(step)
    counts = []
    for i in range(8):
        if i in (4, 5):
            opt.param_groups[0]["lr"] = 0.05 if i == 4 else 0.1
        if i == 6:
            opt.load_state_dict(opt.state_dict())
        calls.clear()
        sys.setprofile(prof)
        try:
            f()
        finally:
            sys.setprofile(None)
        counts.append(len(calls))
    # eager, recorded, first replay (on cpu the tier-1 program calls the step; cuda replays pre-packed launches
    # from the start), replayed; lr 0.05; back; new state
    first = 1 if next(model.parameters()).device.type == "cpu" else 0
    assert counts == [1, 1, first, 0, 1, 0, 1, 1]
