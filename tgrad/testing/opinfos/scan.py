"""OpInfos for the carried scans: cummax, cummin (values, indices) and logcumsumexp."""
import numpy as np

from tgrad import dtypes as D

from ..opinfo import OpInfo, SampleInput

FLOATS = (D.float32, D.float64, D.float16, D.bfloat16)
SHAPES = [(), (1,), (7,), (33,), (1000,), (3, 4), (2, 3, 5), (2, 3, 4, 5)]
LOW_TOL = {"float16": (1e-2, 1e-2), "bfloat16": (5e-2, 2e-2)}


def _samples(kind):
    """One dim (also negative) per shape; a few with ties, NaN and infinities (forward only); 0-size inputs;
    a row longer than one cpu chunk (the carry between chunks)."""
    def samples(rng):
        out = []
        for s in SHAPES:
            for d in ([0] if len(s) == 0 else [0, -1] + ([1] if len(s) >= 3 else [])):
                out.append(SampleInput(rng.uniform(-3, 3, s), dim=d, grad=int(np.prod(s)) <= 40))
        special = np.array([[1.0, 3.0, 3.0, np.nan, 2.0, np.nan, 5.0], [-np.inf, -np.inf, 0.5, 0.5, np.inf, np.inf, 1.0]])
        out.append(SampleInput(special, dim=1, grad=False))
        out.append(SampleInput(np.round(rng.uniform(-2, 2, (4, 9))), dim=1, grad=False))     # ties
        out += [SampleInput(np.zeros(s), dim=d, grad=False) for s, d in [((0,), 0), ((2, 0, 3), 1), ((0, 3), -1)]]
        out.append(SampleInput(rng.uniform(-3, 3, (1, 16400)), dim=1, grad=False))
        return out
    return samples


def _np_cumextreme(minimum):
    """Running max (min) and its last position along ``dim``; a NaN wins and keeps the last NaN's position."""
    def ref(x, dim):
        if x.ndim == 0:
            return x.copy(), np.zeros((), np.int64)
        a = np.moveaxis(x, dim, -1)
        vals, idx = np.empty_like(a), np.zeros(a.shape, np.int64)
        for pos in np.ndindex(a.shape[:-1] if a.shape[-1] else (0,)):
            best, bi = a[pos][0], 0
            for k, v in enumerate(a[pos]):
                if np.isnan(v) or (not np.isnan(best) and (v <= best if minimum else v >= best)):
                    best, bi = v, k
                vals[pos + (k,)], idx[pos + (k,)] = best, bi
        return np.moveaxis(vals, -1, dim), np.moveaxis(idx, -1, dim)
    return ref


def _np_logcumsumexp(x, dim):
    if x.ndim == 0:
        return x
    with np.errstate(invalid="ignore"):
        return np.logaddexp.accumulate(x, axis=dim)


OPS = [
    OpInfo("cummax", lambda x, **k: tuple(x.cummax(**k)), _np_cumextreme(False), _samples("uniform"),
           dtypes=FLOATS + (D.int64, D.int32)),
    OpInfo("cummin", lambda x, **k: tuple(x.cummin(**k)), _np_cumextreme(True), _samples("uniform"),
           dtypes=FLOATS + (D.int64,)),
    OpInfo("logcumsumexp", lambda x, **k: x.logcumsumexp(**k), _np_logcumsumexp, _samples("uniform"),
           dtypes=FLOATS, tol=LOW_TOL),
]
