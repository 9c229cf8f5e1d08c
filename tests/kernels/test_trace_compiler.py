"""The trace executor's tape compiler: builder ops emitted as numpy expressions replay bit-identically.

Each kernel runs under ``stock`` and under ``trace`` (3 launches: direct, record, replay of the compiled
tape); outputs must match bit for bit, and the values are checked against numpy.  The compiled source is
inspected so that a lowering that silently falls back to the builder call fails here.
"""
import os
import platform
import re
import subprocess
import sys

import numpy as np
import pytest
import triton
import triton.language as tl

import tgrad
from tgrad.kernels.runtime import launcher as T
from tgrad.kernels.runtime import tape as TP
from tgrad.kernels.runtime import tape_ops as TO
from tgrad.kernels.runtime import trace as TR
from tgrad.kernels._lang import kptr


CPU_ONLY = True     # tests the cpu executors: runs on cpu under --device cuda too (conftest)


@triton.jit
def mix_kernel(x_ptr, y_ptr, i_ptr, h_ptr, out_ptr, iout_ptr, hout_ptr, s, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    y = tl.load(y_ptr + offs, mask=m, other=2.0)
    i = tl.load(i_ptr + offs, mask=m, other=1)
    h = tl.load(h_ptr + offs, mask=m, other=0.0)
    hf = h.to(tl.float32)
    r = tl.where(x > y, x * s, y - s) + tl.abs(x) + tl.fma(x, y, hf)
    r += tl.sqrt(tl.abs(y)) + tl.exp(x) / (1.0 + tl.abs(y)) - tl.rsqrt(1.0 + y * y)
    q = i // 3 + i % 5 + (i >> 1) + (i.to(tl.float32) * s).to(tl.int32) + (x > 0.5).to(tl.int32)
    q = q + ((i & 6) ^ (i < 0).to(tl.int32)) + i.to(tl.int16).to(tl.int32)
    q = q + ((x > 0.5) & (y < 0.0)).to(tl.int32) * 10 + ((x > 0) ^ (y > 0)).to(tl.int32) * 100
    tl.store(out_ptr + offs, r, mask=m)
    tl.store(iout_ptr + offs, q, mask=m)
    tl.store(hout_ptr + offs, (r * 0.5).to(tl.bfloat16), mask=m)


@triton.jit
def bcast_kernel(a_ptr, b_ptr, idx_ptr, out_ptr, sum_ptr, max_ptr, min_ptr, g_ptr, M, N, s,
                 BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    a = tl.load(a_ptr + rm, mask=rm < M, other=0.0)
    b = tl.load(b_ptr + rn, mask=rn < N, other=0.0)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    t = a[:, None] * b[None, :] + s
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], t, mask=mask)
    tl.store(sum_ptr + rm, tl.sum(tl.where(mask, t, 0.0), axis=1), mask=rm < M)
    tl.store(max_ptr + rn, tl.max(tl.where(mask, t, -float("inf")), axis=0), mask=rn < N)
    tl.store(min_ptr + rn, tl.min(tl.where(mask, tl.trans(tl.trans(t)), float("inf")), axis=0), mask=rn < N)
    idx = tl.load(idx_ptr + rm, mask=rm < M, other=0)        # a gather/scatter through loaded indices
    g = tl.load(a_ptr + idx, mask=rm < M, other=-1.0)
    tl.store(g_ptr + idx, g * 2.0 + tl.reshape(tl.sum(t, axis=1), (BM,)), mask=rm < M)


@triton.jit
def lanewise_kernel(x_ptr, y_ptr, out_ptr, iout_ptr, s, n, BLOCK: tl.constexpr):
    """Lane-wise ops only, every load and store under one mask: compiled over the masked box alone."""
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    y = tl.load(y_ptr + offs, mask=m, other=0.0)
    r = tl.where(x > y, x * s + y, tl.fma(x, y, x)) - 1.0 / y + offs.to(tl.float32)
    tl.store(out_ptr + offs, r, mask=m)
    tl.store(iout_ptr + offs, (r > 0).to(tl.int32) + offs, mask=m)


@triton.jit
def unmasked_kernel(x_ptr, c_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    c = tl.load(c_ptr + 1)                                    # a scalar load
    tl.store(out_ptr + offs, tl.load(x_ptr + 2 * offs) * c)
    tl.store(out_ptr + BLOCK, c)


@triton.jit
def reload_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Two passes over the same row, as cross-entropy's loss and gradient passes do, around a store."""
    offs = tl.arange(0, BLOCK)
    m = offs < n
    a = tl.exp(tl.load(x_ptr + offs, mask=m, other=0.0) - 1.0)
    b = tl.exp(tl.load(x_ptr + offs, mask=m, other=0.0) - 1.0)
    tl.store(out_ptr + offs, a + b, mask=m)
    c = tl.load(x_ptr + offs, mask=m, other=0.0)          # after a store: must be loaded again
    tl.store(x_ptr + offs, c * 2.0, mask=m)


def _ptrs(*ts):
    return [kptr(t) for t in ts]


def _run_both(kernel, grid, make, constexprs, scalars):
    """Outputs of the stock executor and of 3 trace launches (the 3rd replays the compiled tape)."""
    prev = T.EXECUTOR
    res = {}
    try:
        for ex in ("stock", "trace", "trace", "trace"):
            T.EXECUTOR = ex
            ins, outs = make()
            T.launch(kernel, grid, "cpu", _ptrs(*ins, *outs) + list(scalars), constexprs)
            res[ex] = [o.cpu().numpy().copy() for o in outs]
    finally:
        T.EXECUTOR = prev
    return res["stock"], res["trace"]


def _source(kernel):
    runs = [v for k, v in TR._TAPES.items() if k[0] is kernel and v]
    assert runs, "no compiled tape"
    return runs[-1].source


def test_elementwise_casts_division_select_replay_like_stock():
    rng = np.random.default_rng(0)
    n = 37
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    i = rng.integers(-50, 50, n).astype(np.int32)
    h = rng.standard_normal(n).astype(np.float32)

    def make():
        hb = tgrad.tensor(h).to(tgrad.bfloat16)
        return ([tgrad.tensor(x), tgrad.tensor(y), tgrad.tensor(i), hb],
                [tgrad.zeros(n), tgrad.zeros(n, dtype=tgrad.int32), tgrad.zeros(n, dtype=tgrad.bfloat16)])
    stock, trace = _run_both(mix_kernel, (1,), make, {"BLOCK": 64}, [0.75, n])
    for a, b in zip(stock, trace):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    s = np.float32(0.75)
    hf = tgrad.tensor(h).to(tgrad.bfloat16).float().cpu().numpy()
    r = np.where(x > y, x * s, y - s) + np.abs(x) + (x.astype(np.float64) * y + hf).astype(np.float32)
    r += np.sqrt(np.abs(y)) + np.exp(x) / (1 + np.abs(y)) - 1 / np.sqrt(1 + y * y)
    np.testing.assert_allclose(trace[0], r, rtol=1e-5, atol=1e-5)
    q = np.trunc(i / 3).astype(np.int32) + np.fmod(i, 5) + (i >> 1) + (i * s).astype(np.int32) + (x > 0.5)
    q = q + ((i & 6) ^ (i < 0)) + i + ((x > 0.5) & (y < 0)) * 10 + ((x > 0) ^ (y > 0)) * 100
    np.testing.assert_array_equal(trace[1], q)
    src = _source(mix_kernel)
    # the common ops are numpy expressions; bf16 <-> fp32 conversion keeps the builder call
    for frag in ("_np.where(", "_np.fmod(", ".astype(", "[a0]"):     # (a block of 64: np.where, not _select)
        assert frag in src, frag
    assert re.search(r"\.view\(_k\d+\) & _k\d+\)", src)         # |x|: the sign bit cleared by a constant mask
    generic = sorted(ln.strip() for ln in src.splitlines() if ln.strip().startswith("#"))
    assert generic == ["# create_ashr", "# create_fp_ext", "# create_fp_trunc"], src   # bf16 <-> fp32, >>


def _forget_tapes(kernel):
    for d in (TR._TAPES, TR._SEEN, TR._FAST):
        for k in [k for k in d if k[0] is kernel or k[0] == id(kernel)]:
            del d[k]


@pytest.mark.parametrize("nan", [False, True])
@pytest.mark.parametrize("small_broadcast", [TP._SMALL_BROADCAST, 0])
def test_broadcasts_reductions_gathers_replay_like_stock(nan, small_broadcast, monkeypatch):
    """Small broadcasts replay as copies, larger ones as np.broadcast_to views: both as stock."""
    monkeypatch.setattr(TP, "_SMALL_BROADCAST", small_broadcast)
    _forget_tapes(bcast_kernel)
    rng = np.random.default_rng(1)
    M, N = 5, 7
    a = rng.standard_normal(M).astype(np.float32)
    if nan:
        a[2] = np.nan               # tl.max / tl.min skip NaN (np.nanmax), tl.sum propagates it
    b = rng.standard_normal(N).astype(np.float32)
    idx = rng.permutation(M).astype(np.int32)

    def make():
        return ([tgrad.tensor(a), tgrad.tensor(b), tgrad.tensor(idx)],
                [tgrad.zeros(M, N), tgrad.zeros(M), tgrad.zeros(N), tgrad.zeros(N), tgrad.zeros(M)])
    stock, trace = _run_both(bcast_kernel, (1,), make, {"BM": 8, "BN": 8}, [M, N, 0.5])
    for u, v in zip(stock, trace):
        assert u.dtype == v.dtype and u.tobytes() == v.tobytes()
    t = a[:, None] * b[None, :] + np.float32(0.5)
    np.testing.assert_array_equal(trace[0], t)
    np.testing.assert_allclose(trace[1], t.sum(1), rtol=1e-6)
    np.testing.assert_array_equal(trace[2], np.fmax.reduce(t, 0))
    np.testing.assert_array_equal(trace[3], np.fmin.reduce(t, 0))
    g = np.zeros(M, np.float32)
    g[idx] = a[idx] * 2 + t.sum(1) + np.float32(0.5)   # the padded column holds a * 0 + s
    np.testing.assert_allclose(trace[4], g, rtol=1e-6)
    src = _source(bcast_kernel)
    for frag in ("_bt(" if small_broadcast == 0 else "_np.copyto(", ".reshape(_k", "_np.add.reduce(",
                 "_nanred(_np.fmax", "_nanred(_np.fmin", "_iload(", "_istore(", ".transpose(_k"):
        assert frag in src, frag
    assert ("_bt(" in src) == (small_broadcast == 0)
    assert "_th(" not in src, src


@pytest.mark.parametrize("inplace", [False, True])
def test_lanewise_tapes_compute_the_masked_box_alone(inplace):
    """No fill of masked-off lanes and no slicing on store (their values are never observable), same bits as
    stock, also when the output is an input (the loads are copies)."""
    rng = np.random.default_rng(2)
    n = 37
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    y[3] = 0.0

    def make():
        xt, yt = tgrad.tensor(x), tgrad.tensor(y)
        return [xt, yt], [xt if inplace else tgrad.zeros(n), tgrad.zeros(n, dtype=tgrad.int32)]
    _forget_tapes(lanewise_kernel)
    with np.errstate(all="ignore"):
        stock, trace = _run_both(lanewise_kernel, (1,), make, {"BLOCK": 64}, [0.75, n])
        r = np.where(x > y, x * np.float32(0.75) + y, (x.astype(np.float64) * y + x).astype(np.float32))
        r = r - np.float32(1.0) / y + np.arange(n, dtype=np.float32)
    for u, v in zip(stock, trace):
        assert u.dtype == v.dtype and u.tobytes() == v.tobytes()
    np.testing.assert_array_equal(trace[0], r)
    np.testing.assert_array_equal(trace[1], (r > 0).astype(np.int32) + np.arange(n, dtype=np.int32))
    src = _source(lanewise_kernel)
    assert ".copy()" not in src and "_np.where(" in src, src      # (a block of 64: np.where, not _select)
    stores = [ln.strip() for ln in src.splitlines() if "[...] = " in ln]
    assert len(stores) == 2 and all(re.fullmatch(r"_k\d+\[a\d\]\[\.\.\.\] = s0_\d+", ln) for ln in stores), src


def test_unmasked_and_scalar_loads_are_views():
    x = np.arange(16, dtype=np.float32) * 0.25
    c = np.array([3.0, -1.5], np.float32)

    def make():
        return [tgrad.tensor(x), tgrad.tensor(c)], [tgrad.zeros(9)]
    stock, trace = _run_both(unmasked_kernel, (1,), make, {"BLOCK": 8}, [])
    assert stock[0].tobytes() == trace[0].tobytes()
    np.testing.assert_array_equal(trace[0], np.append(x[::2] * np.float32(-1.5), -1.5))
    src = _source(unmasked_kernel)
    assert "#" not in src and len(re.findall(r"_k\d+\[a\d\b", src)) == 4, src


def test_builder_kinds_follow_the_interpreter():
    """Ops are classified from the builder's own bytecode: these must keep being recognised."""
    assert TO._builder_kind("create_fadd") == ("binary", np.add)
    assert TO._builder_kind("create_fcmpOLT") == ("binary", np.less)
    assert TO._builder_kind("create_minnumf") == ("binary", np.fmin)
    assert TO._builder_kind("create_exp") == ("unary", np.exp)
    assert TO._builder_kind("create_fneg") == ("unary", np.negative)
    assert TO._builder_kind("create_int_cast") == ("cast", None)
    assert TO._builder_kind("create_fp_trunc") == ("cast", None)
    assert TO._builder_kind("create_bitcast") == ("bitcast", None)
    assert TO._builder_kind("create_fp_to_fp") is None          # _convert_float: the builder call
    assert TO._builder_kind("create_sdiv") is None               # IEEE-style idiv, emitted on its own
    for name in TP._LOWERED_BY_NAME:
        assert hasattr(TR._I.interpreter_builder, name), name


@pytest.mark.parametrize("n", [1, 5, 300])
def test_replayed_scalar_and_pointer_arguments_change(n):
    """A compiled tape takes new pointers and float scalars at every launch."""
    outs = []
    for k in range(4):
        x = tgrad.arange(float(n)) + k
        outs.append(((x * (k + 0.5)) + 1.0).cpu().numpy().copy())
    for k, o in enumerate(outs):
        np.testing.assert_array_equal(o, (np.arange(n, dtype=np.float32) + k) * np.float32(k + 0.5) + 1)


def test_view_cache_follows_addresses():
    """Views are cached per load/store site by address: many live tensors (more than a site keeps) and
    their reuse after being freed still read and write the right memory."""
    for rnd in range(2):
        xs = [tgrad.full((33,), float(k + rnd)) for k in range(70)]
        outs = [x * 2.0 + 1.0 for x in xs]
        for k, o in enumerate(outs):
            np.testing.assert_array_equal(o.cpu().numpy(), np.full(33, 2.0 * (k + rnd) + 1, np.float32))
        del xs, outs


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc tuning")
def test_interpreted_launches_keep_numpy_temporaries_mapped():
    """After the first interpreted launch, freeing a few MB of block-sized numpy arrays does not give the
    pages back to the OS (else every launch of a large kernel page-faults them in again)."""
    code = ("import resource, numpy as np, tgrad\n"
            "(tgrad.ones(4) * 2).tolist()\n"
            "def burst():\n"
            "    xs = [np.ones(65536, np.float32) for _ in range(20)]\n"
            "burst(); burst()\n"
            "p0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
            "for _ in range(10): burst()\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - p0)\n")
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc only")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.split()[-1]) < 1000       # 12480 with glibc's defaults
    # a threshold the user set in glibc's environment variable wins: the storm comes back
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.split()[-1]) > 5000


def test_replayed_fp32_fma_is_the_interpreters_bit_for_bit():
    """_fma32 (float64 sum, fma_fp32 only where double rounding could differ) against fma_fp32 on values where
    the float64 sum lands on a float32 midpoint, subnormals, signed zeros, inf/NaN and random magnitudes."""
    from triton._C.libtriton import interpreter as I
    from tgrad.kernels.runtime.tape_ops import _fma32
    f = np.float32
    rng = np.random.default_rng(0)
    n = 20000
    xs = [(rng.standard_normal(n) * 2.0 ** rng.integers(-70, 70, n)).astype(f) for _ in range(3)]
    xs[2][:2000] = 1.0                       # exact midpoints and near-midpoints: 1 + 2^-24 (+- tiny)
    xs[0][:2000] = 1 + 2.0 ** -12
    xs[1][:1000] = 2.0 ** -24 * (1 - 2.0 ** -12 + 2.0 ** -24)     # 1 + 2^-24 + 2^-60: naive rounds to 1
    xs[1][1000:2000] = 2.0 ** -24 * (1 - 2.0 ** -12)                # 1 + 2^-24 - 2^-48
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-45, 3.4e38, 1.0], f)
    grid = np.array(np.meshgrid(special, special, special)).reshape(3, -1)
    zeros = [a.copy() for a in xs]          # mostly exact zeros (masked-off lanes), some subnormal results
    zeros[1][500:], zeros[2][500:] = 0.0, -0.0
    zeros[0][:250], zeros[1][:250], zeros[2][:250] = 2.0 ** -70, 2.0 ** -70, -1e-45
    for x, y, z in [xs, list(grid), zeros, (xs[0], f(2.5), xs[2]),
                    (np.array(f(1.5)), np.array(f(-2.0)), np.array(f(3.0)))]:
        with np.errstate(all="ignore"):           # as launches run
            want, got = I.fma_fp32(*np.broadcast_arrays(x, y, z)), _fma32(x, y, z)
        assert got.dtype == np.float32 and got.shape == want.shape
        same = (want.view(np.uint32) == got.view(np.uint32)) | (np.isnan(want) & np.isnan(got))
        assert same.all(), (x, y, z)
    naive = (xs[0][:1000].astype(np.float64) * xs[1][:1000] + xs[2][:1000]).astype(f)
    assert (naive != I.fma_fp32(xs[0][:1000], xs[1][:1000], xs[2][:1000])).all()   # the case the check guards


def test_repeated_loads_and_ops_are_replayed_once():
    """A load repeated with no store in between, and the same ops on it, are computed once in the tape;
    a load after a store is not merged."""
    x = np.linspace(-2, 2, 13, dtype=np.float32)

    def make():
        t = tgrad.tensor(x)
        return [], [t, tgrad.zeros(13)]
    stock, trace = _run_both(reload_kernel, (1,), make, {"BLOCK": 16}, [13])
    for a, b in zip(stock, trace):
        assert a.tobytes() == b.tobytes()
    e = np.exp(x - np.float32(1))
    np.testing.assert_array_equal(trace[1], e + e)
    np.testing.assert_array_equal(trace[0], x * np.float32(2))
    src = _source(reload_kernel)
    assert len(re.findall(r"\[a0\]", src)) == 3, src          # 2 loads (one merged) + 1 store
    assert len(re.findall(r"= _k\d+\(s0_\d+\)$", src, re.M)) == 1, src          # one exp


def test_tape_cache_is_bounded_in_bytes(monkeypatch):
    """Past trace.MAX_TAPE_BYTES the tapes and the launchers' cached launches are dropped (and traced again)."""
    from tgrad.kernels import elementwise as KE
    monkeypatch.setattr(TR, "MAX_TAPE_BYTES", 1 << 16)
    TR.clear_tapes()        # only a new trace evicts: earlier tests (test_executors) may hold every key below
    rng = np.random.default_rng(0)
    for n in range(20, 60):
        a = rng.standard_normal(n).astype(np.float32)
        for _ in range(3):      # recorded on the 2nd launch, replayed on the 3rd
            out = (tgrad.tensor(a) * 3.0).numpy()
        np.testing.assert_array_equal(out, a * np.float32(3.0))
        assert TR._bytes[0] <= (1 << 16) + max(r.nbytes for r in TR._TAPES.values() if r)
        assert len(KE._SITES) + len(KE._BINARY) < 3 * 40
    assert all(r.nbytes > 0 for r in TR._TAPES.values() if r)
    assert KE._SITES in TR.CACHES and KE._BINARY in TR.CACHES and KE._UNARY in TR.CACHES


def test_small_gemms_run_on_one_blas_thread(monkeypatch):
    """A tape's tl.dot below blas.SMALL multiply-adds calls blas.matmul_small, larger ones matmul_large."""
    from tgrad.kernels.runtime import blas
    calls = []
    for name in ("matmul_small", "matmul_large"):
        f = getattr(blas, name)
        monkeypatch.setattr(blas, name, lambda a, b, dt, f=f, name=name: calls.append(name) or f(a, b, dt))
    monkeypatch.setattr(blas, "SMALL", 16 * 16 * 16 + 1)   # 16x16 @ 16x16 tiles are small, 32x16 @ 16x32 not
    TR.clear_tapes()
    for m in (16, 32):
        a, b = tgrad.randn(m, 16), tgrad.randn(16, m)
        calls.clear()
        for _ in range(3):
            r = (a @ b).numpy()
        np.testing.assert_allclose(r, a.numpy() @ b.numpy(), rtol=1e-5, atol=1e-5)
        assert set(calls) == {"matmul_small" if m == 16 else "matmul_large"}
    TR.clear_tapes()

@triton.jit
def taps_kernel(x_ptr, out_ptr, NB, H, W, C, pad, BM: tl.constexpr, BC: tl.constexpr):
    """Implicit-GEMM style taps: rows n * H * W + h * W + w, each tap reading x[n, c, h + kh - pad, w + kw - pad]
    under the padding mask; and a stride-2 backward-pooling gather x[n, c, (h - kh) / 2, (w - kw) / 2]."""
    rm = tl.arange(0, BM)
    rc = tl.arange(0, BC)
    n = rm // (H * W)
    h = (rm % (H * W)) // W
    w = rm % W
    rows = rm < NB * H * W
    acc = tl.zeros((BM, BC), tl.float32)
    for kh in range(3):
        for kw in range(3):
            ih = h + kh - pad
            iw = w + kw - pad
            ok = rows & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            a = tl.load(x_ptr + (n * C * H * W + ih * W + iw)[:, None] + rc[None, :] * H * W,
                        mask=ok[:, None] & (rc[None, :] < C), other=0.0)
            acc += a * (kh * 3 + kw + 1)
    for kh in range(2):
        for kw in range(2):
            th = h - kh
            tw = w - kw
            oh = th // 2
            ow = tw // 2
            ok = rows & (th >= 0) & (oh * 2 == th) & (tw >= 0) & (ow * 2 == tw)
            acc += tl.load(x_ptr + (n * C * H * W + oh * W + ow)[:, None] + rc[None, :] * H * W,
                           mask=ok[:, None] & (rc[None, :] < C), other=0.0) * 100.0
    tl.store(out_ptr + (n * C * H * W + h * W + w)[:, None] + rc[None, :] * H * W, acc,
             mask=rows[:, None] & (rc[None, :] < C))


@pytest.mark.parametrize("nb,h,w,pad", [(2, 4, 4, 1), (4, 8, 2, 0), (3, 6, 4, 0), (3, 6, 6, 1)])
def test_affine_taps_under_interval_masks_are_strided_views(nb, h, w, pad):
    """A padded tap's or a strided window's gather is a strided view once the rows are split into (n, h, w):
    no per-element load or store is left in the tape, and the values are stock's."""
    C = 3
    x = np.random.default_rng(0).standard_normal((nb, C, h, w)).astype(np.float32)

    def make():
        return [tgrad.tensor(x)], [tgrad.zeros(nb, C, h, w)]
    bm = 1 << (nb * h * w - 1).bit_length()
    stock, trace = _run_both(taps_kernel, (1,), make, {"BM": bm, "BC": 4}, [nb, h, w, C, pad])
    assert stock[0].tobytes() == trace[0].tobytes()
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ref = np.zeros_like(x)
    for kh in range(3):
        for kw in range(3):
            ref += xp[:, :, kh:kh + h, kw:kw + w][:, :, :h, :w] * (kh * 3 + kw + 1) if pad else 0
    if not pad:
        for kh in range(3):
            for kw in range(3):
                sub = np.zeros_like(x)
                sub[:, :, :max(h - kh, 0), :max(w - kw, 0)] = x[:, :, kh:, kw:]
                ref += sub * (kh * 3 + kw + 1)
    for kh in range(2):
        for kw in range(2):
            sub = np.zeros_like(x)
            sub[:, :, kh::2, kw::2] = x[:, :, :len(range(kh, h, 2)), :len(range(kw, w, 2))]
            ref += sub * 100
    np.testing.assert_allclose(trace[0], ref, rtol=1e-6, atol=1e-5)
    src = _source(taps_kernel)
    assert "_iload" not in src and "_istore" not in src and "#" not in src, src
