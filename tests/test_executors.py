"""The three interpreter executors (trace, direct, stock) give bit-identical results on every OpInfo sample.

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


def _outputs(opinfo, sample, dtype):
    tgrad.manual_seed(0)        # random ops (dropout) draw the same numbers under each executor
    args = [to_tensor(a, dtype, "cpu") if isinstance(a, np.ndarray) else a for a in sample.args]
    out = opinfo.op(*args, **sample.kwargs)
    return [o.detach()._host_copy() for o in (out if isinstance(out, tuple) else (out,))]


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
    for dtype in opinfo.dtypes[:2]:
        for sample in opinfo.sample_inputs()[:6]:
            executor("stock")
            ref = _outputs(opinfo, sample, dtype)
            executor("direct")
            direct = _outputs(opinfo, sample, dtype)
            executor("trace")
            for _ in range(3):
                traced = _outputs(opinfo, sample, dtype)
            for r, d, t in zip(ref, direct, traced):
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
