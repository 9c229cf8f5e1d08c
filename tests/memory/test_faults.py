"""Fault tests (issue 16): out of memory in the middle of a training step on a capped backend."""
import pytest

import tgrad
from tgrad import nn, optim
from tgrad.memory import get_allocator


def _model():
    tgrad.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 128), nn.Tanh(), nn.Linear(128, 10))


def _step(model, opt, x, y):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()


@pytest.mark.cpu_only(reason="caps the cpu backend (HostBackend.capacity); a GPU's memory is the driver's")
def test_oom_mid_step_then_next_step_works():
    alloc = get_allocator("cpu")
    backend = alloc.backend
    model, ref = _model(), _model()
    opt, ref_opt = optim.SGD(model.parameters(), lr=0.1), optim.SGD(ref.parameters(), lr=0.1)
    tgrad.manual_seed(1)
    xb, yb = tgrad.randn(2048, 32), tgrad.randint(0, 10, (2048,))
    x, y = xb[:16].clone(), yb[:16].clone()
    # measure: the forward's peak and the whole step's peak on the big batch, with the reference model
    tgrad.empty_cache()
    base = tgrad.memory_allocated()
    tgrad.reset_peak_memory_stats()
    loss = nn.functional.cross_entropy(ref(xb), yb)
    fwd_peak = tgrad.max_memory_allocated() - base
    loss.backward()
    step_peak = tgrad.max_memory_allocated() - base
    del loss
    ref_opt.zero_grad()
    assert step_peak > fwd_peak + (1 << 20)
    w0 = [p.detach().clone() for p in model.parameters()]
    tgrad.empty_cache()
    before = tgrad.memory_allocated()
    old = backend.capacity
    backend.capacity = backend._in_use + (fwd_peak + step_peak) // 2 + 4096      # forward fits, backward does not
    try:
        with pytest.raises(tgrad.OutOfMemoryError) as e:
            _step(model, opt, xb, yb)
        assert isinstance(e.value, RuntimeError) and str(e.value).startswith("cpu out of memory. Tried to allocate")
        assert "total capacity" in str(e.value)
        e = None
        alloc._check_invariants()
        assert all(p.tolist() == q.tolist() for p, q in zip(model.parameters(), w0))    # the step never reached opt
        assert tgrad.memory_stats()["num_ooms"] >= 1
        opt.zero_grad()
        tgrad.empty_cache()
        assert tgrad.memory_allocated() == before      # nothing of the failed step is left
        got = [_step(model, opt, x, y) for _ in range(2)]          # under the same cap: small batches fit
        alloc._check_invariants()
    finally:
        backend.capacity = old
    want = [_step(ref, ref_opt, x, y) for _ in range(2)]
    assert got == want
    assert all(p.tolist() == q.tolist() for p, q in zip(model.parameters(), ref.parameters()))
