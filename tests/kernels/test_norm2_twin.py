"""aten_cpu.c's C twin of kernels/reduce.py's accumulate_rows_kernel in ATen's 2-norm order (``reduce._norm2_twin``:
float32 contiguous rows) gives the bits of the kernel's traced tape: vector norms of rows of every length mod 8,
shorter than a vector, with NaN of both signs, inf, -0.0, huge and tiny values; clip_grad_norm_'s per-parameter
norms (finite); float64 and strided rows keep the tape."""
import numpy as np
import pytest

import tgrad
from tgrad.kernels import reduce as KR
from tgrad.kernels.runtime import native
from tgrad.testing.twins import run_traced

CPU_ONLY = True
pytestmark = pytest.mark.skipif(native.aten_twin("norm2_rows_f32") is None, reason="no C compiler")


def _case(shape, dtype, special, dim, strided):
    rng = np.random.default_rng(sum(shape) * 7 + len(shape))
    x = (rng.standard_normal(shape) * np.exp2(rng.integers(-70, 70, shape))).astype(dtype)
    if special:
        flat = x.reshape(-1)
        flat[::11] = np.nan
        flat[3::13] = -np.nan
        flat[5::17] = np.inf
        flat[6::19] = -0.0
    xt = tgrad.tensor(np.ascontiguousarray(np.swapaxes(x, -1, -2))).transpose(-1, -2) if strided else tgrad.tensor(x)
    out = [tgrad.linalg.vector_norm(xt, dim=dim).numpy().tobytes()]
    fin = np.nan_to_num(x.reshape(-1), nan=1.5, posinf=2.5)      # (clip's foreach multiply: finite grads)
    ps = [tgrad.nn.Parameter(tgrad.tensor(fin[:n].copy())) for n in (1, 7, 64, x.size)]
    for p in ps:
        p.grad = p.detach() * 3.0
    out.append(tgrad.nn.utils.clip_grad_norm_(ps, 1.0).numpy().tobytes())
    return out + [p.grad.numpy().tobytes() for p in ps]


def _run(args, twin):
    run, served = run_traced(_case, args, {KR.accumulate_rows_kernel: KR._norm2_twin}, twin, (KR._SITES,))
    return run, served > 0


CASES = [((64, 192), np.float32, False, -1, False), ((7, 5), np.float32, True, -1, False),
         ((33, 17), np.float32, True, -1, False), ((3, 1000), np.float32, True, -1, False),
         ((4, 8), np.float32, True, -1, False), ((2, 3, 65), np.float32, True, -1, False),
         ((9, 12), np.float32, True, -1, True), ((5, 9), np.float64, True, -1, False)]


@pytest.mark.parametrize("args", CASES)
def test_twin_equals_traced_tape(args):
    got, used = _run(args, True)
    want, unused = _run(args, False)
    assert not unused
    assert used == (args[1] is np.float32)
    assert got == want
