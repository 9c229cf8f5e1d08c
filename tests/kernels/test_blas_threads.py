"""The cpu executor's GEMM thread policy (kernels/runtime/blas.py): how a large GEMM is cut (by its shape alone),
bits that do not depend on the thread count, the caller taking the slices of workers that never run, the
back-off when the workers cost more than they give (an injected clock), eager == replay bits across thread counts."""
import os

import numpy as np
import pytest
import threadpoolctl

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
from tgrad.kernels.runtime import blas

CPU_ONLY = True     # the cpu executor's BLAS: a cuda run launches no numpy GEMM


@pytest.fixture
def threads():
    n = tgrad.get_num_threads()
    yield
    tgrad.set_num_threads(n)


def test_pieces_by_shape():
    assert blas.pieces(64, 64, 128) is None                              # (b)'s GEMMs: one call
    assert blas.pieces(128, 256, 255) is None                            # below 2 PIECEs
    assert blas.pieces(128, 256, 256) == (-1, range(0, 256, 128))        # (c)'s forward tile: 2 column slices
    assert blas.pieces(256, 128, 1024) == (-1, range(0, 1024, 128))      # (c)'s weight gradient: 8, the most
    assert blas.pieces(1000, 300, 700) == (-2, range(0, 1000, 128))      # more rows than columns: rows cut
    assert blas.pieces(4096, 1, 4096) is None                            # an outer product stays whole
    assert blas.pieces(128, 256, 256, batch=4) == (-1, range(0, 256, 32))
    for m, k, n in [(3, 2048, 4096), (784, 300, 100), (129, 999, 257)]:
        side, starts = blas.pieces(m, k, n)
        size = (m, n)[side]
        assert starts[0] == 0 and starts[-1] < size and len(starts) <= blas.MAX_PIECES
        assert all(s % blas.ALIGN == 0 for s in starts)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(128, 256, 256), (300, 150, 200), (2, 96, 256, 200)])
def test_bits_do_not_depend_on_the_thread_count(dtype, shape, threads):
    rng = np.random.default_rng(0)
    *lead, m, k, n = shape
    a = rng.standard_normal((*lead, m, k)).astype(dtype)
    b = rng.standard_normal((*lead, k, n)).astype(dtype)
    got = []
    for t in (1, 2, 3):
        tgrad.set_num_threads(t)
        got.append(blas.matmul_large(a, b, dtype))
    assert all(np.array_equal(got[0], g) for g in got[1:])
    np.testing.assert_allclose(got[0], a @ b, rtol=1e-4, atol=1e-4)
    side, starts = blas.pieces(m, k, n, int(np.prod(lead)))
    ends = list(starts[1:]) + [None]
    with threadpoolctl.threadpool_limits(1, user_api="blas"):    # the slices, one by one on one thread
        want = np.concatenate([np.matmul(a, b[..., s:e]) if side == -1 else np.matmul(a[..., s:e, :], b)
                               for s, e in zip(starts, ends)], axis=side)
    assert np.array_equal(got[0], want)
    assert all(i["num_threads"] == 1 for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas")


def test_the_caller_takes_slices_no_worker_runs():
    """Workers counted as started but never scheduled: the caller runs every slice and returns."""
    pool = blas._Pool()
    pool.n = 3                  # no thread behind them
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((64, 32)), rng.standard_normal((32, 64))
    out = np.empty((64, 64))
    pool.run([(a, b[:, i:i + 16], out[:, i:i + 16], np.float64) for i in range(0, 64, 16)], 4)
    np.testing.assert_array_equal(out, np.concatenate([a @ b[:, i:i + 16] for i in range(0, 64, 16)], axis=1))
    assert pool.job is None


def test_a_slice_error_reaches_the_caller():
    pool = blas._Pool()
    a = np.ones((4, 3))
    with pytest.raises(ValueError):
        pool.run([(a, np.ones((3, 4)), np.empty((4, 4)), np.float64), (a, np.ones((2, 4)), np.empty((4, 4)),
                                                                       np.float64)], 1)


def test_one_thread_wakes_no_worker(threads):
    tgrad.set_num_threads(1)
    pool = blas._pool = blas._Pool()
    a = np.ones((128, 256), np.float32)
    blas.matmul_large(a, np.ones((256, 256), np.float32), np.float32)
    assert pool.n == 0
    tgrad.set_num_threads(2)
    blas.matmul_large(a, np.ones((256, 256), np.float32), np.float32)
    assert pool.n == 1


def test_backoff_with_an_injected_clock():
    now = [100.0]
    b = blas._Backoff(clock=lambda: now[0])
    assert b.wake()
    b.report(wall=1e-3, alone=2e-3)             # the workers paid
    assert b.wake() and b.period == 0.0
    b.report(wall=5e-3, alone=2e-3)             # they cost more than the caller alone: rest MIN
    assert not b.wake() and b.period == b.MIN
    now[0] += b.MIN - 1e-6
    assert not b.wake()
    now[0] += 2e-6
    assert b.wake()
    periods = []
    for _ in range(8):                          # stalls in a row: doubled up to MAX
        b.report(wall=5e-3, alone=2e-3)
        periods.append(b.period)
    assert periods[:3] == [2 * b.MIN, 4 * b.MIN, 8 * b.MIN] and periods[-1] == b.MAX
    now[0] += b.MAX
    assert b.wake()
    halved = []
    while b.period:                             # paying again: halved, then 0 below MIN
        b.report(wall=1e-3, alone=2e-3)
        halved.append(b.period)
    assert halved[0] == b.MAX / 2 and halved[-1] == 0.0 and halved[-2] >= b.MIN
    assert b.wake()


def test_a_stalled_pool_rests_and_still_computes(monkeypatch, threads):
    """The workers look slower than the caller alone (a clock that jumps while the caller waits): the next
    GEMMs run on the caller only, with the same bits."""
    tgrad.set_num_threads(2)
    pool = blas._pool = blas._Pool()
    clock = [0.0]
    pool.backoff = blas._Backoff(clock=lambda: clock[0])
    done = pool.backoff.report
    monkeypatch.setattr(pool.backoff, "report", lambda wall, alone: done(wall=alone * 3, alone=alone))
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((128, 256)).astype(np.float32), rng.standard_normal((256, 256)).astype(np.float32)
    first = blas.matmul_large(a, b, np.float32)
    assert not pool.backoff.wake()
    class NoWake:
        def release(self):
            raise AssertionError("a worker woken while resting")
    pool.go = NoWake()
    assert np.array_equal(blas.matmul_large(a, b, np.float32), first)


def test_forked_child_computes():
    a = np.ones((128, 256), np.float32)
    want = blas.matmul_large(a, np.ones((256, 256), np.float32), np.float32)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:        # the child: no worker threads of the parent's
        ok = blas._pool is None and np.array_equal(blas.matmul_large(a, np.ones((256, 256), np.float32),
                                                                     np.float32), want)
        os.write(w, b"1" if ok else b"0")
        os._exit(0)
    os.close(w)
    assert os.read(r, 1) == b"1"
    os.waitpid(pid, 0)
    os.close(r)


def test_eager_and_replay_bits_across_thread_counts(threads):
    """A step with GEMMs large enough to be cut (batch 128, 256 -> 256; its first eager step runs the traced
    kernels' tl.dot, later ones their tapes'): eager and compiled give the same bits at 1 and 2 threads (no
    biases: a bias gradient's sum follows ATen's order, which does depend on the thread count)."""
    rng = np.random.default_rng(3)
    x = tgrad.tensor(rng.standard_normal((128, 256)).astype(np.float32))
    y = tgrad.tensor(rng.integers(0, 10, 128))
    results = []
    for t in (1, 2):
        tgrad.set_num_threads(t)
        for compiled in (False, True):
            tgrad.manual_seed(0)
            model = nn.Sequential(nn.Linear(256, 256, bias=False), nn.ReLU(), nn.Linear(256, 10, bias=False))
            opt = tgrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

            def step():
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                opt.zero_grad()
                return loss
            f = tgrad.compile(step) if compiled else step
            losses = [f().item() for _ in range(4)]
            results.append((losses, [p.detach().numpy().copy() for p in model.parameters()]))
    for losses, ws in results[1:]:
        assert losses == results[0][0]
        assert all(np.array_equal(w, w0) for w, w0 in zip(ws, results[0][1]))
