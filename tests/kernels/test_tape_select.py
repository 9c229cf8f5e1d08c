"""The tapes' select (``tape_ops._select``, what ``tl.where`` becomes on cpu): numpy's where's bits, without its
branch per element (aten_cpu.c's select, or the integer views where it is not built), for every dtype, NaN payloads, broadcast operands and conditions; and a ReLU's gradient
through it."""
import numpy as np
import pytest

import tgrad
from tgrad.kernels.runtime.tape_ops import _select

CPU_ONLY = True     # the cpu tape compiler's select

RNG = np.random.default_rng(0)


def _same(args):
    r, w = _select(*args), np.where(*args)
    assert r.dtype == w.dtype and r.shape == w.shape
    np.testing.assert_array_equal(r.view(np.uint8), w.view(np.uint8))


@pytest.mark.parametrize("native", [True, False], ids=["aten_cpu_select", "integer_views"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.float16, np.bool_])
def test_select_gives_wheres_bits(dtype, native, monkeypatch):
    from tgrad.kernels.runtime import native as N, tape_ops
    if native and N.aten_ufunc("select") is None:
        pytest.skip("aten_cpu.c not built")
    monkeypatch.setattr(tape_ops, "_SELECT", [None if native else False])
    n = 8192
    x = (RNG.standard_normal(n) * 100).astype(dtype)
    y = (RNG.standard_normal(n) * 100).astype(dtype)
    if x.dtype.kind == "f":
        x[::7] = np.nan
        x[1::7] = -0.0
        y.view(np.uint8)[::5] = 0xFF                # NaN payloads and odd bit patterns kept as they are
    c = RNG.random(n) < 0.5
    for args in [(c, x, y), (c, x, y[:1]), (c, x[:1], y), (c, x[:1], y[:1]), (c[::2], x[::2], y[1::2]),
                 (c.reshape(64, 128)[:, :1], x.reshape(64, 128), y.reshape(64, 128)),
                 (c[:10], x[:10], y[:10])]:
        _same(args)


def test_select_of_mixed_dtypes_is_wheres():
    c = RNG.random(8192) < 0.5
    _same((c, np.ones(8192, np.float32), np.zeros(8192, np.float64)))
    _same((c.astype(np.int8), np.ones(8192, np.float32), np.zeros(8192, np.float32)))


def test_relu_gradient_through_the_tape():
    x = RNG.standard_normal((16, 64, 24)).astype(np.float32)
    g = RNG.standard_normal((16, 64, 24)).astype(np.float32)
    t = tgrad.tensor(x, requires_grad=True)
    for _ in range(3):              # traced, then replayed from the tape
        t.grad = None
        y = tgrad.relu(t)
        y.backward(tgrad.tensor(g))
        np.testing.assert_array_equal(y.detach().numpy(), np.where(x > 0, x, 0))
        np.testing.assert_array_equal(t.grad.numpy(), np.where(x > 0, g, 0))
