"""Property tests: sum/mean/max/var over random shapes, strides, dims and values agree with numpy."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tgrad

SETTINGS = settings(max_examples=20, deadline=None)


@st.composite
def cases(draw):
    """(numpy array, tgrad view of it (maybe transposed / sliced with a step), dim, keepdim)."""
    shape = draw(st.lists(st.integers(1, 6), min_size=0, max_size=4))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    a = np.random.default_rng(seed).uniform(-3, 3, shape)
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
    np.testing.assert_allclose(got.numpy().astype(np.float64), np.asarray(want, np.float64), rtol=rtol, atol=atol)


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


@SETTINGS
@given(cases())
def test_amax_and_max(case):
    a, t, dim, keepdim = case
    if dim is None:
        _check(t.max(), a.max(), 0, 0)
        return
    _check(t.amax(dim, keepdim), a.max(_axis(dim, a.ndim), keepdims=keepdim), 0, 0)
    if isinstance(dim, int):
        v, i = t.max(dim, keepdim)
        ax = dim if a.ndim else None
        _check(v, a.max(ax, keepdims=keepdim) if a.ndim else a, 0, 0)
        want_i = a.argmax(ax, keepdims=keepdim) if a.ndim else 0
        np.testing.assert_array_equal(i.numpy(), want_i)


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
    np.testing.assert_allclose(got.numpy().astype(np.float64), want, rtol=1e-4, atol=1e-5, equal_nan=True)
