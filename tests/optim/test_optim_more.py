"""Adadelta, Adamax, NAdam, RAdam: 6 steps against float64 numpy references of PyTorch's algorithms,
hyper-parameter errors, maximize, state_dict round trips, frozen parameters."""
import copy

import numpy as np
import pytest

import tgrad

RNG = np.random.default_rng(0)
P0 = RNG.standard_normal(37)
GRADS = [RNG.standard_normal(37) for _ in range(6)]


def _adadelta(p, gs, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0):
    v, u = np.zeros_like(p), np.zeros_like(p)
    for g in gs:
        g = g + weight_decay * p
        v = rho * v + (1 - rho) * g * g
        d = np.sqrt(u + eps) / np.sqrt(v + eps) * g
        u = rho * u + (1 - rho) * d * d
        p = p - lr * d
    return p


def _adamax(p, gs, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0):
    m, u = np.zeros_like(p), np.zeros_like(p)
    for t, g in enumerate(gs, 1):
        g = g + weight_decay * p
        m = m + (1 - betas[0]) * (g - m)
        u = np.maximum(betas[1] * u, np.abs(g) + eps)
        p = p - lr / (1 - betas[0] ** t) * m / u
    return p


def _nadam(p, gs, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3, decoupled=False):
    m, v, prod = np.zeros_like(p), np.zeros_like(p), 1.0
    for t, g in enumerate(gs, 1):
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        mu = betas[0] * (1 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = betas[0] * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        prod = float(np.float32(prod) * np.float32(mu))   # PyTorch keeps mu_product in float32
        m = m + (1 - betas[0]) * (g - m)
        v = betas[1] * v + (1 - betas[1]) * g * g
        d = np.sqrt(v / (1 - betas[1] ** t)) + eps
        p = p - lr * (1 - mu) / (1 - prod) * g / d - lr * mu_next / (1 - prod * mu_next) * m / d
    return p


def _radam(p, gs, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled=False):
    m, v = np.zeros_like(p), np.zeros_like(p)
    rho_inf = 2 / (1 - betas[1]) - 1
    for t, g in enumerate(gs, 1):
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = m + (1 - betas[0]) * (g - m)
        v = betas[1] * v + (1 - betas[1]) * g * g
        mh = m / (1 - betas[0] ** t)
        bc2 = 1 - betas[1] ** t
        rho_t = rho_inf - 2 * t * betas[1] ** t / bc2
        if rho_t > 5:
            r = np.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            p = p - lr * mh * r * np.sqrt(bc2) / (np.sqrt(v) + eps)
        else:
            p = p - lr * mh
    return p


CASES = [
    ("Adadelta", {}, _adadelta, {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "weight_decay": 0.1}, _adadelta, {"lr": 0.5, "rho": 0.8, "weight_decay": 0.1}),
    ("Adamax", {}, _adamax, {}),
    ("Adamax", {"lr": 0.01, "weight_decay": 0.1}, _adamax, {"lr": 0.01, "weight_decay": 0.1}),
    ("NAdam", {}, _nadam, {}),
    ("NAdam", {"weight_decay": 0.1, "decoupled_weight_decay": True}, _nadam, {"weight_decay": 0.1, "decoupled": True}),
    ("RAdam", {}, _radam, {}),
    ("RAdam", {"weight_decay": 0.1}, _radam, {"weight_decay": 0.1}),
]


def _run(name, kw, dtype, steps=6, maximize=False, device="cpu"):
    p = tgrad.tensor(P0, dtype=dtype, device=device, requires_grad=True)
    opt = getattr(tgrad.optim, name)([p], maximize=maximize, **kw)
    for g in GRADS[:steps]:
        p.grad = tgrad.tensor(-g if maximize else g, dtype=dtype, device=device)
        opt.step()
    return p, opt


@pytest.mark.parametrize("name,kw,ref,rkw", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_matches_reference(name, kw, ref, rkw, device):
    want = ref(P0.copy(), GRADS, **rkw)
    p, _ = _run(name, kw, tgrad.float64, device=device)
    np.testing.assert_allclose(p.detach().cpu().numpy(), want, rtol=1e-12, atol=1e-14)
    p32, _ = _run(name, kw, tgrad.float32, device=device)
    np.testing.assert_allclose(p32.detach().cpu().numpy(), want, rtol=2e-5, atol=1e-6)
    pm, _ = _run(name, kw, tgrad.float64, maximize=True, device=device)     # maximize negates the gradient
    np.testing.assert_allclose(pm.detach().cpu().numpy(), want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["Adadelta", "Adamax", "NAdam", "RAdam"])
def test_state_dict_round_trip_continues_identically(name, device):
    p, opt = _run(name, {}, tgrad.float64, steps=3, device=device)
    q = tgrad.tensor(p.detach().cpu().numpy(), dtype=tgrad.float64, device=device, requires_grad=True)
    opt2 = getattr(tgrad.optim, name)([q])
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))    # (state tensors are shared otherwise, as in PyTorch)
    for g in GRADS[3:]:
        p.grad = tgrad.tensor(g, dtype=tgrad.float64, device=device)
        q.grad = tgrad.tensor(g, dtype=tgrad.float64, device=device)
        opt.step()
        opt2.step()
    if name == "NAdam":     # loading casts the float32 mu_product to the parameters' float64, as PyTorch does
        np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().cpu().numpy(), rtol=1e-9)
    else:
        np.testing.assert_array_equal(p.detach().cpu().numpy(), q.detach().cpu().numpy())


@pytest.mark.parametrize("name", ["Adadelta", "Adamax", "NAdam", "RAdam"])
def test_parameters_without_grad_are_skipped(name):
    a = tgrad.ones(3, requires_grad=True)
    b = tgrad.ones(3, requires_grad=True)
    opt = getattr(tgrad.optim, name)([a, b])
    a.grad = tgrad.ones(3)
    opt.step()
    assert b.tolist() == [1.0, 1.0, 1.0] and len(opt.state[b]) == 0 and a.tolist() != [1.0, 1.0, 1.0]


@pytest.mark.parametrize("name,kw,msg", [
    ("Adadelta", {"lr": -1}, "Invalid learning rate: -1"),
    ("Adadelta", {"rho": 1.5}, "Invalid rho value: 1.5"),
    ("Adamax", {"betas": (1.0, 0.9)}, "Invalid beta parameter at index 0: 1.0"),
    ("NAdam", {"momentum_decay": -1}, "Invalid momentum_decay value: -1"),
    ("RAdam", {"eps": -1}, "Invalid epsilon value: -1"),
])
def test_bad_hyper_parameters(name, kw, msg):
    with pytest.raises(ValueError, match=msg):
        getattr(tgrad.optim, name)([tgrad.ones(2, requires_grad=True)], **kw)
