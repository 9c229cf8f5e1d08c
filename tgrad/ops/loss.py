"""Losses: cross_entropy / nll_loss over class rows and the point-wise losses (mse, l1, smooth_l1, huber,
binary_cross_entropy [with_logits], kl_div), each with a fused backward op (tgrad/kernels/loss.py).

Backward rules call the fused backward ops, table entries themselves, so double backward works.  Argument
checks raise PyTorch's errors before any launch.
"""
import warnings

import numpy as np

from .. import dtypes as D
from ..kernels import _geometry as G
from ..kernels import elementwise as KE
from ..kernels import loss as KL
from ..memory.cuda_driver import CAPTURING as _CAPTURING
from .._state import state as _grad_state
from ..tensor import empty, full
from . import Op, call as _call, implicit_seed
from ._rows import float_check, merged_stride, opt_contig, rows3, size_str
from .reduce import mean_of, sum_forward


# ------------------------------------------------------------------ cross_entropy / nll_loss
def _check_reduction(reduction, allowed=("none", "mean", "sum")):
    if reduction not in allowed:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _ce_check(input, target, weight, ignore_index, prob):
    """PyTorch's argument errors for nll_loss / cross_entropy, raised before any launch."""
    ishape, tshape = input._shape, target._shape
    nd = len(ishape)
    if nd < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {nd})")
    C = ishape[1] if nd >= 2 else ishape[0]
    if weight is not None and (weight.dim() != 1 or weight.numel() != C):
        raise RuntimeError(f"weight tensor should be defined either for all {C} classes or no classes but got "
                           f"weight tensor of shape: {list(weight.shape)}")
    if prob:
        return C
    if target.dtype is not D.int64:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {target.dtype.legacy_name}")
    if nd >= 2 and (not tshape or tshape[0] != ishape[0]):
        n_t = tshape[0] if tshape else 0
        raise ValueError(f"Expected input batch_size ({ishape[0]}) to match target batch_size ({n_t}).")
    want = ishape[:1] + ishape[2:] if nd >= 2 else ()
    if tshape != want:
        if nd <= 2:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        raise RuntimeError(f"Expected target size {list(want)}, got {list(tshape)}")
    if _CAPTURING and target._storage.device.type == "cuda":
        return C        # a CUDA graph capture cannot read values back (PyTorch checks in the kernel)
    v = _target_values(target)
    # as unsigned, a negative index is huge: one reduction finds any index outside [0, C) (or ignore_index)
    if v.size and v.view(np.uint64).max() >= C:
        bad = v[(v != ignore_index) & ((v < 0) | (v >= C))]
        if bad.size:
            raise IndexError(f"Target {int(bad[0])} is out of bounds.")
    return C


def _target_values(target):
    """The class indices as a flat int64 numpy array: a view of a contiguous cpu target's memory (no copy),
    else a host copy."""
    if target._storage.device.type == "cpu" and target.is_contiguous():
        n = 1
        for d in target._shape:
            n *= d
        return target._storage.host_array(np.int64, n, target._offset * 8)
    return target._host_copy().reshape(-1)


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
        float_check(input, "nll_loss" if not logits else "log_softmax_lastdim_kernel_impl")
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
        rows = empty((geom[0],), input.dtype, input.device) \
            if KL.aten_cascade(xs, geom, red, prob, label_smoothing, input._storage.launch_device) else None
        return KL.cross_entropy(xs, ts, opt_contig(weight), out, geom, st, ignore_index, label_smoothing, red,
                                logits, prob, dx, rows)
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
            so, si = merged_stride(list(g.shape[:cd]), list(g.stride()[:cd])), \
                merged_stride(list(g.shape[cd:]), list(g.stride()[cd:]))
            if so is None or si is None:
                g = KE.copy(g, empty(g.shape, g.dtype, g.device))
                so, si = inner, 1
            gst = (so, si)
        dx = empty(input.shape, input.dtype, input.device)
        rs = empty((M,), input.dtype, input.device)
        if M == 0 or C == 0:
            return KE.fill(dx, 0), rs
        return KL.cross_entropy_backward(g, gst, xs, ts, opt_contig(weight), dx, rs, geom, st, ignore_index,
                                         label_smoothing, KL.REDUCTIONS[reduction], logits, prob)
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


CROSS_ENTROPY = Op(
    "cross_entropy", _loss_rows(True), _loss_rows_rule("cross_entropy_backward"), "CrossEntropyLossBackward0",
    inputs=("self", "target", "weight"), save=("self", "target", "weight"))
NLL_LOSS = Op("nll_loss", _loss_rows(False), _loss_rows_rule("nll_loss_backward"), "NllLossBackward0",
              inputs=("self", "target", "weight"), save=("self", "target", "weight"))
# PyTorch names the node NllLoss2DBackward0 for inputs with spatial dims (N, C, d1, ...): same op
NLL_LOSS2D = Op("nll_loss2d", _loss_rows(False), _loss_rows_rule("nll_loss_backward"), "NllLoss2DBackward0",
                inputs=("self", "target", "weight"), save=("self", "target", "weight"))
CROSS_ENTROPY_BACKWARD = Op(
    "cross_entropy_backward", _loss_rows_backward(True), _rows_backward_rule("cross_entropy_backward", True),
    "CrossEntropyLossBackwardBackward0", inputs=("grad_output", "self", "target", "weight"),
    save=("grad_output", "self", "target", "weight", "result1"), outputs=2, nondiff_outputs=(1,))
NLL_LOSS_BACKWARD = Op("nll_loss_backward", _loss_rows_backward(False), _rows_backward_rule("nll_loss_backward", False),
                       "NllLossBackwardBackward0", inputs=("grad_output", "self", "target", "weight"),
                       save=("grad_output", "self", "target", "weight", "result1"), outputs=2, nondiff_outputs=(1,))


# ------------------------------------------------------------------ point-wise losses
def _pointwise_shape(input, target, weight, pos_weight):
    shapes = [t.shape for t in (input, target, weight, pos_weight) if t is not None]
    return G.broadcast_shapes(*shapes)


def _reduce_loss(e, reduction, div=None):
    """The element losses e unless reduction is 'none'; else their sum, divided by ``div`` when given
    (ATen's sum then division, for unscaled e); mean of nothing is nan."""
    if reduction == "none":
        return e
    if e.numel() == 0 and reduction != "sum":
        return KE.fill(empty((), e.dtype, e.device), float("nan"))
    return sum_forward(e) if div is None else mean_of(e, div)


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
        raise ValueError(f"Target size ({size_str(target)}) must be the same as input size ({size_str(input)})")
    if name == "binary_cross_entropy" and not same:
        raise ValueError(f"Using a target size ({size_str(target)}) that is different to the input size "
                         f"({size_str(input)}) is deprecated. Please ensure they have the same size.")
    if name in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss") and not same:
        warnings.warn(f"Using a target size ({size_str(target)}) that is different to the input size "
                      f"({size_str(input)}). This will likely lead to incorrect results due to broadcasting. "
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
    float_check(input, name)
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
        # float32/float64 means as ATen: the unscaled losses' sum in its order, then one division
        div = (e.numel() if red == "mean" else input.shape[0] if input.dim() else 1) if (
            red in ("mean", "batchmean") and dt.name in ("float32", "float64")) else None
        KL.loss_map(_code(name, attrs), 0, input, target, weight, pos_weight, None, e, _param(name, attrs), scale,
                    dx=dx, scale_out=div is None)
        out = _reduce_loss(e, red, div)
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


def pointwise_loss(name, node, inputs=("self", "target")):
    """The table rows of point-wise loss ``name``: the loss and its fused backward op."""
    return (Op(name, _pointwise_loss(name), _pointwise_rule(name), node, inputs=inputs, save=inputs),
            Op(name + "_backward", _pointwise_backward(name), _pointwise_backward_rule(name),
               node.replace("Backward0", "BackwardBackward0"),
               inputs=("grad_output", "self", "target", "weight", "pos_weight"),
               save=("grad_output", "self", "target", "weight", "pos_weight")))


MSE_LOSS, MSE_LOSS_BACKWARD = pointwise_loss("mse_loss", "MseLossBackward0")
L1_LOSS, L1_LOSS_BACKWARD = pointwise_loss("l1_loss", "L1LossBackward0")
SMOOTH_L1_LOSS, SMOOTH_L1_LOSS_BACKWARD = pointwise_loss("smooth_l1_loss", "SmoothL1LossBackward0")
HUBER_LOSS, HUBER_LOSS_BACKWARD = pointwise_loss("huber_loss", "HuberLossBackward0")
BINARY_CROSS_ENTROPY, BINARY_CROSS_ENTROPY_BACKWARD = pointwise_loss(
    "binary_cross_entropy", "BinaryCrossEntropyBackward0", ("self", "target", "weight"))
BINARY_CROSS_ENTROPY_WITH_LOGITS, BINARY_CROSS_ENTROPY_WITH_LOGITS_BACKWARD = pointwise_loss(
    "binary_cross_entropy_with_logits", "BinaryCrossEntropyWithLogitsBackward0",
    ("self", "target", "weight", "pos_weight"))
KL_DIV, KL_DIV_BACKWARD = pointwise_loss("kl_div", "KlDivBackward0")


ENTRIES = [CROSS_ENTROPY, NLL_LOSS, NLL_LOSS2D, CROSS_ENTROPY_BACKWARD, NLL_LOSS_BACKWARD, MSE_LOSS,
           MSE_LOSS_BACKWARD, L1_LOSS, L1_LOSS_BACKWARD, SMOOTH_L1_LOSS, SMOOTH_L1_LOSS_BACKWARD, HUBER_LOSS,
           HUBER_LOSS_BACKWARD, BINARY_CROSS_ENTROPY, BINARY_CROSS_ENTROPY_BACKWARD,
           BINARY_CROSS_ENTROPY_WITH_LOGITS, BINARY_CROSS_ENTROPY_WITH_LOGITS_BACKWARD, KL_DIV, KL_DIV_BACKWARD]
