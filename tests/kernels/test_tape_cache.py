"""Compiled cpu tapes on disk (runtime/tape_cache.py): a later process loads a traced launch's tape (its
specialized tape, or its kernel's shape-generic tapes for new sizes) instead of tracing, bit for bit as
``direct``; an edit of the kernels' sources, an unnamed constexpr or a full directory are handled."""
import os

import numpy as np
import pytest
import triton
import triton.language as tl

import tgrad
from tgrad.kernels.runtime import launcher as L
from tgrad.kernels.runtime import tape_cache as TC
from tgrad.kernels.runtime import trace as TR
from tgrad.kernels.runtime.direct import Ptr
from tgrad.kernels.runtime.launcher import run_cpu

CPU_ONLY = True     # tests the cpu executor: runs on cpu under --device cuda too (conftest)


@triton.jit
def scale_kernel(x_ptr, out_ptr, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.exp(tl.load(x_ptr + offs, mask=m, other=0.0)) * a, mask=m)


@triton.jit
def rows_kernel(x_ptr, out_ptr, M, K, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    acc = tl.zeros((BLOCK_M,), tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        v = tl.load(x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        acc += tl.sum(v * v, axis=1)
    tl.store(out_ptr + rm, acc, mask=rm < M)


@pytest.fixture
def disk(tmp_path, monkeypatch):
    monkeypatch.setattr(TC, "ENABLED", True)
    monkeypatch.setattr(TC, "DIR", str(tmp_path))
    monkeypatch.setitem(TC._state, "disk_bytes", None)
    TR.clear_tapes()
    n = [0]
    orig = TR.record

    def counting(*a, **k):
        n[0] += 1
        return orig(*a, **k)
    monkeypatch.setattr(TR, "record", counting)
    yield n
    TR.clear_tapes()


def _ptr(a):
    return Ptr(a.ctypes.data, a.dtype)


def _scale(n, a, executor=run_cpu):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    executor(scale_kernel, (-(-n // 64),), [_ptr(x), _ptr(out), a, n], {"BLOCK": 64})
    return out


def _rows(M, K, executor=run_cpu):
    x = np.random.default_rng(M * K).standard_normal((M, K)).astype(np.float32)
    out = np.full(M, np.nan, np.float32)
    executor(rows_kernel, (-(-M // 16),), [_ptr(x), _ptr(out), M, K], {"BLOCK_M": 16, "BLOCK_K": 32})
    return out


def _direct(kernel, grid, args, constexprs):
    prev, L.EXECUTOR = L.EXECUTOR, "direct"
    try:
        run_cpu(kernel, grid, args, constexprs)
    finally:
        L.EXECUTOR = prev


def test_a_new_process_loads_the_tapes(disk):
    for _ in range(3):
        _scale(100, 1.5)                    # generic tape, then the specialized one: both stored
    traced = disk[0]
    assert traced == 3 and len(os.listdir(TC.DIR)) == 3     # (program 0 generic and its builder ops; 2 programs
    #                                                          specialized)
    TR.clear_tapes()                        # as a new process: nothing in memory
    hits = TC.STATS["hits"]
    got = _scale(100, 0.5)                  # the specialized tape from disk, on the first launch
    assert disk[0] == traced and TC.STATS["hits"] == hits + 1
    np.testing.assert_array_equal(got, _scale(100, 0.5, executor=_direct))
    TR.clear_tapes()
    for n in (7, 333, 64):                  # new sizes: the generic tape from disk, no tracing
        np.testing.assert_array_equal(_scale(n, 0.25), _scale(n, 0.25, executor=_direct))
    assert disk[0] == traced
    np.testing.assert_array_equal(_scale(333, 0.25), _scale(333, 0.25, executor=_direct))
    assert disk[0] > traced                 # its 2nd launch records (replaying the loaded generic tape's builder ops)


def test_loaded_guards_still_decide(disk):
    _rows(40, 70)                           # a guard: range(0, K, 32) runs 3 times
    TR.clear_tapes()
    np.testing.assert_array_equal(_rows(20, 90), _rows(20, 90, executor=_direct))
    assert disk[0] == 1                     # same trip count: the loaded tape
    np.testing.assert_array_equal(_rows(20, 10), _rows(20, 10, executor=_direct))
    assert disk[0] == 2                     # another trip count: recorded, and the entries stored again
    TR.clear_tapes()
    x = _rows(33, 5)
    assert disk[0] == 2
    np.testing.assert_allclose(x, (np.random.default_rng(165).standard_normal((33, 5)).astype(np.float32) ** 2)
                               .sum(1), rtol=1e-6)


def test_an_edit_of_the_kernels_invalidates(disk, monkeypatch):
    for _ in range(2):
        _scale(100, 1.5)
    TR.clear_tapes()
    monkeypatch.setitem(TC._state, "fingerprint", "another source tree")
    traced = disk[0]
    _scale(100, 1.5)
    assert disk[0] > traced                 # traced again


def test_unnamed_callables_are_not_keyed(disk):
    assert TC.key("spec", scale_kernel, (1, 1, 1), (lambda: 0,)) is None
    assert TC.key("spec", scale_kernel, (1, 1, 1), (tl.float32, np.dtype("f4"), 3, "ieee")) is not None
    fn = triton.jit(scale_kernel.fn)        # a kernel not reachable by its module-level name
    assert TC.key("spec", fn, (1, 1, 1)) is None


def test_directory_is_bounded(disk, monkeypatch):
    for _ in range(2):
        _scale(100, 1.5)
    size = sum(os.path.getsize(os.path.join(TC.DIR, f)) for f in os.listdir(TC.DIR))
    monkeypatch.setattr(TC, "MAX_DISK_BYTES", size)
    for n in (200, 300, 400):
        for _ in range(2):
            _scale(n, 1.5)
        assert sum(os.path.getsize(os.path.join(TC.DIR, f)) for f in os.listdir(TC.DIR)) <= size


def test_ops_bits_with_loaded_tapes(disk):
    """A small classifier step (linear, cross-entropy, backward) gives the same bits from loaded tapes."""
    def run():
        tgrad.manual_seed(0)
        x = tgrad.randn(6, 5)
        w = tgrad.randn(3, 5, requires_grad=True)
        loss = tgrad.nn.functional.cross_entropy(x @ w.t(), tgrad.tensor([0, 1, 2, 0, 1, 2]))
        loss.backward()
        return loss.item(), w.grad.numpy().copy()
    ref = [run() for _ in range(3)]
    assert TC.STATS["stores"] > 0
    TR.clear_tapes()
    hits = TC.STATS["hits"]
    got = run()
    assert TC.STATS["hits"] > hits
    assert got[0] == ref[0][0] and np.array_equal(got[1], ref[0][1])


def test_byte_budget_covers_generic_tapes(monkeypatch):
    """Past ``MAX_TAPE_BYTES`` the oldest shapes' tapes go, then the oldest kernels' generic tapes; the
    estimate ``cache_info()['bytes']`` stays under the budget, and evicted launches still compute right."""
    monkeypatch.setattr(TC, "ENABLED", False)
    TR.clear_tapes()
    for _ in range(2):
        _scale(100, 1.5)
    one = TR.cache_info()["bytes"]
    monkeypatch.setattr(TR, "MAX_TAPE_BYTES", one)
    before = TR.cache_info()["evicted"]
    for M in (16, 40, 70):
        for _ in range(2):
            _rows(M, 33)
        assert TR.cache_info()["bytes"] <= one + max(r.nbytes for r in TR._TAPES.values() if r)
    info = TR.cache_info()
    assert info["evicted"] > before and info["disk"] == TC.STATS
    assert not any(k[0] is scale_kernel for k in TR._GENERIC)          # the oldest kernel's generic tape went
    np.testing.assert_array_equal(_scale(100, 1.5), _scale(100, 1.5, executor=_direct))
    TR.clear_tapes()


def test_directory_drops_the_least_recently_used(tmp_path, monkeypatch):
    """Past MAX_DISK_BYTES the files read or written least recently go first: a file written first but read since
    stays, the files written after it and never read go."""
    monkeypatch.setattr(TC, "DIR", str(tmp_path))
    monkeypatch.setitem(TC._state, "disk_bytes", None)
    n = 1000
    monkeypatch.setattr(TC, "MAX_DISK_BYTES", 8 * n)
    names = ["a", "b", "f1", "f2", "f3", "f4"]
    for i, name in enumerate(names):
        TC.put_bytes(name, bytes([i]) * n)
        os.utime(os.path.join(TC.DIR, name), ns=(10**18 + i * 10**9, 10**18 + i * 10**9))   # written in this order
    assert TC.get_bytes("a") == bytes([0]) * n          # a read: "a" is now the most recently used
    for name in ("g1", "g2", "g3"):                       # 9n > 8n: the oldest go until 6n are left
        TC.put_bytes(name, b"g" * n)
    left = set(os.listdir(TC.DIR))
    assert {"a", "f3", "f4", "g1", "g2", "g3"} <= left and not left & {"b", "f1", "f2"}
