"""What a second round of real PyTorch programs hit (issue 14, /tmp/progs5): module full backward hooks,
pdist, the einsum sublist format, unpad/unpack_sequence, packed-sequence dropout with batch_first, ...
Checked against autograd itself, numpy, or numbers printed by PyTorch 2.13."""
import numpy as np
import pytest

import tgrad as torch
import tgrad.nn as nn
import tgrad.nn.functional as F

CPU_ONLY = True     # some expectations are PyTorch-printed cpu random values


# ------------------------------------------------------------------ full backward hooks
class _Two(nn.Module):
    def forward(self, x, k, y=None):
        return x * k, x + (0 if y is None else y)


def test_full_backward_hooks_see_and_replace_gradients():
    """grad_output / grad_input as PyTorch 2.13 prints them (a pre-hook doubling grad_output[0])."""
    log = []
    m = _Two()
    m.register_full_backward_pre_hook(lambda mod, go: log.append([None if g is None else g.tolist() for g in go])
                                      or (go[0] * 2, go[1]))
    h = m.register_full_backward_hook(lambda mod, gi, go: log.append(
        ([None if g is None else g.tolist() for g in gi], [None if g is None else g.tolist() for g in go])))
    x = torch.tensor([1., 2.], requires_grad=True)
    a, b = m(x, 3.0)
    (a.sum() + 10 * b.sum()).backward()
    assert log == [[[1.0, 1.0], [10.0, 10.0]], ([[16.0, 16.0], None], [[2.0, 2.0], [10.0, 10.0]])]
    assert x.grad.tolist() == [16.0, 16.0]
    log.clear()
    x.grad = None
    a, _ = m(x, 3.0)
    a.sum().backward()      # the unused output's gradient is None, not zeros
    assert log == [[[1.0, 1.0], None], ([[6.0, 6.0], None], [[2.0, 2.0], None])]
    h.remove()
    log.clear()
    m(x, 3.0)[0].sum().backward()
    assert len(log) == 1    # only the pre-hook is left


def test_full_backward_hook_replaces_grad_input_and_matches_autograd():
    torch.manual_seed(0)
    lin = nn.Linear(3, 2)
    seen = {}

    def hook(mod, gi, go):
        seen["gi"], seen["go"] = gi[0].clone(), go[0].clone()
        return (gi[0] * 0,)
    lin.register_full_backward_hook(hook)
    z = torch.randn(4, 3, requires_grad=True)
    out = lin(z)
    g = torch.randn(4, 2)
    out.backward(g)
    np.testing.assert_allclose(seen["gi"].cpu().numpy(), (g @ lin.weight).detach().cpu().numpy(), rtol=1e-6)
    np.testing.assert_array_equal(seen["go"].cpu().numpy(), g.cpu().numpy())
    assert z.grad.abs().sum().item() == 0.0
    np.testing.assert_allclose(lin.weight.grad.cpu().numpy(), (g.t() @ z).detach().cpu().numpy(), rtol=1e-6)


def test_full_backward_hook_without_input_grad_warns_and_gets_none():
    lin = nn.Linear(2, 1)
    log = []
    lin.register_full_backward_hook(lambda mod, gi, go: log.append((gi, go[0].tolist())))
    with pytest.warns(UserWarning, match="no inputs require gradients"):
        lin(torch.tensor([[1., 2.]])).sum().backward()
    assert log == [((None,), [[1.0]])]
    with torch.no_grad():
        assert not lin(torch.ones(1, 2)).requires_grad     # no hooks without grad mode


# ------------------------------------------------------------------ pdist
def test_pdist_matches_numpy_and_pytorch_gradient():
    x = torch.tensor([[0., 0.], [0., 0.], [1., 2.]], requires_grad=True)
    d = torch.pdist(x)
    np.testing.assert_allclose(d.detach().cpu().numpy(), [0.0, 5 ** 0.5, 5 ** 0.5], rtol=1e-6)
    d.sum().backward()      # PyTorch 2.13: the zero distance contributes no gradient
    np.testing.assert_allclose(x.grad.cpu().numpy(), [[-0.4472, -0.8944], [-0.4472, -0.8944], [0.8944, 1.7889]],
                               atol=1e-4)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 3))
    for p in (1.0, 2.0, 3.0, float("inf")):
        want = [np.linalg.norm(a[i] - a[j], p) for i in range(5) for j in range(i + 1, 5)]
        np.testing.assert_allclose(F.pdist(torch.tensor(a), p).cpu().numpy(), want, rtol=1e-10)
    assert torch.pdist(torch.randn(1, 2)).shape == (0,)
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 1D"):
        torch.pdist(torch.randn(3))
    with pytest.raises(RuntimeError, match="pdist only supports floating-point dtypes"):
        torch.pdist(torch.arange(6).view(3, 2))


# ------------------------------------------------------------------ einsum sublist format
def test_einsum_sublist_format():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    A, B = torch.tensor(a), torch.tensor(b)
    np.testing.assert_allclose(torch.einsum(A, [0, 1], B, [1, 2], [0, 2]).cpu().numpy(), a @ b, rtol=1e-12)
    np.testing.assert_allclose(torch.einsum(A, [0, 1], B, [1, 2]).cpu().numpy(), a @ b, rtol=1e-12)
    np.testing.assert_allclose(torch.einsum(A, [30, 27], [27]).cpu().numpy(), a.sum(0), rtol=1e-12)
    c = rng.standard_normal((2, 3, 4))
    np.testing.assert_allclose(torch.einsum(torch.tensor(c), [..., 1], [...]).cpu().numpy(), c.sum(-1), rtol=1e-12)
    with pytest.raises(RuntimeError, match=r"not within the valid range \[0, 52\)"):
        torch.einsum(A, [0, 52])


# ------------------------------------------------------------------ rnn utils
def test_unpad_and_unpack_sequence_round_trip():
    from tgrad.nn.utils.rnn import pack_sequence, pad_sequence, unpack_sequence, unpad_sequence
    seqs = [torch.tensor([1., 2., 3.]), torch.tensor([4.]), torch.tensor([5., 6.])]
    assert [t.tolist() for t in unpack_sequence(pack_sequence(seqs, enforce_sorted=False))] == \
        [[1., 2., 3.], [4.], [5., 6.]]
    lengths = torch.tensor([3, 1, 2])
    for bf in (True, False):
        padded = pad_sequence(seqs, batch_first=bf)
        assert [t.tolist() for t in unpad_sequence(padded, lengths, batch_first=bf)] == [[1., 2., 3.], [4.], [5., 6.]]
        assert padded.shape == ((3, 3) if bf else (3, 3))


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
def test_packed_dropout_same_mask_with_batch_first(mode):
    """A packed batch's data is time-major: batch_first must not change the inter-layer dropout mask
    (it transposed the packed (N, H) data before)."""
    x = torch.randn(4, 5, 3)
    lens = torch.tensor([5, 4, 4, 2])
    outs = []
    for bf in (False, True):
        torch.manual_seed(0)
        rnn = getattr(nn, mode)(3, 4, num_layers=2, dropout=0.5, batch_first=bf)
        inp = x if bf else x.transpose(0, 1)
        packed = nn.utils.rnn.pack_padded_sequence(inp, lens, batch_first=bf)
        torch.manual_seed(1)
        outs.append(rnn(packed)[0].data)
    np.testing.assert_array_equal(outs[0].detach().cpu().numpy(), outs[1].detach().cpu().numpy())


def test_packed_lstm_dropout_matches_pytorch():
    """PyTorch 2.13 prints -1.389975905418396 for this program (dropout on the packed data)."""
    torch.manual_seed(0)
    lstm = nn.LSTM(3, 4, num_layers=2, dropout=0.5)
    x = torch.randn(5, 3, 3)
    p = nn.utils.rnn.pack_padded_sequence(x, torch.tensor([5, 4, 2]))
    torch.manual_seed(1)
    assert abs(lstm(p)[0].data.sum().item() - -1.389975905418396) < 2e-6


# ------------------------------------------------------------------ object collectives (2 gloo ranks)
def _objects_worker(rank, world, port, q):
    import os
    import tgrad.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    got = [None] * world
    dist.all_gather_object(got, {"rank": rank, "payload": "x" * (10 + 100 * rank)})
    objs = [("from", rank), [rank] * 3] if rank == 1 else [None, None]
    dist.broadcast_object_list(objs, src=1)
    gathered = [None] * world if rank == 0 else None
    dist.gather_object(rank * 10, gathered, dst=0)
    out = [None]
    dist.scatter_object_list(out, [{"to": r, "n": list(range(r + 3))} for r in range(world)] if rank == 0 else None,
                             src=0)
    q.put((rank, got, objs, gathered, out[0]))
    dist.destroy_process_group()


def test_object_collectives_on_two_gloo_ranks(monkeypatch):
    import socket
    import tgrad.multiprocessing as mp
    for var in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    q = mp.get_context("spawn").Queue()
    mp.spawn(_objects_worker, args=(2, port, q), nprocs=2, join=True)
    res = {r: rest for r, *rest in (q.get(timeout=30) for _ in range(2))}
    for rank in (0, 1):
        got, objs, gathered, out = res[rank]
        assert got == [{"rank": 0, "payload": "x" * 10}, {"rank": 1, "payload": "x" * 110}]
        assert objs == [("from", 1), [1, 1, 1]]
        assert gathered == ([0, 10] if rank == 0 else None)
        assert out == {"to": rank, "n": list(range(rank + 3))}


# ------------------------------------------------------------------ relaxed and half distributions
def test_relaxed_one_hot_categorical_matches_pytorch():
    """Samples, log_prob and gradient printed by PyTorch 2.13 for this program (torch.manual_seed(0))."""
    D = torch.distributions
    torch.manual_seed(0)
    logits = torch.tensor([[0.1, 0.5, -1.0], [2.0, 0.0, 0.3]], requires_grad=True)
    r = D.RelaxedOneHotCategorical(torch.tensor(0.5), logits=logits)
    s = r.rsample((2,))
    np.testing.assert_allclose(s.detach().cpu().numpy()[0], [[5.9794e-02, 9.3965e-01, 5.5310e-04],
                                                             [5.8372e-01, 3.1502e-02, 3.8477e-01]], rtol=1e-3)
    lp = r.log_prob(s)
    np.testing.assert_allclose(lp.detach().cpu().numpy(), [[5.2211, 0.4501], [6.6194, 6.3056]], atol=2e-4)
    (s[..., 0].sum() + lp.sum()).backward()
    np.testing.assert_allclose(logits.grad.cpu().numpy(), [[-3.4455, 7.4366, -3.9911], [5.9410, -3.8340, -2.1070]],
                               atol=2e-4)
    e = D.relaxed_categorical.ExpRelaxedCategorical(torch.tensor(0.5), probs=torch.tensor([0.2, 0.3, 0.5]))
    v = e.rsample()
    np.testing.assert_allclose(v.cpu().numpy(), [-4.2701, -1.9399, -0.1716], atol=2e-4)
    assert abs(e.log_prob(v).item() - -4.3322) < 2e-4
    assert r.batch_shape == (2,) and r.event_shape == (3,) and r.expand((4, 2)).sample().shape == (4, 2, 3)


def test_relaxed_bernoulli_log_prob_is_a_density():
    """LogitRelaxedBernoulli's density integrates to 1 (trapezoid over a wide grid), RelaxedBernoulli's samples
    lie in (0, 1) and their log_prob is the logit density minus the sigmoid's log-Jacobian."""
    D = torch.distributions
    lb = D.relaxed_bernoulli.LogitRelaxedBernoulli(torch.tensor(0.7, dtype=torch.float64),
                                                   logits=torch.tensor(0.4, dtype=torch.float64))
    grid = np.linspace(-60, 60, 200001)
    dens = np.exp(lb.log_prob(torch.tensor(grid)).cpu().numpy())
    assert abs(np.trapezoid(dens, grid) - 1.0) < 1e-6
    torch.manual_seed(0)
    rb = D.RelaxedBernoulli(torch.tensor([0.3]), probs=torch.tensor([0.2, 0.9]))
    x = rb.rsample((3,))
    assert x.shape == (3, 2) and bool(((x > 0) & (x < 1)).all())
    y = torch.logit(x.double())
    want = rb.base_dist.log_prob(y.float()).double() - (torch.log(x.double()) + torch.log1p(-x.double()))
    np.testing.assert_allclose(rb.log_prob(x).cpu().numpy(), want.cpu().numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["HalfNormal", "HalfCauchy"])
def test_half_distributions_match_scipy_forms(name):
    import math
    D = torch.distributions
    scale = torch.tensor([1.0, 2.5], dtype=torch.float64)
    d = getattr(D, name)(scale)
    x = np.array([0.5, 1.0])
    s = scale.cpu().numpy()
    if name == "HalfNormal":
        pdf = np.sqrt(2 / np.pi) / s * np.exp(-x ** 2 / (2 * s ** 2))
        cdf = np.array([math.erf(v) for v in x / (s * np.sqrt(2))])
    else:
        pdf = 2 / (np.pi * s * (1 + (x / s) ** 2))
        cdf = 2 / np.pi * np.arctan(x / s)
    t = torch.tensor(x, dtype=torch.float64)
    np.testing.assert_allclose(d.log_prob(t).cpu().numpy(), np.log(pdf), rtol=1e-12)
    np.testing.assert_allclose(d.cdf(t).cpu().numpy(), cdf, rtol=1e-12)
    np.testing.assert_allclose(d.icdf(d.cdf(t)).cpu().numpy(), x, rtol=1e-10)
    assert d.expand((4, 2)).sample().shape == (4, 2) and bool((d.sample((100,)) >= 0).all())
    lp = getattr(D, name)(scale, validate_args=False).log_prob(torch.tensor([-1.0, 0.5], dtype=torch.float64))
    assert lp[0].item() == -math.inf
