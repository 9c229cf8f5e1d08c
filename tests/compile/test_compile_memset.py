"""A zero fill in a compiled step (``.grad.zero_()``, ``zero_grad(set_to_none=False)``) is recorded as the memset
eager does (no fill kernel launched while recording), replayed as one (a fill of those bytes); inside a host call (``zero_grad``) the
call runs; the bits stay eager's."""
import numpy as np

import tgrad

CPU_ONLY = True     # the cpu recorder's memsets


def _make(set_to_none):
    tgrad.manual_seed(0)
    rng = np.random.default_rng(0)
    x = tgrad.tensor(rng.standard_normal((12, 1)).astype(np.float32))
    y = 1 + 2 * x
    b = tgrad.randn(1, requires_grad=True)
    w = tgrad.randn(3, 1, requires_grad=True)
    opt = tgrad.optim.SGD([b, w], lr=0.1)

    def step():
        loss = ((b + (x * w.sum(0)) - y) ** 2).mean()
        loss.backward()
        if set_to_none:
            with tgrad.no_grad():
                b.sub_(0.1 * b.grad)
                w.sub_(0.1 * w.grad)
            b.grad.zero_()
            w.grad.zero_()
        else:
            opt.step()
            opt.zero_grad(set_to_none=False)
        return loss
    return step, (b, w)


def test_zero_fill_is_a_recorded_memset():
    for manual in (True, False):
        eager, pe = _make(manual)
        step, pc = _make(manual)
        compiled = tgrad.compile(step)
        for _ in range(6):
            assert eager().item() == compiled().item()
        for p, q in zip(pe, pc):
            assert p.detach().numpy().tobytes() == q.detach().numpy().tobytes()
            assert p.grad.numpy().tobytes() == q.grad.numpy().tobytes()
        run = next(e.run for e in compiled._cache.values() if e.run is not None)
        ns = run.run.__globals__
        # (the cpu program fills a numpy view of the bytes; zero_grad is a host call: it runs, zero_() inside it)
        assert (".fill(0)" in run.source) == manual
        assert not any("fill" in getattr(getattr(v, "kernel", None), "__name__", "") for v in ns.values())
