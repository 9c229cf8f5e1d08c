"""The cpu schedule of the sparse segment sums (ops/sparse.py ``_rounds_sum``: entries counting-sorted by row,
tiles of unrolled rounds) gives the GPU kernel's bits (segment_sum_kernel, run on cpu with GPU blocks) for
sparse @ dense (COO uncoalesced / coalesced, CSR), to_dense, dense + sparse with alpha and coalesce, in every
dtype, with rows long enough for the long-row launch; and sparse @ dense on cpu never takes the looping kernel
(its loop over a loaded count runs in the interpreter: 2-6x slower than the index_add it replaced)."""
import numpy as np
import pytest

import tgrad
from tgrad import _sparse as S
from tgrad.kernels.runtime import launcher

CPU_ONLY = True


def _gpu_schedule(f):
    launcher.FORCE_GPU_BLOCKS = True
    try:
        return f()
    finally:
        launcher.FORCE_GPU_BLOCKS = False


def _bits(t):
    a = t.float().numpy() if t.dtype is tgrad.bfloat16 else t.numpy()
    return a.shape, a.tobytes()


def _case(rng, n, m, nnz, skew, dt, dense_dims=()):
    rows = np.minimum(rng.pareto(1.0, nnz).astype(np.int64), n - 1) if skew else rng.integers(0, n, nnz)
    idx = tgrad.tensor(np.stack([rows, rng.integers(0, m, nnz)]))
    vals = tgrad.tensor(rng.standard_normal((nnz,) + dense_dims) * 3).to(dt)
    return tgrad.sparse_coo_tensor(idx, vals, (n, m) + dense_dims)


@pytest.mark.parametrize("dt", [tgrad.float32, tgrad.float64, tgrad.float16, tgrad.bfloat16, tgrad.int64])
@pytest.mark.parametrize("skew", [False, True])
def test_cpu_schedule_matches_the_gpu_kernel(dt, skew):
    rng = np.random.default_rng(7)
    s = _case(rng, 37, 23, 400, skew, dt)
    h = _case(rng, 9, 5, 60, skew, dt, (3,))
    d = tgrad.tensor(rng.standard_normal((23, 6)) * 3).to(dt)
    base = tgrad.tensor(rng.standard_normal((37, 23))).to(dt)
    runs = {"to_dense": lambda: s.to_dense(), "coalesce": lambda: s.coalesce().values(),
            "hybrid to_dense": lambda: h.to_dense(), "hybrid coalesce": lambda: h.coalesce().values(),
            "add alpha": lambda: base.add(s, alpha=3 if dt is tgrad.int64 else 0.3)}
    if dt.is_floating_point:
        e = d.clone()
        e[0, 0], e[3, 1] = float("inf"), float("nan")      # (lanes past their row's end must not touch them)
        runs.update({"mm": lambda: S.sparse_mm(s, d), "mm coalesced": lambda: S.sparse_mm(s.coalesce(), d),
                     "csr mm": lambda: s.to_sparse_csr() @ d, "mm inf nan": lambda: S.sparse_mm(s, e),
                     "dense @ csr": lambda: d.t() @ s.to_sparse_csr().t()})
    if skew:
        assert int(np.bincount(s._indices()[0].numpy()).max()) > 8 * 16     # (the long-row launch runs)
    for name, f in runs.items():
        assert _bits(f()) == _bits(_gpu_schedule(f)), name


def test_mm_matches_a_sequential_fma_reference():
    rng = np.random.default_rng(3)
    s = _case(rng, 20, 10, 300, True, tgrad.float64)
    d = rng.standard_normal((10, 4))
    out = np.zeros((20, 4))
    for (r, c), v in zip(s._indices().numpy().T, s._values().numpy()):   # entry order, as ATen's cpu loop
        out[r] = out[r] + v * d[c]      # (float64: products and sums rounded apart; fma may differ by an ulp)
    got = S.sparse_mm(s, tgrad.tensor(d)).numpy()
    np.testing.assert_allclose(got, out, rtol=1e-13, atol=1e-13)


def _launches(f):
    launcher.COUNTER.counts.clear()
    launcher.COUNTER.enabled = True
    try:
        f()
    finally:
        launcher.COUNTER.enabled = False
    return dict(launcher.COUNTER.counts)


def test_cpu_mm_takes_no_looping_kernel():
    rng = np.random.default_rng(5)
    s = _case(rng, 30, 20, 200, False, tgrad.float32)
    c = s.to_sparse_csr()
    d = tgrad.randn(20, 8)
    counts = _launches(lambda: S.sparse_mm(s, d))
    assert counts.get("segment_tile_kernel") == 1 and "segment_sum_kernel" not in counts, counts
    assert "sort_kernel" not in counts, counts       # (the cpu's counting sort by row: no comparison sort)
    for f in (lambda: c @ d, lambda: s.to_dense(), lambda: s.coalesce()):
        counts = _launches(f)
        assert counts.get("segment_tile_kernel") == 1 and "segment_sum_kernel" not in counts, counts
