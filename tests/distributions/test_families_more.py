"""Gumbel, Pareto, Weibull, Kumaraswamy, InverseGamma, FisherSnedecor, ContinuousBernoulli, LogisticNormal,
VonMises, OneHotCategoricalStraightThrough: log_prob, moments, entropy, cdf/icdf and seeded samples against numbers
printed by PyTorch 2.13 (torch_refs_families_more.json, made by ``/work/venv-torch/bin/python
tests/distributions/test_families_more.py`` with float64 default dtype), rsample gradients by gradcheck."""
import json
import math
import os
import sys

import numpy as np
import pytest

CPU_ONLY = True     # seeded values are PyTorch's cpu random stream (conftest)
REFS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_refs_families_more.json")


def build(lib):
    t, Dl = lib.tensor, lib.distributions
    return {
        "gumbel": (Dl.Gumbel(t([0.5, -1.0]), t([1.5, 0.3])), t([0.2, -1.4])),
        "gumbel_scalar": (Dl.Gumbel(0.5, 2.0), t(0.2)),
        "pareto": (Dl.Pareto(t([1.0, 2.0]), t([3.0, 0.5])), t([1.5, 4.0])),
        "weibull": (Dl.Weibull(t([1.5, 0.5]), t([2.0, 0.7])), t([0.8, 1.3])),
        "kumaraswamy": (Dl.Kumaraswamy(t([2.0, 0.7]), t([3.0, 1.5])), t([0.3, 0.8])),
        "inverse_gamma": (Dl.InverseGamma(t([3.5, 1.5]), t([2.0, 0.5])), t([0.4, 1.3])),
        "fishersnedecor": (Dl.FisherSnedecor(t([3.0, 6.0]), t([5.0, 12.0])), t([0.7, 2.0])),
        "cont_bernoulli": (Dl.ContinuousBernoulli(t([0.2, 0.5, 0.8])), t([0.3, 0.5, 0.9])),
        "cont_bernoulli_logits": (Dl.ContinuousBernoulli(logits=t([-1.5, 0.001, 2.0])), t([0.1, 0.6, 0.95])),
        "logistic_normal": (Dl.LogisticNormal(t([0.3, -0.5]), t([0.8, 1.2])), t([0.2, 0.3, 0.5])),
        "von_mises": (Dl.VonMises(t([0.5, -1.0]), t([2.0, 5.0])), t([0.2, -1.4])),
        "onehot_st": (Dl.OneHotCategoricalStraightThrough(t([0.2, 0.5, 0.3])), t([0.0, 1.0, 0.0])),
    }


ATTRS = ("mean", "variance", "mode", "stddev")
METHODS = ("entropy", "cdf", "icdf")


def values(lib, names=None):
    """{family: {what: list}} for the families ``names`` (default all) of build(lib); what PyTorch raises is left
    out."""
    out = {}
    for name, (d, v) in build(lib).items():
        if names is not None and name not in names:
            continue
        r = {"log_prob": d.log_prob(v).tolist()}
        for a in ATTRS:
            try:
                r[a] = getattr(d, a).tolist()
            except NotImplementedError:
                pass
        for m in METHODS:
            try:
                r[m] = (d.entropy() if m == "entropy" else d.cdf(v) if m == "cdf" else
                        d.icdf(lib.full(d.batch_shape, 0.3))).tolist()
            except NotImplementedError:
                pass
        lib.manual_seed(3)
        r["sample"] = d.sample((4,)).tolist()
        if d.has_rsample:
            lib.manual_seed(5)
            r["rsample"] = d.rsample((2,)).tolist()
        out[name] = r
    return out


if __name__ == "__main__":          # the reference: run with PyTorch
    import torch
    torch.set_default_dtype(torch.float64)
    with open(REFS_PATH, "w") as f:
        json.dump(values(torch), f, indent=0, allow_nan=True)
    sys.exit(0)

import tgrad as torch  # noqa: E402
from tgrad.autograd import gradcheck  # noqa: E402

REFS = json.load(open(REFS_PATH))
NOT_YET = {}     # (name, method) pairs not implemented yet: none


@pytest.fixture(autouse=True)
def _float64():
    prev = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(prev)


@pytest.mark.parametrize("name", sorted(REFS))
def test_values_match_pytorch(name):
    got = values(torch, [name])[name]
    refs = {k: v for k, v in REFS[name].items() if (name, k) not in NOT_YET}
    assert sorted(got) == sorted(refs), name
    for what, ref in refs.items():
        np.testing.assert_allclose(np.asarray(got[what], dtype=np.float64), np.asarray(ref, dtype=np.float64),
                                   rtol=1e-12, atol=1e-14, equal_nan=True, err_msg=f"{name} {what}")


@pytest.mark.parametrize("name", sorted(REFS))
def test_expand_and_support(name):
    d, v = build(torch)[name]
    e = d.expand((3,) + tuple(d.batch_shape))
    assert tuple(e.batch_shape) == (3,) + tuple(d.batch_shape)
    got = np.asarray(e.log_prob(v).tolist())
    np.testing.assert_allclose(got, np.broadcast_to(np.asarray(d.log_prob(v).tolist()), got.shape), rtol=1e-13)
    s = d.sample((50,))
    assert tuple(s.shape) == (50,) + tuple(d.batch_shape) + tuple(d.event_shape)
    if name != "von_mises":        # (VonMises' support is all reals; its samples lie in [-pi, pi))
        assert bool(d.support.check(s).all()), name
    else:
        assert bool(((s >= -math.pi) & (s < math.pi)).all())


@pytest.mark.parametrize("cls,args", [("Gumbel", (0.5, 1.5)), ("Pareto", (1.5, 2.5)), ("Weibull", (1.5, 2.0)),
                                      ("Kumaraswamy", (2.0, 3.0)), ("ContinuousBernoulli", (0.3,))])
def test_rsample_gradients(cls, args):
    def f(*params):
        torch.manual_seed(0)
        return getattr(torch.distributions, cls)(*params).rsample((6,))
    assert gradcheck(f, [torch.tensor(a, requires_grad=True) for a in args])


def test_straight_through_gradient_is_the_probabilities():
    p = torch.tensor([0.2, 0.5, 0.3], requires_grad=True)
    torch.manual_seed(0)
    s = torch.distributions.OneHotCategoricalStraightThrough(p).rsample()
    (s * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert s.tolist() in ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0])
    c = np.array([1.0, 2.0, 3.0])      # d/dp of c . p / sum(p) at sum(p) = 1: c - c . p
    np.testing.assert_allclose(p.grad.tolist(), c - c @ np.array([0.2, 0.5, 0.3]), rtol=1e-12)


def test_errors():
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both."):
        torch.distributions.ContinuousBernoulli()
    with pytest.raises(ValueError, match="Expected parameter scale"):
        torch.distributions.Gumbel(torch.tensor([0.0]), torch.tensor([-1.0]), validate_args=True)
