"""float32/float64 sums and means add in ATen's cpu order (cascade_sum): bit for bit against a loop-for-loop
numpy model of ATen's SumKernel.cpp (tgrad.testing.aten_sum) and against values PyTorch 2.13 printed."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.testing.aten_sum import full_sum, inner_sum, outer_sum, row_sum

CPU_ONLY = True     # seeded values are PyTorch's cpu random stream


def _eq(got, want):
    np.testing.assert_array_equal(np.asarray(got.cpu().numpy()), np.asarray(want))


def test_pytorch_values():
    """Printed by PyTorch 2.13 (AVX2 build, 2 threads) for torch.manual_seed(0); x = torch.randn(100003)."""
    tgrad.manual_seed(0)
    x = tgrad.randn(100003)
    n = tgrad.get_num_threads()
    try:
        tgrad.set_num_threads(2)
        assert x.sum().item() == -255.45057678222656          # split between 2 threads
        assert x[:1000].sum().item() == 31.198272705078125
        assert x[:7].sum().item() == -1.7379506826400757       # the scalar path
        assert x[:40].view(8, 5).sum(0).tolist() == [0.8769294023513794, -4.645365238189697, -4.600942134857178,
                                                     5.607461929321289, 3.7806642055511475]
        assert x[::3].sum().item() == -0.21783447265625        # strided: the scalar path
        tgrad.set_num_threads(1)
        assert x.sum().item() == -255.45053100585938            # one thread: no split
    finally:
        tgrad.set_num_threads(n)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 3, 4, 5, 7, 8, 9, 31, 32, 33, 64, 100, 511, 512, 513, 1000, 8193, 40000, 70001])
def test_full_sum_and_mean(n, dtype):
    x = np.random.default_rng(n).standard_normal(n).astype(dtype)
    t = tgrad.from_numpy(x)
    want = full_sum(x, threads=tgrad.get_num_threads())
    _eq(t.sum(), want)
    _eq(t.mean(), np.divide(want, x.dtype.type(n)))
    _eq(t.view(1, -1).t().sum(), want)                        # dense, another shape: memory order


@pytest.mark.parametrize("shape", [(5, 3), (4, 8), (6, 33), (3, 100), (64, 10), (2, 1000)])
def test_row_sums_strided_rows_and_column_sums(shape):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    t = tgrad.from_numpy(x)
    _eq(t.sum(-1), [inner_sum(r, 8) for r in x])
    _eq(t.sum(0), outer_sum(x))
    _eq(t.t().sum(-1), outer_sum(x))
    _eq(t[:, ::2].sum(-1), [x.dtype.type(0) + row_sum(np.ascontiguousarray(r)) for r in x[:, ::2]])


def test_mean_reduced_losses_divide_the_sum_once():
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((64, 10)).astype(np.float32), rng.standard_normal((64, 10)).astype(np.float32)
    tx, ty = tgrad.from_numpy(x), tgrad.from_numpy(y)
    n = np.float32(x.size)
    _eq(F.mse_loss(tx, ty), np.divide(full_sum((x - y) * (x - y)), n))
    _eq(F.l1_loss(tx, ty), np.divide(full_sum(np.abs(x - y)), n))
    _eq(F.mse_loss(tx, ty, reduction="sum"), full_sum((x - y) * (x - y)))
