"""gru_layer / rnn_layer (a whole GRU / Elman RNN layer-direction per launch): the fused backward against
the per-step backward create_graph runs, and the modules launching one kernel per layer-direction.

The ops' values and gradients against numpy are their OpInfos' (tgrad/testing/opinfos/rnn.py); the modules
against PyTorch's numbers are tests/ops/test_rnn.py's.
"""
import numpy as np
import pytest

import tgrad
from tgrad.kernels.runtime.launcher import COUNTER


@pytest.mark.parametrize("op,kw", [("gru_layer", {}), ("gru_layer", {"batch_first": True, "reverse": True}),
                                   ("rnn_layer", {}), ("rnn_layer", {"nonlinearity": "relu", "reverse": True}),
                                   ("rnn_layer", {"batch_first": True})])
def test_fused_backward_matches_per_step_backward(device, op, kw):
    """One <op>_backward launch (+ mm and sum for W_hh, b_hh) normally; under create_graph the same gradients
    from per-step ops (twice differentiable)."""
    rng = np.random.default_rng(0)
    T, B, H = 5, 3, 4
    G = 3 if op == "gru_layer" else 1
    bf = kw.get("batch_first", False)
    shapes = [(B, T, G * H) if bf else (T, B, G * H), (G * H, H), (G * H,), (B, H)]
    args = [tgrad.tensor(rng.normal(size=s) * 0.5, device=device, requires_grad=True) for s in shapes]
    gy = tgrad.tensor(rng.normal(size=shapes[0][:2] + (H,)), device=device)
    gh = tgrad.tensor(rng.normal(size=(B, H)), device=device)

    def grads(create_graph):
        y, h = tgrad.autograd.dispatch.call(op, *args, **kw)[:2]
        return tgrad.autograd.grad((y, h), args, (gy, gh), create_graph=create_graph)
    COUNTER.enabled = True
    try:
        COUNTER.counts.clear()
        fused = grads(False)
        assert COUNTER.counts[f"{op}_backward_kernel"] == 1
        COUNTER.counts.clear()
        steps = grads(True)
        assert COUNTER.counts[f"{op}_backward_kernel"] == 0
        assert COUNTER.counts["gru_cell_backward_kernel"] == (T if op == "gru_layer" else 0)
    finally:
        COUNTER.enabled = False
    for a, b in zip(fused, steps):
        np.testing.assert_allclose(a.cpu().numpy(), b.detach().cpu().numpy(), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("cls,kw", [("GRU", {}), ("RNN", {"nonlinearity": "relu"}), ("RNN", {})])
def test_one_fused_launch_per_layer_direction(device, cls, kw):
    """2 layers x 2 directions: 4 recurrence launches forward, 4 backward; the gradients agree with the per-step
    path (a PackedSequence of full-length sequences runs it)."""
    tgrad.manual_seed(0)
    m = getattr(tgrad.nn, cls)(3, 5, num_layers=2, bidirectional=True, batch_first=True, **kw).to(device)
    x = tgrad.randn(4, 6, 3, device=device)
    h0 = tgrad.randn(4, 4, 5, device=device)
    kernel = "gru_layer" if cls == "GRU" else "rnn_layer"
    COUNTER.enabled = True
    try:
        COUNTER.counts.clear()
        y, h = m(x, h0)
        (y.sum() + (h * h).sum()).backward()
        assert COUNTER.counts[f"{kernel}_kernel"] == 4 and COUNTER.counts[f"{kernel}_backward_kernel"] == 4
    finally:
        COUNTER.enabled = False
    fused = [p.grad.cpu().numpy() for p in m.parameters()]
    m.zero_grad()
    packed = tgrad.nn.utils.rnn.pack_padded_sequence(x, [6] * 4, batch_first=True)
    yp, hp = m(packed, h0)
    yp, _ = tgrad.nn.utils.rnn.pad_packed_sequence(yp, batch_first=True)
    np.testing.assert_allclose(yp.detach().cpu().numpy(), y.detach().cpu().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hp.detach().cpu().numpy(), h.detach().cpu().numpy(), rtol=1e-5, atol=1e-6)
    (yp.sum() + (hp * hp).sum()).backward()
    for a, p in zip(fused, m.parameters()):
        np.testing.assert_allclose(a, p.grad.cpu().numpy(), rtol=1e-4, atol=1e-5)
