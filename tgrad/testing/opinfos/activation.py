"""OpInfos for the activations (each op's fused backward op runs under gradcheck / gradgradcheck)."""
import numpy as np

import tgrad

from ..opinfo import OpInfo
from .elementwise import FLOATS, SIGNED_INTS, _call, _u
from .unary import _erf

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _softplus(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.logaddexp(0.0, x * beta) / beta)


def _gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf(x / np.sqrt(2)))


def _hardsigmoid(x):
    return np.clip(x / 6 + 0.5, 0, 1)


ACTIVATIONS = [
    ("tanh", lambda x: x.tanh(), np.tanh, _u(-4, 4), FLOATS),
    ("sigmoid", lambda x: x.sigmoid(), _sigmoid, _u(-6, 6), FLOATS),
    ("relu", lambda x: tgrad.relu(x), lambda x: np.maximum(x, 0), _u(away=1e-3), FLOATS + SIGNED_INTS),
    ("relu6", _call("relu6"), lambda x: np.clip(x, 0, 6), _u(-3, 8, away=1e-3), FLOATS),
    ("hardtanh", _call("hardtanh", min_val=-0.5, max_val=1.5), lambda x: np.clip(x, -0.5, 1.5), _u(-3, 3),
     FLOATS),
    ("leaky_relu", _call("leaky_relu", negative_slope=0.2), lambda x: np.where(x > 0, x, 0.2 * x),
     _u(away=1e-3), FLOATS),
    ("elu", _call("elu", alpha=1.5), lambda x: np.where(x > 0, x, 1.5 * np.expm1(x)), _u(away=1e-3), FLOATS),
    ("selu", lambda x: tgrad.selu(x), lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x)),
     _u(away=1e-3), FLOATS),
    ("gelu", _call("gelu", approximate="none"), _gelu, _u(-4, 4), FLOATS),
    ("gelu_tanh", _call("gelu", approximate="tanh"), lambda x: _gelu(x, "tanh"), _u(-4, 4), FLOATS),
    ("silu", _call("silu"), lambda x: x * _sigmoid(x), _u(-5, 5), FLOATS),
    ("mish", _call("mish"), lambda x: x * np.tanh(np.logaddexp(0.0, x)), _u(-5, 5), FLOATS),
    ("softplus", _call("softplus", beta=2.0, threshold=5.0), lambda x: _softplus(x, 2.0, 5.0), _u(-4, 4), FLOATS),
    ("softplus_default", _call("softplus"), _softplus, _u(-4, 4), FLOATS),
    ("hardsigmoid", _call("hardsigmoid"), _hardsigmoid, _u(-5, 5), FLOATS),
    ("hardswish", _call("hardswish"), lambda x: x * _hardsigmoid(x), _u(-5, 5), FLOATS),
    ("logsigmoid", _call("logsigmoid"), lambda x: -np.logaddexp(0.0, -x), _u(-6, 6), FLOATS),
    ("softshrink", _call("softshrink", lambd=0.7), lambda x: np.where(x > 0.7, x - 0.7, np.where(x < -0.7, x + 0.7, 0)),
     _u(-3, 3), FLOATS),
    ("hardshrink", _call("hardshrink", lambd=0.7), lambda x: np.where(np.abs(x) <= 0.7, 0, x), _u(-3, 3), FLOATS),
]
OPS = [OpInfo(name, op, ref, samples, dtypes=dts) for name, op, ref, samples, dts in ACTIVATIONS]
