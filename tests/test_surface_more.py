"""The torch functions composed of ops (tgrad/_functional_more.py, tgrad/special.py): values against numpy
(or numbers printed by PyTorch 2.13, /work/venv-torch, where numpy has no equal: said so), gradcheck in
float64, PyTorch's errors."""
import math

import numpy as np
import pytest

import tgrad as torch
from tgrad.autograd import gradcheck

RNG = np.random.default_rng(0)


def T(a, **kw):
    return torch.tensor(np.asarray(a), **kw)


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a.tolist() if hasattr(a, "tolist") else a, dtype=np.float64),
                               np.asarray(b, dtype=np.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize("eq, shapes", [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("ij->ji", [(3, 4)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("ij->", [(3, 4)]), ("i,j->ij", [(3,), (4,)]),
    ("i,i", [(5,), (5,)]), ("...ij,...jk", [(2, 3, 4), (4, 2)]), ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("b...d,b...d->b...", [(2, 3, 4), (2, 3, 4)]),
    ("ijk->kj", [(2, 3, 4)]), ("iij->j", [(3, 3, 2)])])
def test_einsum_matches_numpy(eq, shapes):
    arrs = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    close(torch.einsum(eq, *[T(a) for a in arrs]), np.einsum(eq, *arrs), tol=1e-4)


def test_einsum_list_operands_grad_and_errors():
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 4))
    close(torch.einsum("ij,jk", [T(a), T(b)]), a @ b)
    x = T(a, requires_grad=True, dtype=torch.float64)
    y = T(b, requires_grad=True, dtype=torch.float64)
    assert gradcheck(lambda p, q: torch.einsum("ij,jk->ik", p, q), (x, y))
    assert gradcheck(lambda p: torch.einsum("ij,ij->i", p, p), (x,))
    with pytest.raises(RuntimeError, match="operands were specified in the equation"):
        torch.einsum("ij,jk->ik", T(a))
    with pytest.raises(RuntimeError, match="does not match the number of dimensions"):
        torch.einsum("ijk->i", T(a))


def test_tensordot_kron_cdist_dist_cross():
    a, b = RNG.standard_normal((3, 4, 5)), RNG.standard_normal((4, 5, 2))
    close(torch.tensordot(T(a), T(b), dims=2), np.tensordot(a, b, 2), tol=1e-4)
    close(torch.tensordot(T(a), T(b), dims=([1], [0])), np.tensordot(a, b, ([1], [0])), tol=1e-4)
    p, q = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 2, 2))
    close(torch.kron(T(p), T(q)), np.kron(p, q))
    x1, x2 = RNG.standard_normal((4, 3)), RNG.standard_normal((5, 3))
    ref = np.sqrt(((x1[:, None] - x2[None]) ** 2).sum(-1))
    close(torch.cdist(T(x1), T(x2)), ref, tol=1e-4)
    close(torch.cdist(T(x1), T(x2), p=1), np.abs(x1[:, None] - x2[None]).sum(-1), tol=1e-4)
    close(torch.dist(T(x1), T(x1) + 1), math.sqrt(12))
    close(torch.cross(T(x1), T(x1[::-1].copy()), dim=1), np.cross(x1, x1[::-1]), tol=1e-5)
    close(torch.linalg.cross(T(x1), T(x1[::-1].copy())), np.cross(x1, x1[::-1]), tol=1e-5)
    u = T(x1, dtype=torch.float64, requires_grad=True)
    v = T(x2, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda s, t: torch.cdist(s, t), (u, v))
    assert gradcheck(lambda s: torch.kron(s, s[:2]), (u,))
    with pytest.raises(RuntimeError, match="X1 and X2 must have the same number of columns"):
        torch.cdist(T(x1), T(x2[:, :2]))


def test_diff_bincount_histc():
    a = RNG.standard_normal((3, 5))
    close(torch.diff(T(a)), np.diff(a))
    close(torch.diff(T(a), n=2, dim=0), np.diff(a, 2, 0))
    close(T(a).diff(prepend=T(a[:, :1]), append=T(a[:, :2])),
          np.diff(a, prepend=a[:, :1], append=a[:, :2]))
    x = torch.tensor([3, 1, 1, 2, 3, 3, 0])
    assert torch.bincount(x).tolist() == [1, 2, 1, 3]
    assert x.bincount(minlength=6).tolist() == [1, 2, 1, 3, 0, 0]
    w = torch.tensor([0.5, 1, 1, 2, 1, 1, 4])
    close(torch.bincount(x, weights=w), np.bincount(x.cpu().numpy(), w.cpu().numpy()))
    assert torch.bincount(x, weights=w).dtype == torch.float32
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative integral inputs."):
        torch.bincount(torch.tensor([-1]))
    # PyTorch 2.13: histc([1, 2, 1, 4], bins=4, min=0, max=3) = [0, 2, 1, 0]; bins=4 over the data range: [2, 1, 0, 1]
    assert torch.histc(torch.tensor([1.0, 2, 1, 4]), bins=4, min=0, max=3).tolist() == [0, 2, 1, 0]
    assert torch.histc(torch.tensor([1.0, 2, 1, 4]), bins=4).tolist() == [2, 1, 0, 1]


def test_unique():
    x = torch.tensor([3, 1, 2, 3, 1])
    v, inv, cnt = torch.unique(x, return_inverse=True, return_counts=True)
    assert v.tolist() == [1, 2, 3] and inv.tolist() == [2, 0, 1, 2, 0] and cnt.tolist() == [2, 1, 2]
    v, inv = torch.tensor([[3, 1], [2, 3]]).unique(return_inverse=True)
    assert v.tolist() == [1, 2, 3] and inv.tolist() == [[2, 0], [1, 2]]
    f = RNG.integers(0, 4, 20).astype(np.float32)
    close(torch.unique(T(f)), np.unique(f))
    m = torch.tensor([[1, 2], [0, 5], [1, 2]])
    vals, inv, cnt = torch.unique(m, dim=0, return_inverse=True, return_counts=True)
    assert vals.tolist() == [[0, 5], [1, 2]] and inv.tolist() == [1, 0, 1] and cnt.tolist() == [1, 2]
    vals, cnt = torch.unique_consecutive(torch.tensor([1, 1, 2, 2, 3, 1, 1]), return_counts=True)
    assert vals.tolist() == [1, 2, 3, 1] and cnt.tolist() == [2, 2, 1, 2]
    assert torch.unique(torch.tensor([], dtype=torch.int64)).tolist() == []


def test_median_mode_kthvalue_quantile():
    # PyTorch 2.13 printed these (ties: median/kthvalue take the stable sorted order's element, mode the
    # smallest most frequent value at its last index)
    x = torch.tensor([[1.0, 2, 2, 1, 3, 1], [5, 5, 4, 4, 0, 4]])
    r = torch.median(x, 1)
    assert type(r).__name__ == "median" and r.values.tolist() == [1, 4] and r.indices.tolist() == [5, 3]
    assert torch.median(torch.tensor([2.0, 1, 2, 1])).item() == 1.0
    m = torch.mode(torch.tensor([[1.0, 2, 2, 1, 3], [5, 5, 4, 4, 0]]), 1)
    assert m.values.tolist() == [1, 4] and m.indices.tolist() == [3, 3]
    k = torch.tensor([[1.0, 5, 2, 3]]).kthvalue(2, 1, keepdim=True)
    assert k.values.tolist() == [[2.0]] and k.indices.tolist() == [[2]]
    a = RNG.standard_normal((4, 7))
    close(torch.quantile(T(a), 0.3, dim=1), np.quantile(a, 0.3, axis=1))
    close(torch.quantile(T(a), T([0.1, 0.5, 0.9]), dim=0, keepdim=True),
          np.quantile(a, [0.1, 0.5, 0.9], axis=0, keepdims=True))
    close(torch.quantile(T(a), 0.75), np.quantile(a, 0.75))
    for mode in ("lower", "higher", "midpoint", "nearest"):
        close(T(a).quantile(0.4, dim=1, interpolation=mode), np.quantile(a, 0.4, axis=1, method=mode))
    xa = T(a, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda t: torch.quantile(t, 0.3, dim=1), (xa,))
    assert gradcheck(lambda t: torch.median(t, 0).values, (xa,))
    with pytest.raises(RuntimeError, match=r"quantile\(\) q values must be in the range \[0, 1\]"):
        torch.quantile(T(a), 1.5)
    with pytest.raises(IndexError, match="selected number k out of range"):
        T(a).kthvalue(9, 1)


def test_std_var_mean_searchsorted_bucketize():
    a = RNG.standard_normal((3, 4))
    s, m = torch.std_mean(T(a), 1)
    close(s, a.std(1, ddof=1)), close(m, a.mean(1))
    v, m = torch.var_mean(T(a), correction=0)
    close(v, a.var()), close(m, a.mean())
    seq = torch.tensor([1, 3, 5, 7])
    # PyTorch 2.13: searchsorted([1,3,5,7], [[3,6,9],[3,6,9]]) = [[1,3,4],[1,3,4]]; bucketize(right=True) = [2,3,4]
    assert torch.searchsorted(seq, torch.tensor([[3, 6, 9], [3, 6, 9]])).tolist() == [[1, 3, 4], [1, 3, 4]]
    assert torch.searchsorted(seq, torch.tensor([3, 6, 9]), side="right").tolist() == [2, 3, 4]
    assert torch.bucketize(torch.tensor([3, 6, 9]), seq, right=True).tolist() == [2, 3, 4]
    assert torch.bucketize(torch.tensor([3, 6, 9]), seq).tolist() == [1, 3, 4]
    b = np.sort(RNG.standard_normal((2, 6)), 1)
    vals = RNG.standard_normal((2, 3))
    ref = [np.searchsorted(b[i], vals[i]) for i in range(2)]
    assert torch.searchsorted(T(b), T(vals)).tolist() == np.array(ref).tolist()


def test_building_functions():
    assert torch.cartesian_prod(torch.tensor([1, 2]), torch.tensor([3, 4, 5])).tolist() == \
        [[1, 3], [1, 4], [1, 5], [2, 3], [2, 4], [2, 5]]
    assert torch.tril_indices(3, 3).tolist() == np.stack(np.tril_indices(3)).tolist()
    assert torch.triu_indices(3, 4, 1).tolist() == np.stack(np.triu_indices(3, 1, 4)).tolist()
    bd = torch.block_diag(torch.ones(2, 2), torch.tensor([5.0, 6.0]), torch.tensor(7.0))
    assert bd.shape == (4, 5) and bd[2].tolist() == [0, 0, 5, 6, 0] and bd[3, 4].item() == 7
    close(torch.logspace(0, 2, 3), [1, 10, 100])
    close(torch.logspace(0, 3, 4, base=2), [1, 2, 4, 8])
    from tgrad._functional_more import broadcast_shapes, broadcast_tensors
    x, y = broadcast_tensors(torch.ones(3, 1), torch.zeros(4))
    assert x.shape == y.shape == (3, 4) and broadcast_shapes((2, 1), (3,)) == (2, 3)
    with pytest.raises(RuntimeError, match="Attempting to broadcast a dimension of length"):
        broadcast_shapes((2,), (3,))


def test_special_and_finfo():
    a = RNG.uniform(0.05, 0.95, 6)
    close(torch.special.logit(T(a)), np.log(a / (1 - a)))
    close(torch.special.expit(T(a)), 1 / (1 + np.exp(-a)))
    close(torch.special.erfc(T(a)), [math.erfc(v) for v in a])
    close(torch.special.ndtr(T(a)), [0.5 * math.erfc(-v / math.sqrt(2)) for v in a])
    close(torch.special.xlogy(torch.tensor([0.0, 2.0]), torch.tensor([0.0, 3.0])), [0, 2 * math.log(3)])
    close(torch.special.entr(torch.tensor([0.0, 0.5])), [0, -0.5 * math.log(0.5)])
    close(torch.special.sinc(torch.tensor([0.0, 0.5])), [1, math.sin(math.pi / 2) / (math.pi / 2)])
    close(torch.special.logsumexp(T(a), 0), np.log(np.exp(a).sum()))
    close(torch.special.softmax(T(a), 0), np.exp(a) / np.exp(a).sum())
    assert gradcheck(lambda t: torch.special.xlogy(t, t + 1), (T(a, requires_grad=True),))
    assert gradcheck(torch.logit, (T(a, requires_grad=True),))
    # PyTorch 2.13's finfo/iinfo values
    f = torch.finfo(torch.float32)
    assert (f.eps, f.max, f.tiny, f.bits) == (1.1920928955078125e-07, 3.4028234663852886e+38,
                                              1.1754943508222875e-38, 32)
    assert torch.finfo(torch.float16).resolution == 0.001 and torch.finfo(torch.bfloat16).eps == 0.0078125
    assert torch.finfo().dtype == "float32" and torch.iinfo(torch.int64).max == 2 ** 63 - 1
    with pytest.raises(TypeError, match="torch.finfo\\(\\) requires a floating point input type"):
        torch.finfo(torch.int32)


def test_tensor_unfold_windows():
    x = torch.arange(10.0).reshape(2, 5)
    # PyTorch 2.13 printed the same windows
    assert x.unfold(1, 3, 1).tolist() == [[[0, 1, 2], [1, 2, 3], [2, 3, 4]], [[5, 6, 7], [6, 7, 8], [7, 8, 9]]]
    assert x.t().unfold(0, 2, 2).tolist() == [[[0, 1], [5, 6]], [[2, 3], [7, 8]]]
    a = T(RNG.standard_normal((3, 6)), dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda t: t.unfold(1, 3, 1) * 1.0, (a,))          # overlapping windows add up
    with pytest.raises(RuntimeError, match="maximum size for tensor at dimension 1 is 5 but size is 6"):
        x.unfold(1, 6, 1)
    with pytest.raises(RuntimeError, match="step is 0 but must be > 0"):
        x.unfold(1, 2, 0)


def test_small_helpers():
    # PyTorch 2.13 printed the same results for these calls
    assert torch.float_power(torch.tensor([2, 3]), 2).dtype == torch.float64
    mm = torch.aminmax(torch.tensor([[1, 5], [3, 0]]), dim=1)
    assert mm.min.tolist() == [1, 0] and mm.max.tolist() == [5, 3]
    x = torch.zeros(3, 4)
    x.fill_diagonal_(5)
    assert x.tolist() == (np.eye(3, 4) * 5).tolist()
    t = torch.zeros(7, 3)
    t.fill_diagonal_(1, wrap=True)
    ref = np.zeros((7, 3))
    np.fill_diagonal(ref, 1, wrap=True)
    assert t.tolist() == ref.tolist()
    assert torch.isin(torch.tensor([1, 2, 3]), torch.tensor([2, 5])).tolist() == [False, True, False]
    assert torch.trace(torch.arange(9.0).reshape(3, 3)).item() == 12.0
    assert torch.diagflat(torch.tensor([1, 2]), 1).tolist() == np.diagflat([1, 2], 1).tolist()
    m, v, b = RNG.standard_normal((3, 4)), RNG.standard_normal(4), RNG.standard_normal(3)
    close(torch.addmv(T(b), T(m), T(v), beta=0.5, alpha=2), 0.5 * b + 2 * m @ v)
    close(torch.addr(T(m), T(b), T(v)), m + np.outer(b, v))
    bb = RNG.standard_normal((2, 3, 4))
    close(torch.addbmm(T(b[:, None] * np.ones((3, 3))), T(bb), T(bb.transpose(0, 2, 1))),
          b[:, None] + np.einsum("bij,bkj->ik", bb, bb), 1e-4)


def test_linalg_cholesky_and_solve_triangular():
    a = RNG.standard_normal((2, 4, 4))
    A = a @ a.transpose(0, 2, 1) + 4 * np.eye(4)
    L = torch.linalg.cholesky(T(A, dtype=torch.float64))
    close(L, np.linalg.cholesky(A), 1e-10)
    close(torch.linalg.cholesky(T(A[0], dtype=torch.float64), upper=True), np.linalg.cholesky(A[0]).T, 1e-10)
    B = RNG.standard_normal((2, 4, 3))
    Ln = np.linalg.cholesky(A)
    close(torch.linalg.solve_triangular(L, T(B, dtype=torch.float64), upper=False), np.linalg.solve(Ln, B), 1e-10)
    close(torch.linalg.solve_triangular(L.transpose(-2, -1), T(B, dtype=torch.float64), upper=True),
          np.linalg.solve(Ln.transpose(0, 2, 1), B), 1e-10)
    Bt = B.transpose(0, 2, 1)
    close(torch.linalg.solve_triangular(L, T(Bt, dtype=torch.float64), upper=False, left=False),
          Bt @ np.linalg.inv(Ln), 1e-10)
    At = T(A[0], dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda m: torch.linalg.cholesky((m + m.T) / 2), (At,))
    lt = T(np.tril(a[0]) + 4 * np.eye(4), dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda l, b: torch.linalg.solve_triangular(l, b, upper=False),
                     (lt, T(B[0], dtype=torch.float64, requires_grad=True)))
    # PyTorch 2.13's message
    with pytest.raises(torch.linalg.LinAlgError, match=r"linalg.cholesky: The factorization could not be completed "
                       r"because the input is not positive-definite \(the leading minor of order 2 is not "
                       r"positive-definite\)."):
        torch.linalg.cholesky(torch.tensor([[1.0, 2.0], [2.0, 1.0]]))
