"""Convolutions: ``convolution`` (1-D / 2-D, plain or transposed) and its weight gradient.

Forward and input gradient are the two directions of one implicit-GEMM pair
(tgrad/kernels/conv.py): a convolution's input gradient is the transposed
convolution of the output gradient, and a transposed convolution's forward is
that same kernel.  So the backward rules are convolutions again:

- convolution: dx = convolution(dy, w, transposed=not transposed),
  dw = ``convolution_backward_weight`` (dy, x) (transposed: (x, dy)), db = sum dy (over space, then batch);
- convolution_backward_weight(dy, x) -> dw: bilinear, d/d dy = conv(x, ggw),
  d/dx = conv_transpose(dy, ggw), so double backward needs nothing else.

``stride``, ``padding``, ``dilation``, ``output_padding`` are tuples of one
int per spatial dim; string paddings are resolved by ``nn.functional``.
"""
from ..kernels import conv as KC
from ..tensor import empty
from . import Op, call as _call


def _pairs(t):
    """A 1-D geometry tuple as the kernels' (h, w) pair (h = a unit dim)."""
    return (1,) + tuple(t) if len(t) == 1 else tuple(t)


def _pads(t):
    return (0,) + tuple(t) if len(t) == 1 else tuple(t)


def _shape_str(t):
    return "[" + ", ".join(str(s) for s in t.shape) + "]"


def output_size(in_size, k, stride, padding, dilation, transposed, output_padding):
    """Spatial output sizes of a convolution (PyTorch's formulas)."""
    if transposed:
        return [(i - 1) * s - 2 * p + d * (kk - 1) + op + 1
                for i, kk, s, p, d, op in zip(in_size, k, stride, padding, dilation, output_padding)]
    return [(i + 2 * p - d * (kk - 1) - 1) // s + 1 for i, kk, s, p, d in zip(in_size, k, stride, padding, dilation)]


def _check(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    nd = input.dim() - 2
    if weight.dim() != input.dim():
        raise RuntimeError(f"Expected {weight.dim()}-dimensional input for {weight.dim()}-dimensional weight "
                           f"{_shape_str(weight)}, but got {input.dim()}-dimensional input of size "
                           f"{_shape_str(input)} instead")
    if nd not in (1, 2):
        raise NotImplementedError(f"convolution: {nd}-d convolutions are not supported (1-d and 2-d are)")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f'"slow_conv2d_cpu" not implemented for \'{input.dtype.legacy_name}\'')
    if weight.dtype is not input.dtype:
        raise RuntimeError(f"Input type ({input.dtype.name}) and weight type ({weight.dtype.name}) should be the same")
    if bias is not None and bias.dtype is not input.dtype:
        raise RuntimeError(f"Input type ({input.dtype.name}) and bias type ({bias.dtype.name}) should be the same")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    C = input.shape[1]
    if transposed:
        if weight.shape[0] != C:
            raise RuntimeError(f"Given transposed=1, weight of size {_shape_str(weight)}, expected input "
                               f"{_shape_str(input)} to have {weight.shape[0]} channels, but got {C} channels "
                               f"instead")
        if C % groups:
            raise RuntimeError("Given groups=%d, expected weight to be divisible by %d at dimension 0, but got "
                               "weight of size %s instead" % (groups, groups, _shape_str(weight)))
        out_c = weight.shape[1] * groups
        for op, s, d in zip(output_padding, stride, dilation):
            if op >= s and op >= d:
                raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                                   f"output_padding_height: {output_padding[0]} output_padding_width: "
                                   f"{output_padding[-1]} stride_height: {stride[0]} stride_width: {stride[-1]} "
                                   f"dilation_height: {dilation[0]} dilation_width: {dilation[-1]}")
    else:
        if weight.shape[0] % groups:
            raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                               f"but got weight of size {_shape_str(weight)} instead")
        if weight.shape[1] * groups != C:
            raise RuntimeError(f"Given groups={groups}, weight of size {_shape_str(weight)}, expected input"
                               f"{_shape_str(input)} to have {weight.shape[1] * groups} channels, but got {C} "
                               f"channels instead")
        out_c = weight.shape[0]
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != out_c):
        raise RuntimeError(f"Given weight of size {_shape_str(weight)}, expected bias to be 1-dimensional with "
                           f"{out_c} elements, but got bias of size {_shape_str(bias)} instead")
    k = weight.shape[2:]
    if not transposed:
        padded = [i + 2 * p for i, p in zip(input.shape[2:], padding)]
        eff = [d * (kk - 1) + 1 for kk, d in zip(k, dilation)]
        if any(pi < e for pi, e in zip(padded, eff)):
            raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
                               f"Kernel size: ({' x '.join(map(str, eff))}). Kernel size can't be greater than "
                               f"actual input size")
    return out_c


def convolution_forward(input, weight, bias=None, *, stride, padding, dilation, transposed=False,
                        output_padding=None, groups=1):
    """y = conv(x, w) + b (transposed: the adjoint of conv in x, plus b); x (N, C, *), w (O, C/g, *k) or
    transposed (C, O/g, *k); 1 or 2 spatial dims."""
    nd = input.dim() - 2
    output_padding = tuple(output_padding) if output_padding is not None else (0,) * nd
    out_c = _check(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    size = output_size(input.shape[2:], weight.shape[2:], stride, padding, dilation, transposed, output_padding)
    y = empty((input.shape[0], out_c, *size), input.dtype, input.device)
    if transposed:
        return KC.conv_input_grad(input, weight, bias, y, _pairs(stride), _pads(padding), _pairs(dilation), groups)
    return KC.conv_forward(input, weight, bias, y, _pairs(stride), _pads(padding), _pairs(dilation), groups)


def _adjoint_padding(x_size, y_size, k, stride, padding, dilation):
    """output_padding that makes the transposed convolution of y_size come back to x_size."""
    full = output_size(y_size, k, stride, padding, dilation, True, (0,) * len(k))
    return tuple(a - b for a, b in zip(x_size, full))


def _conv_to(g, w, size, stride, padding, dilation, groups):
    """conv(g, w) cut to the spatial ``size`` (a transposed convolution's output_padding >= stride
    makes its input gradient one longer than its input)."""
    r = _call("convolution", g, w, None, stride=stride, padding=padding, dilation=dilation, transposed=False,
              groups=groups)
    for d, n in enumerate(size):
        if r.shape[2 + d] != n:
            r = r.narrow(2 + d, 0, n)
    return r


def _conv_t_to(g, w, size, stride, padding, dilation, groups):
    """The transposed convolution of g whose output has the spatial ``size``."""
    op = _adjoint_padding(size, g.shape[2:], w.shape[2:], stride, padding, dilation)
    return _call("convolution", g, w, None, stride=stride, padding=padding, dilation=dilation, transposed=True,
                 output_padding=op, groups=groups)


def convolution_backward(ctx, grad):
    x, w = ctx.saved["input"], ctx.saved["weight"]
    a = ctx.attrs
    stride, padding, dilation, groups = a["stride"], a["padding"], a["dilation"], a.get("groups", 1)
    transposed = a.get("transposed", False)
    needs = ctx.needs_input_grad
    dx = dw = db = None
    if needs[0]:
        dx = (_conv_to if transposed else _conv_t_to)(grad, w, x.shape[2:], stride, padding, dilation, groups)
    if needs[1]:
        gy, xx = (x, grad) if transposed else (grad, x)
        dw = _call("convolution_backward_weight", gy, xx, weight_size=tuple(w.shape), stride=stride,
                   padding=padding, dilation=dilation, groups=groups)
    if len(needs) > 2 and needs[2]:
        # the spatial sums, then the batch: no transposing copy of grad (on large images, the order of
        # PyTorch's own sum([0, 2, 3]))
        db = grad.sum(list(range(2, grad.dim()))).sum(0)
    return dx, dw, db


CONVOLUTION = Op("convolution", convolution_forward, convolution_backward, "ConvolutionBackward0",
                 inputs=("input", "weight", "bias"), save=("input", "weight"))


def convolution_backward_weight_forward(grad_output, input, *, weight_size, stride, padding, dilation, groups=1):
    """dw[o, c, k] = sum_{n, p} dy[n, o, p] x[n, c, p * s - pad + k * d] (dw of ``weight_size``)."""
    dw = empty(weight_size, input.dtype, input.device)
    return KC.conv_weight_grad(grad_output, input, dw, _pairs(stride), _pads(padding), _pairs(dilation), groups)


def convolution_backward_weight_backward(ctx, ggw):
    gy, x = ctx.saved["grad_output"], ctx.saved["input"]
    a = ctx.attrs
    stride, padding, dilation, groups = a["stride"], a["padding"], a["dilation"], a.get("groups", 1)
    needs = ctx.needs_input_grad
    d_gy = _conv_to(x, ggw, gy.shape[2:], stride, padding, dilation, groups) if needs[0] else None
    d_x = _conv_t_to(gy, ggw, x.shape[2:], stride, padding, dilation, groups) if needs[1] else None
    return d_gy, d_x


CONVOLUTION_BACKWARD_WEIGHT = Op(
    "convolution_backward_weight", convolution_backward_weight_forward, convolution_backward_weight_backward,
    "ConvolutionBackwardBackward0", inputs=("grad_output", "input"), save=("grad_output", "input"))


ENTRIES = [CONVOLUTION, CONVOLUTION_BACKWARD_WEIGHT]
