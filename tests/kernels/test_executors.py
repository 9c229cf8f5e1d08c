"""The three interpreter executors (trace, direct, stock) give bit-identical results on the OpInfo samples:
every op, its first 6 samples in its first two dtypes; for the first dtype also the gradients (of the
outputs' sum) of its first 3 samples.  (All dtypes and samples with the stock interpreter take too long
for the suite.)

Each sample runs 3 times under ``trace`` so the 3rd run is a replay of the
tape recorded by the 2nd; the replayed output must equal the stock
interpreter's bit for bit.
"""
import numpy as np
import pytest

import tgrad
from tgrad.kernels.runtime import launcher as T
from tgrad.kernels.runtime import trace as TR
from tgrad.testing.opinfo import to_tensor
from tgrad.testing.opinfo_db import OP_DB


CPU_ONLY = True     # tests the cpu executors: runs on cpu under --device cuda too (conftest)


def _outputs(opinfo, sample, dtype, backward):
    """Forward outputs, then (``backward``) the gradients of their sum w.r.t. the differentiable inputs."""
    tgrad.manual_seed(0)        # random ops (dropout) draw the same numbers under each executor
    grad = backward and opinfo.grad and dtype.is_floating_point and sample.grad
    args = [to_tensor(a, dtype, "cpu", requires_grad=grad and (opinfo.diff_args is None or i in opinfo.diff_args))
            if isinstance(a, np.ndarray) else a for i, a in enumerate(sample.args)]
    out = opinfo.op(*args, **sample.kwargs)
    outs = list(out) if isinstance(out, tuple) else [out]
    res = [o.detach()._host_copy() for o in outs if isinstance(o, tgrad.Tensor)]
    diff = [o for o in outs if isinstance(o, tgrad.Tensor) and o.requires_grad]
    leaves = [a for a in args if isinstance(a, tgrad.Tensor) and a.requires_grad]
    if diff and leaves:
        gs = tgrad.autograd.grad(diff, leaves, grad_outputs=[tgrad.ones_like(o) for o in diff], allow_unused=True)
        res += [g._host_copy() for g in gs if g is not None]
    return res


@pytest.fixture
def executor():
    prev = T.EXECUTOR

    def use(name):
        T.EXECUTOR = name
    yield use
    T.EXECUTOR = prev


@pytest.mark.parametrize("opinfo", OP_DB, ids=lambda o: o.name)
def test_trace_replay_matches_stock(opinfo, executor, device):
    if device != "cpu":
        pytest.skip("interpreter executors only")
    for di, dtype in enumerate(opinfo.dtypes[:2]):
        for si, sample in enumerate(opinfo.sample_inputs()[:6]):
            backward = di == 0 and si < 3
            executor("stock")
            ref = _outputs(opinfo, sample, dtype, backward)
            executor("direct")
            direct = _outputs(opinfo, sample, dtype, backward)
            executor("trace")
            for _ in range(3):
                traced = _outputs(opinfo, sample, dtype, backward)
            assert len(ref) == len(direct) == len(traced)
            for r, d, t in zip(ref, direct, traced):
                if r.dtype.itemsize == 2 and r.dtype.kind == "V":       # ml_dtypes' bfloat16: numpy sees NaN != NaN
                    r, d, t = (a.astype(np.float32) for a in (r, d, t))
                np.testing.assert_array_equal(d, r, err_msg=f"direct vs stock: {opinfo.name} {sample} {dtype}")
                np.testing.assert_array_equal(t, r, err_msg=f"trace vs stock: {opinfo.name} {sample} {dtype}")


def test_replay_detects_control_flow_on_loaded_values(executor):
    """A kernel whose loop count comes from memory cannot be replayed: it must stay exact."""
    import triton
    import triton.language as tl

    import tgrad

    @triton.jit
    def count_kernel(n_ptr, out_ptr, BLOCK: tl.constexpr):
        n = tl.load(n_ptr)
        acc = tl.zeros([BLOCK], tl.float32)
        for _ in range(n):
            acc += 1.0
        tl.store(out_ptr + tl.arange(0, BLOCK), acc)

    executor("trace")
    out = tgrad.zeros(16)
    for n in (2, 3, 5, 7):
        cnt = tgrad.tensor([n], dtype=tgrad.int32)
        T.launch(count_kernel, (1,), "cpu", [T.Ptr(cnt.data_ptr(), np.dtype(np.int32)),
                                             T.Ptr(out.data_ptr(), np.dtype(np.float32))], {"BLOCK": 16})
        assert out.tolist() == [float(n)] * 16
    assert any(v is False for k, v in TR._TAPES.items() if k[0] is count_kernel)
