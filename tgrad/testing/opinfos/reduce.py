"""OpInfos for reductions and scans."""
import warnings

import numpy as np

import tgrad
from tgrad import dtypes as D

from ..opinfo import OpInfo, SampleInput

FLOATS = (D.float32, D.float64, D.float16, D.bfloat16)
SHAPES = [(), (1,), (7,), (33,), (1000,), (3, 4), (2, 3, 5), (2, 3, 4, 5)]
LOW_TOL = {"float16": (1e-2, 1e-2), "bfloat16": (5e-2, 2e-2)}


def _small(s):
    return int(np.prod(s)) <= 40


def _values(rng, s, kind):
    if kind == "prod":      # magnitudes near 1 so products of 1000 stay finite; both signs
        return rng.choice([-1.0, 1.0], s) * rng.uniform(0.9, 1.1, s)
    if kind == "zeros":     # some exact zeros (all/any, prod/cumprod through zeros)
        return np.where(rng.uniform(0, 1, s) < 0.15, 0.0, rng.uniform(-2, 2, s))
    return rng.uniform(-2, 2, s)


def _multi_dim_samples(kind="uniform", extra=None):
    """Over all dims (dim=None), one dim (also negative), several dims; keepdim both ways."""
    extra = extra or [{}]

    def samples(rng):
        out = []
        for s in SHAPES:
            kws = [dict(dim=None)]
            if len(s) > 0:
                kws += [dict(dim=0, keepdim=False), dict(dim=-1, keepdim=True)]
            if len(s) >= 3:
                kws += [dict(dim=(0, 2), keepdim=False), dict(dim=(-1, 1), keepdim=True)]
            for kw in kws:
                for e in extra:
                    out.append(SampleInput(_values(rng, s, kind), grad=_small(s), **kw, **e))
        return out
    return samples


def _single_dim_samples(kind="uniform", with_keepdim=True):
    """One dim (also negative); shape () uses dim 0."""
    def samples(rng):
        out = []
        for s in SHAPES:
            dims = [0] if len(s) == 0 else [0, -1] + ([1] if len(s) >= 3 else [])
            for i, d in enumerate(dims):
                kw = dict(dim=d, keepdim=bool(i % 2)) if with_keepdim else dict(dim=d)
                out.append(SampleInput(_values(rng, s, kind), grad=_small(s), **kw))
        return out
    return samples


def _zeros_samples(rng):
    """prod/cumprod through exact zeros: rows with one, two or no zero (the first three samples, which
    gradgradcheck runs, have all three kinds), then random zeros in a few small shapes."""
    rows = rng.uniform(-2, 2, (4, 5))
    rows[0, 2] = rows[1, 1] = rows[1, 3] = rows[3, 4] = 0.0      # one zero; two zeros; none; last is zero
    return [SampleInput(rows, dim=-1), SampleInput(rows.T.copy(), dim=0),
            SampleInput(np.array([1.5, 0.0, -2.0, 0.5, 0.0, 3.0, -1.0]), dim=0)] + \
        [SampleInput(_values(rng, s, "zeros"), dim=d) for s in [(7,), (3, 4), (2, 3, 5)] for d in (0, -1)]


def _prod_zeros_samples(rng):
    """prod through zeros: over everything (one, two, three zeros), one dim with keepdim, a scalar."""
    x = rng.uniform(-2, 2, (2, 3, 4))
    x[0, 1, 2] = x[1, 0, 0] = x[1, 2, 0] = 0.0
    one, two = rng.uniform(-2, 2, (3, 4)), rng.uniform(-2, 2, (2, 5))
    one[1, 1] = two[0, 3] = two[1, 0] = 0.0
    return [SampleInput(one, dim=None), SampleInput(x, dim=2, keepdim=True), SampleInput(two, dim=None),
            SampleInput(x, dim=None), SampleInput(x, dim=1), SampleInput(np.array(0.0), dim=None)] + \
        _zeros_samples(rng)


# 0-size inputs: (shape, kwargs); "reduces nothing" cases are left out for ops without an identity
EMPTY_MULTI = [((0,), dict(dim=None)), ((0,), dict(dim=0, keepdim=False)), ((2, 0, 3), dict(dim=1, keepdim=True)),
               ((2, 0, 3), dict(dim=(0, 2), keepdim=False)), ((0, 3), dict(dim=-1, keepdim=True)),
               ((2, 0, 3), dict(dim=None))]
EMPTY_ALL = [((0,), {}), ((2, 0, 3), {})]
EMPTY_SINGLE = [((0,), dict(dim=0)), ((2, 0, 3), dict(dim=1, keepdim=True)), ((2, 0, 3), dict(dim=-1)),
                ((0, 3), dict(dim=1, keepdim=False))]


def _reduces_nothing(shape, kw):
    d = kw.get("dim")
    dims = range(len(shape)) if d is None else np.atleast_1d(d)
    return any(shape[i] == 0 for i in dims)


def _with_empty(samples, cases, identity=True, keepdim=True, extra=({},)):
    """``samples`` plus 0-size inputs (identity=False: only those whose reduced extent is not empty);
    forward only: gradcheck cannot build a Jacobian with no columns (tests/ops/test_reduce.py checks them)."""
    def fn(rng):
        out = samples(rng)
        for shape, kw in cases:
            if not identity and _reduces_nothing(shape, kw):
                continue
            kw = kw if keepdim else {k: v for k, v in kw.items() if k != "keepdim"}
            out += [SampleInput(np.zeros(shape), grad=False, **kw, **e) for e in extra]
        return out
    return fn


def _all_samples(kind="uniform"):
    def samples(rng):
        return [SampleInput(_values(rng, s, kind), grad=_small(s)) for s in SHAPES]
    return samples


def _axis(kw):
    d = kw.get("dim")
    return tuple(d) if isinstance(d, (tuple, list)) else d


def _quiet(fn):
    """fn without numpy's warnings (the mean of nothing is nan)."""
    def q(*a, **k):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return fn(*a, **k)
    return q


def _np_reduce(fn):
    """numpy reference for a reduction with PyTorch's dim/keepdim (dim=None: everything)."""
    def ref(x, dim=None, keepdim=False, **kw):
        return fn(x, axis=_axis(dict(dim=dim)), keepdims=keepdim, **kw)
    return ref


def _np_sum_to_size(x, s=(1, 4)):
    """Sums the leading dims x has beyond s, and the dims where s is 1 and x is not."""
    lead = x.ndim - len(s)
    out = x.sum(axis=tuple(range(lead))) if lead else x
    return out.sum(axis=tuple(k for k, n in enumerate(s) if n == 1 and out.shape[k] != 1), keepdims=True)


def _np_var(x, dim=None, keepdim=False, correction=None, unbiased=None):
    ddof = correction if correction is not None else (0 if unbiased is False else 1)
    n = x.size if dim is None else int(np.prod([x.shape[d] for d in np.atleast_1d(dim)]))
    m = _quiet(np.mean)(x, axis=_axis(dict(dim=dim)), keepdims=True)
    s = np.sum((x - m) ** 2, axis=_axis(dict(dim=dim)), keepdims=keepdim)
    with np.errstate(all="ignore"):
        return s / max(n - ddof, 0)


def _var_samples(extra, empty=False):
    """var/std samples; no gradient check where N - correction <= 0 (the result is inf or nan)."""
    def samples(rng):
        out = (_with_empty(_multi_dim_samples(extra=extra), EMPTY_MULTI, extra=extra) if empty else
               _multi_dim_samples(extra=extra))(rng)
        for s in out:
            x, d = s.args[0], s.kwargs.get("dim")
            n = x.size if d is None else int(np.prod([x.shape[i] for i in np.atleast_1d(d)]))
            if n - s.kwargs.get("correction", 1) <= 0:
                s.grad = False
        return out
    return samples


def _np_norm(x, p=2, dim=None, keepdim=False):
    a = np.abs(x)
    ax = _axis(dict(dim=dim))
    if p == "fro" or p == 2:
        return np.sqrt(np.sum(a * a, axis=ax, keepdims=keepdim))
    if p == float("inf"):
        return np.max(a, axis=ax, keepdims=keepdim)
    if p == float("-inf"):
        return np.min(a, axis=ax, keepdims=keepdim)
    if p == 0:
        return np.sum(a != 0, axis=ax, keepdims=keepdim).astype(np.float64)
    return np.sum(a ** p, axis=ax, keepdims=keepdim) ** (1.0 / p)


def _np_lse(x, dim, keepdim=False):
    ax = _axis(dict(dim=dim))
    m = np.max(x, axis=ax, keepdims=True, initial=-np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.log(np.sum(np.exp(x - np.where(np.isfinite(m), m, 0)), axis=ax, keepdims=True)) + \
            np.where(np.isfinite(m), m, 0)
    return r if keepdim else np.squeeze(r, axis=ax) if x.ndim else r


def _np_max_dim(fn, argfn):
    def ref(x, dim, keepdim=False):
        if x.ndim == 0:
            return x, np.zeros((), np.int64)
        return fn(x, axis=dim, keepdims=keepdim), argfn(x, axis=dim, keepdims=keepdim)
    return ref


def _np_arg(argfn):
    def ref(x, dim=None, keepdim=False):
        if x.ndim == 0:
            return np.zeros((), np.int64)
        if dim is None:
            r = argfn(x)
            return np.full((1,) * x.ndim, r) if keepdim else r
        return argfn(x, axis=dim, keepdims=keepdim)
    return ref


def _np_scan(fn):
    def ref(x, dim):
        return x if x.ndim == 0 else fn(x, axis=dim)
    return ref


NORM_PS = [dict(p=2), dict(p=1), dict(p=float("inf")), dict(p="fro"), dict(p=3.0), dict(p=0)]
_ALL = _with_empty(_all_samples(), EMPTY_ALL)
_MULTI = _with_empty(_multi_dim_samples(), EMPTY_MULTI)
_SELECT_ONE = _with_empty(_single_dim_samples(), EMPTY_SINGLE, identity=False)      # max/min: no identity
_SELECT_MULTI = _with_empty(_multi_dim_samples(), EMPTY_MULTI, identity=False)
_NORM = _with_empty(_with_empty(_multi_dim_samples(extra=NORM_PS), EMPTY_MULTI, extra=NORM_PS[:2] + NORM_PS[3:]),
                    EMPTY_MULTI, identity=False, extra=NORM_PS[2:3])            # the inf norm is a max

OPS = [
    OpInfo("sum_all", lambda x: x.sum(), lambda x: np.sum(x), _ALL, dtypes=FLOATS + (D.int64, D.bool_), tol=LOW_TOL,
           layout_order=True),
    OpInfo("sum", lambda x, **k: x.sum(**k), _np_reduce(np.sum),
           _MULTI, dtypes=FLOATS + (D.int32,), tol=LOW_TOL, layout_order=True),
    OpInfo("mean_all", lambda x: x.mean(), _quiet(np.mean), _ALL, dtypes=FLOATS, layout_order=True),
    OpInfo("mean", lambda x, **k: x.mean(**k), _np_reduce(_quiet(np.mean)), _MULTI, dtypes=FLOATS,
           layout_order=True),
    OpInfo("sum_to_size", lambda x, s=(1, 4): x.sum_to_size(*s), _np_sum_to_size,
           lambda rng: [SampleInput(rng.uniform(-1, 1, (3, 4))), SampleInput(rng.uniform(-1, 1, ()), ()),
                        SampleInput(rng.uniform(-1, 1, (2, 3, 4)), (3, 1)),
                        SampleInput(rng.uniform(-1, 1, (2, 3)), (1, 1)),
                        SampleInput(rng.uniform(-1, 1, (0, 4)), grad=False),
                        SampleInput(rng.uniform(-1, 1, (2, 0, 3)), (0, 1), grad=False),
                        SampleInput(rng.uniform(-1, 1, (10, 100)), (100,), grad=False)],
           dtypes=(D.float32, D.float64), layout_order=True),
    OpInfo("prod_all", lambda x: x.prod(), lambda x: np.prod(x), _with_empty(_all_samples("prod"), EMPTY_ALL),
           dtypes=FLOATS + (D.int64,), tol=LOW_TOL),
    OpInfo("prod", lambda x, **k: x.prod(**k), _np_reduce(np.prod),
           _with_empty(_single_dim_samples("prod"), EMPTY_SINGLE), dtypes=FLOATS + (D.int32,), tol=LOW_TOL),
    OpInfo("prod_zeros", lambda x, **k: x.prod(**k), _np_reduce(np.prod), _prod_zeros_samples,
           dtypes=(D.float64,), covers=("prod", "prod_all")),
    OpInfo("var", lambda x, **k: x.var(**k), _np_var,
           _var_samples([{}, dict(correction=0)], empty=True), dtypes=FLOATS, tol=LOW_TOL),
    OpInfo("var_unbiased", lambda x, **k: x.var(**k), _np_var,
           lambda rng: [SampleInput(rng.uniform(-2, 2, (3, 4)), dim=1, unbiased=False),
                        SampleInput(rng.uniform(-2, 2, (3, 4)), dim=(0, 1), unbiased=True, keepdim=True),
                        SampleInput(rng.uniform(-2, 2, ()), unbiased=False),
                        SampleInput(rng.uniform(-2, 2, (2, 3, 4)), dim=(0, 2), unbiased=True),
                        SampleInput(rng.uniform(-2, 2, (0, 3)), dim=1, unbiased=True, grad=False),
                        SampleInput(rng.uniform(-2, 2, (2, 0, 3)), dim=1, unbiased=False, keepdim=True, grad=False),
                        SampleInput(rng.uniform(-2, 2, (10, 100)), dim=1, unbiased=True, grad=False),
                        SampleInput(rng.uniform(-2, 2, (10, 100)), unbiased=False, grad=False)],
           covers=("var",)),
    OpInfo("std", lambda x, **k: x.std(**k), lambda x, **k: np.sqrt(_np_var(x, **k)),
           _var_samples([{}, dict(correction=2)], empty=True), dtypes=FLOATS, tol=LOW_TOL),
    OpInfo("max_all", lambda x: x.max(), lambda x: np.max(x), _all_samples(), dtypes=FLOATS + (D.int64, D.int16)),
    OpInfo("min_all", lambda x: x.min(), lambda x: np.min(x), _all_samples(), dtypes=FLOATS + (D.int32, D.uint8)),
    OpInfo("max", lambda x, **k: tuple(x.max(**k)), _np_max_dim(np.max, np.argmax), _SELECT_ONE,
           dtypes=FLOATS + (D.int64, D.int8)),
    OpInfo("min", lambda x, **k: tuple(x.min(**k)), _np_max_dim(np.min, np.argmin), _SELECT_ONE,
           dtypes=FLOATS + (D.int32,)),
    OpInfo("amax", lambda x, **k: x.amax(**({**k, "dim": () if k.get("dim") is None else k["dim"]})),
           _np_reduce(np.max), _SELECT_MULTI, dtypes=FLOATS + (D.int64,)),
    OpInfo("amin", lambda x, **k: x.amin(**({**k, "dim": () if k.get("dim") is None else k["dim"]})),
           _np_reduce(np.min), _SELECT_MULTI, dtypes=FLOATS + (D.int16,)),
    OpInfo("argmax", lambda x, **k: x.argmax(**k), _np_arg(np.argmax),
           lambda rng: _SELECT_ONE(rng) + [SampleInput(rng.uniform(-2, 2, (3, 4)), dim=None),
                                           SampleInput(rng.uniform(-2, 2, (3, 4)), keepdim=True)],
           dtypes=FLOATS + (D.int64, D.uint8), grad=False),
    OpInfo("argmin", lambda x, **k: x.argmin(**k), _np_arg(np.argmin),
           lambda rng: _SELECT_ONE(rng) + [SampleInput(rng.uniform(-2, 2, (2, 3, 5)))],
           dtypes=FLOATS + (D.int32,), grad=False),
    OpInfo("logsumexp", lambda x, **k: x.logsumexp(**k), _np_lse,
           lambda rng: [s for s in _MULTI(rng) if s.kwargs["dim"] is not None],
           dtypes=FLOATS + (D.int64,), tol={**LOW_TOL, "int64": (1e-5, 1e-6)}),
    OpInfo("norm", lambda x, **k: x.norm(**k), _np_norm, _NORM, dtypes=FLOATS, tol=LOW_TOL,
           layout_order=True),
    OpInfo("cumsum", lambda x, **k: x.cumsum(**k), _np_scan(np.cumsum),
           _with_empty(_single_dim_samples(with_keepdim=False), EMPTY_SINGLE, keepdim=False),
           dtypes=FLOATS + (D.int32, D.int64), tol=LOW_TOL),
    OpInfo("cumprod", lambda x, **k: x.cumprod(**k), _np_scan(np.cumprod),
           _with_empty(_single_dim_samples("prod", with_keepdim=False), EMPTY_SINGLE, keepdim=False),
           dtypes=FLOATS + (D.int64,), tol=LOW_TOL),
    OpInfo("cumprod_zeros", lambda x, **k: x.cumprod(**k), _np_scan(np.cumprod),
           lambda rng: _zeros_samples(rng) + [
               SampleInput(np.array(0.0), dim=0), SampleInput(np.zeros((0, 3)), dim=1, grad=False),
               SampleInput(_values(rng, (10, 100), "zeros"), dim=-1, grad=False),
               SampleInput(_values(rng, (1000,), "zeros"), dim=0, grad=False)],
           dtypes=(D.float64,), covers=("cumprod",)),
    OpInfo("all", lambda x, **k: x.all(**k), _np_reduce(lambda x, **k: np.all(x != 0, **k)),
           _with_empty(_multi_dim_samples("zeros"), EMPTY_MULTI), dtypes=(D.float32, D.bool_, D.int64, D.uint8),
           grad=False),
    OpInfo("any", lambda x, **k: x.any(**k), _np_reduce(lambda x, **k: np.any(x != 0, **k)),
           _with_empty(_multi_dim_samples("zeros"), EMPTY_MULTI), dtypes=(D.float32, D.bool_, D.int32),
           grad=False),
    OpInfo("module_functions", lambda x: (tgrad.sum(x, 1), tgrad.prod(x, 0), tgrad.var(x, 1), tgrad.std(x),
                                          tgrad.max(x), tgrad.min(x, 1).values, tgrad.amax(x, 0),
                                          tgrad.logsumexp(x, 1), tgrad.norm(x), tgrad.cumsum(x, 0)),
           lambda x: (x.sum(1), x.prod(0), _np_var(x, 1), np.sqrt(_np_var(x)), x.max(), x.min(1), x.max(0),
                      _np_lse(x, 1), np.sqrt((x * x).sum()), x.cumsum(0)),
           lambda rng: [SampleInput(rng.uniform(-2, 2, (3, 4)))], dtypes=(D.float64,), grad=False,
           covers=("sum", "prod", "var", "std", "max_all", "min", "amax", "logsumexp", "norm", "cumsum")),
]
