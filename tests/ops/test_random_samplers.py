"""poisson, binomial, _standard_gamma, _sample_dirichlet and the distributions built on them (Poisson, Binomial,
NegativeBinomial, Gamma, Chi2, StudentT, Beta, Dirichlet): PyTorch's seeded numbers, moments against the
formulas, log_prob against the formulas, rsample gradients against finite differences of the CDF (the implicit
reparameterization gradient), PyTorch's errors.

REF holds, per case, the SHA-256 of the result (float64 bytes) and its first values, printed by PyTorch 2.13 in
/work/venv-torch for the same code:

    /work/venv-torch/bin/python tests/ops/test_random_samplers.py      # prints REF from PyTorch
"""
import hashlib
import math
import sys

import numpy as np

try:
    import pytest
except ImportError:        # the PyTorch venv that prints REF has no pytest
    pytest = None

CPU_ONLY = True     # PyTorch's cpu random stream (conftest)


def cases(torch):
    D = torch.distributions
    t = torch.tensor

    def arr(x):
        return x.detach().numpy().astype(np.float64).ravel()

    def seeded(seed, f):
        def run():
            torch.manual_seed(seed)
            return np.concatenate([arr(f()), arr(torch.rand(3))])     # and where the stream stands after
        return run
    return {
        "poisson": seeded(0, lambda: torch.poisson(t([0.5, 3.0, 12.0, 100.0, 0.0, 9.99, 1e4] * 20))),
        "poisson64": seeded(1, lambda: torch.poisson(torch.rand(40, dtype=torch.float64) * 30)),
        "poisson16": seeded(1, lambda: torch.poisson(t([0.5, 4.0, 30.0] * 5, dtype=torch.float16))),
        "binomial": seeded(2, lambda: torch.binomial(t([0.0, 5, 10, 40, 100, 1000, 7.5, 30] * 10),
                                                     t([0.3, 0.5, 0.9, 0.05, 0.5, 0.7, 0.99, 1.0] * 10))),
        "binomial64": seeded(3, lambda: torch.binomial(torch.rand(30, dtype=torch.float64) * 200,
                                                       torch.rand(30, dtype=torch.float64))),
        "gamma": seeded(4, lambda: torch._standard_gamma(t([0.1, 0.5, 1.0, 2.5, 7.0, 50.0, 1e-3] * 10))),
        "gamma64": seeded(5, lambda: torch._standard_gamma(torch.rand(40, dtype=torch.float64) * 5)),
        "dirichlet": seeded(6, lambda: torch._sample_dirichlet(t([[0.5, 1.0, 3.0], [2.0, 2.0, 2.0]]))),
        "generator": lambda: arr(torch._standard_gamma(t([0.7, 3.0] * 4), generator=torch.Generator().manual_seed(9))),
        "D.Poisson": seeded(7, lambda: D.Poisson(t([1.0, 20.0])).sample((5,))),
        "D.Binomial": seeded(8, lambda: D.Binomial(t([[5.0], [10.0]]), logits=t([0.5, -0.8])).sample((3,))),
        "D.NegativeBinomial": seeded(9, lambda: D.NegativeBinomial(t([3.0, 10.0]), t([0.3, 0.7])).sample((4,))),
        "D.Gamma": seeded(10, lambda: D.Gamma(t([0.5, 3.0]), t([2.0, 0.5])).sample((3,))),
        "D.Chi2": seeded(11, lambda: D.Chi2(t([1.5, 4.0])).sample((3,))),
        "D.StudentT": seeded(12, lambda: D.StudentT(t([2.0, 5.0]), 1.0, 2.0).sample((3,))),
        "D.Beta": seeded(13, lambda: D.Beta(t([0.5, 3.0]), t([2.0, 0.5])).sample((3,))),
        "D.Dirichlet": seeded(14, lambda: D.Dirichlet(t([0.5, 1.0, 2.0])).sample((3,))),
        "D.Multinomial": seeded(15, lambda: D.Multinomial(10, t([0.2, 0.3, 0.5])).sample((4,))),
    }


REF = {
    'poisson': ('b00b9ba1a2e8fcbc', [2.0, 4.0, 13.0, 99.0, 0.0, 10.0]),
    'poisson64': ('5b6fc92500551f86', [1.0, 7.0, 9.0, 5.0, 16.0, 2.0]),
    'poisson16': ('b4759d1027923caf', [0.0, 2.0, 31.0, 0.0, 6.0, 21.0]),
    'binomial': ('1a40a3d9abbdfead', [0.0, 2.0, 8.0, 0.0, 46.0, 702.0]),
    'binomial64': ('554e8a44818ce75b', [6.821639130104096, 1.0, 0.0, 2.0, 16.0, 108.65012538414099]),
    'gamma': ('95085b7b975d5363', [0.001119239954277873, 0.00220283935777843, 0.048630330711603165, 3.7881667613983154, 9.222698211669922, 63.21943283081055]),
    'gamma64': ('cbbe6ccab6983c1e', [1.7081539812561366, 0.3308970775542337, 0.459365669882217, 0.9751773926081515, 0.5433446546855611, 3.7601204802136534]),
    'dirichlet': ('45550ac894afb828', [0.222177192568779, 0.024269631132483482, 0.7535531520843506, 0.24182605743408203, 0.5360184907913208, 0.22215545177459717]),
    'generator': ('b813a113c5d2f526', [1.348654866218567, 1.5879076719284058, 0.4895419776439667, 3.1817331314086914, 0.32040882110595703, 5.319305896759033]),
    'D.Poisson': ('ff5fe7c4bd5f492a', [0.0, 17.0, 3.0, 21.0, 1.0, 11.0]),
    'D.Binomial': ('48b74aabb384a1c5', [3.0, 1.0, 8.0, 4.0, 4.0, 1.0]),
    'D.NegativeBinomial': ('d7b19b664fbb1370', [0.0, 41.0, 1.0, 28.0, 0.0, 41.0]),
    'D.Gamma': ('cbace2ac0046b68b', [0.00887342169880867, 5.3337578773498535, 0.08686515688896179, 2.7761170864105225, 0.05742926523089409, 4.919931888580322]),
    'D.Chi2': ('21a9dbb880e83d5d', [4.834772109985352, 1.3823925256729126, 2.7659475803375244, 4.745448112487793, 0.017632633447647095, 0.7861981987953186]),
    'D.StudentT': ('e65b34df2ba71b93', [0.22702312469482422, -3.2274246215820312, 0.8531944751739502, 1.7646749019622803, 4.446180820465088, -2.1655828952789307]),
    'D.Beta': ('ecf52882fbfaa523', [0.027654482051730156, 0.7986584901809692, 0.016588479280471802, 0.3869456946849823, 0.03026759810745716, 0.9425230622291565]),
    'D.Dirichlet': ('095b58902a257ae6', [0.010732327587902546, 0.2660016417503357, 0.7232660055160522, 0.6258360147476196, 0.0325833298265934, 0.34158068895339966]),
    'D.Multinomial': ('601285edcdd6db48', [4.0, 2.0, 4.0, 1.0, 4.0, 5.0]),
}



def _digest(a):
    return hashlib.sha256(np.ascontiguousarray(a, np.float64).tobytes()).hexdigest()[:16]


if pytest is not None:
    import tgrad
    from tgrad.testing.opinfos.random import _betainc, _gamma_grad_ref, _lower_gamma

    D = tgrad.distributions

    @pytest.mark.parametrize("name", sorted(REF))
    def test_pytorch_numbers(name):
        got = cases(tgrad)[name]()
        digest, head = REF[name]
        np.testing.assert_array_equal(got[:len(head)], np.asarray(head), err_msg=name)
        assert _digest(got) == digest, name

    def _moments(d, n, k=5.0):
        """The mean of n draws within k standard errors of d.mean; the variance within k of its standard error
        (fourth moment estimated from the draws)."""
        s = np.asarray(d.sample((n,)).tolist(), dtype=np.float64)
        mean, var = np.asarray(d.mean.tolist()), np.asarray(d.variance.tolist())
        assert np.all(np.abs(s.mean(0) - mean) < k * np.sqrt(var / n)), (type(d).__name__, s.mean(0), mean)
        m4 = ((s - s.mean(0)) ** 4).mean(0)
        assert np.all(np.abs(s.var(0) - var) < k * np.sqrt((m4 - var ** 2) / n) + 1e-12), (type(d).__name__, s.var(0), var)
        assert bool(d.support.check(tgrad.tensor(s, dtype=d.mean.dtype)).all())

    @pytest.mark.parametrize("make", [
        lambda t: D.Poisson(t([0.3, 4.0, 15.0, 250.0])),
        lambda t: D.Binomial(t([3.0, 20.0, 100.0, 500.0, 50.0]), t([0.4, 0.5, 0.2, 0.9, 0.97])),
        lambda t: D.NegativeBinomial(t([2.0, 7.5]), t([0.4, 0.8])),
        lambda t: D.Gamma(t([0.3, 1.0, 4.0, 30.0]), t([2.0, 1.0, 0.5, 3.0])),
        lambda t: D.Chi2(t([1.0, 6.0])),
        lambda t: D.Beta(t([0.5, 3.0, 9.0]), t([2.0, 0.7, 9.0])),
        lambda t: D.Dirichlet(t([0.5, 2.0, 3.0])),
        lambda t: D.StudentT(t([9.0]), t([0.5]), t([2.0])),
    ], ids=["Poisson", "Binomial", "NegativeBinomial", "Gamma", "Chi2", "Beta", "Dirichlet", "StudentT"])
    def test_moments(make):
        tgrad.manual_seed(0)
        _moments(make(lambda v: tgrad.tensor(v, dtype=tgrad.float64)), 20000)

    def test_philox_generator_moments():
        """A cuda generator's stream (Philox counters, host samplers): the same distributions, another stream."""
        g = tgrad.Generator("cpu", _philox=True).manual_seed(3)
        rate = tgrad.tensor([2.0, 40.0]).expand(20000, 2)
        s = tgrad.poisson(rate, generator=g).numpy()
        assert np.all(np.abs(s.mean(0) - [2.0, 40.0]) < 5 * np.sqrt(np.array([2.0, 40.0]) / 20000))
        a = tgrad._standard_gamma(tgrad.tensor([0.5, 5.0]).expand(20000, 2), generator=g).numpy()
        assert np.all(np.abs(a.mean(0) - [0.5, 5.0]) < 5 * np.sqrt(np.array([0.5, 5.0]) / 20000))
        b = tgrad.binomial(tgrad.full((20000,), 50.0), tgrad.full((20000,), 0.3), generator=g).numpy()
        assert abs(b.mean() - 15.0) < 5 * math.sqrt(10.5 / 20000)
        g2 = tgrad.Generator("cpu", _philox=True).manual_seed(3)
        np.testing.assert_array_equal(tgrad.poisson(rate, generator=g2).numpy(), s)     # reproducible by seed

    def test_kl_divergences():
        """Binomial-Binomial (PyTorch 2.13 prints 0.8228284120559692, 3.8190860748291016), infinite where
        p.total_count > q.total_count, and Poisson || Binomial."""
        t = tgrad.tensor
        got = D.kl_divergence(D.Binomial(10, t([0.3, 0.6])), D.Binomial(10, t([0.5, 0.2])))
        np.testing.assert_allclose(got.numpy(), [0.8228284120559692, 3.8190860748291016], rtol=2e-6)
        assert D.kl_divergence(D.Binomial(12, t([0.3])), D.Binomial(10, t([0.5]))).tolist() == [math.inf]
        assert D.kl_divergence(D.Poisson(t([2.0])), D.Binomial(10, t([0.5]))).tolist() == [math.inf]
        with pytest.raises(NotImplementedError, match="q.total_count > p.total_count is not implemented"):
            D.kl_divergence(D.Binomial(3, t([0.3])), D.Binomial(10, t([0.5])))

    def test_log_prob_formulas():
        k = np.array([0.0, 3.0, 7.0, 10.0])
        n, p = 10.0, 0.35
        ref = [math.lgamma(n + 1) - math.lgamma(x + 1) - math.lgamma(n - x + 1) + x * math.log(p)
               + (n - x) * math.log1p(-p) for x in k]
        got = D.Binomial(tgrad.tensor(n, dtype=tgrad.float64), tgrad.tensor(p, dtype=tgrad.float64)).log_prob(
            tgrad.tensor(k, dtype=tgrad.float64))
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12)
        r, q = 2.5, 0.3
        ref = [math.lgamma(x + r) - math.lgamma(x + 1) - math.lgamma(r) + r * math.log1p(-q) + x * math.log(q) for x in k]
        got = D.NegativeBinomial(tgrad.tensor(r, dtype=tgrad.float64), tgrad.tensor(q, dtype=tgrad.float64)).log_prob(
            tgrad.tensor(k, dtype=tgrad.float64))
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12)
        lp = D.Binomial(4, tgrad.tensor([0.2, 0.7], dtype=tgrad.float64)).log_prob(
            D.Binomial(4, tgrad.tensor([0.2, 0.7], dtype=tgrad.float64)).enumerate_support())
        np.testing.assert_allclose(np.exp(lp.numpy()).sum(0), [1.0, 1.0], rtol=1e-12)

    def test_gamma_rsample_gradient_is_the_implicit_gradient():
        """x = rsample of Gamma(c, r): dx/dc = -(dP(c, r x)/dc) / pdf / r (central differences of the regularized
        incomplete gamma), dx/dr = -x / r."""
        c = tgrad.tensor([0.4, 1.3, 3.0, 12.0], dtype=tgrad.float64, requires_grad=True)
        r = tgrad.tensor([2.0, 0.5, 1.0, 3.0], dtype=tgrad.float64, requires_grad=True)
        tgrad.manual_seed(1)
        x = D.Gamma(c, r).rsample((3,))
        gc, gr = tgrad.autograd.grad(x.sum(), (c, r))
        xs = x.detach().numpy()
        cs, rs = c.detach().numpy(), r.detach().numpy()
        ref_c = sum(_gamma_grad_ref(cs, xs[i] * rs) / rs for i in range(3))
        np.testing.assert_allclose(gc.numpy(), ref_c, rtol=2e-3)
        np.testing.assert_allclose(gr.numpy(), (-xs / rs).sum(0), rtol=1e-12)

    def test_beta_rsample_gradient_is_the_implicit_gradient():
        """x = rsample of Beta(a, b): dx/da = -(dI_x(a, b)/da) / pdf(x) (central differences), likewise for b."""
        a = tgrad.tensor([0.7, 2.0, 9.0], dtype=tgrad.float64, requires_grad=True)
        b = tgrad.tensor([3.0, 2.5, 8.0], dtype=tgrad.float64, requires_grad=True)
        tgrad.manual_seed(2)
        x = D.Beta(a, b).rsample()
        ga, gb = tgrad.autograd.grad(x.sum(), (a, b))
        xs, av, bv = x.detach().numpy(), a.detach().numpy(), b.detach().numpy()
        for i in range(3):
            pdf = math.exp((av[i] - 1) * math.log(xs[i]) + (bv[i] - 1) * math.log1p(-xs[i]) + math.lgamma(av[i] + bv[i])
                           - math.lgamma(av[i]) - math.lgamma(bv[i]))
            h = 1e-6
            da = (_betainc(av[i] + h, bv[i], xs[i]) - _betainc(av[i] - h, bv[i], xs[i])) / (2 * h)
            db = (_betainc(av[i], bv[i] + h, xs[i]) - _betainc(av[i], bv[i] - h, xs[i])) / (2 * h)
            np.testing.assert_allclose(ga.numpy()[i], -da / pdf, rtol=2e-3)
            np.testing.assert_allclose(gb.numpy()[i], -db / pdf, rtol=2e-3)

    def test_studentt_and_chi2_rsample_carry_gradients():
        df = tgrad.tensor([3.0, 7.0], dtype=tgrad.float64, requires_grad=True)
        tgrad.manual_seed(4)
        y = D.StudentT(df).rsample((5,))
        (g,) = tgrad.autograd.grad((y * y).sum(), (df,))
        assert np.all(np.isfinite(g.numpy())) and np.all(g.numpy() != 0)
        tgrad.manual_seed(4)       # Chi2(df) = Gamma(df / 2, 1 / 2): the same draws and gradient
        c = tgrad.tensor([3.0, 7.0], dtype=tgrad.float64, requires_grad=True)
        z = D.Chi2(c).rsample((2,))
        (gc,) = tgrad.autograd.grad(z.sum(), (c,))
        zs = z.detach().numpy()
        np.testing.assert_allclose(gc.numpy(), sum(_gamma_grad_ref(c.detach().numpy() / 2, zs[i] / 2) for i in range(2)),
                                   rtol=2e-3)

    def test_lower_gamma_reference_is_right():
        """The test's own incomplete gamma: P(1, x) = 1 - e^-x and P(2, x) = 1 - (1 + x) e^-x."""
        for x in (0.3, 2.0, 9.0):
            assert abs(_lower_gamma(1.0, x) - (1 - math.exp(-x))) < 1e-14
            assert abs(_lower_gamma(2.0, x) - (1 - (1 + x) * math.exp(-x))) < 1e-14
        assert abs(_betainc(1.0, 1.0, 0.3) - 0.3) < 1e-14 and abs(_betainc(2.0, 1.0, 0.6) - 0.36) < 1e-14

    def test_gradients_and_errors_as_pytorch():
        x = tgrad.tensor([2.0, 3.0], requires_grad=True)
        y = tgrad.poisson(x)
        assert type(y.grad_fn).__name__ == "PoissonBackward0"
        y.sum().backward()
        assert x.grad.tolist() == [0.0, 0.0]
        y = tgrad.binomial(x, tgrad.tensor([0.3, 0.4]))
        with pytest.raises(RuntimeError, match="derivative for aten::binomial is not implemented"):
            y.sum().backward()
        a = tgrad.tensor([1.5], requires_grad=True)
        g = tgrad._standard_gamma_grad(a, tgrad.tensor([1.0]))
        with pytest.raises(NotImplementedError, match="the derivative for '_standard_gamma_grad' is not implemented."):
            g.sum().backward()
        assert type(tgrad._standard_gamma(a).grad_fn).__name__ == "StandardGammaBackward0"
        with pytest.raises(RuntimeError, match="invalid Poisson rate, expected rate to be non-negative"):
            tgrad.poisson(tgrad.tensor([1.0, -1.0]))
        with pytest.raises(NotImplementedError, match="\"poisson_cpu\" not implemented for 'Long'"):
            tgrad.poisson(tgrad.tensor([1]))
        with pytest.raises(NotImplementedError, match="\"gamma_cpu\" not implemented for 'Half'"):
            tgrad._standard_gamma(tgrad.tensor([1.0], dtype=tgrad.float16))
        with pytest.raises(ValueError, match="binomial only supports floating-point dtypes for count, got: Long"):
            tgrad.binomial(tgrad.tensor([3]), tgrad.tensor([0.5]))
        with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
            tgrad.binomial(tgrad.tensor([3.0]), tgrad.tensor([0.5], dtype=tgrad.float64))
        with pytest.raises(RuntimeError, match=r"The size of tensor a \(2\) must match the size of tensor b \(3\)"):
            tgrad.binomial(tgrad.tensor([3.0, 4.0]), tgrad.tensor([0.5, 0.5, 0.5]))
        with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both."):
            D.Binomial(3)


if __name__ == "__main__":
    import torch
    out = {}
    for name, f in cases(torch).items():
        a = f()
        out[name] = (_digest(a), [float(v) for v in a[:6]])
    print("REF = {")
    for k, v in out.items():
        print(f"    {k!r}: {v!r},")
    print("}")
