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
