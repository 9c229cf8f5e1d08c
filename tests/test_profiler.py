"""tgrad.profiler: launches per kernel / op / step; steady-state training allocates nothing new."""
import numpy as np

import tgrad
import tgrad.nn.functional as F
from tgrad import nn
from tgrad.autograd import dispatch
from tgrad.kernels.runtime import launcher


def _mlp_step(n_in=16, hidden=32, n_out=10, batch=8, seed=0):
    """A (b)-shaped training step (Linear-ReLU-Linear, cross-entropy, SGD with momentum)."""
    rng = np.random.default_rng(seed)
    tgrad.manual_seed(seed)
    model = nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, n_out))
    opt = tgrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = tgrad.tensor(rng.random((batch, n_in), dtype=np.float32))
    y = tgrad.tensor(rng.integers(0, n_out, batch))

    def step():
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    return step


def test_counts_kernels_ops_and_steps():
    a = tgrad.ones(5, requires_grad=True)
    with tgrad.profiler.profile() as prof:
        b = a * 2          # one binary kernel, op "mul"
        prof.step()
        s = b.sum()        # op "sum_all"
        s.backward()
        prof.step()
    assert prof.launches_by_op["mul"] == 1
    assert prof.launches_by_op["sum_all"] == 1
    assert any(op.endswith(".backward") for op in prof.launches_by_op)
    assert prof.launches_per_step[0] == 1
    assert sum(prof.launches_per_step) == prof.total_launches
    assert sum(prof.launches_by_op.values()) == prof.total_launches
    assert sum(prof.launches_by_kernel.values()) == prof.total_launches
    assert prof.launches_by_kernel["binary_kernel"] >= 1
    np.testing.assert_allclose(a.grad.numpy(), 2.0)
    t = prof.table()
    assert "mul" in t and "binary_kernel" in t and "total" in t and "launches per step" in t


def test_off_after_exit_and_nested():
    with tgrad.profiler.profile() as outer:
        tgrad.ones(3) + 1
        with tgrad.profiler.profile() as inner:
            tgrad.ones(3) * 2
        assert dispatch.PROFILING
    assert not dispatch.PROFILING and dispatch.current_op() is None
    assert "add" not in launcher.COUNTER.__dict__  # the launch hook is removed
    assert inner.launches_by_op.get("mul") == 1 and "add" not in inner.launches_by_op
    assert outer.launches_by_op.get("mul") == 1 and outer.launches_by_op.get("add") == 1
    assert all(outer.by_op_kernel[k] >= n for k, n in inner.by_op_kernel.items())
    assert outer.total_launches > inner.total_launches
    before = outer.total_launches
    tgrad.ones(3) * 2
    assert outer.total_launches == before


def test_launches_per_training_step_are_stable():
    step = _mlp_step()
    step()
    with tgrad.profiler.profile() as prof:
        for _ in range(3):
            step()
            prof.step()
    n = prof.launches_per_step
    assert len(n) == 3 and n[0] == n[1] == n[2] > 0
    assert prof.launches_by_op["linear"] == 2 * 3   # bias + activation fused into one launch each
    assert prof.launches_by_op["cross_entropy"] == 3


def test_steady_state_training_allocates_nothing_new():
    """After the first step, steps reuse cached blocks: no backend allocation (PyTorch's
    ``num_device_alloc``) in steps 2..10 of an MLP training step."""
    step = _mlp_step(n_in=64, hidden=128, n_out=10, batch=64)
    step()
    counts = []
    for _ in range(9):
        step()
        counts.append(tgrad.memory_stats("cpu")["num_device_alloc"])
    assert counts == [counts[0]] * 9, counts


def test_host_cache_switch_frees_segments():
    """With the cache off (``TGRAD_HOST_CACHE=0``), freed segments go back to the backend at once."""
    alloc = tgrad.memory.get_allocator("cpu")
    old = alloc.release_on_free
    try:
        alloc.release_on_free = True
        alloc.empty_cache()         # a free segment cached by an earlier test could serve the malloc below
        s0 = alloc.memory_stats()
        b = alloc.malloc(3 << 20)   # a large-pool segment of its own
        alloc.free(b)
        s1 = alloc.memory_stats()
    finally:
        alloc.release_on_free = old
    assert s1["num_device_alloc"] - s0["num_device_alloc"] == 1
    assert s1["num_device_free"] - s0["num_device_free"] >= 1
    assert s1["reserved_bytes.all.current"] <= s0["reserved_bytes.all.current"]


def test_inplace_ops_are_attributed():
    x = tgrad.zeros(4)
    base = tgrad.zeros(2, 4, requires_grad=True).clone()
    with tgrad.profiler.profile() as prof:
        x.mul_(3)          # call_inplace
        base[0].add_(1)    # in-place on a view of a tensor with history
    assert prof.launches_by_op.get("mul") == 1
    assert prof.launches_by_op.get("add") == 1
    np.testing.assert_allclose(base.detach().numpy()[0], 1.0)
