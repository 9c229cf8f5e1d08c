"""Optimizer step hooks (per optimizer and global) and state-dict hooks, as PyTorch 2.13 runs them (the same
program printed the same lines under PyTorch); a compiled step still runs its optimizer's hooks every call."""
import warnings

import pytest

import tgrad as torch
from tgrad.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

CPU_ONLY = True     # Python-side hooks; the compiled-step part checks the cpu replay


def _model():
    torch.manual_seed(0)
    m = torch.nn.Linear(3, 1)
    m(torch.ones(2, 3)).sum().backward()
    return m


def test_step_hooks_order_arguments_and_removal():
    m = _model()
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    log = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: log.append(("pre", a[0] is o, len(a), k)))
    h2 = opt.register_step_post_hook(lambda o, a, k: log.append(("post", len(o.state))))
    g = register_optimizer_step_pre_hook(lambda o, a, k: log.append("global-pre"))
    gp = register_optimizer_step_post_hook(lambda o, a, k: log.append("global-post"))
    opt.step()
    assert log == ["global-pre", ("pre", True, 1, {}), ("post", 2), "global-post"]
    for h in (h1, g, gp):
        h.remove()
    log.clear()
    opt.step()
    assert log == [("post", 2)]
    h2.remove()
    log.clear()
    opt.step()
    assert log == []
    # PyTorch 2.13 after these three steps (printed)
    assert [round(v, 6) for v in m.weight.detach().flatten().tolist()] == [-1.126323, -0.812284, -1.597185]
    opt.register_step_pre_hook(lambda o, a, k: 5)
    with pytest.raises(RuntimeError, match="must return None or a tuple of \\(new_args, new_kwargs\\), but got 5."):
        opt.step()


def test_a_pre_hook_may_replace_the_arguments():
    m = _model()
    opt = torch.optim.LBFGS(m.parameters(), lr=0.1, max_iter=1)
    calls = []

    def closure():
        calls.append(1)
        opt.zero_grad()
        loss = m(torch.ones(2, 3)).sum()
        loss.backward()
        return loss
    opt.register_step_pre_hook(lambda o, a, k: ((o,), {"closure": closure}))
    opt.step()
    assert calls


def test_state_dict_hooks():
    m = _model()
    opt = torch.optim.Adam(m.parameters(), lr=0.1)
    opt.step()
    log = []
    opt.register_state_dict_pre_hook(lambda o: log.append("sd-pre"))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    sd = opt.state_dict()
    assert sorted(sd) == ["extra", "param_groups", "state"] and log == ["sd-pre"]
    opt.register_load_state_dict_pre_hook(lambda o, sd: {k: v for k, v in sd.items() if k != "extra"})
    opt.register_load_state_dict_post_hook(lambda o: log.append("load-post"))
    opt.load_state_dict(sd)
    assert log == ["sd-pre", "load-post"] and int(opt.state[m.weight]["step"].item()) == 1


def test_a_compiled_step_runs_the_hooks_every_call():
    m = _model()
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    count = []
    opt.register_step_post_hook(lambda o, a, k: count.append(1))
    x = torch.ones(4, 3)

    @torch.compile
    def step():
        opt.zero_grad()
        loss = m(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    ref = _model()
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(5):
            step()
            ref_opt.zero_grad()
            ref(x).pow(2).mean().backward()
            ref_opt.step()
    assert len(count) == 5
    assert m.weight.detach().tolist() == ref.weight.detach().tolist()
