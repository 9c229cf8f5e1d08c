"""Matrix factorizations and what is built on them (``tgrad.linalg``): LU (lu_factor, lu_solve, solve, inv, det,
slogdet), Cholesky, triangular solves, the symmetric eigendecomposition, SVD, QR.  Each forward runs the one-block
kernels of tgrad/kernels/linalg.py over a batch of matrices; the backward rules are PyTorch's (FunctionsManual.cpp)
written with tgrad ops, so they differentiate again.  Singular inputs are reported through ``info`` outputs (the
``_ex`` ops); raising LinAlgError is the API's job (tgrad/linalg.py).
"""
from .. import dtypes as D
from ..kernels import elementwise as KE
from ..kernels import linalg as KL
from ..kernels._geometry import broadcast_shapes
from ..tensor import empty
from . import Op, call as _c, host_full
from ._rows import contig, merged_stride
from .matmul import baddbmm_forward, bmm_forward
from .shape import (cat_forward, diag_embed_forward, expand_forward, slice_forward, squeeze_forward, transpose_forward,
                    unsqueeze_forward, view_forward)


def _prod(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _check_size(name, n):
    if n > KL.MAX_N:
        raise RuntimeError(f"{name}: tgrad factors matrices of at most {KL.MAX_N} x {KL.MAX_N} (one matrix per "
                           f"kernel block), got a side of {n}")


def _mats(t):
    """(tensor, B, (batch stride, row stride, col stride)): t (..., M, N) as B matrices; a contiguous copy when
    the batch dims do not merge into one stride."""
    sb = merged_stride(t.shape[:-2], t.stride()[:-2])
    if sb is None:
        t = contig(t)
        sb = t.shape[-1] * t.shape[-2]
    return t, _prod(t.shape[:-2]), (sb, t.stride(-2), t.stride(-1))


def _mT(t):
    """t^T, in a forward (no graph)."""
    return transpose_forward(t, dim0=-2, dim1=-1)


def _eye_like(t):
    """The identity shaped and batched like the square t (a new tensor, no graph)."""
    return diag_embed_forward(host_full(tuple(t.shape[:-1]), 1.0, t.dtype, t.device, broadcast=True))


def _expand_batch(a, b):
    """a (..., n, n), b (..., n, k) with their batch dims broadcast (views)."""
    batch = tuple(broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    return (expand_forward(a, size=batch + tuple(a.shape[-2:])), expand_forward(b, size=batch + tuple(b.shape[-2:])))


# ------------------------------------------------------------------ LU
def _lu(A, name):
    """(LU, pivots, info, det, sign, logabsdet) of A (..., M, N)."""
    _check_size(name, max(A.shape[-2:]))
    a, B, sa = _mats(A)
    M, N = A.shape[-2:]
    batch = tuple(A.shape[:-2])
    lu = empty(A.shape, A.dtype, A.device)
    piv = empty(batch + (min(M, N),), D.int32, A.device)
    info = empty(batch, D.int32, A.device)
    det, sgn, lad = (empty(batch, A.dtype, A.device) for _ in range(3))
    KL.lu_factor(a, lu, piv, info, det, sgn, lad, (B, M, N, sa))
    return lu, piv, info, det, sgn, lad


def _lu_solve(lu, piv, b, trans=False):
    """A^-1 b (A^-T b) from lu (..., n, n) and piv (..., n), b (..., n, k); batch dims already equal."""
    n, k = b.shape[-2:]
    x = empty(b.shape, b.dtype, b.device)
    lu, piv = contig(lu), contig(piv)
    bb, B, sb = _mats(b)
    KL.lu_solve(lu, piv, bb, x, (B, n, k, n * n, n, sb), trans)
    return x


def lu_factor_ex_forward(A, *, pivot=True, check_errors=False):
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    return _lu(A, "linalg.lu_factor")[:3]


def lu_factor_ex_backward(ctx, g, _gp=None, _gi=None):
    """Square A: gA = P L^-T [(L^T gL).tril(-1) + (gU U^T).triu()] U^-T, gL = g.tril(-1), gU = g.triu()."""
    LU = ctx.saved["result0"]
    if LU.shape[-1] != LU.shape[-2]:
        raise NotImplementedError("linalg.lu_factor backward: tgrad differentiates square matrices only")
    P, L, U = lu_unpack(LU, ctx.saved["result1"])
    gA = L.mT.matmul(g.tril(-1)).tril(-1) + g.triu().matmul(U.mT).triu()
    gA = _c("linalg_solve_triangular", U.mT, gA, upper=False, left=False)
    gA = _c("linalg_solve_triangular", L.mT, gA, upper=True, unitriangular=True)
    return (P.matmul(gA),)


def lu_unpack(LU, pivots):
    """(P, L, U) with A = P L U from lu_factor's output, square (..., n, n) (L, U: tgrad ops, differentiable in LU)."""
    eye = _eye_like(LU.detach())
    # P^T = P^-1 = the identity with lu_factor's row swaps applied (lu_solve with L = U = I)
    P = _mT(_lu_solve(eye, contig(pivots), eye)) if LU.shape[-1] else eye
    return P, LU.tril(-1) + eye, LU.triu()


def lu_solve_forward(LU, pivots, B, *, left=True, adjoint=False):
    """X with A X = B (adjoint: A^T X = B; not left: X A = B, X A^T = B) from A's lu_factor."""
    if not left:
        return _mT(lu_solve_forward(LU, pivots, _mT(B), adjoint=not adjoint))
    _check_size("linalg.lu_solve", LU.shape[-1])
    batch = tuple(broadcast_shapes(LU.shape[:-2], B.shape[:-2]))
    lu = expand_forward(LU, size=batch + tuple(LU.shape[-2:]))
    piv = expand_forward(pivots, size=batch + tuple(pivots.shape[-1:]))
    b = expand_forward(B, size=batch + tuple(B.shape[-2:]))
    return _lu_solve(lu, piv, b, trans=adjoint)


def lu_solve_backward(ctx, g):
    """gB = lu_solve(LU, pivots, g, left, not adjoint); LU's gradient is not implemented."""
    if ctx.needs_input_grad[0]:
        raise NotImplementedError("linalg.lu_solve: tgrad differentiates with respect to B only (use "
                                  "linalg.solve to differentiate with respect to the matrix)")
    LU, piv = ctx.saved["LU"], ctx.saved["pivots"]
    return None, None, _c("linalg_lu_solve", LU, piv, g, left=ctx.attrs.get("left", True),
                          adjoint=not ctx.attrs.get("adjoint", False))


def vector_rhs(A, B):
    """PyTorch's rule: B is a (batch of) vector(s) if it is 1-D or has A's batch shape plus one dim."""
    return B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def solve_ex_forward(A, B, *, left=True, check_errors=False):
    """(X, info) with A X = B (left=False: X A = B); B (..., n, k) or a (batch of) vector(s)."""
    vec = vector_rhs(A, B)
    Bm = unsqueeze_forward(B, dim=-1) if vec else (B if left else _mT(B))
    A, Bm = _expand_batch(A if left else _mT(A), Bm)
    lu, piv, info = _lu(A, "linalg.solve")[:3]
    X = _lu_solve(lu, piv, Bm)
    return (squeeze_forward(X, dim=-1) if vec else (X if left else _mT(X))), info


def solve_backward(ctx, g, _gi=None):
    """gB = A^-T g (the same side), gA = -gB X^T (left) or -X^T gB."""
    A, X = ctx.saved["A"], ctx.saved["result0"]
    left = ctx.attrs.get("left", True)
    gB = _c("linalg_solve_ex", A.mT, g, left=left)[0]
    if vector_rhs(A, g):
        Xm, gBm = (X.unsqueeze(-1), gB.unsqueeze(-1)) if left else (X.unsqueeze(-2), gB.unsqueeze(-2))
    else:
        Xm, gBm = X, gB
    return (-gBm.matmul(Xm.mT) if left else -Xm.mT.matmul(gBm)), gB


def inv_ex_forward(A, *, check_errors=False):
    lu, piv, info = _lu(A, "linalg.inv")[:3]
    eye = _eye_like(A)
    return (_lu_solve(lu, piv, eye) if A.shape[-1] else eye), info


def inv_backward(ctx, g, _gi=None):
    """gA = -A^-T g A^-T."""
    Ainv_t = ctx.saved["result0"].mT
    return (-Ainv_t.matmul(g).matmul(Ainv_t),)


def det_forward(A):
    return _lu(A, "linalg.det")[3]


def det_backward(ctx, g):
    """gA = g det A^-T (A invertible)."""
    A, det = ctx.saved["A"], ctx.saved["result"]
    return ((g * det)[..., None, None] * _c("linalg_inv_ex", A)[0].mT,)


def slogdet_forward(A):
    return _lu(A, "linalg.slogdet")[4:]


def slogdet_backward(ctx, _gsign, glogabs):
    """gA = g_logabsdet A^-T."""
    return (glogabs[..., None, None] * _c("linalg_inv_ex", ctx.saved["A"])[0].mT,)


# ------------------------------------------------------------------ triangular, Cholesky
def solve_triangular_forward(A, B, *, upper, left=True, unitriangular=False):
    """X with T X = B (left) or X T = B, T the upper / lower triangle of A (batch dims broadcast)."""
    if not left:
        return _mT(solve_triangular_forward(_mT(A), _mT(B), upper=not upper, unitriangular=unitriangular))
    _check_size("linalg.solve_triangular", A.shape[-1])
    A, B = _expand_batch(A, B)
    a, nb, sa = _mats(A)
    b, _, sb = _mats(B)
    x = empty(B.shape, B.dtype, B.device)
    KL.trsm(a, b, x, (nb, B.shape[-2], B.shape[-1], sa, sb), upper, unitriangular)
    return x


def solve_triangular_backward(ctx, g):
    """gB = T^-T g (solved on the other side for left=False); gA = -gB X^T (left) or -X^T gB, kept on T's
    triangle (off the diagonal if unitriangular)."""
    A, X = ctx.saved["A"], ctx.saved["result"]
    upper, left = ctx.attrs["upper"], ctx.attrs.get("left", True)
    unit = ctx.attrs.get("unitriangular", False)
    gB = _c("linalg_solve_triangular", A.mT, g, upper=not upper, left=left, unitriangular=unit)
    gA = None
    if ctx.needs_input_grad[0]:
        gA = -gB.matmul(X.mT) if left else -X.mT.matmul(gB)
        k = 1 if unit else 0
        gA = gA.triu(k) if upper else gA.tril(-k)
    return gA, gB


def cholesky_ex_forward(A, *, upper=False, check_errors=False):
    """(L, info): A = L L^T from A's lower triangle (upper: U = L^T from A's upper triangle)."""
    _check_size("linalg.cholesky", A.shape[-1])
    src = _mT(A) if upper else A
    a, B, sa = _mats(src)
    lo = empty(A.shape, A.dtype, A.device)
    info = empty(tuple(A.shape[:-2]), D.int32, A.device)
    KL.cholesky(a, lo, info, (B, A.shape[-1], sa))
    return (_mT(lo) if upper else lo), info


def cholesky_backward(ctx, g, _gi=None):
    """gA = sym(L^-T Phi(L^T gL) L^-1), Phi = the lower triangle with the diagonal halved."""
    L = ctx.saved["result0"]
    if ctx.attrs.get("upper", False):
        L, g = L.mT, g.mT
    phi = L.mT.matmul(g).tril()
    phi = phi - 0.5 * phi.diagonal(0, -2, -1).diag_embed()
    gA = _c("linalg_solve_triangular", L, phi, upper=False, left=False)      # phi L^-1
    gA = _c("linalg_solve_triangular", L.mT, gA, upper=True)               # L^-T phi L^-1
    return (0.5 * (gA + gA.mT),)


# ------------------------------------------------------------------ symmetric eigen
def eigh_forward(A, *, UPLO="L"):
    """(w ascending, V) with A = V diag(w) V^T from A's lower (UPLO="U": upper) triangle."""
    _check_size("linalg.eigh", A.shape[-1])
    a, B, sa = _mats(_mT(A) if UPLO == "U" else A)
    n = A.shape[-1]
    w = empty(tuple(A.shape[:-1]), A.dtype, A.device)
    v = empty(A.shape, A.dtype, A.device)
    KL.eigh(a, w, v, (B, n, sa))
    return w, v


def eigh_backward(ctx, gw, gV):
    """gA = V (diag(gw) + skew(V^T gV) / E) V^T, E[i, j] = w[j] - w[i] (off the diagonal)."""
    w, V = ctx.saved["result0"], ctx.saved["result1"]
    inner = gw.diag_embed()
    if gV is not None:
        VgV = V.mT.matmul(gV)
        E = w.unsqueeze(-2) - w.unsqueeze(-1)
        off = E.ne(0)
        inner = inner + (0.5 * (VgV - VgV.mT)).div(_c("where", off, E, E.new_ones(()))).mul(off.to(E.dtype))
    return (V.matmul(inner).matmul(V.mT),)


# ------------------------------------------------------------------ SVD
def svd_forward(A, *, full_matrices=True):
    """(U, S descending, Vh) with A = U diag(S) Vh; reduced (k = min(m, n)) unless ``full_matrices``, where U
    (m > n) or Vh (m < n) is completed by the eigenvectors of the projector onto the complement (eigenvalue 1)."""
    m, n = A.shape[-2:]
    _check_size("linalg.svd", max(m, n))
    tall = m >= n
    src = A if tall else _mT(A)
    M, N = src.shape[-2:]
    batch = tuple(A.shape[:-2])
    a, B, sa = _mats(src)
    u = empty(batch + (M, N), A.dtype, A.device)
    sv = empty(batch + (N,), A.dtype, A.device)
    vh = empty(batch + (N, N), A.dtype, A.device)
    KL.svd(a, u, sv, vh, (B, M, N, sa))
    if full_matrices and M > N:
        u = _complete(u)
    return (u, sv, vh) if tall else (_mT(vh), sv, _mT(u))


def _complete(u):
    """[u, w] orthogonal (..., M, M), w spanning the complement of u's N orthonormal columns (u needs no grad)."""
    M, N = u.shape[-2:]
    proj = _c("sub", _eye_like(empty(u.shape[:-2] + (M, M), u.dtype, u.device)), u.matmul(_mT(u)))
    w = eigh_forward(proj)[1]
    return cat_forward(u, slice_forward(w, dim=-1, start=N, end=M), dim=-1)


def svd_backward(ctx, gU, gS, gVh):
    """PyTorch's svd_backward (real): gA = U [(skew(U^T gU) S + S skew(Vh gVh^T)) / E + diag(gS)] Vh, E[i, j] =
    S_j^2 - S_i^2, plus the terms outside U's / V's span for non-square A."""
    U, S, Vh = ctx.saved["result0"], ctx.saved["result1"], ctx.saved["result2"]
    m, n = U.shape[-2], Vh.shape[-1]
    if ctx.attrs.get("full_matrices", True) and m != n:
        raise RuntimeError("linalg_svd_backward: Setting full_matrices=True in forward is not supported unless "
                           "the input is square. Use full_matrices=False")
    UhgU = U.mT.matmul(gU)
    UhgU = UhgU - UhgU.mT
    VhgV = Vh.matmul(gVh.mT)
    VhgV = VhgV - VhgV.mT
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1)
    off = E.ne(0)
    inner = (UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV).div(_c("where", off, E, E.new_ones(()))) \
        .mul(off.to(E.dtype)) + gS.diag_embed()
    if m > n:
        gUSinv = gU / S.unsqueeze(-2)
        gA = U.matmul(inner) + gUSinv - U.matmul(U.mT.matmul(gUSinv))
        return (gA.matmul(Vh),)
    if m < n:
        SinvgVh = gVh / S.unsqueeze(-1)
        gA = inner.matmul(Vh) + SinvgVh - SinvgVh.matmul(Vh.mT).matmul(Vh)
        return (U.matmul(gA),)
    return (U.matmul(inner).matmul(Vh),)


# ------------------------------------------------------------------ QR
def qr_forward(A, *, mode="reduced"):
    """(Q, R) with A = Q R: reduced Q (m, k), R (k, n); complete Q (m, m), R (m, n); "r": Q empty."""
    m, n = A.shape[-2:]
    _check_size("linalg.qr", max(m, n))
    k = min(m, n)
    batch = tuple(A.shape[:-2])
    qcols = m if mode == "complete" else k
    a, B, sa = _mats(A)
    q = empty(batch + (m, qcols), A.dtype, A.device)
    r = empty(batch + (m, n), A.dtype, A.device)
    KL.qr(a, q, r, (B, m, n, qcols, sa))
    if mode != "complete":
        r = contig(slice_forward(r, dim=-2, start=0, end=k))
    if mode == "r":
        q = empty((0,), A.dtype, A.device)
    return q, r


def qr_backward(ctx, gQ, gR):
    """PyTorch's linalg_qr_backward (m >= n): gA = (gQ + Q syminvadj(triu(gR R^T - Q^T gQ))) R^-T."""
    mode = ctx.attrs.get("mode", "reduced")
    Q, R = ctx.saved["result0"], ctx.saved["result1"]
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please "
                           "use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
    m, n = Q.shape[-2], R.shape[-1]
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    if m < n:
        raise NotImplementedError("linalg.qr backward: tgrad differentiates matrices with nrows >= ncols only")
    M = (gR.matmul(R.mT) - Q.mT.matmul(gQ)).triu()
    sym = M + M.mT - M.diagonal(0, -2, -1).diag_embed()
    gA = Q.matmul(sym) + gQ
    return (_c("linalg_solve_triangular", R.mT, gA, upper=False, left=False),)


LU_FACTOR_EX = Op("linalg_lu_factor_ex", lu_factor_ex_forward, lu_factor_ex_backward, "LinalgLuFactorExBackward0",
                  inputs=("A",), save=("result0", "result1"), outputs=3, nondiff_outputs=(1, 2))
LU_SOLVE = Op("linalg_lu_solve", lu_solve_forward, lu_solve_backward, "LinalgLuSolveBackward0",
              inputs=("LU", "pivots", "B"), save=("LU", "pivots"))
SOLVE_EX = Op("linalg_solve_ex", solve_ex_forward, solve_backward, "LinalgSolveExBackward0", inputs=("A", "B"),
              save=("A", "result0"), outputs=2, nondiff_outputs=(1,))
INV_EX = Op("linalg_inv_ex", inv_ex_forward, inv_backward, "LinalgInvExBackward0", inputs=("A",),
            save=("result0",), outputs=2, nondiff_outputs=(1,))
DET = Op("linalg_det", det_forward, det_backward, "LinalgDetBackward0", inputs=("A",), save=("A", "result"))
SLOGDET = Op("linalg_slogdet", slogdet_forward, slogdet_backward, "LinalgSlogdetBackward0", inputs=("A",),
             save=("A",), outputs=2, nondiff_outputs=(0,))
SOLVE_TRIANGULAR = Op("linalg_solve_triangular", solve_triangular_forward, solve_triangular_backward,
                      "LinalgSolveTriangularBackward0", inputs=("A", "B"), save=("A", "result"))
CHOLESKY_EX = Op("linalg_cholesky_ex", cholesky_ex_forward, cholesky_backward, "LinalgCholeskyExBackward0",
                 inputs=("A",), save=("result0",), outputs=2, nondiff_outputs=(1,))

EIGH = Op("linalg_eigh", eigh_forward, eigh_backward, "LinalgEighBackward0", inputs=("A",),
           save=("result0", "result1"), outputs=2)

SVD = Op("linalg_svd", svd_forward, svd_backward, "LinalgSvdBackward0", inputs=("A",),
          save=("result0", "result1", "result2"), outputs=3)

QR = Op("linalg_qr", qr_forward, qr_backward, "LinalgQrBackward0", inputs=("A",), save=("result0", "result1"),
         outputs=2)


# ------------------------------------------------------------------ matrix exponential
_EXP_THETA = {"float64": 1.090863719290036, "float32": 3.010066362817634}     # ATen's theta for degree 18


def matrix_exp_forward(A):
    """exp(A) of (..., n, n) A by scaling and squaring: A / 2^s with ||A / 2^s||_1 <= theta (ATen's bound for its
    degree-18 approximant), the degree-18 Taylor polynomial by Horner (P = I + A P / k: 18 batched matmuls), then
    s squarings.  s comes from the largest 1-norm of the batch (read on the host, as ATen's cpu kernel does)."""
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_exp: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_exp: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")
    if not A.dtype.is_floating_point:
        raise RuntimeError("linalg.matrix_exp: Expected a floating point or complex tensor as input. Got "
                           f"{D.TENSOR_TYPE_NAMES[A.dtype][:-6]}")
    n, B = A.shape[-1], _prod(A.shape[:-2])
    if B == 0 or n == 0:
        return empty(A.shape, A.dtype, A.device)
    X = view_forward(contig(A), size=(B, n, n))
    norm = float(abs(X._host_copy().astype("float64")).sum(axis=-2).max())
    theta = _EXP_THETA.get(A.dtype.name, _EXP_THETA["float32"])
    s = 0
    while norm > theta * 2.0 ** s:
        s += 1
    eye = diag_embed_forward(host_full((B, n), 1.0, A.dtype, A.device))
    P = eye
    for k in range(18, 0, -1):      # 1/k as a tensor: a float kernel argument would be rounded to fp32
        inv_k = KE.fill(empty((), A.dtype, A.device), 1.0 / k)
        P = baddbmm_forward(eye, X, KE.binary(KE.mul_fn, P, inv_k, empty(P.shape, A.dtype, A.device)),
                            alpha=2.0 ** -s)
    for _ in range(s):
        P = bmm_forward(P, P)
    return view_forward(P, size=tuple(A.shape))


def matrix_exp_backward(ctx, g):
    """ATen's: gA = exp([[A^T, g], [0, A^T]]) [..., :n, n:] (the Frechet derivative of exp at A^T applied to g)."""
    A = ctx.saved["self"]
    n = A.shape[-1]
    At = A.mT
    top = _c("cat", At, g, dim=-1)
    bottom = _c("cat", At.new_zeros(At.shape), At, dim=-1)
    big = _c("linalg_matrix_exp", _c("cat", top, bottom, dim=-2))
    return (big[..., :n, n:],)


MATRIX_EXP = Op("linalg_matrix_exp", matrix_exp_forward, matrix_exp_backward, "LinalgMatrixExpBackward0",
                save=("self",))

ENTRIES = [MATRIX_EXP, LU_FACTOR_EX, LU_SOLVE, SOLVE_EX, INV_EX, DET, SLOGDET, SOLVE_TRIANGULAR, CHOLESKY_EX, EIGH, SVD, QR]
