"""kernels/optim.py's cpu twin of SGD's multi_tensor_kernel launch (``_sgd_twin``: the kernel's element helpers as
optim_cpu.c's ufuncs over whole tensors) gives the bits of the kernel's traced tape: every momentum kind, nesterov,
weight decay, the first step and later ones, tensors of many sizes (more than one launch); float64 and maximize
keep the tape."""
import numpy as np
import pytest

import tgrad
from tgrad.kernels import optim as KO
from tgrad.kernels.runtime import launcher as T
from tgrad.kernels.runtime import native
from tgrad.kernels.runtime import trace as TR

CPU_ONLY = True
pytestmark = pytest.mark.skipif(native.aten_ufunc("sgd_p_000") is None, reason="no C compiler: no native twins")

SIZES = (1, 7, 64, 130, 1000, 3, 5, 17, 33, 2)      # ten tensors: two launches


def _steps(kw, dtype):
    rng = np.random.default_rng(0)
    ps = [tgrad.nn.Parameter(tgrad.tensor(rng.standard_normal(n).astype(dtype))) for n in SIZES]
    opt = tgrad.optim.SGD(ps, lr=0.05, **kw)
    for _ in range(4):
        for p in ps:
            g = rng.standard_normal(p.shape[0]) * np.exp2(rng.integers(-10, 10, p.shape[0]))
            p.grad = tgrad.tensor(g.astype(dtype))
        opt.step()
    used = any(type(s.tape) is T.CpuTwin for s in KO._SITES.values())
    return [p.detach().numpy().tobytes() for p in ps] + [opt.state[p]["momentum_buffer"].numpy().tobytes()
                                                         for p in ps if opt.state[p].get("momentum_buffer")
                                                         is not None], used


def _run(kw, dtype, twin, monkeypatch):
    TR.clear_tapes()
    with monkeypatch.context() as m:
        if not twin:
            m.setitem(KO.multi_tensor_kernel.__dict__, "_tgrad_cpu_twin", lambda args, cx, grid: None)
        prev = T.EXECUTOR
        try:
            T.EXECUTOR = "trace"
            return _steps(kw, dtype)
        finally:
            T.EXECUTOR = prev
            TR.clear_tapes()


@pytest.mark.parametrize("kw,dtype", [
    (dict(), np.float32), (dict(weight_decay=0.01), np.float32), (dict(momentum=0.9), np.float32),
    (dict(momentum=0.9, dampening=0.3), np.float32), (dict(momentum=0.9, nesterov=True), np.float32),
    (dict(momentum=0.9, weight_decay=0.01), np.float32), (dict(momentum=0.8, dampening=0.1, weight_decay=1e-3),
                                                          np.float32),
    (dict(momentum=0.9, nesterov=True, weight_decay=0.01), np.float32),
    (dict(momentum=0.9, maximize=True), np.float32), (dict(momentum=0.9), np.float64)])
def test_sgd_twin_equals_traced_tape(kw, dtype, monkeypatch):
    got, used = _run(kw, dtype, True, monkeypatch)
    want, unused = _run(kw, dtype, False, monkeypatch)
    assert not unused and used == (dtype is np.float32 and not kw.get("maximize"))
    assert got == want
