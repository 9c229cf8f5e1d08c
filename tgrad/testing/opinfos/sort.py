"""OpInfos for ``sort`` / ``topk`` with ties: against numpy's stable argsort (stable=True) or ATen's cpu order of
equal elements (kernels/_stl.py)."""
import numpy as np

from tgrad import dtypes as D
from tgrad.autograd import dispatch
from tgrad.kernels import _stl

from ..opinfo import OpInfo, SampleInput

DTYPES = (D.float32, D.float64, D.float16, D.bfloat16, D.int64, D.int32)


def _order(x, dim, descending):
    """Stable argsort along ``dim`` (descending keeps equal elements in input order, as PyTorch's stable sort)."""
    if x.ndim == 0:
        return np.zeros((), np.int64)
    return np.argsort(-x if descending else x, axis=dim, kind="stable")


def _sort_ref(x, dim=-1, descending=False, stable=False):
    """Stable argsort; with stable=False ATen's cpu order of equal elements (std::sort: kernels/_stl.py)."""
    if x.ndim == 0:
        return x, np.zeros((), np.int64)
    if stable or x.shape[dim] == 0:
        i = _order(x, dim, descending)
    else:
        xr = np.moveaxis(x, dim, -1)
        rows = xr.reshape(-1, xr.shape[-1]).astype(np.float64)
        i = np.array([_stl.sort_row(r.tolist(), descending) for r in rows], np.int64).reshape(xr.shape)
        i = np.moveaxis(i, -1, dim)
    return np.take_along_axis(x, i, dim), i


def _topk_ref(x, k, dim=-1, largest=True, sorted=True):
    """ATen's cpu topk: equal elements picked and ordered as libstdc++'s selection leaves them (kernels/_stl.py,
    checked against PyTorch in tests/test_programs_surface5.py)."""
    if x.ndim == 0:
        return x, np.zeros((), np.int64)
    xr = np.moveaxis(x, dim, -1)
    rows = xr.reshape(-1, xr.shape[-1]).astype(np.float64)
    i = np.array([_stl.topk_row(r.tolist(), k, largest, sorted) if k else [] for r in rows], np.int64)
    i = np.moveaxis(i.reshape(xr.shape[:-1] + (k,)), -1, dim)
    return np.take_along_axis(x, i, dim), i


def _sort_samples(rng):
    out = []
    for s, d, desc in [((7,), 0, False), ((3, 5), 1, True), ((3, 5), 0, False), ((2, 9, 3), 1, True),
                       ((4, 33), -1, False)]:
        out.append(SampleInput(rng.normal(size=s), dim=d, descending=desc))
    for s, d, desc in [((4, 12), 1, True), ((3, 100), 1, False), ((50, 6), 0, True)]:    # ties
        out.append(SampleInput(rng.integers(-3, 4, s).astype(np.float64), dim=d, descending=desc, grad=False))
    out += [SampleInput(np.array(1.5), dim=0), SampleInput(np.zeros((0, 3)), dim=1, grad=False),
            SampleInput(np.zeros((3, 0)), dim=1, grad=False),
            SampleInput(rng.normal(size=(1000,)), dim=0, descending=True, grad=False)]
    return out


def _topk_samples(rng):
    return [SampleInput(rng.normal(size=(7,)), k=3), SampleInput(rng.normal(size=(3, 5)), k=2, dim=0),
            SampleInput(rng.normal(size=(2, 6, 3)), k=4, dim=1, largest=False),
            SampleInput(rng.integers(-2, 3, (5, 9)).astype(np.float64), k=5, grad=False),
            SampleInput(rng.normal(size=(4, 65)), k=1, grad=False),
            SampleInput(rng.normal(size=(3, 4)), k=0, grad=False),
            SampleInput(np.array(2.0), k=1)]


OPS = [
    OpInfo("sort", lambda x, **k: tuple(dispatch.call("sort", x, **k)), _sort_ref, _sort_samples, dtypes=DTYPES),
    OpInfo("sort_stable", lambda x, **k: tuple(dispatch.call("sort_stable", x, stable=True, **k)), _sort_ref,
           lambda rng: _sort_samples(rng)[:6], dtypes=(D.float64,)),
    OpInfo("topk", lambda x, **k: tuple(dispatch.call("topk", x, **k)), _topk_ref, _topk_samples, dtypes=DTYPES),
]
