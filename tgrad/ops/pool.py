"""Pooling: max / average over fixed or adaptive windows, 1-D and 2-D (tgrad/kernels/pool.py).

Inputs are batched: (N, C, L) for 1-D, (N, C, H, W) for 2-D (``nn.functional`` adds the batch dim of
unbatched input); geometry attrs are tuples of one int per spatial dim.  Backward ops gather (no atomics)
and are linear in the gradient, so their own backward rules are the forward pooling again (average) or a
gather of the incoming gradient at the saved argmax indices (max): differentiable twice and more.
"""
from ..kernels import pool as KP
from ..tensor import empty
from .. import dtypes as D
from . import Op, call as _call


def _pair(t):
    return (1,) + tuple(t) if len(t) == 1 else tuple(t)


def _pad(t):
    return (0,) + tuple(t) if len(t) == 1 else tuple(t)


def pooled_size(i, k, p, s, d, ceil_mode):
    """PyTorch's pooling_output_shape: a ceil_mode window must start inside the input or its left padding."""
    o = (i + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (o - 1) * s >= i + p:
        o -= 1
    return o


def _fixed_size(x, k, s, p, d, ceil_mode):
    for kk, pp, dd in zip(k, p, d):
        if pp > ((kk - 1) * dd + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={pp}, "
                               f"kernel_size={kk} and dilation={dd}")
    size = [pooled_size(i, kk, pp, ss, dd, ceil_mode) for i, kk, pp, ss, dd in zip(x.shape[2:], k, p, s, d)]
    if any(o <= 0 for o in size):
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, x.shape[1:]))}). Calculated output size: "
                           f"({'x'.join(map(str, [x.shape[1]] + size))}). Output size is too small")
    return size


def _fixed(max_, k, s, p, d, count_include_pad=True, divisor=None):
    return {"max": max_, "adaptive": False, "taps": _pair(k), "stride": _pair(s), "padding": _pad(p),
            "dilation": _pair(d), "count_include_pad": count_include_pad, "divisor": divisor}


def _spans(i, o):
    """(longest adaptive window, most windows holding one input element) for in size i, out size o."""
    win = max(((j + 1) * i + o - 1) // o - (j * i) // o for j in range(o)) if o else 1
    per = max(((j + 1) * o + i - 1) // i - (j * o) // i for j in range(i)) if i else 1
    return win, per


def _adaptive(max_, in_size, out_size, backward):
    spans = [_spans(i, o)[1 if backward else 0] for i, o in zip(in_size, out_size)]
    return {"max": max_, "adaptive": True, "taps": _pair(spans), "stride": (1, 1), "padding": (0, 0),
            "dilation": (1, 1), "count_include_pad": True, "divisor": None}


def _float_check(x, name):
    if not x.dtype.is_floating_point:
        raise RuntimeError(f'"{name}" not implemented for \'{x.dtype.legacy_name}\'')


# ------------------------------------------------------------------ max pooling
def max_pool_forward(self, *, kernel_size, stride, padding, dilation, ceil_mode=False):
    """(y, indices): the window maxima and their flat positions ih * W + iw in each input plane."""
    _float_check(self, "max_pool2d")
    size = _fixed_size(self, kernel_size, stride, padding, dilation, ceil_mode)
    shape = tuple(self.shape[:2]) + tuple(size)
    y, idx = empty(shape, self.dtype, self.device), empty(shape, D.int64, self.device)
    return KP.pool_forward(self, y, idx, _fixed(True, kernel_size, stride, padding, dilation))


def adaptive_max_pool_forward(self, *, output_size):
    _float_check(self, "adaptive_max_pool2d")
    shape = tuple(self.shape[:2]) + tuple(output_size)
    y, idx = empty(shape, self.dtype, self.device), empty(shape, D.int64, self.device)
    return KP.pool_forward(self, y, idx, _adaptive(True, self.shape[2:], output_size, False))


def max_pool_backward_rule(ctx, grad, grad_indices=None):
    a = ctx.attrs
    geo = {k: a[k] for k in ("kernel_size", "stride", "padding", "dilation") if k in a}
    return (_call("max_pool2d_backward", grad, ctx.saved["result1"], input_size=ctx.input_meta[0].shape, **geo),)


MAX_POOL2D = Op("max_pool2d", max_pool_forward, max_pool_backward_rule, "MaxPool2DWithIndicesBackward0",
                save=("result1",), outputs=2, nondiff_outputs=(1,), variants=("function",))

ADAPTIVE_MAX_POOL2D = Op(
    "adaptive_max_pool2d", adaptive_max_pool_forward, max_pool_backward_rule, "AdaptiveMaxPool2DBackward0",
    save=("result1",), outputs=2, nondiff_outputs=(1,))


def max_pool_backward_forward(grad_output, indices, *, input_size, kernel_size=None, stride=None, padding=None,
                              dilation=None):
    """dx[i] = sum of dy[o] over the outputs o whose argmax is i (adaptive windows when kernel_size is None)."""
    dx = empty(input_size, grad_output.dtype, grad_output.device)
    kind = _adaptive(True, input_size[2:], grad_output.shape[2:], True) if kernel_size is None else \
        _fixed(True, kernel_size, stride, padding, dilation)
    return KP.pool_backward(grad_output, indices, dx, kind)


def max_pool_backward_backward(ctx, gg):
    """Linear in dy: d/d dy = gg gathered at the argmax indices."""
    idx = ctx.saved["indices"]
    return gg.flatten(2).gather(2, idx.flatten(2)).view(idx.shape), None


MAX_POOL2D_BACKWARD = Op("max_pool2d_backward", max_pool_backward_forward, max_pool_backward_backward,
                         "MaxPool2DWithIndicesBackwardBackward0", inputs=("grad_output", "indices"), save=("indices",))


# ------------------------------------------------------------------ average pooling
def avg_pool_forward(self, *, kernel_size, stride, padding, ceil_mode=False, count_include_pad=True,
                     divisor_override=None):
    """y = sum over the window / divisor (PyTorch's: the override, else the window clipped to the padded
    input if count_include_pad, else to the input)."""
    _float_check(self, "avg_pool2d")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    ones = (1,) * len(kernel_size)
    size = _fixed_size(self, kernel_size, stride, padding, ones, ceil_mode)
    y = empty(tuple(self.shape[:2]) + tuple(size), self.dtype, self.device)
    return KP.pool_forward(self, y, None, _fixed(False, kernel_size, stride, padding, ones, count_include_pad,
                                                 divisor_override))[0]


def avg_pool_backward_rule(ctx, grad):
    return (_call("avg_pool2d_backward", grad, input_size=ctx.input_meta[0].shape, **ctx.attrs),)


AVG_POOL2D = Op("avg_pool2d", avg_pool_forward, avg_pool_backward_rule, "AvgPool2DBackward0")


def avg_pool_backward_forward(grad_output, *, input_size, kernel_size, stride, padding, ceil_mode=False,
                              count_include_pad=True, divisor_override=None):
    dx = empty(input_size, grad_output.dtype, grad_output.device)
    ones = (1,) * len(kernel_size)
    return KP.pool_backward(grad_output, None, dx, _fixed(False, kernel_size, stride, padding, ones,
                                                          count_include_pad, divisor_override))


def avg_pool_backward_backward(ctx, gg):
    a = {k: v for k, v in ctx.attrs.items() if k != "input_size"}
    return (_call("avg_pool2d", gg, **a),)


AVG_POOL2D_BACKWARD = Op(
    "avg_pool2d_backward", avg_pool_backward_forward, avg_pool_backward_backward, "AvgPool2DBackwardBackward0",
    inputs=("grad_output",))


def adaptive_avg_pool_forward(self, *, output_size):
    """y[o] = mean of x over [floor(o H / OH), ceil((o + 1) H / OH)) per spatial dim."""
    _float_check(self, "adaptive_avg_pool2d")
    y = empty(tuple(self.shape[:2]) + tuple(output_size), self.dtype, self.device)
    return KP.pool_forward(self, y, None, _adaptive(False, self.shape[2:], output_size, False))[0]


def adaptive_avg_pool_backward_rule(ctx, grad):
    return (_call("adaptive_avg_pool2d_backward", grad, input_size=ctx.input_meta[0].shape),)


ADAPTIVE_AVG_POOL2D = Op("adaptive_avg_pool2d", adaptive_avg_pool_forward, adaptive_avg_pool_backward_rule,
                         "AdaptiveAvgPool2DBackward0")


def adaptive_avg_pool_backward_forward(grad_output, *, input_size):
    dx = empty(input_size, grad_output.dtype, grad_output.device)
    return KP.pool_backward(grad_output, None, dx, _adaptive(False, input_size[2:], grad_output.shape[2:], True))


def adaptive_avg_pool_backward_backward(ctx, gg):
    return (_call("adaptive_avg_pool2d", gg, output_size=tuple(ctx.input_meta[0].shape[2:])),)


ADAPTIVE_AVG_POOL2D_BACKWARD = Op(
    "adaptive_avg_pool2d_backward", adaptive_avg_pool_backward_forward, adaptive_avg_pool_backward_backward,
    "AdaptiveAvgPool2DBackwardBackward0", inputs=("grad_output",))


ENTRIES = [MAX_POOL2D, ADAPTIVE_MAX_POOL2D, MAX_POOL2D_BACKWARD, AVG_POOL2D, AVG_POOL2D_BACKWARD,
           ADAPTIVE_AVG_POOL2D, ADAPTIVE_AVG_POOL2D_BACKWARD]
