"""BatchNorm2d, GroupNorm, InstanceNorm: PyTorch's numbers (hard-coded from PyTorch 2.13), running stats, errors."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad import nn


def arr(*s, k=1.0, device="cpu"):
    return tgrad.tensor(np.sin(np.arange(int(np.prod(s))) * k).reshape(s).astype(np.float32), device=device)


def close(t, ref, atol=1e-5):
    np.testing.assert_allclose(np.asarray(t.detach().cpu().numpy() if isinstance(t, tgrad.Tensor) else t),
                               np.asarray(ref, np.float32), atol=atol, rtol=1e-5)


def test_batchnorm2d_cumulative_average_and_eval_match_pytorch(device):
    bn = nn.BatchNorm2d(3, momentum=None).to(device)
    for k in (1.0, 2.0):
        out = bn(arr(4, 3, 2, 2, k=k, device=device) * k)
    assert type(out.grad_fn).__name__ == "NativeBatchNormBackward0"
    close(bn.running_mean, [0.0387512743473053, -0.20166948437690735, 0.214781254529953])
    close(bn.running_var, [1.2297735214233398, 1.309786319732666, 1.2028000354766846])
    assert bn.num_batches_tracked.item() == 2
    close(out[1, 2], [[0.983579158782959, -1.475380778312683], [-0.09287585318088531, 1.2154340744018555]])
    bn.eval()
    close(bn(arr(2, 3, 2, 2, k=0.4, device=device))[1, 1],
          [[0.27805060148239136, 0.6079555749893188], [0.8696979284286499, 1.0219542980194092]])
    assert repr(bn) == "BatchNorm2d(3, eps=1e-05, momentum=None, affine=True, bias=True, track_running_stats=True)"
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        bn(arr(2, 3, 4, device=device))
    assert not isinstance(bn, nn.BatchNorm1d)


def test_group_norm_values_and_gradients_match_pytorch(device):
    gn = nn.GroupNorm(2, 4).to(device)
    with tgrad.no_grad():
        gn.weight.copy_(tgrad.tensor([1., 2., 3., 4.], device=device))
        gn.bias.copy_(tgrad.tensor([0., .5, 1., 1.5], device=device))
    x = arr(2, 4, 3, device=device).requires_grad_()
    y = gn(x)
    assert type(y.grad_fn).__name__ == "NativeGroupNormBackward0"
    (y ** 3).sum().backward()
    close(y[1], [[-0.843133270740509, 0.5418376922607422, 1.3676036596298218],
                 [2.2499184608459473, -0.46632128953933716, -2.4162135124206543],
                 [-2.499173164367676, 1.441717505455017, 4.77980899810791],
                 [6.094766139984131, 1.1631321907043457, -3.721035957336426]])
    close(x.grad[0], [[-14.782358169555664, 5.000999450683594, 7.108158111572266],
                      [-6.807469844818115, -3.0710744857788086, 12.551742553710938],
                      [-172.3636932373047, -41.337554931640625, 104.49368286132812],
                      [23.480270385742188, -105.99945068359375, 191.72662353515625]], atol=3e-4)
    close(gn.weight.grad, [16.4655704498291, -43.48716735839844, 204.92214965820312, -1.313696026802063], atol=3e-4)
    assert repr(gn) == "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"


def test_group_norm_errors():
    with pytest.raises(ValueError, match="num_channels must be divisible by num_groups"):
        nn.GroupNorm(3, 4)
    with pytest.raises(RuntimeError, match=r"Expected number of channels in input to be divisible by num_groups, "
                                           r"but got input of shape \[2, 3, 8, 8\] and num_groups=2"):
        F.group_norm(tgrad.zeros(2, 3, 8, 8), 2)


def test_instance_norm_running_stats_match_pytorch(device):
    m = nn.InstanceNorm2d(3, track_running_stats=True).to(device)
    y = m(arr(2, 3, 2, 3, k=0.8, device=device))
    close(y[1, 0], [[1.6473103761672974, 0.960875391960144, -0.1481449007987976],
                    [-1.0070335865020752, -1.094800353050232, -0.35820698738098145]])
    close(m.running_mean, [0.003919933922588825, 0.017421679571270943, -0.0008711768314242363])
    close(m.running_var, [0.9505627155303955, 0.9597127437591553, 0.9500988721847534])
    assert repr(nn.InstanceNorm2d(3)) == \
        "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)"
    assert m(arr(3, 2, 3, device=device)).shape == (3, 2, 3)        # unbatched


def test_dropout2d_zeroes_whole_channels(device):
    tgrad.manual_seed(0)
    x = tgrad.ones(8, 16, 3, 3, device=device)
    y = nn.Dropout2d(0.5)(x).cpu().numpy()
    per_channel = y.reshape(8, 16, 9)
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert (per_channel.min(-1) == per_channel.max(-1)).all()       # a channel is kept or dropped as a whole
    assert 0.2 < (per_channel[:, :, 0] == 0).mean() < 0.8
    m = nn.Dropout2d(0.5)
    m.eval()
    assert m(x) is x
    assert repr(m) == "Dropout2d(p=0.5, inplace=False)"


def test_batchnorm3d_is_batchnorm2d_over_depth_too(device):
    """BatchNorm3d of (N, C, D, H, W) = BatchNorm2d of (N, C, D * H, W): same statistics, output and running stats."""
    bn3, bn2 = nn.BatchNorm3d(3).to(device), nn.BatchNorm2d(3).to(device)
    x = arr(2, 3, 2, 3, 2, k=0.7, device=device)
    y3, y2 = bn3(x), bn2(x.reshape(2, 3, 6, 2))
    np.testing.assert_array_equal(y3.detach().cpu().numpy().reshape(2, 3, 6, 2), y2.detach().cpu().numpy())
    np.testing.assert_array_equal(bn3.running_var.cpu().numpy(), bn2.running_var.cpu().numpy())
    assert repr(bn3) == "BatchNorm3d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    with pytest.raises(ValueError, match=r"expected 5D input \(got 4D input\)"):
        bn3(arr(2, 3, 4, 4, device=device))
