"""tgrad.func (grad, vjp, jvp, jacrev/jacfwd, hessian, vmap, functional_call, stack_module_state) and
tgrad.autograd.functional (vjp, jvp, vhp, hvp, jacobian, hessian): values against closed forms in numpy."""
import numpy as np
import pytest

import tgrad
import tgrad.autograd.functional as AF
from tgrad.func import (functional_call, grad, grad_and_value, hessian, jacfwd, jacrev, jvp, stack_module_state, vjp,
                        vmap)

X = np.array([0.3, -1.2, 2.0])


def T(a, **k):
    return tgrad.tensor(np.asarray(a, dtype=np.float64), **k)


def f_np_grad(x):       # f(x) = sum(sin x) * sum(x^2)
    return np.cos(x) * (x ** 2).sum() + np.sin(x).sum() * 2 * x


def f_np_hess(x):
    s, q = np.sin(x).sum(), (x ** 2).sum()
    return (np.diag(-np.sin(x) * q + 2 * s) + 2 * np.outer(np.cos(x), x) + 2 * np.outer(x, np.cos(x)))


def f(x):
    return x.sin().sum() * x.pow(2).sum()


def test_grad_hessian_and_nesting():
    x = T(X)
    np.testing.assert_allclose(grad(f)(x).cpu().numpy(), f_np_grad(X), rtol=1e-12)
    assert grad(f)(x).grad_fn is None and not x.requires_grad          # nothing outside requires grad
    np.testing.assert_allclose(hessian(f)(x).cpu().numpy(), f_np_hess(X), rtol=1e-12)
    np.testing.assert_allclose(jacrev(grad(f))(x).cpu().numpy(), f_np_hess(X), rtol=1e-12)
    np.testing.assert_allclose(grad(grad(lambda t: t.sin().sum()))(T(1.0)).item(), -np.sin(1.0), rtol=1e-12)
    g, v = grad_and_value(lambda t: (t ** 2).sum())(x)
    np.testing.assert_allclose(g.cpu().numpy(), 2 * X) and np.testing.assert_allclose(v.item(), (X ** 2).sum())
    (ga, gb), aux = grad(lambda a, b: ((a * b).sum(), a + b), argnums=(0, 1), has_aux=True)(x, 2 * x)
    np.testing.assert_allclose(ga.cpu().numpy(), 2 * X) and np.testing.assert_allclose(gb.cpu().numpy(), X)
    np.testing.assert_allclose(aux.cpu().numpy(), 3 * X)
    d = grad(lambda p: (p["a"] * p["b"]).sum())({"a": x, "b": 3 * x})
    np.testing.assert_allclose(d["a"].cpu().numpy(), 3 * X) and np.testing.assert_allclose(d["b"].cpu().numpy(), X)
    with pytest.raises(RuntimeError, match="scalar Tensor"):
        grad(lambda t: t * 2)(x)


def test_grad_stays_differentiable_wrt_captured_tensors():
    """grad(f)(x) where f captures w (requires grad): d/dw of the result flows back, as PyTorch's torch.func."""
    w = T([0.5, -1.0, 2.0], requires_grad=True)
    x = T(X)
    g = grad(lambda t: (w * t).sum() ** 2)(x)          # g = 2 (w.x) w
    g.sum().backward()
    wx = (np.array([0.5, -1.0, 2.0]) * X).sum()
    np.testing.assert_allclose(w.grad.cpu().numpy(), 2 * X * np.array([0.5, -1.0, 2.0]).sum() + 2 * wx, rtol=1e-12)


def test_vjp_jvp_jacobians():
    x = T(X)
    out, fn = vjp(tgrad.sin, x)
    np.testing.assert_allclose(out.cpu().numpy(), np.sin(X)) and np.testing.assert_allclose(fn(T([1., 2., 3.]))[0].cpu().numpy(),
                                                                                         np.cos(X) * [1, 2, 3])
    o, t = jvp(tgrad.sin, (x,), (T([1., 2., 3.]),))
    np.testing.assert_allclose(t.cpu().numpy(), np.cos(X) * [1, 2, 3], rtol=1e-12)
    J = np.diag(np.cos(X) * X + np.sin(X))
    np.testing.assert_allclose(jacrev(lambda t: t.sin() * t)(x).cpu().numpy(), J, rtol=1e-12)
    np.testing.assert_allclose(jacfwd(lambda t: t.sin() * t)(x).cpu().numpy(), J, rtol=1e-12)
    ja, jb = jacrev(lambda a, b: a * b, argnums=(0, 1))(x, x + 1)
    np.testing.assert_allclose(ja.cpu().numpy(), np.diag(X + 1)) and np.testing.assert_allclose(jb.cpu().numpy(), np.diag(X))


def test_autograd_functional():
    x, v = T(X), T([1., 2., 3.])
    (j1, j2), (j3, j4) = AF.jacobian(lambda a, b: (a * b, a.exp()), (x, x + 1))
    np.testing.assert_allclose(j1.cpu().numpy(), np.diag(X + 1)) and np.testing.assert_allclose(j2.cpu().numpy(), np.diag(X))
    np.testing.assert_allclose(j3.cpu().numpy(), np.diag(np.exp(X))) and np.testing.assert_allclose(j4.cpu().numpy(), 0)
    assert AF.jacobian(lambda a: a.exp(), x).shape == (3, 3)
    np.testing.assert_allclose(AF.hessian(f, x).cpu().numpy(), f_np_hess(X), rtol=1e-12)
    h = AF.hessian(lambda a, b: (a * a * b).sum(), (x, x))
    np.testing.assert_allclose(h[0][1].cpu().numpy(), np.diag(2 * X)) and np.testing.assert_allclose(h[1][1].cpu().numpy(), 0)
    out, r = AF.vjp(lambda a: a ** 3, x, v)
    np.testing.assert_allclose(r.cpu().numpy(), 3 * X ** 2 * [1, 2, 3], rtol=1e-12)
    out, r = AF.jvp(lambda a: a ** 3, x, v)
    np.testing.assert_allclose(r.cpu().numpy(), 3 * X ** 2 * [1, 2, 3], rtol=1e-12)
    for fn in (AF.hvp, AF.vhp):
        out, r = fn(f, x, v)
        np.testing.assert_allclose(r.cpu().numpy(), f_np_hess(X) @ [1, 2, 3], rtol=1e-12)
        assert r.grad_fn is None
    with pytest.raises(RuntimeError, match="independent of input 1"):
        AF.jacobian(lambda a, b: a * 2, (x, x), strict=True)
    with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
        AF.jacobian(lambda a: a, [x])
    with pytest.raises(RuntimeError, match="v can only be None"):
        AF.vjp(lambda a: a * 2, x)


def test_vmap_per_sample_grads_and_ensembles():
    tgrad.manual_seed(0)
    model = tgrad.nn.Sequential(tgrad.nn.Linear(5, 4), tgrad.nn.Tanh(), tgrad.nn.Linear(4, 2))
    params = {k: p.detach() for k, p in model.named_parameters()}
    data, targets = tgrad.randn(6, 5), tgrad.randint(0, 2, (6,))

    def loss(p, x, y):
        return tgrad.nn.functional.cross_entropy(functional_call(model, p, (x.unsqueeze(0),)), y.unsqueeze(0))
    ft = vmap(grad(loss), in_dims=(None, 0, 0))(params, data, targets)
    for i in (0, 5):
        ref = tgrad.autograd.grad(tgrad.nn.functional.cross_entropy(model(data[i:i + 1]), targets[i:i + 1]),
                                  list(model.parameters()))
        for r, k in zip(ref, ft):
            np.testing.assert_allclose(ft[k][i].cpu().numpy(), r.cpu().numpy(), rtol=1e-5, atol=1e-7)
    assert all(p.grad is None for p in model.parameters())       # the module's own parameters untouched
    a, b = tgrad.randn(4, 3), tgrad.randn(4, 3)
    np.testing.assert_allclose(vmap(tgrad.dot)(a, b).cpu().numpy(), (a.cpu().numpy() * b.cpu().numpy()).sum(1), rtol=1e-6)
    m = tgrad.arange(6.).reshape(2, 3)
    np.testing.assert_array_equal(vmap(lambda t: t * 2, in_dims=1, out_dims=1)(m).cpu().numpy(), m.cpu().numpy() * 2)
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        vmap(tgrad.dot)(a, tgrad.randn(5, 3))
    models = [tgrad.nn.Linear(3, 2) for _ in range(4)]
    p, bufs = stack_module_state(models)
    assert p["weight"].shape == (4, 2, 3) and p["weight"].requires_grad and p["weight"].is_leaf
    x = tgrad.randn(3)
    out = vmap(lambda pp, bb, t: functional_call(models[0], (pp, bb), (t,)), in_dims=(0, 0, None))(p, bufs, x)
    np.testing.assert_allclose(out[2].detach().cpu().numpy(), models[2](x).detach().cpu().numpy(), rtol=1e-6)


def test_functional_call_restores_and_ties():
    lin = tgrad.nn.Linear(2, 2)
    w0 = lin.weight
    new = {"weight": tgrad.ones(2, 2), "bias": tgrad.zeros(2)}
    np.testing.assert_array_equal(functional_call(lin, new, (tgrad.tensor([1., 2.]),)).cpu().numpy(), [3., 3.])
    assert lin.weight is w0 and isinstance(lin.weight, tgrad.nn.Parameter)
    with pytest.raises(RuntimeError, match="Missing key"):
        functional_call(lin, {"weight": tgrad.ones(2, 2)}, (tgrad.ones(2),), strict=True)
    emb = tgrad.nn.Embedding(3, 2)
    head = tgrad.nn.Linear(2, 3, bias=False)
    head.weight = emb.weight
    net = tgrad.nn.ModuleDict({"emb": emb, "head": head})
    tied = {"emb.weight": tgrad.ones(3, 2)}
    with tgrad.func._swapped(net, tied, True, False):
        assert net["head"].weight is tied["emb.weight"]
    assert net["head"].weight is emb.weight
