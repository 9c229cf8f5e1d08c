"""The bodies ``tgrad.X`` and ``tgrad.nn.functional.X`` share (softmax, dropout, layer_norm, batch_norm,
embedding, cosine_similarity): ``tgrad.nn.functional`` imports these and adds only its own argument handling
(implicit softmax dims, deprecated arguments, PyTorch's keyword names and orders).
"""
from . import dtypes as D
from .autograd import dispatch, grad_mode
from .kernels._geometry import preserved_strides
from .ops import TABLE
from .random import default_generator_for


def _op(name, *args, **attrs):
    if name not in TABLE:
        raise NotImplementedError(f"tgrad.nn.functional: op '{name}' is not in the op table yet")
    return dispatch.call(name, *args, **attrs)


def softmax(input, dim, dtype=None):
    """exp(x) / sum(exp(x)) along ``dim`` (computed in ``dtype`` when given)."""
    return _op("softmax", input, dim=dim, dtype=dtype)


def log_softmax(input, dim, dtype=None):
    """x - logsumexp(x) along ``dim`` (computed in ``dtype`` when given)."""
    return _op("log_softmax", input, dim=dim, dtype=dtype)


def dropout(input, p, train):
    """``nn.functional.dropout(input, p, training=train)``."""
    return _dropout(input, p, train, False)


def dropout_(input, p, train):
    """``nn.functional.dropout(input, p, training=train, inplace=True)``."""
    return _dropout(input, p, train, True)


def _dropout(input, p, training, inplace):
    """Zero each element with probability p and scale the rest by 1 / (1 - p); ``input`` itself when not
    training or p == 0; input * 0 when p == 1 (no draw), as PyTorch.  The random words (cpu: 2 per element,
    PyTorch's ``bernoulli_(1 - p)``) or Philox key and counters (cuda) are drawn from the default generator."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out = input * 0.0
        return input.copy_(out) if inplace else out
    # PyTorch draws the mask into empty_like(input): with input's stride order, filled in memory order
    strides = preserved_strides(tuple(input.shape), input.stride())
    order = sorted(range(input.dim()), key=lambda d: -strides[d])
    x = input.permute(order) if order != sorted(order) else input
    out = _op("dropout", x, p=p, training=True, **default_generator_for(input.device)._bernoulli_rng(
        input.numel()))[0]
    if x is not input:
        out = out.permute(sorted(range(len(order)), key=order.__getitem__))
    if out.grad_fn is not None:
        out.grad_fn._attrs.pop("words", None)      # used up: the graph need not keep the words alive
    return input.copy_(out) if inplace else out


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last len(normalized_shape) dims
    (``cudnn_enable`` is accepted and ignored)."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return _op("layer_norm", input, weight, bias, normalized_shape=tuple(normalized_shape), eps=eps)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    """``nn.functional.batch_norm`` in ATen's argument order (``cudnn_enabled`` is accepted and ignored)."""
    return _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps):
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


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` at ``indices`` (ATen's order); a negative ``padding_idx`` means none."""
    return _embedding(indices, weight, padding_idx if padding_idx >= 0 else None, None, 2.0,
                      scale_grad_by_freq, sparse)


def _embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse):
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
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    if sparse:
        return _op("embedding", weight, input, padding_idx=padding_idx, scale_grad_by_freq=bool(scale_grad_by_freq),
                   sparse=True)
    return _op("embedding", weight, input, padding_idx=padding_idx, scale_grad_by_freq=bool(scale_grad_by_freq))


def _embedding_renorm_(weight, indices, max_norm, norm_type):
    """PyTorch's embedding_renorm_, under no_grad: each row of ``weight`` that ``indices`` looks up and whose
    ``norm_type``-norm exceeds ``max_norm`` is scaled in place by max_norm / (norm + 1e-7) (a float64 scale,
    as ATen computes it).  The indices are checked before anything is written."""
    if weight.dim() != 2:
        raise RuntimeError(f"Expected 2-dimensional tensor, but got {weight.dim()}-dimensional tensor for argument "
                           "#1 'self' (while checking arguments for embedding_renorm_)")
    if indices.dtype not in (D.int64, D.int32):
        raise RuntimeError("Expected tensor for argument #2 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {indices.type()} instead (while checking arguments for "
                           "embedding_renorm_)")
    idx = indices.reshape(-1)
    with grad_mode.no_grad():
        rows = weight.index_select(0, idx)              # IndexError for an index out of range, nothing written
        norm = rows.norm(norm_type, dim=1, keepdim=True).double()
        scale = (max_norm / (norm + 1e-7)).where(norm > max_norm, 1.0)
        weight.index_put_((idx,), rows * scale.to(weight.dtype))     # a repeated index writes the same row


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 x2) / (max(||x1||, eps) max(||x2||, eps)) along ``dim``."""
    return _op("cosine_similarity", x1, x2, dim=dim, eps=eps)
