"""Reductions: sum, mean (all dims, one dim or several, keepdim) and sum_to_size."""
from .. import dtypes as D
from ..kernels import _geometry as G
from ..kernels import elementwise as KE
from ..kernels import reduce as K
from ..tensor import _wrap_dim, empty
from . import Op


def reduce_dims(dim, ndim):
    """Normalise ``dim`` (None, int, or sequence) to a sorted tuple of distinct dims."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    if isinstance(dim, int):
        dim = (dim,)
    dims = tuple(sorted(_wrap_dim(d, ndim) for d in dim))
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"dim {dims[0]} appears multiple times in the list of dims")
    return dims


def reduced_shape(shape, dims, keepdim):
    if keepdim:
        return tuple(1 if i in dims else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in dims)


def as_rows(x, dims):
    """(view, M, K, stride_m, stride_k): x with ``dims`` moved last, as a strided (M, K) matrix."""
    keep = [i for i in range(x.dim()) if i not in dims]
    order = keep + list(dims)
    shape = [x.shape[i] for i in order]
    strides = [x.stride()[i] for i in order]
    M = 1
    for i in keep:
        M *= x.shape[i]
    Kn = 1
    for i in dims:
        Kn *= x.shape[i]
    nk = len(keep)
    ms, mst = G.collapse(shape[:nk] or [1], [strides[:nk] or [0]])
    ks, kst = G.collapse(shape[nk:] or [1], [strides[nk:] or [0]])
    if len(ms) == 1 and len(ks) == 1:
        return x, M, Kn, mst[0][0], kst[0][0]
    c = empty(shape, x.dtype, x.device)
    KE.copy(x._view_of(shape, strides), c)
    return c, M, Kn, Kn, 1


def _sum_dtype(x, dtype):
    if dtype is not None:
        return D.to_dtype(dtype)
    return x.dtype if x.dtype.is_floating_point else D.int64


def sum_forward(self, *, dim=None, keepdim=False, dtype=None, scale=1.0, _shape=None):
    dims = reduce_dims(dim, self.dim())
    out_dt = _sum_dtype(self, dtype)
    out = empty(_shape if _shape is not None else reduced_shape(self.shape, dims, keepdim), out_dt, self.device)
    x, M, Kn, sm, sk = as_rows(self, dims)
    if Kn == 0:
        return KE.fill(out, 0)
    return K.sum_rows(x, M, Kn, sm, sk, out, scale)


def _expand_grad(grad, meta_shape, dims, keepdim):
    if not keepdim and dims:
        for d in dims:
            grad = grad.unsqueeze(d)
    return grad.expand(meta_shape)


def sum_backward(ctx, grad):
    shape = ctx.input_meta[0].shape
    dims = reduce_dims(ctx.attrs.get("dim"), len(shape))
    return (_expand_grad(grad, shape, dims, ctx.attrs.get("keepdim", False)),)


def mean_forward(self, *, dim=None, keepdim=False, dtype=None):
    if not (self.dtype.is_floating_point or (dtype is not None and D.to_dtype(dtype).is_floating_point)):
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
            f"dtype. Got: {self.dtype.name.capitalize() if self.dtype is not D.int64 else 'Long'}")
    dims = reduce_dims(dim, self.dim())
    n = 1
    for d in dims:
        n *= self.shape[d]
    return sum_forward(self, dim=dim, keepdim=keepdim, dtype=dtype,
                       scale=(1.0 / n) if n else float("nan"))


def mean_backward(ctx, grad):
    shape = ctx.input_meta[0].shape
    dims = reduce_dims(ctx.attrs.get("dim"), len(shape))
    n = 1
    for d in dims:
        n *= shape[d]
    return (_expand_grad(grad, shape, dims, ctx.attrs.get("keepdim", False)).div(n),)


def sum_to_size_forward(self, *, size):
    """Sum ``self`` down to ``size`` (the reverse of broadcasting)."""
    size = tuple(size)
    lead = self.dim() - len(size)
    if lead < 0:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(self.shape)}}}.")
    dims = list(range(lead))
    for i, s in enumerate(size):
        d = self.shape[lead + i]
        if s == 1 and d != 1:
            dims.append(lead + i)
        elif s != d:
            raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(self.shape)}}}.")
    if not dims:
        return KE.copy(self, empty(self.shape, self.dtype, self.device))
    return sum_forward(self, dim=dims, keepdim=True, _shape=size)


def sum_to_size_backward(ctx, grad):
    return (grad.expand(ctx.input_meta[0].shape),)


ENTRIES = [
    Op("sum", sum_forward, sum_backward, "SumBackward1"),
    Op("sum_all", sum_forward, sum_backward, "SumBackward0"),
    Op("mean", mean_forward, mean_backward, "MeanBackward1"),
    Op("mean_all", mean_forward, mean_backward, "MeanBackward0"),
    Op("sum_to_size", sum_to_size_forward, sum_to_size_backward, "SumBackward1"),
]
