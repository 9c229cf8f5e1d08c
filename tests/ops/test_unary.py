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


# ------------------------------------------------------------------ gamma family, erfinv (values printed by PyTorch 2.13)
_GX = [0.0, -0.0, -1.0, -2.5, 0.3, 1.0, 2.0, 4.5, 25.0, math.inf, -math.inf]
_TORCH = {      # torch.<fn>(torch.tensor(_GX, dtype=torch.float64)).tolist(), from /work/venv-torch
    "lgamma": [math.inf, math.inf, math.inf, -0.05624371649767405, 1.0957979948180756, 0.0, 0.0, 2.4537365708424423,
               54.78472939811232, math.inf, math.inf],
    "digamma": [-math.inf, math.inf, math.nan, 1.1031566406452433, -3.502524222200133, -0.5772156649015328,
                0.422784335098467, 1.3888709263595287, 3.198742512851974, math.inf, math.nan],
    "poly1": [math.inf, math.inf, 6.580790147320947e+32, 9.53924664493752, 12.245364544940365, 1.6449340676383375,
              0.6449340670881899, 0.2487251030600673, 0.040810663257226834, 0.0, math.nan],
    "poly2": [-math.inf, -math.inf, -math.inf, -0.1082040516417282, -75.27253658872601, -2.404113806319188,
              -0.4041138063191886, -0.061556821321027695, -0.0016652793184224685, math.nan, -math.inf],
    "poly3": [math.inf, math.inf, math.inf, 194.74787621918756, 743.1417646550497, 6.493939402266829,
              0.4939394022668293, 0.03032250854236658, 0.0001358846365082737, math.nan, math.inf],
}


def _close(got, ref, rtol):
    np.testing.assert_allclose(vals(got).astype(np.float64), ref, rtol=rtol, atol=0, equal_nan=True)


def test_gamma_family_matches_pytorch():
    x = t(_GX, tgrad.float64)
    _close(x.lgamma(), _TORCH["lgamma"], 1e-13)
    _close(x.digamma(), _TORCH["digamma"], 1e-15)
    _close(x.polygamma(1), _TORCH["poly1"], 1e-15)
    _close(tgrad.polygamma(2, x), _TORCH["poly2"], 1e-13)
    _close(tgrad.special.polygamma(3, x), _TORCH["poly3"], 1e-13)
    x32 = t(_GX, tgrad.float32)
    _close(x32.lgamma(), [math.inf] * 3 + [-0.056243717670440674, 1.0957978963851929, 0.0, 0.0, 2.4537365436553955,
                                           54.78472900390625, math.inf, math.inf], 2e-7)
    _close(tgrad.special.psi(x32), [-math.inf, math.inf, math.nan, 1.1031566858291626, -3.502523899078369,
                                    -0.5772159099578857, 0.4227842092514038, 1.3888709545135498, 3.198742628097534,
                                    math.inf, math.nan], 2e-7)
    assert t([3, 4]).lgamma().dtype == tgrad.float32


def test_erfinv_ndtri_log_ndtr_match_pytorch():
    y = t([-1.0, -0.5, 0.0, 0.3, 0.7, 0.95, 1.0, 1.2], tgrad.float64)
    _close(y.erfinv(), [-math.inf, -0.4769362762044699, 0.0, 0.2724627147267543, 0.7328690779592167,
                        1.3859038243496777, math.inf, math.nan], 1e-14)
    _close(tgrad.special.erfinv(y.float()), [-math.inf, -0.4769362807273865, 0.0, 0.27246272563934326,
                                             0.7328690886497498, 1.3859037160873413, math.inf, math.nan], 2e-7)
    p = t([1e-10, 0.01, 0.3, 0.5, 0.9, 0.999], tgrad.float64)
    _close(tgrad.special.ndtri(p), [-6.361340902404056, -2.3263478740408408, -0.5244005127080409, 0.0,
                                    1.2815515655446004, 3.090232306167813], 1e-8)    # (2p - 1 rounds: 3e-9 at p = 1e-10)
    z = t([-50.0, -10.0, -2.0, -1.0, -0.5, 0.0, 1.5, 8.0], tgrad.float64)
    _close(tgrad.special.log_ndtr(z), [-1254.8313611394199, -53.23128515051248, -3.7831843336820317,
                                       -1.841021645009264, -1.1759117615936185, -0.6931471805599453,
                                       -0.06914345561223396, -6.220960574271758e-16], 1e-12)


def test_mvlgamma_matches_pytorch_and_math():
    m = t([[1.5, 2.0], [3.25, 7.0]], tgrad.float64)
    _close(m.mvlgamma(2), [[0.4515827052894549, 0.4515827052894549], [1.9833815409483626, 12.814178214791944]],
           1e-13)      # torch.mvlgamma(m, 2), printed by PyTorch 2.13
    _close(tgrad.special.multigammaln(m, 3), [[2.1686775340635553, 1.5963125911388552],
                                              [3.2529831416901596, 18.74639984342339]], 1e-13)
    ref = [sum(math.lgamma(v - i / 2) for i in range(3)) + 1.5 * math.log(math.pi) for v in (3.25, 7.0)]
    _close(tgrad.mvlgamma(m[1], 3), ref, 1e-13)
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        m.mvlgamma(0)
    a = m.clone()
    a.mvlgamma_(2)
    _close(a, vals(m.mvlgamma(2)), 0)


def test_gamma_family_grads_inplace_and_errors():
    a = t([2.5, 0.7], tgrad.float64).requires_grad_()
    assert [f(a).grad_fn.name() for f in (tgrad.lgamma, tgrad.digamma, lambda v: v.polygamma(2),
                                           lambda v: (v / 3).erfinv())] == \
        ["LgammaBackward0", "DigammaBackward0", "PolygammaBackward0", "ErfinvBackward0"]
    g, = tgrad.autograd.grad(a.lgamma().sum(), a, create_graph=True)
    np.testing.assert_allclose(vals(g), vals(a.digamma()), rtol=1e-15)
    gg, = tgrad.autograd.grad(g.sum(), a)
    np.testing.assert_allclose(vals(gg), vals(a.polygamma(1)), rtol=1e-15)
    y = t([0.2, -0.6], tgrad.float64).requires_grad_()
    (dy,) = tgrad.autograd.grad(y.erfinv().sum(), y)
    np.testing.assert_allclose(vals(dy), math.sqrt(math.pi) / 2 * np.exp(vals(y.erfinv()) ** 2), rtol=1e-14)
    with pytest.raises(RuntimeError, match=r"polygamma\(n, x\) does not support negative n."):
        a.polygamma(-1)
    for name in ("lgamma_", "digamma_", "erfinv_"):
        v = t([0.5, 0.25], tgrad.float64)
        getattr(v, name)()
        np.testing.assert_array_equal(vals(v), vals(getattr(t([0.5, 0.25], tgrad.float64), name[:-1])()))
    v = t([0.5, 3.0], tgrad.float64)
    v.polygamma_(3)
    np.testing.assert_array_equal(vals(v), vals(tgrad.polygamma(3, t([0.5, 3.0], tgrad.float64))))
