"""NN functional ops: softmax family, losses, dropout, normalization, embedding, one_hot, pad.

Forward functions launch fused kernels (tgrad/kernels/softmax.py, loss.py,
norm.py, nn.py); backward rules call fused backward ops that are table
entries themselves, so double backward works.  Argument checks raise
PyTorch's errors before any launch.
"""
import warnings

import numpy as np

from .. import dtypes as D
from ..kernels import _geometry as G
from ..kernels import elementwise as KE
from ..kernels import loss as KL
from ..kernels import nn as KN2
from ..kernels import norm as KN
from ..kernels import softmax as KS
from .._state import state as _grad_state
from ..tensor import _wrap_dim, empty, from_host, full
from . import Op, call as _call, implicit_seed
from .reduce import sum_forward


def _float_check(x, name):
    if not x.dtype.is_floating_point:
        raise RuntimeError(f'"{name}" not implemented for \'{x.dtype.legacy_name}\'')


# ------------------------------------------------------------------ (OUTER, K, INNER) geometry
def rows3(t, dim):
    """(tensor, OUTER, K, INNER, (stride_o, stride_k, stride_i)): t seen as (OUTER, K, INNER) around ``dim``.

    The dims before / after ``dim`` must each merge into one stride; otherwise a contiguous copy is used.
    """
    shape, st = list(t.shape) or [1], list(t.stride()) or [1]
    outer = inner = 1
    for s in shape[:dim]:
        outer *= s
    for s in shape[dim + 1:]:
        inner *= s
    so = _merged_stride(shape[:dim], st[:dim])
    si = _merged_stride(shape[dim + 1:], st[dim + 1:])
    if so is None or si is None:
        c = empty(t.shape, t.dtype, t.device)
        KE.copy(t, c)
        return c, outer, shape[dim], inner, (shape[dim] * inner, inner, 1)
    return t, outer, shape[dim], inner, (so, st[dim], si)


def _merged_stride(shape, strides):
    if not shape:
        return 0
    cs, cst = G.collapse(shape, [strides])
    return cst[0][0] if len(cs) == 1 else None


def _contig3(K, inner):
    return (K * inner, inner, 1)


# ------------------------------------------------------------------ softmax / log_softmax
def _softmax(log):
    def forward(input, *, dim, _stacklevel=None, dtype=None):
        x = input
        if dtype is not None:
            dt = D.to_dtype(dtype, "log_softmax" if log else "softmax")
            x = KE.copy(input, empty(input.shape, dt, input.device))
        _float_check(x, "log_softmax_lastdim_kernel_impl" if log else "softmax_lastdim_kernel_impl")
        d = _wrap_dim(dim, x.dim())
        xs, outer, K, inner, sx = rows3(x, d)
        y = empty(x.shape, x.dtype, x.device)
        return KS.softmax(xs, y, (outer * inner, K, inner, sx, _contig3(K, inner)), log)
    return forward


def _softmax_bwd_forward(log):
    def forward(grad_output, output, *, dim):
        d = _wrap_dim(dim, output.dim())
        gs, outer, K, inner, sg = rows3(grad_output, d)
        ys, _, _, _, sy = rows3(output, d)
        dx = empty(output.shape, output.dtype, output.device)
        return KS.softmax_backward(gs, ys, dx, (outer * inner, K, inner, sg, sy, _contig3(K, inner)), log)
    return forward


def softmax_backward(ctx, grad):
    return (_call("softmax_backward", grad, ctx.saved["result"], dim=ctx.attrs["dim"]),)


def log_softmax_backward(ctx, grad):
    return (_call("log_softmax_backward", grad, ctx.saved["result"], dim=ctx.attrs["dim"]),)


def softmax_backward_backward(ctx, gg):
    """out = y*(g - s), s = sum(g*y): d/dg = softmax_backward(gg, y); d/dy = gg*(g - s) - g*sum(gg*y)."""
    g, y = ctx.saved["grad_output"], ctx.saved["output"]
    d = _wrap_dim(ctx.attrs["dim"], y.dim())
    gg_g = _call("softmax_backward", gg, y, dim=d) if ctx.needs_input_grad[0] else None
    gg_y = None
    if ctx.needs_input_grad[1]:
        s = (g * y).sum(d, keepdim=True)
        t = (gg * y).sum(d, keepdim=True)
        gg_y = gg * (g - s) - g * t
    return gg_g, gg_y


def log_softmax_backward_backward(ctx, gg):
    """out = g - exp(y)*sum(g): d/dg = gg - sum(gg*exp(y)); d/dy = -gg*exp(y)*sum(g)."""
    g, y = ctx.saved["grad_output"], ctx.saved["output"]
    d = _wrap_dim(ctx.attrs["dim"], y.dim())
    e = y.exp()
    gg_g = gg - (gg * e).sum(d, keepdim=True) if ctx.needs_input_grad[0] else None
    gg_y = -(gg * e * g.sum(d, keepdim=True)) if ctx.needs_input_grad[1] else None
    return gg_g, gg_y


ENTRIES = [
    Op("softmax", _softmax(False), softmax_backward, "SoftmaxBackward0", inputs=("self",), save=("result",)),
    Op("log_softmax", _softmax(True), log_softmax_backward, "LogSoftmaxBackward0", inputs=("self",),
       save=("result",)),
    Op("softmax_backward", _softmax_bwd_forward(False), softmax_backward_backward,
       "SoftmaxBackwardDataBackward0", inputs=("grad_output", "output"), save=("grad_output", "output")),
    Op("log_softmax_backward", _softmax_bwd_forward(True), log_softmax_backward_backward,
       "LogSoftmaxBackwardDataBackward0", inputs=("grad_output", "output"), save=("grad_output", "output")),
]


# ------------------------------------------------------------------ cross_entropy / nll_loss
def _check_reduction(reduction, allowed=("none", "mean", "sum")):
    if reduction not in allowed:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _ce_check(input, target, weight, ignore_index, prob):
    """PyTorch's argument errors for nll_loss / cross_entropy, raised before any launch."""
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    C = input.shape[1] if input.dim() >= 2 else input.shape[0]
    if weight is not None and (weight.dim() != 1 or weight.numel() != C):
        raise RuntimeError(f"weight tensor should be defined either for all {C} classes or no classes but got "
                           f"weight tensor of shape: {list(weight.shape)}")
    if prob:
        return C
    if target.dtype is not D.int64:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {target.dtype.legacy_name}")
    if input.dim() >= 2 and (target.dim() == 0 or target.shape[0] != input.shape[0]):
        n_t = target.shape[0] if target.dim() else 0
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size ({n_t}).")
    want = tuple(input.shape[:1]) + tuple(input.shape[2:]) if input.dim() >= 2 else ()
    if tuple(target.shape) != want:
        if input.dim() <= 2:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        raise RuntimeError(f"Expected target size {list(want)}, got {list(target.shape)}")
    v = target._host_copy().reshape(-1)
    bad = v[(v != ignore_index) & ((v < 0) | (v >= C))]
    if bad.size:
        raise IndexError(f"Target {int(bad[0])} is out of bounds.")
    return C


def _ce_geometry(input, target, prob):
    """(x, target, geom, target strides) for the loss kernels; class-index targets become contiguous (M,)."""
    cd = 1 if input.dim() >= 2 else 0
    xs, outer, C, inner, sx = rows3(input, cd)
    geom = (outer * inner, C, inner, sx)
    if prob:
        ts, _, _, _, st = rows3(target, cd)
        return xs, ts, geom, st
    ts = target if target.is_contiguous() else KE.copy(target, empty(target.shape, target.dtype, target.device))
    return xs, ts, geom, (0, 0, 0)


def _loss_rows(logits):
    def forward(input, target, weight=None, *, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        _check_reduction(reduction)
        _float_check(input, "nll_loss" if not logits else "log_softmax_lastdim_kernel_impl")
        # class probabilities when the target has the input's shape, as PyTorch decides (else class indices)
        prob = logits and target.dtype.is_floating_point and tuple(target.shape) == tuple(input.shape)
        if not 0.0 <= label_smoothing <= 1.0:
            raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
        _ce_check(input, target, weight, ignore_index, prob)
        if not prob and weight is not None and weight.requires_grad and _grad_recording():
            fn = "nll_loss2d_forward" if input.dim() >= 3 else "nll_loss_forward"
            raise RuntimeError(f"The function '{fn}' is not differentiable with respect to argument 'weight'. "
                               "This input cannot have requires_grad True.")
        xs, ts, geom, st = _ce_geometry(input, target, prob)
        red = KL.REDUCTIONS[reduction]
        if red == KL.NONE:
            shape = tuple(input.shape[:1]) + tuple(input.shape[2:]) if input.dim() >= 2 else ()
        else:
            shape = ()
        out = empty(shape, input.dtype, input.device)
        if geom[0] == 0:
            return KE.fill(out, float("nan") if red == KL.MEAN else 0.0)
        dx = None
        if red != KL.NONE and geom[1] > 0 and input.requires_grad and _grad_recording() \
                and not KL.gpu_blocks(input._storage.launch_device):
            # the gradient for an implicit seed of 1, written by the same launch: backward needs no launch.
            # cpu only: on cuda this reducing forward is one program, the backward kernel is parallel
            # (gpu_blocks: the AOT recorder, running on cpu, makes cuda's choice).
            dx = empty(input.shape, input.dtype, input.device)
            out._forward_saved = {"seed_grad": dx}
        return KL.cross_entropy(xs, ts, _opt_contig(weight), out, geom, st, ignore_index, label_smoothing, red,
                                logits, prob, dx)
    return forward


def _grad_recording():
    return _grad_state.recording


def _loss_rows_backward(logits):
    def forward(grad_output, input, target, weight=None, *, ignore_index=-100, reduction="mean",
                label_smoothing=0.0):
        prob = logits and target.dtype.is_floating_point
        xs, ts, geom, st = _ce_geometry(input, target, prob)
        M, C, inner, _ = geom
        cd = 1 if input.dim() >= 2 else 0
        g = grad_output
        if g.dim() == 0:
            gst = (0, 0)
        else:
            so, si = _merged_stride(list(g.shape[:cd]), list(g.stride()[:cd])), \
                _merged_stride(list(g.shape[cd:]), list(g.stride()[cd:]))
            if so is None or si is None:
                g = KE.copy(g, empty(g.shape, g.dtype, g.device))
                so, si = inner, 1
            gst = (so, si)
        dx = empty(input.shape, input.dtype, input.device)
        rs = empty((M,), input.dtype, input.device)
        if M == 0 or C == 0:
            return KE.fill(dx, 0), rs
        return KL.cross_entropy_backward(g, gst, xs, ts, _opt_contig(weight), dx, rs, geom, st, ignore_index, label_smoothing,
                                         KL.REDUCTIONS[reduction], logits, prob)
    return forward


def _rows_attrs(ctx):
    return {k: ctx.attrs[k] for k in ("ignore_index", "reduction", "label_smoothing") if k in ctx.attrs}


def _loss_rows_rule(bwd_name):
    def backward(ctx, grad):
        x, t, w = ctx.saved["self"], ctx.saved["target"], ctx.saved.get("weight")
        dx = None
        if ctx.needs_input_grad[0]:
            dx = _seed_grad(ctx, grad)
            if dx is None:
                dx = _call(bwd_name, grad, x, t, w, **_rows_attrs(ctx))[0]
        needs = tuple(ctx.needs_input_grad) + (False, False)
        dt = dw = None
        if needs[1] and t.dtype.is_floating_point:
            dt = _prob_target_grad(ctx, grad, x, w)
        if needs[2] and t.dtype.is_floating_point:
            dw = _prob_weight_grad(ctx, grad, x, t)
        return (dx, dt, dw)[:len(ctx.needs_input_grad)]
    return backward


def _seed_grad(ctx, grad):
    """The gradient the forward wrote for grad = 1, if ``grad`` is loss.backward()'s unmodified implicit seed
    and no graph is recorded (the saved tensor is a constant); else None."""
    seed_grad = ctx.saved.get("seed_grad")
    if seed_grad is not None and implicit_seed(grad):
        return seed_grad
    return None


def _class_view(v, x, cd):
    """A per-class vector (C,) viewed to broadcast against x along the class dim."""
    shape = [1] * x.dim()
    shape[cd] = v.shape[0]
    return v.reshape(shape)


def _row_scale(grad, x, red):
    """The per-row factor s of a probability-target loss (grad, or grad / rows for 'mean'), class dim kept."""
    cd = 1 if x.dim() >= 2 else 0
    s = grad.unsqueeze(cd) if (red == "none" and x.dim() >= 2) else grad
    return s / (x.numel() // max(x.shape[cd], 1)) if red == "mean" else s


def _smoothed(t, x, eps):
    """y' = (1 - eps) y + eps / C, the target the loss actually sees."""
    C = x.shape[1 if x.dim() >= 2 else 0]
    return t * (1.0 - eps) + eps / C if eps else t


def _prob_target_grad(ctx, grad, x, w):
    """d loss / d y_c = -s (1 - eps) w_c log_softmax(x)_c for probability targets."""
    cd = 1 if x.dim() >= 2 else 0
    eps = ctx.attrs.get("label_smoothing", 0.0)
    logp = _call("log_softmax", x, dim=cd)
    g = logp * _row_scale(grad, x, ctx.attrs.get("reduction", "mean")) * (eps - 1.0)
    return g * _class_view(w, x, cd) if w is not None else g


def _prob_weight_grad(ctx, grad, x, t):
    """d loss / d w_c = -sum over rows of s y'_c log_softmax(x)_c for probability targets."""
    cd = 1 if x.dim() >= 2 else 0
    logp = _call("log_softmax", x, dim=cd)
    y = _smoothed(t, x, ctx.attrs.get("label_smoothing", 0.0))
    e = (y * logp * _row_scale(grad, x, ctx.attrs.get("reduction", "mean"))).neg()
    rows = tuple(d for d in range(x.dim()) if d != cd)
    return e.sum(rows) if rows else e


def _rows_backward_rule(bwd_name, logits):
    """Backward of the fused backward: dx = s * D(x) with D linear in s; d/dx = rs * softmax_backward."""
    def backward(ctx, gg, _unused=None):
        g, x, t, w = ctx.saved["grad_output"], ctx.saved["self"], ctx.saved["target"], ctx.saved.get("weight")
        cd = 1 if x.dim() >= 2 else 0
        gg_g = gg_x = None
        if ctx.needs_input_grad[0]:
            d1 = _call(bwd_name, full(g.shape, 1, g.dtype, g.device), x, t, w, **_rows_attrs(ctx))[0]
            gg_g = (gg * d1).sum(cd) if g.dim() > 0 else (gg * d1).sum()
        if ctx.needs_input_grad[1] and logits:
            rs = ctx.saved["result1"]
            shape = list(x.shape)
            shape[cd] = 1
            p = _call("softmax", x, dim=cd)
            gg_x = _call("softmax_backward", gg, p, dim=cd) * rs.reshape(shape)
        gg_t = gg_w = None
        if logits and t.dtype.is_floating_point and (ctx.needs_input_grad[2] or ctx.needs_input_grad[3]):
            # dx = s (p sum_c w_c y'_c - w y'): linear in y' and in w; T = s (sum_k gg_k p_k - gg)
            eps = ctx.attrs.get("label_smoothing", 0.0)
            p = _call("softmax", x, dim=cd)
            T = ((gg * p).sum(cd, keepdim=True) - gg) * _row_scale(g, x, ctx.attrs.get("reduction", "mean"))
            if ctx.needs_input_grad[2]:
                gg_t = T * (1.0 - eps)
                gg_t = gg_t * _class_view(w, x, cd) if w is not None else gg_t
            if ctx.needs_input_grad[3] and w is not None:
                rows = tuple(d for d in range(x.dim()) if d != cd)
                gg_w = T * _smoothed(t, x, eps)
                gg_w = gg_w.sum(rows) if rows else gg_w
        return gg_g, gg_x, gg_t, gg_w
    return backward


ENTRIES += [
    Op("cross_entropy", _loss_rows(True), _loss_rows_rule("cross_entropy_backward"), "CrossEntropyLossBackward0",
       inputs=("self", "target", "weight"), save=("self", "target", "weight")),
    Op("nll_loss", _loss_rows(False), _loss_rows_rule("nll_loss_backward"), "NllLossBackward0",
       inputs=("self", "target", "weight"), save=("self", "target", "weight")),
    # PyTorch names the node NllLoss2DBackward0 for inputs with spatial dims (N, C, d1, ...): same op
    Op("nll_loss2d", _loss_rows(False), _loss_rows_rule("nll_loss_backward"), "NllLoss2DBackward0",
       inputs=("self", "target", "weight"), save=("self", "target", "weight")),
    Op("cross_entropy_backward", _loss_rows_backward(True), _rows_backward_rule("cross_entropy_backward", True),
       "CrossEntropyLossBackwardBackward0", inputs=("grad_output", "self", "target", "weight"),
       save=("grad_output", "self", "target", "weight", "result1"), outputs=2, nondiff_outputs=(1,)),
    Op("nll_loss_backward", _loss_rows_backward(False), _rows_backward_rule("nll_loss_backward", False),
       "NllLossBackwardBackward0", inputs=("grad_output", "self", "target", "weight"),
       save=("grad_output", "self", "target", "weight", "result1"), outputs=2, nondiff_outputs=(1,)),
]


# ------------------------------------------------------------------ point-wise losses
def _size_str(t):
    return f"tgrad.Size({list(t.shape)})"


def _pointwise_shape(input, target, weight, pos_weight):
    shapes = [t.shape for t in (input, target, weight, pos_weight) if t is not None]
    return G.broadcast_shapes(*shapes)


def _reduce_loss(e, reduction):
    """sum of the (already scaled) element losses unless reduction is 'none'; mean of nothing is nan."""
    if reduction == "none":
        return e
    if e.numel() == 0 and reduction != "sum":
        return KE.fill(empty((), e.dtype, e.device), float("nan"))
    return sum_forward(e)


def _loss_scale(reduction, shape, batch):
    if reduction == "mean":
        n = 1
        for s in shape:
            n *= s
        return 1.0 / n if n else float("nan")
    if reduction == "batchmean":
        return 1.0 / batch
    return 1.0


def _code(name, attrs):
    if name == "kl_div":
        return KL.KL_LOG if attrs.get("log_target") else KL.KL
    return {"mse_loss": KL.MSE, "l1_loss": KL.L1, "smooth_l1_loss": KL.SMOOTH_L1, "huber_loss": KL.HUBER,
            "binary_cross_entropy": KL.BCE, "binary_cross_entropy_with_logits": KL.BCE_LOGITS}[name]


def _param(name, attrs):
    return attrs.get("beta", 1.0) if name == "smooth_l1_loss" else attrs.get("delta", 1.0)


def _pointwise_check(name, input, target, attrs):
    reduction = attrs.get("reduction", "mean")
    _check_reduction(reduction, ("none", "mean", "sum", "batchmean") if name == "kl_div" else
                     ("none", "mean", "sum"))
    same = tuple(input.shape) == tuple(target.shape)
    if name == "binary_cross_entropy_with_logits" and not same:
        raise ValueError(f"Target size ({_size_str(target)}) must be the same as input size ({_size_str(input)})")
    if name == "binary_cross_entropy" and not same:
        raise ValueError(f"Using a target size ({_size_str(target)}) that is different to the input size "
                         f"({_size_str(input)}) is deprecated. Please ensure they have the same size.")
    if name in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss") and not same:
        warnings.warn(f"Using a target size ({_size_str(target)}) that is different to the input size "
                      f"({_size_str(input)}). This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", UserWarning, stacklevel=4)
    if name == "smooth_l1_loss" and attrs.get("beta", 1.0) < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if name == "huber_loss" and attrs.get("delta", 1.0) <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    if name == "kl_div" and reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      UserWarning, stacklevel=4)
    _float_check(input, name)
    if name == "binary_cross_entropy":
        _bce_range_check(input, target)


def _bce_range_check(input, target):
    """PyTorch's check, element by element and input before target: a value outside [0, 1] (or NaN) raises."""
    x, y = input._host_copy().ravel(), target._host_copy().ravel()
    bad_x = ~((x >= 0) & (x <= 1))
    bad = bad_x | ~((y >= 0) & (y <= 1))
    if bad.any():
        name = "input" if bad_x[bad.argmax()] else "target"
        raise RuntimeError(f"all elements of {name} should be between 0 and 1")


def _pointwise_loss(name):
    """Forward of a point-wise loss: e = f(x, y) * weight * scale (one launch), then the sum."""
    def forward(input, target, weight=None, pos_weight=None, **attrs):
        _pointwise_check(name, input, target, attrs)
        if pos_weight is not None and pos_weight.requires_grad and _grad_recording():
            raise RuntimeError(f"The function '{name}' is not differentiable with respect to argument "
                               "'pos_weight'. This input cannot have requires_grad True.")
        shape = _pointwise_shape(input, target, weight, pos_weight)
        dt = D.result_type(input, target)
        dt = dt if dt.is_floating_point else input.dtype
        e = empty(shape, dt, input.device)
        red = attrs.get("reduction", "mean")
        scale = _loss_scale(red, shape, input.shape[0] if input.dim() else 1)
        dx = None
        if (red != "none" and dt is input.dtype and e.numel() and not KL.gpu_blocks(input._storage.launch_device)
                and (input.requires_grad or target.requires_grad) and _grad_recording()):
            dx = empty(shape, dt, input.device)     # the gradient for an implicit seed, as cross_entropy does
        KL.loss_map(_code(name, attrs), 0, input, target, weight, pos_weight, None, e, _param(name, attrs), scale,
                    dx=dx)
        out = _reduce_loss(e, red)
        if dx is not None:
            out._forward_saved = {"seed_grad": dx}
        return out
    return forward


_XY_LOSSES = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss")


def _target_dy(name, attrs, order, x, y, pw):
    """d f^(order)(x, y) / dy for the losses not of x - y, written with ops (so it has its own gradient).

    bce: f = -(y log x + (1-y) log(1-x)), f' = (x-y)/(x(1-x)): -logit(x), -1/(x(1-x)), (1-2x)/(x(1-x))^2;
    bce_with_logits: f = (1-y) x + (1 + (pw-1) y) softplus(-x): -x + (pw-1) softplus(-x),
    -1 - (pw-1) sigmoid(-x), (pw-1) sigmoid(x) sigmoid(-x);
    kl_div: f = y (log y - x): log y + 1 - x (0 where y = 0), -1, 0; log_target: f = e^y (y - x):
    e^y (y + 1 - x), -e^y, 0.
    """
    if name == "binary_cross_entropy":
        if order == 0:
            return (1.0 - x).log() - x.log()
        q = (x * (1.0 - x)).clamp_min(1e-12)
        return q.pow(-1.0).neg() if order == 1 else (1.0 - 2.0 * x) / (q * q)
    if name == "binary_cross_entropy_with_logits":
        if order == 0:
            r = x.neg()
            return r if pw is None else r + (pw - 1.0) * _call("softplus", x.neg())
        if pw is None:
            return x * 0.0 - 1.0 if order == 1 else x * 0.0
        if order == 1:
            return (pw - 1.0) * x.neg().sigmoid() * -1.0 - 1.0
        return (pw - 1.0) * x.sigmoid() * x.neg().sigmoid()
    if attrs.get("log_target"):
        e = y.exp()
        return e * (y + 1.0 - x) if order == 0 else e.neg() if order == 1 else e * 0.0
    if order == 0:
        nz = y.ne(0)
        return (y.where(nz, y * 0.0 + 1.0).log() + 1.0 - x).where(nz, x * 0.0)
    return y * 0.0 - 1.0 if order == 1 else y * 0.0


def _target_grad(name, attrs, order, g, x, y, w, pw):
    """d/dy of f^(order)(x, y) * w * g * scale, at the operands' broadcast shape."""
    shape = _pointwise_shape(x, y, w, pw)
    scale = _loss_scale(attrs.get("reduction", "mean"), shape, x.shape[0] if x.dim() else 1)
    r = _target_dy(name, attrs, order, x, y, pw) * g * scale
    if w is not None:
        r = r * w
    return r if tuple(r.shape) == tuple(shape) else r.expand(shape)


def _pointwise_rule(name):
    """dx = <name>_backward(g, x, y, w, pw); dy = -dx for losses of x - y; dw = f(x, y) * g."""
    bname = name + "_backward"

    def backward(ctx, grad):
        s = ctx.saved
        x, y, w, pw = s["self"], s["target"], s.get("weight"), s.get("pos_weight")
        needs = ctx.needs_input_grad
        gx = gy = gw = None
        if needs[0] or (needs[1] and name in _XY_LOSSES):
            gx = _seed_grad(ctx, grad)
            if gx is None:
                gx = _call(bname, grad, x, y, w, pw, order=1, **ctx.attrs)
        if needs[1] and name in _XY_LOSSES:
            gy = gx.neg()
        elif needs[1]:
            gy = _target_grad(name, ctx.attrs, 0, grad, x, y, w, pw)
        if len(needs) > 2 and needs[2]:
            gw = _call(bname, grad, x, y, None, pw, order=0, **ctx.attrs)
        return (gx if needs[0] else None, gy, gw, None)[:len(needs)]
    return backward


def _pointwise_backward(name):
    """out = f^(order)(x, y) * w * g * scale, broadcast to all operands' shape."""
    def forward(grad_output, input, target, weight=None, pos_weight=None, *, order, **attrs):
        shape = G.broadcast_shapes(grad_output.shape, _pointwise_shape(input, target, weight, pos_weight))
        out = empty(shape, input.dtype, input.device)
        batch = input.shape[0] if input.dim() else 1
        scale = _loss_scale(attrs.get("reduction", "mean"), _pointwise_shape(input, target, weight, pos_weight),
                            batch)
        return KL.loss_map(_code(name, attrs), order, input, target, weight, pos_weight, grad_output, out,
                           _param(name, attrs), scale)
    return forward


def _pointwise_backward_rule(name):
    """d/dg: same op with gg; d/dx: order + 1 with gg * g (derivatives past f'' are taken as 0)."""
    bname = name + "_backward"

    def backward(ctx, gg):
        s = ctx.saved
        g, x, y, w, pw = s["grad_output"], s["self"], s["target"], s.get("weight"), s.get("pos_weight")
        attrs = dict(ctx.attrs)
        order = attrs.pop("order")
        needs = ctx.needs_input_grad
        gg_g = _call(bname, gg, x, y, w, pw, order=order, **attrs) if needs[0] else None
        gg_x = gg_y = gg_w = None
        if order < 2 and (needs[1] or (needs[2] and name in _XY_LOSSES)):
            gg_x = _call(bname, gg * g, x, y, w, pw, order=order + 1, **attrs)
            if needs[2] and name in _XY_LOSSES:
                gg_y = gg_x.neg()
        if needs[2] and name not in _XY_LOSSES:
            gg_y = _target_grad(name, attrs, order, gg * g, x, y, w, pw)
        if needs[3]:
            gg_w = _call(bname, gg * g, x, y, None, pw, order=order, **attrs)
        return gg_g, (gg_x if needs[1] else None), gg_y, gg_w, None
    return backward


_LOSS_NODES = {"mse_loss": "MseLossBackward0", "l1_loss": "L1LossBackward0",
               "smooth_l1_loss": "SmoothL1LossBackward0", "huber_loss": "HuberLossBackward0",
               "binary_cross_entropy": "BinaryCrossEntropyBackward0",
               "binary_cross_entropy_with_logits": "BinaryCrossEntropyWithLogitsBackward0",
               "kl_div": "KlDivBackward0"}
_LOSS_INPUTS = {"binary_cross_entropy": ("self", "target", "weight"),
                "binary_cross_entropy_with_logits": ("self", "target", "weight", "pos_weight")}

for _name, _node in _LOSS_NODES.items():
    _ins = _LOSS_INPUTS.get(_name, ("self", "target"))
    ENTRIES += [
        Op(_name, _pointwise_loss(_name), _pointwise_rule(_name), _node, inputs=_ins, save=_ins),
        Op(_name + "_backward", _pointwise_backward(_name), _pointwise_backward_rule(_name),
           _node.replace("Backward0", "BackwardBackward0"),
           inputs=("grad_output", "self", "target", "weight", "pos_weight"),
           save=("grad_output", "self", "target", "weight", "pos_weight")),
    ]


# ------------------------------------------------------------------ layer_norm
def _contig(t):
    return t if t.is_contiguous() else KE.copy(t, empty(t.shape, t.dtype, t.device))


def _ln_rows(input, normalized_shape):
    ns = tuple(normalized_shape) if isinstance(normalized_shape, (tuple, list)) else (normalized_shape,)
    nd = len(ns)
    if nd == 0 or input.dim() < nd or tuple(input.shape[input.dim() - nd:]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*, {', '.join(str(s) for s in ns)}], but got input of size{list(input.shape)}")
    K = 1
    for s in ns:
        K *= s
    return (input.numel() // K if K else 0), K, nd


def layer_norm_forward(input, weight=None, bias=None, *, normalized_shape, eps=1e-5):
    _float_check(input, "LayerNormKernelImpl")
    M, K, nd = _ln_rows(input, normalized_shape)
    for t in (weight, bias):
        if t is not None and tuple(t.shape) != tuple(input.shape[input.dim() - nd:]):
            raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got weight of shape "
                               f"{list(t.shape)} and normalized_shape = {list(input.shape[input.dim() - nd:])}")
    y = empty(input.shape, input.dtype, input.device)
    return KN.layer_norm(_contig(input), _opt_contig(weight), _opt_contig(bias), y, M, K, eps)


def _opt_contig(t):
    return None if t is None else _contig(t)


def _ln_dims(x, normalized_shape):
    nd = len(normalized_shape) if isinstance(normalized_shape, (tuple, list)) else 1
    return tuple(range(x.dim() - nd)), tuple(range(x.dim() - nd, x.dim()))


def layer_norm_backward_rule(ctx, grad):
    x, w = ctx.saved["input"], ctx.saved.get("weight")
    ns, eps = ctx.attrs["normalized_shape"], ctx.attrs.get("eps", 1e-5)
    batch, _ = _ln_dims(x, ns)
    needs = ctx.needs_input_grad
    gx = _call("layer_norm_backward", grad, x, w, normalized_shape=ns, eps=eps) if needs[0] else None
    gw = gb = None
    if needs[1]:
        xh = _call("layer_norm", x, None, None, normalized_shape=ns, eps=eps)
        gw = (grad * xh).sum(batch) if batch else grad * xh
    if needs[2]:
        gb = grad.sum(batch) if batch else grad
    return gx, gw, gb


def layer_norm_backward_forward(grad_output, input, weight=None, *, normalized_shape, eps=1e-5):
    M, K, _ = _ln_rows(input, normalized_shape)
    dx = empty(input.shape, input.dtype, input.device)
    return KN.layer_norm_backward(_contig(grad_output), _contig(input), _opt_contig(weight), dx, M, K, eps)


def layer_norm_double_backward(ctx, gg):
    """dx = r (h - a - xh b) with h = g w, a = mean(h), b = mean(h xh) over each row; gg the incoming grad.

    d/dh = layer_norm_backward(gg) (the normalization's Jacobian is symmetric);
    d/dx = r^2/K [-K b gg + b G1 - G2 (h - a) + xh (2 b G2 - G3)],
    G1 = sum gg, G2 = sum gg xh, G3 = sum gg (h - a - xh b).
    """
    g, x, w = ctx.saved["grad_output"], ctx.saved["input"], ctx.saved.get("weight")
    ns, eps = ctx.attrs["normalized_shape"], ctx.attrs.get("eps", 1e-5)
    batch, dims = _ln_dims(x, ns)
    needs = ctx.needs_input_grad
    gg_g = gg_x = gg_w = None
    if needs[0] or needs[2]:
        jh = _call("layer_norm_backward", gg, x, None, normalized_shape=ns, eps=eps)
        if needs[0]:
            gg_g = jh * w if w is not None else jh
        if needs[2]:
            gg_w = (jh * g).sum(batch) if batch else jh * g
    if needs[1]:
        K = 1
        for d in dims:
            K *= x.shape[d]
        h = g * w if w is not None else g
        xh = _call("layer_norm", x, None, None, normalized_shape=ns, eps=eps)
        c = x - x.mean(dims, keepdim=True)
        r2 = ((c * c).mean(dims, keepdim=True) + eps).pow(-1.0)
        a = h.mean(dims, keepdim=True)
        b = (h * xh).mean(dims, keepdim=True)
        G1 = gg.sum(dims, keepdim=True)
        G2 = (gg * xh).sum(dims, keepdim=True)
        G3 = (gg * (h - a - xh * b)).sum(dims, keepdim=True)
        gg_x = (r2 / K) * (gg * b * (-K) + b * G1 - G2 * (h - a) + xh * (b * G2 * 2 - G3))
    return gg_g, gg_x, gg_w


ENTRIES += [
    Op("layer_norm", layer_norm_forward, layer_norm_backward_rule, "NativeLayerNormBackward0",
       inputs=("input", "weight", "bias"), save=("input", "weight")),
    Op("layer_norm_backward", layer_norm_backward_forward, layer_norm_double_backward,
       "NativeLayerNormBackwardBackward0", inputs=("grad_output", "input", "weight"),
       save=("grad_output", "input", "weight")),
]


# ------------------------------------------------------------------ dropout
def _dropout_scale(p, dtype):
    """PyTorch's kept-element factor 1 / (1 - p), computed as ``noise.div_(1 - p)`` does in ``dtype``."""
    if p >= 1:
        return 0.0
    if dtype.name == "float64":
        return 1.0 / (1.0 - p)
    return float(np.asarray(np.float32(1) / np.float32(1.0 - p)).astype(dtype.np))


def dropout_forward(input, *, p=0.5, training=True, inplace=False, seed=None, offset=None, words=None):
    """(output, mask): output = input * mask / (1 - p); mask[i] = (double uniform of ``words`` 2i, 2i + 1)
    < 1 - p (cpu: PyTorch's ``bernoulli_(1 - p)``), or U(seed, offset + i) >= p (Philox, cuda).

    The mask is the second (non-differentiable) output, as in PyTorch's ``native_dropout``.  ``words`` (an
    int32 tensor of 2n words) or ``seed`` and ``offset`` (a Philox key and first counter) are drawn by the
    caller from a generator (``F.dropout``: ``Generator._take``), so the table never reads the random state.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    _float_check(input, "bernoulli_scalar_cpu_")
    mask = empty(input.shape, D.bool_, input.device)
    y = empty(input.shape, input.dtype, input.device)
    if not training or p == 0:
        KE.fill(mask, 1)
        return KE.copy(input, y), mask
    if words is None and (seed is None or offset is None):
        raise ValueError("dropout: a training dropout takes words= or seed= and offset= (drawn from a generator)")
    return KN2.dropout(_contig(input), y, mask, p, _dropout_scale(p, input.dtype), seed, offset, words)


def dropout_backward(ctx, grad, _mask_grad=None):
    p = ctx.attrs.get("p", 0.5)
    if not ctx.attrs.get("training", True) or p == 0:
        return (grad,)
    return (grad * ctx.saved["result1"] * _dropout_scale(p, grad.dtype),)


# ------------------------------------------------------------------ embedding
def _check_indices(indices, num):
    if indices.dtype not in (D.int64, D.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {indices.type()} instead (while checking arguments for "
                           "embedding)")
    if indices.numel():
        v = indices._host_copy()
        if v.min() < 0 or v.max() >= num:
            raise IndexError("index out of range in self")


def _padding(padding_idx, num):
    if padding_idx is None:
        return -1 - num     # never matches a valid index
    if not -num <= padding_idx < num:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx % num


def embedding_forward(weight, indices, *, padding_idx=None, scale_grad_by_freq=False):
    """Rows of ``weight`` at ``indices`` (``max_norm`` is F.embedding's in-place renorm before this op)."""
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    _padding(padding_idx, weight.shape[0])
    _check_indices(indices, weight.shape[0])
    n, Dm = indices.numel(), weight.shape[1]
    out = empty(tuple(indices.shape) + (Dm,), weight.dtype, weight.device)
    return KN2.embedding(weight, _contig(indices), out, n, Dm)


def embedding_backward_rule(ctx, grad):
    w_meta, idx = ctx.input_meta[0], ctx.saved["indices"]
    return (_call("embedding_backward", grad, idx, num_weights=w_meta.shape[0],
                  padding_idx=ctx.attrs.get("padding_idx"),
                  scale_grad_by_freq=ctx.attrs.get("scale_grad_by_freq", False)), None)


def _freq_scale(indices, num_weights, like):
    """(num_weights, 1): 1 / how often each row is looked up in ``indices`` (1 for rows never looked up)."""
    counts = np.bincount(indices._host_copy().ravel(), minlength=num_weights)
    return from_host((1.0 / np.maximum(counts, 1))[:, None], like.dtype, like.device)


def embedding_backward_forward(grad_output, indices, *, num_weights, padding_idx=None, scale_grad_by_freq=False):
    """Dense gradient of the embedding table: rows of grad scattered (summed) by index; with
    ``scale_grad_by_freq`` each row divided by how often its index occurs in the mini-batch."""
    Dm = grad_output.shape[-1]
    acc_dt = D.float64 if grad_output.dtype is D.float64 else D.float32
    acc = KE.fill(empty((num_weights, Dm), acc_dt, grad_output.device), 0)
    KN2.embedding_backward(_contig(grad_output), _contig(indices), acc, indices.numel(), Dm,
                           _padding(padding_idx, num_weights))
    if scale_grad_by_freq:
        KE.binary(KE.mul_fn, acc, _freq_scale(indices, num_weights, acc), acc)
    if acc_dt is grad_output.dtype:
        return acc
    return KE.copy(acc, empty(acc.shape, grad_output.dtype, grad_output.device))


def embedding_double_backward(ctx, gg):
    """d/dgrad: gather gg's rows by index (rows at padding_idx got no gradient, so theirs is 0; with
    ``scale_grad_by_freq`` rows scaled as the gradient was)."""
    idx = ctx.saved["indices"]
    pad = ctx.attrs.get("padding_idx")
    if pad is not None:
        keep = full((gg.shape[0], 1), 1, gg.dtype, gg.device)
        keep[pad] = 0
        gg = gg * keep
    if ctx.attrs.get("scale_grad_by_freq", False):
        gg = gg * _freq_scale(idx, gg.shape[0], gg)
    return _call("embedding", gg, idx, padding_idx=pad), None


# ------------------------------------------------------------------ one_hot
def one_hot_forward(self, *, num_classes=-1):
    if self.dtype is not D.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    v = self._host_copy()
    if num_classes == -1:
        if v.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(v.max()) + 1
    if v.size and v.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if v.size and v.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = empty(tuple(self.shape) + (num_classes,), D.int64, self.device)
    return KN2.one_hot(_contig(self), out, num_classes)


# ------------------------------------------------------------------ pad (constant)
def pad_forward(input, *, pad, mode="constant", value=None):
    """Constant padding; pad = (left_last, right_last, left_prev, right_prev, ...); negative pads crop."""
    if mode != "constant":
        raise NotImplementedError(f"pad: mode {mode!r} is not supported (only 'constant')")
    pad = [int(p) for p in pad]
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.dim()}")
    shape = list(input.shape)
    src, dst = [slice(None)] * input.dim(), [slice(None)] * input.dim()
    for i in range(len(pad) // 2):
        d = input.dim() - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        n = shape[d] + lo + hi
        if n < 0:
            raise RuntimeError(f"The input size {shape[d]}, plus negative padding {lo} and {hi} resulted in a "
                               f"negative output size, which is invalid. Check dimension {d} of your input.")
        src[d] = slice(max(-lo, 0), shape[d] - max(-hi, 0))
        dst[d] = slice(max(lo, 0), n - max(hi, 0))
        shape[d] = n
    out = empty(shape, input.dtype, input.device)
    KE.fill(out, 0 if value is None else value)
    s, o = _region(input, src), _region(out, dst)
    if s.numel():
        KE.copy(s, o)
    return out


def _region(t, slices):
    """A view of t restricted to the given per-dim slices (steps of 1)."""
    off, shape = t._offset, []
    for d, sl in enumerate(slices):
        start, stop, _ = sl.indices(t.shape[d])
        off += start * t.stride()[d]
        shape.append(max(stop - start, 0))
    return t._view_of(shape, t.stride(), off)


def pad_backward(ctx, grad):
    return (_call("pad", grad, pad=[-p for p in ctx.attrs["pad"]]),)


ENTRIES += [
    Op("dropout", dropout_forward, dropout_backward, "MulBackward0", inputs=("input",), save=("result1",),
       outputs=2, nondiff_outputs=(1,)),
    Op("embedding", embedding_forward, embedding_backward_rule, "EmbeddingBackward0",
       inputs=("weight", "indices"), save=("indices",)),
    Op("embedding_backward", embedding_backward_forward, embedding_double_backward, "EmbeddingBackwardBackward0",
       inputs=("grad_output", "indices"), save=("indices",)),
    Op("one_hot", one_hot_forward, None, None, inputs=("self",)),
    Op("pad", pad_forward, pad_backward, "ConstantPadNdBackward0", inputs=("input",)),
]


# ------------------------------------------------------------------ batch_norm
def _bn_geometry(input):
    if input.dim() < 2:
        raise ValueError(f"Expected 2D or higher input (got {input.dim()}D input)")
    C = input.shape[1]
    L = 1
    for s in input.shape[2:]:
        L *= s
    return C, L


def batch_norm_forward(input, weight=None, bias=None, running_mean=None, running_var=None, *, training=False,
                       momentum=0.1, eps=1e-5):
    """Normalize over (N, *) per channel; training uses batch statistics and updates the running ones in place."""
    _float_check(input, "batch_norm")
    C, L = _bn_geometry(input)
    if training and input.numel() // max(C, 1) == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{_size_str(input)}")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != C:
            raise RuntimeError(f"{name} should contain {C} elements not {t.numel()}")
    y = empty(input.shape, input.dtype, input.device)
    rm, rv = _opt_contig(running_mean), _opt_contig(running_var)
    KN.batch_norm(_contig(input), _opt_contig(weight), _opt_contig(bias), rm, rv, y, C, L,
                  training, momentum if momentum is not None else 0.0, eps)
    if training:    # strided running statistics were updated in a contiguous copy
        for t, c in ((running_mean, rm), (running_var, rv)):
            if t is not None and c is not t:
                KE.copy(c, t)
    return y


def batch_norm_backward_rule(ctx, grad):
    s = ctx.saved
    dx, dw, db = _call("batch_norm_backward", grad, s["input"], s.get("weight"), s.get("running_mean"),
                       s.get("running_var"), training=ctx.attrs.get("training", False), eps=ctx.attrs.get("eps", 1e-5))
    needs = ctx.needs_input_grad
    return dx if needs[0] else None, dw if needs[1] else None, db if needs[2] else None, None, None


def batch_norm_backward_forward(grad_output, input, weight=None, running_mean=None, running_var=None, *,
                                training, eps=1e-5):
    C, L = _bn_geometry(input)
    pdt = weight.dtype if weight is not None else input.dtype
    dx = empty(input.shape, input.dtype, input.device)
    dw, db = empty((C,), pdt, input.device), empty((C,), pdt, input.device)
    return KN.batch_norm_backward(_contig(grad_output), _contig(input), _opt_contig(weight),
                                  _opt_contig(running_mean), _opt_contig(running_var), dx, dw, db, C, L, training, eps)


def _bn_parts(x, rm, rv, training, eps):
    """(reduced dims, channel view shape, r = 1/sqrt(var + eps), xh = (x - mean) r), written with ops."""
    dims = (0,) + tuple(range(2, x.dim()))
    cs = [1, x.shape[1]] + [1] * (x.dim() - 2)
    if training:
        c = x - x.mean(dims, keepdim=True)
        r = ((c * c).mean(dims, keepdim=True) + eps).rsqrt()
    else:
        c = x - rm.reshape(cs)
        r = (rv.reshape(cs) + eps).rsqrt()
    return dims, cs, r, c * r


def _bn_xh_vjp(u, xh, r, dims):
    """u^T d xh / dx for batch statistics: r (u - mean(u) - xh mean(u xh)) (the Jacobian is symmetric)."""
    return r * (u - u.mean(dims, keepdim=True) - xh * (u * xh).mean(dims, keepdim=True))


def batch_norm_double_backward(ctx, ggx, ggw, ggb):
    """Backward of (dx, dw, db) = batch_norm_backward(g, x, w), with h = g w, xh, r as in the forward:

    training: dx = r (h - a - xh b), a = mean(h), b = mean(h xh); eval: dx = h r; dw = sum g xh; db = sum g.
    From ggx (training, as layer_norm's): d/dh = xh-vjp(ggx), d/dx = r^2/K [-K b ggx + b G1 - G2 (h - a)
    + xh (2 b G2 - G3)], G1 = sum ggx, G2 = sum ggx xh, G3 = sum ggx (h - a - xh b); eval: d/dh = ggx r.
    From ggw: d/dg = ggw xh, d/dx = xh-vjp(g ggw) (eval: g ggw r).  From ggb: d/dg = ggb.
    """
    s = ctx.saved
    g, x, w = s["grad_output"], s["input"], s.get("weight")
    training, eps = ctx.attrs["training"], ctx.attrs.get("eps", 1e-5)
    dims, cs, r, xh = _bn_parts(x, s.get("running_mean"), s.get("running_var"), training, eps)
    wb = w.reshape(cs) if w is not None else None
    needs = ctx.needs_input_grad
    gg_g = gg_x = gg_w = None

    def add(acc, t):
        return t if acc is None else acc + t
    if ggx is not None:
        jh = _bn_xh_vjp(ggx, xh, r, dims) if training else ggx * r
        gg_g = jh * wb if wb is not None else jh
        if needs[2] and w is not None:
            gg_w = (jh * g).sum(dims)
        if needs[1] and training:
            K = x.numel() // max(x.shape[1], 1)
            h = g * wb if wb is not None else g
            a = h.mean(dims, keepdim=True)
            b = (h * xh).mean(dims, keepdim=True)
            G1 = ggx.sum(dims, keepdim=True)
            G2 = (ggx * xh).sum(dims, keepdim=True)
            G3 = (ggx * (h - a - xh * b)).sum(dims, keepdim=True)
            gg_x = (r * r / K) * (ggx * b * (-K) + b * G1 - G2 * (h - a) + xh * (b * G2 * 2 - G3))
    if ggw is not None:
        gw = ggw.reshape(cs)
        gg_g = add(gg_g, gw * xh)
        if needs[1]:
            gg_x = add(gg_x, _bn_xh_vjp(g * gw, xh, r, dims) if training else g * gw * r)
    if ggb is not None:
        gg_g = add(gg_g, ggb.reshape(cs).expand(x.shape))
    return (gg_g if needs[0] else None), gg_x, gg_w, None, None


ENTRIES += [
    Op("batch_norm", batch_norm_forward, batch_norm_backward_rule, "NativeBatchNormBackward0",
       inputs=("input", "weight", "bias", "running_mean", "running_var"),
       save=("input", "weight", "running_mean", "running_var")),
    Op("batch_norm_backward", batch_norm_backward_forward, batch_norm_double_backward,
       "NativeBatchNormBackwardBackward0", inputs=("grad_output", "input", "weight", "running_mean", "running_var"),
       save=("grad_output", "input", "weight", "running_mean", "running_var"), outputs=3),
]


# ------------------------------------------------------------------ normalize / cosine_similarity
def normalize_forward(input, *, p=2.0, dim=1, eps=1e-12):
    """y = x / max(||x||_p, eps) along ``dim`` (p > 0 or inf)."""
    _float_check(input, "linalg_vector_norm")
    p = float(p)
    if not p > 0:
        raise NotImplementedError("normalize: only p > 0 is supported")
    d = _wrap_dim(dim, input.dim())
    xs, outer, K, inner, sx = rows3(input, d)
    y = empty(input.shape, input.dtype, input.device)
    return KN2.normalize(xs, y, (outer * inner, K, inner, sx, _contig3(K, inner)), p, eps)


def _norm_grad(x, n, p, dim):
    """d ||x||_p / dx along ``dim`` (n = the norm, keepdim); for inf, split evenly between tied maxima."""
    if p == 2:
        return x / n
    if p == 1:
        return x.sign()
    if p == float("inf"):
        at_max = x.abs().eq(n).to(x.dtype)
        return x.sign() * at_max / at_max.sum(dim, keepdim=True)
    return x.sign() * x.abs().pow(p - 1) / n.pow(p - 1)


def normalize_backward(ctx, grad):
    """y = x / d, d = max(n, eps): dx = g / d - [n > eps] * sum(g x) / d^2 * dn/dx."""
    x = ctx.saved["input"]
    p, eps = float(ctx.attrs.get("p", 2.0)), ctx.attrs.get("eps", 1e-12)
    dim = _wrap_dim(ctx.attrs.get("dim", 1), x.dim())
    n = x.norm(p, dim, keepdim=True)
    d = n.clamp_min(eps)
    s = (grad * x).sum(dim, keepdim=True)
    big = n.gt(eps)
    safe_n = n.where(big, d)
    corr = (s / (d * d) * _norm_grad(x, safe_n, p, dim)).where(big, x * 0)
    return (grad / d - corr,)


def cosine_similarity_forward(x1, x2, *, dim=1, eps=1e-8):
    """sum(x1 x2) / (max(||x1||, eps) * max(||x2||, eps)) along ``dim`` (inputs broadcast)."""
    shape = G.broadcast_shapes(x1.shape, x2.shape)
    d = _wrap_dim(dim, len(shape))
    a, b = x1.expand(shape) if tuple(x1.shape) != shape else x1, x2.expand(shape) if tuple(x2.shape) != shape else x2
    a, outer, K, inner, sa = rows3(a.detach(), d)
    b, _, _, _, sb = rows3(b.detach(), d)
    out_shape = shape[:d] + shape[d + 1:]
    dt = D.result_type(x1, x2)
    out = empty(out_shape, dt, x1.device)
    return KN2.cosine_similarity(a, b, out, (outer * inner, K, inner, sa, sb), eps)


def cosine_similarity_backward(ctx, grad):
    """y = S / (d1 d2): dy/dx1 = x2 / (d1 d2) - y x1 / d1^2 (dn/dx = x / d, as PyTorch's clamped norms)."""
    x1, x2, y = ctx.saved["x1"], ctx.saved["x2"], ctx.saved["result"]
    eps = ctx.attrs.get("eps", 1e-8)
    shape = G.broadcast_shapes(x1.shape, x2.shape)
    x1, x2 = x1.expand(shape), x2.expand(shape)
    dim = _wrap_dim(ctx.attrs.get("dim", 1), len(shape))
    d1 = x1.norm(2, dim, keepdim=True).clamp_min(eps)
    d2 = x2.norm(2, dim, keepdim=True).clamp_min(eps)
    g, yk = grad.unsqueeze(dim), y.unsqueeze(dim)
    needs = ctx.needs_input_grad
    g1 = g * (x2 / (d1 * d2) - yk * x1 / (d1 * d1)) if needs[0] else None
    g2 = g * (x1 / (d1 * d2) - yk * x2 / (d2 * d2)) if needs[1] else None
    return g1, g2


ENTRIES += [
    Op("normalize", normalize_forward, normalize_backward, "DivBackward0", inputs=("input",), save=("input",)),
    Op("cosine_similarity", cosine_similarity_forward, cosine_similarity_backward, "SumBackward1",
       inputs=("x1", "x2"), save=("x1", "x2", "result")),
]
