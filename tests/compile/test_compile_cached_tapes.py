"""tgrad.compile's cpu program over tapes loaded from the disk cache (runtime/tape_cache.py): a loaded tape keeps
its source, so the replay inlines and fuses it as it does a freshly traced one (a later process's benchmark ran
every launch as a call before), with eager's bits."""
import re

import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
from tgrad.kernels.runtime import tape_cache as TC
from tgrad.kernels.runtime import trace as TR

CPU_ONLY = True     # tests the cpu replay over the cpu tape cache (conftest)


@pytest.fixture
def disk(tmp_path, monkeypatch):
    monkeypatch.setattr(TC, "ENABLED", True)
    monkeypatch.setattr(TC, "DIR", str(tmp_path))
    monkeypatch.setitem(TC._state, "disk_bytes", None)
    TR.clear_tapes()
    yield
    TR.clear_tapes()


def _make():
    tgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 2))
    rng = np.random.default_rng(3)
    x = tgrad.tensor(rng.standard_normal((4, 5)).astype(np.float32))
    y = tgrad.tensor(rng.integers(0, 2, 4))
    opt = tgrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step():
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    return step, model


def _losses(compiled, calls=5):
    step, model = _make()
    f = tgrad.compile(step) if compiled else step
    out = [f().detach().numpy().copy() for _ in range(calls)]
    return out + [p.detach().numpy().copy() for p in model.parameters()], f


def test_loaded_tapes_are_inlined(disk):
    want, _ = _losses(False)
    _losses(True)                           # traces, and stores the tapes on disk
    stored = TC.STATS["stores"]
    assert stored > 0
    TR.clear_tapes()                        # as a new process: the tapes come from disk
    hits = TC.STATS["hits"]
    got, f = _losses(True)
    assert TC.STATS["hits"] > hits
    assert all(np.array_equal(a, b) for a, b in zip(want, got))
    run = next(e.run for e in f._cache.values() if e.run is not None)
    ns = run.run.__globals__
    called = [m for m in re.findall(r"^    (k\d+)\(", run.source, re.M) if hasattr(ns[m], "source")]
    assert not called, "a loaded tape was called, not inlined"
    assert "[...] = " in run.source
