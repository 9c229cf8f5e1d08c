"""The in-place function forms ``tgrad.<op>_`` / ``F.<act>_``: same values as the out-of-place op, written into
(and returning) the input, with autograd through a non-leaf and PyTorch's leaf error."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F

X = np.array([[0.2, -0.7, 0.9], [0.45, 0.05, -0.3]])

CASES = [  # (in-place function, out-of-place reference, extra args)
    (tgrad.relu_, tgrad.relu, ()), (tgrad.sigmoid_, tgrad.sigmoid, ()), (tgrad.tanh_, tgrad.tanh, ()),
    (tgrad.exp_, tgrad.exp, ()), (tgrad.sin_, tgrad.sin, ()), (tgrad.abs_, tgrad.abs, ()),
    (tgrad.neg_, tgrad.neg, ()), (tgrad.negative_, tgrad.neg, ()), (tgrad.square_, tgrad.square, ()),
    (tgrad.atan_, tgrad.atan, ()), (tgrad.clamp_, tgrad.clamp, (-0.5, 0.5)),
    (tgrad.clamp_min_, tgrad.clamp_min, (0.1,)), (tgrad.clamp_max_, tgrad.clamp_max, (0.1,)),
    (tgrad.deg2rad_, tgrad.deg2rad, ()), (tgrad.rad2deg_, tgrad.rad2deg, ()),
    (tgrad.selu_, tgrad.selu, ()), (tgrad.celu_, F.celu, ()), (tgrad.threshold_, F.threshold, (0.1, -2.0)),
    (F.relu_, F.relu, ()), (F.elu_, F.elu, ()), (F.leaky_relu_, F.leaky_relu, (0.2,)),
    (F.hardtanh_, F.hardtanh, (-0.5, 0.5)), (F.threshold_, F.threshold, (0.1, -2.0)), (F.selu_, F.selu, ()),
    (F.celu_, F.celu, (0.5,)),
]


@pytest.mark.parametrize("fn,ref,args", CASES, ids=[c[0].__name__ + str(i) for i, c in enumerate(CASES)])
def test_inplace_function_matches_out_of_place(fn, ref, args):
    x = tgrad.tensor(X)
    want = ref(x, *args).cpu().numpy()
    y = x.clone()
    v = y._version
    assert fn(y, *args) is y
    assert y._version > v
    np.testing.assert_allclose(y.cpu().numpy(), want, rtol=1e-12, atol=0)


@pytest.mark.parametrize("fn,ref,args", CASES[:16], ids=[c[0].__name__ for c in CASES[:16]])
def test_inplace_function_gradient(fn, ref, args):
    a = tgrad.tensor(X, requires_grad=True)
    ref(a, *args).sum().backward()
    b = tgrad.tensor(X, requires_grad=True)
    fn(b * 1, *args).sum().backward()
    np.testing.assert_allclose(b.grad.cpu().numpy(), a.grad.cpu().numpy(), rtol=1e-12, atol=1e-15)


def test_composite_inplace_forms():
    p = tgrad.tensor([0.2, 0.7, 0.5], requires_grad=True)
    q = p * 1
    assert tgrad.logit_(q) is q
    q.sum().backward()
    np.testing.assert_allclose(p.grad.cpu().numpy(), 1 / (np.array([0.2, 0.7, 0.5]) * (1 - np.array([0.2, 0.7, 0.5]))),
                               rtol=1e-6)
    x, y = tgrad.tensor([0.0, 2.0, 3.0]), tgrad.tensor([5.0, 4.0, 0.5])
    tgrad.xlogy_(x, y)
    np.testing.assert_allclose(x.cpu().numpy(), [0.0, 2 * np.log(4.0), 3 * np.log(0.5)], rtol=1e-6)
    m, v, z = tgrad.tensor([[1.0, 2.0], [3.0, 4.0]]), tgrad.tensor([1.0, -1.0]), tgrad.tensor([0.5, 0.25])
    tgrad.addmv_(z, m, v, beta=2, alpha=3)
    np.testing.assert_allclose(z.cpu().numpy(), [1.0 - 3.0, 0.5 - 3.0])


def test_inplace_function_on_a_leaf_requiring_grad_raises():
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        tgrad.relu_(tgrad.tensor([1.0, -1.0], requires_grad=True))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        tgrad.logit_(tgrad.tensor([0.5], requires_grad=True))


def test_dropout_inplace_function():
    x = tgrad.ones(1000)
    assert tgrad.dropout_(x, 0.5, True) is x
    vals = set(np.unique(x.cpu().numpy()).tolist())
    assert vals == {0.0, 2.0}
    y = tgrad.ones(10)
    tgrad.dropout_(y, 0.5, False)
    np.testing.assert_array_equal(y.cpu().numpy(), np.ones(10))
