"""OpInfos for the factorizations of ``tgrad.linalg`` against numpy.linalg (and a numpy partial-pivoting LU,
LAPACK's getrf order, for lu_factor), through the public API.  Matrices are well conditioned (a random matrix plus
n I); functions of symmetric input (cholesky) see a @ a^T + n I so gradcheck's perturbations stay symmetric."""
import numpy as np

import tgrad
from tgrad import dtypes as D

from ..opinfo import OpInfo, SampleInput

DTYPES = (D.float32, D.float64)
TOL = {"float32": (1e-4, 1e-4)}
SQUARE = [(3, 3), (2, 2, 2), (1, 1), (2, 1, 5, 5), (7, 7), (0, 3, 3), (20, 20)]


def _well(rng, s):
    return rng.uniform(-1, 1, s) + s[-1] * np.eye(s[-1]) * 0.5


def _square(rng, shapes=SQUARE):
    return [SampleInput(_well(rng, s), grad=0 < int(np.prod(s)) <= 9) for s in shapes]


def _np_expm(a):
    """exp(a) by a 30-term Taylor series of a / 2^s (||a / 2^s||_1 <= 1/2), then s squarings."""
    a = np.asarray(a, dtype=np.float64)
    if a.size == 0:
        return a.copy()
    norm = np.abs(a).sum(axis=-2).max()
    s = max(0, int(np.ceil(np.log2(max(norm, 1e-300) / 0.5))))
    x = a / 2.0 ** s
    term = np.broadcast_to(np.eye(a.shape[-1]), a.shape).copy()
    out = term.copy()
    for k in range(1, 31):
        term = term @ x / k
        out = out + term
    for _ in range(s):
        out = out @ out
    return out


def _expm_samples(rng):
    """Norms from 0.05 (no squaring) to about 10 (several squarings); batches, 1x1, empty."""
    out = [SampleInput(rng.uniform(-1, 1, s) * sc, grad=int(np.prod(s)) <= 9)
           for s, sc in [((3, 3), 0.05), ((3, 3), 1.0), ((2, 2, 2), 2.0), ((1, 1), 3.0), ((2, 1, 4, 4), 0.7),
                         ((7, 7), 1.5), ((0, 3, 3), 1.0), ((20, 20), 0.1)]]
    return out + [SampleInput(np.array([[0.0, 1.0], [-2.0, -3.0]]))]


def _spd(a):
    return a @ np.swapaxes(a, -1, -2) + a.shape[-1] * np.eye(a.shape[-1])


def _t_spd(a):
    return a.matmul(a.mT) + a.shape[-1] * tgrad.eye(a.shape[-1], dtype=a.dtype, device=a.device)


def np_lu(a):
    """(LU, 1-based int32 pivots) of each matrix of a (..., m, n), partial pivoting as LAPACK's getrf."""
    a = np.array(a, dtype=np.float64)
    m, n = a.shape[-2:]
    k = min(m, n)
    lu, piv = a.reshape(-1, m, n).copy(), np.zeros((int(np.prod(a.shape[:-2])), k), np.int32)
    for b in range(lu.shape[0]):
        x = lu[b]
        for j in range(k):
            p = j + int(np.argmax(np.abs(x[j:, j])))
            piv[b, j] = p + 1
            x[[j, p]] = x[[p, j]]
            if x[j, j] != 0:
                x[j + 1:, j] /= x[j, j]
                x[j + 1:, j + 1:] -= np.outer(x[j + 1:, j], x[j, j + 1:])
    return lu.reshape(a.shape), piv.reshape(a.shape[:-2] + (k,))


def _solve_samples(rng):
    out = []
    for sa, sb in [((3, 3), (3, 2)), ((2, 4, 4), (2, 4, 1)), ((4, 4), (2, 4, 3)), ((2, 1, 3, 3), (3, 3, 2)),
                   ((1, 1), (1, 1)), ((7, 7), (7, 5)), ((0, 3, 3), (0, 3, 2)), ((3, 3), (3, 0))]:
        out.append(SampleInput(_well(rng, sa), rng.uniform(-1, 1, sb),
                               grad=sa == (3, 3) and sb == (3, 2)))
    return out


def _tri_ref(a, b, upper, left=True, unitriangular=False):
    t = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        t = t - np.eye(t.shape[-1]) * np.diagonal(t, 0, -2, -1)[..., None, :] + np.eye(t.shape[-1])
    if left:
        return np.linalg.solve(t, b)
    return np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


def _tri_samples(rng):
    out = []
    for sa, sb, kw in [((3, 3), (3, 2), dict(upper=True)), ((2, 4, 4), (2, 4, 1), dict(upper=False)),
                       ((3, 3), (2, 3), dict(upper=False, left=False)),
                       ((3, 3), (3, 2), dict(upper=True, unitriangular=True)),
                       ((2, 3, 3), (3, 3), dict(upper=True, left=False, unitriangular=True)),
                       ((7, 7), (2, 7, 5), dict(upper=False)), ((0, 2, 2), (0, 2, 1), dict(upper=True))]:
        out.append(SampleInput(_well(rng, sa), rng.uniform(-1, 1, sb), grad=sa == (3, 3), **kw))
    return out


def _lu_solve_ref(a, b, left=True, adjoint=False):
    t = np.swapaxes(a, -1, -2) if adjoint else a
    if left:
        return np.linalg.solve(t, b)
    return np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


def _lu_solve_samples(rng):
    out = []
    for sa, sb, kw in [((3, 3), (3, 2), {}), ((2, 4, 4), (2, 4, 1), dict(adjoint=True)),
                       ((3, 3), (2, 3), dict(left=False)), ((3, 3), (2, 3), dict(left=False, adjoint=True)),
                       ((4, 4), (2, 4, 3), {}), ((0, 3, 3), (0, 3, 1), {})]:
        out.append(SampleInput(_well(rng, sa), rng.uniform(-1, 1, sb), grad=sa == (3, 3), **kw))
    return out


def _eigh_op(a, **k):
    """Gauge-invariant outputs of eigh of a + a^T: the eigenvalues and the squared eigenvector entries."""
    w, v = tgrad.linalg.eigh(a + a.mT, **k)
    return w, v * v


def _eigh_ref(a, UPLO="L"):
    w, v = np.linalg.eigh(a + np.swapaxes(a, -1, -2))
    return w, v * v


def _eigh_samples(rng):
    return [SampleInput(rng.uniform(-1, 1, s), grad=0 < int(np.prod(s)) <= 9, **k)
            for s, k in [((3, 3), {}), ((2, 2, 2), dict(UPLO="U")), ((1, 1), {}), ((2, 5, 5), {}), ((0, 3, 3), {}),
                         ((9, 9), {})]]


def _svd_op(a):
    """Gauge-invariant outputs of the reduced SVD: S and the squared entries of U and Vh."""
    U, S, Vh = tgrad.linalg.svd(a, full_matrices=False)
    return S, U * U, Vh * Vh


def _svd_ref(a):
    U, S, Vh = np.linalg.svd(a, full_matrices=False)
    return S, U * U, Vh * Vh


def _svd_samples(rng):
    return [SampleInput(rng.uniform(-1, 1, s), grad=0 < int(np.prod(s)) <= 9)
            for s in [(3, 3), (3, 2), (2, 3), (2, 2, 2), (1, 1), (0, 3, 2), (9, 5)]]


def _qr_samples(rng):
    out = [SampleInput(rng.uniform(-1, 1, s), grad=0 < int(np.prod(s)) <= 9, mode=m)
           for s, m in [((3, 3), "reduced"), ((3, 2), "reduced"), ((2, 2, 2), "complete"), ((1, 1), "reduced"),
                        ((0, 3, 2), "reduced"), ((9, 5), "reduced")]]
    return out + [SampleInput(rng.uniform(-1, 1, (2, 4)), grad=False, mode="complete")]


OPS = [
    OpInfo("linalg_matrix_exp", lambda a: tgrad.linalg.matrix_exp(a), _np_expm, _expm_samples, dtypes=DTYPES,
           tol={"float32": (1e-5, 1e-5)}),
    OpInfo("linalg_inv_ex", lambda a: tgrad.linalg.inv(a), np.linalg.inv, _square, dtypes=DTYPES, tol=TOL),
    OpInfo("linalg_det", lambda a: tgrad.linalg.det(a), np.linalg.det, _square, dtypes=DTYPES, tol=TOL),
    OpInfo("linalg_slogdet", lambda a: tuple(tgrad.linalg.slogdet(a)), lambda a: tuple(np.linalg.slogdet(a)),
           _square, dtypes=DTYPES, tol=TOL),
    OpInfo("linalg_solve_ex", lambda a, b: tgrad.linalg.solve(a, b), np.linalg.solve, _solve_samples,
           dtypes=DTYPES, tol=TOL),
    OpInfo("linalg_lu_factor_ex", lambda a: tuple(tgrad.linalg.lu_factor(a)), np_lu, _square, dtypes=DTYPES,
           tol=TOL, gradgrad=True),
    OpInfo("linalg_lu_solve", lambda a, b, **k: tgrad.linalg.lu_solve(*tgrad.linalg.lu_factor(a.detach()), b, **k),
           _lu_solve_ref, _lu_solve_samples, dtypes=DTYPES, tol=TOL, diff_args=(1,)),
    OpInfo("linalg_solve_triangular", lambda a, b, **k: tgrad.linalg.solve_triangular(a, b, **k), _tri_ref,
           _tri_samples, dtypes=DTYPES, tol=TOL),
    OpInfo("linalg_cholesky_ex", lambda a, **k: tgrad.linalg.cholesky(_t_spd(a), **k),
           lambda a, upper=False: (lambda c: np.swapaxes(c, -1, -2) if upper else c)(np.linalg.cholesky(_spd(a))),
           lambda rng: _square(rng) + [SampleInput(rng.uniform(-1, 1, (2, 2)), upper=True)],
           dtypes=DTYPES, tol=TOL),
    # (float32 eigenvectors of close eigenvalues move by eps |A| / gap)
    OpInfo("linalg_eigh", _eigh_op, _eigh_ref, _eigh_samples, dtypes=DTYPES, tol={"float32": (1e-3, 1e-3)}),
    OpInfo("linalg_qr", lambda a, **k: tuple(tgrad.linalg.qr(a, **k)), lambda a, mode: np.linalg.qr(a, mode=mode),
           _qr_samples, dtypes=DTYPES, tol=TOL),
    OpInfo("linalg_svd", _svd_op, _svd_ref, _svd_samples, dtypes=DTYPES, tol={"float32": (1e-3, 1e-3)}),
]
