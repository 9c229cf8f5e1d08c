"""``tgrad.linalg``: vector norms and the cross product (matrix functions are not implemented)."""
from ._functional_more import _cross, broadcast_tensors


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """(sum |x|^ord)^(1/ord) over ``dim`` (all elements when None); ord = 0, 1, 2, +-inf or any float."""
    return x.norm(ord, dim, keepdim, dtype)


def cross(input, other, *, dim=-1, out=None):
    """The 3-vector cross product along ``dim`` (inputs broadcast)."""
    res = _cross(*broadcast_tensors(input, other), dim)
    return res if out is None else out.copy_(res)
