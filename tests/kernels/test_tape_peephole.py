"""The tape compiler's peephole (tape._peephole): a load that only exact element-wise ufuncs read before any store
reads the memory in place, stores sink below such lines (in order), and a scalar splat meeting block-shaped
operands stays (1,); the values are the stock interpreter's, also when a program stores over what it loaded."""
import re

import numpy as np
import triton
import triton.language as tl

import tgrad
from tgrad.kernels._lang import kptr
from tgrad.kernels.runtime import launcher as T
from tgrad.kernels.runtime import trace as TR

CPU_ONLY = True


@triton.jit
def update_kernel(p_ptr, g_ptr, b_ptr, out_ptr, lr, mom, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    p = tl.load(p_ptr + offs, mask=m)
    g = tl.load(g_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs, mask=m)
    buf = b * mom + g
    tl.store(b_ptr + offs, buf, mask=m)             # b_ptr may be p_ptr: p must be the value loaded above
    tl.store(p_ptr + offs, p - lr * buf, mask=m)
    tl.store(out_ptr + offs, p + g, mask=m)         # p read after both stores


def _run(ex, p, g, b, alias):
    T.EXECUTOR = ex
    pt, gt, bt, out = tgrad.tensor(p), tgrad.tensor(g), tgrad.tensor(b), tgrad.zeros(len(p))
    bp = kptr(pt) if alias else kptr(bt)
    T.launch(update_kernel, (2,), "cpu", [kptr(pt), kptr(gt), bp, kptr(out), 0.125, 0.75, len(p)], {"BLOCK": 64})
    return pt.numpy().copy(), bt.numpy().copy(), out.numpy().copy()


def test_loads_in_place_and_splats_kept_scalar_give_the_interpreters_values():
    rng = np.random.default_rng(0)
    p, g, b = rng.standard_normal((3, 128)).astype(np.float32)
    prev = T.EXECUTOR
    try:
        for alias in (False, True):
            res = [_run(ex, p, g, b, alias) for ex in ("stock", "trace", "trace", "trace")]
            for r in res[1:]:
                assert all(x.tobytes() == y.tobytes() for x, y in zip(r, res[0])), alias
    finally:
        T.EXECUTOR = prev
    np.testing.assert_array_equal(res[0][2], p + g)            # (aliased run) the loaded p, not the stored buf
    np.testing.assert_array_equal(res[0][0], p - np.float32(0.125) * (p * np.float32(0.75) + g))
    src = [v for k, v in TR._TAPES.items() if k[0] is update_kernel and v][-1].source
    assert "_nparray(_k" not in src, src                       # every load read in place
    assert not re.search(r"_np\.empty\(_k\d+, _k\d+\); _np\.copyto\(s\d+_\d+, x\d+", src), src   # no splat
    body = [ln.strip() for ln in src.splitlines()]
    stores = [i for i, ln in enumerate(body) if "[...] = " in ln]
    assert stores == sorted(stores) and len(stores) == 6
    for prog in (0, 1):         # per program: its three stores follow all its arithmetic
        own = [i for i, ln in enumerate(body) if re.match(rf"s{prog}_\d+ = ", ln)]
        assert max(own) < min(i for i in stores if f"s{prog}_" in body[i]), src


@triton.jit
def masked_product_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.where(m, tl.load(x_ptr + offs, mask=m, other=0.0) * tl.load(y_ptr + offs, mask=m, other=0.0), 0.0)
    tl.store(out_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), v)


def test_where_of_a_constant_full_mask_is_its_operand():
    """A full block's ``tl.where(mask, v, 0)`` has an all-true constant mask: the tape takes v itself (no where);
    the last, partial block keeps its where (the masked-off lanes' -0.0 products become +0.0)."""
    x = np.full(96, -1.5, np.float32)
    y = np.arange(96, dtype=np.float32) - 40
    prev = T.EXECUTOR
    try:
        res = []
        for ex in ("stock", "trace", "trace"):
            T.EXECUTOR = ex
            xt, yt, out = tgrad.tensor(x), tgrad.tensor(y), tgrad.full((128,), 7.0)
            T.launch(masked_product_kernel, (2,), "cpu", [kptr(xt), kptr(yt), kptr(out), 80], {"BLOCK": 64})
            res.append(out.numpy().copy())
    finally:
        T.EXECUTOR = prev
    assert all(r.tobytes() == res[0].tobytes() for r in res[1:])
    np.testing.assert_array_equal(res[0][:80], x[:80] * y[:80])
    assert not np.signbit(res[0][80:]).any()
    src = [v for k, v in TR._TAPES.items() if k[0] is masked_product_kernel and v][-1].source
    assert src.count("where(") + src.count("_sel(") == 1, src      # program 1's only


def test_leftover_vectors_add_into_the_accumulator_in_place():
    """An 80-element sum, mean and product sum (ATen's 4 x 8 lanes, then two leftover vectors of 8): the tape adds
    each leftover vector (or product) into the accumulator's first lanes in place, with no padded copy, where or
    +0 lanes, and gives the stock interpreter's bits, also for -0.0 rows, infinities and NaN payloads."""
    from tgrad.kernels.reduce import cascade_sum_kernel
    from tgrad.ops.reduce import mul_sum_to_size
    rng = np.random.default_rng(2)
    rows = [rng.standard_normal(80).astype(np.float32), np.full(80, -0.0, np.float32),
            np.where(rng.random(80) < 0.1, np.float32(np.inf), rng.standard_normal(80)).astype(np.float32)]
    nan = rng.standard_normal(80).astype(np.float32)
    nan.view(np.uint32)[[70, 75]] = [0x7FC00123, 0xFFC00456]         # NaNs in the leftover vectors
    rows.append(nan)
    prev = T.EXECUTOR
    try:
        for v in rows:
            res = []
            for ex in ("stock", "trace", "trace"):
                T.EXECUTOR = ex
                x = tgrad.tensor(v.reshape(80, 1))
                y = tgrad.tensor(v[::-1].copy().reshape(80, 1))
                res.append(b"".join(t.numpy().tobytes() for t in (x.sum(), x.mean(), mul_sum_to_size(x, y, (1, 1)))))
            assert res[1] == res[0] and res[2] == res[0], v
    finally:
        T.EXECUTOR = prev
    srcs = [t.source for k, t in TR._TAPES.items() if k[0] is cascade_sum_kernel and t]
    assert srcs and all("_np.add(_v, " in s and ".copy()" not in s and "where(" not in s for s in srcs), srcs
