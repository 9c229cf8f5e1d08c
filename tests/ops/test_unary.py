"""Unary math beyond the OpInfo tests: rounding edges, float64 precision of the portable tanh/expm1/log1p/erf."""
import math

import numpy as np
import pytest

import tgrad
from tgrad.autograd import dispatch


def t(v, dtype=None):
    return tgrad.tensor(v, dtype=dtype)


def vals(x):
    return x.detach()._host_copy()


def test_rounding_edges():
    x = t([-0.5, 0.5, 1.5, 2.5, -2.5, 0.49999999999999994, 4503599627370497.0], tgrad.float64)
    np.testing.assert_array_equal(vals(x.round()), [-0.0, 0.0, 2.0, 2.0, -2.0, 0.0, 4503599627370497.0])
    assert np.signbit(vals(x.round())[0])
    assert vals(t([1.25, -2.35]).round(decimals=1)).tolist() == pytest.approx([1.2, -2.4])
    np.testing.assert_array_equal(vals(t([-1.5, 1.5]).trunc()), [-1.0, 1.0])
    np.testing.assert_array_equal(vals(t([-1.25, 1.25]).frac()), [-0.25, 0.25])
    np.testing.assert_array_equal(vals(t([float("nan"), -3.0, 0.0, 2.0]).sign()), [0.0, -1.0, 0.0, 1.0])
    assert vals(t([5, -5]).sign()).tolist() == [1, -1]


def test_float64_precision_near_zero_and_far():
    x = np.array([1e-300, -1e-20, 1e-12, -3e-9, 1e-6, 2e-5, -4e-4, 0.3, -0.49, 0.51, 2.0, -7.5, 20.0, 40.0,
                  -40.0, 300.0, -700.0])
    xt = t(x, tgrad.float64)
    for got, ref in [(xt.tanh(), np.tanh(x)), (xt.expm1(), np.expm1(x)), (xt.sigmoid(), 1 / (1 + np.exp(-x))),
                     (dispatch.call("silu", xt), x / (1 + np.exp(-x))),
                     (dispatch.call("logsigmoid", xt), -np.logaddexp(0, -x))]:
        np.testing.assert_allclose(vals(got), ref, rtol=1e-13, atol=0)
    p = x[x > -1]
    np.testing.assert_allclose(vals(t(p, tgrad.float64).log1p()), np.log1p(p), rtol=1e-13, atol=0)
    e = np.array([-3.0, -0.7, -1e-8, 1e-10, 0.2, 1.1, 4.0])
    erf = np.array([math.erf(v) for v in e])
    np.testing.assert_allclose(vals(t(e, tgrad.float64).erf()), erf, rtol=1e-13, atol=0)
