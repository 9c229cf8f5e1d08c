"""``tgrad.nn.functional``: PyTorch's functional forms.

Each function checks its arguments the way PyTorch does, then calls one op
of the table (``linear``, ``relu``, ``cross_entropy`` ... each a fused Triton
kernel pair).  Deprecated ``size_average``/``reduce`` arguments map to
``reduction`` with PyTorch's warning.
"""
import warnings

from ..autograd import dispatch
from ..autograd.grad_mode import is_grad_enabled
from ..ops import TABLE


def _op(name, *args, **attrs):
    if name not in TABLE:
        raise NotImplementedError(f"tgrad.nn.functional: op '{name}' is not in the op table yet")
    return dispatch.call(name, *args, **attrs)


def _op_(name, input, **attrs):
    """In-place form: writes into ``input``."""
    if name not in TABLE:
        raise NotImplementedError(f"tgrad.nn.functional: op '{name}' is not in the op table yet")
    return dispatch.call_inplace(name, input, **attrs)


def _act(name, input, inplace=False, **attrs):
    return _op_(name, input, **attrs) if inplace else _op(name, input, **attrs)


def _legacy_reduction(size_average, reduce):
    """PyTorch's mapping of the deprecated (size_average, reduce) pair to a reduction string."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if size_average and reduce else ("sum" if reduce else "none")
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
                  stacklevel=3)
    return ret


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
    return _op("softmax", input, dim=dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """x - logsumexp(x) along ``dim``."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim(), _stacklevel)
    return _op("log_softmax", input, dim=dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x)."""
    if dim is None:
        dim = _softmax_dim("softmin", input.dim(), _stacklevel)
    return _op("softmax", -input, dim=dim, dtype=dtype)


# ------------------------------------------------------------------ dropout
def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1 / (1 - p); ``input`` itself when not
    training or p == 0."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    out = _op("dropout", input, p=p, training=True)[0]
    return input.copy_(out) if inplace else out


# ------------------------------------------------------------------ normalization, embedding
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last len(normalized_shape) dims."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return _op("layer_norm", input, weight, bias, normalized_shape=tuple(normalized_shape), eps=eps)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Normalize over the batch (and length) dims per channel (dim 1); in training the running
    statistics are updated in place: r = (1 - momentum) r + momentum * batch statistic (unbiased var)."""
    if training:
        size = input.shape
        n = size[0]
        for s in size[2:]:
            n *= s
        if n == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")
    return _op("batch_norm", input, weight, bias, running_mean, running_var, training=training, momentum=momentum,
               eps=eps)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of ``weight`` at the indices ``input``; the row ``padding_idx`` gets no gradient.  ``max_norm``:
    the looked-up rows are first renormalized in place (``_embedding_renorm_``); ``scale_grad_by_freq``:
    each row's gradient is divided by how often the row occurs in ``input``."""
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = weight.size(0) + padding_idx
    if sparse:
        raise NotImplementedError("tgrad.nn.functional.embedding: sparse=True (sparse gradients) is not supported")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    return _op("embedding", weight, input, padding_idx=padding_idx, scale_grad_by_freq=bool(scale_grad_by_freq))


def _embedding_renorm_(weight, indices, max_norm, norm_type):
    """PyTorch's embedding_renorm_, under no_grad: each row of ``weight`` that ``indices`` looks up and whose
    ``norm_type``-norm exceeds ``max_norm`` is scaled in place by max_norm / (norm + 1e-7) (a float64 scale,
    as ATen computes it).  The indices are checked before anything is written."""
    from ..autograd.grad_mode import no_grad
    from .. import dtypes
    if weight.dim() != 2:
        raise RuntimeError(f"Expected 2-dimensional tensor, but got {weight.dim()}-dimensional tensor for argument "
                           "#1 'self' (while checking arguments for embedding_renorm_)")
    if indices.dtype not in (dtypes.int64, dtypes.int32):
        raise RuntimeError("Expected tensor for argument #2 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {indices.type()} instead (while checking arguments for "
                           "embedding_renorm_)")
    idx = indices.reshape(-1)
    with no_grad():
        rows = weight.index_select(0, idx)              # IndexError for an index out of range, nothing written
        norm = rows.norm(norm_type, dim=1, keepdim=True).double()
        scale = (max_norm / (norm + 1e-7)).where(norm > max_norm, 1.0)
        weight.index_put_((idx,), rows * scale.to(weight.dtype))     # a repeated index writes the same row


def one_hot(tensor, num_classes=-1):
    return _op("one_hot", tensor, num_classes=num_classes)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """x / max(||x||_p along dim, eps)."""
    res = _op("normalize", input, p=p, dim=dim, eps=eps)
    return res if out is None else out.copy_(res)


def pad(input, pad, mode="constant", value=None):
    """Constant padding: ``pad`` = (left, right) for the last dim, then the one before, ...; negative crops."""
    return _op("pad", input, pad=tuple(pad), mode=mode, value=value)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 x2) / (max(||x1||, eps) max(||x2||, eps)) along ``dim``."""
    return _op("cosine_similarity", x1, x2, dim=dim, eps=eps)


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
    return _op("scaled_dot_product_attention", query, key, value, attn_mask, dropout_p=dropout_p,
               is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)[0]


def _sdpa_math(query, key, value, attn_mask, dropout_p, scale, enable_gqa):
    if enable_gqa and query.dim() >= 3 and key.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        rep = query.shape[-3] // key.shape[-3]
        key, value = key.repeat_interleave(rep, -3), value.repeat_interleave(rep, -3)
    s = scale if scale is not None else query.shape[-1] ** -0.5
    w = (query @ key.transpose(-2, -1)) * s + attn_mask
    w = softmax(w, dim=-1)
    if dropout_p > 0:
        w = dropout(w, dropout_p)
    return w @ value
