"""Warm-up (issue 18): a matmul tape over a zero-padded K block multiplies the real K columns alone (its generic,
specializing and specialized tapes agree bit for bit, and with numpy), a kernel's tapes for other tiles share one
compiled code object, and recording pauses the garbage collector.  (Coarser cpu block buckets were tried: the
matmul's K blocks, lane-wise kernels' blocks and the cross-entropy's row blocks can come from buckets without
changing a bit, but cost 4.6%, 1.5% and 3.8% of step (b)'s steady time: they stay per size.)"""
import numpy as np
import pytest

import tgrad
from tgrad.kernels import matmul
from tgrad.kernels.runtime import trace as TR

CPU_ONLY = True     # the cpu executor's tapes


def _runs(fn, n=3):
    """fn()'s results (numpy arrays) on its 1st (generic tapes), 2nd (specializing) and 3rd (specialized) call."""
    return [[np.array(r.detach().numpy(), copy=True) for r in fn()] for _ in range(n)]


def _same(a, b):
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            assert u.dtype == v.dtype and u.shape == v.shape
            assert u.tobytes() == v.tobytes()


# M, N, K: K one slice (padded to next_pow2(K)), K past one slice, a GEMM the BLAS cuts
SHAPES = [(64, 128, 64), (80, 128, 80), (10, 128, 80), (128, 64, 96), (33, 17, 5), (17, 300, 130), (7, 9, 300),
          (200, 40, 257), (1, 600, 33), (129, 3, 16), (300, 520, 100)]


@pytest.mark.parametrize("M,N,K", SHAPES)
def test_padded_k_tapes_agree(M, N, K):
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

    TR.clear_tapes()
    new = _runs(work)
    _same(new[:1] * 3, new)          # generic, specializing and specialized tapes agree
    np.testing.assert_allclose(new[0][4], a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_a_padded_k_slice_multiplies_the_k_extent_alone():
    """The specialized tape's GEMM over a zero-padded K block takes the real K columns alone (rounded up to 16)."""
    TR.clear_tapes()
    a = tgrad.tensor(np.ones((64, 80), np.float32))
    b = tgrad.tensor(np.ones((80, 16), np.float32))
    for _ in range(3):
        (a @ b)
    srcs = [r.source for k, r in TR._TAPES.items() if r and k[0] is matmul.matmul_kernel]
    assert len(srcs) == 1 and "[..., :80]" in srcs[0] and "[..., :80, :]" in srcs[0]      # (BLOCK_K 128)



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


def test_numpy_openblas_found_without_a_library_scan():
    """numpy's OpenBLAS pool is found through the symbols numpy's extension links (no threadpoolctl scan of the
    process's libraries, ~2.4 ms of a fresh process's first step): the pool threadpoolctl sees, kept at one thread."""
    import threadpoolctl
    from tgrad.kernels.runtime import blas
    found = blas._numpy_openblas()
    libs = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
    if found is None:
        assert not any(i["internal_api"] == "openblas" and i["threading_layer"] in ("pthreads", "disabled")
                       for i in libs)
        pytest.skip("numpy's BLAS is not a pthreads OpenBLAS: threadpoolctl controls it")
    blas._controllers()
    assert [i["num_threads"] for i in libs if i["internal_api"] == "openblas"] == [1]
    assert found[0].num_threads == 1
    found[0].set_num_threads(2)
    try:
        assert [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["internal_api"] == "openblas"] == [2]
    finally:
        found[0].set_num_threads(1)


def test_replaying_tapes_leaves_triton_language_unpatched():
    """A cpu launch that only replays tapes never patches ``triton.language`` for the interpreter (~1 ms of a fresh
    process loading its tapes from disk); a launch that records patches it, and the values are the same."""
    from tgrad.kernels.runtime import internals
    TR.clear_tapes()
    x = tgrad.tensor(np.arange(40, dtype=np.float32))
    want = [(x * 3.0 + 1.0).numpy() for _ in range(3)][-1]     # generic, specializing, specialized
    internals._lang_for_compiler()
    try:
        got = (x * 3.0 + 1.0).numpy()                             # the specialized tape
        z = tgrad.tensor(np.arange(41, dtype=np.float32))         # a new size, same block: the generic tape
        got1 = (z * 3.0 + 1.0).numpy()
        assert internals._scope[0] is None
        y = tgrad.tensor(np.arange(200, dtype=np.float32))       # a new block size: its launch records
        got2 = (y * 3.0 + 1.0).numpy()
        assert internals._scope[0] is not None
    finally:
        internals._lang_for_interpreter()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got1, np.arange(41, dtype=np.float32) * 3 + 1)
    np.testing.assert_array_equal(got2, np.arange(200, dtype=np.float32) * 3 + 1)


def test_a_shape_in_use_outlives_newer_unused_ones(monkeypatch):
    """Past MAX_TAPE_BYTES the least recently used shapes' tapes go: a shape launched between every new one keeps
    its tape (never recorded again, its launch never rebuilt) while the budget evicts the shapes used once."""
    TR.clear_tapes()
    a = np.random.default_rng(0).standard_normal(300).astype(np.float32)
    x = tgrad.tensor(a)

    def hot():
        return (x[:10] * 3.0).numpy()
    for _ in range(3):
        hot()
        for n in (20, 40):      # (the generic tapes of the blocks to come)
            (x[:n] * 3.0).numpy()
    one = max(r.nbytes for r in TR._TAPES.values() if r)
    monkeypatch.setattr(TR, "MAX_TAPE_BYTES", TR._bytes[0] + 12 * one)
    recorded, orig = [], TR.record
    monkeypatch.setattr(TR, "record", lambda *a, **k: recorded.append(1) or orig(*a, **k))
    hot_records = 0
    for n in range(21, 64):
        for _ in range(3):      # generic tape, specialized on the 2nd launch, replayed on the 3rd
            out = (x[:n] * 3.0).numpy()
        np.testing.assert_array_equal(out, a[:n] * np.float32(3.0))
        del recorded[:]
        np.testing.assert_array_equal(hot(), a[:10] * np.float32(3.0))
        hot_records += len(recorded)
        assert TR._bytes[0] <= TR.MAX_TAPE_BYTES + max(r.nbytes for r in TR._TAPES.values() if r)
    assert TR.cache_info()["evicted"] > 0 and hot_records == 0
    assert len(TR._TAPES) < 30
    TR.clear_tapes()
