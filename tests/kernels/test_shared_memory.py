"""Shared memory per block: the RNN layer kernels pick compile options that fit the device, the AOT compile
fails a specialization over its arch's limit (naming kernel, arch, bytes and limit), and the fake driver
rejects a launch asking for more than its device has (CUDA_ERROR_INVALID_VALUE, as a GPU does)."""
import pytest

import fakecuda
import tgrad
from tgrad import nn
from tgrad.kernels import aot

try:
    fakecuda.build()
    _skip = None
except fakecuda.Unavailable as e:
    _skip = str(e)

needs_fake = pytest.mark.skipif(_skip is not None, reason=_skip or "")


def _rnn_steps(hidden):
    """Forward and backward of one LSTM, GRU and tanh RNN layer (T=3, B=2) at each hidden size, on cpu."""
    def run():
        for h in hidden:
            for m in (nn.LSTM(4, h), nn.GRU(4, h), nn.RNN(4, h)):
                m(tgrad.randn(3, 2, 4))[0].sum().backward()
    return run


@pytest.mark.aot
def test_rnn_layer_kernels_fit_sm80_and_sm90():
    """At H = 64 the LSTM backward needs 192,512 B at Triton's default 3 stages: 2 on sm_80, 3 on sm_90."""
    specs, _ = aot.record(_rnn_steps((64, 128)))
    specs = [s for s in specs if "_layer_" in s.name]
    assert len({s.name for s in specs}) == 6
    results = aot.compile_all(specs, (80, 90))
    assert not [r.error for r in results if r.error]
    for r in results:
        assert r.shared <= aot.SHARED_LIMIT[r.arch], (r.spec.name, r.arch, r.shared)
    stages = {(r.spec.name, r.arch): r.options["num_stages"] for r in results
              if r.spec.constexprs["BLOCK_H"] == 64}
    assert stages["lstm_layer_backward_kernel", 80] == 2 and stages["lstm_layer_backward_kernel", 90] == 3


@pytest.mark.aot
def test_aot_fails_a_specialization_over_the_shared_memory_limit():
    specs, _ = aot.record(_rnn_steps((64,)))
    (s,) = [s for s in specs if s.name == "lstm_layer_backward_kernel"]
    s.options = ({"num_stages": 3},)            # only the candidate that does not fit sm_80
    r80, r90 = aot.compile_all([s], (80, 90))
    assert r80.error and r90.error is None
    for part in ("lstm_layer_backward_kernel", "sm_80", "192,512 B", "166,912 B per block"):
        assert part in r80.error, r80.error


LAUNCH_OVER_LIMIT = r'''
import ctypes
from tgrad.kernels.runtime.gpu import FUNCTIONS
from tgrad.memory import cuda_driver as cd
(tgrad.ones(4, device="cuda") + 1).cpu()                  # a loaded kernel
f = next(iter(FUNCTIONS))
lib = cd._driver()[0]
lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
v = ctypes.c_int()
assert lib.cuDeviceGetAttribute(ctypes.byref(v), 97, 0) == 0                   # ..._PER_BLOCK_OPTIN
assert v.value == LIMIT, v.value
launches = lib.fakecuda_launch_count()
assert lib.cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, LIMIT + 1, None, None, None) == 1   # CUDA_ERROR_INVALID_VALUE
assert lib.fakecuda_launch_count() == launches
print("ok")
'''


@needs_fake
@pytest.mark.parametrize("cc,limit", [(80, 166912), (90, 232448)])
def test_fake_driver_rejects_a_launch_over_the_shared_memory_limit(cc, limit):
    out = fakecuda.run_python(f"LIMIT = {limit}\n" + LAUNCH_OVER_LIMIT, cc=cc)
    assert out.strip().endswith("ok")


LSTM_H64 = r'''
import numpy as np
from tgrad import nn
from tgrad.kernels.runtime.gpu import FUNCTIONS
tgrad.manual_seed(0)
m = nn.LSTM(4, 64)
x = tgrad.randn(3, 2, 4)
def run(dev):
    mm = m.to(dev)
    for p in mm.parameters():
        p.grad = None
    y = mm(x.to(dev))[0]
    y.square().sum().backward()
    return y.detach().cpu().numpy(), [p.grad.cpu().numpy() for p in mm.parameters()]
want = run("cpu")
got = run("cuda")
np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
for g, w in zip(got[1], want[1]):
    np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
shared = {c.name: c.metadata.shared for _, c in FUNCTIONS.values() if "_layer_" in c.name}
assert set(shared) == {"lstm_layer_kernel", "lstm_layer_backward_kernel"}, shared
assert max(shared.values()) <= 166912, shared
print("ok")
'''


@needs_fake
def test_lstm_layer_backward_at_hidden_64_runs_on_sm80():
    """The launch that failed on sm_80 (192,512 B at 3 stages): now compiled with fewer stages, same numbers."""
    assert fakecuda.run_python(LSTM_H64, cc=80, timeout=1200).strip().endswith("ok")
