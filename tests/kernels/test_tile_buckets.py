"""cpu block buckets (issue 18, warm-up): the matmul's K blocks come from a few buckets, so a new batch size
replays the weight gradients' tapes already traced.  The K block decides no bit: each test runs the same work under
the old per-size blocks (next_pow2) and the buckets, through every tape kind (generic, specialized), and compares
the bytes.  (Lane-wise kernels' blocks and the cross-entropy's row blocks could be bucketed the same way without
changing a bit, but cost 1.5% and 4% of step (b)'s steady time: they stay per size.)"""
import numpy as np
import pytest

import tgrad
from tgrad.kernels import matmul
from tgrad.kernels.runtime import launcher as L
from tgrad.kernels.runtime import next_pow2
from tgrad.kernels.runtime import trace as TR

CPU_ONLY = True     # the cpu executor's blocks


def _old_blocks(bm, bn, K, batch):
    """(BLOCK_K, BLOCK_B) before the buckets: next_pow2(K) (slices of up to 256)."""
    bk = max(16, min(next_pow2(K), 256))
    return bk, min(next_pow2(batch), max(1, 2 ** 18 // max(bm * bk, bk * bn, bm * bn)))


@pytest.fixture
def per_size(monkeypatch):
    """A context switching the cpu blocks back to the per-size ones (and forgetting every launch and tape)."""
    orig_blocks = matmul._cpu_blocks

    def use(old):
        TR.clear_tapes()
        matmul._cpu_blocks = _old_blocks if old else orig_blocks
    yield use
    use(False)
    TR.clear_tapes()


def _runs(fn, n=3):
    """fn()'s results (numpy arrays) on its 1st (generic tapes), 2nd (specializing) and 3rd (specialized) call."""
    return [[np.array(r.detach().numpy(), copy=True) for r in fn()] for _ in range(n)]


def _same(a, b):
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            assert u.dtype == v.dtype and u.shape == v.shape
            assert u.tobytes() == v.tobytes()


# M, N, K: K one slice (padded from next_pow2(K) to its bucket), K past one slice, a GEMM the BLAS cuts
SHAPES = [(64, 128, 64), (80, 128, 80), (10, 128, 80), (128, 64, 96), (33, 17, 5), (17, 300, 130), (7, 9, 300),
          (200, 40, 257), (1, 600, 33), (129, 3, 16), (300, 520, 100)]


@pytest.mark.parametrize("M,N,K", SHAPES)
def test_matmul_bits_do_not_depend_on_the_tiles(M, N, K, per_size):
    rng = np.random.default_rng(M * 1000 + N + K)
    a = rng.standard_normal((M, K)).astype(np.float32)
    a[rng.random((M, K)) < 0.2] = 0.0
    a[0] = -0.0                                    # a row of -0 products: the sign of a zero sum too
    b = rng.standard_normal((K, N)).astype(np.float32)
    bias = rng.standard_normal(N).astype(np.float32)
    g = rng.standard_normal((M, N)).astype(np.float32)
    xb = rng.standard_normal((3, M, K)).astype(np.float32)

    def work():
        A = tgrad.tensor(a, requires_grad=True)
        B = tgrad.tensor(b.T.copy(), requires_grad=True)       # a linear layer's (out, in) weight
        C = tgrad.tensor(bias, requires_grad=True)
        y = tgrad.nn.functional.linear(A, B, C).relu()        # forward epilogue; backward: act' on load, row sums
        y.backward(tgrad.tensor(g))
        mm = tgrad.tensor(a) @ tgrad.tensor(b)
        bmm = tgrad.tensor(xb) @ tgrad.tensor(b)               # batched tiles
        return y, A.grad, B.grad, C.grad, mm, bmm

    per_size(True)
    old = _runs(work)
    per_size(False)
    new = _runs(work)
    _same(old, new)
    _same(new[:1] * 3, new)          # generic, specializing and specialized tapes agree
    np.testing.assert_allclose(new[0][4], a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_a_padded_k_slice_multiplies_the_k_extent_alone(per_size):
    """The specialized tape's GEMM over a zero-padded K block takes the real K columns alone (rounded up to 16)."""
    per_size(False)
    a = tgrad.tensor(np.ones((64, 80), np.float32))
    b = tgrad.tensor(np.ones((80, 16), np.float32))
    for _ in range(3):
        (a @ b)
    srcs = [r.source for k, r in TR._TAPES.items() if r and k[0] is matmul.matmul_kernel]
    assert len(srcs) == 1 and "[..., :80]" in srcs[0] and "[..., :80, :]" in srcs[0]      # (BLOCK_K 128)


def _mlp_step(batch):
    tgrad.manual_seed(0)
    model = tgrad.nn.Sequential(tgrad.nn.Linear(64, 128), tgrad.nn.ReLU(), tgrad.nn.Linear(128, 10))
    rng = np.random.default_rng(batch)
    x = tgrad.tensor(rng.standard_normal((batch, 64)).astype(np.float32))
    y = tgrad.tensor(rng.integers(0, 10, batch))
    loss_ = tgrad.nn.functional.cross_entropy(model(x), y)
    loss_.backward()
    return loss_


def test_a_new_batch_size_traces_only_the_matmuls_whose_tiles_it_changes(per_size, monkeypatch):
    """An MLP's training step at batch 80 after batch 64: the per-size blocks trace its 5 matmuls again; with the
    buckets only the 3 whose output tiles follow the batch (the weight gradients' K is the batch: bucketed)."""
    recorded = []
    orig = TR.record

    def counting(fn, kw, dyn_names, base_values, generic=None, replay=None):
        if replay is None:
            recorded.append(fn.__name__)
        return orig(fn, kw, dyn_names, base_values, generic, replay)
    monkeypatch.setattr(TR, "record", counting)
    matmuls = {}
    for old in (True, False):
        per_size(old)
        for b in (64, 64, 64):
            _mlp_step(b)
        del recorded[:]
        for b in (80, 80, 80):
            _mlp_step(b)
        matmuls[old] = recorded.count("matmul_kernel")
    assert matmuls == {True: 5, False: 3}


def test_a_new_tile_compiles_no_new_code():
    """A kernel's generic tape for other tiles has the same source (its shapes are constants of its namespace):
    Python compiles it once (tape._CODE), each tape runs it on its own constants."""
    TR.clear_tapes()
    outs = []
    for M in (16, 32):
        a = np.random.default_rng(M).standard_normal((M, 20)).astype(np.float32)
        b = np.random.default_rng(1).standard_normal((20, 24)).astype(np.float32)
        outs.append(((tgrad.tensor(a) @ tgrad.tensor(b)).numpy(), a @ b))
    runs = [e[1] for k, es in TR._GENERIC.items() if k[0] is matmul.matmul_kernel for e in es]
    assert len(runs) == 2 and runs[0] is not runs[1] and runs[0].__code__ is runs[1].__code__
    for got, want in outs:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_recording_pauses_the_garbage_collector(monkeypatch):
    """No collection runs while a program records (its short-lived objects are not promoted to the oldest
    generation, which would bring a full collection of the heap, ~50 ms, a few recordings later); the collector
    is enabled again after it."""
    import gc
    inside, seen = [False], []
    orig = TR._record

    def rec(*a, **k):
        inside[0] = True
        try:
            return orig(*a, **k)
        finally:
            inside[0] = False
    monkeypatch.setattr(TR, "_record", rec)

    def cb(phase, info):
        if phase == "start" and inside[0]:
            seen.append(info["generation"])
    old = gc.get_threshold()
    gc.set_threshold(10, 1, 1)
    gc.callbacks.append(cb)
    try:
        TR.clear_tapes()
        x = tgrad.tensor(np.arange(40, dtype=np.float32))
        got = [(x * 3.0 + 1.0).numpy() for _ in range(3)]      # generic, specializing and specialized launches
    finally:
        gc.callbacks.remove(cb)
        gc.set_threshold(*old)
    assert seen == [] and gc.isenabled()
    for g in got:
        np.testing.assert_array_equal(g, np.arange(40, dtype=np.float32) * 3 + 1)
