"""OpInfos for the mixed-precision ops: the fused inf/NaN check and unscale of a list of gradients."""
import numpy as np

from tgrad import dtypes as D
from tgrad.autograd import dispatch

from ..opinfo import OpInfo, SampleInput

FLOATS = (D.float32, D.float64, D.float16, D.bfloat16)


def _unscale(*grads, inv_scale):
    """(grads after the in-place unscale..., found_inf)."""
    from tgrad import _creation as creation
    like = grads[0]
    found = creation.zeros((1,), dtype=D.float32, device=like.device)
    inv = creation.full((1,), inv_scale, dtype=D.float32, device=like.device)
    dispatch.call("amp_foreach_non_finite_check_and_unscale_", list(grads), found, inv)
    return (*grads, found)


def _unscale_ref(*grads, inv_scale):
    bad = any(not np.isfinite(g).all() for g in grads)
    inv = float(np.float32(inv_scale))
    return (*(g * inv for g in grads), np.array([float(bad)]))


def _samples(rng):
    n = rng.normal
    with_inf = n(size=(33,))
    with_inf[7] = np.inf
    with_nan = n(size=(4, 5))
    with_nan[2, 3] = np.nan
    return [
        SampleInput(n(size=(3, 4)) * 1024, n(size=(7,)), inv_scale=1 / 1024),
        SampleInput(*[n(size=(s,)) for s in (1, 2, 3, 5, 8, 13, 21, 34, 55, 1000)], inv_scale=0.125),   # 2 launches
        SampleInput(n(size=(2, 3)), with_inf, inv_scale=0.5),
        SampleInput(with_nan, n(size=(0,)), n(size=(6,)), inv_scale=2.0 ** -16),
    ]


OPS = [
    OpInfo("amp_foreach_non_finite_check_and_unscale_", _unscale, _unscale_ref, _samples, dtypes=FLOATS,
           grad=False, gradgrad=False),
]
