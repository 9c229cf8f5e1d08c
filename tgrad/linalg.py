"""``tgrad.linalg`` (and the ``tgrad.*`` / Tensor forms PyTorch has): the factorizations of the op table
(LU, Cholesky, triangular solves, symmetric eigen, SVD, QR; tgrad/ops/linalg.py, one-block Triton kernels for
float32 / float64 matrices of side <= 128) and what is composed of them (norms, pinv, lstsq, matrix_rank, ...).

Singular / not positive-definite inputs raise LinAlgError with PyTorch's wording (the info of the ``_ex`` ops is
read back to the host for that, as PyTorch does).
"""
from . import _creation, dtypes as D, return_types as R
from ._functional import cat as _cat
from ._functional_more import _cross, broadcast_tensors
from .autograd.dispatch import call as _call
from .kernels.linalg import MAX_N  # noqa: F401  (the matrix-size limit of the kernels)
from .ops import linalg as _ops_linalg


class _LinAlgError(RuntimeError):
    """A linear-algebra function met a matrix it cannot factor (``torch.linalg.LinAlgError``, whose class is
    ``torch._C._LinAlgError``: programs print ``type(e).__name__``)."""


LinAlgError = _LinAlgError


# ------------------------------------------------------------------ checks
def _at_least_2d(A, name, what="A"):
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor {what} must have at least 2 dimensions.")


def _float(A, name):
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {A.dtype.legacy_name}")
    if A.dtype.itemsize < 4:
        raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {A.dtype.legacy_name}")


def _square(A, name):
    _at_least_2d(A, name)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")
    _float(A, name)


def _matrix(A, name):
    _at_least_2d(A, name)
    _float(A, name)


def _same_dtype(A, B, name):
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{name}: Expected A and B to have the same dtype, but found A of type "
                           f"{A.dtype.legacy_name} and B of type {B.dtype.legacy_name} instead")


def _bad(info):
    """Index of the first matrix whose info is nonzero (and that info), or None."""
    flat = info.reshape(-1)
    if flat.numel() == 0 or flat.is_meta:     # (meta: no values, nothing to report, as PyTorch's meta kernels)
        return None
    nz = flat.ne(0).nonzero()
    if nz.shape[0] == 0:
        return None
    i = int(nz[0, 0])
    return i, int(flat[i])


def _raise(info, batched, message, exc=LinAlgError):
    """Raise ``exc(message(info))`` for the first failed matrix ("(Batch element i): " when batched)."""
    bad = _bad(info)
    if bad is not None:
        prefix, msg = message(bad[1])
        raise exc(f"{prefix}{f'(Batch element {bad[0]}): ' if batched else ''}{msg}")


def _cholesky_msg(name):
    return lambda k: (f"{name}: ", "The factorization could not be completed because the input is not "
                      f"positive-definite (the leading minor of order {k} is not positive-definite).")


# ------------------------------------------------------------------ vectors
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """(sum |x|^ord)^(1/ord) over ``dim`` (all elements when None); ord = 0, 1, 2, +-inf or any float."""
    res = x.norm(ord, dim, keepdim, dtype)
    return res if out is None else out.copy_(res)


def cross(input, other, *, dim=-1, out=None):
    """The 3-vector cross product along ``dim`` (inputs broadcast)."""
    res = _cross(*broadcast_tensors(input, other), dim)
    return res if out is None else out.copy_(res)


def vecdot(x, y, *, dim=-1, out=None):
    """sum(conj(x) * y) along ``dim`` (inputs broadcast)."""
    res = (x * y).sum(dim)
    return res if out is None else out.copy_(res)


def matmul(input, other, *, out=None):
    res = input.matmul(other)
    return res if out is None else out.copy_(res)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    return A.diagonal(offset, dim1, dim2)


def vander(x, *, N=None):
    """x[..., i] ** j for j < N (N = x.shape[-1] by default): increasing powers (``torch.linalg.vander``)."""
    if x.dim() < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension.")
    n = x.shape[-1] if N is None else N
    if n <= 1:
        if n < 0:
            raise RuntimeError("N must be greater than 1.")
        return x.new_ones(*x.shape, n)
    cols = [x.new_ones(x.shape).unsqueeze(-1), x.unsqueeze(-1)]
    for _ in range(2, n):
        cols.append(cols[-1] * x.unsqueeze(-1))
    return _cat(cols, -1)


# ------------------------------------------------------------------ LU family
def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """(LU, pivots, info): P A = L U with partial pivoting (pivots 1-based, int32; info > 0: U[info, info] == 0)."""
    _matrix(A, "linalg.lu_factor_ex")
    res = R.linalg_lu_factor_ex(*_call("linalg_lu_factor_ex", A, pivot=pivot))
    if check_errors:
        _raise(res.info, A.dim() > 2, lambda k: ("linalg.lu_factor_ex: ", f"U[{k},{k}] is zero and using it on "
                                                 "lu_solve would result in a division by zero."))
    return res if out is None else _copy_out(out, res)


def lu_factor(A, *, pivot=True, out=None):
    """(LU, pivots) of A; a RuntimeError if some U[k, k] is zero (lu_factor_ex returns those)."""
    _matrix(A, "linalg.lu_factor")
    LU, piv, info = _call("linalg_lu_factor_ex", A, pivot=pivot)
    _raise(info, A.dim() > 2, lambda k: (
        "torch.linalg.lu_factor: ", f"U[{k},{k}] is zero and using it on lu_solve would result in a division by "
        "zero. If you still want to perform the factorization, consider calling linalg.lu(A, pivot) or "
        "linalg.lu_factor_ex(A, pivot)"), RuntimeError)
    res = R.linalg_lu_factor(LU, piv)
    return res if out is None else _copy_out(out, res)


def _copy_out(out, res):
    for o, r in zip(out, res):
        o.copy_(r)
    return out


def _perm(pivots, m):
    """P (..., m, m) with A = P L U from lu_factor's 1-based pivots (..., k), k <= m."""
    k = pivots.shape[-1]
    if k < m:       # rows k.. are not swapped: pivot i + 1 for row i
        rest = pivots.new_ones(m - k).cumsum(0).add(k).expand(*pivots.shape[:-1], m - k)
        pivots = _cat([pivots, rest.to(pivots.dtype)], -1)
    eye = _eye(m, pivots, D.float64)
    return _call("linalg_lu_solve", eye, pivots, eye).mT


def _eye(n, like, dtype=None, batch=None):
    """The identity (n, n) on like's device, batched as ``batch`` (default: like's shape without its last dim)."""
    batch = tuple(like.shape[:-1]) if batch is None else tuple(batch)
    return like.new_ones(*batch, n, dtype=dtype or like.dtype).diag_embed()


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """(P, L, U) with A = P L U from lu_factor's output (A (..., m, n), k = min(m, n): L (..., m, k) unit lower,
    U (..., k, n) upper)."""
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    L = U = P = LU_data.new_empty(0)
    if unpack_data:
        L = LU_data[..., :, :k].tril(-1) + _creation.eye(m, k, dtype=LU_data.dtype, device=LU_data.device)
        U = LU_data[..., :k, :].triu()
    if unpack_pivots:
        P = _perm(LU_pivots, m).to(LU_data.dtype)
    res = R.lu_unpack(P, L, U)
    return res if out is None else _copy_out(out, res)


def lu(A, *, pivot=True, out=None):
    """(P, L, U) with A = P L U (P a permutation, L unit lower, U upper)."""
    _matrix(A, "linalg.lu")
    LU, piv, _ = _call("linalg_lu_factor_ex", A, pivot=pivot)
    res = R.linalg_lu(*lu_unpack(LU, piv))
    return res if out is None else _copy_out(out, res)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """X with A X = B (adjoint: A^T X = B; left=False: X A = B / X A^T = B) from A's lu_factor."""
    _at_least_2d(B, "linalg.lu_solve", "B")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        eq, (p, q) = ("AX = B", B.shape[-2:]) if left else ("XA = B", B.shape[-2:])
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation {eq} ({n}x{n} and "
                           f"{p}x{q})")
    res = _call("linalg_lu_solve", LU, pivots, B, left=left, adjoint=adjoint)
    return res if out is None else out.copy_(res)


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """(X, info) with A X = B (left=False: X A = B); B may be a (batch of) vector(s)."""
    _square(A, "linalg.solve")
    _float(B, "linalg.solve")
    _same_dtype(A, B, "linalg.solve")
    vec = _ops_linalg.vector_rhs(A, B)
    Bm = B.unsqueeze(-1) if vec else B
    n = A.shape[-1]
    if (Bm.shape[-2] if left else Bm.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        p, q = Bm.shape[-2:]
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation {eq} ({n}x{n} and "
                           f"{p}x{q})")
    X, info = _call("linalg_solve_ex", A, B, left=left)
    if check_errors:
        _raise(info, A.dim() > 2, lambda k: ("torch.linalg.solve_ex: ", "The solver failed because the input "
                                             "matrix is singular."))
    res = R.linalg_solve_ex(X, info)
    return res if out is None else _copy_out(out, res)


def solve(A, B, *, left=True, out=None):
    """X with A X = B (left=False: X A = B); LinAlgError if A is singular."""
    X, info = solve_ex(A, B, left=left)
    _raise(info, A.dim() > 2, lambda k: ("torch.linalg.solve: ", "The solver failed because the input matrix "
                                         "is singular."))
    return X if out is None else out.copy_(X)


def inv_ex(A, *, check_errors=False, out=None):
    _square(A, "linalg.inv")
    res = R.linalg_inv_ex(*_call("linalg_inv_ex", A))
    if check_errors:
        _raise(res.info, A.dim() > 2, _inv_msg)
    return res if out is None else _copy_out(out, res)


def _inv_msg(k):
    return "linalg.inv: ", (f"The diagonal element {k} is zero, the inversion could not be completed because the "
                            "input matrix is singular.")


def inv(A, *, out=None):
    """A^-1; LinAlgError if A is singular."""
    Ai, info = inv_ex(A)
    _raise(info, A.dim() > 2, _inv_msg)
    return Ai if out is None else out.copy_(Ai)


def det(A, *, out=None):
    _square(A, "linalg.det")
    res = _call("linalg_det", A)
    return res if out is None else out.copy_(res)


def slogdet(A, *, out=None):
    """(sign, log|det A|)."""
    _square(A, "linalg.slogdet")
    res = R.linalg_slogdet(*_call("linalg_slogdet", A))
    return res if out is None else _copy_out(out, res)


def logdet(A):
    """log det A: nan when det A < 0, -inf when it is 0 (``torch.logdet``)."""
    _square(A, "linalg.slogdet")
    sign, logabs = _call("linalg_slogdet", A)
    return logabs + sign.log()


# ------------------------------------------------------------------ Cholesky, triangular
def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """(L, info): A = L L^T from the lower triangle (upper: U with A = U^T U, from the upper triangle)."""
    _square(A, "linalg.cholesky")
    res = R.linalg_cholesky_ex(*_call("linalg_cholesky_ex", A, upper=upper))
    if check_errors:
        _raise(res.info, A.dim() > 2, _cholesky_msg("linalg.cholesky_ex"))
    return res if out is None else _copy_out(out, res)


def cholesky(A, *, upper=False, out=None):
    """L with A = L L^T (A symmetric positive-definite; LinAlgError otherwise)."""
    L, info = cholesky_ex(A, upper=upper)
    _raise(info, A.dim() > 2, _cholesky_msg("linalg.cholesky"))
    return L if out is None else out.copy_(L)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """X with T X = B (left) or X T = B, T the upper / lower triangle of A (batch dims broadcast)."""
    _at_least_2d(A, "linalg.solve_triangular")
    _at_least_2d(B, "linalg.solve_triangular", "B")
    _square(A, "linalg.solve_triangular")
    _same_dtype(A, B, "linalg.solve_triangular")
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    X = _call("linalg_solve_triangular", A, B, upper=upper, left=left, unitriangular=unitriangular)
    return X if out is None else out.copy_(X)


def cholesky_solve(B, L, upper=False, *, out=None):
    """X with A X = B, A = L L^T (upper: A = U^T U) given its Cholesky factor (``torch.cholesky_solve``)."""
    if upper:
        L = L.mT
    Y = solve_triangular(L, B, upper=False)
    X = solve_triangular(L.mT, Y, upper=True)
    return X if out is None else out.copy_(X)


def cholesky_inverse(L, upper=False, *, out=None):
    """A^-1 from A's Cholesky factor (``torch.cholesky_inverse``)."""
    _square(L, "cholesky_inverse")
    res = cholesky_solve(_eye(L.shape[-1], L, batch=L.shape[:-2]), L, upper)
    return res if out is None else out.copy_(res)


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """(X, A clone) with op(T) X = b (``torch.triangular_solve``, the old API)."""
    T = A.mT if transpose else A
    X = solve_triangular(T, b, upper=upper != transpose, unitriangular=unitriangular)
    res = R.triangular_solve(X, A.clone())
    return res if out is None else _copy_out(out, res)


# ------------------------------------------------------------------ composed
def matrix_power(A, n, *, out=None):
    """A^n by repeated squaring (n < 0: inv(A)^-n; n = 0: the identity)."""
    _at_least_2d(A, "linalg.matrix_power")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if n == 0:
        res = _eye(A.shape[-1], A, batch=A.shape[:-2])
    else:
        base = inv(A) if n < 0 else A
        k, res = abs(n), None
        while k:
            if k & 1:
                res = base if res is None else res.matmul(base)
            k >>= 1
            if k:
                base = base.matmul(base)
    return res if out is None else out.copy_(res)


def multi_dot(tensors, *, out=None):
    """tensors[0] @ tensors[1] @ ...; the first / last may be 1-D (a row / column vector)."""
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    ts = list(tensors)
    first, last = ts[0].dim() == 1, ts[-1].dim() == 1
    if first:
        ts[0] = ts[0].unsqueeze(0)
    if last:
        ts[-1] = ts[-1].unsqueeze(-1)
    for i, t in enumerate(ts):
        if t.dim() != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D" if 0 < i < len(ts) - 1
                               else f"multi_dot(): the {'first' if i == 0 else 'last'} tensor must be 1D or 2D but "
                                    f"got {tensors[i].dim()}D")
    res = ts[0]
    for t in ts[1:]:
        res = res.mm(t)
    if first:
        res = res.squeeze(0)
    if last:
        res = res.squeeze(-1)
    return res if out is None else out.copy_(res)


# ------------------------------------------------------------------ the tgrad.* forms
def _torch_cholesky(input, upper=False, *, out=None):
    """``torch.cholesky`` (deprecated in PyTorch, still used): linalg.cholesky."""
    return cholesky(input, upper=upper, out=out)


def _torch_slogdet(input, *, out=None):
    """``torch.slogdet``: (sign, logabsdet) as ``return_types.slogdet``."""
    res = R.slogdet(*slogdet(input))
    return res if out is None else _copy_out(out, res)


# ------------------------------------------------------------------ symmetric eigen, norms
def _uplo(UPLO, name="linalg.eigh"):
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    _ = name
    return UPLO.upper()


def eigh(A, UPLO="L", *, out=None):
    """(eigenvalues ascending, eigenvectors) of the symmetric A read from its lower (UPLO="U": upper) triangle
    (cyclic Jacobi in one kernel; each eigenvector's sign is arbitrary, as LAPACK's)."""
    _square(A, "linalg.eigh")
    res = R.linalg_eigh(*_call("linalg_eigh", A, UPLO=_uplo(UPLO)))
    return res if out is None else _copy_out(out, res)


def matrix_exp(A):
    """exp(A) = sum_k A^k / k! of (..., n, n) A (scaling and squaring; see tgrad/ops/linalg.py)."""
    return _call("linalg_matrix_exp", A)


def _no_complex(A, name):
    _square(A, name)
    raise NotImplementedError(f"{name}: the eigenvalues of a general real matrix are complex, and tgrad has no complex "
                              "dtypes (complex64/complex128), so it cannot return them; for a symmetric matrix use "
                              "tgrad.linalg.eigh / eigvalsh")


def eig(A, *, out=None):
    """Not available: ``torch.linalg.eig`` returns complex tensors (see ``_no_complex``)."""
    _no_complex(A, "linalg.eig")


def eigvals(A, *, out=None):
    _no_complex(A, "linalg.eigvals")


def eigvalsh(A, UPLO="L", *, out=None):
    _square(A, "linalg.eigvalsh")
    res = _call("linalg_eigh", A, UPLO=_uplo(UPLO))[0]
    return res if out is None else out.copy_(res)


def svd(A, full_matrices=True, *, driver=None, out=None):
    """(U, S descending, Vh) with A = U diag(S) Vh (one-sided Jacobi in one kernel; singular vectors' signs are
    arbitrary, as LAPACK's; a zero singular value's columns of U are zero when not full_matrices)."""
    _matrix(A, "linalg.svd")
    res = R.linalg_svd(*_call("linalg_svd", A, full_matrices=full_matrices))
    return res if out is None else _copy_out(out, res)


def svdvals(A, *, driver=None, out=None):
    """The singular values, descending."""
    _matrix(A, "linalg.svdvals")
    res = _call("linalg_svd", A, full_matrices=False)[1]
    return res if out is None else out.copy_(res)


def _torch_svd(input, some=True, compute_uv=True, *, out=None):
    """``torch.svd`` (the old API): (U, S, V) with V = Vh^T; some=False gives the full U, V; without compute_uv
    U and V are zeros."""
    _matrix(input, "svd")
    U, S, Vh = _call("linalg_svd", input, full_matrices=not some)
    if not compute_uv:
        m, n = input.shape[-2:]
        U, Vh = input.new_zeros(*input.shape[:-2], m, m), input.new_zeros(*input.shape[:-2], n, n)
    res = R.svd(U, S, Vh.mT)
    return res if out is None else _copy_out(out, res)


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """V diag(1/S) U^T over the singular values above max(atol, rtol * S_max) (rtol default eps * max(m, n)
    when atol is not given either); ``hermitian``: V diag(1/L) V^T from eigh of A's lower triangle, over
    the eigenvalues with |L| above the same bound."""
    _matrix(A, "linalg.pinv")
    if hermitian:
        L, V = _call("linalg_eigh", A, UPLO=_uplo("L"))
        S = L.abs()
        U = V
        Vh = V.mT
    else:
        U, S, Vh = _call("linalg_svd", A, full_matrices=False)
        L = S
    keep = S > _tolerance(A, S, atol, rtol)
    Sinv = (1 / L.where(keep, L.new_ones(()))).where(keep, L.new_zeros(()))
    res = (Vh.mT * Sinv.unsqueeze(-2)).matmul(U.mT)
    return res if out is None else out.copy_(res)


def pinverse(input, rcond=1e-15):
    """``torch.pinverse``: ``linalg.pinv(input, rtol=rcond)``."""
    return pinv(input, rtol=rcond)


def _tolerance(A, S, atol, rtol):
    """max(atol, rtol * S_max) per matrix, (..., 1); rtol defaults to eps * max(m, n), or 0 when atol is given."""
    smax = S.amax(-1, keepdim=True) if S.shape[-1] else S.new_zeros(*S.shape[:-1], 1)
    if rtol is None:
        rtol = D.finfo(A.dtype).eps * max(A.shape[-2:]) if atol is None else 0.0
    tol = smax * rtol
    if atol is not None:
        tol = tol.clamp(min=atol) if not hasattr(atol, "shape") else tol.maximum(atol.unsqueeze(-1))
    return tol


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The number of singular values above max(atol, rtol * S_max)."""
    _matrix(A, "linalg.matrix_rank")
    S = svdvals(A)
    res = (S > _tolerance(A, S, atol, rtol)).sum(-1)
    return res if out is None else out.copy_(res)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """'fro', 'nuc', +-1 (max / min column abs sum), +-2 (largest / smallest singular value), +-inf (row sums)."""
    _at_least_2d(A, "linalg.matrix_norm")
    if dtype is not None:
        A = A.to(dtype)
    d0, d1 = (d % A.dim() for d in dim)
    if ord == "fro":
        res = A.norm(2, (d0, d1), keepdim)
    elif ord in ("nuc", 2, -2):
        sv = svdvals(A.movedim((d0, d1), (-2, -1)))
        res = sv.sum(-1) if ord == "nuc" else (sv.amax(-1) if ord == 2 else sv.amin(-1))
        if keepdim:
            res = res.unsqueeze(min(d0, d1)).unsqueeze(max(d0, d1))
    elif ord in (1, -1, float("inf"), float("-inf")):
        sum_dim, red_dim = (d0, d1) if ord in (1, -1) else (d1, d0)
        s = A.abs().sum(sum_dim, keepdim=True)
        res = s.amax(red_dim, keepdim=True) if ord > 0 else s.amin(red_dim, keepdim=True)
        if not keepdim:
            res = res.squeeze((d0, d1))
    else:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    return res if out is None else out.copy_(res)


def cond(A, p=None, *, out=None):
    """kappa_p(A) = ||A||_p ||A^-1||_p; p None / +-2: ratio of the largest and smallest singular values (any
    m x n A); other p need square A, and a singular A gives inf (PyTorch's convention)."""
    if A.dim() < 2:
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    if p not in (None, 2, -2, "fro", "nuc", 1, -1, float("inf"), float("-inf")):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    if p in (None, 2, -2):
        sv = svdvals(A)
        res = sv[..., 0] / sv[..., -1] if p != -2 else sv[..., -1] / sv[..., 0]
    else:
        if A.shape[-1] != A.shape[-2]:
            raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but they are "
                               f"{A.shape[-2]} by {A.shape[-1]} matrices")
        Ai, info = inv_ex(A)
        res = matrix_norm(A, p) * matrix_norm(Ai, p)
        res = res.masked_fill(info > 0, float("inf"))
    return res if out is None else out.copy_(res)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    """vector_norm or matrix_norm as PyTorch picks: a string ord or a 2-tuple dim (or ord with a 2-D A and no
    dim) is a matrix norm; otherwise the 2-norm of the flattened A / the vector ord-norm over ``dim``."""
    if isinstance(dim, int):
        dim = (dim,)
    if isinstance(ord, str) or (dim is not None and len(dim) == 2) or (ord is not None and dim is None
                                                                       and A.dim() == 2):
        res = matrix_norm(A, "fro" if ord is None else ord, (-2, -1) if dim is None else dim, keepdim,
                          dtype=dtype)
    else:
        if ord is not None and dim is None and A.dim() != 1:
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                               f"{A.dim()}D.")
        res = vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
    return res if out is None else out.copy_(res)



# ------------------------------------------------------------------ QR, least squares
def qr(A, mode="reduced", *, out=None):
    """(Q, R) with A = Q R (Householder, LAPACK's signs); mode "reduced", "complete" or "r" (Q empty)."""
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           "or 'complete'")
    _matrix(A, "linalg.qr")
    res = R.linalg_qr(*_call("linalg_qr", A, mode=mode))
    return res if out is None else _copy_out(out, res)


def _torch_qr(input, some=True, *, out=None):
    """``torch.qr`` (the old API): some=True is mode "reduced", else "complete"."""
    res = R.qr(*qr(input, "reduced" if some else "complete"))
    return res if out is None else _copy_out(out, res)


def lstsq(A, B, rcond=None, *, driver=None, out=None):
    """The least-squares X minimizing |A X - B| for A (..., m, n) of full column rank, m >= n, through QR (the
    "gels" driver): X = R^-1 Q^T B.  residuals / rank / singular_values are empty, as gels returns them."""
    _matrix(A, "linalg.lstsq")
    if driver not in (None, "gels"):
        raise NotImplementedError(f"linalg.lstsq: tgrad has the 'gels' driver only (got driver='{driver}')")
    m, n = A.shape[-2:]
    if m < n:
        raise NotImplementedError("linalg.lstsq: tgrad solves the square / tall case (m >= n) only")
    vec = B.dim() == A.dim() - 1
    Bm = B.unsqueeze(-1) if vec else B
    Q, Rr = _call("linalg_qr", A, mode="reduced")
    X = solve_triangular(Rr, Q.mT.matmul(Bm), upper=True)
    if vec:
        X = X.squeeze(-1)
    empty = A.new_empty(0)
    res = R.linalg_lstsq(X, empty, empty.long(), empty)
    return res if out is None else _copy_out(out, res)


def _approximate_basis(A, q, niter):
    """Halko et al. 2009, algorithm 4.4 (PyTorch's get_approximate_basis): an orthonormal (m, q) Q with
    Q Q^H A ~ A, from a randn(n, q) test matrix and ``niter`` subspace iterations."""
    dtype = A.dtype if A.dtype in (D.float16, D.float32, D.float64) or A.is_complex() else D.float32
    X = A.matmul(_creation.randn(A.shape[-1], q, dtype=dtype, device=A.device))
    Q = qr(X).Q
    for _ in range(niter):
        Q = qr(A.mH.matmul(Q)).Q
        Q = qr(A.matmul(Q)).Q
    return Q


def svd_lowrank(A, q=6, niter=2, M=None):
    """Randomized SVD of A - M (Halko et al. 2009, algorithm 5.1): (U (m, q), S (q,), V (n, q))."""
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        A = A - M.broadcast_to(A.shape)
    if m < n:
        A = A.mH
    Q = _approximate_basis(A, q, 2 if niter is None else niter)
    U, S, Vh = svd(Q.mH.matmul(A), full_matrices=False)
    U, V = Q.matmul(U), Vh.mH
    return (V, S, U) if m < n else (U, S, V)


def pca_lowrank(A, q=None, center=True, niter=2):
    """PCA of A (*, m, n) by svd_lowrank of the column-centred A: (U, S, V), V's columns the principal
    directions, S**2 / (m - 1) the variances; q defaults to min(6, m, n)."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if A.is_sparse:
        A = A.to_dense()
    return svd_lowrank(A - A.mean(dim=(-2,), keepdim=True) if center else A, q, niter=niter)
