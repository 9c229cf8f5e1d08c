"""More ``nn.functional`` forms, each a composition of Tensor ops (their gradients come from those ops; embedding_bag
checks its arguments and calls its op):
rms_norm, local_response_norm, the activations celu/prelu/rrelu/threshold/tanhshrink/softsign/softshrink/
hardshrink/glu, pairwise_distance, bilinear, embedding_bag, unfold/fold, gumbel_softmax and the margin,
embedding and likelihood losses.  ``nn.functional`` re-exports them."""
import math
import warnings

import numpy as np

from .. import dtypes as D
from .._creation import _host_uniform, tensor, zeros
from .._nn_functional import _embedding_renorm_, _op
from .._functional import cat
from ..autograd import grad_mode
from ..random import default_generator_for
from ._reduction import _legacy_reduction


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduction_arg(size_average, reduce, reduction):
    return _legacy_reduction(size_average, reduce) if size_average is not None or reduce is not None else reduction


# ------------------------------------------------------------------ normalization
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) * weight over the trailing ``normalized_shape`` dims (eps None: the dtype's
    machine epsilon)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    n = len(shape)
    if tuple(input.shape[input.dim() - n:]) != shape or input.dim() < n:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*{', '.join(str(s) for s in shape)}], but got input of size{list(input.shape)}")
    if eps is None:
        eps = D.finfo(input.dtype).eps
    dims = tuple(range(input.dim() - n, input.dim()))
    out = input * (input * input).mean(dims, keepdim=True).add(eps).rsqrt()
    return out * weight if weight is not None else out


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x^2 over the ``size`` channels c - size//2 .. c + (size-1)//2, zero padded)^beta."""
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input (got {dim} "
                         "dimensions)")
    if input.numel() == 0:
        return input
    sq = input.mul(input)
    c = input.shape[1]
    pad = lambda n: sq.new_zeros((sq.shape[0], n) + tuple(sq.shape[2:]))
    padded = cat([pad(size // 2), sq, pad((size - 1) // 2)], 1)
    div = padded.narrow(1, 0, c)
    for j in range(1, size):
        div = div + padded.narrow(1, j, c)
    return input / (div / size).mul(alpha).add(k).pow(beta)


# ------------------------------------------------------------------ activations
def _inplace(input, out, inplace):
    return input.copy_(out) if inplace else out


def _original(input, inplace):
    """What an in-place composite computes from: a recorded clone when its parts save their input for
    backward (PyTorch's original_self; else the final copy_ into input would invalidate them)."""
    return input.clone() if inplace and input.requires_grad and grad_mode.is_grad_enabled() else input


def celu(input, alpha=1.0, inplace=False):
    """x for x > 0, alpha (exp(x / alpha) - 1) otherwise."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    x = _original(input, inplace)
    neg = (x.clamp(max=0) / alpha).expm1() * alpha
    return _inplace(input, x.where(x > 0, neg), inplace)


def celu_(input, alpha=1.0):
    return celu(input, alpha, True)


def prelu(input, weight):
    """x for x > 0, weight[c] x otherwise (c: dim 1, the channel, when input has 2+ dims)."""
    if weight.numel() != 1:
        if input.dim() == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.dim() >= 2 else 1
        if weight.numel() != channels:
            raise RuntimeError("Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{weight.numel()} and channel size = {channels}.")
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}")
    w = weight.reshape((1, -1) + (1,) * (input.dim() - 2)) if input.dim() >= 2 else weight.reshape(-1)[0] \
        if weight.numel() == 1 else weight
    return input.where(input > 0, w * input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Leaky relu with slope (lower + upper) / 2 in eval; in training each x <= 0 gets a slope drawn uniformly
    in [lower, upper] (PyTorch's cpu draws: one double uniform per such element, in order; a cuda generator
    draws tgrad's Philox uniforms for every element)."""
    if not training:        # leaky relu: slope (lower + upper) / 2 for x <= 0
        x = _original(input, inplace)
        return _inplace(input, x.where(x > 0, x * ((lower + upper) / 2)), inplace)
    with grad_mode.no_grad():
        g = default_generator_for(input.device)
        if g._mt is None:
            slope = input.new_empty(input.shape).uniform_(lower, upper).masked_fill(input > 0, 1.0)
        else:
            neg = (input <= 0).reshape(-1).cpu().numpy()
            r = np.ones(neg.size)
            r[neg] = (upper - lower) * _host_uniform(g, int(neg.sum())) + lower
            slope = tensor(r.astype(input.dtype.np).reshape(tuple(input.shape)), device=input.device)
    return _inplace(input, _original(input, inplace) * slope, inplace)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, True)


def _threshold(input, th, value, inplace):
    return _inplace(input, input.masked_fill(~(input > th), value), inplace)


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else ``value``."""
    return _threshold(input, threshold, value, inplace)


def threshold_(input, threshold, value):
    return _threshold(input, threshold, value, True)


def tanhshrink(input):
    """x - tanh(x)."""
    return input - input.tanh()


def softsign(input):
    """x / (1 + |x|)."""
    return input / (input.abs() + 1)


def softshrink(input, lambd=0.5):
    """x - lambd for x > lambd, x + lambd for x < -lambd, 0 between."""
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return _op("softshrink", input, lambd=lambd)


def hardshrink(input, lambd=0.5):
    """x where |x| > lambd, else 0."""
    return _op("hardshrink", input, lambd=lambd)


def glu(input, dim=-1):
    """a * sigmoid(b) with (a, b) the two halves of ``input`` along ``dim``."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim % input.dim()
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {input.shape[d]}")
    a, b = input.chunk(2, d)
    return a * b.sigmoid()


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + g) / tau) with g = -log(Exp(1) draws) (PyTorch's draws); ``hard``: the one-hot of the
    argmax in the forward, the soft gradient in the backward (straight-through)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    with grad_mode.no_grad():
        gumbels = -logits.new_empty(logits.shape).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = logits.new_zeros(logits.shape).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


# ------------------------------------------------------------------ distances and bilinear maps
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last dim."""
    d = max(x1.dim(), x2.dim(), 1) - 1
    return (x1 - x2 + eps).norm(p, d, keepdim)


def bilinear(input1, input2, weight, bias=None):
    """out[..., o] = x1 W[o] x2 + b[o]: (..., I) x (..., J) with W (O, I, J) -> (..., O)."""
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}")
    for a, b in zip(input1.shape[:-1], input2.shape[:-1]):
        if a != b:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match: got {a} and {b}")
    for k, x in ((1, input1), (2, input2)):
        if x.shape[-1] != weight.shape[k]:
            raise RuntimeError(f"bilinear(): input{k} size does not match weight size: got {x.shape[-1]} but "
                               f"expected {weight.shape[k]}")
    if bias is not None and bias.shape[0] != weight.shape[0]:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {bias.shape[0]} but expected "
                           f"{weight.shape[0]}")
    o, i, j = weight.shape
    t = input1.matmul(weight.permute(1, 0, 2).reshape(i, o * j)).unflatten(-1, (o, j))
    out = (t * input2.unsqueeze(-2)).sum(-1)
    return out + bias if bias is not None else out


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """The sum, mean or max of the embedding rows of each bag: the rows of a 2-D ``input`` (B, N), or the
    stretches of a 1-D ``input`` starting at ``offsets``; ``per_sample_weights`` scale the rows (sum only);
    indices equal to ``padding_idx`` are left out."""
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, but got {mode}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                                  "on GitHub.")
    if per_sample_weights is not None and tuple(per_sample_weights.shape) != tuple(input.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({tuple(per_sample_weights.shape)}) is not None, "
                         f"then it must have the same shape as the input ({tuple(input.shape)})")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        nb, per = input.shape
        offsets = tensor(np.arange(nb) * per, device=input.device)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
        include_last_offset = False
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        if offsets.device.type == "cpu" and offsets.numel() and int(offsets[0]) != 0:
            raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                               f"from position 0. However, got {int(offsets[0])}")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if padding_idx is not None:
        if not -weight.shape[0] <= padding_idx < weight.shape[0]:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= weight.shape[0]
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    out = _op("embedding_bag", weight, input, offsets, per_sample_weights, mode=("sum", "mean", "max").index(mode),
              padding_idx=padding_idx, include_last_offset=include_last_offset,
              scale_grad_by_freq=bool(scale_grad_by_freq), **({"sparse": True} if sparse else {}))
    return out[0]


# ------------------------------------------------------------------ unfold / fold (im2col / col2im)
def _pair(v, name):
    v = (v, v) if isinstance(v, int) else tuple(v)
    if len(v) != 2:
        raise ValueError(f"{name} must be an int or a pair of ints")
    return v


def _im2col_index(hp, wp, kernel_size, dilation, stride, device):
    """(indices into the flattened padded plane (kh*kw*L,), number of blocks (oh, ow))."""
    (kh, kw), (dh, dw), (sh, sw) = kernel_size, dilation, stride
    oh = (hp - (dh * (kh - 1) + 1)) // sh + 1
    ow = (wp - (dw * (kw - 1) + 1)) // sw + 1
    r = (np.arange(kh) * dh)[:, None, None, None] + (np.arange(oh) * sh)[None, None, :, None]
    c = (np.arange(kw) * dw)[None, :, None, None] + (np.arange(ow) * sw)[None, None, None, :]
    return tensor((r * wp + c).reshape(-1), dtype=D.int64, device=device), (oh, ow)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col: the sliding kernel_size blocks of (N, C, H, W) as columns (N, C*kh*kw, L) (unbatched
    (C, H, W) -> (C*kh*kw, L))."""
    if input.dim() < 3:       # PyTorch's im2col reads dim 2 first
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(input.dim(), 1)}, "
                         f"{max(input.dim(), 1) - 1}], but got 2)")
    if input.dim() > 4:
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but "
                           f"got:{list(input.shape)}")
    k, d, p, s = (_pair(kernel_size, "kernel_size"), _pair(dilation, "dilation"), _pair(padding, "padding"),
                  _pair(stride, "stride"))
    x = input if input.dim() == 4 else input.unsqueeze(0)
    n, c, h, w = x.shape
    if p != (0, 0):
        x = _op("pad", x, pad=(p[1], p[1], p[0], p[0]), mode="constant", value=0.0)
    hp, wp = h + 2 * p[0], w + 2 * p[1]
    idx, (oh, ow) = _im2col_index(hp, wp, k, d, s, x.device)
    if oh < 1 or ow < 1:
        raise RuntimeError(f"Given input with spatial size ({h}, {w}), kernel_size=({k[0]}, {k[1]}), "
                           f"dilation=({d[0]}, {d[1]}), padding=({p[0]}, {p[1]}), calculated shape of the array "
                           f"of sliding blocks as ({oh}, {ow}), but its components must be at least one.")
    cols = x.reshape(n, c, hp * wp).index_select(2, idx).reshape(n, c * k[0] * k[1], oh * ow)
    return cols if input.dim() == 4 else cols.squeeze(0)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im: the columns (N, C*kh*kw, L) summed back into (N, C, H, W) (overlaps add up)."""
    if input.dim() not in (2, 3):
        raise NotImplementedError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported "
                                  f"(got {input.dim()}D)")
    osz, k, d, p, s = (_pair(output_size, "output_size"), _pair(kernel_size, "kernel_size"),
                       _pair(dilation, "dilation"), _pair(padding, "padding"), _pair(stride, "stride"))
    x = input if input.dim() == 3 else input.unsqueeze(0)
    n, ckk, length = x.shape
    if ckk % (k[0] * k[1]):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
                           f"but got input.size(1)={ckk} and kernel_size=({k[0]}, {k[1]}).")
    hp, wp = osz[0] + 2 * p[0], osz[1] + 2 * p[1]
    idx, (oh, ow) = _im2col_index(hp, wp, k, d, s, x.device)
    if oh * ow != length:
        raise RuntimeError(f"Given output_size=({osz[0]}, {osz[1]}), kernel_size=({k[0]}, {k[1]}), "
                           f"dilation=({d[0]}, {d[1]}), padding=({p[0]}, {p[1]}), stride=({s[0]}, {s[1]}), expected "
                           f"size of input's dimension 2 to match the calculated number of sliding blocks {oh} * "
                           f"{ow} = {oh * ow}, but got input.size(2)={length}.")
    c = ckk // (k[0] * k[1])
    plane = zeros(n, c, hp * wp, dtype=x.dtype, device=x.device).index_add(2, idx, x.reshape(n, c, ckk // c * length))
    out = plane.reshape(n, c, hp, wp)[:, :, p[0]:p[0] + osz[0], p[1]:p[1] + osz[1]]
    return out if input.dim() == 3 else out.squeeze(0)


# ------------------------------------------------------------------ losses
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """max(0, -y (x1 - x2) + margin), reduced."""
    reduction = _reduction_arg(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """x where y == 1, max(0, margin - x) where y == -1, reduced."""
    reduction = _reduction_arg(size_average, reduce, reduction)
    margin_clamp = (margin - input).clamp(min=0)
    out = margin_clamp.masked_fill(target == 1, 0.0) + input.masked_fill(target == -1, 0.0)
    return _reduce(out, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-y x)), reduced."""
    reduction = _reduction_arg(size_average, reduce, reduction)
    return _reduce((-input * target).exp().log1p(), reduction)


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """1 - cos(x1, x2) where y == 1, max(0, cos(x1, x2) - margin) where y == -1, reduced."""
    reduction = _reduction_arg(size_average, reduce, reduction)
    if input1.dim() not in (1, 2) or input1.shape != input2.shape:
        raise RuntimeError(f"cosine_embedding_loss: expected 1D or 2D inputs of the same shape, got "
                           f"{list(input1.shape)} and {list(input2.shape)}")
    d = input1.dim() - 1
    prod = (input1 * input2).sum(d)
    mag1 = (input1 * input1).sum(d) + 1e-12
    mag2 = (input2 * input2).sum(d) + 1e-12
    cos = prod / (mag1 * mag2).sqrt()
    pos = (1 - cos).masked_fill(target != 1, 0.0)
    neg = (cos - margin).clamp(min=0).masked_fill(target != -1, 0.0)
    return _reduce(pos + neg, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(0, margin + d(a, p) - d(a, n)) with d the pairwise p-distance (swap: d(a, n) -> min(d(a, n),
    d(p, n))), reduced."""
    reduction = _reduction_arg(size_average, reduce, reduction)
    a, po, ne = anchor.dim(), positive.dim(), negative.dim()
    if not (a == po == ne):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a}D, positive {po}D, and negative {ne}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + d_pos - d_neg).clamp(min=0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """triplet_margin_loss with any ``distance_function`` (default: pairwise_distance)."""
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos, d_neg = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(dist(positive, negative))
    return _reduce((margin + d_pos - d_neg).clamp(min=0), reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """exp(x) - y x (log_input) or x - y log(x + eps); ``full`` adds Stirling's y log y - y + log(2 pi y)/2
    where y > 1; reduced."""
    reduction = _reduction_arg(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        t = target.masked_fill(target <= 1, 1.0)
        loss = loss + (t * t.log() - t + 0.5 * (2 * math.pi * t).log()).masked_fill(target <= 1, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """(log(max(var, eps)) + (x - y)^2 / max(var, eps)) / 2 (+ log(2 pi) / 2 when ``full``), reduced; var may
    lack the last dim or have it of size 1 (homoscedastic); the clamp passes no gradient (as PyTorch)."""
    if isinstance(var, (int, float)):
        var = input.new_full(input.shape, float(var))
    if var.shape != input.shape:
        if input.shape[:-1] == var.shape:
            var = var.unsqueeze(-1)
        elif input.shape[:-1] == var.shape[:-1] and var.shape[-1] == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = var.clone()
    with grad_mode.no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """sum over i != y of max(0, margin - x[y] + x[i])^p (times weight[y]) / C per sample, reduced."""
    reduction = _reduction_arg(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    t = target.reshape(-1, 1)
    xy = x.gather(1, t)
    z = (margin - xy + x).clamp(min=0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.gather(0, t.reshape(-1)).reshape(-1, 1)
    z = z.scatter(1, t, 0.0)                            # the target's own term is left out
    loss = z.sum(1) / x.shape[1]
    return _reduce(loss if input.dim() == 2 else loss.reshape(()), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(y logsigmoid(x) + (1 - y) logsigmoid(-x)) averaged over classes, reduced over the batch."""
    reduction = _reduction_arg(size_average, reduce, reduction)
    loss = -(target * _op("logsigmoid", input) + (1 - target) * _op("logsigmoid", -input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(dim=input.dim() - 1) / input.shape[-1]
    return _reduce(loss, reduction)



# ------------------------------------------------------------------ alpha dropout (SELU networks)
def _alpha_dropout(input, p, training, inplace, feature):
    """ATen's alpha dropout: keep ~ Bernoulli(1 - p) (per element, or per (N, C) channel when ``feature``),
    out = a (x keep + alpha' (1 - keep)) with alpha' = -1.7581 (SELU's negative saturation), a restoring the
    mean and variance."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _inplace(input, input * 0.0, inplace)
    shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2) if feature else tuple(input.shape)
    with grad_mode.no_grad():
        keep = input.new_empty(shape).bernoulli_(1.0 - p)          # PyTorch's draws
    alpha = 1.7580993408473766
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    b = (keep - 1) * (alpha * a) + alpha * a * p
    return _inplace(input, _original(input, inplace) * (keep * a) + b, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _alpha_dropout(input, p, training, inplace, False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _alpha_dropout(input, p, training, inplace, True)
