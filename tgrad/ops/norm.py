"""Normalization layers' ops: layer_norm, batch_norm, group_norm (tgrad/kernels/norm.py).

layer_norm normalizes each row over the trailing ``normalized_shape`` dims; batch_norm each channel over
(N, *) with batch statistics (training: the running ones updated in place) or the running ones; group_norm
each (sample, group of C / G channels), its backward reusing layer norm's fused backward op on the (N, G, K)
view: dx = layer_norm_backward(dy * w), dw = sum dy * xhat, db = sum dy over N and the spatial dims.  The
fused backward ops are table entries themselves, so double backward works.
"""
from .. import dtypes as D
from ..kernels import elementwise as KE
from ..kernels import norm as KN
from ..kernels.runtime import blas
from ..tensor import empty
from . import Op, call as _call
from ._rows import contig, float_check, opt_contig, size_str


# ------------------------------------------------------------------ layer_norm
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
    float_check(input, "LayerNormKernelImpl")
    M, K, nd = _ln_rows(input, normalized_shape)
    for t in (weight, bias):
        if t is not None and tuple(t.shape) != tuple(input.shape[input.dim() - nd:]):
            raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got weight of shape "
                               f"{list(t.shape)} and normalized_shape = {list(input.shape[input.dim() - nd:])}")
    y = empty(input.shape, input.dtype, input.device)
    return KN.layer_norm(contig(input), opt_contig(weight), opt_contig(bias), y, M, K, eps)


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
    if needs[1] or needs[2]:
        gw, gb = _call("layer_norm_param_backward", grad, x, normalized_shape=ns, eps=eps,
                       param_dtype=w.dtype if w is not None else x.dtype)
    return gx, gw if needs[1] else None, gb if needs[2] else None


def layer_norm_param_backward_forward(grad_output, input, *, normalized_shape, eps=1e-5, param_dtype=None):
    """(dw, db) = (sum dy xhat, sum dy) over the batch dims, shaped normalized_shape (ATen's cpu float32 order:
    kernels/norm.py layer_norm_param_backward, its thread split that of ``tgrad.get_num_threads()``), of
    ``param_dtype`` (default input's: a float32 weight of a bf16 input gets float32 sums of bf16 buffers)."""
    M, K, nd = _ln_rows(input, normalized_shape)
    shape = input.shape[input.dim() - nd:]
    pd = param_dtype or input.dtype
    dw, db = empty(shape, pd, input.device), empty(shape, pd, input.device)
    if M == 0 or K == 0:
        return KE.fill(dw, 0.0), KE.fill(db, 0.0)
    st = D.float64 if input.dtype.name == "float64" else D.float32
    mean, rstd = empty((M,), st, input.device), empty((M,), st, input.device)
    KN.layer_norm_param_backward(contig(grad_output), contig(input), mean, rstd, dw, db, M, K, eps, blas.threads())
    return dw, db


def layer_norm_param_double_backward(ctx, ggw, ggb):
    """dw = sum g xh, db = sum g over the batch dims: d/dg = ggw xh + ggb; d/dx = xh's vjp of g ggw
    (layer_norm_backward without weight: the normalization's Jacobian is symmetric)."""
    g, x = ctx.saved["grad_output"], ctx.saved["input"]
    ns, eps = ctx.attrs["normalized_shape"], ctx.attrs.get("eps", 1e-5)
    needs = ctx.needs_input_grad
    gg_g = gg_x = None
    if ggw is not None:
        if needs[0]:
            gg_g = ggw * _call("layer_norm", x, None, None, normalized_shape=ns, eps=eps)
        if needs[1]:
            gg_x = _call("layer_norm_backward", g * ggw, x, None, normalized_shape=ns, eps=eps)
    if ggb is not None and needs[0]:
        gg_g = ggb.expand(g.shape) if gg_g is None else gg_g + ggb
    return gg_g, gg_x


def layer_norm_backward_forward(grad_output, input, weight=None, *, normalized_shape, eps=1e-5):
    M, K, _ = _ln_rows(input, normalized_shape)
    dx = empty(input.shape, input.dtype, input.device)
    return KN.layer_norm_backward(contig(grad_output), contig(input), opt_contig(weight), dx, M, K, eps)


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


LAYER_NORM = Op("layer_norm", layer_norm_forward, layer_norm_backward_rule, "NativeLayerNormBackward0",
                inputs=("input", "weight", "bias"), save=("input", "weight"), variants=("function",))
LAYER_NORM_BACKWARD = Op("layer_norm_backward", layer_norm_backward_forward, layer_norm_double_backward,
                         "NativeLayerNormBackwardBackward0", inputs=("grad_output", "input", "weight"),
                         save=("grad_output", "input", "weight"))
LAYER_NORM_PARAM_BACKWARD = Op("layer_norm_param_backward", layer_norm_param_backward_forward,
                               layer_norm_param_double_backward, "NativeLayerNormBackwardBackward0",
                               inputs=("grad_output", "input"), save=("grad_output", "input"), outputs=2)


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
    float_check(input, "batch_norm")
    C, L = _bn_geometry(input)
    if training and input.numel() // max(C, 1) == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{size_str(input)}")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != C:
            raise RuntimeError(f"{name} should contain {C} elements not {t.numel()}")
    y = empty(input.shape, input.dtype, input.device)
    rm, rv = opt_contig(running_mean), opt_contig(running_var)
    KN.batch_norm(contig(input), opt_contig(weight), opt_contig(bias), rm, rv, y, C, L,
                  training, momentum if momentum is not None else 0.0, eps, blas.threads())
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
    return KN.batch_norm_backward(contig(grad_output), contig(input), opt_contig(weight),
                                  opt_contig(running_mean), opt_contig(running_var), dx, dw, db, C, L, training, eps,
                                  blas.threads())


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


BATCH_NORM = Op("batch_norm", batch_norm_forward, batch_norm_backward_rule, "NativeBatchNormBackward0",
                inputs=("input", "weight", "bias", "running_mean", "running_var"),
                save=("input", "weight", "running_mean", "running_var"), variants=("function",))
BATCH_NORM_BACKWARD = Op(
    "batch_norm_backward", batch_norm_backward_forward, batch_norm_double_backward,
    "NativeBatchNormBackwardBackward0", inputs=("grad_output", "input", "weight", "running_mean", "running_var"),
    save=("grad_output", "input", "weight", "running_mean", "running_var"), outputs=3)


# ------------------------------------------------------------------ group_norm
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
    return KN.group_norm(contig(input), opt_contig(weight), opt_contig(bias), y, N, num_groups, K, HW, eps)


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
    if (len(needs) > 1 and needs[1]) or (len(needs) > 2 and needs[2]):
        gw, gb = _call("group_norm_param_backward", grad, x, num_groups=G, eps=eps)
        gw = gw if needs[1] else None
        gb = gb if len(needs) > 2 and needs[2] else None
    return gx, gw, gb


def group_norm_param_backward_forward(grad_output, input, *, num_groups, eps=1e-5):
    """(dw, db) = (sum dy xhat, sum dy) per channel over N and the spatial dims (ATen's cpu float32 order:
    kernels/norm.py group_norm_param_backward)."""
    N, C, HW, K = _geometry(input, num_groups)
    dw, db = empty((C,), input.dtype, input.device), empty((C,), input.dtype, input.device)
    if N == 0 or HW == 0:
        return KE.fill(dw, 0.0), KE.fill(db, 0.0)
    st = D.float64 if input.dtype.name == "float64" else D.float32
    mean, rstd = empty((N * num_groups,), st, input.device), empty((N * num_groups,), st, input.device)
    return KN.group_norm_param_backward(contig(grad_output), contig(input), mean, rstd, dw, db, N, C, num_groups,
                                        HW, eps)


def group_norm_param_double_backward(ctx, ggw, ggb):
    """dw = sum g xh, db = sum g per channel: d/dg = ggw xh + ggb; d/dx = xh's vjp of g ggw (layer_norm_backward
    on the (N, G, K) rows)."""
    g, x = ctx.saved["grad_output"], ctx.saved["input"]
    G, eps = ctx.attrs["num_groups"], ctx.attrs.get("eps", 1e-5)
    N, C, HW, K = _geometry(x, G)
    cs = [1, C] + [1] * (x.dim() - 2)
    needs = ctx.needs_input_grad
    gg_g = gg_x = None
    if ggw is not None:
        if needs[0]:
            gg_g = ggw.reshape(cs) * _call("group_norm", x, None, None, num_groups=G, eps=eps)
        if needs[1]:
            gg_x = _call("layer_norm_backward", (g * ggw.reshape(cs)).reshape((N, G, K)), x.reshape((N, G, K)), None,
                         normalized_shape=(K,), eps=eps).reshape(x.shape)
    if ggb is not None and needs[0]:
        gb = ggb.reshape(cs)
        gg_g = gb.expand(g.shape) if gg_g is None else gg_g + gb
    return gg_g, gg_x


GROUP_NORM = Op("group_norm", group_norm_forward, group_norm_backward, "NativeGroupNormBackward0",
                inputs=("input", "weight", "bias"), save=("input", "weight"), variants=("function",))
GROUP_NORM_PARAM_BACKWARD = Op("group_norm_param_backward", group_norm_param_backward_forward,
                               group_norm_param_double_backward, "NativeGroupNormBackwardBackward0",
                               inputs=("grad_output", "input"), save=("grad_output", "input"), outputs=2)


ENTRIES = [LAYER_NORM, LAYER_NORM_BACKWARD, LAYER_NORM_PARAM_BACKWARD, BATCH_NORM, BATCH_NORM_BACKWARD, GROUP_NORM,
           GROUP_NORM_PARAM_BACKWARD]
