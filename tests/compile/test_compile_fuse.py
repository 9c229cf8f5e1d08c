"""tgrad.compile's cpu program (``_compile/fuse.py``): tapes inlined, a stored array read back directly by the next
launch, stores nothing reads dropped; the numbers are eager's bit for bit."""
import re

import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
from tgrad._compile import replay as R
from tgrad.kernels.runtime.launcher import CpuTwin

CPU_ONLY = True     # tests the cpu replay's fusion (conftest)


def _run(make, calls=6):
    """Losses and parameters of ``make()``'s step run eagerly and compiled (fused), and the compiled source."""
    out = []
    for compiled in (False, True):
        step, params = make()
        f = tgrad.compile(step) if compiled else step
        losses = [f().detach().numpy().copy() for _ in range(calls)]
        out.append((losses, [p.detach().numpy().copy() for p in params]))
    runs = [e.run for e in f._cache.values() if e.run is not None]
    assert runs, "the step was not replayed"
    return out, runs[0]


def _stores(run):
    """Stores into memory the replay program makes per call (counting inside the tapes it calls)."""
    ns, n = run.run.__globals__, 0
    for line in run.source.split("\n"):
        n += line.count("[...] = ")
        m = re.match(r"^    (k\d+)\(", line)
        if m and hasattr(ns[m.group(1)], "source"):
            n += ns[m.group(1)].source.count("[...] = ")
    return n


def _same(a, b):
    (la, pa), (lb, pb) = a, b
    return all(np.array_equal(x, y) for x, y in zip(la + pa, lb + pb))


def _mlp_step(momentum=0.9):
    def make():
        tgrad.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 3))
        rng = np.random.default_rng(1)
        x = tgrad.tensor(rng.standard_normal((5, 6)).astype(np.float32))
        y = tgrad.tensor(rng.integers(0, 3, 5))
        opt = tgrad.optim.SGD(model.parameters(), lr=0.1, momentum=momentum)

        def step():
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        return step, list(model.parameters())
    return make


def test_chain_is_inlined_forwarded_and_dead_stores_dropped():
    make = _mlp_step()
    R.FUSE = False
    try:
        _, plain = _run(make)
    finally:
        R.FUSE = True
    (eager, fused), run = _run(make)
    assert _same(eager, fused)
    src = run.source
    # the launches are inlined (none of the forward's and backward's tapes is called: a C twin is, the loss) ...
    ns = run.run.__globals__
    called = [ns[k] for k in re.findall(r"^    (k\d+)\((?!k)", src, re.M)]
    assert len(set(re.findall(r"\bc(\d+)_k\d+", src))) >= 8 and all(type(f) is CpuTwin for f in called)
    # ... loads read the previous launch's array (linear -> relu -> linear ...) instead of copying memory ...
    assert len(re.findall(r"= t\d+s\d+_\d+(?:\[c\d+_k\d+\])?(?:\.reshape\(.*\))?$", src, re.M)) >= 3
    # ... and stores into temporaries nothing reads any more are gone
    assert _stores(run) < _stores(plain)


def test_fusion_off_gives_the_same_bits():
    make = _mlp_step()
    R.FUSE = False
    try:
        (eager, plain), run = _run(make)
    finally:
        R.FUSE = True
    (_, fused), run2 = _run(make)
    assert "t0s0_" not in run.source and "t0s0_" in run2.source
    assert _same(eager, plain) and _same(plain, fused)


@pytest.mark.parametrize("body", ["inplace", "reuse", "views"])
def test_overwritten_and_reread_temporaries(body):
    """A temporary written in place after a read, read again in another shape, or read through views: every
    forwarded value is the one in memory at that point."""
    def make():
        tgrad.manual_seed(0)
        w = tgrad.randn(4, 6, requires_grad=True)
        x = tgrad.randn(4, 6)

        def step():
            if body == "inplace":
                y = w * 2.0
                z = y.relu()
                y.add_(1.0)             # y rewritten after z read it
                loss = (z * y).sum() + y.exp().mean()
            elif body == "reuse":
                y = (w + x).tanh()
                loss = (y.reshape(6, 4) @ y).sum() + y.sigmoid().sum()
            else:
                y = w * x
                loss = (y[:, 1:] - y[:, :-1]).pow(2).sum() + y.t().contiguous().abs().sum()
            loss.backward()
            with tgrad.no_grad():
                w.sub_(0.01 * w.grad)
            w.grad = None
            return loss
        return step, [w]
    (eager, fused), _ = _run(make, calls=5)
    assert _same(eager, fused)
