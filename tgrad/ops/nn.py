"""NN functional ops on their own kernels (tgrad/kernels/nn.py): dropout, embedding, one_hot, constant pad,
normalize, cosine_similarity.

Backward rules are written with tgrad ops (embedding's with a fused backward op that is a table entry itself),
so double backward works.  Argument checks raise PyTorch's errors before any launch.
"""
import numpy as np

from .. import _sparse
from .. import dtypes as D
from ..kernels import _geometry as G
from ..kernels import elementwise as KE
from ..kernels import nn as KN2
from ..tensor import _wrap_dim, empty, from_host, full
from . import Op, call as _call
from ._rows import contig, contig3, float_check, rows3


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
    float_check(input, "bernoulli_scalar_cpu_")
    mask = empty(input.shape, D.bool_, input.device)
    y = empty(input.shape, input.dtype, input.device)
    if not training or p == 0:
        KE.fill(mask, 1)
        return KE.copy(input, y), mask
    if words is None and (seed is None or offset is None):
        raise ValueError("dropout: a training dropout takes words= or seed= and offset= (drawn from a generator)")
    return KN2.dropout(contig(input), y, mask, p, _dropout_scale(p, input.dtype), seed, offset, words)


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


def embedding_forward(weight, indices, *, padding_idx=None, scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` at ``indices`` (``max_norm`` is F.embedding's in-place renorm before this op);
    ``sparse``: the weight's gradient is a sparse COO tensor."""
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    _padding(padding_idx, weight.shape[0])
    _check_indices(indices, weight.shape[0])
    n, Dm = indices.numel(), weight.shape[1]
    out = empty(tuple(indices.shape) + (Dm,), weight.dtype, weight.device)
    return KN2.embedding(weight, contig(indices), out, n, Dm)


def embedding_backward_rule(ctx, grad):
    w_meta, idx = ctx.input_meta[0], ctx.saved["indices"]
    if ctx.attrs.get("sparse", False):
        return embedding_sparse_grad(grad, idx, w_meta.shape[0], ctx.attrs.get("padding_idx"),
                                     ctx.attrs.get("scale_grad_by_freq", False)), None
    return (_call("embedding_backward", grad, idx, num_weights=w_meta.shape[0],
                  padding_idx=ctx.attrs.get("padding_idx"),
                  scale_grad_by_freq=ctx.attrs.get("scale_grad_by_freq", False)), None)


def embedding_sparse_grad(grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    """ATen's embedding_sparse_backward: a sparse COO (num_weights, D) gradient, uncoalesced: indices = the
    looked-up ids (1, N), values = the rows of ``grad`` (N, D); entries at ``padding_idx`` dropped."""
    if scale_grad_by_freq:
        raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse gradients")
    Dm = grad.shape[-1]
    idx, rows = indices.reshape(-1), grad.reshape(-1, Dm)
    if padding_idx is not None:
        keep = (idx != padding_idx).nonzero().view(-1)
        idx, rows = idx.index_select(0, keep), rows.index_select(0, keep)
    return _sparse._make(idx.long().view(1, -1), rows, (num_weights, Dm), idx.numel() <= 1)


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
    KN2.embedding_backward(contig(grad_output), contig(indices), acc, indices.numel(), Dm,
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


# ------------------------------------------------------------------ embedding_bag
def embedding_bag_forward(weight, indices, offsets, per_sample_weights=None, *, mode=0, padding_idx=None,
                          include_last_offset=False, scale_grad_by_freq=False, sparse=False):
    """(output (B, D), offset2bag (N,), bag_size (B,), max_indices (B, D)) of ATen's ``_embedding_bag``: bag b
    holds indices[offsets[b]:offsets[b + 1]] (the last one to the end, or to offsets[B] with
    ``include_last_offset``); output[b] is the sum (mode 0; rows scaled by ``per_sample_weights``), mean (1)
    or max (2) of its rows of ``weight``, rows at ``padding_idx`` left out; an empty bag gives zeros.  Rows are
    added in index order (ATen's cpu order); max_indices: the row of each maximum (first in index order)."""
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    _check_indices(indices, weight.shape[0])
    V, Dm = weight.shape
    pad = _padding(padding_idx, V)
    idx, off = (contig(t) if t.dtype is D.int64 else KE.copy(t, empty(t.shape, D.int64, t.device))
                for t in (indices, offsets))
    n, nb = idx.numel(), off.numel() - (1 if include_last_offset else 0)
    if nb < 0:
        raise ValueError("embedding_bag: offsets has to have at least one element with include_last_offset=True")
    dev = weight.device
    bag = KN2.offset2bag(off, empty((n,), D.int64, dev), n, off.numel())
    acc_dt = D.float64 if weight.dtype is D.float64 else D.float32
    acc = KE.fill(empty((nb, Dm), acc_dt, dev), float("-inf") if mode == 2 else 0)
    cnt = KE.fill(empty((nb,), D.int64, dev), 0)
    psw = None if per_sample_weights is None else contig(per_sample_weights)
    KN2.embedding_bag(weight, idx, bag, psw, acc, cnt, n, nb, pad, mode == 2)
    out = empty((nb, Dm), weight.dtype, dev)
    pos = mi = None
    if mode == 2:
        pos = KN2.embedding_bag_argmax(weight, idx, bag, acc, KE.fill(empty((nb, Dm), D.int64, dev), n), n, nb, pad)
        mi = empty((nb, Dm), D.int64, dev)
    KN2.embedding_bag_finish(acc, cnt, pos, idx, out, mi, nb, mode)
    return out, bag, cnt, (mi if mi is not None else KE.fill(empty((nb,), D.int64, dev), 0))


def _bag_rows(idx, bag, pad, num_weights, nb, dtype):
    """(keep, bag): 1.0 for the indices a bag counts (not padding_idx, not past include_last_offset's end),
    else 0.0; and bag clamped to a valid row."""
    keep = ((idx != _padding(pad, num_weights)) & (bag < nb)).to(dtype)
    return keep, bag.clamp(max=max(nb - 1, 0))


def embedding_bag_backward_rule(ctx, grad, *_):
    """d weight: each bag's gradient row added at its indices (scaled by per_sample_weights, or 1 / bag size for
    mean; max: at the rows of the maxima); d per_sample_weights[i] = <grad[bag[i]], weight[indices[i]]>."""
    a, needs = ctx.attrs, ctx.needs_input_grad
    idx, bag, cnt, mi = ctx.saved["indices"], ctx.saved["result1"], ctx.saved["result2"], ctx.saved["result3"]
    psw = ctx.saved.get("per_sample_weights")
    dw = dpsw = None
    if needs[0] and a.get("sparse", False):
        # ATen's _embedding_bag_sparse_backward: each index's bag row (/ bag size for mean, * its weight)
        rows = grad.index_select(0, bag)
        if a.get("mode", 0) == 1:
            rows = rows / cnt.to(grad.dtype).masked_fill(cnt == 0, 1).index_select(0, bag).unsqueeze(1)
        if psw is not None:
            rows = rows * psw.unsqueeze(1)
        dw = embedding_sparse_grad(rows, idx, ctx.input_meta[0].shape[0], a.get("padding_idx"),
                                   a.get("scale_grad_by_freq", False))
    elif needs[0]:
        dw = _call("embedding_bag_backward", grad, idx, bag, cnt, mi, psw, num_weights=ctx.input_meta[0].shape[0],
                   mode=a.get("mode", 0), padding_idx=a.get("padding_idx"),
                   scale_grad_by_freq=a.get("scale_grad_by_freq", False))
    if len(needs) > 3 and needs[3]:
        w = ctx.saved["weight"]
        keep, bag = _bag_rows(idx, bag, a.get("padding_idx"), w.shape[0], grad.shape[0], grad.dtype)
        dpsw = (grad.index_select(0, bag) * w.index_select(0, idx)).sum(1).masked_fill(keep == 0, 0)
    return dw, None, None, dpsw


def embedding_bag_backward_forward(grad, indices, offset2bag, bag_size, max_indices, per_sample_weights=None, *,
                                   num_weights, mode=0, padding_idx=None, scale_grad_by_freq=False):
    """The dense (num_weights, D) gradient of embedding_bag's weight (see embedding_bag_backward_rule)."""
    Dm, nb = grad.shape[1], grad.shape[0]
    acc_dt = D.float64 if grad.dtype is D.float64 else D.float32
    acc = KE.fill(empty((num_weights, Dm), acc_dt, grad.device), 0)
    g = contig(grad)
    if mode == 2:
        KN2.embedding_bag_max_backward(g, contig(max_indices), acc, nb)
    else:
        psw = None if per_sample_weights is None else contig(per_sample_weights)
        KN2.embedding_bag_backward(g, contig(indices), offset2bag, psw, bag_size, acc, indices.numel(), nb,
                                   _padding(padding_idx, num_weights), mode == 1)
    if scale_grad_by_freq:
        KE.binary(KE.mul_fn, acc, _freq_scale(indices, num_weights, acc), acc)
    if acc_dt is grad.dtype:
        return acc
    return KE.copy(acc, empty(acc.shape, grad.dtype, grad.device))


def embedding_bag_double_backward(ctx, gg):
    """d/dgrad of the weight gradient, linear in grad: gg's rows gathered per bag as the forward does (max: gg
    at the rows of the maxima, 0 for an empty bag); d/dper_sample_weights[i] = <gg[indices[i]], grad[bag[i]]>."""
    a, needs = ctx.attrs, ctx.needs_input_grad
    idx, bag, cnt, mi, psw = (ctx.saved.get(k) for k in ("indices", "offset2bag", "bag_size", "max_indices",
                                                     "per_sample_weights"))
    if a.get("scale_grad_by_freq", False):
        gg = gg * _freq_scale(idx, gg.shape[0], gg)
    if a.get("mode", 0) == 2:
        return (gg.gather(0, mi.clamp(min=0)) * (mi >= 0).to(gg.dtype),) + (None,) * 5
    keep, bag = _bag_rows(idx, bag, a.get("padding_idx"), gg.shape[0], ctx.saved["grad"].shape[0], gg.dtype)
    rows = gg.index_select(0, idx) * keep.unsqueeze(1)
    dpsw = None
    if psw is not None and len(needs) > 5 and needs[5]:
        dpsw = (rows * ctx.saved["grad"].index_select(0, bag)).sum(1)
    if psw is not None:
        rows = rows * psw.unsqueeze(1)
    dgrad = gg.new_zeros((ctx.saved["grad"].shape[0], gg.shape[1])).index_add(0, bag, rows)
    if a.get("mode", 0) == 1:
        dgrad = dgrad / cnt.clamp(min=1).to(gg.dtype).unsqueeze(1)
    return dgrad, None, None, None, None, dpsw


# ------------------------------------------------------------------ one_hot
def one_hot_forward(self, *, num_classes=-1):
    if self.dtype is not D.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1 and self.is_meta:      # (the class count is the values' max)
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")
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
    return KN2.one_hot(contig(self), out, num_classes)


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


DROPOUT = Op("dropout", dropout_forward, dropout_backward, "MulBackward0", inputs=("input",), save=("result1",),
             outputs=2, nondiff_outputs=(1,), variants=("function",))
EMBEDDING = Op("embedding", embedding_forward, embedding_backward_rule, "EmbeddingBackward0",
               inputs=("weight", "indices"), save=("indices",), variants=("function",))
EMBEDDING_BACKWARD = Op(
    "embedding_backward", embedding_backward_forward, embedding_double_backward, "EmbeddingBackwardBackward0",
    inputs=("grad_output", "indices"), save=("indices",))
EMBEDDING_BAG = Op("embedding_bag", embedding_bag_forward, embedding_bag_backward_rule, "EmbeddingBagBackward0",
                   inputs=("weight", "indices", "offsets", "per_sample_weights"),
                   save=("weight", "indices", "per_sample_weights", "result1", "result2", "result3"), outputs=4,
                   nondiff_outputs=(1, 2, 3))
EMBEDDING_BAG_BACKWARD = Op(
    "embedding_bag_backward", embedding_bag_backward_forward, embedding_bag_double_backward,
    "EmbeddingBagBackwardBackward0",
    inputs=("grad", "indices", "offset2bag", "bag_size", "max_indices", "per_sample_weights"),
    save=("grad", "indices", "offset2bag", "bag_size", "max_indices", "per_sample_weights"))
ONE_HOT = Op("one_hot", one_hot_forward, None, None, inputs=("self",))
PAD = Op("pad", pad_forward, pad_backward, "ConstantPadNdBackward0", inputs=("input",))


# ------------------------------------------------------------------ normalize / cosine_similarity
def normalize_forward(input, *, p=2.0, dim=1, eps=1e-12):
    """y = x / max(||x||_p, eps) along ``dim`` (p > 0 or inf)."""
    float_check(input, "linalg_vector_norm")
    p = float(p)
    if not p > 0:
        raise NotImplementedError("normalize: only p > 0 is supported")
    d = _wrap_dim(dim, input.dim())
    xs, outer, K, inner, sx = rows3(input, d)
    y = empty(input.shape, input.dtype, input.device)
    return KN2.normalize(xs, y, (outer * inner, K, inner, sx, contig3(K, inner)), p, eps)


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


NORMALIZE = Op("normalize", normalize_forward, normalize_backward, "DivBackward0", inputs=("input",), save=("input",))
COSINE_SIMILARITY = Op("cosine_similarity", cosine_similarity_forward, cosine_similarity_backward, "SumBackward1",
                       inputs=("x1", "x2"), save=("x1", "x2", "result"), variants=("function",))


ENTRIES = [DROPOUT, EMBEDDING, EMBEDDING_BACKWARD, EMBEDDING_BAG, EMBEDDING_BAG_BACKWARD, ONE_HOT, PAD, NORMALIZE, COSINE_SIMILARITY]
