"""tgrad.distributions against PyTorch 2.13: the reference numbers below were printed by /work/venv-torch
(torch.distributions, same seeds and calls); samples use the generator exactly as PyTorch does, so a seeded
program draws the same values.  Gradients: gradcheck in float64."""
import math

import numpy as np
import pytest

import tgrad as torch
from tgrad.autograd import gradcheck
from tgrad.distributions import (Bernoulli, Categorical, Distribution, Independent, Normal, Uniform, constraints,
                                 kl_divergence)

CPU_ONLY = True     # seeded values are PyTorch's cpu random stream (conftest)


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a.tolist() if hasattr(a, "tolist") else a, dtype=np.float64),
                               np.asarray(b, dtype=np.float64), rtol=tol, atol=tol)


def test_normal_sample_rsample_log_prob_match_pytorch():
    torch.manual_seed(0)
    loc = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    scale = torch.tensor([1.0, 0.5, 2.0], requires_grad=True)
    n = Normal(loc, scale)
    s = n.sample((2,))
    assert s.shape == (2, 3) and not s.requires_grad
    close(s, [[2.0409960746765137, -1.146714448928833, -2.357578754425049],
              [1.0684312582015991, -1.5422611236572266, -0.7971909046173096]])
    r = n.rsample((2,))
    assert r.requires_grad
    close(r, [[0.903346836566925, -0.5809868574142456, 0.5614848136901855],
              [0.09665647149085999, -1.2983176708221436, 2.3640730381011963]])
    lp = n.log_prob(r).sum()
    lp.backward()
    close(lp.item(), -6.480683326721191)
    close(loc.grad, [0.0, 0.0, 0.0])                 # the reparameterized sample moves with loc
    close(scale.grad, [-2.0, -4.0, -1.0])
    close(n.entropy(), [1.4189385175704956, 0.725791335105896, 2.1120858192443848])
    close(n.cdf(torch.zeros(3)), [0.3085375428199768, 0.9772498607635498, 0.15865525603294373])
    close(kl_divergence(n, Normal(torch.zeros(3), torch.ones(3))), [0.125, 0.8181471824645996, 2.8068528175354004])
    close(n.mean, [0.5, -1.0, 2.0])
    close(n.variance, [1.0, 0.25, 4.0])


def test_categorical_bernoulli_uniform_match_pytorch():
    torch.manual_seed(0)
    torch.randn(6)                                     # the draws of the Normal test above
    torch.randn(6)
    c = Categorical(logits=torch.tensor([[1.0, 2.0, 0.5], [0.1, 0.1, 3.0]]))
    cs = c.sample((4,))
    assert cs.tolist() == [[1, 2]] * 4 and cs.dtype == torch.int64
    close(c.log_prob(cs), [[-0.4643688201904297, -0.10440182685852051]] * 4)
    close(c.entropy(), [0.9059592485427856, 0.391898512840271])
    c2 = Categorical(probs=torch.tensor([0.2, 0.3, 0.5]))
    assert c2.sample((5,)).tolist() == [1, 2, 0, 2, 1]
    close(c2.logits, [-1.6094379425048828, -1.2039728164672852, -0.6931471824645996])
    close(kl_divergence(c2, Categorical(probs=torch.tensor([0.5, 0.25, 0.25]))).item(), 0.21801190078258514)
    assert c2.mode.item() == 2
    b = Bernoulli(probs=torch.tensor([0.1, 0.7, 0.5]))
    bs = b.sample((2,))
    assert bs.tolist() == [[0.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    close(b.log_prob(bs), [[-0.10536050796508789, -1.2039728164672852, -0.6931471824645996]] * 2)
    close(b.entropy(), [0.32508301734924316, 0.6108642816543579, 0.6931471824645996])
    close(kl_divergence(b, Bernoulli(logits=torch.tensor([0.0, 1.0, -1.0]))),
          [0.36806416511535645, 0.0023973695933818817, 0.12011447548866272], tol=1e-4)
    u = Uniform(torch.tensor([0.0, 1.0]), torch.tensor([2.0, 5.0]))
    us = u.rsample((3,))
    close(us, [[1.186344027519226, 1.4493889808654785], [0.3069138526916504, 1.9668328762054443],
               [1.4524730443954468, 3.804320812225342]])
    close(u.log_prob(us), [[-0.6931471824645996, -1.3862943649291992]] * 3)
    close(u.entropy(), [0.6931471824645996, 1.3862943649291992])
    close(u.variance, [0.3333333432674408, 1.3333333730697632])


def test_independent_shapes_log_prob_and_kl():
    ind = Independent(Normal(torch.zeros(2, 3), torch.ones(2, 3)), 1)
    assert ind.batch_shape == (2,) and ind.event_shape == (3,)
    close(ind.log_prob(torch.ones(2, 3)), [-4.256815433502197] * 2)
    assert ind.sample().shape == (2, 3) and ind.rsample((4,)).shape == (4, 2, 3)
    q = Independent(Normal(torch.ones(2, 3), 2 * torch.ones(2, 3)), 1)
    close(kl_divergence(ind, q), [1.3294415473937988] * 2)
    assert repr(ind) == "Independent(Normal(loc: tgrad.Size([2, 3]), scale: tgrad.Size([2, 3])), 1)"
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims <= len"):
        Independent(Normal(0.0, 1.0), 1)


def test_validation_errors_are_pytorchs():
    with pytest.raises(ValueError) as e:
        Normal(torch.tensor([0.0]), torch.tensor([-1.0]))
    assert str(e.value) == ("Expected parameter scale (Tensor of shape (1,)) of distribution Normal(loc: "
                            "tensor([0.]), scale: tensor([-1.])) to satisfy the constraint GreaterThan("
                            "lower_bound=0.0), but found invalid values:\ntensor([-1.])")
    with pytest.raises(ValueError, match=r"Either `probs` or `logits` must be specified, but not both."):
        Categorical()
    with pytest.raises(ValueError, match=r"Value is not broadcastable with batch_shape\+event_shape: "
                                         r"tgrad.Size\(\[4\]\) vs tgrad.Size\(\[3\]\)."):
        Normal(torch.zeros(3), torch.ones(3)).log_prob(torch.ones(4))
    with pytest.raises(ValueError, match=r"Interval\(lower_bound=0.0, upper_bound=1.0\)"):
        Bernoulli(probs=torch.tensor([1.5]))
    with pytest.raises(ValueError, match="within the support"):
        Bernoulli(probs=torch.tensor([0.5])).log_prob(torch.tensor([2.0]))
    with pytest.raises(NotImplementedError, match="No KL"):
        kl_divergence(Normal(0.0, 1.0), Uniform(0.0, 1.0))
    Normal(0.0, -1.0, validate_args=False)             # no check when asked
    try:
        Distribution.set_default_validate_args(False)
        Normal(0.0, -1.0)
    finally:
        Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        Distribution.set_default_validate_args(2)


def test_scalar_parameters_and_expand():
    n = Normal(0.0, 1.0)
    assert n.batch_shape == () and n.loc.dtype == torch.float32 and n.sample((3,)).shape == (3,)
    e = Normal(torch.zeros(1), torch.ones(1)).expand((4,))
    assert e.batch_shape == (4,) and e.sample().shape == (4,)
    b = Bernoulli(logits=torch.zeros(2)).expand((3, 2))
    assert b.sample().shape == (3, 2) and b.probs.shape == (3, 2)
    assert constraints.positive.check(torch.tensor([1.0, -1.0])).tolist() == [True, False]
    assert constraints.simplex.check(torch.tensor([0.5, 0.5])).item()
    assert Categorical(probs=torch.ones(2, 4)).enumerate_support().shape == (4, 2)


def test_gradcheck_log_prob_rsample_kl_float64():
    loc = torch.tensor([0.3, -0.7], dtype=torch.float64, requires_grad=True)
    scale = torch.tensor([0.8, 1.5], dtype=torch.float64, requires_grad=True)
    x = torch.tensor([0.1, 0.4], dtype=torch.float64)
    assert gradcheck(lambda m, s: Normal(m, s).log_prob(x), (loc, scale))
    q = Normal(torch.tensor([1.0, 0.2], dtype=torch.float64), torch.tensor([2.0, 0.5], dtype=torch.float64))
    assert gradcheck(lambda m, s: kl_divergence(Normal(m, s), q), (loc, scale))

    def rs(m, s):
        torch.manual_seed(3)
        return Normal(m, s).rsample((2,))
    assert gradcheck(rs, (loc, scale))
    logits = torch.tensor([[0.2, -1.0, 0.5]], dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda lg: Categorical(logits=lg).entropy(), (logits,))
    assert gradcheck(lambda lg: Categorical(logits=lg).log_prob(torch.tensor([2])), (logits,))
    p = torch.tensor([0.3, 0.6], dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda q: Bernoulli(probs=q).log_prob(torch.tensor([1.0, 0.0], dtype=torch.float64)), (p,))


def test_seeded_vae_step_prints_pytorchs_losses():
    """A small VAE (encoder -> Normal posterior -> rsample -> decoder, BCE + KL to N(0, 1)) trained 3 Adam
    steps; PyTorch 2.13 printed 4.648519039154053, 5.351089954376221, 5.204367637634277."""
    torch.manual_seed(0)
    nn = torch.nn
    enc, dec = nn.Linear(6, 4), nn.Linear(2, 6)
    opt = torch.optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=1e-2)
    x = torch.rand(5, 6)
    losses = []
    for _ in range(3):
        h = enc(x)
        mu, logvar = h[:, :2], h[:, 2:]
        qz = torch.distributions.Normal(mu, (0.5 * logvar).exp())
        recon = torch.sigmoid(dec(qz.rsample()))
        kl = torch.distributions.kl_divergence(qz, torch.distributions.Normal(torch.zeros_like(mu),
                                                                             torch.ones_like(mu))).sum(-1)
        loss = (nn.functional.binary_cross_entropy(recon, x, reduction="none").sum(-1) + kl).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    close(losses, [4.648519039154053, 5.351089954376221, 5.204367637634277], tol=1e-5)
    assert not math.isnan(losses[-1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_categorical_entropy_with_a_zero_probability(dtype):
    c = Categorical(probs=torch.tensor([0.5, 0.5, 0.0], dtype=dtype))
    close(c.entropy().item(), math.log(2))
    close(kl_divergence(c, c).item(), 0.0)


def test_multivariate_normal_matches_pytorch():
    """PPO-style policy MultivariateNormal(mean, diag_embed(var)) and a full covariance; PyTorch 2.13 printed
    these numbers for the same seeded calls (float32 Cholesky may differ in the last bit: tol 1e-5)."""
    from tgrad.distributions import MultivariateNormal
    torch.manual_seed(0)
    mean = torch.tensor([[0.5, -1.0], [0.0, 2.0], [1.0, 1.0]], requires_grad=True)
    m = MultivariateNormal(mean, torch.diag_embed(torch.tensor([0.3, 0.6]).expand(3, 2)))
    assert m.batch_shape == (3,) and m.event_shape == (2,)
    a = m.sample()
    close(a, [[1.3440383672714233, -1.227289080619812], [-1.193372130393982, 2.44030499458313],
              [0.4059826135635376, -0.08334743976593018]])
    lp = m.log_prob(a)
    close(lp, [-2.210862636566162, -3.515596389770508, -2.54660701751709])
    close(m.entropy(), [1.9804779291152954] * 3)
    lp.sum().backward()
    close(mean.grad, [[2.8134608268737793, -0.3788151144981384], [-3.9779067039489746, 0.733841598033905],
                      [-1.9800578355789185, -1.8055789470672607]], tol=1e-4)
    cov = torch.tensor([[2.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 0.7]])
    m2 = MultivariateNormal(torch.zeros(3), covariance_matrix=cov)
    r = m2.rsample((2,))
    close(r, [[0.5704185366630554, 0.926506519317627, -0.39902636408805847],
              [-0.5704138875007629, -0.7007047533988953, 0.007746219635009766]])
    close(m2.log_prob(r), [-3.520020008087158, -3.104764223098755])
    close(m2.scale_tril, np.linalg.cholesky(cov.numpy().astype(np.float64)))
    m3 = MultivariateNormal(torch.ones(3), scale_tril=torch.tensor([[1.0, 0, 0], [0.3, 0.8, 0], [0.1, -0.2, 0.5]]))
    close(kl_divergence(m2, m3).item(), 4.083221435546875, tol=1e-4)
    close(kl_divergence(m3, m2).item(), 1.4505486488342285, tol=1e-4)
    with pytest.raises(ValueError, match="to satisfy the constraint PositiveDefinite"):
        MultivariateNormal(torch.zeros(2), torch.tensor([[1.0, 2.0], [2.0, 1.0]]))
    loc = torch.tensor([0.2, -0.1], dtype=torch.float64, requires_grad=True)
    A = torch.tensor([[1.0, 0.3], [0.3, 0.8]], dtype=torch.float64, requires_grad=True)
    x = torch.tensor([[0.5, 0.4], [-1.0, 0.3]], dtype=torch.float64)
    assert gradcheck(lambda mu, c: MultivariateNormal(mu, (c + c.T) / 2).log_prob(x), (loc, A))
