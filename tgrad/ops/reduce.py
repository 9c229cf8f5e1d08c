"""Reductions and scans: sum mean prod var std max min amax amin argmax argmin logsumexp norm all any,
cumsum cumprod, sum_to_size.

Every reduction runs over K of an (M, K) view of its input (``rows_geom``);
one launch per op.  Backward rules are tgrad ops; the weights that say which
elements a max/min/norm gradient flows to are constants computed by
``tie_weights_kernel`` and ``prod_grad_kernel``.
"""
import numpy as np

from .. import dtypes as D
from ..kernels import _geometry as G
from ..kernels import complex as KC
from ..kernels import elementwise as KE
from ..kernels import reduce as K
from ..kernels.runtime import Sites, blas
from ..kernels._geometry import contiguous_strides
from .._state import state as _grad_state
from ..tensor import _new, _wrap_dim, empty, from_host, full
from . import Op, call, host_full, implicit_seed
from . import complex as _complex
from .compare import _truth as _compare_truth


def reduce_dims(dim, ndim):
    """Normalise ``dim`` (None, int, or sequence) to a sorted tuple of distinct dims."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    if isinstance(dim, int):
        dim = (dim,)
    dims = tuple(sorted(_wrap_dim(d, ndim) for d in dim))
    for a, b in zip(dims, dims[1:]):
        if a == b:
            raise RuntimeError(f"dim {a} appears multiple times in the list of dims")
    return tuple(d for d in dims if d < ndim)


def reduced_shape(shape, dims, keepdim):
    if keepdim:
        return tuple([1 if i in dims else d for i, d in enumerate(shape)])
    if len(dims) == len(shape):     # dims are distinct
        return ()
    return tuple([d for i, d in enumerate(shape) if i not in dims])


def _numel(shape, dims):
    n = 1
    for d in dims:
        n *= shape[d]
    return n


def _order(x, dims):
    return [i for i in range(x.dim()) if i not in dims] + list(dims)


def rows_geom(x, dims):
    """(buffer, (M, M2, K, stride_m1, stride_m2, stride_k)): x as an (M, K) view reducing ``dims``.

    Row m = (m // M2, m % M2) over two merged groups of kept dims, K over the merged reduced
    dims; a contiguous copy in (kept..., reduced...) order when the strides cannot express it.
    """
    key = (x._shape, x._strides, tuple(dims))
    geom = _ROWS.get(key)
    if geom is None:
        if len(_ROWS) > 4096:
            _ROWS.clear()
        geom = _ROWS[key] = _rows_geom(x, dims)
    if len(geom) == 6:
        return x, geom
    shape, strides, geom = geom
    c = empty(shape, x.dtype, x.device)
    KE.copy(x._view_of(shape, strides), c)
    return c, geom


_ROWS = {}      # rows_geom's results by (shape, strides, dims)


def _rows_geom(x, dims):
    """rows_geom's (M, M2, K, stride_m1, stride_m2, stride_k) for x itself, or (shape, strides, geom) of
    the contiguous copy it needs."""
    rows = _row_views(x._shape, [x._strides], dims)
    if rows is not None:
        return rows[0] + rows[1][0]
    order = _order(x, dims)
    shape = [x.shape[i] for i in order]
    strides = [x.stride()[i] for i in order]
    K = _numel(shape, range(x.dim() - len(dims), len(shape)))
    return (shape, strides, (_numel(shape, range(x.dim() - len(dims))), 1, K, K, 0, 1))


def _row_views(shape, stride_lists, dims):
    """((M, M2, K), [(stride_m1, stride_m2, stride_k) per operand]): operands of ``shape`` (one stride list
    each) as (M, K) views reducing ``dims``, or None when their strides cannot express that."""
    nk = len(shape) - len(dims)
    order = [i for i in range(len(shape)) if i not in dims] + list(dims)
    pshape = [shape[i] for i in order]
    ms, mst = G.collapse(pshape[:nk] or [1], [[st[i] for i in order[:nk]] or [0] for st in stride_lists])
    ks, kst = G.collapse(pshape[nk:] or [1], [[st[i] for i in order[nk:]] or [0] for st in stride_lists])
    if len(ms) > 2 or len(ks) != 1:
        return None
    rows = (_numel(pshape, range(nk)), ms[1] if len(ms) == 2 else 1, _numel(pshape, range(nk, len(shape))))
    return rows, [(m[0], m[1] if len(m) == 2 else 0, k[0]) for m, k in zip(mst, kst)]


def mean_of(x, div):
    """sum(x) / div, a 0-d tensor (float32/float64 x): ATen's sum order then one division (a loss's mean)."""
    return _reduce("mean", x, tuple(range(x.dim())), False, x.dtype, div=div)


def _cascade_sum(x, geom, out, plan, mean=False, div=None, y=None, ystrides=(0, 0, 0), key=None):
    """K.cascade_sum into ``out``, a full sum split between threads as ATen splits it (its partials here).
    ``key``: remember the launches of an unsplit sum under it in ``_CASCADES`` (see ``_cascaded``)."""
    split = K.cascade_split(geom[2], blas.threads()) if geom[0] == 1 else None
    if split and split[0] > 1:
        partials = empty((split[0],), out.dtype, out._storage.device)
        return K.cascade_sum(x, geom, out, plan, mean, split, partials, div, y, ystrides)
    if key is None or x.data_ptr() != key[-1] or (y is not None and y.data_ptr() != key[-2]):
        return K.cascade_sum(x, geom, out, plan, mean, split, None, div, y, ystrides)
    sites = []
    K.cascade_sum(x, geom, out, plan, mean, split, None, div, y, ystrides, sites)
    if geom[0] != 1 or geom[2] < K.CASCADE_GRAIN:      # (else the split depends on the thread count)
        _CASCADES.add(key[:-2], (out._shape, tuple(sites)))
    return out


# A sum's launches by everything that decides them (op, input geometry and dtype, dims, output shape, device,
# FORCE_GPU_BLOCKS): a repeated sum of that geometry skips the planning and calls them (host time per op)
_CASCADES = Sites()


def _cascaded(key, x, y, dtype, device):
    """The sum ``key`` remembers (None if none), of x (and y: the product's sum) into a new tensor."""
    hit = _CASCADES.get(key)
    if hit is None:
        return None
    out = empty(hit[0], dtype, device)
    xp = x._storage.ptr + x._offset * x.dtype.itemsize
    yp = xp if y is None else y._storage.ptr + y._offset * y.dtype.itemsize
    optr = out._storage.ptr
    for site in hit[1]:
        site(xp, yp, optr)
    return out


def _reduce(op, x, dims, keepdim, out_dtype, p=0.0, with_index=False, shape=None, div=None, center=None):
    if x.dtype._kind == 3 and op in ("sum", "mean") and div is None:
        shape = reduced_shape(x._shape, dims, keepdim) if shape is None else shape
        return _complex.reduce_sum(_reduce, op, x, dims, keepdim, out_dtype, shape)
    if x.dtype._kind == 3 and op == "prod":
        xb, geom = rows_geom(x, dims)
        out = empty(reduced_shape(x._shape, dims, keepdim) if shape is None else shape, out_dtype, x.device)
        return KC.prod_rows(xb, geom, out)
    device = x._storage.device
    cascade = (op == "sum" or op == "mean") and out_dtype is x.dtype
    if cascade:
        key = (op, x._shape, x._strides, x.dtype, dims, keepdim, shape, div, device, KE.T.FORCE_GPU_BLOCKS)
        out = _cascaded(key, x, None, out_dtype, device)
        if out is not None:
            return out
        key += (x.data_ptr(), x.data_ptr())
    shape = reduced_shape(x._shape, dims, keepdim) if shape is None else shape
    out = empty(shape, out_dtype, device)
    idx = empty(shape, D.int64, device) if with_index else None
    if cascade and len(dims) == x.dim() > 1:
        dense = _memory_order(x._shape, x._strides)
        if dense is not None:
            x = x._view_of(*dense)
    xb, geom = rows_geom(x, dims)
    plan = K.cascade_plan(x.dtype, geom, device) if cascade else None
    if plan is not None:            # ATen's cpu summation order
        return _cascade_sum(xb, geom, out, plan, op == "mean", div, key=key)
    if div is not None:             # rows too long for the cascade: the sum, then the division
        return call("div", K.reduce_rows("sum", xb, geom, out), div)
    K.reduce_rows(op, xb, geom, out, idx, p, center=center)
    return (out, idx) if with_index else out


def _memory_order(shape, strides):
    """(shape, strides) by decreasing stride of a dense tensor, None if not dense: ATen sums a whole dense
    tensor in memory order (kept by geometry: every full sum asks)."""
    key = (shape, strides)
    try:
        return _MEMORY_ORDER[key]
    except KeyError:
        pass
    res = None
    if G.non_overlapping_and_dense(shape, strides):
        order = sorted(range(len(shape)), key=lambda d: -strides[d])
        res = tuple(shape[d] for d in order), tuple(strides[d] for d in order)
    if len(_MEMORY_ORDER) > 4096:
        _MEMORY_ORDER.clear()
    _MEMORY_ORDER[key] = res
    return res


_MEMORY_ORDER = {}


def weights(mode, x, dims, v=None):
    """Constant gradient weights of x's shape (kernels.reduce's tie_weights_kernel, prod_grad_kernel), float like x."""
    xb, geom = rows_geom(x, dims)
    order = _order(x, dims)
    pshape = [x.shape[i] for i in order]
    w = empty(pshape, x.dtype if x.dtype.is_floating_point else D.get_default_dtype(), x.device)
    K.select(mode, xb, geom, v, w)
    cs = contiguous_strides(pshape)
    strides = [0] * x.dim()
    for pos, i in enumerate(order):
        strides[i] = cs[pos]
    return w._view_of(tuple(x.shape), strides)


def _expand_grad(grad, meta_shape, dims, keepdim):
    if not keepdim and dims:
        for d in dims:
            grad = grad.unsqueeze(d)
    return grad.expand(meta_shape)


def _ctx_dims(ctx):
    shape = ctx.input_meta[0].shape
    return shape, reduce_dims(ctx.attrs.get("dim"), len(shape)), ctx.attrs.get("keepdim", False)


def _nonempty(name, x, dims, dim):
    """PyTorch's errors for max/min/amax/amin/argmax/argmin over an empty extent."""
    if x.numel() == 0 and dim is None:
        extra = "" if name.startswith("arg") else " Specify the reduction dim with the 'dim' argument."
        exc = IndexError if name.startswith("arg") else RuntimeError
        raise exc(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.{extra}")
    # amax/amin name the dim as given (-1); max/min/argmax/argmin the wrapped one
    given = [dim] if isinstance(dim, int) else list(dim or ())
    named = (given if name in ("amax", "amin") else dims) if x.dim() else ()
    for d in named:
        if x.shape[_wrap_dim(d, x.dim())] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


# ------------------------------------------------------------------ sum, mean, prod
def _sum_dtype(x, dtype, name):
    if dtype is not None:
        return D.to_dtype(dtype, name)
    return x.dtype if x.dtype.is_floating_point or x.dtype._kind == 3 else D.int64


def sum_forward(self, *, dim=None, keepdim=False, dtype=None):
    dims = reduce_dims(dim, len(self._shape))
    return _reduce("sum", self, dims, keepdim, _sum_dtype(self, dtype, "sum"))


def sum_backward(ctx, grad):
    return (_expand_grad(grad, *_ctx_dims(ctx)),)


SUM = Op("sum", sum_forward, sum_backward, "SumBackward1", meta=("self_sym_sizes",), variants=("method", "function"))
SUM_ALL = Op("sum_all", sum_forward, sum_backward, "SumBackward0", meta=("self_sym_sizes",))


def mean_forward(self, *, dim=None, keepdim=False, dtype=None):
    dt = D.to_dtype(dtype, "mean") if dtype is not None else self.dtype
    if not dt.is_floating_point and not dt.is_complex:
        which = "Input" if dtype is None else "Optional"
        raise RuntimeError(f"mean(): could not infer output dtype. {which} dtype must be either a floating point "
                           f"or complex dtype. Got: {dt.legacy_name}")
    dims = reduce_dims(dim, len(self._shape))
    if _numel(self._shape, dims) == 0:
        return KE.fill(empty(reduced_shape(self._shape, dims, keepdim), dt, self.device), float("nan"))
    return _reduce("mean", self, dims, keepdim, dt)


def mean_backward(ctx, grad):
    shape = ctx.input_meta[0].shape
    dim = ctx.attrs.get("dim")
    n = _numel(shape, range(len(shape)) if dim is None else reduce_dims(dim, len(shape)))
    if n and implicit_seed(grad) and (grad.dtype is D.float32 or grad.dtype is D.float64):
        # 1 / n in grad's dtype, as the division below computes it: one element from the host that every
        # element of the gradient reads (strides 0), no launch
        key = (n, grad.dtype)
        value = _INV.get(key)
        if value is None:
            value = _INV[key] = np.divide(grad.dtype.np.type(1), grad.dtype.np.type(n))
        return (host_full(shape, value, grad.dtype, grad._storage.device, broadcast=True),)
    shape, dims, keepdim = _ctx_dims(ctx)
    return (_expand_grad(grad, shape, dims, keepdim).div(n),)


MEAN = Op("mean", mean_forward, mean_backward, "MeanBackward1", meta=("self_sym_sizes", "self_sym_numel"),
          variants=("method", "function"))
MEAN_ALL = Op("mean_all", mean_forward, mean_backward, "MeanBackward0", meta=("self_sym_sizes", "self_sym_numel"))


_INV = {}       # (n, dtype) -> 1 / n rounded to dtype


def prod_forward(self, *, dim=None, keepdim=False, dtype=None):
    return _reduce("prod", self, reduce_dims(dim, self.dim()), keepdim, _sum_dtype(self, dtype, "prod"))


def _has_zero(x):
    return not bool(_reduce("all", x, tuple(range(x.dim())), False, D.bool_).item())


def _recording():
    """True when a backward must itself be differentiable (create_graph): the zero-input branches below
    then use ops instead of the constant masks of a select kernel (exact first order only)."""
    return _grad_state.grad


def _prod_others(x, dims):
    """prod_{j != k} x_j over ``dims`` with ops, no division (PyTorch's prod_safe_zeros_backward):
    exclusive cumprod from the front times exclusive cumprod from the back, along the flattened dims."""
    order = _order(x, dims)
    inv = [order.index(i) for i in range(x.dim())]
    xp = x.permute(order)
    kept = tuple(xp.shape[:x.dim() - len(dims)])
    n = _numel(x.shape, dims)
    xr = xp.reshape(kept + (n,))
    one = full(kept + (1,), 1, x.dtype, x.device)
    front = call("cat", one, xr.narrow(-1, 0, n - 1), dim=-1).cumprod(-1)
    back = call("cat", one, xr.narrow(-1, 1, n - 1).flip(-1), dim=-1).cumprod(-1).flip(-1)
    return (front * back).reshape(xp.shape).permute(inv)


def prod_backward(ctx, grad):
    """d prod / dx_k = prod_{j != k} x_j: result / x without zeros, else a kernel (or ops when recording)."""
    x = ctx.saved["self"]
    shape, dims, keepdim = _ctx_dims(ctx)
    g = _expand_grad(grad, shape, dims, keepdim)
    if x.dtype._kind == 3:      # grad * conj(prod_{j != k} x_j)
        if x.dim() == 0:
            return (g,)
        if bool(x.eq(0).any()):
            return (g * _prod_others(x.conj(), dims),)
        return (g * _expand_grad(ctx.saved["result"], shape, dims, keepdim).conj() / x.conj(),)
    if not _has_zero(x):
        return (g * _expand_grad(ctx.saved["result"], shape, dims, keepdim) / x,)
    if x.dim() == 0:
        return (g,)
    return (g * (_prod_others(x, dims) if _recording() else weights("prod_others", x, dims)),)


PROD = Op("prod", prod_forward, prod_backward, "ProdBackward1", save=("self", "result"),
          variants=("method", "function"))
PROD_ALL = Op("prod_all", prod_forward, prod_backward, "ProdBackward0", save=("self", "result"))


# ------------------------------------------------------------------ var, std
def _correction(correction, unbiased):
    if correction is not None:
        return correction
    return 1 if unbiased is None or unbiased else 0


def _var(name, self, dim, keepdim, correction, unbiased):
    if not self.dtype.is_floating_point:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    dims = reduce_dims(dim, self.dim())
    dof = _numel(self.shape, dims) - _correction(correction, unbiased)
    if _numel(self.shape, dims) == 0:
        return KE.fill(empty(reduced_shape(self.shape, dims, keepdim), self.dtype, self.device), float("nan"))
    shape = reduced_shape(self.shape, dims, keepdim)
    if self.device.type == "cpu" and _numel(shape, range(len(shape))) == 1 and self.dim() and \
            self.dtype.name in ("float32", "float64"):
        # ATen's cpu all-reduce (std_var_all_cpu): the mean first (a float sum, divided), then the squares
        every = tuple(range(self.dim()))
        dof = self.numel() - _correction(correction, unbiased)
        mean = _reduce("mean", self, every, False, self.dtype)
        return _reduce(name, self, every, False, self.dtype, p=float(max(dof, 0)), shape=shape, center=mean)
    return _reduce(name, self, dims, keepdim, self.dtype, p=float(max(dof, 0)))


def var_forward(self, *, dim=None, keepdim=False, correction=None, unbiased=None):
    """var = sum (x - mean)^2 / (N - correction), two passes in one launch."""
    return _var("var", self, dim, keepdim, correction, unbiased)


def std_forward(self, *, dim=None, keepdim=False, correction=None, unbiased=None):
    return _var("std", self, dim, keepdim, correction, unbiased)


def _var_parts(ctx):
    x = ctx.saved["self"]
    shape, dims, keepdim = _ctx_dims(ctx)
    dof = _numel(shape, dims) - _correction(ctx.attrs.get("correction"), ctx.attrs.get("unbiased"))
    return x, shape, dims, keepdim, dof, x - x.mean(dim=dims, keepdim=True)


def _var_grad(g, dof, centered):
    """(2 / (N - correction)) g (x - mean), multiplied in ATen's order (var_backward)."""
    return (g * (2.0 / dof if dof > 0 else float("inf"))) * centered


def var_backward(ctx, grad):
    """d var / dx = 2 (x - mean) / (N - correction)."""
    x, shape, dims, keepdim, dof, centered = _var_parts(ctx)
    return (_var_grad(_expand_grad(grad, shape, dims, keepdim), dof, centered),)


VAR = Op("var", var_forward, var_backward, "VarBackward0", save=("self",), variants=("method", "function"))


def std_backward(ctx, grad):
    """d std / dx = (x - mean) / ((N - correction) std): var's gradient of grad / (2 std), 0 where std == 0 (like
    PyTorch's std_backward)."""
    x, shape, dims, keepdim, dof, centered = _var_parts(ctx)
    std = _expand_grad(ctx.saved["result"], shape, dims, keepdim)
    g = (_expand_grad(grad, shape, dims, keepdim) / (std * 2)).masked_fill(std == 0, 0)
    return (_var_grad(g, dof, centered),)


STD = Op("std", std_forward, std_backward, "StdBackward0", save=("self", "result"), variants=("method", "function"))


# ------------------------------------------------------------------ max, min, amax, amin, argmax, argmin
def max_all_forward(self):
    _nonempty("max", self, (), None)
    return _reduce("max", self, tuple(range(self.dim())), False, self.dtype)


def min_all_forward(self):
    _nonempty("min", self, (), None)
    return _reduce("min", self, tuple(range(self.dim())), False, self.dtype)


def _select_all_backward(ctx, grad):
    """Ties share the gradient evenly (PyTorch's evenly_distribute_backward)."""
    x = ctx.saved["self"]
    return (grad * weights("eq", x, tuple(range(x.dim())), ctx.saved["result"]),)


MAX_ALL = Op("max_all", max_all_forward, _select_all_backward, "MaxBackward1", save=("self", "result"))
MIN_ALL = Op("min_all", min_all_forward, _select_all_backward, "MinBackward1", save=("self", "result"))


def _max_dim(name, self, dim, keepdim):
    dims = reduce_dims(dim, self.dim())
    _nonempty(name, self, dims, dim)
    return _reduce(name, self, dims, keepdim, self.dtype, with_index=True)


def max_forward(self, *, dim, keepdim=False):
    """(values, indices) of the max over ``dim``; indices of the first maximum (NaN wins)."""
    return _max_dim("max", self, dim, keepdim)


def min_forward(self, *, dim, keepdim=False):
    return _max_dim("min", self, dim, keepdim)


def _max_dim_backward(ctx, grad, _unused=None):
    x = ctx.saved["self"]
    shape, dims, keepdim = _ctx_dims(ctx)
    idx = ctx.saved["result1"].contiguous()
    return (_expand_grad(grad, shape, dims, keepdim) * weights("onehot", x, dims, idx),)


MAX = Op("max", max_forward, _max_dim_backward, "MaxBackward0", save=("self", "result1"), outputs=2,
         nondiff_outputs=(1,), variants=("method", "function"))
MIN = Op("min", min_forward, _max_dim_backward, "MinBackward0", save=("self", "result1"), outputs=2,
         nondiff_outputs=(1,), variants=("method", "function"))


def _amax(name, self, dim, keepdim):
    dims = reduce_dims(dim, self.dim())
    _nonempty(name, self, dims if dim not in (None, (), []) else (), None if dim in (None, (), []) else dim)
    return _reduce(name[1:], self, dims, keepdim, self.dtype)


def amax_forward(self, *, dim=(), keepdim=False):
    return _amax("amax", self, dim, keepdim)


def amin_forward(self, *, dim=(), keepdim=False):
    return _amax("amin", self, dim, keepdim)


def amax_backward(ctx, grad):
    """Ties share the gradient evenly: grad * (x == amax) / count (NaN rows: NaN, like PyTorch)."""
    x = ctx.saved["self"]
    shape, dims, keepdim = _ctx_dims(ctx)
    res = ctx.saved["result"].contiguous()     # in row order: one value per row of x's (M, K) view
    return (_expand_grad(grad, shape, dims, keepdim) * weights("eq_strict", x, dims, res),)


AMAX = Op("amax", amax_forward, amax_backward, "AmaxBackward0", save=("self", "result"),
          variants=("method", "function"))
AMIN = Op("amin", amin_forward, amax_backward, "AminBackward0", save=("self", "result"),
          variants=("method", "function"))


def _arg(name, self, dim, keepdim):
    if self.dtype is D.bool_:
        raise RuntimeError(f"{name}(): does not support bool input")
    if dim is None:
        _nonempty(name, self, (), None)
        dims = tuple(range(self.dim()))
        shape = (1,) * self.dim() if keepdim else ()
    else:
        dims = reduce_dims(dim, self.dim())
        _nonempty(name, self, dims, dim)
        shape = reduced_shape(self.shape, dims, keepdim)
    _, idx = _reduce(name[3:], self, dims, keepdim, self.dtype, with_index=True)
    return idx.view(shape)


def argmax_forward(self, *, dim=None, keepdim=False):
    return _arg("argmax", self, dim, keepdim)


ARGMAX = Op("argmax", argmax_forward, variants=("method", "function"))


def argmin_forward(self, *, dim=None, keepdim=False):
    return _arg("argmin", self, dim, keepdim)


ARGMIN = Op("argmin", argmin_forward, variants=("method", "function"))


# ------------------------------------------------------------------ logsumexp, norm
def logsumexp_forward(self, *, dim, keepdim=False):
    """log sum exp x, shifted by the row max inside the kernel."""
    if dim is None:
        raise TypeError("logsumexp(): argument 'dim' must be tuple of ints, not NoneType")
    dims = reduce_dims(dim, self.dim())
    dt = self.dtype if self.dtype.is_floating_point else D.get_default_dtype()
    return _reduce("logsumexp", self, dims, keepdim, dt)


def logsumexp_backward(ctx, grad):
    """d lse / dx = exp(x - lse)."""
    x = ctx.saved["self"]
    shape, dims, keepdim = _ctx_dims(ctx)
    lse = _expand_grad(ctx.saved["result"], shape, dims, keepdim)
    return (_expand_grad(grad, shape, dims, keepdim) * (x - lse).exp(),)


LOGSUMEXP = Op("logsumexp", logsumexp_forward, logsumexp_backward, "LogsumexpBackward0", save=("self", "result"),
               variants=("method", "function"))


def _norm_op(p):
    if p == "fro" or p == 2:
        return "norm2"
    if p == 1:
        return "norm1"
    if p == 0:
        return "norm0"
    if p == float("inf"):
        return "norminf"
    if p == float("-inf"):
        return "normneginf"
    return "normp"


def _no_identity(x, p, dim):
    """PyTorch's error for the +-inf norm (a max/min) over an empty extent; the dim is named as given."""
    pre = f"linalg.vector_norm cannot compute the {'inf' if p > 0 else '-inf'} norm on "
    post = "because the operation does not have an identity"
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        if x.numel() == 0:
            raise RuntimeError(pre + "an empty tensor " + post)
        return
    for d in ([dim] if isinstance(dim, int) else dim) if x.dim() else ():
        if x.shape[_wrap_dim(d, x.dim())] == 0:
            raise RuntimeError(pre + f"the dimension {d}" + "because this dimension is empty and the operation "
                               "does not have an identity")


def norm_forward(self, *, p=2, dim=None, keepdim=False, dtype=None):
    """vector norm (sum |x|^p)^(1/p); p = 0, 1, 2 ('fro'), +-inf or any other float."""
    if isinstance(p, str) and p != "fro":
        raise RuntimeError(f"linalg.vector_norm: only p-norms and 'fro' are supported, got {p!r}")
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {self.dtype.legacy_name}")
    dims = reduce_dims(dim, self.dim())
    op = _norm_op(p)
    if op in ("norminf", "normneginf"):
        _no_identity(self, p, dim)
    x = self if dtype is None else self.to(D.to_dtype(dtype, "norm"))
    return _reduce(op, x, dims, keepdim, x.dtype, p=float(p) if op == "normp" else 0.0)


def norm_backward(ctx, grad):
    """p=2: x / norm;  p=1: sign x;  p=inf: sign x (|x| == norm) / count;  else sign x |x|^(p-1) / norm^(p-1).

    Rows whose norm is 0 get a zero gradient (PyTorch's masked_fill), not 0/0.
    """
    x = ctx.saved["self"]
    shape, dims, keepdim = _ctx_dims(ctx)
    g = _expand_grad(grad, shape, dims, keepdim)
    r = _expand_grad(ctx.saved["result"], shape, dims, keepdim)
    op = _norm_op(ctx.attrs.get("p", 2))
    if op == "norm2":
        return (x * (g / r).masked_fill(r == 0, 0),)
    if op == "norm0":
        return (None,)                     # like PyTorch: no gradient at all for the 0-"norm"
    sign = weights("sign", x, dims)
    if op == "norm1":
        return (g * sign,)
    if op in ("norminf", "normneginf"):
        return (g * weights("abs_eq", x, dims, ctx.saved["result"].contiguous()),)
    p = float(ctx.attrs["p"])
    return (sign * (x * sign) ** (p - 1) * (g / r ** (p - 1)).masked_fill(r == 0, 0),)


NORM = Op("norm", norm_forward, norm_backward, "LinalgVectorNormBackward0", save=("self", "result"),
          variants=("method", "function"))


# ------------------------------------------------------------------ cumsum, cumprod
def _scan(op, self, dim, dtype, reverse=False):
    d = _wrap_dim(dim, self.dim())
    dt = _sum_dtype(self, dtype, "cum" + op)
    x = self if self.is_contiguous() else KE.copy(self, empty(self.shape, self.dtype, self.device))
    out = empty(self.shape, dt, self.device)
    if self.dim() == 0:
        return KE.copy(x, out)
    shape = self.shape
    K_ = shape[d]
    M2 = _numel(shape, range(d + 1, len(shape)))
    geom = (_numel(shape, range(len(shape))) // max(K_, 1), M2, K_, K_ * M2, 1, M2)
    if K_ == 0:
        return out
    if x.dtype._kind == 3:      # sums: the two parts apart; products: the complex running product
        if op == "prod":
            return KC.prod_rows(x, geom, out, cumulative=True)
        fgeom = geom[:3] + tuple(2 * s for s in geom[3:])      # strides in floats
        for part in (0, 1):
            K.scan_rows(op, KE.FloatView(x, part), fgeom, KE.FloatView(out, part), reverse)
        return out
    return K.scan_rows(op, x, geom, out, reverse)


def cumsum_forward(self, *, dim, dtype=None, reverse=False):
    """out[..., k, ...] = sum of x[..., :k+1, ...] along ``dim`` (``reverse``: of x[..., k:, ...])."""
    return _scan("sum", self, dim, dtype, reverse)


def cumsum_backward(ctx, grad):
    """The gradient of a cumulative sum is the reversed cumulative sum."""
    return (call("cumsum", grad, dim=ctx.attrs["dim"], reverse=not ctx.attrs.get("reverse", False)),)


CUMSUM = Op("cumsum", cumsum_forward, cumsum_backward, "CumsumBackward0", variants=("method", "function"), inplace=True)


def cumprod_forward(self, *, dim, dtype=None):
    return _scan("prod", self, dim, dtype)


def cumprod_backward(ctx, grad):
    """Without zeros: revcumsum(g * out) / x.  With zeros (first zero of a row at z): positions
    before z as above, z gets revcumsum(g * cumprod(x with x_z = 1)), positions after z get 0."""
    x = ctx.saved["self"]
    out = ctx.saved["result"]
    d = ctx.attrs["dim"]
    if x.dim() == 0:
        return (grad,)
    if x.dtype._kind == 3:      # the real rule with conj(x), conj(out): grad * conj(d out / d x)
        if bool(x.eq(0).any()):
            return (_cumprod_backward_ops(grad, x.conj(), _wrap_dim(d, x.dim())),)
        return (call("cumsum", grad * out.conj(), dim=d, reverse=True) / x.conj(),)
    if not _has_zero(x):
        return (call("cumsum", grad * out, dim=d, reverse=True) / x,)
    if _recording():
        return (_cumprod_backward_ops(grad, x, _wrap_dim(d, x.dim())),)
    dims = (_wrap_dim(d, x.dim()),)
    before = weights("before_zero", x, dims)
    first = weights("first_zero", x, dims)
    safe = x * before + (1.0 - before)
    part = call("cumsum", grad * out, dim=d, reverse=True) * before / safe
    y = x * (1.0 - first) + first          # x with its first zero replaced by a constant 1
    return (part + first * call("cumsum", grad * y.cumprod(d), dim=d, reverse=True),)


CUMPROD = Op("cumprod", cumprod_forward, cumprod_backward, "CumprodBackward0", save=("self", "result"),
             variants=("method", "function"), inplace=True)


def _cumprod_backward_ops(grad, x, d):
    """dx_i = sum_{k >= i} g_k prod_{j <= k, j != i} x_j with ops, no division (O(n^2), like PyTorch's
    double-backward path): C[.., i, k] = cumprod_k of x with x_i replaced by 1, masked to k >= i."""
    n = x.shape[d]
    xt, gt = x.movedim(d, -1), grad.movedim(d, -1)
    ident = from_host(np.eye(n), x.dtype, x.device)
    upper = full((n, n), 1, x.dtype.to_real(), x.device).triu()
    c = (xt.unsqueeze(-2) * (1.0 - ident) + ident).cumprod(-1)
    return (c * upper * gt.unsqueeze(-2)).sum(-1).movedim(-1, d)


# ------------------------------------------------------------------ all, any
def _bool_reduce(op, self, dim, keepdim):
    """all / any (bool result, uint8 for uint8); of a complex input: of its x != 0, as PyTorch's."""
    dims = reduce_dims(dim, self.dim())
    if self.dtype._kind == 3:
        self = _compare_truth(self)
    return _reduce(op, self, dims, keepdim, D.uint8 if self.dtype is D.uint8 else D.bool_)


def all_forward(self, *, dim=None, keepdim=False):
    return _bool_reduce("all", self, dim, keepdim)


ALL = Op("all", all_forward, variants=("method", "function"))


def any_forward(self, *, dim=None, keepdim=False):
    return _bool_reduce("any", self, dim, keepdim)


ANY = Op("any", any_forward, variants=("method", "function"))


# ------------------------------------------------------------------ sum_to_size
def _sum_to_size_dims(shape, size):
    """The dims of ``shape`` that summing to ``size`` reduces (sorted, distinct, in range)."""
    lead = len(shape) - len(size)
    if lead < 0:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    dims = list(range(lead))
    for i, s in enumerate(size):
        d = shape[lead + i]
        if s == 1 and d != 1:
            dims.append(lead + i)
        elif s != d:
            raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    return tuple(dims)


def sum_to_size_forward(self, *, size):
    """Sum ``self`` down to ``size`` (the reverse of broadcasting)."""
    size = tuple(size)
    dims = _sum_to_size_dims(self._shape, size)
    if not dims:
        return KE.copy(self, empty(self._shape, self.dtype, self.device))
    return _reduce("sum", self, dims, True, _sum_dtype(self, None, "sum"), shape=size)


def mul_sum_to_size(x, y, size):
    """``(x * y).sum_to_size(size)`` in one launch (a mul backward's gradient for a broadcast input, issue
    #6), bit-identical to the two ops: a float32/float64 product is the same rounded value in both, and it
    is summed in the order reduce_rows gives the contiguous product.  None (the caller runs the two ops)
    for other dtypes, mixed devices, or when x and y cannot be read as the product's (M, K) rows."""
    dt = x.dtype if x.dtype is y.dtype else D.result_type(x, y)
    if (dt is not D.float32 and dt is not D.float64) or x._storage.device is not y._storage.device:
        return None
    key = (x._shape, x._strides, y._shape, y._strides, size)
    plan = _MUL_ROWS.get(key)
    if plan is None:
        if len(_MUL_ROWS) > 4096:
            _MUL_ROWS.clear()
        plan = _MUL_ROWS[key] = _mul_rows(x, y, size)
    if not plan:
        return None
    device = x._storage.device
    ckey = ("mul", key, x.dtype, y.dtype, device, KE.T.FORCE_GPU_BLOCKS)
    out = _cascaded(ckey, x, y, dt, device)
    if out is not None:
        return out
    out = empty(size, dt, device)
    order = K.cascade_plan(dt, plan[2], device) if x.dtype is dt and y.dtype is dt else None
    if order is not None:           # ATen's order for the (contiguous) product's sum
        return _cascade_sum(x, plan[0], out, order, y=y, ystrides=plan[1], key=ckey + (y.data_ptr(), x.data_ptr()))
    K.reduce_rows("sum", x, plan[0], out, y=y, ystrides=plan[1])
    return out


_MUL_ROWS = {}      # mul_sum_to_size's plans by (shapes, strides, size)


def _mul_rows(x, y, size):
    """(x's geom, y's (stride_m1, stride_m2, stride_k), the contiguous product's geom) for mul_sum_to_size, or
    False."""
    shape = G.broadcast_shapes(x._shape, y._shape)
    dims = _sum_to_size_dims(shape, size)
    if not dims:
        return False
    prod_rows = _row_views(shape, [contiguous_strides(shape)], dims)
    rows = _row_views(shape, [contiguous_strides(shape), _bstrides(x, shape), _bstrides(y, shape)], dims)
    if prod_rows is None or rows is None or rows[0] != prod_rows[0] or rows[1][0] != prod_rows[1][0]:
        return False
    return rows[0] + rows[1][1], rows[1][2], prod_rows[0] + prod_rows[1][0]


def _bstrides(t, shape):
    """t's strides broadcast to ``shape`` (0 along broadcast dims)."""
    lead = len(shape) - len(t._shape)
    return [0] * lead + [0 if d == 1 and n != 1 else st for d, n, st in zip(t._shape, shape[lead:], t._strides)]


def sum_to_size_backward(ctx, grad):
    return (grad.expand(ctx.input_meta[0].shape),)


SUM_TO_SIZE = Op("sum_to_size", sum_to_size_forward, sum_to_size_backward, "SumBackward1", variants=("method",))


ENTRIES = [SUM, SUM_ALL, MEAN, MEAN_ALL, SUM_TO_SIZE, PROD, PROD_ALL, VAR, STD, MAX_ALL, MIN_ALL, MAX, MIN, AMAX,
           AMIN, ARGMAX, ARGMIN, LOGSUMEXP, NORM, CUMSUM, CUMPROD, ALL, ANY]
