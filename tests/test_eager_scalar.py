"""A Python number meeting a float32 tensor outside autograd goes to the kernel as an argument (issue 18: no 0-dim
operand tensor, no host copy); results, dtypes, versions and errors are those of the wrapped-operand path."""
import numpy as np
import pytest

import tgrad
from tgrad.autograd import dispatch

CPU_ONLY = True     # the scalar-argument path is the cpu executor's (conftest)

OPS = {
    "mul": lambda t, s: t * s, "rmul": lambda t, s: s * t, "add": lambda t, s: t + s, "radd": lambda t, s: s + t,
    "sub": lambda t, s: t - s, "rsub": lambda t, s: s - t, "div": lambda t, s: t / s,
    "mul_": lambda t, s: t.mul_(s), "add_": lambda t, s: t.add_(s), "sub_": lambda t, s: t.sub_(s),
    "div_": lambda t, s: t.div_(s), "imul": lambda t, s: t.__imul__(s),
}
VALUES = [0.1, -2.5, 3, -0.0, 0, 1e-40, 3.4e38, 7, 2 ** 53, 1e39, float("inf"), float("nan"), 2 ** 60]


def _general(monkeypatch):
    monkeypatch.setattr(dispatch, "_scalar_arg", lambda self, value: None)


def _launches(fn):
    """How many kernel launches and host-to-device copies ``fn()`` makes."""
    from tgrad.kernels.runtime import launcher
    launcher.COUNTER.counts.clear()
    launcher.COUNTER.enabled = True
    try:
        fn()
    finally:
        launcher.COUNTER.enabled = False
    return sum(launcher.COUNTER.counts.values())


@pytest.mark.parametrize("name", sorted(OPS))
def test_same_bits_as_the_wrapped_operand(name, monkeypatch):
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((3, 5)).astype(np.float32)
    xn[0, :3] = [0.0, -0.0, np.inf]
    for s in VALUES:
        for strided in (False, True):
            a = tgrad.tensor(xn.T.copy()).t() if strided else tgrad.tensor(xn)
            got = OPS[name](a, s)
            with monkeypatch.context() as m:
                _general(m)
                b = tgrad.tensor(xn.T.copy()).t() if strided else tgrad.tensor(xn)
                want = OPS[name](b, s)
            assert got.dtype == want.dtype == tgrad.float32
            assert got.shape == want.shape
            assert got.numpy().tobytes() == want.numpy().tobytes(), (name, s, strided)
            if name.endswith("_") or name == "imul":
                assert got is a and a._version == b._version == 1


def test_one_launch_and_no_operand_tensor():
    x = tgrad.randn(100)
    x * 2.0     # warm
    before = tgrad.memory_allocated()
    assert _launches(lambda: x.mul_(0.5)) == 1
    assert tgrad.memory_allocated() == before
    y = x * 2.0
    assert tgrad.memory_allocated() == before + 512      # the output only


def test_autograd_still_saves_the_wrapped_number():
    w = tgrad.randn(4, requires_grad=True)
    y = w * 2.0
    assert type(y.grad_fn).__name__ == "MulBackward0"
    assert y.grad_fn._saved_other.item() == 2.0
    y.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full(4, 2.0, np.float32))
    with tgrad.no_grad():
        z = w * 2.0
        w.mul_(0.5)         # a leaf that requires grad, updated under no_grad (an optimizer)
    assert z.grad_fn is None and not z.requires_grad and w._version == 1
    v = w[1:3]              # a view of a leaf requiring grad: its op is recorded
    assert (v * 3.0).grad_fn is not None


@pytest.mark.parametrize("dtype", [tgrad.float64, tgrad.float16, tgrad.int64, tgrad.bfloat16])
def test_other_dtypes_take_the_wrapped_path(dtype, monkeypatch):
    x = tgrad.arange(6).to(dtype)
    got = [x * 3, x + 2, (x * 0.5).dtype, (x / 3).dtype]
    with monkeypatch.context() as m:
        _general(m)
        want = [x * 3, x + 2, (x * 0.5).dtype, (x / 3).dtype]
    assert got[2:] == want[2:]
    for g, w in zip(got[:2], want[:2]):
        assert g.dtype == w.dtype and g.float().numpy().tobytes() == w.float().numpy().tobytes()


def test_in_place_errors_are_pytorchs():
    w = tgrad.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        w.mul_(2.0)
    e = tgrad.randn(1).expand(3)
    with tgrad.no_grad(), pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        e.add_(1.0)
    with tgrad.inference_mode():
        t = tgrad.randn(3)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
        t.sub_(1.0)
    assert w._version == 0 and t._version == 0


def test_bool_and_alpha_keep_their_rules():
    x = tgrad.randn(3)
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool tensor"):
        x - True
    np.testing.assert_array_equal((x.add(2.0, alpha=2)).numpy(), x.numpy() + np.float32(4.0))
    assert (x * True).dtype == tgrad.float32
