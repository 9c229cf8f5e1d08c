"""What real PyTorch programs hit (issue 14's "programs we do not name"): each test is a failure or gap one
of them met, checked against numpy, tgrad's own out-of-place path, or numbers printed by PyTorch 2.13."""
import numpy as np
import pytest

import tgrad as torch
import tgrad.nn as nn
import tgrad.nn.functional as F


# ------------------------------------------------------------------ in-place activations after Linear
_INPLACE = [
    lambda h: F.relu(h, inplace=True), lambda h: F.silu(h, inplace=True), lambda h: F.elu(h, inplace=True),
    lambda h: F.leaky_relu(h, 0.1, inplace=True), lambda h: F.hardtanh(h, inplace=True),
    lambda h: F.celu(h, 0.5, inplace=True), lambda h: F.rrelu(h, inplace=True), lambda h: F.hardswish(h, True),
    lambda h: F.mish(h, inplace=True), lambda h: F.threshold(h, 0.1, 0.0, inplace=True), lambda h: h.tanh_(),
]


@pytest.mark.parametrize("k", range(len(_INPLACE)))
def test_inplace_activation_after_linear(k):
    """nn.Linear -> nn.ReLU(inplace=True) (and every other in-place activation) backpropagates: linear kept
    its output for backward even without a fused activation, so the in-place op invalidated it."""
    act = _INPLACE[k]
    grads = []
    for inplace in (True, False):
        torch.manual_seed(0)
        lin = nn.Linear(3, 4)
        x = torch.randn(5, 3)
        h = lin(x)
        y = act(h) if inplace else act(h.clone())
        y.square().sum().backward()
        grads.append((lin.weight.grad.cpu().numpy(), lin.bias.grad.cpu().numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-6, atol=1e-7)


def test_inplace_relu_mlp_matches_pytorch():
    """The torchvision idiom Sequential(Linear, ReLU(inplace=True), Linear); PyTorch 2.13 printed the sums."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(inplace=True), nn.Linear(4, 2), nn.Tanh())
    m(torch.randn(2, 3)).sum().backward()
    np.testing.assert_allclose(m[0].weight.grad.cpu().numpy()[3], [-0.1280, -0.1232, -0.1476], atol=1e-4)
    assert float(m[0].weight.grad[:3].abs().sum()) == 0.0


# ------------------------------------------------------------------ distributions: transforms, Multinomial
import tgrad.distributions as D      # noqa: E402


def test_multinomial_matches_pytorch():
    """Multinomial samples PyTorch's counts (the same Categorical draws); log_prob/entropy as PyTorch printed."""
    torch.manual_seed(0)
    mn = D.Multinomial(5, torch.tensor([0.2, 0.3, 0.5]))
    assert mn.sample((2,)).tolist() == [[1.0, 1.0, 3.0], [0.0, 2.0, 3.0]]
    np.testing.assert_allclose(mn.log_prob(torch.tensor([1., 2., 2.])).item(), -2.0024805068969727, rtol=1e-6)
    np.testing.assert_allclose(mn.entropy().item(), 2.591808795928955, rtol=1e-6)
    m2 = D.Multinomial(4, logits=torch.tensor([[0.1, 0.2, -1.0], [1.0, 0.0, 0.5]]))
    np.testing.assert_allclose(m2.entropy().cpu().numpy(), [2.2604479789733887, 2.3289997577667236], rtol=1e-6)
    assert tuple(m2.batch_shape) == (2,) and tuple(m2.event_shape) == (3,)
    assert bool(m2.support.check(m2.sample((3,))).all())
    with pytest.raises(NotImplementedError, match="inhomogeneous total_count"):
        D.Multinomial(torch.tensor(3), torch.tensor([0.5, 0.5]))


def test_transformed_distribution_matches_pytorch():
    """Log-normal by Affine + Exp, a tanh-squashed Normal (SAC's policy), a logistic by inverse sigmoid;
    log_prob/cdf/icdf as PyTorch 2.13 printed them."""
    tr = D.TransformedDistribution(D.Normal(0., 1.), [D.transforms.AffineTransform(1., 2.), D.transforms.ExpTransform()])
    y = torch.tensor([0.5, 2.0, 9.0])
    np.testing.assert_allclose(tr.log_prob(y).cpu().numpy(), [-1.2772819995880127, -2.317002773284912, -3.988478660583496],
                               rtol=1e-6)
    np.testing.assert_allclose(tr.cdf(y).cpu().numpy(), [0.1986164152622223, 0.4390310049057007, 0.7252842783927917],
                               rtol=1e-6)
    np.testing.assert_allclose(tr.icdf(torch.tensor([0.2, 0.7])).cpu().numpy(), [0.5049769282341003, 7.75859260559082],
                               rtol=1e-6)
    sq = D.TransformedDistribution(D.Normal(torch.zeros(2), 1.), [D.transforms.TanhTransform(cache_size=1)])
    np.testing.assert_allclose(sq.log_prob(torch.tensor([0.3, -0.9])).cpu().numpy(), [-0.8725290894508362, -0.3419227600097656],
                               rtol=1e-6)
    a = sq.rsample()
    assert sq.transforms[0].inv(a) is sq.transforms[0]._cached_x_y[0]        # cache_size=1: the exact x back
    d = D.TransformedDistribution(D.Independent(D.Normal(torch.zeros(2), 1.), 1),
                                  [D.transforms.SigmoidTransform(), D.transforms.AffineTransform(0., 3.)])
    np.testing.assert_allclose(d.log_prob(torch.tensor([[1.0, 2.5], [0.2, 0.4]])).cpu().numpy(),
                               [-2.0923147201538086, -4.334187984466553], rtol=1e-6)
    assert tuple(d.event_shape) == (2,) and tuple(d.batch_shape) == ()


def test_transformed_rsample_gradient():
    """rsample through the transforms carries the gradient to the base's parameters: d/dmu of
    sum(exp(mu + eps)) is sum(exp(mu + eps))."""
    torch.manual_seed(0)
    mu = torch.zeros(3, requires_grad=True)
    ln = D.TransformedDistribution(D.Normal(mu, 1.), D.transforms.ExpTransform())
    z = ln.rsample()
    z.sum().backward()
    np.testing.assert_allclose(mu.grad.cpu().numpy(), z.detach().cpu().numpy(), rtol=1e-6)


def test_transforms_match_pytorch():
    sb = D.transforms.StickBreakingTransform()
    x = torch.tensor([0.1, -0.3])
    v = sb(x)
    np.testing.assert_allclose(v.cpu().numpy(), [0.35591307282447815, 0.2740960419178009, 0.36999091506004333], rtol=1e-6)
    np.testing.assert_allclose(sb.log_abs_det_jacobian(x, v).item(), -3.321622371673584, rtol=1e-6)
    np.testing.assert_allclose(sb.inv(v).cpu().numpy(), x.cpu().numpy(), rtol=1e-5)
    t = D.transforms.ComposeTransform([D.transforms.SoftplusTransform(), D.transforms.PowerTransform(torch.tensor(2.))])
    x = torch.tensor([-1., 0.5])
    np.testing.assert_allclose(t(x).cpu().numpy(), [0.09813288599252701, 0.9488259553909302], rtol=1e-6)
    np.testing.assert_allclose(t.log_abs_det_jacobian(x, t(x)).cpu().numpy(), [-1.7808308601379395, 0.1928052306175232],
                               rtol=1e-6)
    np.testing.assert_allclose(t.inv(t(x)).cpu().numpy(), x.cpu().numpy(), rtol=1e-5)
    assert D.transforms.ExpTransform() == D.transforms.ExpTransform() and t.bijective
    assert D.transforms.ExpTransform().inv.inv.__class__ is D.transforms.ExpTransform
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        D.transforms.ExpTransform(cache_size=2)
    with pytest.raises(ValueError, match="transforms must be a Transform or a list"):
        D.TransformedDistribution(D.Normal(0., 1.), [1])
    assert tuple(D.TransformedDistribution(D.Normal(torch.zeros(2, 3), 1.),
                                           D.transforms.ReshapeTransform((3,), (3, 1))).sample().shape) == (2, 3, 1)


# ------------------------------------------------------------------ linalg.cond, float() of a graph tensor
import warnings      # noqa: E402

CPU_ONLY = True     # values PyTorch printed on cpu, from its cpu random stream


def test_linalg_cond_matches_numpy():
    A = np.array([[1., 2.], [3., 4.]], np.float32)
    for p in (None, 2, -2, "fro", "nuc", 1, -1, np.inf, -np.inf):
        np.testing.assert_allclose(torch.linalg.cond(torch.tensor(A), p).item(), np.linalg.cond(A, p), rtol=1e-5)
    B = np.random.default_rng(0).standard_normal((3, 4, 4))
    np.testing.assert_allclose(torch.linalg.cond(torch.tensor(B), "fro").cpu().numpy(), np.linalg.cond(B, "fro"), rtol=1e-10)
    W = np.array([[1., 2, 3], [4, 5, 7]])
    np.testing.assert_allclose(torch.linalg.cond(torch.tensor(W)).item(), np.linalg.cond(W), rtol=1e-10)
    assert torch.linalg.cond(torch.zeros(2, 2), 1).item() == float("inf")        # singular: inf, as PyTorch
    with pytest.raises(RuntimeError, match=r"linalg.cond\(ord=1\): A must be batches of square matrices, but they "
                                           r"are 2 by 3 matrices"):
        torch.linalg.cond(torch.zeros(2, 3), 1)
    with pytest.raises(RuntimeError, match="linalg.cond got an invalid norm type: 3"):
        torch.linalg.cond(torch.eye(2), 3)
    with pytest.raises(RuntimeError, match="must have at least 2 dimensions"):
        torch.linalg.cond(torch.ones(2))


def test_float_of_requires_grad_tensor_warns_like_pytorch():
    """PyTorch 2.13 warns in float() of a tensor that requires grad (ReduceLROnPlateau.step(loss) shows it), not
    under no_grad, nor in item() or int()."""
    x = torch.tensor(2.0, requires_grad=True)
    with pytest.warns(UserWarning, match="Converting a tensor with requires_grad=True to a scalar"):
        assert float(x * 1) == 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with torch.no_grad():
            float(x)
        x.item()
        int(x)
        float(x.detach())


def test_combinations_matches_pytorch():
    a = torch.arange(4.)
    assert torch.combinations(a).tolist() == [[0., 1.], [0., 2.], [0., 3.], [1., 2.], [1., 3.], [2., 3.]]
    assert tuple(torch.combinations(a, 2, with_replacement=True).shape) == (10, 2)
    assert tuple(torch.combinations(a, 5).shape) == (0, 5) and tuple(torch.combinations(a, 0).shape) == (0,)
    b = torch.tensor([1., 2., 3.], requires_grad=True)
    torch.combinations(b, 3, with_replacement=True).prod(1).sum().backward()
    assert b.grad.tolist() == [32.0, 41.0, 52.0]          # PyTorch 2.13 printed these
    with pytest.raises(RuntimeError, match=r"Expect a 1D vector, but got shape \[2, 2\]"):
        torch.combinations(torch.ones(2, 2))


# ------------------------------------------------------------------ nn.utils.fusion
def test_fuse_bn_into_conv_and_linear():
    """fuse_conv_bn_eval / fuse_linear_bn_eval compute bn(layer(x)) in one layer (transpose: ConvTranspose)."""
    from tgrad.nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval
    torch.manual_seed(0)
    for layer, bn, shape, kw in ((nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), (4, 2, 6, 6), {}),
                                 (nn.ConvTranspose2d(3, 2, 2), nn.BatchNorm2d(2), (2, 3, 4, 4), {"transpose": True}),
                                 (nn.Linear(4, 5, bias=False), nn.BatchNorm1d(5), (8, 4), None)):
        x = torch.randn(*shape)
        bn(layer(x))
        bn(layer(x * 2))
        layer.eval()
        bn.eval()
        fused = fuse_linear_bn_eval(layer, bn) if kw is None else fuse_conv_bn_eval(layer, bn, **kw)
        assert isinstance(fused.weight, nn.Parameter) and fused is not layer
        np.testing.assert_allclose(fused(x).detach().cpu().numpy(), bn(layer(x)).detach().cpu().numpy(), atol=1e-5)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        fuse_conv_bn_eval(nn.Conv2d(1, 1, 1), nn.BatchNorm2d(1))


# ------------------------------------------------------------------ third derivative through nn.Linear
def test_pinn_third_order_through_linear():
    """A physics-informed net: u_xx by autograd.grad(create_graph=True) twice, then loss.backward() (third
    order through linear's grad-of-grad, which called linear without its bias argument and raised)."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 1))
    x = torch.tensor([[0.3], [-0.7]], dtype=torch.float64, requires_grad=True)
    net = net.double()

    def u_xx(x):
        u = net(x)
        u_x, = torch.autograd.grad(u.sum(), x, create_graph=True)
        return torch.autograd.grad(u_x.sum(), x, create_graph=True)[0]
    u_xx(x).pow(2).sum().backward()
    w = net[0].weight
    g = w.grad.clone()
    eps = 1e-6                 # central differences of the loss in w[0, 0]
    with torch.no_grad():
        w[0, 0] += eps
    up = u_xx(x).pow(2).sum().item()
    with torch.no_grad():
        w[0, 0] -= 2 * eps
    dn = u_xx(x).pow(2).sum().item()
    np.testing.assert_allclose(g[0, 0].item(), (up - dn) / (2 * eps), rtol=1e-5)


# ------------------------------------------------------------------ autograd.functional
def test_autograd_functional_matches_analytic():
    from tgrad.autograd.functional import hessian, hvp, jacobian, jvp, vhp, vjp
    x = torch.tensor([0.3, -1.2, 0.5], dtype=torch.float64)
    xn = x.cpu().numpy()
    J = jacobian(lambda t: t.sin() * t.sum(), x)          # d/dx_j sin(x_i) S = cos(x_i) S delta_ij + sin(x_i)
    ref = np.diag(np.cos(xn) * xn.sum()) + np.sin(xn)[:, None]
    np.testing.assert_allclose(J.cpu().numpy(), ref, rtol=1e-12)
    H = hessian(lambda t: (t ** 3).sum() + t.prod(), x)
    p = xn.prod()
    ref = np.array([[p / (xn[i] * xn[j]) if i != j else 0.0 for j in range(3)] for i in range(3)]) + np.diag(6 * xn)
    np.testing.assert_allclose(H.cpu().numpy(), ref, rtol=1e-12)
    v = torch.tensor([1.0, 2.0, -1.0], dtype=torch.float64)
    np.testing.assert_allclose(vjp(lambda t: t.sin() * t.sum(), x, v)[1].cpu().numpy(), v.cpu().numpy() @ J.cpu().numpy(), rtol=1e-12)
    np.testing.assert_allclose(jvp(lambda t: t.sin() * t.sum(), x, v)[1].cpu().numpy(), J.cpu().numpy() @ v.cpu().numpy(), rtol=1e-12)
    np.testing.assert_allclose(hvp(lambda t: (t ** 3).sum() + t.prod(), x, v)[1].cpu().numpy(), ref @ v.cpu().numpy(), rtol=1e-12)
    np.testing.assert_allclose(vhp(lambda t: (t ** 3).sum() + t.prod(), x, v)[1].cpu().numpy(), v.cpu().numpy() @ ref, rtol=1e-12)
    a, b = torch.tensor([1.0, 2.0]), torch.tensor([0.5, -1.0])
    Jab = jacobian(lambda x, y: ((x ** 2 * y).sum(), x * y), (a, b))
    assert [[tuple(t.shape) for t in r] for r in Jab] == [[(2,), (2,)], [(2, 2), (2, 2)]]
    np.testing.assert_allclose(Jab[0][0].cpu().numpy(), [1.0, -4.0])
    assert float(jacobian(lambda t: t.new_zeros(2), x).abs().sum()) == 0.0
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not require gradients"):
        jacobian(lambda t: t.new_zeros(2), x, strict=True)
    w = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)          # create_graph: differentiable in w
    jacobian(lambda t: (t * w).sum(), x.float(), create_graph=True).sum().backward()
    np.testing.assert_allclose(w.grad.cpu().numpy(), [1.0, 1.0, 1.0])


# ------------------------------------------------------------------ histogram
def test_histogram_matches_numpy_and_pytorch():
    r = torch.tensor([0.1, 0.5, 0.5, 0.9, 1.0, -0.2, 2.0])
    h = torch.histogram(r, bins=4)
    assert type(h).__name__ == "histogram" and h.hist.tolist() == [2., 2., 2., 1.]      # PyTorch 2.13's
    np.testing.assert_allclose(h.bin_edges.cpu().numpy(), [-0.2, 0.35, 0.9, 1.45, 2.0], rtol=1e-6)
    d = torch.histogram(r, bins=3, range=(0., 1.), density=True)
    np.testing.assert_allclose(d.hist.cpu().numpy(), [0.6, 1.2, 1.2], rtol=1e-6)
    assert torch.histogram(r, bins=torch.tensor([0., 0.5, 1.]), weight=torch.ones(7) * 2).hist.tolist() == [2., 8.]
    assert torch.histogram(torch.ones(3), bins=2).bin_edges.tolist() == [0.5, 1.0, 1.5]
    x = np.random.default_rng(0).standard_normal(500)
    ref, edges = np.histogram(x, bins=7)
    got = torch.histogram(torch.tensor(x), 7)
    np.testing.assert_array_equal(got.hist.cpu().numpy(), ref)
    np.testing.assert_allclose(got.bin_edges.cpu().numpy(), edges, rtol=1e-12)
    with pytest.raises(NotImplementedError, match="\"histogramdd\" not implemented for 'Long'"):
        torch.histogram(torch.tensor([1, 2]), bins=2)
