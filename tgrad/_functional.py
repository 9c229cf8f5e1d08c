"""Module-level functions (``tgrad.add``, ``tgrad.exp``, ``tgrad.sum`` ...): thin forms of Tensor methods."""
import numpy as np

from . import dtypes as D
from .autograd import dispatch, grad_mode
from . import _creation
from ._creation import arange, scalar_tensor, tensor
from .tensor import Tensor, tensor_arg


def _t(x, like=None):
    if isinstance(x, Tensor):
        return x
    if like is not None:
        return like._wrap(x)
    return tensor(x)


def add(input, other, *, alpha=1, out=None):
    if not isinstance(input, Tensor):
        return _t(other).__radd__(input) if alpha == 1 else _t(input, other).add(other, alpha=alpha)
    return _out(input.add(other, alpha=alpha), out)


def rsub(input, other, *, alpha=1):
    """other - alpha * input (RsubBackward0 for a tensor ``other``, RsubBackward1 for a number)."""
    if isinstance(other, Tensor):
        return dispatch.call("rsub_tensor", input, other, alpha=alpha)
    other = input._wrap_sub(other) if isinstance(other, (bool, np.bool_)) else input._rwrap(other)
    return dispatch.call("rsub", input, other, alpha=alpha)


def sub(input, other, *, alpha=1, out=None):
    if not isinstance(input, Tensor):
        input = other._rwrap(input)
    return _out(input.sub(other, alpha=alpha), out)


subtract = sub


def mul(input, other, *, out=None):
    if not isinstance(input, Tensor):
        return _out(other.__rmul__(input), out)
    return _out(input.mul(other), out)


multiply = mul


def div(input, other, *, rounding_mode=None, out=None):
    if not isinstance(input, Tensor):
        input = other._rwrap(input)
    return _out(input.div(other, rounding_mode=rounding_mode), out)


divide = div
true_divide = div


def neg(input, *, out=None):
    return _out(input.neg(), out)


negative = neg


def pow(input, exponent, *, out=None):
    if not isinstance(input, Tensor):
        return _out(exponent.__rpow__(input), out)
    return _out(input.pow(exponent), out)


def exp(input, *, out=None):
    return _out(input.exp(), out)


# ------------------------------------------------------------------ element-wise math
def _unary_fn(name):
    def f(input, *, out=None):
        return _out(getattr(input, name)(), out)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"``tgrad.{name}(input)``: the same as ``input.{name}()``."
    return f


abs = _unary_fn("abs")
absolute = abs
sign = _unary_fn("sign")
exp2 = _unary_fn("exp2")
log = _unary_fn("log")
log2 = _unary_fn("log2")
log10 = _unary_fn("log10")
log1p = _unary_fn("log1p")
expm1 = _unary_fn("expm1")
sqrt = _unary_fn("sqrt")
rsqrt = _unary_fn("rsqrt")
square = _unary_fn("square")
reciprocal = _unary_fn("reciprocal")
sin = _unary_fn("sin")
cos = _unary_fn("cos")
tan = _unary_fn("tan")
asin = arcsin = _unary_fn("asin")
acos = arccos = _unary_fn("acos")
atan = arctan = _unary_fn("atan")
sinh = _unary_fn("sinh")
cosh = _unary_fn("cosh")
asinh = arcsinh = _unary_fn("asinh")
acosh = arccosh = _unary_fn("acosh")
atanh = arctanh = _unary_fn("atanh")
erfc = _unary_fn("erfc")
lgamma = _unary_fn("lgamma")
digamma = _unary_fn("digamma")
i0 = _unary_fn("i0")
erfinv = _unary_fn("erfinv")


def polygamma(n, input, *, out=None):
    return _out(input.polygamma(n), out)


def frexp(input, *, out=None):
    """(mantissa, exponent) with input = mantissa * 2^exponent, 0.5 <= |mantissa| < 1 (0, inf, NaN: (x, 0))."""
    res = input.frexp()
    if out is None:
        return res
    return type(res)(_out(res[0], out[0]), _out(res[1], out[1]))


def mvlgamma(input, p, *, out=None):
    return _out(input.mvlgamma(p), out)
tanh = _unary_fn("tanh")
sigmoid = _unary_fn("sigmoid")
relu = _unary_fn("relu")
erf = _unary_fn("erf")
floor = _unary_fn("floor")
ceil = _unary_fn("ceil")
trunc = _unary_fn("trunc")
fix = trunc
frac = _unary_fn("frac")
isnan = _unary_fn("isnan")
isinf = _unary_fn("isinf")
isfinite = _unary_fn("isfinite")
logical_not = _unary_fn("logical_not")
bitwise_not = _unary_fn("bitwise_not")


def round(input, *, decimals=0, out=None):
    return _out(input.round(decimals=decimals), out)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    return _out(input.nan_to_num(nan, posinf, neginf), out)


def selu(input):
    return dispatch.call("selu", input)


def _binary_fn(name):
    def f(input, other, *, out=None):
        if not isinstance(input, Tensor):
            input = other._rwrap(input)
        return _out(getattr(input, name)(other), out)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"``tgrad.{name}(input, other)``: the same as ``input.{name}(other)`` (scalars on either side)."
    return f


def _tensors_fn(name, method=None):
    """``tgrad.<name>(input, other)`` for ops PyTorch defines on two tensors only: a number raises its TypeError."""
    def f(input, other, *, out=None):
        tensor_arg(name, input, "input", 1)
        tensor_arg(name, other, "other", 2)
        return _out(getattr(input, method or name)(other), out)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"``tgrad.{name}(input, other)``: the same as ``input.{method or name}(other)`` (tensors only)."
    return f


maximum = _tensors_fn("maximum")
minimum = _tensors_fn("minimum")
fmod = _binary_fn("fmod")
remainder = _binary_fn("remainder")
floor_divide = _binary_fn("floor_divide")
atan2 = _tensors_fn("atan2")
igamma = _tensors_fn("igamma")
igammac = _tensors_fn("igammac")
nextafter = _tensors_fn("nextafter")
arctan2 = _tensors_fn("arctan2", "atan2")
eq = _binary_fn("eq")
ne = _binary_fn("ne")
lt = _binary_fn("lt")
le = _binary_fn("le")
gt = _binary_fn("gt")
ge = _binary_fn("ge")
not_equal, less, less_equal, greater, greater_equal = ne, lt, le, gt, ge
logical_and = _tensors_fn("logical_and")
logical_or = _tensors_fn("logical_or")
logical_xor = _tensors_fn("logical_xor")
bitwise_and = _binary_fn("bitwise_and")
bitwise_or = _binary_fn("bitwise_or")
bitwise_xor = _binary_fn("bitwise_xor")
bitwise_left_shift = _binary_fn("bitwise_left_shift")
bitwise_right_shift = _binary_fn("bitwise_right_shift")


def where(condition, input=None, other=None, *, out=None):
    """condition ? input : other; either value may be a Python number.  ``where(condition)`` alone is
    ``nonzero(condition, as_tuple=True)``."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    if input is None or other is None:
        raise TypeError("where() received an invalid combination of arguments: expected (Tensor condition) or "
                        "(Tensor condition, Tensor input, Tensor other)")
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        dt = D.result_type(input, other)
        input = scalar_tensor(input, dtype=dt, device=condition.device)
        other = scalar_tensor(other, dtype=dt, device=condition.device)
    elif not isinstance(input, Tensor):
        input = other._rwrap(input)
    elif not isinstance(other, Tensor):
        other = input._wrap(other)
    return _out(dispatch.call("where", condition, input, other), out)


def clamp(input, min=None, max=None, *, out=None):
    return _out(input.clamp(min, max), out)


clip = clamp


def clamp_min(input, min):
    return input.clamp(min=min)


def clamp_max(input, max):
    return input.clamp(max=max)


def lerp(input, end, weight, *, out=None):
    return _out(input.lerp(end, weight), out)


def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    return _out(input.addcmul(tensor1, tensor2, value=value), out)


def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    return _out(input.addcdiv(tensor1, tensor2, value=value), out)


def sum(input, dim=None, keepdim=False, *, dtype=None):
    return input.sum(dim, keepdim, dtype=dtype)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    return input.mean(dim, keepdim, dtype=dtype)


def prod(input, dim=None, keepdim=False, *, dtype=None):
    return input.prod(dim, keepdim, dtype=dtype)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return input.var(dim, unbiased, keepdim, correction=correction)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return input.std(dim, unbiased, keepdim, correction=correction)


def max(input, dim=None, keepdim=False):
    return input.max(dim, keepdim)


def min(input, dim=None, keepdim=False):
    return input.min(dim, keepdim)


def sort(input, dim=-1, descending=False, stable=False):
    return input.sort(dim, descending, stable)


def argsort(input, dim=-1, descending=False, stable=False):
    return input.argsort(dim, descending, stable)


def msort(input):
    return input.msort()


def topk(input, k, dim=-1, largest=True, sorted=True):
    return input.topk(k, dim, largest, sorted)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    return input.multinomial(num_samples, replacement, generator=generator)


def poisson(input, generator=None):
    return dispatch.call("poisson", input, generator=_creation._gen(generator, input.device))


def binomial(count, prob, generator=None):
    return dispatch.call("binomial", count, prob, generator=_creation._gen(generator, count.device))


def _standard_gamma(input, generator=None):
    return dispatch.call("_standard_gamma", input, generator=_creation._gen(generator, input.device))


def _standard_gamma_grad(input, output):
    return dispatch.call("_standard_gamma_grad", input, output)


def _dirichlet_grad(x, alpha, total):
    return dispatch.call("_dirichlet_grad", x, alpha, total)


def _sample_dirichlet(input, generator=None):
    return dispatch.call("_sample_dirichlet", input, generator=_creation._gen(generator, input.device))


def amax(input, dim=(), keepdim=False):
    return input.amax(dim, keepdim)


def amin(input, dim=(), keepdim=False):
    return input.amin(dim, keepdim)


def argmax(input, dim=None, keepdim=False):
    return input.argmax(dim, keepdim)


def argmin(input, dim=None, keepdim=False):
    return input.argmin(dim, keepdim)


def logsumexp(input, dim, keepdim=False):
    return input.logsumexp(dim, keepdim)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    return input.norm(p, dim, keepdim, dtype)


def cumsum(input, dim, *, dtype=None):
    return input.cumsum(dim, dtype=dtype)


def cumprod(input, dim, *, dtype=None):
    return input.cumprod(dim, dtype=dtype)


def cummax(input, dim):
    return input.cummax(dim)


def cummin(input, dim):
    return input.cummin(dim)


def logcumsumexp(input, dim):
    return input.logcumsumexp(dim)


def all(input, dim=None, keepdim=False):
    return input.all(dim, keepdim)


def any(input, dim=None, keepdim=False):
    return input.any(dim, keepdim)


def clone(input, *, memory_format=None):
    return input.clone(memory_format=memory_format)


def reshape(input, shape):
    return input.reshape(shape)


def flatten(input, start_dim=0, end_dim=-1):
    return input.flatten(start_dim, end_dim)


def transpose(input, dim0, dim1):
    return input.transpose(dim0, dim1)


swapaxes = transpose
swapdims = transpose


def permute(input, dims):
    return input.permute(dims)


def t(input):
    return input.t()


def squeeze(input, dim=None):
    return input.squeeze(dim)


def unsqueeze(input, dim):
    return input.unsqueeze(dim)


def select(input, dim, index):
    return input.select(dim, index)


def broadcast_to(input, size):
    return input.expand(size)


# ---- linear algebra (ops/matmul.py)
def matmul(input, other, *, out=None):
    return _out(input.matmul(other), out)


def mm(input, mat2, *, out=None):
    return _out(input.mm(mat2), out)


def bmm(input, mat2, *, out=None):
    return _out(input.bmm(mat2), out)


def mv(input, vec, *, out=None):
    return _out(input.mv(vec), out)


def dot(input, tensor, *, out=None):
    return _out(input.dot(tensor), out)


def vdot(input, other, *, out=None):
    return _out(input.vdot(other), out)


def inner(input, other, *, out=None):
    return _out(input.inner(other), out)


def outer(input, vec2, *, out=None):
    return _out(input.outer(vec2), out)


ger = outer


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    return _out(input.addmm(mat1, mat2, beta=beta, alpha=alpha), out)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    return _out(input.baddbmm(batch1, batch2, beta=beta, alpha=alpha), out)


# ---- shape ops and indexing (ops/shape.py, ops/index.py)
def cat(tensors, dim=0, *, out=None):
    tensors = list(tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    return _out(dispatch.call("cat", *tensors, dim=dim), out)


concat = cat
concatenate = cat


def stack(tensors, dim=0, *, out=None):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    return _out(dispatch.call("stack", *tensors, dim=dim), out)


def split(tensor, split_size_or_sections, dim=0):
    return tensor.split(split_size_or_sections, dim)


def chunk(input, chunks, dim=0):
    return input.chunk(chunks, dim)


def unbind(input, dim=0):
    return input.unbind(dim)


def narrow(input, dim, start, length):
    return input.narrow(dim, start, length)


def flip(input, dims):
    return input.flip(dims)


def fliplr(input):
    return input.fliplr()


def flipud(input):
    return input.flipud()


def roll(input, shifts, dims=None):
    return input.roll(shifts, dims)


def tril(input, diagonal=0, *, out=None):
    return _out(input.tril(diagonal), out)


def triu(input, diagonal=0, *, out=None):
    return _out(input.triu(diagonal), out)


def movedim(input, source, destination):
    return input.movedim(source, destination)


moveaxis = movedim


def unflatten(input, dim, sizes):
    return input.unflatten(dim, sizes)


def tile(input, dims):
    return input.tile(dims)


def gather(input, dim, index, *, sparse_grad=False, out=None):
    return _out(input.gather(dim, index, sparse_grad=sparse_grad), out)


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    return input.scatter(dim, index, src, value=value, reduce=reduce)


def scatter_add(input, dim, index, src):
    return input.scatter_add(dim, index, src)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True, out=None):
    return _out(input.scatter_reduce(dim, index, src, reduce, include_self=include_self), out)


def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):
    return _out(input.index_reduce(dim, index, source, reduce, include_self=include_self), out)


def index_select(input, dim, index, *, out=None):
    return _out(input.index_select(dim, index), out)


def index_add(input, dim, index, source, *, alpha=1, out=None):
    return _out(input.index_add(dim, index, source, alpha=alpha), out)


def masked_fill(input, mask, value):
    return input.masked_fill(mask, value)


def masked_select(input, mask, *, out=None):
    return _out(input.masked_select(mask), out)


def take_along_dim(input, indices, dim=None, *, out=None):
    return _out(input.take_along_dim(indices, dim), out)


def index_put(input, indices, values, accumulate=False):
    return input.index_put(indices, values, accumulate)


def nonzero(input, *, out=None, as_tuple=False):
    return _out(input.nonzero(as_tuple=as_tuple), out) if not as_tuple else input.nonzero(as_tuple=True)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    if repeats is None:         # repeat_interleave(repeats): arange(len(repeats)) repeated
        return arange(input.numel(), device=input.device).repeat_interleave(input, 0, output_size=output_size)
    return input.repeat_interleave(repeats, dim, output_size=output_size)


def diagonal(input, offset=0, dim1=0, dim2=1):
    return input.diagonal(offset, dim1, dim2)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    return input.diag_embed(offset, dim1, dim2)


def diag(input, diagonal=0):
    return input.diag(diagonal)


def take(input, index):
    return input.take(index)


def put(input, index, source, accumulate=False):
    return input.put(index, source, accumulate)


def index_fill(input, dim, index, value):
    return input.index_fill(dim, index, value)


def masked_scatter(input, mask, source):
    return input.masked_scatter(mask, source)


def ravel(input):
    return input.ravel()


def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids: output k is tensors[k] expanded along every other dim ('xy': the first two swapped)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    ts = [t.reshape(-1) for t in tensors]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = [t.shape[0] for t in ts]
    out = []
    for k, t in enumerate(ts):
        view = [1] * len(ts)
        view[k] = -1
        out.append(t.view(view).expand(shape))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


def atleast_1d(*tensors):
    res = [t.reshape(1) if t.dim() == 0 else t for t in _seq(tensors)]
    return res[0] if len(res) == 1 else tuple(res)


def atleast_2d(*tensors):
    res = [t.reshape(1, -1) if t.dim() < 2 else t for t in _seq(tensors)]
    return res[0] if len(res) == 1 else tuple(res)


def atleast_3d(*tensors):
    res = [t.reshape(1, -1, 1) if t.dim() < 2 else (t.unsqueeze(-1) if t.dim() == 2 else t) for t in _seq(tensors)]
    return res[0] if len(res) == 1 else tuple(res)


def _seq(tensors):
    return list(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else list(tensors)


def column_stack(tensors, *, out=None):
    return cat([t.reshape(-1, 1) if t.dim() < 2 else t for t in tensors], 1, out=out)


def dstack(tensors, *, out=None):
    return cat(list(atleast_3d(*tensors)) if len(tensors) > 1 else [atleast_3d(*tensors)], 2, out=out)


def argwhere(input):
    return input.argwhere()


def hstack(tensors, *, out=None):
    tensors = [t if t.dim() else t.reshape(1) for t in tensors]
    return cat(tensors, 0 if {t.dim() for t in tensors} == {1} else 1, out=out)


def vstack(tensors, *, out=None):
    return cat([t.reshape(1, -1) if t.dim() < 2 else t for t in tensors], 0, out=out)


row_stack = vstack


def numel(input):
    return input.numel()


def is_tensor(obj):
    return isinstance(obj, Tensor)


def typename(obj, /):
    """A tensor's ``type()`` ("tgrad.FloatTensor"), else the object's "module.qualname" (builtins bare)."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if qualname is None:
        module, qualname = obj.__class__.__module__ or "", obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def is_floating_point(input):
    return input.is_floating_point()


def equal(input, other):
    return input.equal(other)


def _out(res, out):
    if out is None:
        return res
    if out.requires_grad and grad_mode.is_grad_enabled():
        raise RuntimeError("functions with out=... arguments don't support automatic differentiation, but one "
                           "of the arguments requires grad.")
    if tuple(out.shape) != tuple(res.shape):
        out.data = res.detach().to(out.dtype)
        return out
    with grad_mode.no_grad():
        out.copy_(res)
    return out
