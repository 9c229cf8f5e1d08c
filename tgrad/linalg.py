"""``tgrad.linalg``: vector norms, the cross product, and cholesky / solve_triangular composed of tensor ops
(a loop over the n rows or columns: for the small matrices of distributions; no LAPACK)."""
from ._functional import cat as _cat, stack as _stack
from ._functional_more import _cross, broadcast_tensors


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """(sum |x|^ord)^(1/ord) over ``dim`` (all elements when None); ord = 0, 1, 2, +-inf or any float."""
    return x.norm(ord, dim, keepdim, dtype)


def cross(input, other, *, dim=-1, out=None):
    """The 3-vector cross product along ``dim`` (inputs broadcast)."""
    res = _cross(*broadcast_tensors(input, other), dim)
    return res if out is None else out.copy_(res)


class LinAlgError(RuntimeError):
    """A linear-algebra function met a matrix it cannot factor (``torch.linalg.LinAlgError``)."""


def _square(A, name):
    if A.dim() < 2:
        raise RuntimeError(f"linalg.{name}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.{name}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"linalg.{name}: Expected a floating point or complex tensor as input. Got "
                           f"{A.dtype.legacy_name}")


def cholesky(A, *, upper=False, out=None):
    """L lower triangular with A = L L^T (A symmetric positive-definite; only its lower triangle is read),
    column by column (Cholesky-Banachiewicz as tensor ops, so it is differentiable; n steps)."""
    _square(A, "cholesky")
    n = A.shape[-1]
    rows = A.new_ones(n).cumsum(0).sub(1).unsqueeze(-1)           # (n, 1): 0 .. n-1
    cols = []
    for j in range(n):
        col = A[..., :, j]
        if cols:
            L = cols[0].unsqueeze(-1) if len(cols) == 1 else _stack(cols, -1)      # (..., n, j)
            col = col - L.matmul(L[..., j, :].unsqueeze(-1)).squeeze(-1)
        d = col[..., j]
        bad = ~(d > 0)
        if bool(bad.any()):
            where = ""
            if A.dim() > 2:
                where = f"(Batch element {int(bad.reshape(-1).nonzero()[0, 0])}): "
            raise LinAlgError(f"linalg.cholesky: {where}The factorization could not be completed because the input "
                              f"is not positive-definite (the leading minor of order {j + 1} is not "
                              "positive-definite).")
        ljj = d.sqrt().unsqueeze(-1)
        r = rows.squeeze(-1)
        cols.append((col / ljj).masked_fill(r < j, 0.0).where(r != j, ljj.expand(col.shape)))
    L = _stack(cols, -1)
    res = L.transpose(-2, -1) if upper else L
    return res if out is None else out.copy_(res)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """X with A X = B (left) or X A = B, A triangular, by substitution row by row as tensor ops (batches
    broadcast)."""
    if not left:
        X = solve_triangular(A.transpose(-2, -1), B.transpose(-2, -1), upper=not upper,
                             unitriangular=unitriangular).transpose(-2, -1)
        return X if out is None else out.copy_(X)
    n = A.shape[-1]
    order = range(n - 1, -1, -1) if upper else range(n)
    xs = {}
    for i in order:
        b = B[..., i:i + 1, :]
        done = sorted(xs)
        if done:
            Xd = _cat([xs[k] for k in done], -2)                    # (..., m, k)
            idx = A.new_tensor(done).long()
            b = b - A[..., i:i + 1, :].index_select(-1, idx).matmul(Xd)
        xs[i] = b if unitriangular else b / A[..., i:i + 1, i:i + 1]
    X = _cat([xs[i] for i in range(n)], -2)
    return X if out is None else out.copy_(X)
