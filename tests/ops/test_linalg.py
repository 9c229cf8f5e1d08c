"""tgrad.linalg: PyTorch 2.13's errors (LinAlgError wording), return types, grad_fn names, the tgrad.* / Tensor
aliases, vector right-hand sides, batches; values against numpy.linalg (the OpInfos in
tgrad/testing/opinfos/linalg.py do forward / gradcheck / gradgradcheck)."""
import numpy as np
import pytest

import tgrad


def T(a, device, dtype=tgrad.float64, requires_grad=False):
    return tgrad.tensor(a, dtype=dtype, device=device, requires_grad=requires_grad)


SING = [[1.0, 2.0], [2.0, 4.0]]


def test_singular_errors_as_pytorch(device):
    S = T(SING, device)
    batch = tgrad.stack([tgrad.eye(2, dtype=tgrad.float64, device=device), S])
    with pytest.raises(tgrad.linalg.LinAlgError, match=r"^linalg.inv: The diagonal element 2 is zero, the inversion "
                       r"could not be completed because the input matrix is singular.$"):
        tgrad.linalg.inv(S)
    with pytest.raises(tgrad.linalg.LinAlgError, match=r"^linalg.inv: \(Batch element 1\): The diagonal element 2"):
        tgrad.inverse(batch)
    with pytest.raises(tgrad.linalg.LinAlgError, match=r"^torch.linalg.solve: \(Batch element 1\): The solver "
                       "failed because the input matrix is singular.$"):
        tgrad.linalg.solve(batch, T([1.0, 1.0], device))
    with pytest.raises(RuntimeError, match=r"^torch.linalg.lu_factor: \(Batch element 1\): U\[2,2\] is zero"):
        tgrad.linalg.lu_factor(batch)
    assert issubclass(tgrad.linalg.LinAlgError, RuntimeError)
    # PyTorch 2.13: lu_factor_ex(S) = LU [[2, 4], [0.5, 0]], pivots [2, 2], info 2; det 0
    LU, piv, info = tgrad.linalg.lu_factor_ex(S)
    assert LU.cpu().tolist() == [[2.0, 4.0], [0.5, 0.0]] and piv.cpu().tolist() == [2, 2] and info.item() == 2
    assert tgrad.linalg.det(S).item() == 0.0
    sign, logabs = tgrad.linalg.slogdet(S)
    assert sign.item() == 0 and logabs.item() == -np.inf


def test_not_positive_definite(device):
    with pytest.raises(tgrad.linalg.LinAlgError, match=r"^linalg.cholesky: The factorization could not be completed "
                       r"because the input is not positive-definite \(the leading minor of order 2 is not "
                       r"positive-definite\).$"):
        tgrad.linalg.cholesky(T(SING, device))
    A = tgrad.stack([tgrad.eye(2, dtype=tgrad.float64, device=device), -tgrad.eye(2, dtype=tgrad.float64,
                                                                                   device=device)])
    with pytest.raises(tgrad.linalg.LinAlgError, match=r"^linalg.cholesky: \(Batch element 1\): .*order 1 is"):
        A.cholesky()
    L, info = tgrad.linalg.cholesky_ex(-tgrad.eye(2, dtype=tgrad.float64, device=device))
    assert info.item() == 1 and info.dtype == tgrad.int32 and L.cpu().tolist() == [[-1.0, 0.0], [0.0, -1.0]]


def test_shape_and_dtype_errors(device):
    with pytest.raises(RuntimeError, match=r"^linalg.inv: A must be batches of square matrices, but they are 2 by 3 "
                       "matrices$"):
        tgrad.linalg.inv(T(np.ones((2, 3)), device))
    with pytest.raises(RuntimeError, match=r"^linalg.inv: The input tensor A must have at least 2 dimensions.$"):
        tgrad.linalg.inv(T(np.ones(3), device))
    with pytest.raises(RuntimeError, match=r"^linalg.inv: Expected a floating point or complex tensor as input. "
                       "Got Long$"):
        tgrad.linalg.inv(T(np.ones((2, 2)), device, tgrad.int64))
    with pytest.raises(RuntimeError, match=r"^linalg.inv: Low precision dtypes not supported. Got Half$"):
        tgrad.linalg.inv(T(np.ones((2, 2)), device, tgrad.float16))
    eye = tgrad.eye(2, dtype=tgrad.float64, device=device)
    with pytest.raises(RuntimeError, match=r"^linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                       r"\(2x2 and 3x1\)$"):
        tgrad.linalg.solve(eye, T(np.ones(3), device))
    with pytest.raises(RuntimeError, match=r"equation XA = B \(2x2 and 2x3\)$"):
        tgrad.linalg.solve(eye, T(np.ones((2, 3)), device), left=False)
    with pytest.raises(RuntimeError, match=r"^linalg.solve: Expected A and B to have the same dtype, but found A of "
                       "type Float and B of type Double instead$"):
        tgrad.linalg.solve(eye.float(), T(np.ones(2), device))
    with pytest.raises(RuntimeError, match=r"^linalg.solve_triangular: The input tensor B must have at least 2 "
                       "dimensions.$"):
        tgrad.linalg.solve_triangular(eye, T(np.ones(2), device), upper=True)
    with pytest.raises(RuntimeError, match=r"at most 128 x 128"):
        tgrad.linalg.inv(tgrad.eye(129, device=device))


def test_return_types_and_grad_fns(device):
    A = T([[2.0, 1, 0], [1, 3, 1], [0, 1, 4]], device, requires_grad=True)
    r = tgrad.linalg.lu_factor_ex(A)
    assert type(r).__name__ == "linalg_lu_factor_ex" and r.pivots.dtype == tgrad.int32
    assert repr(tgrad.linalg.slogdet(A)).startswith("tgrad.return_types.linalg_slogdet(\nsign=tensor(1.")
    assert type(tgrad.slogdet(A)).__name__ == "slogdet" and type(A.slogdet()).__name__ == "slogdet"
    assert type(tgrad.linalg.inv_ex(A)).__name__ == "linalg_inv_ex"
    assert type(tgrad.linalg.cholesky_ex(A)).__name__ == "linalg_cholesky_ex"
    assert type(tgrad.linalg.lu(A)).__name__ == "linalg_lu"
    names = {"LinalgInvExBackward0": tgrad.linalg.inv(A), "LinalgDetBackward0": tgrad.det(A),
             "LinalgSlogdetBackward0": tgrad.linalg.slogdet(A).logabsdet,
             "LinalgCholeskyExBackward0": tgrad.linalg.cholesky(A),
             "LinalgLuFactorExBackward0": tgrad.linalg.lu_factor(A).LU,
             "LinalgSolveExBackward0": tgrad.linalg.solve(A, T([1.0, 2, 3], device)),
             "LinalgSolveTriangularBackward0": tgrad.linalg.solve_triangular(A, T(np.ones((3, 1)), device),
                                                                             upper=True)}
    for name, t in names.items():
        assert type(t.grad_fn).__name__ == name


def test_values_and_aliases_against_numpy(device):
    rng = np.random.default_rng(0)
    a = rng.normal(size=(2, 4, 4)) + 3 * np.eye(4)
    A = T(a, device)
    np.testing.assert_allclose(tgrad.inverse(A).cpu().numpy(), np.linalg.inv(a), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(A.inverse().cpu().numpy(), np.linalg.inv(a), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(A.det().cpu().numpy(), np.linalg.det(a), rtol=1e-10)
    np.testing.assert_allclose(tgrad.logdet(A).cpu().numpy(), np.log(np.linalg.det(a)), rtol=1e-10)
    assert np.isnan(tgrad.logdet(-tgrad.eye(3, dtype=tgrad.float64, device=device)).item())   # PyTorch: nan
    # vector right-hand sides, batched A with one vector per matrix, and left=False
    b = rng.normal(size=(2, 4))
    np.testing.assert_allclose(tgrad.linalg.solve(A, T(b, device)).cpu().numpy(),
                               np.linalg.solve(a, b[..., None])[..., 0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tgrad.linalg.solve(A, T(b[0], device)).cpu().numpy(),
                               np.linalg.solve(a, b[0][:, None])[..., 0], rtol=1e-10, atol=1e-12)
    c = rng.normal(size=(3, 4))
    np.testing.assert_allclose(tgrad.linalg.solve(A, T(c, device), left=False).cpu().numpy(),
                               c @ np.linalg.inv(a), rtol=1e-9, atol=1e-12)
    P, L, U = tgrad.linalg.lu(A)
    np.testing.assert_allclose((P @ L @ U).cpu().numpy(), a, rtol=1e-12, atol=1e-12)
    s = a @ np.swapaxes(a, -1, -2)
    Ls = tgrad.cholesky(T(s, device))
    np.testing.assert_allclose(Ls.cpu().numpy(), np.linalg.cholesky(s), rtol=1e-10)
    B = rng.normal(size=(2, 4, 2))
    np.testing.assert_allclose(tgrad.cholesky_solve(T(B, device), Ls).cpu().numpy(), np.linalg.solve(s, B),
                               rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(tgrad.cholesky_inverse(Ls.mT, upper=True).cpu().numpy(), np.linalg.inv(s),
                               rtol=1e-8, atol=1e-10)
    X, Ac = tgrad.triangular_solve(T(B, device), A, upper=False)
    np.testing.assert_allclose(X.cpu().numpy(), np.linalg.solve(np.tril(a), B), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tgrad.linalg.matrix_power(A, 3).cpu().numpy(), np.linalg.matrix_power(a, 3),
                               rtol=1e-10)
    np.testing.assert_allclose(tgrad.matrix_power(A, -2).cpu().numpy(), np.linalg.matrix_power(a, -2), rtol=1e-9)
    np.testing.assert_allclose(A.matrix_power(0).cpu().numpy(), np.broadcast_to(np.eye(4), a.shape))


def test_float32_and_empty_batches(device):
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 6, 6)).astype(np.float32) + 4 * np.eye(6, dtype=np.float32)
    A = T(a, device, tgrad.float32)
    Ai = tgrad.linalg.inv(A)
    assert Ai.dtype == tgrad.float32
    np.testing.assert_allclose(Ai.cpu().numpy(), np.linalg.inv(a.astype(np.float64)), rtol=1e-4, atol=1e-5)
    e = tgrad.linalg.inv(T(np.zeros((0, 3, 3)), device))
    assert tuple(e.shape) == (0, 3, 3)
    assert tuple(tgrad.linalg.inv(T(np.zeros((0, 0)), device)).shape) == (0, 0)
    assert tgrad.linalg.det(T(np.zeros((0, 0)), device)).item() == 1.0


def test_double_backward_of_inverse_and_logdet(device):
    """d/dA of sum(d logdet / dA) = d tr(A^-T) / dA: against finite differences in float64."""
    A = T([[2.0, 0.5], [0.3, 1.5]], device, requires_grad=True)
    f = lambda a: tgrad.logdet(a)
    assert tgrad.autograd.gradcheck(f, (A,)) and tgrad.autograd.gradgradcheck(f, (A,))
    g = lambda a: tgrad.linalg.lu(a).L
    assert tgrad.autograd.gradcheck(g, (A,))


def test_eigh_eigvalsh_and_norms(device):
    rng = np.random.default_rng(2)
    a = rng.normal(size=(2, 5, 5))
    s = a + np.swapaxes(a, -1, -2)
    S = T(s, device)
    w, V = tgrad.linalg.eigh(S)
    np.testing.assert_allclose(w.cpu().numpy(), np.linalg.eigvalsh(s), rtol=1e-12, atol=1e-12)
    v = V.cpu().numpy()
    np.testing.assert_allclose(v @ (w.cpu().numpy()[..., None] * np.swapaxes(v, -1, -2)), s, atol=1e-12)
    lower_only = T(np.tril(s), device)
    np.testing.assert_allclose(tgrad.linalg.eigvalsh(lower_only).cpu().numpy(), np.linalg.eigvalsh(s), atol=1e-12)
    np.testing.assert_allclose(tgrad.linalg.eigvalsh(T(np.triu(s), device), UPLO="U").cpu().numpy(),
                               np.linalg.eigvalsh(s), atol=1e-12)
    assert type(tgrad.linalg.eigh(S)).__name__ == "linalg_eigh"
    with pytest.raises(RuntimeError, match=r"^Expected UPLO argument to be 'L' or 'U', but got X$"):
        tgrad.linalg.eigh(S, UPLO="X")
    # matrix norms: PyTorch 2.13 on arange(6).reshape(2, 3) - 2 printed these
    A = T(np.arange(6.0).reshape(2, 3) - 2, device, tgrad.float32)
    want = {"fro": 4.358899116516113, "nuc": 5.804905891418457, 2: 3.9396440982818604, -2: 1.8652620315551758,
            1: 3.0, -1: 3.0, float("inf"): 6.0, float("-inf"): 3.0}
    for o, ref in want.items():
        assert abs(tgrad.linalg.matrix_norm(A, o).item() - ref) < 2e-6, o
        assert tuple(tgrad.linalg.matrix_norm(A, o, keepdim=True).shape) == (1, 1)
    assert abs(tgrad.linalg.norm(A.flatten(), 3).item() - 3.5569) < 1e-4
    np.testing.assert_allclose(tgrad.linalg.norm(A, dim=1).cpu().numpy(), [2.2361, 3.7417], atol=1e-4)
    with pytest.raises(RuntimeError, match=r"^linalg.matrix_norm: Order 3 not supported.$"):
        tgrad.linalg.matrix_norm(A, 3)
    np.testing.assert_allclose(tgrad.linalg.svdvals(T(a, device)).cpu().numpy(), np.linalg.svd(a, compute_uv=False),
                               rtol=1e-9)


def test_eigh_gradient_gauge_invariant(device):
    """d/dA of sum(w * c) + sum(V diag(w) V^T * D): gauge-invariant, against finite differences, twice."""
    A = T([[1.0, 0.3, -0.2], [0.1, 2.0, 0.5], [0.4, -0.3, 3.5]], device, requires_grad=True)
    D = T(np.arange(9.0).reshape(3, 3), device)

    def f(a):
        w, V = tgrad.linalg.eigh(a + a.mT)
        return (w * T([1.0, -2.0, 0.5], device)).sum() + ((V * w.unsqueeze(-2)).matmul(V.mT) * D).sum()
    assert tgrad.autograd.gradcheck(f, (A,)) and tgrad.autograd.gradgradcheck(f, (A,))


def test_svd_family(device):
    rng = np.random.default_rng(3)
    a = rng.normal(size=(2, 5, 3))
    A = T(a, device)
    for full in (True, False):
        U, S, Vh = tgrad.linalg.svd(A, full_matrices=full)
        k = 3
        u, s, vh = U.cpu().numpy(), S.cpu().numpy(), Vh.cpu().numpy()
        assert u.shape == ((2, 5, 5) if full else (2, 5, 3)) and vh.shape == (2, 3, 3)
        np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-12)
        np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh, a, atol=1e-12)
        eye = np.broadcast_to(np.eye(u.shape[-1]), (2,) + u.shape[-1:] * 2)
        np.testing.assert_allclose(np.swapaxes(u, -1, -2) @ u, eye, atol=1e-12)
    U, S, V = tgrad.svd(A)                          # old API: reduced, V not Vh
    assert type(tgrad.svd(A)).__name__ == "svd" and tuple(U.shape) == (2, 5, 3)
    np.testing.assert_allclose(((U * S.unsqueeze(-2)) @ V.mT).cpu().numpy(), a, atol=1e-12)
    assert tuple(A.svd(compute_uv=False).U.shape) == (2, 5, 5)
    np.testing.assert_allclose(tgrad.linalg.pinv(A).cpu().numpy(), np.linalg.pinv(a), atol=1e-12)
    np.testing.assert_allclose(tgrad.pinverse(A).cpu().numpy(), np.linalg.pinv(a), atol=1e-12)
    assert tgrad.linalg.matrix_rank(T(np.ones((3, 3)), device)).item() == 1
    assert tgrad.linalg.matrix_rank(A).cpu().tolist() == [3, 3]
    assert type(tgrad.linalg.svd(T(a, device, requires_grad=True))[1].grad_fn).__name__ == "LinalgSvdBackward0"
    with pytest.raises(RuntimeError, match="full_matrices=True in forward is not supported unless the input is square"):
        tgrad.linalg.svd(T(a, device, requires_grad=True))[1].sum().backward()


def test_qr_and_lstsq(device):
    A = T([[1.0, 2.0], [3.0, 4.0]], device, tgrad.float32)
    Q, R = tgrad.linalg.qr(A)           # PyTorch 2.13 printed these (LAPACK's signs)
    np.testing.assert_allclose(Q.cpu().numpy(), [[-0.3162, -0.9487], [-0.9487, 0.3162]], atol=1e-4)
    np.testing.assert_allclose(R.cpu().numpy(), [[-3.1623, -4.4272], [0.0, -0.6325]], atol=1e-4)
    assert type(tgrad.qr(A)).__name__ == "qr" and type(A.qr()).__name__ == "qr"
    assert tgrad.qr(T([[-2.0]], device)).R.item() == -2.0 and tgrad.qr(T([[-2.0]], device)).Q.item() == 1.0
    assert tuple(tgrad.linalg.qr(A, mode="r").Q.shape) == (0,)
    with pytest.raises(RuntimeError, match=r"^qr received unrecognized mode 'foo' but expected one of 'reduced' "
                       r"\(default\), 'r', or 'complete'$"):
        tgrad.linalg.qr(A, mode="foo")
    Ag = T([[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]], device, requires_grad=True)
    assert type(tgrad.linalg.qr(Ag).R.grad_fn).__name__ == "LinalgQrBackward0"
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete' and nrows > ncols"):
        tgrad.linalg.qr(Ag, mode="complete").R.sum().backward()
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(2, 6, 3)), rng.normal(size=(2, 6, 2))
    res = tgrad.linalg.lstsq(T(a, device), T(b, device))
    assert type(res).__name__ == "linalg_lstsq"
    np.testing.assert_allclose(res.solution.cpu().numpy(), np.stack([np.linalg.lstsq(a[i], b[i], rcond=None)[0]
                                                                     for i in range(2)]), atol=1e-12)


def test_pinv_hermitian_and_pinverse():
    """hermitian=True reads A's lower triangle (eigh), as PyTorch; torch.pinverse takes rcond positionally."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 4))
    sym = np.tril(a) + np.tril(a, -1).T
    got = tgrad.linalg.pinv(tgrad.tensor(a), hermitian=True)
    np.testing.assert_allclose(got.cpu().numpy(), np.linalg.pinv(sym), rtol=1e-8, atol=1e-10)
    b = rng.standard_normal((3, 5))
    np.testing.assert_allclose(tgrad.pinverse(tgrad.tensor(b), 1e-10).cpu().numpy(), np.linalg.pinv(b),
                               rtol=1e-8, atol=1e-10)
