"""Rprop and ASGD (PyTorch's single-tensor algorithms op for op), orthogonal_/dirac_/sparse_ and the deprecated
nn.init names: parameters and optimizer state after 7 steps of an element-wise objective, bit for bit against
PyTorch 2.13 (hard-coded as it printed them)."""
import warnings

import numpy as np
import pytest

import tgrad
from tgrad import nn, optim

CPU_ONLY = True     # PyTorch's cpu random stream and cpu roundings (conftest)

C = [0.5, -1.5, 2.0, -0.25, 3.0]
CASES = [
    ('Rprop', {},
     ([0.17084097862243652, -0.5708409547805786, 0.970841109752655, 0.1791590452194214, -2.1291592121124268],
      {'step': 7.0, 'prev': [0.5120842456817627, -1.3917475938796997, 2.3004207611083984, -0.24331292510032654,
      4.322117328643799], 'step_size': [0.029859844595193863, 0.029859844595193863, 0.029859844595193863,
      0.029859844595193863, 0.029859844595193863]})),
    ('Rprop', {'lr': 0.05, 'etas': (0.3, 1.5), 'step_sizes': (0.001, 0.2), 'maximize': True},
     ([1.3062500953674316, -1.7062501907348633, 2.106250047683716, -0.9562499523162842, -0.9937499165534973],
      {'step': 7.0, 'prev': [-0.8671367764472961, 0.8193631172180176, -3.090137004852295, 0.07842577993869781,
      -3.427511692047119], 'step_size': [0.20000000298023224, 0.20000000298023224, 0.20000000298023224,
      0.20000000298023224, 0.20000000298023224]})),
    ('ASGD', {},
     ([0.26329919695854187, -0.6041346788406372, 0.937674880027771, 0.06742966920137405, -2.3052937984466553],
      {'step': 7.0, 'eta': 0.009999947622418404, 'mu': 1.0, 'ax': [0.26329919695854187, -0.6041346788406372,
      0.937674880027771, 0.06742966920137405, -2.3052937984466553]})),
    ('ASGD', {'lr': 0.05, 't0': 3, 'weight_decay': 0.1, 'lambd': 0.01, 'alpha': 0.5},
     ([0.11145927757024765, -0.18345129489898682, 0.3076273798942566, 0.1332855373620987, -3.714711904525757],
      {'step': 7.0, 'eta': 0.04991272836923599, 'mu': 0.25, 'ax': [0.1375495195388794, -0.2586788237094879,
      0.4129885137081146, 0.12165845185518265, -3.4181344509124756]})),
]


@pytest.mark.parametrize("name,kw,expected", CASES)
def test_matches_pytorch(name, kw, expected):
    p = nn.Parameter(tgrad.tensor([0.3, -0.7, 1.1, 0.05, -2.0]))
    opt = getattr(optim, name)([p], **kw)
    c = tgrad.tensor(C)
    for _ in range(7):
        opt.zero_grad()
        loss = (p * c).sum() + (p ** 3).sum() * 0.1
        loss.backward()
        opt.step()
    state = {k: (v.item() if v.dim() == 0 else v.tolist()) for k, v in opt.state[p].items()}
    assert (p.detach().tolist(), state) == expected


def test_state_dict_round_trip_and_bad_arguments():
    p = nn.Parameter(tgrad.ones(3))
    opt = optim.Rprop([p])
    p.grad = tgrad.tensor([1.0, -1.0, 0.0])
    opt.step()
    opt2 = optim.Rprop([nn.Parameter(tgrad.ones(3))])
    opt2.load_state_dict(opt.state_dict())
    assert opt2.state_dict()["state"][0]["step_size"].tolist() == opt.state[p]["step_size"].tolist()
    with pytest.raises(ValueError, match="Invalid eta values: 1.5, 1.2"):
        optim.Rprop([p], etas=(1.5, 1.2))
    with pytest.raises(ValueError, match="Invalid weight_decay value: -1"):
        optim.ASGD([p], weight_decay=-1)


def test_orthogonal_dirac_sparse():
    tgrad.manual_seed(0)
    w = nn.init.orthogonal_(tgrad.empty(3, 5), gain=2.0)
    np.testing.assert_allclose((w @ w.T).numpy(), 4 * np.eye(3), atol=1e-5)
    # PyTorch 2.13 after manual_seed(0): the first row of orthogonal_(empty(3, 5), gain=2.0)
    np.testing.assert_allclose(w[0].numpy(), [1.0445, -0.1989, -1.4767, 0.3853, -0.7351], atol=1e-4)
    w = nn.init.orthogonal_(tgrad.empty(6, 2, 3))
    np.testing.assert_allclose((w.view(6, -1) @ w.view(6, -1).T).numpy(), np.eye(6), atol=1e-5)
    w = nn.init.dirac_(tgrad.empty(4, 2, 3, 3), groups=2)
    assert w.sum().item() == 4 and w[1, 1, 1, 1].item() == 1 and w[3, 1, 1, 1].item() == 1
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions are supported"):
        nn.init.dirac_(tgrad.empty(2, 2))
    w = nn.init.sparse_(tgrad.empty(5, 3), 0.4, std=0.5)
    assert [(w[:, j] == 0).sum().item() for j in range(3)] == [2, 2, 2]
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        nn.init.xavier_uniform(tgrad.empty(2, 2))
    assert rec[0].category is FutureWarning and "nn.init.xavier_uniform_" in str(rec[0].message)


def test_alpha_and_pointwise_rounding_is_atens():
    """add/sub with alpha, addcmul, addcdiv with a value and lerp round as ATen's cpu kernels (one fma where
    ATen has one): bit for bit against numpy emulations that match PyTorch 2.13 on 100000 random elements."""
    rng = np.random.default_rng(0)
    x, t1 = rng.standard_normal((2, 4000)).astype(np.float32)
    t2 = (rng.random(4000) + 0.5).astype(np.float32)
    X, T1, T2 = (tgrad.tensor(v) for v in (x, t1, t2))
    f32 = np.float32

    def fma(a, b, c):      # float64 holds the exact product; the one rounding to float32 is fma's
        return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(f32)

    def lerp(a, b, w):
        w = np.broadcast_to(np.asarray(w, f32), a.shape)
        return np.where(np.abs(w) < 0.5, fma(w, b - a, a), fma(a - b, f32(1) - w, b))

    v = f32(0.7)
    cases = [(X.add(T1, alpha=0.7), fma(t1, np.full_like(x, v), x)),
             (X.sub(T1, alpha=0.7), fma(t1, np.full_like(x, -v), x)),
             (tgrad.addcmul(X, T1, T2, value=0.7), fma(v * t1, t2, x)),
             (tgrad.addcdiv(X, T1, T2, value=0.7), x + (v * t1) / t2),
             (tgrad.lerp(X, T1, 0.3), lerp(x, t1, 0.3)), (tgrad.lerp(X, T1, 0.8), lerp(x, t1, 0.8)),
             (tgrad.lerp(X, T1, T2 - 0.5), lerp(x, t1, t2 - f32(0.5)))]
    for got, ref in cases:
        assert got.numpy().tobytes() == ref.tobytes()


def test_lbfgs_matches_pytorch_and_converges():
    A = tgrad.tensor([[3., 1., 0.], [1., 4., 1.], [0., 1., 2.]])
    b = tgrad.tensor([1., -2., 3.])
    x = tgrad.zeros(3, requires_grad=True)
    opt = optim.LBFGS([x], lr=0.8, max_iter=6, history_size=3)
    calls = []

    def quad():
        calls.append(1)
        opt.zero_grad()
        f = 0.5 * (x * (A @ x)).sum() - (b * x).sum()
        f.backward()
        return f
    out = [opt.step(quad).item() for _ in range(3)]
    # PyTorch 2.13, same calls (to float32 ulps: its 3x3 matmul sums in another order)
    np.testing.assert_allclose(out, [0.0, -4.736826419830322, -4.736841678619385], rtol=1e-6)
    np.testing.assert_allclose(x.detach().numpy(), np.linalg.solve(A.numpy(), b.numpy()), atol=1e-4)
    assert opt.state[x]["func_evals"] == len(calls) <= 3 * 7      # max_eval = 6 * 5 // 4 per step
    # strong Wolfe on Rosenbrock: PyTorch reaches (1, 1) too (its float32 sqrt is not correctly rounded, so the
    # path differs by ulps from the first cubic interpolation on)
    p = tgrad.tensor([-1.5, 2.0], requires_grad=True)
    opt = optim.LBFGS([p], line_search_fn="strong_wolfe")

    def rosen():
        opt.zero_grad()
        f = (1 - p[0]) ** 2 + 100 * (p[1] - p[0] ** 2) ** 2
        f.backward()
        return f
    for _ in range(5):
        opt.step(rosen)
    np.testing.assert_allclose(p.detach().numpy(), [1.0, 1.0], atol=2e-5)
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        optim.LBFGS([{"params": [p]}, {"params": [x]}])
    with tgrad.no_grad():
        p.copy_(tgrad.tensor([-1.5, 2.0]))
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        optim.LBFGS([p], line_search_fn="armijo").step(rosen)


def test_eye_init_after_the_deprecated_aliases():
    """nn.init.eye (the deprecated alias) must not shadow the identity eye_ builds from."""
    w = nn.init.eye_(tgrad.empty(2, 3))
    assert w.tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert nn.init.eye(tgrad.empty(2, 2)).tolist() == [[1.0, 0.0], [0.0, 1.0]]
