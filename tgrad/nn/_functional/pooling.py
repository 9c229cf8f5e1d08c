"""Pooling functions of ``torch.nn.functional``: max / average / adaptive pools in 1-D and 2-D are
table ops; 3-D is a 2-D pool of each depth slice then a 1-D pool along depth."""
from ..._nn_functional import _op
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


def _separable3d(input, name, plane, depth, adaptive=False):
    """A 3-D pooling of (N, C, D, H, W) / (C, D, H, W) input as ``plane`` (a 2-D pooling of every depth slice)
    then ``depth`` (a 1-D pooling along D): exact for max and for averages over product windows."""
    x, unbatched = (_adaptive_input if adaptive else _pool_input)(input, 3, name)
    n, c, d = x.shape[:3]
    y = plane(x.reshape(n, c * d, *x.shape[3:]))
    oh, ow = y.shape[2:]
    y = depth(y.reshape(n, c, d, oh * ow).transpose(2, 3).reshape(n, c * oh * ow, d))
    return _unbatch(y.reshape(n, c, oh, ow, y.shape[-1]).permute(0, 1, 4, 2, 3).contiguous(), unbatched)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over (KD, KH, KW) windows: max_pool2d of each depth slice, then max_pool1d along depth."""
    if return_indices:
        raise NotImplementedError("tgrad: max_pool3d(return_indices=True) is not supported yet")
    k, p, dl = _ntuple(kernel_size, 3), _ntuple(padding, 3), _ntuple(dilation, 3)
    s = _ntuple(stride, 3) if stride is not None and stride != [] and stride != () else k
    return _separable3d(input, "max_pool3d", lambda t: max_pool2d(t, k[1:], s[1:], p[1:], dl[1:], ceil_mode),
                        lambda t: max_pool1d(t, k[0], s[0], p[0], dl[0], ceil_mode))


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
    if return_indices:
        raise NotImplementedError("tgrad: adaptive_max_pool3d(return_indices=True) is not supported yet")
    size = _adaptive_size(input if input.dim() == 5 else input.unsqueeze(0), output_size, 3) \
        if input.dim() in (4, 5) else None
    return _separable3d(input, "adaptive_max_pool3d", lambda t: adaptive_max_pool2d(t, size[1:]),
                        lambda t: adaptive_max_pool1d(t, size[0]), adaptive=True)


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
