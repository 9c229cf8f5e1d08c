"""nn.SyncBatchNorm on one process (no process group): BatchNorm's numbers, as PyTorch; convert_sync_batchnorm
shares parameters and buffers; PyTorch's checks.  The multi-rank behaviour: tests/distributed (syncbn)."""
import numpy as np
import pytest

import tgrad
from tgrad import nn

CPU_ONLY = True     # a module over batch_norm, which the device suites test


def test_without_a_process_group_it_is_batch_norm():
    tgrad.manual_seed(0)
    x = tgrad.randn(4, 3, 5, 5, dtype=tgrad.float64)
    bn, sbn = nn.BatchNorm2d(3).double(), nn.SyncBatchNorm(3).double()
    for _ in range(2):
        np.testing.assert_array_equal(sbn(x).detach().numpy(), bn(x).detach().numpy())
    np.testing.assert_array_equal(sbn.running_var.numpy(), bn.running_var.numpy())
    assert sbn.num_batches_tracked.item() == 2
    sbn.eval(), bn.eval()
    np.testing.assert_array_equal(sbn(x).detach().numpy(), bn(x).detach().numpy())
    # any rank >= 2 input works (BatchNorm1d/3d shapes)
    assert nn.SyncBatchNorm(3)(tgrad.randn(4, 3)).shape == (4, 3)


def test_convert_sync_batchnorm_and_checks():
    m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4, momentum=None), nn.Sequential(nn.BatchNorm1d(2)))
    m.eval()
    s = nn.SyncBatchNorm.convert_sync_batchnorm(m)
    assert type(s[1]) is nn.SyncBatchNorm and type(s[2][0]) is nn.SyncBatchNorm and type(s[0]) is nn.Conv2d
    assert s[1].weight is m[1].weight and s[1].running_mean is m[1].running_mean and s[1].momentum is None
    assert not s[1].training
    assert repr(s[1]) == "SyncBatchNorm(4, eps=1e-05, momentum=None, affine=True, bias=True, track_running_stats=True)"
    with pytest.raises(ValueError, match=r"expected at least 2D input \(got 1D input\)"):
        nn.SyncBatchNorm(3)(tgrad.randn(3))
    with pytest.raises(ValueError, match="SyncBatchNorm number of input channels should be non-zero"):
        nn.SyncBatchNorm(0)(tgrad.randn(2, 0))
