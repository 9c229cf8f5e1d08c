"""``tgrad.sparse``: functions on sparse COO tensors (``tgrad._sparse`` holds the tensor and its rules)."""
from .. import _sparse
from .._sparse import sparse_coo_tensor  # noqa: F401
from ..tensor import Tensor


def sum(input, dim=None, dtype=None):
    """All elements of a sparse tensor (a 0-d dense tensor), or over ``dim``: sparse while sparse dims remain."""
    return _sparse.sparse_sum(input, dim, dtype)


def mm(mat1, mat2, reduce="sum"):
    """sparse (n, m) @ dense (m, p) -> dense (n, p)."""
    if reduce != "sum":
        raise NotImplementedError(f"tgrad.sparse.mm: reduce={reduce!r} is not supported")
    return _sparse.sparse_mm(mat1, mat2)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """beta * mat + alpha * (mat1 @ mat2), mat1 sparse."""
    return _sparse.addmm(mat, mat1, mat2, beta, alpha)


class check_sparse_tensor_invariants:
    """Context manager / decorator: sparse_coo_tensor checks its indices' bounds while active."""

    @staticmethod
    def is_enabled():
        return _sparse._INVARIANTS[0]

    @staticmethod
    def enable():
        _sparse._INVARIANTS[0] = True

    @staticmethod
    def disable():
        _sparse._INVARIANTS[0] = False

    def __init__(self, enable=True):
        self.state = enable
        self.saved = None

    def __enter__(self):
        self.saved = _sparse._INVARIANTS[0]
        _sparse._INVARIANTS[0] = self.state

    def __exit__(self, *exc):
        _sparse._INVARIANTS[0] = self.saved

    def __call__(self, fn):
        def wrapped(*a, **k):
            with self:
                return fn(*a, **k)
        return wrapped


__all__ = ["addmm", "check_sparse_tensor_invariants", "mm", "sum", "Tensor"]
