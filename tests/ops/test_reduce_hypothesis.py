"""Property tests: reductions and scans over random shapes, strides, dims and values agree with numpy."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tgrad

SETTINGS = settings(max_examples=20, deadline=None)
FEW = settings(max_examples=8, deadline=None)


@st.composite
def cases(draw, zeros=False, int_dim=False):
    """(numpy array, tgrad view of it (maybe transposed / sliced with a step), dim, keepdim).

    zeros: about a quarter of the values are exact zeros; int_dim: dim is None or one int."""
    shape = draw(st.lists(st.integers(1, 6), min_size=0, max_size=4))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    a = rng.uniform(-3, 3, shape)
    if zeros:
        a = np.where(rng.uniform(0, 1, shape) < 0.25, 0.0, a)
    layout = draw(st.sampled_from(["contiguous", "transposed", "stepped"]))
    t = tgrad.tensor(a)
    if layout == "transposed" and a.ndim >= 2:
        perm = draw(st.permutations(range(a.ndim)))
        a = a.transpose(perm)
        t = t.permute(*perm)
    elif layout == "stepped" and a.ndim >= 1:
        wide = np.repeat(a, 2, axis=-1)
        wide[..., 1::2] = 99.0
        t = tgrad.tensor(wide)[..., ::2]
    nd = a.ndim
    if nd == 0:
        dim = draw(st.sampled_from([None, 0, -1]))
    elif int_dim:
        dim = draw(st.one_of(st.none(), st.integers(-nd, nd - 1)))
    else:
        dim = draw(st.one_of(st.none(), st.integers(-nd, nd - 1),
                             st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True)
                             .map(tuple)))
    return a, t, dim, draw(st.booleans())


def _axis(dim, nd):
    if dim is None or nd == 0:
        return None
    return dim


def _check(got, want, rtol=1e-10, atol=1e-10):
    np.testing.assert_allclose(got.cpu().numpy().astype(np.float64), np.asarray(want, np.float64), rtol=rtol, atol=atol)


@SETTINGS
@given(cases())
def test_sum(case):
    a, t, dim, keepdim = case
    got = t.sum() if dim is None else t.sum(dim, keepdim)
    want = a.sum() if dim is None else a.sum(_axis(dim, a.ndim), keepdims=keepdim)
    _check(got, want)


@SETTINGS
@given(cases())
def test_mean(case):
    a, t, dim, keepdim = case
    got = t.mean() if dim is None else t.mean(dim, keepdim)
    want = a.mean() if dim is None else a.mean(_axis(dim, a.ndim), keepdims=keepdim)
    _check(got, want)


def _check_extreme(case, which):
    """t.amax/amin and t.max/min (values and indices) against numpy's max/min and argmax/argmin."""
    a, t, dim, keepdim = case
    if dim is None:
        _check(getattr(t, which)(), getattr(a, which)(), 0, 0)
        return
    _check(getattr(t, "a" + which)(dim, keepdim), getattr(a, which)(_axis(dim, a.ndim), keepdims=keepdim), 0, 0)
    if isinstance(dim, int):
        v, i = getattr(t, which)(dim, keepdim)
        ax = dim if a.ndim else None
        _check(v, getattr(a, which)(ax, keepdims=keepdim) if a.ndim else a, 0, 0)
        np.testing.assert_array_equal(i.cpu().numpy(), getattr(a, "arg" + which)(ax, keepdims=keepdim) if a.ndim else 0)


@SETTINGS
@given(cases())
def test_amax_and_max(case):
    _check_extreme(case, "max")


@SETTINGS
@given(cases(), st.integers(0, 2))
def test_var(case, correction):
    a, t, dim, keepdim = case
    ax = _axis(dim, a.ndim)
    n = a.size if ax is None else int(np.prod([a.shape[d] for d in np.atleast_1d(ax)]))
    got = t.var(dim, keepdim=keepdim, correction=correction)
    with np.errstate(all="ignore"):
        m = a.mean(ax, keepdims=True)
        want = ((a - m) ** 2).sum(ax, keepdims=keepdim) / max(n - correction, 0)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got.cpu().numpy().astype(np.float64), want, rtol=1e-4, atol=1e-5, equal_nan=True)


@FEW
@given(cases(zeros=True, int_dim=True))
def test_prod(case):
    a, t, dim, keepdim = case
    got = t.prod() if dim is None else t.prod(dim, keepdim)
    want = a.prod() if dim is None else a.prod(_axis(dim, a.ndim), keepdims=keepdim)
    _check(got, want, rtol=1e-12, atol=1e-12)


@FEW
@given(cases())
def test_amin_and_min(case):
    _check_extreme(case, "min")


@FEW
@given(cases(int_dim=True))
def test_argmax_argmin(case):
    a, t, dim, keepdim = case
    ax = _axis(dim, a.ndim)
    for got, fn in ((t.argmax(dim, keepdim), np.argmax), (t.argmin(dim, keepdim), np.argmin)):
        want = fn(a, ax, keepdims=keepdim) if a.ndim else np.zeros((), np.int64)
        assert got.dtype == tgrad.int64
        np.testing.assert_array_equal(got.cpu().numpy(), want)


@FEW
@given(cases(), st.integers(0, 2))
def test_std(case, correction):
    a, t, dim, keepdim = case
    ax = _axis(dim, a.ndim)
    n = a.size if ax is None else int(np.prod([a.shape[d] for d in np.atleast_1d(ax)]))
    got = t.std(dim, keepdim=keepdim, correction=correction)
    with np.errstate(all="ignore"):
        m = a.mean(ax, keepdims=True)
        want = np.sqrt(((a - m) ** 2).sum(ax, keepdims=keepdim) / max(n - correction, 0))
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-10, atol=1e-10, equal_nan=True)


@FEW
@given(cases())
def test_logsumexp(case):
    a, t, dim, keepdim = case
    dim = tuple(range(a.ndim)) if dim is None else dim
    ax = _axis(dim, a.ndim) if a.ndim else None
    m = a.max(ax, keepdims=True)
    want = np.log(np.exp(a - m).sum(ax, keepdims=True)) + m
    if not keepdim and a.ndim:
        want = np.squeeze(want, ax)
    _check(t.logsumexp(dim, keepdim), want if a.ndim else a)


@FEW
@given(cases(zeros=True), st.sampled_from([1, 2, float("inf"), "fro"]))
def test_norm(case, p):
    a, t, dim, keepdim = case
    if p == "fro" and isinstance(dim, tuple) and len(dim) > 2:
        dim = dim[:2]
    ax = _axis(dim, a.ndim)
    r = np.abs(a)
    if p == 1:
        want = r.sum(ax, keepdims=keepdim)
    elif p == float("inf"):
        want = r.max(ax, keepdims=keepdim)
    else:
        want = np.sqrt((r * r).sum(ax, keepdims=keepdim))
    _check(t.norm(p, dim, keepdim), want)


@FEW
@given(cases(zeros=True, int_dim=True))
def test_cumsum_cumprod(case):
    a, t, dim, _ = case
    dim = 0 if dim is None else dim
    if a.ndim == 0:
        _check(t.cumsum(dim), a)
        _check(t.cumprod(dim), a)
        return
    _check(t.cumsum(dim), np.cumsum(a, dim))
    _check(t.cumprod(dim), np.cumprod(a, dim), rtol=1e-12, atol=1e-12)


@FEW
@given(cases(zeros=True))
def test_all_any(case):
    a, t, dim, keepdim = case
    ax = _axis(dim, a.ndim)
    for got, fn in ((t.all() if dim is None else t.all(dim, keepdim), np.all),
                    (t.any() if dim is None else t.any(dim, keepdim), np.any)):
        want = fn(a != 0) if dim is None else fn(a != 0, ax, keepdims=keepdim)
        assert got.dtype == tgrad.bool
        np.testing.assert_array_equal(got.cpu().numpy(), want)
