"""Shape-generic tapes: a kernel's first launch records program (0, 0, 0) with its int arguments and program ids
as inputs; a launch at new sizes or another grid replays that tape (no interpreter), bit for bit as ``direct``.
Control flow on an int argument (a loop's bound) is a guard: another value records another tape."""
import numpy as np
import pytest
import triton
import triton.language as tl

from tgrad.kernels.runtime import launcher as L
from tgrad.kernels.runtime import trace as TR
from tgrad.kernels.runtime.direct import Ptr
from tgrad.kernels.runtime.launcher import run_cpu

CPU_ONLY = True     # tests the cpu executor: runs on cpu under --device cuda too (conftest)


@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    y = tl.load(y_ptr + offs, mask=m, other=0.0)
    tl.store(out_ptr + offs, tl.exp(x) * a + y / 3.0, mask=m)


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, M, K, stride, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    acc = tl.zeros((BLOCK_M,), tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        v = tl.load(x_ptr + rm[:, None] * stride + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        acc += tl.sum(v * v, axis=1)
    tl.store(out_ptr + rm, acc, mask=rm < M)


@triton.jit
def branch_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    if tl.load(x_ptr + pid * BLOCK) < 64.0:        # control flow on a loaded value: no generic tape
        x = x * 2.0
    tl.store(out_ptr + offs, x, mask=offs < n)


def _ptr(a):
    return Ptr(a.ctypes.data, a.dtype)


def _keys(kernel):
    return [v for k, v in TR._GENERIC.items() if k[0] is kernel]


def _records(monkeypatch):
    n = [0]
    orig = TR.record

    def counting(*a, **k):
        n[0] += 1
        return orig(*a, **k)
    monkeypatch.setattr(TR, "record", counting)
    return n


def _axpy(n, a, block=64, executor=run_cpu):
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    executor(axpy_kernel, (-(-n // block),), [_ptr(x), _ptr(y), _ptr(out), a, n], {"BLOCK": block})
    return x, y, out


def _direct(kernel, grid, args, constexprs):
    prev, L.EXECUTOR = L.EXECUTOR, "direct"
    try:
        run_cpu(kernel, grid, args, constexprs)
    finally:
        L.EXECUTOR = prev


def test_new_sizes_replay_the_generic_tape(monkeypatch):
    TR.clear_tapes()
    recs = _records(monkeypatch)
    _axpy(100, 1.5)                          # first launch: records program 0, replays it for programs 1, 2
    assert recs[0] == 1 and len(_keys(axpy_kernel)) == 1
    for n in (7, 64, 65, 1000, 333):         # new sizes and grids: no recording, same bits as direct
        x, y, out = _axpy(n, 0.25)
        with_direct = _axpy(n, 0.25, executor=_direct)[2]
        np.testing.assert_array_equal(out, with_direct)
        np.testing.assert_allclose(out, np.exp(x) * np.float32(0.25) + y / np.float32(3.0), rtol=1e-6)
    assert recs[0] == 1
    _axpy(64, 3.0, block=128)               # a new constexpr is a new generic key
    assert recs[0] == 2 and len(_keys(axpy_kernel)) == 2


def _rowsum(M, K, executor=run_cpu):
    x = np.random.default_rng(M * K).standard_normal((M, K)).astype(np.float32)
    out = np.full(M, np.nan, np.float32)
    executor(rowsum_kernel, (-(-M // 16),), [_ptr(x), _ptr(out), M, K, K], {"BLOCK_M": 16, "BLOCK_K": 32})
    return x, out


def test_loop_trip_counts_are_guards(monkeypatch):
    TR.clear_tapes()
    recs = _records(monkeypatch)
    _rowsum(40, 70)
    assert recs[0] == 1
    (entries,) = _keys(rowsum_kernel)
    assert len(entries) == 1 and entries[0][0] is not None      # a guard: range(0, K, 32) runs 3 times
    for M, K in ((5, 70), (16, 70), (90, 70), (40, 65), (7, 96)):     # new M, or K with 3 trips: the same tape
        x, out = _rowsum(M, K)
        np.testing.assert_array_equal(out, _rowsum(M, K, executor=_direct)[1])
        np.testing.assert_allclose(out, (x.astype(np.float64) ** 2).sum(1), rtol=1e-5)
    assert recs[0] == 1
    x, out = _rowsum(40, 20)               # one trip: the guard fails, a second tape
    assert recs[0] == 2 and len(_keys(rowsum_kernel)[0]) == 2
    np.testing.assert_array_equal(out, _rowsum(40, 20, executor=_direct)[1])
    _rowsum(33, 70)
    _rowsum(33, 1)
    assert recs[0] == 2


@triton.jit
def slots_kernel(x_ptr, y_ptr, out_ptr, n0, n1, BLOCK: tl.constexpr):
    """Program i copies block i of x (n0 elements), then y (n1) scaled, like the multi-tensor optimizer."""
    i = tl.program_id(0)
    e0 = tl.cdiv(n0, BLOCK)
    if i < e0:
        offs = i * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n0), mask=offs < n0)
    else:
        offs = (i - e0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + n0 + offs, 3.0 * tl.load(y_ptr + offs, mask=offs < n1), mask=offs < n1)


def test_branches_on_program_ids_are_guarded_per_program(monkeypatch):
    TR.clear_tapes()
    recs = _records(monkeypatch)
    for n0, n1 in ((50, 20), (16, 100), (3, 3), (64, 1)):
        x = np.arange(n0, dtype=np.float32)
        y = np.arange(n1, dtype=np.float32) + 0.5
        out = np.zeros(n0 + n1, np.float32)
        grid = (-(-n0 // 16) + -(-n1 // 16),)
        run_cpu(slots_kernel, grid, [_ptr(x), _ptr(y), _ptr(out), n0, n1], {"BLOCK": 16})
        np.testing.assert_array_equal(out, np.concatenate([x, 3 * y]))
    assert recs[0] == 2          # one tape per branch, each recorded by the first program taking it


def test_control_flow_on_loaded_values_stays_direct():
    TR.clear_tapes()
    x = np.arange(200, dtype=np.float32)
    for n in (200, 150):
        out = np.zeros(n, np.float32)
        run_cpu(branch_kernel, (-(-n // 64),), [_ptr(x), _ptr(out), n], {"BLOCK": 64})
        np.testing.assert_array_equal(out, np.where(np.arange(n) < 64, 2 * x[:n], x[:n]))
    assert _keys(branch_kernel) == [False]


@pytest.mark.parametrize("generic", [True, False])
def test_switch(monkeypatch, generic):
    """``trace.GENERIC = False``: a key's first launch runs the interpreter, as before."""
    TR.clear_tapes()
    monkeypatch.setattr(TR, "GENERIC", generic)
    _axpy(100, 1.5)
    assert len(_keys(axpy_kernel)) == (1 if generic else 0)


def test_tapes_past_the_byte_budget_go_oldest_first(monkeypatch):
    """Past MAX_TAPE_BYTES the oldest shapes' tapes go (and the launchers' references to them); newer ones stay,
    and a dropped shape runs its generic tape, then is specialized again."""
    import tgrad
    TR.clear_tapes()
    a = np.random.default_rng(0).standard_normal(300).astype(np.float32)
    x = tgrad.tensor(a)
    for _ in range(3):
        (x[:10] * 3.0).numpy()
    monkeypatch.setattr(TR, "MAX_TAPE_BYTES", 8 * max(r.nbytes for r in TR._TAPES.values() if r))
    for n in range(20, 60):
        for _ in range(3):      # generic tape, specialized on the 2nd launch, replayed on the 3rd
            out = (x[:n] * 3.0).numpy()
        np.testing.assert_array_equal(out, a[:n] * np.float32(3.0))
        assert TR._bytes[0] <= TR.MAX_TAPE_BYTES + max(r.nbytes for r in TR._TAPES.values() if r)
    kept = {k[2] for k in TR._TAPES}
    assert 3 <= len(kept) < 40 and any(59 in k for k in kept)      # the newest shapes stay
    for _ in range(3):
        np.testing.assert_array_equal((x[:20] * 3.0).numpy(), a[:20] * np.float32(3.0))
