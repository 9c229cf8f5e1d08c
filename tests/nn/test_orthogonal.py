"""nn.utils.parametrizations.orthogonal: every map keeps the weight orthogonal (at creation, after training steps),
assignment (right_inverse), state_dict round trips, cached(), remove_parametrizations, PyTorch's errors, and
seeded values printed by PyTorch 2.13 (/work/venv-torch, the same code with ``import torch``)."""
import numpy as np
import pytest

import tgrad as torch
from tgrad.nn.utils import parametrize
from tgrad.nn.utils.parametrizations import _geqrf, _householder_product, orthogonal

CPU_ONLY = True     # the seeded references are PyTorch's cpu random stream (conftest)
MAPS = [("matrix_exp", True), ("cayley", True), ("householder", True), ("householder", False),
        ("matrix_exp", False), ("cayley", False)]


def _assert_orthogonal(W, tol=1e-10):
    W = np.asarray(W.detach().tolist(), dtype=np.float64)
    if W.shape[-2] < W.shape[-1]:
        W = np.swapaxes(W, -1, -2)
    np.testing.assert_allclose(np.swapaxes(W, -1, -2) @ W, np.broadcast_to(np.eye(W.shape[-1]), W.shape[:-2] +
                               (W.shape[-1],) * 2), atol=tol)


@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 5), (2, 4, 3)])
@pytest.mark.parametrize("omap,triv", MAPS)
def test_orthogonal_at_creation_and_after_training(shape, omap, triv):
    torch.manual_seed(0)
    m = torch.nn.Module()
    m.weight = torch.nn.Parameter(torch.randn(*shape, dtype=torch.float64))
    orthogonal(m, orthogonal_map=omap, use_trivialization=triv)
    _assert_orthogonal(m.weight)
    opt = torch.optim.Adam(m.parameters(), lr=0.1)
    x = torch.randn(shape[-1], 2, dtype=torch.float64)
    before = m.weight.detach().clone()
    for _ in range(4):
        opt.zero_grad()
        (m.weight @ x).sin().sum().backward()
        opt.step()
    _assert_orthogonal(m.weight)
    assert float((m.weight.detach() - before).abs().max()) > 1e-3       # it moved


def test_values_match_pytorch():
    """Seeded layers and training steps (values printed by PyTorch 2.13 for the same code)."""
    P = torch.nn.utils.parametrizations
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 3)
    P.orthogonal(lin)
    np.testing.assert_allclose(lin.weight.detach().numpy().ravel(), [
        -0.0101689, 0.5581022, -0.82971, -0.9995861, -0.0280043, -0.0065861, -0.0269112, 0.8292996, 0.5581559],
        atol=2e-6)
    torch.manual_seed(1)
    lin = torch.nn.Linear(4, 6)
    P.orthogonal(lin)
    x = torch.randn(8, 4)
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        lin(x).pow(2).sum().backward()
        opt.step()
    np.testing.assert_allclose(lin.weight.detach().numpy().ravel(), [
        -0.2766598, -0.0953351, 0.5279957, -0.0311374, 0.5081369, 0.2195764, -0.1191938, -0.7361163, -0.5715814,
        0.449616, -0.1375315, -0.4460693, -0.4472574, 0.3600632, 0.0278704, 0.0469835, -0.1489699, -0.4946441,
        0.5253004, -0.4733031, 0.341057, 0.6051648, 0.6413902, 0.1787806], atol=2e-5)
    torch.manual_seed(2)
    lin = torch.nn.Linear(5, 3)
    P.orthogonal(lin, orthogonal_map="cayley")
    x = torch.randn(4, 5)
    opt = torch.optim.Adam(lin.parameters(), lr=0.05)
    for _ in range(3):
        opt.zero_grad()
        lin(x).pow(2).sum().backward()
        opt.step()
    np.testing.assert_allclose(lin.weight.detach().numpy().ravel(), [
        0.1433466, -0.4683403, 0.5264416, -0.2160634, 0.6605188, 0.7123195, -0.5591605, -0.2222152, 0.0486283,
        -0.3580454, -0.0015623, -0.0838692, -0.0203447, 0.958782, 0.2707152], atol=2e-5)


@pytest.mark.parametrize("omap,triv", [m for m in MAPS if m[1] or m[0] == "householder"])
def test_assignment_sets_the_weight(omap, triv):
    torch.manual_seed(3)
    lin = orthogonal(torch.nn.Linear(3, 5).double(), orthogonal_map=omap, use_trivialization=triv)
    Q = np.linalg.qr(np.random.default_rng(0).normal(size=(5, 3)))[0]
    lin.weight = torch.tensor(Q)
    np.testing.assert_allclose(lin.weight.detach().numpy(), Q, atol=1e-12)


def test_assignment_errors():
    lin = orthogonal(torch.nn.Linear(3, 3), orthogonal_map="matrix_exp", use_trivialization=False)
    with pytest.raises(NotImplementedError, match="It is not possible to assign to the matrix exponential or the "
                                                  "Cayley parametrizations when use_trivialization=False."):
        lin.weight = torch.eye(3)
    lin = orthogonal(torch.nn.Linear(3, 3))
    with pytest.raises(ValueError, match=r"Expected a matrix or batch of matrices of shape"):
        lin.weight = torch.eye(4)
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices. Got a tensor of 1 dimensions."):
        orthogonal(torch.nn.Linear(3, 3), "bias")
    with pytest.raises(ValueError, match='orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                                         "Got: qr"):
        orthogonal(torch.nn.Linear(3, 3), orthogonal_map="qr")
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'kernel'"):
        orthogonal(torch.nn.Linear(3, 3), "kernel")


@pytest.mark.parametrize("omap,triv", [("matrix_exp", True), ("householder", True), ("householder", False)])
def test_state_dict_round_trip(omap, triv):
    torch.manual_seed(4)
    a = orthogonal(torch.nn.Linear(4, 6), orthogonal_map=omap, use_trivialization=triv)
    opt = torch.optim.SGD(a.parameters(), lr=0.1)
    a(torch.randn(3, 4)).sum().backward()
    opt.step()
    sd = a.state_dict()
    assert ("parametrizations.weight.0.base" in sd) == triv and "parametrizations.weight.original" in sd
    torch.manual_seed(5)
    b = orthogonal(torch.nn.Linear(4, 6), orthogonal_map=omap, use_trivialization=triv)
    assert not np.allclose(a.weight.detach().numpy(), b.weight.detach().numpy())
    b.load_state_dict(sd)
    np.testing.assert_array_equal(a.weight.detach().numpy(), b.weight.detach().numpy())


def test_cached_and_remove():
    lin = orthogonal(torch.nn.Linear(4, 4))
    calls = []
    lin.parametrizations.weight[0].register_forward_hook(lambda *a: calls.append(1))
    with parametrize.cached():
        w1, w2 = lin.weight, lin.weight
    assert w1 is w2 and len(calls) == 1
    w = lin.weight.detach().clone()
    parametrize.remove_parametrizations(lin, "weight")
    assert type(lin) is torch.nn.Linear and isinstance(lin.weight, torch.nn.Parameter)
    np.testing.assert_array_equal(lin.weight.detach().numpy(), w.numpy())


def test_geqrf_and_householder_product_as_lapack():
    """_geqrf is LAPACK's dgeqrf (numpy's qr(mode='raw') returns its output); householder_product of it is Q."""
    A = np.random.default_rng(1).normal(size=(6, 4))
    h, tau = np.linalg.qr(A, mode="raw")
    X, t = _geqrf(torch.tensor(A))
    np.testing.assert_allclose(X.numpy(), h.T, atol=1e-12)
    np.testing.assert_allclose(t.numpy(), tau, atol=1e-12)
    Q = _householder_product(X, t).numpy()
    np.testing.assert_allclose(Q @ np.triu(X.numpy()[:4]), A, atol=1e-12)
