"""tgrad.compile's cpu program, tier 3: a GEMM too big for a buffer plus a tape's zero accumulator becomes the
GEMM alone (``hoist._drop_zero_addend``: a GEMM over K > 1 never returns -0.0) or, for K = 1 (one product: -0.0
possible), the GEMM's own result with +0.0 added in place (``hoist._zero_acc``: no zeros read, no second array);
the same bytes with NaN and inf in the operands; not done for a running sum or a nonzero or -0.0 constant."""
import numpy as np

import tgrad
import tgrad.nn as nn
from tgrad._compile import hoist as H
from tgrad.kernels.runtime import blas

CPU_ONLY = True     # tests the cpu replay program (conftest)


def test_zero_accumulator_added_in_place():
    rng = np.random.default_rng(0)
    f32 = np.dtype(np.float32)
    a = rng.standard_normal((200, 64)).astype(f32)
    a[1, 3] = np.nan
    a[2, 5] = np.inf
    b = -np.abs(rng.standard_normal((64, 96))).astype(f32)
    ns = {"_np": np, "c0_k1": blas.matmul_large, "c0_k2": f32, "c0_k3": np.zeros((200, 96), f32), "a": a, "b": b,
          "c0_k4": np.float32([-0.0]), "c0_k5": np.ones((1, 96), f32), "c0_k6": blas.matmul_small,
          "col": rng.standard_normal((200, 1)).astype(f32), "row": b[:1].copy()}
    src = ("def replay(B, O):\n    t0 = (c0_k1(a, b, c0_k2) + c0_k3)\n    t1 = (c0_k1(a, b, c0_k2) + t0)\n"
           "    t2 = (c0_k1(a, b, c0_k2) + c0_k4)\n    t3 = (c0_k1(a, b, c0_k2) + c0_k5)\n"
           "    t4 = (c0_k6(col, row, c0_k2) + c0_k3)\n    return t0, t1, t2, t3, t4\n")
    ref = {}
    exec(src, dict(ns), ref)
    with np.errstate(all="ignore"):
        want = ref["replay"](None, None)
    out = H.hoist(src, ns, dict(zip(("t0", "t1", "t2", "t3", "t4"), want)))
    assert "    t0 = c0_k1(a, b, c0_k2)\n" in out
    assert "    t4 = c0_k6(col, row, c0_k2); _np.add(t4, 0.0, out=t4)" in out
    for t, c in (("t1", "t0"), ("t2", "c0_k4"), ("t3", "c0_k5")):     # a running sum, -0.0, nonzero: kept
        assert f"    {t} = (c0_k1(a, b, c0_k2) + {c})" in out
    exec(out, ns)
    with np.errstate(all="ignore"):
        got = ns["replay"](None, None)
    assert all(x.tobytes() == y.tobytes() for x, y in zip(got, want))


def test_compiled_wide_linear_keeps_eager_bits():
    """A compiled step through GEMMs past the buffer size (zero rows in the batch: -0.0 sums) gives eager's bits."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((256, 64)).astype(np.float32)
    x[:3] = 0.0
    x = tgrad.tensor(x)

    def run(compiled):
        tgrad.manual_seed(0)
        model = nn.Sequential(nn.Linear(64, 96), nn.Tanh(), nn.Linear(96, 32))
        opt = tgrad.optim.SGD(model.parameters(), lr=0.05)

        def step():
            loss = model(x).square().mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        f = tgrad.compile(step) if compiled else step
        out = [f().detach().numpy().tobytes() for _ in range(6)]
        return out + [p.detach().numpy().tobytes() for p in model.parameters()], f
    want, _ = run(False)
    got, f = run(True)
    assert got == want
    assert any(e.run is not None for e in f._cache.values())      # (replayed)
