"""layer_norm and batch_norm ops; BatchNorm2d, GroupNorm, InstanceNorm: PyTorch's numbers (hard-coded from PyTorch 2.13), running stats, errors."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad import nn
from tgrad.autograd import dispatch


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


def call(name, *a, **k):
    return dispatch.call(name, *a, **k)


def T(a, device, dtype=None, requires_grad=False):
    return tgrad.tensor(np.asarray(a), dtype=dtype, device=device, requires_grad=requires_grad)


def test_layer_norm_shape_error(device):
    x = T(np.zeros((2, 3)), device, tgrad.float32)
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\]"):
        call("layer_norm", x, None, None, normalized_shape=(4,))


def test_batch_norm_running_stats_match_pytorch(device):
    x = T([[1.0, 2.0], [3.0, 5.0], [4.0, -1.0]], device, tgrad.float32)
    rm = T([0.5, 0.0], device, tgrad.float32)
    rv = T([1.0, 2.0], device, tgrad.float32)
    y = call("batch_norm", x, None, None, rm, rv, training=True, momentum=0.1, eps=1e-5)
    # torch.nn.functional.batch_norm(x, rm, rv, training=True, momentum=0.1)
    np.testing.assert_allclose(y.cpu().numpy(), [[-1.3363018, 0.0], [0.2672604, 1.2247438], [1.0690415, -1.2247438]], atol=1e-6)
    np.testing.assert_allclose(rm.cpu().numpy(), [0.7166666984558105, 0.20000000298023224], rtol=1e-6)
    np.testing.assert_allclose(rv.cpu().numpy(), [1.1333333253860474, 2.700000047683716], rtol=1e-6)
    ye = call("batch_norm", x, None, None, rm, rv, training=False, momentum=0.1, eps=1e-5)
    np.testing.assert_allclose(ye.cpu().numpy(), (x.cpu().numpy() - rm.cpu().numpy()) / np.sqrt(rv.cpu().numpy() + 1e-5), rtol=1e-5)


def test_batch_norm_errors(device):
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when training, got input size "
                                         r"tgrad.Size\(\[1, 3\]\)"):
        call("batch_norm", tgrad.ones(1, 3, device=device), None, None, None, None, training=True)


@pytest.mark.parametrize("training,expected", [
    (True, ([[73.27516050296443, -1.0590067613967487], [-98.24984924765047, 0.579765960048379],
             [29.181012021953045, 0.8233742691821366], [-4.206323277266975, -0.34413346783376725]],
            [218.46422067113747, -6.444777513668535])),
    (False, ([[56.31869885982839, 3.744448213219129], [6533.5949511336285, 28.676159731848056],
              [17828.96103426707, 0.7251777173356416], [0.0, 0.05081668899934064]],
             [78103.98899004383, -275.4433329732559]))])
def test_batch_norm_double_backward_matches_pytorch(device, training, expected):
    """Second derivatives through NativeBatchNormBackwardBackward0, numbers from PyTorch 2.13."""
    x = T([[1.0, 2.0], [3.0, 5.0], [4.0, -1.0], [0.5, 0.25]], device, tgrad.float64, requires_grad=True)
    w = T([1.5, -0.5], device, tgrad.float64, requires_grad=True)
    rm, rv = T([0.5, 0.0], device, tgrad.float64), T([1.0, 2.0], device, tgrad.float64)
    y = call("batch_norm", x, w, None, rm, rv, training=training)
    g, gw = tgrad.autograd.grad(y.pow(3).sum(), [x, w], create_graph=True)
    assert type(g.grad_fn).__name__ == "NativeBatchNormBackwardBackward0"
    hx, hw = tgrad.autograd.grad(g.pow(2).sum() + gw.sum(), [x, w])
    np.testing.assert_allclose(hx.cpu().numpy(), expected[0], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(hw.cpu().numpy(), expected[1], rtol=1e-10)


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_gradgradcheck(device, training, affine):
    rng = np.random.default_rng(1)
    x = T(rng.normal(size=(3, 2, 4)), device, tgrad.float64, requires_grad=True)
    w = T(rng.normal(size=2), device, tgrad.float64, requires_grad=True) if affine else None
    b = T(rng.normal(size=2), device, tgrad.float64, requires_grad=True) if affine else None
    rm, rv = T(rng.normal(size=2), device, tgrad.float64), T(rng.uniform(0.5, 2, 2), device, tgrad.float64)
    args = (x, w, b) if affine else (x,)
    assert tgrad.autograd.gradgradcheck(
        lambda x, w=None, b=None: call("batch_norm", x, w, b, rm, rv, training=training), args)
