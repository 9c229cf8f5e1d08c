"""Pooling functions of ``torch.nn.functional``: max / average / adaptive pools in 1-D and 2-D are
table ops; 3-D is a 2-D pool of each depth slice then a 1-D pool along depth."""
import math

from ..._nn_functional import _op
from ...dtypes import int64 as _int64
from .utils import _ntuple


def _pool_input(input, nd, name):
    if input.dim() == nd + 2:
        return input, False
    if input.dim() == nd + 1:
        return input.unsqueeze(0), True
    raise RuntimeError({1: f"{name}() Expected 2D or 3D input tensor, but got {list(input.shape)}",
                        2: "non-empty 3D or 4D (batch mode) tensor expected for input",
                        3: "non-empty 4D or 5D (batch mode) tensor expected for input"}[nd])


def _unbatch(res, unbatched):
    if not unbatched:
        return res
    return tuple(r.squeeze(0) for r in res) if isinstance(res, tuple) else res.squeeze(0)


def _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, nd, name):
    x, unbatched = _pool_input(input, nd, name)
    k = _ntuple(kernel_size, nd)
    s = _ntuple(stride, nd) if stride is not None and stride != [] and stride != () else k
    y, idx = _op("max_pool2d", x, kernel_size=k, stride=s, padding=_ntuple(padding, nd),
                 dilation=_ntuple(dilation, nd), ceil_mode=bool(ceil_mode))
    return _unbatch((y, idx) if return_indices else y, unbatched)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over windows of the last dim; with ``return_indices`` also the argmax positions."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1, "max_pool1d")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over (KH, KW) windows (stride defaults to the kernel size; padding counts as -inf); with
    ``return_indices`` also the argmax positions ih * W + iw in each plane."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2, "max_pool2d")


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, True, 1, "max_pool1d")


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, True, 2, "max_pool2d")


def _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, nd, name):
    x, unbatched = _pool_input(input, nd, name)
    k = _ntuple(kernel_size, nd)
    s = _ntuple(stride, nd) if stride is not None and stride != [] and stride != () else k
    y = _op("avg_pool2d", x, kernel_size=k, stride=s, padding=_ntuple(padding, nd), ceil_mode=bool(ceil_mode),
            count_include_pad=bool(count_include_pad), divisor_override=divisor_override)
    return _unbatch(y, unbatched)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over windows of the last dim."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1, "avg_pool1d")


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Sum over (KH, KW) windows / divisor: ``divisor_override``, else the window size (clipped to the
    input when not ``count_include_pad``)."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2,
                     "avg_pool2d")


def _separable3d(input, name, plane, depth, adaptive=False, indices=False):
    """A 3-D pooling of (N, C, D, H, W) / (C, D, H, W) input as ``plane`` (a 2-D pooling of every depth slice)
    then ``depth`` (a 1-D pooling along D): exact for max and for averages over product windows.  ``indices``:
    both return (values, argmax) and the result's argmax is d * H * W + (the plane argmax of slice d), the first
    maximum in (kd, kh, kw) order as PyTorch's."""
    x, unbatched = (_adaptive_input if adaptive else _pool_input)(input, 3, name)
    n, c, d, h, w = x.shape
    y = plane(x.reshape(n, c * d, h, w))
    y, ip = y if indices else (y, None)
    oh, ow = y.shape[2:]
    y = depth(y.reshape(n, c, d, oh * ow).transpose(2, 3).reshape(n, c * oh * ow, d))
    y, idp = y if indices else (y, None)
    od = y.shape[-1]
    y = y.reshape(n, c, oh, ow, od).permute(0, 1, 4, 2, 3).contiguous()
    if not indices:
        return _unbatch(y, unbatched)
    idp = idp.reshape(n, c, oh * ow, od)
    i3 = idp * (h * w) + ip.reshape(n, c, d, oh * ow).transpose(2, 3).gather(3, idp)
    return _unbatch((y, i3.reshape(n, c, oh, ow, od).permute(0, 1, 4, 2, 3).contiguous()), unbatched)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over (KD, KH, KW) windows: max_pool2d of each depth slice, then max_pool1d along depth; with
    ``return_indices`` also the argmax positions id * H * W + ih * W + iw in each volume."""
    k, p, dl = _ntuple(kernel_size, 3), _ntuple(padding, 3), _ntuple(dilation, 3)
    s = _ntuple(stride, 3) if stride is not None and stride != [] and stride != () else k
    r = bool(return_indices)
    return _separable3d(input, "max_pool3d", lambda t: max_pool2d(t, k[1:], s[1:], p[1:], dl[1:], ceil_mode, r),
                        lambda t: max_pool1d(t, k[0], s[0], p[0], dl[0], ceil_mode, r), indices=r)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over (KD, KH, KW) windows (the divisor a product of per-dim counts, as PyTorch's): avg_pool2d of
    each depth slice, then avg_pool1d along depth; with ``divisor_override``, window sums / it."""
    k, p = _ntuple(kernel_size, 3), _ntuple(padding, 3)
    s = _ntuple(stride, 3) if stride is not None and stride != [] and stride != () else k
    one = 1 if divisor_override else None
    y = _separable3d(input, "avg_pool3d",
                     lambda t: _avg_pool(t, k[1:], s[1:], p[1:], ceil_mode, count_include_pad, one, 2, "avg_pool2d"),
                     lambda t: _avg_pool(t, k[:1], s[:1], p[:1], ceil_mode, count_include_pad, one, 1, "avg_pool1d"))
    return y / divisor_override if divisor_override else y


def adaptive_avg_pool3d(input, output_size):
    """Mean over adaptive (D, H, W) windows: adaptive_avg_pool2d per depth slice, then along depth."""
    size = _adaptive_size(input if input.dim() == 5 else input.unsqueeze(0), output_size, 3) \
        if input.dim() in (4, 5) else None
    return _separable3d(input, "adaptive_avg_pool3d", lambda t: adaptive_avg_pool2d(t, size[1:]),
                        lambda t: adaptive_avg_pool1d(t, size[0]), adaptive=True)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Max over adaptive (D, H, W) windows: adaptive_max_pool2d per depth slice, then along depth."""
    size = _adaptive_size(input if input.dim() == 5 else input.unsqueeze(0), output_size, 3) \
        if input.dim() in (4, 5) else None
    r = bool(return_indices)
    return _separable3d(input, "adaptive_max_pool3d", lambda t: adaptive_max_pool2d(t, size[1:], r),
                        lambda t: adaptive_max_pool1d(t, size[0], r), adaptive=True, indices=r)


def _adaptive_size(x, output_size, nd):
    size = _ntuple(output_size, nd) if not isinstance(output_size, (tuple, list)) or None not in output_size \
        else tuple(x.shape[2 + i] if o is None else int(o) for i, o in enumerate(output_size))
    if len(size) != nd:
        raise ValueError(f"output_size must be {nd}")
    return size


def _adaptive_input(input, nd, name):
    if input.dim() in (nd + 1, nd + 2):
        return _pool_input(input, nd, name)
    raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got {list(input.shape)}")


def adaptive_avg_pool1d(input, output_size):
    """Mean over [floor(o L / OL), ceil((o + 1) L / OL)) for each output o."""
    x, unbatched = _adaptive_input(input, 1, "adaptive_avg_pool1d")
    return _unbatch(_op("adaptive_avg_pool2d", x, output_size=_adaptive_size(x, output_size, 1)), unbatched)


def adaptive_avg_pool2d(input, output_size):
    """Mean over adaptive windows producing ``output_size`` (an int, a pair, None keeps that dim)."""
    x, unbatched = _adaptive_input(input, 2, "adaptive_avg_pool2d")
    return _unbatch(_op("adaptive_avg_pool2d", x, output_size=_adaptive_size(x, output_size, 2)), unbatched)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    x, unbatched = _adaptive_input(input, 1, "adaptive_max_pool1d")
    y, idx = _op("adaptive_max_pool2d", x, output_size=_adaptive_size(x, output_size, 1))
    return _unbatch((y, idx) if return_indices else y, unbatched)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max over adaptive windows; with ``return_indices`` also the argmax positions."""
    x, unbatched = _adaptive_input(input, 2, "adaptive_max_pool2d")
    y, idx = _op("adaptive_max_pool2d", x, output_size=_adaptive_size(x, output_size, 2))
    return _unbatch((y, idx) if return_indices else y, unbatched)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    """The spatial size of max_unpool's output: (in - 1) * s + k - 2 * pad, or ``output_size`` (spatial dims,
    optionally after N, C) when within a stride of it."""
    nd = len(kernel_size)
    default = [(input.shape[-nd + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d] for d in range(nd)]
    if output_size is None:
        return default
    if len(output_size) == nd + 2:
        output_size = output_size[2:]
    if len(output_size) != nd:
        raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it has a "
                         f"length of '{len(output_size)}'")
    for d in range(nd):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {lo} and {hi})')
    return output_size


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, nd):
    """out = zeros(N, C, *size) with out[n, c].flat[indices[n, c, i]] = input[n, c, i] (a scatter along the
    flattened spatial dims; its backward gathers the output gradient at the indices)."""
    k = _ntuple(kernel_size, nd)
    s = _ntuple(stride, nd) if stride is not None else k
    size = [int(v) for v in _unpool_output_size(input, k, s, _ntuple(padding, nd), output_size)]
    if indices.dtype is not _int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: "
                           f"{indices.dtype.legacy_name}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) "
                           f"but got indices tensor with shape: {list(indices.shape)}")
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D or {nd + 2}D tensor, but got {list(input.shape)}")
    lead = tuple(input.shape[:input.dim() - nd])
    plane = math.prod(size)
    x, idx = input.reshape(*lead, -1), indices.reshape(*lead, -1)
    if idx.numel():
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= plane:
            raise RuntimeError(f"Found an invalid max index: {hi if hi >= plane else lo} (output volumes are of size "
                               f"{'x'.join(str(v) for v in (size + [1] if nd == 1 else size))})")
    out = input.new_zeros((*lead, plane)).scatter(len(lead), idx, x)
    return out.reshape(*lead, *size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool1d: each value placed at its index along L, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d: each value placed at its flat index ih * W + iw, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool3d: each value placed at its flat index (id * H + ih) * W + iw."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    return adaptive_max_pool3d(input, output_size, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    return adaptive_max_pool2d(input, output_size, True)


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, nd):
    """(sum over the window of x^p)^(1/p): avg_pool of x^p times the window size (PyTorch's composite: negative
    window means give 0, hence the gradient 0 where the sum is 0); p = +-inf: max_pool of +-|x|."""
    ks = _ntuple(kernel_size, nd)
    maxp, avgp = {1: (max_pool1d, avg_pool1d), 2: (max_pool2d, avg_pool2d), 3: (max_pool3d, avg_pool3d)}[nd]
    if isinstance(norm_type, (int, float)):
        if norm_type == float("inf"):
            return maxp(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -maxp(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if stride is not None:
        out = avgp(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avgp(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    return (out.sign() * out.abs().relu()).mul(math.prod(ks)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3)
