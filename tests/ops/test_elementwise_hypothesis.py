"""Property tests: element-wise ops on random shapes, strides (transposed, stepped, expanded views) and values
agree with numpy; gradients of a few representative ops match their closed forms."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tgrad
from tgrad.autograd import dispatch

SETTINGS = settings(max_examples=20, deadline=None, derandomize=True)
DTYPES = {"float32": (tgrad.float32, 1e-6, 1e-5), "float64": (tgrad.float64, 1e-12, 1e-12)}


@st.composite
def strided(draw, shape=None):
    """(numpy values, tgrad tensor viewing them through a random layout)."""
    if shape is None:
        shape = tuple(draw(st.lists(st.integers(0, 5), min_size=0, max_size=4)))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    dt = draw(st.sampled_from(sorted(DTYPES)))
    layout = draw(st.sampled_from(["contiguous", "transposed", "stepped", "expanded"]))
    a = rng.uniform(-3, 3, shape)
    dtype = DTYPES[dt][0]
    if layout == "transposed" and len(shape) >= 2:
        t = tgrad.tensor(np.ascontiguousarray(np.swapaxes(a, 0, -1)), dtype=dtype).transpose(0, -1)
    elif layout == "stepped" and len(shape) >= 1:
        wide = np.zeros(shape[:-1] + (shape[-1] * 2,))
        wide[..., ::2] = a
        t = tgrad.tensor(wide, dtype=dtype)[..., ::2]
    elif layout == "expanded" and len(shape) >= 1 and all(s > 0 for s in shape):
        a = np.broadcast_to(a[..., :1], shape)
        t = tgrad.tensor(np.ascontiguousarray(a[..., :1]), dtype=dtype).expand(*shape)
    else:
        t = tgrad.tensor(a, dtype=dtype)
    return a.astype(dtype.np).astype(np.float64), t


def _check(got, ref, dtype):
    _, atol, rtol = DTYPES[dtype.name]
    g = got._host_copy()
    assert g.shape == np.shape(ref)
    np.testing.assert_allclose(g.astype(np.float64), ref, atol=atol, rtol=rtol, equal_nan=True)


@st.composite
def broadcast_pair(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=0, max_size=3)))
    other = tuple(1 if draw(st.booleans()) else s for s in shape)[draw(st.integers(0, len(shape))):]
    a, x = draw(strided(shape))
    b, y = draw(strided(other))
    return a, x, b, y


@SETTINGS
@given(broadcast_pair(), st.sampled_from(["add", "mul", "maximum", "atan2", "lt", "where"]))
def test_binary_ops_random_layouts(pair, op):
    a, x, b, y = pair
    y = y.to(x.dtype)
    b = b.astype(x.dtype.np).astype(np.float64)
    ref = {"add": lambda: a + b, "mul": lambda: a * b, "maximum": lambda: np.maximum(a, b),
           "atan2": lambda: np.arctan2(a, b), "lt": lambda: a < b,
           "where": lambda: np.where(a > 0, a, b)}[op]()
    got = {"add": lambda: x + y, "mul": lambda: x * y, "maximum": lambda: tgrad.maximum(x, y),
           "atan2": lambda: tgrad.atan2(x, y), "lt": lambda: x < y,
           "where": lambda: tgrad.where(x > 0, x, y)}[op]()
    if op == "lt":
        np.testing.assert_array_equal(got._host_copy(), ref)
    else:
        _check(got, ref, x.dtype)


def _gelu(a):
    from math import erf
    return 0.5 * a * (1 + np.vectorize(erf)(a / np.sqrt(2)))


UNARY = {
    "tanh": (lambda x: x.tanh(), np.tanh),
    "sigmoid": (lambda x: x.sigmoid(), lambda a: 1 / (1 + np.exp(-a))),
    "expm1": (lambda x: x.expm1(), np.expm1),
    "log1p_abs": (lambda x: x.abs().log1p(), lambda a: np.log1p(np.abs(a))),
    "gelu": (lambda x: dispatch.call("gelu", x), _gelu),
    "softplus": (lambda x: dispatch.call("softplus", x, beta=1.5, threshold=2.0),
                 lambda a: np.where(1.5 * a > 2.0, a, np.logaddexp(0, 1.5 * a) / 1.5)),
    "round": (lambda x: x.round(), np.round),
    "clamp": (lambda x: x.clamp(-1.0, 0.5), lambda a: np.clip(a, -1.0, 0.5)),
}


@SETTINGS
@given(strided(), st.sampled_from(sorted(UNARY)))
def test_unary_ops_random_layouts(xa, op):
    a, x = xa
    fn, ref = UNARY[op]
    _check(fn(x), ref(a), x.dtype)


@SETTINGS
@given(st.lists(st.floats(-6, 6), min_size=1, max_size=6), st.sampled_from(["tanh", "sigmoid", "silu", "mish"]))
def test_activation_gradients_closed_form(values, op):
    a = np.array(values)
    x = tgrad.tensor(a, dtype=tgrad.float64, requires_grad=True)
    g, = tgrad.autograd.grad(dispatch.call(op, x).sum(), x)
    s = 1 / (1 + np.exp(-a))
    sp_t = np.tanh(np.logaddexp(0, a))
    ref = {"tanh": 1 - np.tanh(a) ** 2, "sigmoid": s * (1 - s), "silu": s * (1 + a * (1 - s)),
           "mish": sp_t + a * s * (1 - sp_t ** 2)}[op]
    np.testing.assert_allclose(g._host_copy(), ref, rtol=1e-12, atol=1e-14)


@SETTINGS
@given(st.lists(st.integers(-50, 50), min_size=1, max_size=8), st.lists(st.integers(-9, 9), min_size=1, max_size=8))
def test_integer_division_modes(xs, ys):
    n = min(len(xs), len(ys))
    a, b = np.array(xs[:n]), np.array(ys[:n])
    b = np.where(b == 0, 3, b)
    x, y = tgrad.tensor(a), tgrad.tensor(b)
    np.testing.assert_array_equal((x // y)._host_copy(), a // b)
    np.testing.assert_array_equal((x % y)._host_copy(), a % b)
    np.testing.assert_array_equal(tgrad.fmod(x, y)._host_copy(), np.fmod(a, b))
    np.testing.assert_array_equal(x.div(y, rounding_mode="trunc")._host_copy(), np.trunc(a / b).astype(np.int64))
