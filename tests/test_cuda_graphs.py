"""CUDA graphs (``tgrad.cuda.CUDAGraph``, ``graph``, ``graph_pool_handle``, ``make_graphed_callables``) on the fake
driver: a captured step replays eager's numbers, reads its static inputs where they are, rejects a sync inside
the capture, and its private memory pool returns to the allocator's baseline once the graph is gone.

Run with ``--device cuda --cuda-driver fake``: the graphs' kernels run on the host through the fake driver
installed in this process (tests/fakecuda), each result compared bit for bit with eager on the same device.
"""
import gc

import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F

try:
    import fakecuda
    _FAKE = fakecuda._state["lib"] is not None
except ImportError:
    _FAKE = False

fake_only = pytest.mark.skipif(not _FAKE, reason="CUDA graph tests run on the fake driver only: "
                                                  "pytest --device cuda --cuda-driver fake")


@pytest.mark.skipif(tgrad.cuda.is_available(), reason="what a process without CUDA sees")
def test_without_cuda_the_graph_api_raises_like_pytorch():
    with pytest.raises(RuntimeError, match="^Tried to instantiate dummy base class CUDAGraph$"):
        tgrad.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="^Tried to instantiate dummy base class _graph_pool_handle$"):
        tgrad.cuda.graph_pool_handle()
    assert not tgrad.cuda.is_current_stream_capturing()


def _np(t):
    return t.detach().cpu().numpy().copy()


def _model(seed=0):
    tgrad.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3)).cuda()


def _batches(n, seed=1):
    rng = np.random.default_rng(seed)
    return [(tgrad.tensor(rng.standard_normal((5, 6)).astype(np.float32), device="cuda"),
             tgrad.tensor(rng.integers(0, 3, 5), device="cuda")) for _ in range(n)]


def _step(model, opt, x, y):
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


def _captured_step(model, opt, x, y, warmup=3):
    """PyTorch's whole-network capture recipe: warm up on a side stream, capture one step into a graph."""
    s = tgrad.cuda.Stream()
    s.wait_stream(tgrad.cuda.current_stream())
    with tgrad.cuda.stream(s):
        for _ in range(warmup):
            _step(model, opt, x, y)
    tgrad.cuda.current_stream().wait_stream(s)
    g = tgrad.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with tgrad.cuda.graph(g):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return g, loss


@fake_only
def test_captured_training_step_replays_eagers_numbers_and_reads_updated_static_inputs():
    data = _batches(6)
    eager, graphed = _model(), _model()
    opt_e = tgrad.optim.SGD(eager.parameters(), lr=0.1, momentum=0.9)
    opt_g = tgrad.optim.SGD(graphed.parameters(), lr=0.1, momentum=0.9)
    x0, y0 = data[0]
    for _ in range(3):
        _step(eager, opt_e, x0, y0)
    static_x, static_y = x0.clone(), y0.clone()
    g, static_loss = _captured_step(graphed, opt_g, static_x, static_y)
    assert all(np.array_equal(_np(a), _np(b)) for a, b in zip(eager.parameters(), graphed.parameters()))
    for x, y in data[1:]:                  # new data copied into the static inputs, then one replay
        le = _step(eager, opt_e, x, y)
        static_x.copy_(x)
        static_y.copy_(y)
        g.replay()
        assert np.array_equal(_np(le), _np(static_loss))
    for a, b in zip(eager.parameters(), graphed.parameters()):
        assert np.array_equal(_np(a), _np(b))
        assert np.array_equal(_np(a.grad), _np(b.grad))
    assert not fakecuda.ERRORS, fakecuda.ERRORS


@fake_only
def test_replay_is_queued_work_done_at_a_synchronization_point():
    x = tgrad.arange(8, dtype=tgrad.float32, device="cuda")
    g = tgrad.cuda.CUDAGraph()
    with tgrad.cuda.graph(g):
        y = x * 2 + 1
    st = y._storage
    raw = np.ctypeslib.as_array((__import__("ctypes").c_float * 8).from_address(st.ptr))
    before = raw.copy()                     # captured, not run: y holds whatever its block held
    g.replay()
    assert np.array_equal(raw, before)      # queued on the stream, not yet done
    assert np.array_equal(_np(y), np.arange(8) * 2 + 1)   # the copy back synchronizes


@fake_only
def test_capture_errors_like_pytorch():
    g = tgrad.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="CUDA graphs must be captured on a non-default stream"):
        g.capture_begin()
    with pytest.raises(RuntimeError, match="Called CUDAGraph::replay without a preceding successful capture"):
        g.replay()
    x = tgrad.ones(4, device="cuda")
    assert not tgrad.cuda.is_current_stream_capturing()
    with tgrad.cuda.graph(g):
        y = x + 1
        assert tgrad.cuda.is_current_stream_capturing()
    assert not tgrad.cuda.is_current_stream_capturing()
    with pytest.raises(RuntimeError, match="already owns a captured graph"):
        g.capture_begin()
    g.replay()
    assert np.array_equal(_np(y), np.full(4, 2.0))


@fake_only
@pytest.mark.parametrize("sync", ["item", "synchronize", "stream_synchronize"])
def test_a_sync_inside_a_capture_raises_and_the_capture_is_dropped(sync):
    x = tgrad.ones(4, device="cuda")
    g = tgrad.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="operation not permitted when stream is capturing|legacy stream"):
        with tgrad.cuda.graph(g):
            y = (x * 3).sum()
            if sync == "item":
                y.item()
            elif sync == "synchronize":
                tgrad.cuda.synchronize()
            else:
                tgrad.cuda.current_stream().synchronize()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()
    assert float((x * 3).sum().cpu()) == 12.0        # the device still works, nothing stuck capturing
    g2 = tgrad.cuda.CUDAGraph()                      # and a new capture works
    with tgrad.cuda.graph(g2):
        z = x * 5
    g2.replay()
    assert np.array_equal(_np(z), np.full(4, 5.0))


def _graph_segments(al):
    """[(start, end)] of the allocator's segments that belong to graph pools."""
    pools = {id(p) for g in al._graph_pools.values() for p in (g.small, g.large)}
    return [(lo, lo + n) for lo, (n, head) in al._segments.items() if id(head.pool) in pools]


@fake_only
def test_private_pool_is_not_shared_and_returns_to_baseline_after_the_graph_is_deleted():
    tgrad.cuda.synchronize()
    gc.collect()
    tgrad.cuda.empty_cache()
    al = tgrad.memory.allocator.get_allocator("cuda")
    base_alloc, base_res = tgrad.cuda.memory_allocated(), tgrad.cuda.memory_reserved()
    model = _model()
    opt = tgrad.optim.SGD(model.parameters(), lr=0.1)
    x, y = _batches(1)[0]
    g, loss = _captured_step(model, opt, x, y)
    assert _graph_segments(al), "the capture allocated from a private pool"
    g.replay()
    lost = _np(loss)
    del loss                                         # a private block freed: not handed to an eager tensor
    fresh = [tgrad.empty(1, device="cuda") for _ in range(50)]
    segs = _graph_segments(al)
    assert not any(lo <= t.data_ptr() < hi for t in fresh for lo, hi in segs)
    al._check_invariants()
    assert np.isfinite(lost)
    del fresh, g, x, y, model, opt
    gc.collect()
    tgrad.cuda.empty_cache()
    al._check_invariants()
    assert tgrad.cuda.memory_allocated() == base_alloc
    assert tgrad.cuda.memory_reserved() == base_res
    assert not al._graph_pools


@fake_only
def test_graphs_sharing_a_pool_handle():
    pool = tgrad.cuda.graph_pool_handle()
    x = tgrad.ones(4, device="cuda")
    g1, g2 = tgrad.cuda.CUDAGraph(), tgrad.cuda.CUDAGraph()
    with tgrad.cuda.graph(g1, pool=pool):
        a = x * 2
    with tgrad.cuda.graph(g2, pool=g1.pool()):
        b = a + 1
    assert g1.pool() == g2.pool() == pool
    g1.replay()
    g2.replay()
    assert np.array_equal(_np(b), np.full(4, 3.0))


@fake_only
def test_make_graphed_callables_module_and_function():
    data = _batches(4, seed=3)
    eager, graphed = _model(2), _model(2)
    eager_fn = lambda t: (t * t).sum(dim=1, keepdim=True)      # noqa: E731
    x0 = data[0][0].clone().requires_grad_(True)
    h0 = tgrad.zeros(5, 3, device="cuda").requires_grad_(True)
    g_mod, g_fn = tgrad.cuda.make_graphed_callables((graphed, eager_fn), ((x0,), (h0,)))
    assert g_mod is graphed
    for x, _ in data:
        for m in (eager, graphed):
            for p in m.parameters():
                p.grad = None
        xe, xg = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
        oe = eager_fn(eager(xe))
        og = g_fn(g_mod(xg))
        assert np.array_equal(_np(oe), _np(og))
        oe.sum().backward()
        og.sum().backward()
        assert np.array_equal(_np(xe.grad), _np(xg.grad))
        for a, b in zip(eager.parameters(), graphed.parameters()):
            assert np.array_equal(_np(a.grad), _np(b.grad))
    graphed.eval()                                  # another training flag: the eager forward
    assert np.array_equal(_np(graphed(data[1][0])), _np(eager.eval()(data[1][0])))


# ---------------------------------------------------------------- tgrad.compile on cuda
def _run_pair(make, calls, keep=False, between=None):
    """make()'s step run eagerly, then compiled (make seeds the generator): same losses and parameters; the
    compiled step's replays.  ``keep``: the losses are kept (each call writes fresh output blocks)."""
    out = []
    for comp in (False, True):
        step, params = make()
        f = tgrad.compile(step) if comp else step
        losses = []
        for i in range(calls):
            if between is not None:
                between(i, step)
            loss = f()
            losses.append(loss if keep else _np(loss))
            del loss
        out.append(([_np(x) for x in losses] if keep else losses, [_np(p) for p in params], f))
    (le, pe, _), (lc, pc, compiled) = out
    assert all(np.array_equal(x, y) for x, y in zip(le, lc))
    assert all(np.array_equal(x, y) for x, y in zip(pe, pc))
    runs = [e.run for e in compiled._cache.values() if e.run is not None]
    assert runs and not any(e.eager for e in compiled._cache.values())
    return runs


def _classifier(dropout=0.0, lr=0.05):
    def make():
        tgrad.manual_seed(0)
        layers = [nn.Linear(6, 16), nn.ReLU()] + ([nn.Dropout(dropout)] if dropout else []) + [nn.Linear(16, 3)]
        model = nn.Sequential(*layers).cuda()
        opt = tgrad.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
        x, y = _batches(1, seed=5)[0]

        def step():
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        step.opt = opt
        return step, list(model.parameters())
    return make


def _regression(manual):
    def make():
        rng = np.random.default_rng(42)
        xs = tgrad.tensor(rng.random((80, 1)).astype(np.float32), device="cuda")
        ys = xs * 2 + 1.1
        tgrad.manual_seed(42)
        b = tgrad.randn(1, device="cuda").requires_grad_(True)
        w = tgrad.randn(1, device="cuda").requires_grad_(True)
        opt = tgrad.optim.SGD([b, w], lr=0.1)

        def step():
            loss = ((b + w * xs - ys) ** 2).mean()
            loss.backward()
            if manual:
                with tgrad.no_grad():
                    b.sub_(0.1 * b.grad)
                    w.sub_(0.1 * w.grad)
                b.grad.zero_()
                w.grad.zero_()
            else:
                opt.step()
                opt.zero_grad()
            return loss
        return step, [b, w]
    return make


@fake_only
@pytest.mark.parametrize("make", [_classifier(), _regression(True), _regression(False)],
                         ids=["mlp_sgd_momentum", "regression_manual", "regression_sgd"])
def test_compiled_cuda_steps_replay_as_one_graph_bit_identical(make):
    runs = _run_pair(make, 30)
    r = runs[0]
    assert r.graphable and r.stats["graph"] >= 25, r.stats
    assert not fakecuda.ERRORS, fakecuda.ERRORS


@fake_only
def test_compiled_cuda_step_keeping_its_losses_and_a_changed_learning_rate():
    def between(i, step):
        if i == 15:
            for g in step.opt.param_groups:
                g["lr"] = 0.01
    runs = _run_pair(_classifier(), 30, keep=True, between=between)
    assert sum(r.stats["launches"] + r.stats["graph"] for r in runs) > 0


@fake_only
def test_compiled_cuda_step_with_dropout_replays_launches_with_fresh_random_numbers():
    runs = _run_pair(_classifier(dropout=0.3), 12)
    assert not runs[0].graphable and runs[0].stats["launches"] >= 9
