"""Normalization over groups of channels: ``group_norm`` (tgrad/kernels/norm.py).

x (N, C, *) is normalized over each (sample, group of C / G channels) with the batch's own statistics, then
scaled and shifted per channel.  The backward rule reuses layer norm's fused backward op on the (N, G, K)
view (the same row normalization), so it is differentiable again: dx = layer_norm_backward(dy * w),
dw = sum dy * xhat, db = sum dy over N and the spatial dims.
"""
from ..kernels import elementwise as KE
from ..kernels import norm as KN
from ..tensor import empty
from . import Op, call as _call


def _contig(t):
    return t if t is None or t.is_contiguous() else KE.copy(t, empty(t.shape, t.dtype, t.device))


def _geometry(input, num_groups):
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    N, C = input.shape[0], input.shape[1]
    if num_groups <= 0 or C % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape [{', '.join(map(str, input.shape))}] and num_groups={num_groups}")
    HW = 1
    for s in input.shape[2:]:
        HW *= s
    return N, C, HW, C // num_groups * HW


def group_norm_forward(input, weight=None, bias=None, *, num_groups, eps=1e-5):
    """y[n, c] = (x[n, c] - mean[n, g]) / sqrt(var[n, g] + eps) * w[c] + b[c], g = c // (C / G)."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"group_norm: expected a floating point input, got {input.dtype}")
    N, C, HW, K = _geometry(input, num_groups)
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != C):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, "
                               f"but got {name} of shape [{', '.join(map(str, t.shape))}] and input of shape "
                               f"[{', '.join(map(str, input.shape))}]")
    y = empty(input.shape, input.dtype, input.device)
    return KN.group_norm(_contig(input), _contig(weight), _contig(bias), y, N, num_groups, K, HW, eps)


def group_norm_backward(ctx, grad):
    x, w = ctx.saved["input"], ctx.saved.get("weight")
    G, eps = ctx.attrs["num_groups"], ctx.attrs.get("eps", 1e-5)
    N, C, HW, K = _geometry(x, G)
    cs = [1, C] + [1] * (x.dim() - 2)
    dims = [0] + list(range(2, x.dim()))
    needs = ctx.needs_input_grad
    rows = (N, G, K)
    gx = gw = gb = None
    if needs[0]:
        h = grad * w.reshape(cs) if w is not None else grad
        gx = _call("layer_norm_backward", h.reshape(rows), x.reshape(rows), None, normalized_shape=(K,),
                   eps=eps).reshape(x.shape)
    if len(needs) > 1 and needs[1]:
        xh = _call("group_norm", x, None, None, num_groups=G, eps=eps)
        gw = (grad * xh).sum(dims)
    if len(needs) > 2 and needs[2]:
        gb = grad.sum(dims)
    return gx, gw, gb


ENTRIES = [
    Op("group_norm", group_norm_forward, group_norm_backward, "NativeGroupNormBackward0",
       inputs=("input", "weight", "bias"), save=("input", "weight")),
]
