"""``tgrad.linalg``: vector norms (matrix functions are not implemented)."""


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """(sum |x|^ord)^(1/ord) over ``dim`` (all elements when None); ord = 0, 1, 2, +-inf or any float."""
    return x.norm(ord, dim, keepdim, dtype)
