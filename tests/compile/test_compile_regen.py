"""The recording call builds a tier-1 program (tapes called, the optimizer step called as in eager); the program is
generated again after the first replay, with every launch a compiled tape - also a launch first traced by that
replay (its key's 2nd launch: the optimizer's first step with momentum buffers runs in the recording call) - and
the bits stay eager's."""
import numpy as np

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
from tgrad.kernels.runtime.launcher import Launch

CPU_ONLY = True     # the cpu replay program's regeneration


def _step(model, opt, x, y):
    def step():
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    return step


def _make():
    tgrad.manual_seed(0)
    rng = np.random.default_rng(0)
    model = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3))
    opt = tgrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = tgrad.tensor(rng.standard_normal((4, 6)).astype(np.float32))
    y = tgrad.tensor(rng.integers(0, 3, 4))
    return model, _step(model, opt, x, y)


def _launches(run):
    return [v for v in run.run.__globals__.values() if isinstance(v, Launch)]


def test_program_generated_again_after_the_first_replay():
    m_eager, eager = _make()
    m_comp, step = _make()
    compiled = tgrad.compile(step)
    losses = []
    for i in range(6):
        c = compiled().item()     # (first: eager's steps would trace the update's key before the recording)
        losses.append((eager().item(), c))
        if i == 1:      # recorded: the momentum update's key has run once (traced on its next launch)
            run = next(e.run for e in compiled._cache.values() if e.run is not None)
            assert run.regen is not None and "t0s0_" not in run.source     # tier 1: no tape inlined
    assert run.regen is None and not _launches(run) and "t0s0_" in run.source, run.source
    assert all(a == b for a, b in losses), losses
    for p, q in zip(m_eager.parameters(), m_comp.parameters()):
        assert p.detach().numpy().tobytes() == q.detach().numpy().tobytes()


def test_recording_call_compiles_no_source(monkeypatch):
    """Tier 1 is the recorded calls in a list (``replay.tier1``), not a generated program: the recording call
    compiles nothing; the first replay runs that list and the program compiled after it gives eager's bits."""
    import builtins
    m_eager, eager = _make()
    m_comp, step = _make()
    compiled = tgrad.compile(step)
    compiled()
    eager()
    compiles = []
    real = builtins.compile
    monkeypatch.setattr(builtins, "compile", lambda *a, **k: compiles.append(a[1]) or real(*a, **k))
    assert compiled().item() == eager().item()          # the recording call
    monkeypatch.setattr(builtins, "compile", real)
    assert not compiles, compiles
    run = next(e.run for e in compiled._cache.values() if e.run is not None)
    assert run.regen is not None and run.source.startswith("# tier 1")
    for _ in range(4):
        assert compiled().item() == eager().item()
    assert run.regen is None and "t0s0_" in run.source
    for p, q in zip(m_eager.parameters(), m_comp.parameters()):
        assert p.detach().numpy().tobytes() == q.detach().numpy().tobytes()
