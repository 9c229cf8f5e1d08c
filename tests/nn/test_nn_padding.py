"""F.pad's reflect / replicate / circular modes, the padding layers, Conv padding_mode, pixel (un)shuffle:
numpy's np.pad (reflect / edge / wrap) and PyTorch 2.13's printed values as references, gradients by finite
differences, PyTorch's errors."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad import nn

NP_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def arr(*shape):
    return np.arange(np.prod(shape), dtype=np.float32).reshape(shape) * 0.5 - 1


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,pad", [((2, 5), (2, 1)), ((1, 2, 4, 5), (1, 2, 3, 0)), ((1, 1, 3, 4, 5), (1, 1, 2, 0, 1, 2))])
def test_pad_modes_match_numpy(device, mode, shape, pad):
    x = arr(*shape)
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        widths[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    y = F.pad(tgrad.tensor(x, device=device), pad, mode=mode)
    np.testing.assert_array_equal(y.cpu().numpy(), np.pad(x, widths, mode=NP_MODE[mode]))


# PyTorch 2.13: F.pad(torch.arange(5.).reshape(1, 1, 5), p, mode=m).flatten().tolist()
TORCH_NEGATIVE = {
    ("circular", (2, -1)): [2, 3, 0, 1, 2, 3], ("circular", (-1, 2)): [1, 2, 3, 4, 1, 2],
    ("circular", (1, -3)): [1, 0, 1], ("reflect", (2, -1)): [2, 1, 0, 1, 2, 3],
    ("reflect", (-1, 2)): [1, 2, 3, 4, 3, 2], ("reflect", (1, -3)): [1, 0, 1],
    ("replicate", (2, -1)): [0, 0, 0, 1, 2, 3], ("replicate", (-2, -1)): [2, 3], ("replicate", (1, -3)): [0, 0, 1],
}


@pytest.mark.parametrize("mode,pad", list(TORCH_NEGATIVE))
def test_negative_pads_crop_as_pytorch(mode, pad):
    y = F.pad(tgrad.arange(5.).reshape(1, 1, 5), pad, mode=mode)
    assert y.flatten().tolist() == TORCH_NEGATIVE[mode, pad]


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_gradients(mode):
    x = tgrad.tensor(np.random.default_rng(0).standard_normal((1, 2, 3, 4)), requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda t: F.pad(t, (2, 1, 1, 2), mode=mode), (x,))
    assert tgrad.autograd.gradgradcheck(lambda t: F.pad(t, (2, 1, 1, 2), mode=mode) ** 2, (x,))


@pytest.mark.parametrize("call,err,msg", [
    (lambda x: F.pad(x, (3, 3), mode="reflect"), RuntimeError,
     "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (3, 3) at "
     "dimension 2 of input [1, 2, 3]"),
    (lambda x: F.pad(x, (1, 1, 2, 2), mode="reflect"), RuntimeError,
     "Argument #6: Padding size should be less than the corresponding input dimension, but got: padding (2, 2) at "
     "dimension 1 of input [1, 2, 3]"),
    (lambda x: F.pad(x, (4, 4), mode="circular"), RuntimeError, "Padding value causes wrapping around more than once."),
    (lambda x: F.pad(x, (1, 1), mode="foo"), NotImplementedError, "Unrecognised padding mode foo"),
    (lambda x: F.pad(x, (1, 1), mode="replicate", value=1.0), RuntimeError,
     "Padding mode \"replicate\" doesn't take in value argument"),
    (lambda x: F.pad(x, (1, 1, 1), mode="reflect"), RuntimeError, "Padding length must be divisible by 2"),
    (lambda x: F.pad(x[0, 0], (1, 1), mode="replicate"), NotImplementedError,
     "Padding size 2 is not supported for 1D input tensor."),
    (lambda x: F.pixel_shuffle(x[0], 2), RuntimeError,
     "pixel_shuffle expects input to have at least 3 dimensions, but got input with 2 dimension(s)"),
    (lambda x: F.pixel_shuffle(x.reshape(1, 3, 2, 1), 2), RuntimeError,
     "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but "
     "input.size(-3)=3 is not divisible by 4"),
    (lambda x: F.pixel_shuffle(x.reshape(1, 1, 2, 3), 0), RuntimeError,
     "pixel_shuffle expects a positive upscale_factor, but got 0"),
    (lambda x: F.pixel_unshuffle(x.reshape(1, 1, 3, 2), 2), RuntimeError,
     "pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)=3 is not divisible by 2"),
    (lambda x: F.pixel_unshuffle(x.reshape(1, 1, 2, 3), 2), RuntimeError,
     "pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)=3 is not divisible by 2"),
])
def test_errors(call, err, msg):
    with pytest.raises(err) as e:
        call(tgrad.zeros(1, 2, 3))
    assert str(e.value).startswith(msg)


def test_pixel_shuffle_round_trip_and_values(device):
    x = arr(2, 8, 3, 2)
    t = tgrad.tensor(x, device=device)
    y = F.pixel_shuffle(t, 2)
    ref = x.reshape(2, 2, 2, 2, 3, 2).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 6, 4)
    np.testing.assert_array_equal(y.cpu().numpy(), ref)
    np.testing.assert_array_equal(F.pixel_unshuffle(y, 2).cpu().numpy(), x)
    np.testing.assert_array_equal(nn.PixelShuffle(2)(t[0]).cpu().numpy(), ref[0])     # no batch dim
    assert repr(nn.PixelShuffle(2)) == "PixelShuffle(upscale_factor=2)"
    assert repr(nn.PixelUnshuffle(3)) == "PixelUnshuffle(downscale_factor=3)"
    g = tgrad.tensor(np.random.default_rng(1).standard_normal((1, 4, 2, 3)), requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda a: F.pixel_shuffle(a, 2), (g,))


def test_padding_layers():
    # reprs as PyTorch 2.13 prints them
    assert repr(nn.ZeroPad2d(1)) == "ZeroPad2d((1, 1, 1, 1))"
    assert repr(nn.ConstantPad1d((1, 2), 3.5)) == "ConstantPad1d(padding=(1, 2), value=3.5)"
    assert repr(nn.ReflectionPad2d(2)) == "ReflectionPad2d((2, 2, 2, 2))"
    assert repr(nn.CircularPad1d((1, 2))) == "CircularPad1d((1, 2))"
    assert repr(nn.ReplicationPad3d(1)) == "ReplicationPad3d((1, 1, 1, 1, 1, 1))"
    x = arr(1, 2, 3, 4)
    t = tgrad.tensor(x)
    np.testing.assert_array_equal(nn.ReflectionPad2d((1, 2, 0, 1))(t).cpu().numpy(),
                                  np.pad(x, ((0, 0), (0, 0), (0, 1), (1, 2)), mode="reflect"))
    np.testing.assert_array_equal(nn.ReplicationPad1d(2)(t[0]).cpu().numpy(),
                                  np.pad(x[0], ((0, 0), (0, 0), (2, 2)), mode="edge"))
    np.testing.assert_array_equal(nn.CircularPad2d(1)(t).cpu().numpy(),
                                  np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="wrap"))
    np.testing.assert_array_equal(nn.ConstantPad2d(1, 7.0)(t).cpu().numpy(),
                                  np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=7.0))
    np.testing.assert_array_equal(nn.ZeroPad1d((0, 2))(t).cpu().numpy(), np.pad(x, ((0, 0), (0, 0), (0, 0), (0, 2))))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("padding", [1, "same", (2, 1)])
def test_conv_padding_mode_is_pad_then_conv(device, mode, padding):
    tgrad.manual_seed(0)
    conv = nn.Conv2d(2, 3, (3, 4) if padding == "same" else 3, padding=padding, padding_mode=mode).to(device)
    assert f"padding_mode={mode}" in repr(conv)
    x = tgrad.tensor(arr(2, 2, 5, 6), device=device)
    if padding == "same":     # total (2, 3): PyTorch puts the odd extra on the right
        pads = (1, 2, 1, 1)
    else:
        p = (padding, padding) if isinstance(padding, int) else padding
        pads = (p[1], p[1], p[0], p[0])
    ref = F.conv2d(F.pad(x, pads, mode=mode), conv.weight, conv.bias)
    np.testing.assert_allclose(conv(x).detach().cpu().numpy(), ref.detach().cpu().numpy(), rtol=1e-6)
    c1 = nn.Conv1d(2, 1, 3, padding=2, padding_mode=mode).to(device)
    x1 = tgrad.tensor(arr(1, 2, 5), device=device)
    ref1 = F.conv1d(F.pad(x1, (2, 2), mode=mode), c1.weight, c1.bias)
    np.testing.assert_allclose(c1(x1).detach().cpu().numpy(), ref1.detach().cpu().numpy(), rtol=1e-6)
