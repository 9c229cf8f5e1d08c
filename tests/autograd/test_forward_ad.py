"""autograd.forward_ad (dual_level / make_dual / unpack_dual by the double-vjp trick): tangents against analytic
Jacobian-vector products, central differences and func.jvp; PyTorch's errors and level rules."""
import numpy as np
import pytest

import tgrad
import tgrad.autograd.forward_ad as fwAD

CPU_ONLY = True     # autograd bookkeeping over ops the device suites test


def _f(x, W):
    return (W @ x.sin()).exp() * 2 + x.sum()


def test_tangent_is_the_analytic_jvp_and_matches_finite_differences():
    rng = np.random.default_rng(0)
    xn, vn, Wn = rng.standard_normal(4), rng.standard_normal(4), rng.standard_normal((3, 4)) / 3
    x, v, W = (tgrad.tensor(a) for a in (xn, vn, Wn))
    with fwAD.dual_level():
        d = fwAD.make_dual(x, v)
        p, t = fwAD.unpack_dual(_f(d, W))
    e = np.exp(Wn @ np.sin(xn))
    exact = 2 * e * (Wn @ (np.cos(xn) * vn)) + vn.sum()           # d/dx of 2 exp(W sin x) + sum x, times v
    np.testing.assert_allclose(t.numpy(), exact, rtol=1e-13)
    np.testing.assert_allclose(p.detach().numpy(), 2 * e + xn.sum(), rtol=1e-15)
    h = 1e-6
    fd = (_f(x + h * v, W) - _f(x - h * v, W)) / (2 * h)
    np.testing.assert_allclose(t.numpy(), fd.numpy(), rtol=1e-7)
    _, jv = tgrad.func.jvp(lambda a: _f(a, W), (x,), (v,))
    np.testing.assert_allclose(t.numpy(), jv.numpy(), rtol=1e-14)


def test_two_duals_unpacked_twice_and_inputs_that_need_grad():
    a = tgrad.tensor([1.5, -0.5], dtype=tgrad.float64, requires_grad=True)
    b = tgrad.tensor([2.0, 3.0], dtype=tgrad.float64)
    with fwAD.dual_level():
        da = fwAD.make_dual(a, tgrad.ones(2, dtype=tgrad.float64))
        db = fwAD.make_dual(b, tgrad.tensor([0.5, -1.0], dtype=tgrad.float64))
        y = da * db
        # d(ab) = b da + a db
        assert fwAD.unpack_dual(y).tangent.tolist() == [2.0 + 0.75, 3.0 + 0.5]
        assert fwAD.unpack_dual(y).tangent.tolist() == [2.75, 3.5]          # the graph survives an unpack
        assert fwAD.unpack_dual(db).tangent.tolist() == [0.5, -1.0]
        assert fwAD.unpack_dual(b).tangent is None
        assert fwAD.unpack_dual(tgrad.ones(2)).tangent is None
        assert fwAD.unpack_dual(y * 0 + 1.0).tangent.tolist() == [0.0, 0.0]
        y.sum().backward()                                                  # reverse mode still works on a
        assert a.grad.tolist() == [2.0, 3.0]
    assert fwAD.unpack_dual(y).tangent is None                              # outside any level
    r = fwAD.unpack_dual(y)
    assert type(r).__name__ == "UnpackedDualTensor" and r._fields == ("primal", "tangent")


def test_errors_and_levels():
    x = tgrad.ones(3)
    with pytest.raises(RuntimeError, match="no level exists, make sure to enter_dual_level\\(\\) first"):
        fwAD.make_dual(x, x)
    lvl = fwAD.enter_dual_level()
    try:
        assert lvl == 0
        with pytest.raises(RuntimeError, match=r"Tensor is of size \[3\] while the given forward gradient is of "
                                               r"size \[2\]"):
            fwAD.make_dual(x, tgrad.ones(2))
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            fwAD.enter_dual_level()
    finally:
        fwAD.exit_dual_level(level=lvl)
    with fwAD.dual_level() as lvl2:
        assert lvl2 == 0
