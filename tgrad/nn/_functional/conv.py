"""Convolution functions of ``torch.nn.functional``: 1-D and 2-D are one implicit-GEMM table op;
3-D folds depth into the batch (one 2-D launch per depth tap)."""
from ... import _functional
from ..._nn_functional import _op
from .utils import _ntuple
from .vision import pad


def _batched(input, nd, name):
    """(input with a batch dim, whether one was added): ``name`` takes (C, *) or (N, C, *) with nd spatial dims."""
    if input.dim() == nd + 2:
        return input, False
    if input.dim() == nd + 1:
        return input.unsqueeze(0), True
    kinds = {1: ("2D", "3D"), 2: ("3D", "4D"), 3: ("4D", "5D")}[nd]
    raise RuntimeError(f"Expected {kinds[0]} (unbatched) or {kinds[1]} (batched) input to {name}, but got input of "
                       f"size: [{', '.join(str(s) for s in input.shape)}]")


def _conv(input, weight, bias, stride, padding, dilation, groups, nd, name):
    x, unbatched = _batched(input, nd, name)
    stride, dilation = _ntuple(stride, nd), _ntuple(dilation, nd)
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,) * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            total = [d * (k - 1) for d, k in zip(dilation, weight.shape[2:])]
            padding = tuple(t // 2 for t in total)
            extra = [t % 2 for t in total]
            if any(extra):      # PyTorch pads the odd extra element on the right, then pads symmetrically
                widths = []
                for e in reversed(extra):
                    widths += [0, e]
                x = pad(x, widths)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        padding = _ntuple(padding, nd)
    y = _op("convolution", x, weight, bias, stride=stride, padding=padding, dilation=dilation, transposed=False,
            output_padding=(0,) * nd, groups=groups)
    return y.squeeze(0) if unbatched else y


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """y[n, o, l] = b[o] + sum_{c, k} x[n, c, l s - pad + k d] w[o, c, k]; x (N, C, L) or (C, L),
    w (O, C / groups, K); padding an int, a 1-tuple, 'valid' or 'same'."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation, as PyTorch's); x (N, C, H, W) or (C, H, W), w (O, C / groups, KH, KW)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution; x (N, C, D, H, W) or (C, D, H, W), w (O, C / groups, KD, KH, KW).  Depth folds into the
    batch: y = sum_kd conv2d(x[:, :, od * sd + kd * dd], w[:, :, kd]), one implicit-GEMM launch per depth tap."""
    x, unbatched = _batched(input, 3, "conv3d")
    s, dl = _ntuple(stride, 3), _ntuple(dilation, 3)
    ks = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding not in ("valid", "same"):
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        if padding == "same" and any(v != 1 for v in s):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        total = [d * (k - 1) for d, k in zip(dl, ks)] if padding == "same" else [0, 0, 0]
        if any(t % 2 for t in total):    # the odd extra on the right, as PyTorch
            x = pad(x, [w for t in reversed(total) for w in (0, t % 2)])
        p = tuple(t // 2 for t in total)
    else:
        p = _ntuple(padding, 3)
    if p[0]:
        x = pad(x, (0, 0, 0, 0, p[0], p[0]))
    n, c, d, h, w = x.shape
    od = (d - dl[0] * (ks[0] - 1) - 1) // s[0] + 1
    if od <= 0 or weight.dim() != 5:
        raise RuntimeError(f"Calculated padded input size per channel: ({d} x {h + 2 * p[1]} x {w + 2 * p[2]}). "
                           f"Kernel size: ({' x '.join(str(k) for k in ks)}). Kernel size can't be greater than "
                           "actual input size")
    y = None
    for k in range(ks[0]):
        xs = x[:, :, k * dl[0]:k * dl[0] + (od - 1) * s[0] + 1:s[0]].transpose(1, 2).reshape(n * od, c, h, w)
        t = _op("convolution", xs, weight[:, :, k], None, stride=s[1:], padding=p[1:], dilation=dl[1:],
                transposed=False, output_padding=(0, 0), groups=groups)
        y = t if y is None else y + t
    y = y.reshape(n, od, *y.shape[1:]).transpose(1, 2)
    if bias is not None:
        y = y + bias.reshape(1, -1, 1, 1, 1)
    return (y.squeeze(0) if unbatched else y).contiguous()


def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, nd, name):
    x, unbatched = _batched(input, nd, name)
    y = _op("convolution", x, weight, bias, stride=_ntuple(stride, nd), padding=_ntuple(padding, nd),
            dilation=_ntuple(dilation, nd), transposed=True, output_padding=_ntuple(output_padding, nd),
            groups=groups)
    return y.squeeze(0) if unbatched else y


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The adjoint of conv1d in its input (plus bias); w (C_in, C_out / groups, K)."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                           "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The adjoint of conv2d in its input (plus bias); w (C_in, C_out / groups, KH, KW)."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                           "conv_transpose2d")


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The adjoint of conv3d in its input (plus bias); w (C_in, C_out / groups, KD, KH, KW).  Per depth tap kd, a
    conv_transpose2d of every input depth slice lands at output depth id * sd + kd * dd (zeros between for
    sd > 1); the taps are summed, then the depth padding cropped."""
    x, unbatched = _batched(input, 3, "conv_transpose3d")
    s, p, op, dl = (_ntuple(v, 3) for v in (stride, padding, output_padding, dilation))
    n, c, d, h, w = x.shape
    kd = weight.shape[2]
    full = (d - 1) * s[0] + dl[0] * (kd - 1) + 1 + op[0]
    if full - 2 * p[0] <= 0:
        raise RuntimeError(f"conv_transpose3d: output depth {full - 2 * p[0]} is not positive (input depth {d}, "
                           f"kernel {kd}, stride {s[0]}, padding {p[0]}, dilation {dl[0]})")
    folded = x.transpose(1, 2).reshape(n * d, c, h, w)
    y = None
    for k in range(kd):
        t = _op("convolution", folded, weight[:, :, k], None, stride=s[1:], padding=p[1:], dilation=dl[1:],
                transposed=True, output_padding=op[1:], groups=groups)
        t = t.reshape(n, d, *t.shape[1:]).transpose(1, 2)          # (N, O, D, OH, OW)
        if s[0] > 1:                                               # spread the slices s apart
            z = t.new_zeros((*t.shape[:3], s[0] - 1, *t.shape[3:]))
            t = _functional.cat([t.unsqueeze(3), z], 3).reshape(*t.shape[:2], d * s[0], *t.shape[3:])
            t = t[:, :, :(d - 1) * s[0] + 1]
        t = pad(t, (0, 0, 0, 0, k * dl[0], full - k * dl[0] - t.shape[2]))
        y = t if y is None else y + t
    y = y[:, :, p[0]:full - p[0]]
    if bias is not None:
        y = y + bias.reshape(1, -1, 1, 1, 1)
    return (y.squeeze(0) if unbatched else y).contiguous()
