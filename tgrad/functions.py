"""Module-level functions (``tgrad.add``, ``tgrad.exp``, ``tgrad.sum`` ...): thin forms of Tensor methods."""
from .tensor import Tensor


def _t(x, like=None):
    if isinstance(x, Tensor):
        return x
    from .creation import scalar_tensor, tensor
    if like is not None:
        return like._wrap(x)
    return tensor(x)


def add(input, other, *, alpha=1, out=None):
    if not isinstance(input, Tensor):
        return _t(other).__radd__(input) if alpha == 1 else _t(input, other).add(other, alpha=alpha)
    return _out(input.add(other, alpha=alpha), out)


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


def sum(input, dim=None, keepdim=False, *, dtype=None):
    return input.sum(dim, keepdim, dtype=dtype)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    return input.mean(dim, keepdim, dtype=dtype)


def clone(input, *, memory_format=None):
    return input.clone()


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


# ---- linear algebra (ops/linalg.py)
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


def outer(input, vec2, *, out=None):
    return _out(input.outer(vec2), out)


ger = outer


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    return _out(input.addmm(mat1, mat2, beta=beta, alpha=alpha), out)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    return _out(input.baddbmm(batch1, batch2, beta=beta, alpha=alpha), out)


# ---- shape ops and indexing (ops/shape.py, ops/advanced_index.py)
def cat(tensors, dim=0, *, out=None):
    tensors = list(tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    from .autograd import dispatch
    return _out(dispatch.call("cat", *tensors, dim=dim), out)


concat = cat
concatenate = cat


def stack(tensors, dim=0, *, out=None):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    from .autograd import dispatch
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
    return _out(input.gather(dim, index), out)


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    return input.scatter(dim, index, src, value=value, reduce=reduce)


def scatter_add(input, dim, index, src):
    return input.scatter_add(dim, index, src)


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


def numel(input):
    return input.numel()


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(input):
    return input.is_floating_point()


def equal(input, other):
    return input.equal(other)


def _out(res, out):
    if out is None:
        return res
    from .autograd import grad_mode
    if out.requires_grad and grad_mode.is_grad_enabled():
        raise RuntimeError("functions with out=... arguments don't support automatic differentiation, but one "
                           "of the arguments requires grad.")
    if tuple(out.shape) != tuple(res.shape):
        from .ops import shape as S  # noqa: F401
        out.data = res.detach().to(out.dtype)
        return out
    with grad_mode.no_grad():
        out.copy_(res)
    return out
