"""The tape compiler computes each program's masked box alone: the last block of a multi-program elementwise
launch (and every masked slot of the multi-tensor optimizer) has no fill of masked-off lanes and no slicing
on store, also when the program computes on scalar arguments (1 - s, -s) before splatting them."""
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
def blocks_kernel(x_ptr, y_ptr, out_ptr, s, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    y = tl.load(y_ptr + offs, mask=m, other=0.0)
    t = 1.0 - s                                     # scalar ops: stay (1,)-shaped in a box-only program
    tl.store(out_ptr + offs, tl.fma(x, y, x * t) + (-s) / (y + 2.0), mask=m)


def test_every_program_computes_its_box_alone():
    rng = np.random.default_rng(0)
    block, n = 64, 2 * 64 + 5
    x, y = rng.standard_normal((2, n)).astype(np.float32)
    prev, res = T.EXECUTOR, []
    try:
        for ex in ("stock", "trace", "trace", "trace"):      # direct, record, replay of the compiled tape
            T.EXECUTOR = ex
            xt, yt, out = tgrad.tensor(x), tgrad.tensor(y), tgrad.zeros(n)
            T.launch(blocks_kernel, (3,), "cpu", [kptr(xt), kptr(yt), kptr(out), 0.25, n], {"BLOCK": block})
            res.append(out.numpy().copy())
    finally:
        T.EXECUTOR = prev
    assert all(r.tobytes() == res[0].tobytes() for r in res[1:])
    s = np.float32(0.25)
    with np.errstate(all="ignore"):
        want = (x.astype(np.float64) * y + x * (np.float32(1) - s)).astype(np.float32) + (-s) / (y + np.float32(2))
    np.testing.assert_array_equal(res[-1], want)
    src = [v for k, v in TR._TAPES.items() if k[0] is blocks_kernel and v][-1].source
    assert ".copy()" not in src, src                            # no masked-off lanes filled
    stores = [ln.strip() for ln in src.splitlines() if "[...] = " in ln]
    assert len(stores) == 3 and all(re.fullmatch(r"_k\d+\[a2( \+ \d+)?\]\[\.\.\.\] = s\d_\d+", ln) for ln in stores), src


def test_native_element_updates_and_abs_compute_the_box_alone():
    """SGD's multi-tensor step (optim_cpu.c's element updates, create_native) and a BCE-with-logits loss (|x|,
    create_fabs) on sizes that are no multiple of the block: box-only tapes, the stock interpreter's values."""
    rng = np.random.default_rng(1)
    p0, g0 = rng.standard_normal((2, 37)).astype(np.float32)
    z, tgt = rng.standard_normal((2, 10, 3)).astype(np.float32)
    prev, res = T.EXECUTOR, []
    before = set(TR._TAPES)
    try:
        for ex in ("stock", "trace", "trace", "trace"):
            T.EXECUTOR = ex
            p = tgrad.tensor(p0, requires_grad=True)
            opt = tgrad.optim.SGD([p], lr=0.1, momentum=0.9)
            for _ in range(2):
                p.grad = tgrad.tensor(g0)
                opt.step()
            x = tgrad.tensor(z, requires_grad=True)
            loss = tgrad.nn.functional.binary_cross_entropy_with_logits(x, tgrad.tensor(tgt), reduction="none")
            loss.sum().backward()
            res.append([p.detach().numpy().copy(), loss.detach().numpy().copy(), x.grad.numpy().copy()])
    finally:
        T.EXECUTOR = prev
    assert all(a.tobytes() == b.tobytes() for r in res[1:] for a, b in zip(r, res[0]))
    srcs = [v.source for k, v in TR._TAPES.items() if k not in before and v and "sgd" in k[0].__name__
            or k not in before and v and "loss" in k[0].__name__]
    assert srcs and all(".copy()" not in s for s in srcs), srcs
