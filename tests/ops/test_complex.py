"""Complex dtypes (ops/complex.py, kernels/complex.py): creation, the float views, element-wise math against
numpy, and gradients in PyTorch's convention (grad = dL/dRe + i dL/dIm), checked by finite differences of
real functions that pass through complex intermediates."""
import math

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.testing import neutral_repr


def vals(x):
    return x.detach().resolve_conj().cpu().numpy()


def rnd(shape, dtype=np.complex128, seed=0):
    r = np.random.default_rng(seed)
    return (r.standard_normal(shape) + 1j * r.standard_normal(shape)).astype(dtype)


def test_creation_and_promotion():
    x = tgrad.tensor([1 + 2j, 3 - 1j])
    assert x.dtype is tgrad.complex64 and x.is_complex() and tgrad.cfloat is tgrad.complex64
    assert tgrad.tensor([1.0, 2j], dtype=tgrad.cdouble).dtype is tgrad.complex128
    assert tgrad.tensor(np.array([1j], dtype=np.complex128)).dtype is tgrad.complex128
    np.testing.assert_array_equal(vals(x), [1 + 2j, 3 - 1j])
    np.testing.assert_array_equal(vals(tgrad.zeros(2, 3, dtype=tgrad.cfloat)), np.zeros((2, 3)))
    np.testing.assert_array_equal(vals(tgrad.ones(2, dtype=tgrad.cdouble)), [1, 1])
    f = tgrad.full((2,), 1.5 - 2j)
    assert f.dtype is tgrad.complex64
    np.testing.assert_array_equal(vals(f), [1.5 - 2j] * 2)
    assert x[1].item() == 3 - 1j and x.tolist() == [1 + 2j, 3 - 1j]
    assert tgrad.promote_types(tgrad.float64, tgrad.complex64) is tgrad.complex128
    assert (tgrad.ones(2) * 1j).dtype is tgrad.complex64
    assert (tgrad.ones(2, dtype=tgrad.float64) * 1j).dtype is tgrad.complex128
    assert tgrad.result_type(tgrad.ones(2), tgrad.tensor(1j, dtype=tgrad.complex128)) is tgrad.complex64
    assert (tgrad.arange(3) + 1j).dtype is tgrad.complex64
    with pytest.raises(TypeError, match="can't convert complex to float"):
        tgrad.tensor([1j], dtype=tgrad.float32)
    with pytest.raises(RuntimeError, match="without overflow"):
        tgrad.full((2,), 1j, dtype=tgrad.float32)


def test_randn_is_the_float_view_with_variance_half():
    tgrad.manual_seed(3)
    z = tgrad.randn(5, 3, dtype=tgrad.cfloat)
    tgrad.manual_seed(3)
    ref = tgrad.normal(0.0, 2 ** -0.5, size=(5, 3, 2))
    np.testing.assert_array_equal(vals(tgrad.view_as_real(z)), vals(ref))
    big = vals(tgrad.randn(20000, dtype=tgrad.cdouble))
    assert abs(big.real.var() - 0.5) < 0.03 and abs(big.imag.var() - 0.5) < 0.03


def test_views_share_storage():
    z = tgrad.tensor([[1 + 2j, 3 - 4j], [5j, -6.0]])
    r = tgrad.view_as_real(z)
    assert r.shape == (2, 2, 2) and r.dtype is tgrad.float32 and r.stride() == (4, 2, 1)
    r[0, 1, 1] = 7.0
    assert z[0, 1].item() == 3 + 7j
    c = tgrad.view_as_complex(r)
    c[1, 0] = 2 + 2j
    np.testing.assert_array_equal(vals(r[1, 0]), [2, 2])
    zt = z.t()                                   # a strided complex tensor
    np.testing.assert_array_equal(vals(zt.real), vals(z).T.real)
    np.testing.assert_array_equal(vals(zt.imag), vals(z).T.imag)
    z.imag[1, 1] = -1.0
    z.real[0, 0] = 9.0
    assert z[1, 1].item() == -6 - 1j and z[0, 0].item() == 9 + 2j
    assert tgrad.view_as_real(z[:, 1]).stride() == (4, 1)
    with pytest.raises(RuntimeError, match="last dimension of size 2"):
        tgrad.view_as_complex(tgrad.zeros(3))
    with pytest.raises(RuntimeError, match="last dimension with stride 1"):
        tgrad.view_as_complex(tgrad.zeros(2, 2).t())
    with pytest.raises(RuntimeError, match="storage_offset divisible by 2"):
        tgrad.view_as_complex(tgrad.zeros(6)[1:5].view(2, 2))
    with pytest.raises(RuntimeError, match="only supported for complex tensors"):
        tgrad.view_as_real(tgrad.zeros(2))
    with pytest.raises(RuntimeError, match="non-complex"):
        tgrad.zeros(2).imag


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_elementwise_against_numpy(dtype):
    a, b = rnd((3, 4), dtype, 1), rnd((4,), dtype, 2)
    r = np.random.default_rng(3).standard_normal((3, 1)).astype(np.float32 if dtype == np.complex64 else np.float64)
    ta, tb, tr = tgrad.tensor(a), tgrad.tensor(b), tgrad.tensor(r)
    tol = dict(rtol=2e-6, atol=1e-6) if dtype == np.complex64 else dict(rtol=1e-13, atol=1e-13)
    for got, ref in [(ta + tb, a + b), (ta - tb, a - b), (ta * tb, a * b), (ta / tb, a / b), (-ta, -a),
                     (ta.exp(), np.exp(a)), (ta.abs(), np.abs(a)), (ta.angle(), np.angle(a)),
                     (ta.conj(), np.conj(a)), (ta.sgn(), a / np.abs(a)), (ta * tr, a * r), (tr / ta, r / a),
                     (ta + tr, a + r), (ta.add(tb, alpha=2), a + 2 * b), (ta * (2 - 1j), a * (2 - 1j)),
                     (ta.t() * tb[:3], a.T * b[:3]), (ta.sum(0), a.sum(0)), (ta.mean(), a.mean())]:
        assert got.dtype.is_complex == np.iscomplexobj(ref)
        np.testing.assert_allclose(vals(got), ref, **tol)
    re, im = tgrad.tensor(r[:, 0]), tgrad.tensor(a[:, 0].real.copy())
    np.testing.assert_allclose(vals(tgrad.complex(re, im)), r[:, 0] + 1j * a[:, 0].real, **tol)
    np.testing.assert_allclose(vals(tgrad.polar(re.abs(), im)), np.abs(r[:, 0]) * np.exp(1j * a[:, 0].real), **tol)
    z = tgrad.tensor([0j, -0.0 + 0j, 1e30 + 1e30j, -1e-30j])
    np.testing.assert_array_equal(vals(z.abs()), np.abs(vals(z)))      # no overflow of |z|^2
    np.testing.assert_array_equal(vals(z.sgn())[:2], [0, 0])


def test_inplace_and_bad_input():
    z = tgrad.tensor([1 + 1j, 2 - 1j])
    z.mul_(1j)
    z.add_(1)
    np.testing.assert_allclose(vals(z), [1j * (1 + 1j) + 1, 1j * (2 - 1j) + 1])
    x = tgrad.ones(2)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Float"):
        x.mul_(z)
    np.testing.assert_array_equal(vals(x), [1, 1])
    with pytest.raises(NotImplementedError, match="\"lt_cpu\" not implemented for 'ComplexFloat'"):
        z.cpu().lt(z.cpu())
    with pytest.raises(RuntimeError, match="Expected both inputs to be Half, Float or Double"):
        tgrad.complex(tgrad.ones(2), tgrad.ones(2, dtype=tgrad.float64))


def _c(x):
    return tgrad.view_as_complex(x)


def _r(z):
    return tgrad.view_as_real(z)


@pytest.mark.parametrize("fn", [
    lambda a, b: _r(_c(a) * _c(b)),
    lambda a, b: _r(_c(a) / _c(b)),
    lambda a, b: _r((_c(a) + _c(b)).exp() - _c(a)),
    lambda a, b: (_c(a) * _c(b)).abs() + _c(b).angle(),
    lambda a, b: _r(_c(a).sgn() * _c(b).conj()),
    lambda a, b: _r(tgrad.polar(a[..., 0].abs() + 0.5, a[..., 1]) * b[..., 0]),
    lambda a, b: _r(tgrad.complex(a[..., 0], b[..., 1]) * _c(a).real - _c(b).imag),
    lambda a, b: _r((_c(a) * _c(b)[0]).sum(0)),
    lambda a, b: _r(-_c(a).mean(1, keepdim=True) * 1j + _c(b)),
])
def test_gradients_follow_the_conjugate_convention(fn):
    r = np.random.default_rng(4)
    a = tgrad.tensor(r.standard_normal((3, 2, 2)), dtype=tgrad.float64, requires_grad=True)
    b = tgrad.tensor(r.standard_normal((3, 2, 2)) + 0.5, dtype=tgrad.float64, requires_grad=True)
    assert gradcheck(fn, (a, b))


def test_complex_leaf_gradient():
    """A complex leaf gets dL/dRe + i dL/dIm: L = |z|^2 gives 2z, L = Re(w z) gives conj(w)."""
    z = tgrad.tensor([1 + 2j, -3 + 0.5j], dtype=tgrad.cdouble, requires_grad=True)
    (z * z.conj()).real.sum().backward()
    np.testing.assert_allclose(vals(z.grad), 2 * vals(z))
    z.grad = None
    w = tgrad.tensor([2 - 1j, 1j], dtype=tgrad.cdouble)
    (w * z).real.sum().backward()
    np.testing.assert_allclose(vals(z.grad), np.conj(vals(w)))
    with pytest.raises(RuntimeError, match="real scalar outputs"):
        (z * 1).sum().backward()


def test_repr_as_pytorch():
    # printed by PyTorch 2.13 for the same values (torch.tensor(...) / torch.complex128)
    assert neutral_repr(tgrad.tensor([1 + 2j, 3 - 1j])) == "tensor([1.+2.j, 3.-1.j])"
    assert neutral_repr(tgrad.tensor([[1.5, 2], [3, 4]], dtype=tgrad.complex128)) == (
        "tensor([[1.5000+0.j, 2.0000+0.j],\n        [3.0000+0.j, 4.0000+0.j]], dtype=tgrad.complex128)")
    assert neutral_repr(tgrad.tensor([1e10 + 1j, 1e-5j])) == "tensor([1.0000e+10+1.0000e+00j, 0.0000e+00+1.0000e-05j])"
    assert neutral_repr(tgrad.tensor(math.pi * 1j)) == "tensor(0.+3.1416j)"


def test_matmul_and_einsum_of_complex_operands():
    a, b = rnd((2, 3, 4), seed=5), rnd((2, 4, 5), seed=6)
    r = np.random.default_rng(7).standard_normal((4, 2))
    ta, tb, tr = tgrad.tensor(a), tgrad.tensor(b), tgrad.tensor(r)
    for got, ref in [(ta @ tb, a @ b), (ta.bmm(tb), a @ b), (ta[0].mm(tb[1]), a[0] @ b[1]), (ta @ tr, a @ r),
                     (tr.t().matmul(tb), r.T @ b),
                     (tgrad.einsum("bij,bjk->bik", ta, tb), np.einsum("bij,bjk->bik", a, b)),
                     (tgrad.einsum("bij,jk->bik", ta, tr), np.einsum("bij,jk->bik", a, r))]:
        np.testing.assert_allclose(vals(got), ref, rtol=1e-12, atol=1e-12)
    x = tgrad.tensor(np.random.default_rng(8).standard_normal((2, 3, 2)), requires_grad=True)
    w = tgrad.tensor(np.random.default_rng(9).standard_normal((3, 4, 2)), requires_grad=True)
    assert gradcheck(lambda x, w: _r(tgrad.einsum("bi,io->bo", _c(x), _c(w))), (x, w))
    assert gradcheck(lambda x, w: (_c(x) @ _c(w)).abs(), (x, w))


def test_slice_assignment_and_optimizer_on_complex_parameters():
    """out[...] = z records CopySlices (its backward scatters the complex gradient); Adam updates a complex
    parameter as PyTorch does, element-wise on its float view."""
    w = tgrad.tensor(rnd((3,), seed=10), requires_grad=True)
    x = tgrad.tensor(np.random.default_rng(11).standard_normal((3, 2)), requires_grad=True)
    def f(x):
        out = tgrad.zeros(5, dtype=tgrad.cdouble)
        out[1:4] = _c(x) * w.detach()
        return _r(out)
    assert gradcheck(f, (x,))
    z0 = rnd((4,), seed=12)
    p = tgrad.nn.Parameter(tgrad.tensor(z0))
    q = tgrad.nn.Parameter(tgrad.tensor(np.stack([z0.real, z0.imag], -1)))
    opts = [tgrad.optim.Adam([p], lr=0.1, weight_decay=0.01), tgrad.optim.Adam([q], lr=0.1, weight_decay=0.01)]
    for _ in range(3):
        for o in opts:
            o.zero_grad()
        (p * p.conj() * tgrad.tensor([1.0, 2.0, 3.0, 4.0], dtype=tgrad.float64)).real.sum().backward()
        (q * q * tgrad.tensor([[1.0], [2.0], [3.0], [4.0]], dtype=tgrad.float64)).sum().backward()
        for o in opts:
            o.step()
    np.testing.assert_array_equal(vals(_r(p)), vals(q))
    assert p.dtype is tgrad.complex128 and p._version > 0


def test_casting_to_real_warns_but_gradients_do_not():
    x = tgrad.tensor([1 + 2j, -3j])
    with pytest.warns(UserWarning, match="Casting complex values to real discards the imaginary part"):
        y = x.to(tgrad.float32)
    np.testing.assert_array_equal(vals(y), [1, 0])
    w = tgrad.tensor([1.0, 2.0], dtype=tgrad.float64, requires_grad=True)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # a real input's gradient is taken as .real, silently
        (w.to(tgrad.cdouble) * (1 + 1j)).abs().sum().backward()
        (tgrad.fft.irfft(tgrad.fft.rfft(w), n=2) * w).sum().backward()
    assert w.grad is not None


# ------------------------------------------------------------------ complex element-wise math (issue 14)
_MATH = {"log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "expm1": np.expm1,
         "sqrt": np.sqrt, "rsqrt": lambda v: 1 / np.sqrt(v), "reciprocal": lambda v: 1 / v, "sin": np.sin,
         "cos": np.cos, "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asin": np.arcsin,
         "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
         "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "square": np.square, "exp": np.exp}


@pytest.mark.parametrize("name", sorted(_MATH))
def test_math_forward(name):
    """Against numpy on 33 points: the four quadrants, the real and imaginary axes, large |x| for tanh."""
    z = rnd(33, seed=3) * 1.5
    z[:6] = [0.3, -2 + 0j, 2.5j, -0.7j, 1e-3 + 1e-4j, 30 - 1j]
    for dt, tol in ((np.complex128, 1e-13), (np.complex64, 4e-6)):
        zz = z.astype(dt)
        got = vals(getattr(tgrad.tensor(zz), name)())
        ref = _MATH[name](zz.astype(np.complex128))
        assert got.dtype == dt
        ok = np.isfinite(ref)
        err = np.abs(got[ok] - ref[ok]) / np.maximum(np.abs(ref[ok]), 1e-300)
        assert err.max() < tol, (name, dt, zz[ok][err.argmax()], got[ok][err.argmax()], ref[ok][err.argmax()])


def test_math_small_and_special():
    """log1p, expm1, asinh, sinh near 0 keep their relative accuracy (numpy's complex log1p does not: the
    series); tanh of large |Re| is +-1 without overflow; sqrt's branch cut follows the sign of the zero."""
    z = np.array([1e-6 + 1e-7j, -2e-8 + 3e-9j])
    t = tgrad.tensor(z)
    for name, series in (("log1p", z - z * z / 2 + z ** 3 / 3), ("expm1", z + z * z / 2 + z ** 3 / 6),
                         ("asinh", z - z ** 3 / 6), ("sinh", z + z ** 3 / 6), ("atanh", z + z ** 3 / 3)):
        np.testing.assert_allclose(vals(getattr(t, name)()), series, rtol=1e-14, err_msg=name)
    np.testing.assert_allclose(vals(tgrad.tensor([800 + 1j, -800 - 2j]).tanh()), [1, -1], atol=0)
    s = vals(tgrad.tensor(np.array([complex(-4, 0.0), complex(-4, -0.0)])).sqrt())
    np.testing.assert_array_equal(s, [2j, -2j])
    assert math.copysign(1, s[1].real) == 1


_HOLO = ["log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tan", "sinh",
         "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "sigmoid", "square", "exp"]


@pytest.mark.parametrize("name", _HOLO)
def test_math_gradcheck(name):
    """grad * conj(f'(z)) (PyTorch's convention), against finite differences of the real and imaginary parts;
    second order too."""
    z = tgrad.tensor(rnd(3, seed=4) * 0.6 + 0.1, requires_grad=True)
    assert gradcheck(lambda v: getattr(v, name)(), (z,))
    assert gradgradcheck(lambda v: getattr(v, name)(), (z,))


def test_gradcheck_catches_a_missing_conj():
    """gradcheck compares complex outputs part by part: a holomorphic backward without the conjugate fails."""
    class Mul(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * (1 + 2j)

        @staticmethod
        def backward(ctx, g):
            return g * (1 + 2j)
    z = tgrad.tensor(rnd(2), requires_grad=True)
    assert not gradcheck(Mul.apply, (z,), raise_exception=False)
    assert gradcheck(lambda v: v * (1 + 2j), (z,))


def test_pow():
    z = rnd(5, seed=5)
    z[0] = 0
    t = tgrad.tensor(z)
    w = rnd(5, seed=6)
    for p in (2, 3, 0.5, -0.5, -1, -2, 2.5, 1j, 0.3 - 2j):
        np.testing.assert_allclose(vals(t.pow(p))[1:], z[1:] ** p, rtol=1e-13, err_msg=str(p))
    # 0 ** p as PyTorch (exp(p log 0) with C99's cexp): 0 for Re p > 0, nan for Re p == 0, inf real part below
    np.testing.assert_array_equal(vals(t[:1].pow(2.5)), [0])
    np.testing.assert_array_equal(vals(t[:1].pow(0.3 - 2j)), [0])
    assert np.isnan(vals(t[:1].pow(1j))).all() and vals(t[:1].pow(-1.5))[0].real == np.inf
    np.testing.assert_array_equal(vals(t.pow(0)), np.ones(5))
    np.testing.assert_allclose(vals(t[1:] ** tgrad.tensor(w[1:])), z[1:] ** w[1:], rtol=1e-13)
    np.testing.assert_allclose(vals(2 ** t), 2 ** z, rtol=1e-13)
    np.testing.assert_allclose(vals(tgrad.tensor(np.abs(w)) ** (1 + 1j)), np.abs(w) ** (1 + 1j), rtol=1e-13)
    zg = tgrad.tensor(z[1:], requires_grad=True)
    wg = tgrad.tensor(w[1:], requires_grad=True)
    for p in (2, 3, 2.5, -1, 0.5 + 1j):
        assert gradcheck(lambda v: v.pow(p), (zg,)), p
    assert gradcheck(lambda a, b: a ** b, (zg, wg))
    assert gradcheck(lambda b: (-2.0) ** b, (wg,))
    assert gradgradcheck(lambda a, b: a ** b, (zg, wg))


def test_compare_and_predicates():
    nan, inf = float("nan"), float("inf")
    a = tgrad.tensor([1 + 2j, complex(nan, 0), 3 - 1j, complex(inf, 1), complex(1, nan)])
    b = tgrad.tensor([1 + 2j, complex(nan, 0), 3 + 1j, complex(inf, 1), 1 + 0j], dtype=tgrad.complex128)
    np.testing.assert_array_equal(vals(a == b), [True, False, False, True, False])
    np.testing.assert_array_equal(vals(a != b), [False, True, True, False, True])
    np.testing.assert_array_equal(vals(a == (3 - 1j)), [False, False, True, False, False])
    np.testing.assert_array_equal(vals(a.isnan()), [False, True, False, False, True])
    np.testing.assert_array_equal(vals(a.isinf()), [False, False, False, True, False])
    np.testing.assert_array_equal(vals(a.isfinite()), [True, False, True, False, False])
    np.testing.assert_array_equal(vals(a.abs()[[1, 3, 4]]), [nan, inf, nan])
    c = tgrad.tensor([1 + 2.00001j, complex(nan, 0), 3 + 1j, complex(inf, 1), complex(1, nan)])
    np.testing.assert_array_equal(vals(tgrad.isclose(a, c)), [True, False, False, True, False])
    np.testing.assert_array_equal(vals(tgrad.isclose(a, c, equal_nan=True)), [True, True, False, True, True])
    assert tgrad.allclose(a[:1], c[:1]) and not tgrad.allclose(a[:1], c[:1], rtol=0, atol=1e-6)
    for op in ("lt", "le", "gt", "ge"):
        with pytest.raises(NotImplementedError, match=f"\"{op}_cpu\" not implemented for 'ComplexFloat'"):
            getattr(a.cpu(), op)(a.cpu())
    for op in ("maximum", "minimum"):
        with pytest.raises(RuntimeError, match=f"{op} not implemented for complex tensors."):
            getattr(tgrad, op)(a, a)


def test_where_index_and_masks():
    """where / masked_fill / gather / index_select / scatter / scatter_add / advanced indexing / masked_select
    move the (real, imaginary) pairs; gradients back through them (PyTorch's gradients are the same maps)."""
    z = rnd((3, 4), seed=7)
    w = rnd((3, 4), seed=8)
    t, u = tgrad.tensor(z), tgrad.tensor(w)
    m = np.array([[True, False, True, False]])
    np.testing.assert_array_equal(vals(tgrad.where(tgrad.tensor(m), t, u)), np.where(m, z, w))
    np.testing.assert_array_equal(vals(tgrad.where(tgrad.tensor(m), t, 2.0)), np.where(m, z, 2.0))
    np.testing.assert_array_equal(vals(t.masked_fill(tgrad.tensor(m), 1 - 2j)), np.where(m, 1 - 2j, z))
    idx = np.array([[2, 0, 1, 2], [0, 0, 1, 1]])
    np.testing.assert_array_equal(vals(t.gather(0, tgrad.tensor(idx))), np.take_along_axis(z, idx, 0))
    np.testing.assert_array_equal(vals(t.t().index_select(1, tgrad.tensor([2, 0]))), z.T[:, [2, 0]])
    np.testing.assert_array_equal(vals(t[[2, 0], 1:]), z[[2, 0], 1:])
    np.testing.assert_array_equal(vals(t[tgrad.tensor(np.abs(z) > 1)]), z[np.abs(z) > 1])
    s = np.zeros((3, 4), complex)
    np.put_along_axis(s, idx[:1], w[:1], 0)
    np.testing.assert_array_equal(vals(tgrad.zeros(3, 4, dtype=tgrad.complex128).scatter(0, tgrad.tensor(idx[:1]),
                                                                                         u[:1])), s)
    acc = np.zeros((3, 4), complex)
    for i in range(2):
        for j in range(4):
            acc[idx[i, j], j] += w[i, j]
    np.testing.assert_allclose(vals(tgrad.zeros(3, 4, dtype=tgrad.complex128).scatter_add(0, tgrad.tensor(idx), u[:2])),
                               acc, rtol=1e-15)
    v = t.clone()
    v[1, [0, 3]] = 5j
    z2 = z.copy()
    z2[1, [0, 3]] = 5j
    np.testing.assert_array_equal(vals(v), z2)
    a = tgrad.tensor(z, requires_grad=True)
    b = tgrad.tensor(w, requires_grad=True)
    ti = tgrad.tensor(idx)
    assert gradcheck(lambda x, y: tgrad.where(tgrad.tensor(m), x, y), (a, b))
    assert gradcheck(lambda x: x.gather(0, ti).masked_fill(tgrad.tensor(m), 3j), (a,))
    assert gradcheck(lambda x: x.index_select(1, tgrad.tensor([3, 1])) * (1 + 1j), (a,))


def test_reductions_and_products():
    z = rnd((3, 5), seed=9)
    t = tgrad.tensor(z)
    for got, ref in ((t.prod(), z.prod()), (t.prod(1), z.prod(1)), (t.t().prod(1, keepdim=True), z.T.prod(1)[:, None]),
                     (t.cumprod(1), z.cumprod(1)), (t.t().cumprod(0), z.T.cumprod(0)), (t.cumsum(0), z.cumsum(0)),
                     (t.t().cumsum(1), z.T.cumsum(1)), (t.sum(1), z.sum(1)), (t.mean(0), z.mean(0))):
        np.testing.assert_allclose(vals(got), ref, rtol=1e-14)
    assert t.to(tgrad.complex64).prod(1).dtype is tgrad.complex64
    a, b = rnd(4, seed=10), rnd(4, seed=11)
    np.testing.assert_allclose(vals(tgrad.tensor(a).dot(tgrad.tensor(b))), np.dot(a, b), rtol=1e-14)
    np.testing.assert_allclose(vals(tgrad.vdot(tgrad.tensor(a), tgrad.tensor(b))), np.vdot(a, b), rtol=1e-14)
    np.testing.assert_allclose(vals(tgrad.tensor(z).mv(tgrad.tensor(b[:1].repeat(5)))), z @ b[:1].repeat(5),
                               rtol=1e-14)
    x = tgrad.tensor(z[:2, :3], requires_grad=True)
    z0 = z[:2, :3].copy()
    z0[0, 1] = 0
    x0 = tgrad.tensor(z0, requires_grad=True)
    for f in (lambda v: v.prod(1), lambda v: v.prod(), lambda v: v.cumprod(1), lambda v: v.cumsum(0)):
        assert gradcheck(f, (x,)) and gradcheck(f, (x0,))
    assert gradgradcheck(lambda v: v.prod(1), (x,)) and gradgradcheck(lambda v: v.cumprod(1), (x,))
    assert gradcheck(lambda p, q: tgrad.vdot(p, q), (tgrad.tensor(a, requires_grad=True),
                                                     tgrad.tensor(b, requires_grad=True)))


def test_lazy_conj_view():
    """conj() is a view with the conjugate bit (PyTorch 2's semantics, printed by PyTorch 2.13): it aliases its
    base, views of it keep the bit, every other op reads its values (resolve_conj: CloneBackward0), in-place
    ops write through it, numpy() and view_as_real refuse it, resolve_conj / conj_physical give plain tensors."""
    c = tgrad.tensor([1 + 2j, 3 - 1j])
    d = c.conj()
    assert d.is_conj() and tgrad.is_conj(d) and d._base is c and not c.is_conj()
    assert d[0].is_conj() and d.reshape(2, 1).is_conj() and d.t().is_conj() and d.detach().is_conj()
    assert not (d * 1).is_conj() and not d.conj().is_conj() and not d.conj_physical().is_conj()
    assert not d.resolve_conj().is_conj() and not tgrad.resolve_conj(d).is_conj() and not d.clone().is_conj()
    assert not d.real.is_conj() and not tgrad.ones(2).conj().is_conj()
    c.add_(1)                                       # the view sees its base's changes
    assert d.tolist() == [2 - 2j, 4 + 1j] and neutral_repr(d) == "tensor([2.-2.j, 4.+1.j])"
    d.mul_(2)                                       # and writes through: c = conj(2 conj(c))
    assert c.tolist() == [4 + 4j, 8 - 2j] and d.is_conj()
    d.copy_(tgrad.tensor([5j, 1]))
    assert c.tolist() == [-5j, 1]
    np.testing.assert_array_equal(vals(d.imag), [5, 0])
    np.testing.assert_array_equal(vals(d.real), [0, 1])
    e = c.conj()
    assert e.sum().item() == 1 + 5j and vals(e[[1, 0]]).tolist() == [1, 5j] and (e == tgrad.tensor([5j, 1])).all()
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that has conjugate bit set"):
        e.numpy()
    with pytest.raises(RuntimeError, match="view_as_real doesn't work on unresolved conjugated tensors"):
        tgrad.view_as_real(e)
    np.testing.assert_array_equal(e.resolve_conj().cpu().numpy(), [5j, 1])
    np.testing.assert_array_equal(np.asarray(e), [5j, 1])
    x = tgrad.tensor([1 + 1j, -2 + 0.5j], dtype=tgrad.complex128, requires_grad=True)
    y = x.conj()
    assert type(y.grad_fn).__name__ == "ConjBackward0"
    assert type(y.resolve_conj().grad_fn).__name__ == "CloneBackward0"
    (y * 2).abs().sum().backward()
    np.testing.assert_allclose(vals(x.grad), 2 * np.array([1 + 1j, -2 + 0.5j]) / np.abs([1 + 1j, -2 + 0.5j]))
    assert gradcheck(lambda v: v.conj() * (1 + 2j) + v.conj()[[1, 0]], (x,))
    assert gradcheck(lambda v: v.conj().exp().reshape(2, 1), (x,))



def test_inplace_on_conj_view_records():
    """An in-place op on a conjugate view that requires grad is recorded, as PyTorch 2.13 does: the base's grad_fn
    CopySlices, the view's ConjBackward0 (names PyTorch printed), values conj(op(conj(base))) against numpy,
    gradients by finite differences; on a view of a leaf, PyTorch's error."""
    a = tgrad.tensor(rnd((2, 3), seed=3), requires_grad=True)
    w = tgrad.tensor(rnd((3,), seed=4), requires_grad=True)
    b = a.clone()
    c = b[1].conj()
    c.mul_(w)
    assert c.is_conj() and c._version == 1 and b._version == 1
    assert type(b.grad_fn).__name__ == "CopySlices" and type(c.grad_fn).__name__ == "ConjBackward0"
    ref = vals(a).copy()
    ref[1] = np.conj(np.conj(ref[1]) * vals(w))
    np.testing.assert_allclose(vals(b), ref, rtol=1e-14)
    np.testing.assert_allclose(vals(c), np.conj(ref[1]), rtol=1e-14)

    def f(x, y):
        z = x.clone()
        v = z[1].conj()
        v.mul_(y)
        v.add_(1j)
        return z * 1 + v.imag.sum()

    assert gradcheck(f, (a, w))
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an "
                                           "in-place operation"):
        a.conj().mul_(2)
    np.testing.assert_allclose(vals(a), rnd((2, 3), seed=3))


def test_math_complex64_near_pytorch():
    """complex64 results within a few ulp of PyTorch 2.13's (glibc's complex float functions; data from
    tests/data/make_complex_math_ref.py): the logs and inverse functions are computed in fp64 for that, the
    others in fp32 steps as ATen's.  On cpu: a GPU's approximate instructions differ by a few ulp more."""
    import os
    ref = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "complex_math_ref.npz"))
    t = tgrad.tensor(ref["z"], device="cpu")
    for name in ref.files[1:]:
        got = vals(getattr(t, name)()).view(np.float32).view(np.int32).astype(np.int64)
        exp = ref[name].view(np.float32).view(np.int32).astype(np.int64)
        assert np.abs(got - exp).max() <= (5 if name == "sigmoid" else 3), name


def test_logical_and_bitwise_ops():
    """PyTorch 2.13: the logical ops and any / all read a complex x as x != 0 (bool results; logical_and_ on a
    complex tensor stores 1 + 0j / 0j); the bitwise ops raise its NotImplementedError naming the kernel, ~ its
    TypeError (messages as PyTorch printed them)."""
    a = np.array([1 + 1j, 0j, 2j, 0j], dtype=np.complex64)
    b = np.array([0j, 0j, -1 + 0j, 3j], dtype=np.complex64)
    ta, tb = tgrad.tensor(a), tgrad.tensor(b)
    for got, ref in ((tgrad.logical_and(ta, tb), np.logical_and(a, b)), (tgrad.logical_or(ta, tb), np.logical_or(a, b)),
                     (tgrad.logical_xor(ta, tb), np.logical_xor(a, b)), (tgrad.logical_not(ta), np.logical_not(a)),
                     (tgrad.logical_and(tgrad.tensor([1, 0, 1, 1]), tb), np.array([0, 0, 1, 1]) != 0),
                     (tgrad.logical_or(tgrad.tensor([0.0, 0, 0, 0]), tb), b != 0),
                     (ta.any(), np.any(a)), (ta.all(), np.all(a)),
                     (tb.reshape(2, 2).any(1), np.any(b.reshape(2, 2), 1))):
        assert got.dtype is tgrad.bool
        np.testing.assert_array_equal(got.cpu().numpy(), ref)
    c = ta.clone()
    assert c.logical_and_(tb) is c and c.dtype is tgrad.complex64
    np.testing.assert_array_equal(vals(c), np.logical_and(a, b).astype(np.complex64))
    np.testing.assert_array_equal(vals(ta.clone().logical_not_()), np.logical_not(a).astype(np.complex64))
    for f, kernel in ((lambda: ta & tb, "bitwise_and_cpu"), (lambda: ta | tb, "bitwise_or_cpu"),
                      (lambda: tgrad.bitwise_xor(ta, tb), "bitwise_xor_cpu"), (lambda: ta << 1, "lshift_cpu"),
                      (lambda: ta >> 1, "rshift_cpu"), (lambda: tgrad.tensor([1, 2]) & ta[:2], "bitwise_and_cpu"),
                      (lambda: ta.clone().bitwise_not_(), "bitwise_not_cpu"),
                      (lambda: ta.bitwise_and_(tb), "bitwise_and_cpu")):
        with pytest.raises(NotImplementedError, match=f"\"{kernel}\" not implemented for 'ComplexFloat'"):
            f()
    with pytest.raises(TypeError, match=r"~ \(operator.invert\) is only implemented on integer and Boolean-type"):
        ~ta
    np.testing.assert_array_equal(vals(ta), a)       # a refused in-place op left it unchanged
