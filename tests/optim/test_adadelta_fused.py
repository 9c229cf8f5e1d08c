"""Adadelta's fused step (``adadelta_step``, one multi-tensor launch per group) against PyTorch's single-tensor
update written op for op with tgrad's in-place tensor ops (the same roundings): bit-identical in float32 over several steps,
with weight decay and maximize, on tensors of one element to several blocks, more tensors than one launch holds."""
import numpy as np
import pytest

import tgrad
from tgrad.kernels.optim import MAX_TENSORS
from tgrad.kernels.runtime import COUNTER

SHAPES = [(1,), (7,), (33, 5), (70000,), (3, 4, 5)] + [(11,)] * MAX_TENSORS


def _op_by_op(ps, grads, lr, rho, eps, weight_decay, maximize):
    """torch/optim/adadelta.py's _single_tensor_adadelta, one in-place op at a time."""
    sqs = [tgrad.zeros_like(p) for p in ps]
    accs = [tgrad.zeros_like(p) for p in ps]
    with tgrad.no_grad():
        for gs in grads:
            for p, g, sq, acc in zip(ps, gs, sqs, accs):
                g = -g if maximize else g
                if weight_decay != 0:
                    g = g.add(p, alpha=weight_decay)
                sq.mul_(rho).addcmul_(g, g, value=1 - rho)
                std = sq.add(eps).sqrt_()
                delta = acc.add(eps).sqrt_()
                delta.div_(std).mul_(g)
                acc.mul_(rho).addcmul_(delta, delta, value=1 - rho)
                p.add_(delta, alpha=-lr)
    return ps, sqs, accs


@pytest.mark.parametrize("dtype", [tgrad.float32, tgrad.float64])
@pytest.mark.parametrize("kw", [{}, {"lr": 0.5, "rho": 0.8, "eps": 1e-5, "weight_decay": 0.1, "maximize": True}])
def test_fused_adadelta_is_bit_identical_to_the_single_tensor_ops(dtype, kw, device):
    rng = np.random.default_rng(1)
    p0 = [rng.standard_normal(s) for s in SHAPES]
    grads = [[tgrad.tensor(rng.standard_normal(s), dtype=dtype, device=device) for s in SHAPES] for _ in range(4)]
    ps = [tgrad.tensor(a, dtype=dtype, device=device, requires_grad=True) for a in p0]
    opt = tgrad.optim.Adadelta(ps, **kw)
    COUNTER.counts.clear()
    COUNTER.enabled = True
    try:
        for gs in grads:
            for p, g in zip(ps, gs):
                p.grad = g
            opt.step()
    finally:
        COUNTER.enabled = False
    assert COUNTER.counts["multi_tensor_kernel"] == 4 * 2      # 13 tensors: two launches a step
    full = dict({"lr": 1.0, "rho": 0.9, "eps": 1e-6, "weight_decay": 0, "maximize": False}, **kw)
    want, sqs, accs = _op_by_op([tgrad.tensor(a, dtype=dtype, device=device) for a in p0], grads, **full)
    # float64: the elementwise kernels take a float64 scalar as two fp32 halves (48 bits), the fused one exactly
    same = np.testing.assert_array_equal if dtype is tgrad.float32 else (
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-14, atol=0))
    for p, w, sq, acc in zip(ps, want, sqs, accs):
        same(p.detach().cpu().numpy(), w.cpu().numpy())
        same(opt.state[p]["square_avg"].cpu().numpy(), sq.cpu().numpy())
        same(opt.state[p]["acc_delta"].cpu().numpy(), acc.cpu().numpy())
        assert opt.state[p]["step"].item() == 4.0


def test_adadelta_param_groups_use_their_own_hyper_parameters():
    a = tgrad.ones(5, requires_grad=True)
    b = tgrad.ones(5, requires_grad=True)
    opt = tgrad.optim.Adadelta([{"params": [a]}, {"params": [b], "lr": 0.25}], lr=1.0)
    a.grad = tgrad.full((5,), 2.0)
    b.grad = tgrad.full((5,), 2.0)
    opt.step()
    # d = sqrt(eps) / sqrt(0.1 * 4 + eps) * 2: the second group moves a quarter as far
    da, db = 1 - a.detach().cpu().numpy(), 1 - b.detach().cpu().numpy()
    np.testing.assert_allclose(da, np.sqrt(1e-6) / np.sqrt(0.4 + 1e-6) * 2, rtol=1e-4)     # (1 - p: cancellation)
    np.testing.assert_allclose(db, da / 4, rtol=1e-4)
