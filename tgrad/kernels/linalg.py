"""Small-matrix factorizations: one program per matrix of a batch, the whole matrix in one block, a loop over the
pivots / columns inside the kernel (no LAPACK).  Row and column k of a block are read with a masked sum and
written with ``tl.where``, so every step is a few whole-block operations: O(n) steps of O(n^2) work.

Inputs are (B, M, N) with a batch stride and element strides (a transpose is a stride swap), outputs are
contiguous.  The maths runs in the input's dtype (float32 or float64: float64 results must be float64-accurate).
The block holds the matrix: n <= MAX_N (a clear error above it, raised by the ops).
"""
import triton
import triton.language as tl

from .runtime import Launch, Sites, next_pow2
from ._lang import kptr

MAX_N = 128     # largest matrix side the one-block kernels take (cpu: O(n) whole-block steps; cuda: registers)


# ------------------------------------------------------------------ whole-block helpers
@triton.jit
def _row(a, rows, k):
    """Row k of block ``a`` (a vector over its columns)."""
    return tl.sum(tl.where(rows[:, None] == k, a, 0.0), axis=0)


@triton.jit
def _col(a, cols, k):
    """Column k of block ``a`` (a vector over its rows)."""
    return tl.sum(tl.where(cols[None, :] == k, a, 0.0), axis=1)


@triton.jit
def _at(v, idx, k):
    """Element k of vector ``v``."""
    return tl.sum(tl.where(idx == k, v, 0.0), axis=0)


@triton.jit
def _swap_rows(a, rows, k, p):
    """Block ``a`` with rows k and p exchanged."""
    rk = _row(a, rows, k)
    rp = _row(a, rows, p)
    return tl.where(rows[:, None] == k, rp[None, :], tl.where(rows[:, None] == p, rk[None, :], a))


@triton.jit
def _trsm(a, x, rows, cols, N, UPPER: tl.constexpr, UNIT: tl.constexpr):
    """X with A X = x, A the (upper / lower, unit-diagonal if UNIT) triangle of block ``a``, by substitution."""
    for i in range(N):
        if UPPER:
            k = N - 1 - i
        else:
            k = i
        ak = _col(a, cols, k)
        xk = _row(x, rows, k)
        if not UNIT:
            xk = xk / _at(ak, rows, k)
        if UPPER:
            rest = rows < k
        else:
            rest = rows > k
        x = tl.where(rows[:, None] == k, xk[None, :], tl.where(rest[:, None], x - ak[:, None] * xk[None, :], x))
    return x


@triton.jit
def _load_block(ptr, b, sb, sm, sn, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Matrix b of a strided (B, M, N) array as a (BLOCK_M, BLOCK_N) block, zero-padded."""
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    m = (rows[:, None] < M) & (cols[None, :] < N)
    return tl.load(ptr + b * sb + rows[:, None] * sm + cols[None, :] * sn, mask=m, other=0.0)


@triton.jit
def _store_block(ptr, val, b, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Store a block as matrix b of a contiguous (B, M, N) array."""
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    m = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(ptr + b * M * N + rows[:, None] * N + cols[None, :], val, mask=m)


# ------------------------------------------------------------------ kernels
@triton.jit
def lu_factor_kernel(a_ptr, lu_ptr, piv_ptr, info_ptr, det_ptr, sgn_ptr, lad_ptr, M, N, K, sa_b, sa_m, sa_n,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """P A[b] = L U (partial pivoting): LU[b] holds L below the diagonal (unit diagonal implied) and U; piv[b, k] the
    1-based row swapped with row k; info[b] the first k (1-based) with U[k, k] == 0; det[b] = det A[b] = sgn[b]
    exp(lad[b]) (square).  A (B, M, N) strided; LU (B, M, N), piv (B, K) int32, K = min(M, N); info, det, sgn,
    lad (B,)."""
    b = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    a = _load_block(a_ptr, b, sa_b, sa_m, sa_n, M, N, BLOCK_M, BLOCK_N)
    info = tl.program_id(0) * 0
    pivots = tl.zeros([BLOCK_N], tl.int32)
    det = tl.sum(tl.zeros([BLOCK_N], a.dtype), axis=0) + 1.0
    sgn = det
    lad = det - 1.0
    for k in range(K):
        ck = _col(a, cols, k)
        p = tl.argmax(tl.where((rows >= k) & (rows < M), tl.abs(ck), -1.0), axis=0)
        a = _swap_rows(a, rows, k, p)
        pivots = tl.where(cols == k, p + 1, pivots)
        ck = _col(a, cols, k)
        rk = _row(a, rows, k)
        d = _at(rk, cols, k)
        det = tl.where(p != k, -det, det) * d
        sgn = tl.where(p != k, -sgn, sgn) * tl.where(d > 0, 1.0, tl.where(d < 0, -1.0, 0.0))
        lad += tl.log(tl.abs(d))
        info = tl.where(info == 0, tl.where(d == 0, k + 1, 0), info)
        # (a zero pivot has a zero column below it: nothing to eliminate, as LAPACK's getrf)
        lk = tl.where(rows > k, ck / tl.where(d != 0, d, 1.0), 0.0)
        below = rows[:, None] > k
        a = tl.where(below & (cols[None, :] > k), a - lk[:, None] * rk[None, :], a)
        a = tl.where(below & (cols[None, :] == k), lk[:, None], a)
    _store_block(lu_ptr, a, b, M, N, BLOCK_M, BLOCK_N)
    tl.store(piv_ptr + b * K + cols, pivots, mask=cols < K)
    tl.store(info_ptr + b, info)
    tl.store(det_ptr + b, det)
    tl.store(sgn_ptr + b, sgn)
    tl.store(lad_ptr + b, lad)


@triton.jit
def lu_solve_kernel(lu_ptr, piv_ptr, b_ptr, x_ptr, N, R, slu_b, spiv_b, sb_b, sb_m, sb_r, TRANS: tl.constexpr,
                    BLOCK_N: tl.constexpr, BLOCK_R: tl.constexpr):
    """X[b] = A^-1 B[b] (TRANS: A^-T B[b]) with P A = L U given as LU[b], piv[b] (lu_factor's).
    LU (B, N, N) contiguous with batch stride slu_b, piv (B, N) with spiv_b; B (B, N, R) strided; X contiguous."""
    b = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK_N)
    cols = tl.arange(0, BLOCK_N)
    lu = _load_block(lu_ptr, b, slu_b, N, 1, N, N, BLOCK_N, BLOCK_N)
    piv = tl.load(piv_ptr + b * spiv_b + cols, mask=cols < N, other=1) - 1
    x = _load_block(b_ptr, b, sb_b, sb_m, sb_r, N, R, BLOCK_N, BLOCK_R)
    if TRANS:
        # A^T = U^T L^T P: solve U^T y = B, L^T z = y, then X = P^T z (the swaps in reverse order)
        lut = tl.trans(lu)
        x = _trsm(lut, x, rows, cols, N, False, False)
        x = _trsm(lut, x, rows, cols, N, True, True)
        for i in range(N):
            k = N - 1 - i
            x = _swap_rows(x, rows, k, _at(piv, cols, k))
    else:
        for k in range(N):
            x = _swap_rows(x, rows, k, _at(piv, cols, k))
        x = _trsm(lu, x, rows, cols, N, False, True)
        x = _trsm(lu, x, rows, cols, N, True, False)
    _store_block(x_ptr, x, b, N, R, BLOCK_N, BLOCK_R)


@triton.jit
def trsm_kernel(a_ptr, b_ptr, x_ptr, N, R, sa_b, sa_m, sa_n, sb_b, sb_m, sb_r, UPPER: tl.constexpr,
                UNIT: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_R: tl.constexpr):
    """X[b] = T^-1 B[b], T the upper (UPPER) or lower triangle of A[b] (unit diagonal if UNIT; the other triangle
    is not read).  A (B, N, N), B (B, N, R) strided; X (B, N, R) contiguous."""
    b = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK_N)
    cols = tl.arange(0, BLOCK_N)
    a = _load_block(a_ptr, b, sa_b, sa_m, sa_n, N, N, BLOCK_N, BLOCK_N)
    x = _load_block(b_ptr, b, sb_b, sb_m, sb_r, N, R, BLOCK_N, BLOCK_R)
    x = _trsm(a, x, rows, cols, N, UPPER, UNIT)
    _store_block(x_ptr, x, b, N, R, BLOCK_N, BLOCK_R)


@triton.jit
def cholesky_kernel(a_ptr, l_ptr, info_ptr, N, sa_b, sa_m, sa_n, BLOCK_N: tl.constexpr):
    """A[b] = L L^T (Cholesky-Banachiewicz by columns) from the lower triangle of A[b]; info[b] = the order of the
    first leading minor that is not positive-definite (L then stops there), else 0.
    A (B, N, N) strided; L (B, N, N) contiguous, info (B,) int32."""
    b = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK_N)
    cols = tl.arange(0, BLOCK_N)
    lower = rows[:, None] >= cols[None, :]
    a = tl.where(lower, _load_block(a_ptr, b, sa_b, sa_m, sa_n, N, N, BLOCK_N, BLOCK_N), 0.0)
    info = tl.program_id(0) * 0
    for k in range(N):
        ck = _col(a, cols, k)
        d = _at(ck, rows, k)
        info = tl.where(info == 0, tl.where(d > 0, 0, k + 1), info)
        go = info == 0
        dk = tl.sqrt(tl.where(go, d, 1.0))
        lk = tl.where(rows > k, ck / dk, 0.0)
        new = tl.where(lower & (cols[None, :] > k), a - lk[:, None] * lk[None, :], a)
        new = tl.where(cols[None, :] == k, tl.where(rows == k, dk, lk)[:, None], new)
        a = tl.where(go, new, a)
    _store_block(l_ptr, a, b, N, N, BLOCK_N, BLOCK_N)
    tl.store(info_ptr + b, info)


@triton.jit
def _jacobi_rotations(a, rows, cols, r, NN, BLOCK_N: tl.constexpr):
    """J rotating the NN / 2 disjoint pairs (p, q) of round r of a round robin so that (J^T a J)[p, q] = 0
    (a symmetric): J[i, i] = c, J[p, q] = s, J[q, p] = -s; padding rows (>= NN) are left alone."""
    M = NN - 1
    # round robin: i < M meets (2r - i) mod M, or M when that is i itself; M meets r
    j = (2 * r - rows + 2 * BLOCK_N * M) % M
    partner = tl.where(rows == M, r, tl.where(j == rows, M, j))
    partner = tl.where(rows > M, rows, partner)
    diag = tl.sum(tl.where(rows[:, None] == cols[None, :], a, 0.0), axis=1)
    pmat = cols[None, :] == partner[:, None]                 # pmat[i, k]: k is i's partner
    dpart = tl.sum(tl.where(pmat, diag[None, :], 0.0), axis=1)
    # both members of a pair must compute the same rotation: a's rounding-level asymmetry averaged out
    apq = 0.5 * (tl.sum(tl.where(pmat, a, 0.0), axis=1) + tl.sum(tl.where(pmat, tl.trans(a), 0.0), axis=1))
    lo = rows < partner
    app = tl.where(lo, diag, dpart)
    aqq = tl.where(lo, dpart, diag)
    rot = apq != 0
    tau = (aqq - app) / (2.0 * tl.where(rot, apq, 1.0))
    t = tl.where(tau >= 0, 1.0, -1.0) / (tl.abs(tau) + tl.sqrt(1.0 + tau * tau))
    t = tl.where(rot, t, 0.0)
    c = 1.0 / tl.sqrt(1.0 + t * t)
    s = t * c
    jm = tl.where(rows[:, None] == cols[None, :], c[:, None], 0.0)
    jm = jm + tl.where(pmat, tl.where(lo, s, -s)[:, None], 0.0)
    return jm.to(a.dtype)


@triton.jit
def eigh_kernel(a_ptr, w_ptr, v_ptr, N, NN, sa_b, sa_m, sa_n, SWEEPS: tl.constexpr, BLOCK_N: tl.constexpr):
    """A[b] = V diag(w) V^T from A's lower triangle, by cyclic Jacobi: SWEEPS sweeps of NN - 1 steps (NN = N
    rounded up to even), each rotating NN / 2 disjoint pairs (round-robin order): A <- J^T A J, V <- V J; w ascending.
    A (B, N, N) strided; w (B, N), V (B, N, N) contiguous."""
    b = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK_N)
    cols = tl.arange(0, BLOCK_N)
    a = _load_block(a_ptr, b, sa_b, sa_m, sa_n, N, N, BLOCK_N, BLOCK_N)
    a = tl.where(rows[:, None] >= cols[None, :], a, tl.trans(a))
    eye = tl.where(rows[:, None] == cols[None, :], 1.0, 0.0).to(a.dtype)
    v = eye
    for it in range(SWEEPS * (NN - 1)):
        jm = _jacobi_rotations(a, rows, cols, it % (NN - 1), NN, BLOCK_N)
        a = tl.dot(tl.trans(jm), tl.dot(a, jm, input_precision="ieee"), input_precision="ieee")
        v = tl.dot(v, jm, input_precision="ieee")
    w = tl.sum(tl.where(rows[:, None] == cols[None, :], a, 0.0), axis=1)
    # ascending order: the rank of each eigenvalue among the first N (ties by index)
    valid = cols < N
    less = (w[None, :] < w[:, None]) | ((w[None, :] == w[:, None]) & (cols[None, :] < rows[:, None]))
    rank = tl.sum(tl.where(less & valid[None, :], 1, 0), axis=1)
    tl.store(w_ptr + b * N + rank, w, mask=rows < N)
    m = (rows[:, None] < N) & valid[None, :]
    tl.store(v_ptr + b * N * N + rows[:, None] * N + rank[None, :], v, mask=m)


@triton.jit
def svd_kernel(a_ptr, u_ptr, s_ptr, vh_ptr, M, N, NN, sa_b, sa_m, sa_n, SWEEPS: tl.constexpr,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """A[b] = U diag(S) Vh (M >= N, reduced) by one-sided Jacobi: the columns of U = A V rotated in round-robin
    pairs until orthogonal (the rotations of Jacobi on U^T U); S descending.
    A (B, M, N) strided; U (B, M, N), S (B, N), Vh (B, N, N) contiguous."""
    b = tl.program_id(0).to(tl.int64)
    rm = tl.arange(0, BLOCK_M)
    rows = tl.arange(0, BLOCK_N)
    cols = tl.arange(0, BLOCK_N)
    u = _load_block(a_ptr, b, sa_b, sa_m, sa_n, M, N, BLOCK_M, BLOCK_N)
    v = tl.where(rows[:, None] == cols[None, :], 1.0, 0.0).to(u.dtype)
    for it in range(SWEEPS * (NN - 1)):
        g = tl.dot(tl.trans(u), u, input_precision="ieee")
        jm = _jacobi_rotations(g, rows, cols, it % (NN - 1), NN, BLOCK_N)
        u = tl.dot(u, jm, input_precision="ieee")
        v = tl.dot(v, jm, input_precision="ieee")
    s = tl.sqrt(tl.sum(u * u, axis=0))
    u = u / tl.where(s > 0, s, 1.0)[None, :]
    valid = cols < N
    more = (s[None, :] > s[:, None]) | ((s[None, :] == s[:, None]) & (cols[None, :] < rows[:, None]))
    rank = tl.sum(tl.where(more & valid[None, :], 1, 0), axis=1)
    tl.store(s_ptr + b * N + rank, s, mask=rows < N)
    tl.store(u_ptr + b * M * N + rm[:, None] * N + rank[None, :], u, mask=(rm[:, None] < M) & valid[None, :])
    tl.store(vh_ptr + b * N * N + rank[None, :] * N + rows[:, None], v, mask=(rows[:, None] < N) & valid[None, :])


@triton.jit
def qr_kernel(a_ptr, q_ptr, r_ptr, M, N, K, QCOLS, sa_b, sa_m, sa_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """A[b] = Q R by Householder reflections (LAPACK's geqrf signs: R[k, k] = -sign(x_k) |x|, no reflection when
    nothing is below the diagonal), Q accumulated as
    H_1 ... H_K; Q (B, M, QCOLS) = its first QCOLS columns, R (B, M, N) upper (rows >= K zero).
    A (B, M, N) strided; Q, R contiguous; K = min(M, N)."""
    b = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    qc = tl.arange(0, BLOCK_M)
    a = _load_block(a_ptr, b, sa_b, sa_m, sa_n, M, N, BLOCK_M, BLOCK_N)
    q = tl.where(rows[:, None] == qc[None, :], 1.0, 0.0).to(a.dtype)
    for k in range(K):
        x = tl.where(rows >= k, _col(a, cols, k), 0.0)
        xk = _at(x, rows, k)
        norm = tl.sqrt(tl.sum(x * x, axis=0))
        beta = tl.where(xk >= 0, -norm, norm)
        v = tl.where(rows == k, xk - beta, x)
        vv = tl.sum(v * v, axis=0)
        # nothing below the diagonal: H = I, as LAPACK's dlarfg (R[k, k] keeps its sign)
        below = tl.sum(tl.where(rows > k, x * x, 0.0), axis=0)
        scale = tl.where(below > 0, 2.0 / tl.where(vv > 0, vv, 1.0), 0.0)
        # a <- (I - scale v v^T) a, q <- q (I - scale v v^T)
        va = tl.sum(v[:, None] * a, axis=0)
        a = a - scale * v[:, None] * va[None, :]
        qv = tl.sum(q * v[None, :], axis=1)
        q = q - scale * qv[:, None] * v[None, :]
    a = tl.where(rows[:, None] <= cols[None, :], a, 0.0)
    _store_block(r_ptr, a, b, M, N, BLOCK_M, BLOCK_N)
    _store_block(q_ptr, q, b, M, QCOLS, BLOCK_M, BLOCK_M)


# ------------------------------------------------------------------ launchers
def _block(n):
    return max(2, next_pow2(n))


_SITES = Sites()


def _site(key, kernel, B, dev, args, constexprs):
    site = _SITES.get(key)
    if site is None:
        site = _SITES.add(key, Launch(kernel, (B,), dev, args, constexprs))
    return site


def lu_factor(a, lu, piv, info, det, sgn, lad, geom):
    """lu, piv, info, det, sgn, lad (contiguous) = the pivoted LU of the B matrices of ``a``;
    geom = (B, M, N, (sb, sm, sn))."""
    B, M, N, sa = geom
    if B == 0:
        return
    dev = lu._storage.launch_device
    K = min(M, N)
    site = _site(("lu", B, M, N, sa, a.dtype, dev), lu_factor_kernel, B, dev,
                 [kptr(a), kptr(lu), kptr(piv), kptr(info), kptr(det), kptr(sgn), kptr(lad), M, N, K, *sa],
                 {"BLOCK_M": _block(M), "BLOCK_N": _block(N)})
    site(a.data_ptr(), lu.data_ptr(), piv.data_ptr(), info.data_ptr(), det.data_ptr(), sgn.data_ptr(), lad.data_ptr())


def lu_solve(lu, piv, b, x, geom, trans):
    """x (contiguous (B, N, R)) = A^-1 b (A^-T b if ``trans``) from lu, piv; geom = (B, N, R, lu and piv batch
    strides, b strides (sb, sm, sr))."""
    B, N, R, slu, spiv, sb = geom
    if B == 0 or N == 0 or R == 0:
        return
    dev = x._storage.launch_device
    site = _site(("lus", B, N, R, slu, spiv, sb, x.dtype, bool(trans), dev), lu_solve_kernel, B, dev,
                 [kptr(lu), kptr(piv), kptr(b), kptr(x), N, R, slu, spiv, *sb],
                 {"TRANS": bool(trans), "BLOCK_N": _block(N), "BLOCK_R": _block(R)})
    site(lu.data_ptr(), piv.data_ptr(), b.data_ptr(), x.data_ptr())


def trsm(a, b, x, geom, upper, unit):
    """x (contiguous (B, N, R)) = T^-1 b, T a triangle of ``a``; geom = (B, N, R, a strides, b strides)."""
    B, N, R, sa, sb = geom
    if B == 0 or N == 0 or R == 0:
        return
    dev = x._storage.launch_device
    site = _site(("trsm", B, N, R, sa, sb, x.dtype, bool(upper), bool(unit), dev), trsm_kernel, B, dev,
                 [kptr(a), kptr(b), kptr(x), N, R, *sa, *sb],
                 {"UPPER": bool(upper), "UNIT": bool(unit), "BLOCK_N": _block(N), "BLOCK_R": _block(R)})
    site(a.data_ptr(), b.data_ptr(), x.data_ptr())


def cholesky(a, lo, info, geom):
    """lo, info (contiguous) = the Cholesky factor of the lower triangle of each matrix of ``a``;
    geom = (B, N, a strides)."""
    B, N, sa = geom
    if B == 0:
        return
    dev = lo._storage.launch_device
    site = _site(("chol", B, N, sa, a.dtype, dev), cholesky_kernel, B, dev,
                 [kptr(a), kptr(lo), kptr(info), N, *sa], {"BLOCK_N": _block(N)})
    site(a.data_ptr(), lo.data_ptr(), info.data_ptr())


def eigh(a, w, v, geom):
    """w, v (contiguous) = the eigenvalues (ascending) and eigenvectors of the lower triangle of each matrix of
    ``a``; geom = (B, N, a strides)."""
    B, N, sa = geom
    if B == 0 or N == 0:
        return
    dev = v._storage.launch_device
    sweeps = 12 if a.dtype.itemsize == 8 else 8
    site = _site(("eigh", B, N, sa, a.dtype, dev), eigh_kernel, B, dev,
                 [kptr(a), kptr(w), kptr(v), N, N + N % 2, *sa],
                 {"SWEEPS": sweeps, "BLOCK_N": max(16, next_pow2(N))})
    site(a.data_ptr(), w.data_ptr(), v.data_ptr())


def svd(a, u, s, vh, geom):
    """u, s, vh (contiguous) = the reduced SVD of each (M >= N) matrix of ``a``; geom = (B, M, N, a strides)."""
    B, M, N, sa = geom
    if B == 0 or N == 0:
        return
    dev = u._storage.launch_device
    sweeps = 12 if a.dtype.itemsize == 8 else 8
    site = _site(("svd", B, M, N, sa, a.dtype, dev), svd_kernel, B, dev,
                 [kptr(a), kptr(u), kptr(s), kptr(vh), M, N, N + N % 2, *sa],
                 {"SWEEPS": sweeps, "BLOCK_M": max(16, next_pow2(M)), "BLOCK_N": max(16, next_pow2(N))})
    site(a.data_ptr(), u.data_ptr(), s.data_ptr(), vh.data_ptr())


def qr(a, q, r, geom):
    """q (B, M, QCOLS), r (B, M, N) (contiguous) = the Householder QR of each matrix of ``a``;
    geom = (B, M, N, QCOLS, a strides)."""
    B, M, N, qcols, sa = geom
    if B == 0 or M == 0:
        return
    dev = q._storage.launch_device
    site = _site(("qr", B, M, N, qcols, sa, a.dtype, dev), qr_kernel, B, dev,
                 [kptr(a), kptr(q), kptr(r), M, N, min(M, N), qcols, *sa],
                 {"BLOCK_M": _block(M), "BLOCK_N": _block(N)})
    site(a.data_ptr(), q.data_ptr(), r.data_ptr())
