"""create_graph and higher-order gradients: seed 001, third derivatives, Hessian-vector products,
backwards that are only once differentiable."""
import re

import numpy as np
import pytest

import tgrad
from tgrad.autograd import Function, once_differentiable
from tgrad.ops import TABLE

from device_neutral import neutral_repr


def _np(t):
    return t.detach()._host_copy()


def test_second_derivative_seed001_cell18():
    x = tgrad.tensor(5.0, requires_grad=True)
    y = tgrad.pow(x, 3)
    grad_x = tgrad.autograd.grad(y, x, create_graph=True)
    assert neutral_repr(grad_x) == "(tensor(75., grad_fn=<MulBackward0>),)"
    grad_grad_x = tgrad.autograd.grad(grad_x[0], x)
    assert neutral_repr(grad_grad_x) == "(tensor(30.),)"


def test_create_graph_through_backward_into_grad():
    x = tgrad.tensor([1.0, 2.0], dtype=tgrad.float64, requires_grad=True)
    with pytest.warns(UserWarning, match="Using backward\\(\\) with create_graph=True will create a reference cycle"):
        (x ** 3).sum().backward(create_graph=True)
    g = x.grad
    assert g.requires_grad and g.grad_fn is not None
    np.testing.assert_array_equal(_np(g), [3.0, 12.0])
    x.grad = None
    g.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), [6.0, 12.0])


def _third(fn, pts):
    x = tgrad.tensor(pts, dtype=tgrad.float64, requires_grad=True)
    g = x
    out = fn(x)
    for _ in range(3):
        (g,) = tgrad.autograd.grad(out.sum(), x, create_graph=True)
        out = g
    return _np(g)


PTS = [-1.5, -0.3, 0.0, 0.4, 2.0]


def test_third_derivative_exp():
    np.testing.assert_allclose(_third(lambda x: x.exp(), PTS), np.exp(PTS), rtol=1e-12)


def test_third_derivative_tanh():
    t = np.tanh(PTS)
    np.testing.assert_allclose(_third(lambda x: x.tanh(), PTS), (1 - t ** 2) * (6 * t ** 2 - 2), rtol=1e-10)


def test_third_derivative_sigmoid():
    s = 1 / (1 + np.exp(-np.array(PTS)))
    np.testing.assert_allclose(_third(lambda x: x.sigmoid(), PTS), s * (1 - s) * (1 - 6 * s + 6 * s ** 2),
                               rtol=1e-10, atol=1e-14)


def _mlp_loss(w1, w2, x):
    """A two-layer MLP loss from mul/sum/exp/div only: mean((W2 a(W1 x) - 0.3)^2), a(h) = h sigmoid(h/2)."""
    h = (w1 * x).sum(1)                       # (4,)   = W1 @ x
    a = h * (h * 0.5).exp() / ((h * 0.5).exp() + 1)
    out = (w2 * a).sum(1)                     # (2,)   = W2 @ a
    return ((out - 0.3) ** 2).mean()


def test_hessian_vector_product_of_mlp_loss_against_finite_differences():
    rng = np.random.default_rng(0)
    w1_0, w2_0, x0 = rng.normal(size=(4, 3)), rng.normal(size=(2, 4)), rng.normal(size=(3,))
    u1, u2 = rng.normal(size=(4, 3)), rng.normal(size=(2, 4))
    w1 = tgrad.tensor(w1_0, requires_grad=True)
    w2 = tgrad.tensor(w2_0, requires_grad=True)
    x = tgrad.tensor(x0)
    g1, g2 = tgrad.autograd.grad(_mlp_loss(w1, w2, x), (w1, w2), create_graph=True)
    dot = (g1 * tgrad.tensor(u1)).sum() + (g2 * tgrad.tensor(u2)).sum()
    h1, h2 = tgrad.autograd.grad(dot, (w1, w2))

    def grads_at(a, b):
        p, q = tgrad.tensor(a, requires_grad=True), tgrad.tensor(b, requires_grad=True)
        return [_np(g) for g in tgrad.autograd.grad(_mlp_loss(p, q, x), (p, q))]
    eps = 1e-5
    plus, minus = grads_at(w1_0 + eps * u1, w2_0 + eps * u2), grads_at(w1_0 - eps * u1, w2_0 - eps * u2)
    np.testing.assert_allclose(_np(h1), (plus[0] - minus[0]) / (2 * eps), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(_np(h2), (plus[1] - minus[1]) / (2 * eps), rtol=1e-6, atol=1e-8)
    assert tgrad.autograd.gradgradcheck(lambda a, b: _mlp_loss(a, b, x), (w1, w2))


def test_hessian_vector_product_with_matmul_and_tanh():
    rng = np.random.default_rng(1)
    w = tgrad.tensor(rng.normal(size=(3, 5)), requires_grad=True)
    x = tgrad.tensor(rng.normal(size=(4, 3)))

    def loss(w):
        return (x.matmul(w).tanh() ** 2).mean()
    assert tgrad.autograd.gradgradcheck(loss, (w,))


def test_delayed_error_for_once_differentiable_function():
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            assert not tgrad.is_grad_enabled()
            return g * 2 * x

    x = tgrad.tensor([1.0, 3.0], requires_grad=True)
    (g,) = tgrad.autograd.grad(Square.apply(x).sum(), x, create_graph=True)
    np.testing.assert_array_equal(_np(g), [2.0, 6.0])
    assert not g.requires_grad      # as in PyTorch: the incoming gradient did not require grad
    v = tgrad.ones(2, requires_grad=True)
    (g,) = tgrad.autograd.grad(Square.apply(x), x, grad_outputs=v, create_graph=True)   # first order works
    np.testing.assert_array_equal(_np(g), [2.0, 6.0])
    assert g.requires_grad and g.grad_fn.name() == "DelayedError"
    with pytest.raises(RuntimeError, match=re.escape(
            "trying to differentiate twice a function that was marked with @once_differentiable")):
        g.sum().backward()


def test_once_differentiable_op_raises_when_differentiated_twice(monkeypatch):
    monkeypatch.setattr(TABLE["exp"], "once_differentiable", True)
    x = tgrad.tensor([0.5, 1.0], requires_grad=True)
    (g,) = tgrad.autograd.grad(x.exp().sum(), x, create_graph=True)
    np.testing.assert_allclose(_np(g), np.exp([0.5, 1.0]), rtol=1e-6)
    with pytest.raises(RuntimeError, match=re.escape(
            "the derivative for 'exp' is not implemented for double backward (ExpBackward0 is only once "
            "differentiable)")):
        tgrad.autograd.grad(g.sum(), x)


def test_gradcheck_takes_empty_inputs():
    """An input without elements has a Jacobian without columns (PyTorch's gradcheck passes such inputs);
    a wrong gradient of a non-empty input beside it is still caught."""
    e = tgrad.zeros(0, 3, dtype=tgrad.float64, requires_grad=True)
    x = tgrad.tensor([1.0, 2.0, 3.0], dtype=tgrad.float64, requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda a, b: a.sum(0) * b, (e, x))
    assert tgrad.autograd.gradgradcheck(lambda a, b: a.sum(0) * b * b, (e, x))
    assert tgrad.autograd.gradcheck(lambda a: a * 2, (e,))

    class Wrong(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a.sum(0) + b

        @staticmethod
        def backward(ctx, g):
            return g.new_zeros(0, 3), g * 2         # d/db is 1, not 2

    with pytest.raises(RuntimeError, match="Jacobian mismatch for output 0 with respect to input 1"):
        tgrad.autograd.gradcheck(Wrong.apply, (e, x))
