"""``tgrad.nn.functional``: PyTorch's functional forms.

Each function checks its arguments the way PyTorch does, then calls one op
of the table (``linear``, ``relu``, ``cross_entropy`` ... each a fused Triton
kernel pair).  Deprecated ``size_average``/``reduce`` arguments map to
``reduction`` with PyTorch's warning.
"""
import math
import warnings

import numpy as np

from .. import _creation, _functional, _nn_functional
from ..autograd import dispatch
from ..autograd.grad_mode import is_grad_enabled
from ..autograd.grad_mode import no_grad as _no_grad
from ..dtypes import int64 as _int64
from .._nn_functional import _op, cosine_similarity  # noqa: F401  (F.cosine_similarity: the same function)
from ..ops import TABLE
from ..ops.attention import _check as _sdpa_check
from ..random import default_generator_for
from ._reduction import _legacy_reduction  # noqa: F401  (also nn.modules.loss's)
from ._functional_more import (alpha_dropout, bilinear, celu, celu_,  # noqa: F401
                               cosine_embedding_loss, embedding_bag, feature_alpha_dropout, fold, gaussian_nll_loss,
                               glu, gumbel_softmax, hardshrink, hinge_embedding_loss,
                               local_response_norm, margin_ranking_loss, multi_margin_loss,
                               multilabel_soft_margin_loss, pairwise_distance, poisson_nll_loss, prelu, rms_norm,
                               rrelu, rrelu_, soft_margin_loss, softshrink, softsign, tanhshrink, threshold,
                               threshold_, triplet_margin_loss, triplet_margin_with_distance_loss, unfold)


def _op_(name, input, **attrs):
    """In-place form: writes into ``input``."""
    if name not in TABLE:
        raise NotImplementedError(f"tgrad.nn.functional: op '{name}' is not in the op table yet")
    return dispatch.call_inplace(name, input, **attrs)


def _act(name, input, inplace=False, **attrs):
    return _op_(name, input, **attrs) if inplace else _op(name, input, **attrs)


# ------------------------------------------------------------------ linear
def linear(input, weight, bias=None):
    """y = x W^T + b;  x (*, in), W (out, in), b (out,).  A 1-D W (in,) gives x @ W (+ b), shape (*,)."""
    if weight.dim() == 1 and input.dim() >= 1:      # PyTorch's composite: matmul with W itself (W.t() is W)
        y = input.matmul(weight)
        return y if bias is None else y + bias
    return _op("linear", input, weight, bias)


# ------------------------------------------------------------------ activations
def relu(input, inplace=False):
    return _act("relu", input, inplace)


def relu_(input):
    return _op_("relu", input)


def relu6(input, inplace=False):
    return _act("relu6", input, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _act("leaky_relu", input, inplace, negative_slope=negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    return _op_("leaky_relu", input, negative_slope=negative_slope)


def elu(input, alpha=1.0, inplace=False):
    return _act("elu", input, inplace, alpha=alpha)


def elu_(input, alpha=1.0):
    return _op_("elu", input, alpha=alpha)


def selu(input, inplace=False):
    return _act("selu", input, inplace)


def gelu(input, approximate="none"):
    return _op("gelu", input, approximate=approximate)


def silu(input, inplace=False):
    return _act("silu", input, inplace)


def mish(input, inplace=False):
    return _act("mish", input, inplace)


def softplus(input, beta=1.0, threshold=20.0):
    return _op("softplus", input, beta=beta, threshold=threshold)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _act("hardtanh", input, inplace, min_val=min_val, max_val=max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def hardsigmoid(input, inplace=False):
    return _act("hardsigmoid", input, inplace)


def hardswish(input, inplace=False):
    return _act("hardswish", input, inplace)


def logsigmoid(input):
    return _op("logsigmoid", input)


def sigmoid(input):
    return _op("sigmoid", input)


def tanh(input):
    return _op("tanh", input)


def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along ``dim`` (optionally computed in ``dtype``)."""
    if dim is None:
        dim = _softmax_dim("softmax", input.dim(), _stacklevel)
    return _nn_functional.softmax(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """x - logsumexp(x) along ``dim``."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim(), _stacklevel)
    return _nn_functional.log_softmax(input, dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x)."""
    if dim is None:
        dim = _softmax_dim("softmin", input.dim(), _stacklevel)
    return _op("softmax", -input, dim=dim, dtype=dtype)


# ------------------------------------------------------------------ dropout
def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1 / (1 - p); ``input`` itself when not
    training or p == 0."""
    return _nn_functional._dropout(input, p, training, inplace)


# ------------------------------------------------------------------ normalization, embedding
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last len(normalized_shape) dims."""
    return _nn_functional.layer_norm(input, normalized_shape, weight, bias, eps)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Normalize over the batch (and length) dims per channel (dim 1); in training the running
    statistics are updated in place: r = (1 - momentum) r + momentum * batch statistic (unbiased var)."""
    return _nn_functional._batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of ``weight`` at the indices ``input``; the row ``padding_idx`` gets no gradient.  ``max_norm``:
    the looked-up rows are first renormalized in place (``_embedding_renorm_``); ``scale_grad_by_freq``:
    each row's gradient is divided by how often the row occurs in ``input``."""
    return _nn_functional._embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse)


def one_hot(tensor, num_classes=-1):
    return _op("one_hot", tensor, num_classes=num_classes)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """x / max(||x||_p along dim, eps)."""
    res = _op("normalize", input, p=p, dim=dim, eps=eps)
    return res if out is None else out.copy_(res)


def pad(input, pad, mode="constant", value=None):
    """Padding of ``pad`` = (left, right) for the last dim, then the one before, ...; negative crops.
    mode 'constant' (``value``), or 'reflect' / 'replicate' / 'circular' over the last 1-3 dims, as an
    index_select per padded dim (its backward sums the repeated elements' gradients)."""
    if mode == "constant":
        return _op("pad", input, pad=tuple(pad), mode=mode, value=value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    pad = [int(p) for p in pad]
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    k = len(pad) // 2
    if k not in (1, 2, 3) or input.dim() not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.dim()}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    out = input
    for i in range(k):
        d = input.dim() - 1 - i
        out = out.index_select(d, input.new_tensor(_pad_index(input, d, pad[2 * i], pad[2 * i + 1], mode, i),
                                                   dtype=_int64))
    return out


def _pad_index(input, d, lo, hi, mode, i):
    """Source indices along dim d of a non-constant pad (lo, hi), PyTorch's semantics: reflect / replicate
    index the original dim, circular wraps around what is left after negative pads crop."""
    n = input.shape[d]
    if mode == "reflect" and (lo >= n or hi >= n):
        raise RuntimeError(f"Argument #{4 + 2 * i}: Padding size should be less than the corresponding input "
                           f"dimension, but got: padding ({lo}, {hi}) at dimension {d} of input "
                           f"[{', '.join(str(x) for x in input.shape)}]")
    if mode == "circular" and (lo > n or hi > n):
        raise RuntimeError("Padding value causes wrapping around more than once.")
    if n == 0 or n + lo + hi < 0:
        raise RuntimeError(f"{mode} padding: dim {d} of size {n} cannot be padded by ({lo}, {hi})")
    if mode == "circular":
        start, m = max(-lo, 0), n - max(-lo, 0) - max(-hi, 0)
        return [start + j % m for j in range(-max(lo, 0), m + max(hi, 0))] if m > 0 else []
    idx = range(-lo, n + hi)
    if mode == "replicate":
        return [min(max(j, 0), n - 1) for j in idx]
    return [2 * (n - 1) - abs(j) if abs(j) > n - 1 else abs(j) for j in idx]


_LEGACY_TYPES = {"int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
                 "float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16"}
_INTERP_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")
_LINEAR_NDIM = {"linear": 1, "bilinear": 2, "trilinear": 3}


def _interp_taps(n, m, scale, align_corners, cubic, f):
    """Source indices and weights (lists of m-arrays, one per tap) of resizing a dim of n to m, in the
    float type f as PyTorch computes them: src = dst * (n - 1) / (m - 1) (align_corners), else
    (dst + 0.5) * s - 0.5 with s = 1 / scale_factor or n / m (clamped at 0 unless cubic).  Linear: the two
    neighbours; cubic: the four around floor(src), clamped to the dim, with Keys' weights (A = -0.75)."""
    if align_corners:
        src = np.arange(m, dtype=f) * (f(n - 1) / f(m - 1) if m > 1 else f(0))
    else:
        s = f(1.0 / scale) if scale else f(n) / f(m)
        src = s * (np.arange(m, dtype=f) + f(0.5)) - f(0.5)
        if not cubic:
            src = np.maximum(src, f(0))
    if not cubic:
        i0 = np.minimum(src.astype(np.int64), n - 1)
        l1 = np.clip(src - i0.astype(f), f(0), f(1))
        return [i0, i0 + (i0 < n - 1)], [f(1) - l1, l1]
    i0 = np.minimum(np.floor(src).astype(np.int64), n - 1)
    t = np.clip(src - i0.astype(f), f(0), f(1))
    a = f(-0.75)

    def near(x):        # |x| <= 1
        return ((a + f(2)) * x - (a + f(3))) * x * x + f(1)

    def far(x):         # 1 < |x| < 2
        return ((a * x - f(5) * a) * x + f(8) * a) * x - f(4) * a
    weights = [far(t + f(1)), near(t), near(f(1) - t), far(f(1) - t + f(1))]
    return [np.clip(i0 - 1 + j, 0, n - 1) for j in range(4)], weights


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """Resize the spatial dims of (N, C, *spatial) input to ``size`` (or floor(in * scale_factor)).

    'nearest' / 'nearest-exact' gather src = floor(dst * s) / floor((dst + 0.5) * s); 'linear' / 'bilinear' /
    'trilinear' blend the two neighbours per dim, last dim first, with PyTorch's source index (scale s = in / out,
    1 / scale_factor, or (in - 1) / (out - 1) with align_corners); 'bicubic' (4-D input) blends the four
    neighbours with cubic convolution weights (A = -0.75), border taps clamped; 'area' is adaptive average pooling.
    Index_selects and products, so gradients flow to the input."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    nd = input.dim() - 2
    if nd not in (1, 2, 3) or mode not in _INTERP_MODES or (mode == "bicubic" and nd != 2):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                                  "the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
                                  f"nearest-exact (got {mode})")
    spatial = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        out = list(size) if isinstance(size, (list, tuple)) else [size] * nd
        if len(out) != nd:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with "
                             f"spatial dimensions of {spatial} and output size of {size}. Please provide input tensor "
                             "in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
        scales = [None] * nd
    elif scale_factor is not None:
        sf = list(scale_factor) if isinstance(scale_factor, (list, tuple)) else [scale_factor] * nd
        if len(sf) != nd:
            raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {spatial} and scale_factor of shape {scale_factor}. Please "
                             "provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in "
                             "(s1, s2, ...,sK) format.")
        out = [math.floor(float(n) * s) for n, s in zip(spatial, sf)]
        scales = [None] * nd if recompute_scale_factor else [float(s) for s in sf]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if mode in _LINEAR_NDIM and _LINEAR_NDIM[mode] != nd:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {_LINEAR_NDIM[mode] + 2}D input")
    if antialias:
        raise NotImplementedError(f"tgrad: interpolate(mode={mode!r}, antialias={antialias}) is not supported yet")
    if mode == "area":
        if nd == 3:
            raise NotImplementedError("tgrad: interpolate(mode='area') of 5-D input is not supported yet")
        return (adaptive_avg_pool1d if nd == 1 else adaptive_avg_pool2d)(input, out)
    f = np.float64 if input.dtype.is_floating_point and input.element_size() == 8 else np.float32
    x = input
    for i in reversed(range(nd)):          # the last dim first, as PyTorch's separable kernel blends
        d, n, m = i + 2, spatial[i], out[i]
        if mode.startswith("nearest"):
            s = f(1.0 / scales[i]) if scales[i] else f(n) / f(m)
            dst = np.arange(m, dtype=f) + (f(0.5) if mode == "nearest-exact" else f(0))
            src = np.minimum(np.floor(dst * s).astype(np.int64), n - 1)
            x = x.index_select(d, input.new_tensor(src.tolist(), dtype=_int64))
            continue
        taps, weights = _interp_taps(n, m, scales[i], align_corners, mode == "bicubic", f)
        shape = [1] * input.dim()
        shape[d] = m
        y = None
        for t, w in zip(taps, weights):     # sum_j x[taps_j] * w_j, left to right as PyTorch's kernel
            t = x.index_select(d, input.new_tensor(t.tolist(), dtype=_int64)) * \
                input.new_tensor(w.tolist()).reshape(shape)
            y = t if y is None else y + t
        x = y
    return x


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of interpolate."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: interpolate(mode='nearest')."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: interpolate(mode='bilinear', align_corners=True)."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def pixel_shuffle(input, upscale_factor):
    """(*, C r^2, H, W) -> (*, C, H r, W r): out[..., c, h r + i, w r + j] = in[..., c r^2 + i r + j, h, w]."""
    r = int(upscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *b, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    nb = len(b)
    x = input.reshape(*b, c // (r * r), r, r, h, w)
    x = x.permute(*range(nb), nb, nb + 3, nb + 1, nb + 4, nb + 2)
    return x.reshape(*b, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H r, W r) -> (*, C r^2, H, W), the inverse of pixel_shuffle."""
    r = int(downscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *b, c, h, w = input.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but "
                           f"input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but "
                           f"input.size(-1)={w} is not divisible by {r}")
    nb = len(b)
    x = input.reshape(*b, c, h // r, r, w // r, r)
    x = x.permute(*range(nb), nb, nb + 2, nb + 4, nb + 1, nb + 3)
    return x.reshape(*b, c * r * r, h // r, w // r)


# ------------------------------------------------------------------ losses
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """log_softmax over the class dim (1, or 0 for 1-D input) + negative log-likelihood, fused.
    ``target``: class indices (int64) or class probabilities (same shape as input)."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    return _op("cross_entropy", input, target, weight, ignore_index=ignore_index, reduction=reduction,
               label_smoothing=label_smoothing)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """-input[n, target[n]] * weight[target[n]], averaged over the weights of non-ignored targets."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    return _op("nll_loss", input, target, weight, ignore_index=ignore_index, reduction=reduction)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-w (y log x + (1 - y) log(1 - x)), logs clamped at -100."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    return _op("binary_cross_entropy", input, target, weight, reduction=reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """binary_cross_entropy(sigmoid(x), y) computed stably; ``pos_weight`` scales the positive term."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    return _op("binary_cross_entropy_with_logits", input, target, weight, pos_weight, reduction=reduction)


def _weighted(loss, weight, input, reduction, mean_by_weight):
    """PyTorch's element-weighted regression losses: (loss * weight) reduced; mean divides by sum(weight)
    (mse, l1) or by the element count (huber)."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    w = loss * weight
    if reduction == "none":
        return w
    if reduction == "sum":
        return w.sum()
    if reduction == "mean":
        return w.sum() / weight.sum() if mean_by_weight else w.mean()
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """(x - y)^2, reduced."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if weight is not None:
        return _weighted(_op("mse_loss", input, target, reduction="none"), weight, input, reduction, True)
    return _op("mse_loss", input, target, reduction=reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """|x - y|, reduced."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if weight is not None:
        return _weighted(_op("l1_loss", input, target, reduction="none"), weight, input, reduction, True)
    return _op("l1_loss", input, target, reduction=reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 (x - y)^2 / beta where |x - y| < beta, else |x - y| - 0.5 beta."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if beta == 0.0:
        return _op("l1_loss", input, target, reduction=reduction)
    return _op("smooth_l1_loss", input, target, reduction=reduction, beta=beta)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 (x - y)^2 where |x - y| < delta, else delta (|x - y| - 0.5 delta)."""
    if weight is not None:
        return _weighted(_op("huber_loss", input, target, reduction="none", delta=delta), weight, input, reduction,
                         False)
    return _op("huber_loss", input, target, reduction=reduction, delta=delta)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target (log target - input) with ``input`` log-probabilities; 'batchmean' divides the sum by the batch."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    return _op("kl_div", input, target, reduction=reduction, log_target=log_target)


# ------------------------------------------------------------------ attention
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(query @ key^T * scale + mask) @ value, with dropout on the attention weights.

    query (*, L, E), key (*, S, E), value (*, S, Ev) -> (*, L, Ev); scale defaults to 1 / sqrt(E).  One fused
    flash-attention kernel (no L x S matrix in memory).  A float ``attn_mask`` that requires grad takes
    PyTorch's math path instead (matmul, softmax, matmul), which differentiates the mask too.
    """
    if attn_mask is not None and attn_mask.requires_grad and attn_mask.dtype.is_floating_point \
            and is_grad_enabled():
        return _sdpa_math(query, key, value, attn_mask, dropout_p, scale, enable_gqa)
    if dropout_p > 0 and query.device.type == "cpu":
        # PyTorch's cpu path for a dropout: the math path, whose dropout draws the cpu generator's bernoulli_
        _sdpa_check(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa)
        return _sdpa_math(query, key, value, _sdpa_bias(query, key, attn_mask, is_causal), dropout_p, scale,
                          enable_gqa)
    rng = {}
    if dropout_p > 0:       # a counter per attention weight: (query rows) x S
        n = (query.numel() // max(query.shape[-1], 1)) * key.shape[-2]
        rng = dict(zip(("seed", "offset"), default_generator_for(query.device)._take(n)))
    return _op("scaled_dot_product_attention", query, key, value, attn_mask, dropout_p=dropout_p,
               is_causal=is_causal, scale=scale, enable_gqa=enable_gqa, **rng)[0]


def _sdpa_math(query, key, value, attn_mask, dropout_p, scale, enable_gqa):
    if enable_gqa and query.dim() >= 3 and key.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        rep = query.shape[-3] // key.shape[-3]
        key, value = key.repeat_interleave(rep, -3), value.repeat_interleave(rep, -3)
    s = scale if scale is not None else query.shape[-1] ** -0.5
    w = (query @ key.transpose(-2, -1)) * s
    if attn_mask is not None:
        w = w + attn_mask
    w = softmax(w, dim=-1)
    if dropout_p > 0:
        w = dropout(w, dropout_p)
    return w @ value


def _sdpa_bias(query, key, attn_mask, is_causal):
    """The additive float mask of ``attn_mask`` (bool: True = attend) and ``is_causal``; None when neither."""
    L, S = query.shape[-2], key.shape[-2]
    bias = None
    if is_causal:
        bias = query.new_zeros((L, S)).masked_fill(query.new_ones((L, S), dtype=bool).tril().logical_not(),
                                                   float("-inf"))
    if attn_mask is not None:
        m = attn_mask
        if m.dtype == bool:
            m = query.new_zeros(m.shape).masked_fill(m.logical_not(), float("-inf"))
        bias = m if bias is None else bias + m
    return bias


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A bool mask (True = masked out) as an additive float mask of ``target_type`` (-inf where masked)."""
    if mask is None:
        return None
    if mask.dtype.name != "bool" and not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and other_type != mask.dtype:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for both "
                      "instead.")
    if mask.dtype.name == "bool":
        from .._creation import zeros_like
        return zeros_like(mask, dtype=target_type).masked_fill_(mask, float("-inf"))
    return mask


def _in_projection_packed(q, k, v, w, b=None):
    E = q.size(-1)
    if k is v:
        if q is k:      # self-attention: one projection, then split
            proj = linear(q, w, b)
            proj = proj.unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
            return proj[0], proj[1], proj[2]
        w_q, w_kv = w.split([E, E * 2])
        b_q, b_kv = (None, None) if b is None else b.split([E, E * 2])
        q_proj = linear(q, w_q, b_q)
        kv = linear(k, w_kv, b_kv).unflatten(-1, (2, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
        return q_proj, kv[0], kv[1]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """PyTorch's multi-head attention on (L, N, E) query, (S, N, kdim) key, (S, N, vdim) value (or unbatched
    (L, E) ...).  Masks: bool True = masked out, float = added; key_padding_mask (N, S), attn_mask (L, S) or
    (N * num_heads, L, S).  Returns (output (L, N, E), weights (N, L, S) averaged / (N, H, L, S), or None)."""
    from .._creation import zeros
    from .._functional import cat
    is_batched = query.dim() == 3
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       None if attn_mask is None else attn_mask.dtype, "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None        # sdpa's own causal mask
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if not use_separate_proj_weight:
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = linear(query, q_proj_weight, b_q), linear(key, k_proj_weight, b_k), linear(value, v_proj_weight, b_v)
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                   f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                   f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None and bias_v is not None:
        k = cat([k, bias_k.repeat(1, bsz, 1)])
        v = cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.view(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_k is None else static_k
    v = v.view(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_v is None else static_v
    if add_zero_attn:
        zshape = (bsz * num_heads, 1, head_dim)
        k = cat([k, zeros(zshape, dtype=k.dtype, device=k.device)], dim=1)
        v = cat([v, zeros(zshape, dtype=v.dtype, device=v.device)], dim=1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    src_len = k.size(1)
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                                 f"{tuple(key_padding_mask.shape)}")
        key_padding_mask = key_padding_mask.view(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1) \
            .reshape(bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask
    if not training:
        dropout_p = 0.0
    if need_weights:
        q_scaled = q * (1.0 / head_dim) ** 0.5
        if attn_mask is not None:
            w = attn_mask.baddbmm(q_scaled, k.transpose(-2, -1))
        else:
            w = q_scaled.bmm(k.transpose(-2, -1))
        w = softmax(w, dim=-1)
        if dropout_p > 0.0:
            w = dropout(w, p=dropout_p)
        out = w.bmm(v)
        out = out.transpose(0, 1).contiguous().view(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias).view(tgt_len, bsz, out.size(1))
        w = w.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            w = w.mean(dim=1)
        if not is_batched:
            out, w = out.squeeze(1), w.squeeze(0)
        return out, w
    if attn_mask is not None:
        attn_mask = attn_mask.unsqueeze(0) if attn_mask.size(0) == 1 and attn_mask.dim() == 3 \
            else attn_mask.view(bsz, num_heads, -1, src_len)
    q = q.view(bsz, num_heads, tgt_len, head_dim)
    k = k.view(bsz, num_heads, src_len, head_dim)
    v = v.view(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).contiguous().view(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).view(tgt_len, bsz, out.size(1))
    if not is_batched:
        out = out.squeeze(1)
    return out, None
# ------------------------------------------------------------------ convolution
def _ntuple(v, n, name="value"):
    if isinstance(v, (tuple, list)):
        if len(v) == 1 and n > 1:
            return tuple(v) * n
        return tuple(int(a) for a in v)
    return (int(v),) * n


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


# ------------------------------------------------------------------ pooling
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
                           f"{_LEGACY_TYPES.get(indices.dtype.name, indices.dtype.name)}")
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


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    return adaptive_max_pool3d(input, output_size, True)


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


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    return adaptive_max_pool2d(input, output_size, True)


# ------------------------------------------------------------------ channel dropout
def _channel_dropout(input, p, training, inplace, batched_dim, name):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    batched = input.dim() == batched_dim
    shape = tuple(input.shape[:2] if batched else input.shape[:1]) + (1,) * (input.dim() - (2 if batched else 1))
    if p == 1.0:
        keep = input.new_zeros(())
    else:       # PyTorch's feature noise: bernoulli_(1 - p) of a (N, C, 1, ...) tensor, then div_(1 - p)
        keep = input.new_empty(shape).bernoulli_(1.0 - p).div_(1.0 - p)
    return input.mul_(keep) if inplace else input * keep


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) / (C, L) input with probability p, scale the rest by 1 / (1 - p)."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _channel_dropout(input, p, training, inplace, 3, "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) input with probability p, scale the rest by 1 / (1 - p)."""
    if input.dim() not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.dim()}-D input to dropout2d, which is deprecated and will "
                      "result in an error in a future release. To retain the behavior and silence this warning, "
                      "please use dropout instead. Note that dropout2d exists to provide channel-wise dropout on "
                      "inputs with 2 spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 3D or 4D inputs).", stacklevel=2)
    if input.dim() == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a "
                      "batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, "
                      "please switch to using dropout1d instead.", stacklevel=2)
    return _channel_dropout(input, p, training, inplace, input.dim() if input.dim() != 4 else 4, "dropout2d")


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) / (C, D, H, W) input with probability p, scale the rest by
    1 / (1 - p)."""
    if input.dim() not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.dim()}-D input to dropout3d, which is deprecated and will "
                      "result in an error in a future release. To retain the behavior and silence this warning, "
                      "please use dropout instead. Note that dropout3d exists to provide channel-wise dropout on "
                      "inputs with 3 spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 4D or 5D inputs).", stacklevel=2)
    return _channel_dropout(input, p, training, inplace, 5, "dropout3d")


# ------------------------------------------------------------------ group / instance normalization
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalize each (sample, group of C / num_groups channels) of (N, C, *) input, then w[c] x + b[c]."""
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    return _op("group_norm", input, weight, bias, num_groups=num_groups, eps=eps)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalize each (sample, channel) over its spatial dims (a group norm with one channel per group);
    running statistics, if given, move by ``momentum`` towards the batch mean of the per-instance mean and
    unbiased variance; ``use_input_stats=False`` normalizes with the running statistics instead."""
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    n = 1
    for s in input.shape[2:]:
        n *= s
    if n <= 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {tuple(input.shape)}")
    if running_mean is not None or running_var is not None:
        dims = tuple(range(2, input.dim()))
        with _no_grad():
            x = input.detach()
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(x.mean(dims).mean(0) * momentum)
            if running_var is not None:
                running_var.mul_(1 - momentum).add_(x.var(dims).mean(0) * momentum)
    return _op("group_norm", input, weight, bias, num_groups=input.shape[1], eps=eps)


# ------------------------------------------------------------------ spatial transformers
_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. Please "
                  "specify align_corners=True if the old behavior is desired. See the documentation of grid_sample for "
                  "details.")


def affine_grid(theta, size, align_corners=None):
    """Sampling grid (N, H, W, 2) of the 2-D affine maps theta (N, 2, 3): grid[n, h, w] = theta[n] @ (x_w, y_h, 1)
    with x, y evenly spaced in [-1, 1] (pixel corners, align_corners) or at pixel centres (scaled by
    (steps - 1) / steps).  A bmm of tgrad ops, so theta gets gradients."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) != 4:
        raise NotImplementedError("tgrad: affine_grid of 5-D sizes (3-D affine maps) is not supported yet" if
                                  len(size) == 5 else "affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {tuple(size)}.")
    if theta.dim() != 3 or tuple(theta.shape[-2:]) != (2, 3):
        raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {tuple(size)}. Got "
                         f"{theta.shape}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {tuple(size)}")
    n, _, h, w = size

    def steps(m):
        if m == 1:
            return theta.new_zeros((1,))
        r = _creation.linspace(-1, 1, m, dtype=theta.dtype, device=theta.device)
        return r if align_corners else r * (m - 1) / m
    xs, ys = steps(w), steps(h)
    base = _functional.stack([xs.reshape(1, w).expand(h, w), ys.reshape(h, 1).expand(h, w),
                              theta.new_ones((h, w))], -1)
    return base.reshape(1, h * w, 3).expand(n, h * w, 3).bmm(theta.transpose(1, 2)).reshape(n, h, w, 2)


def _grid_coord(g, size, padding_mode, align_corners):
    """Pixel coordinate of normalized grid values along a dim of ``size``: unnormalized ((g + 1) (size - 1) / 2,
    or (g + 1) size / 2 - 0.5), then clipped (border) or reflected and clipped (reflection)."""
    x = (g + 1) * ((size - 1) / 2) if align_corners else (g + 1) * (size / 2) - 0.5
    if padding_mode == "reflection":
        lo, hi = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        if lo == hi:
            return x * 0
        mn, span = lo / 2, (hi - lo) / 2
        a = (x - mn).abs()
        extra = a.fmod(span)
        flips = (a / span).floor()
        x = _functional.where(flips.fmod(2) == 0, extra + mn, span - extra + mn)
    if padding_mode != "zeros":
        x = x.clamp(0, size - 1)
    return x


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """out[n, c, h, w] = input[n, c] sampled at grid[n, h, w] = (x, y) in [-1, 1] (left/top to right/bottom):
    'bilinear' blends the four neighbours, 'nearest' takes the nearest pixel (ties to even); outside the input
    'zeros' reads 0, 'border' clamps, 'reflection' mirrors.  Gathers and products of tgrad ops, so input and grid
    both get gradients.  input (N, C, H, W), grid (N, OH, OW, 2)."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if grid.shape[-1] != input.dim() - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.dim() - 2} in last dimension, but got "
                           f"grid with sizes {list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if input.dim() != 4 or mode == "bicubic":
        raise NotImplementedError(f"tgrad: grid_sample of {input.dim()}-D input with mode={mode!r} is not supported "
                                  "yet (4-D bilinear / nearest are)")
    n, c, h, w = input.shape
    oh, ow = grid.shape[1:3]
    x = _grid_coord(grid[..., 0], w, padding_mode, align_corners)
    y = _grid_coord(grid[..., 1], h, padding_mode, align_corners)
    flat = input.reshape(n, c, h * w)

    def at(ix, iy):
        """input at integer-valued coordinates (N, OH, OW); 0 outside."""
        inside = (ix >= 0) & (ix <= w - 1) & (iy >= 0) & (iy <= h - 1)
        idx = (iy.clamp(0, h - 1) * w + ix.clamp(0, w - 1)).to(_int64).reshape(n, 1, oh * ow).expand(n, c, oh * ow)
        return _functional.where(inside.unsqueeze(1), flat.gather(2, idx).reshape(n, c, oh, ow), 0.0)
    if mode == "nearest":
        return at(x.round(), y.round())
    x0, y0 = x.floor(), y.floor()
    we, sn = x - x0, y - y0              # weights of the east column / south row
    ww, nn_ = 1 - we, 1 - sn
    return (at(x0, y0) * (nn_ * ww).unsqueeze(1) + at(x0 + 1, y0) * (nn_ * we).unsqueeze(1) +
            at(x0, y0 + 1) * (sn * ww).unsqueeze(1) + at(x0 + 1, y0 + 1) * (sn * we).unsqueeze(1))
