"""The eager host-time shortcuts (issue 18) give the results and errors of the general paths they skip."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.kernels import elementwise as KE
from tgrad.kernels.runtime import launcher, trace
from tgrad.tensor import empty


@pytest.mark.parametrize("target, bad", [([0, 1, 2, 3], 3), ([0, -1, 2, 1], -1), ([0, 2, 7, -5], 7)])
def test_cross_entropy_target_out_of_bounds(target, bad):
    x = tgrad.randn(4, 3)
    with pytest.raises(IndexError, match=f"^Target {bad} is out of bounds.$"):
        F.cross_entropy(x, tgrad.tensor(target))
    with pytest.raises(IndexError, match=f"^Target {bad} is out of bounds.$"):
        F.nll_loss(x, tgrad.tensor(target))


def test_cross_entropy_target_ignore_index_and_strided():
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((4, 3)).astype(np.float32)
    x = tgrad.tensor(xn)
    got = F.cross_entropy(x, tgrad.tensor([0, -100, 2, 1])).item()      # a negative ignore_index is no error
    logp = xn - np.log(np.exp(xn).sum(1, keepdims=True))
    np.testing.assert_allclose(got, -(logp[0, 0] + logp[2, 2] + logp[3, 1]) / 3, rtol=1e-6)
    t = tgrad.tensor([[0, 1], [2, 1], [1, 1], [0, 5]]).t()[1]         # non-contiguous: read through a copy
    assert not t.is_contiguous()
    with pytest.raises(IndexError, match="^Target 5 is out of bounds.$"):
        F.cross_entropy(x, t)
    assert F.cross_entropy(x, tgrad.tensor([[0, 1], [2, 1], [1, 1], [0, 2]]).t()[1]).item() == pytest.approx(
        -(logp[0, 1] + logp[1, 1] + logp[2, 1] + logp[3, 2]) / 4, rel=1e-6)


def test_bce_with_logits_reuses_its_launch(monkeypatch):
    """Forward and backward of a repeated loss build no new Launch (each was cached by its launch key)."""
    trace.clear_tapes()     # (far past the tape budget, late in a suite, an eviction drops cached launches too)
    x = tgrad.randn(5, 3, requires_grad=True)
    y = tgrad.rand(5, 3)
    for _ in range(2):      # (the second accumulates into x.grad)
        F.binary_cross_entropy_with_logits(x, y).backward()
    made = []
    init = launcher.Launch.__init__

    def counting(self, *args):
        made.append(args[0])
        init(self, *args)
    monkeypatch.setattr(launcher.Launch, "__init__", counting)
    for _ in range(3):
        F.binary_cross_entropy_with_logits(x, y).backward()
    assert made == []


@pytest.mark.parametrize("xs, ys", [((4, 5), (4, 5)), ((4, 1), (1, 5)), ((5,), (3, 1))])
def test_binary_and_unary_shortcuts_match_the_general_launch(xs, ys):
    rng = np.random.default_rng(1)
    x = tgrad.tensor(rng.standard_normal(xs).astype(np.float32))
    y = tgrad.tensor(rng.standard_normal(ys).astype(np.float32))
    shape = np.broadcast_shapes(xs, ys)
    a, b = empty(shape, x.dtype, x.device), empty(shape, x.dtype, x.device)
    KE.binary(KE.sub_fn, x, y, a, 0.75, 0.0)
    KE._launch_map(KE.binary_kernel, KE.sub_fn, (x, y), b, (0.75, 0.0), None, b.dtype)
    assert a.cpu().numpy().tobytes() == b.cpu().numpy().tobytes()
    # fma(y, -0.75, x): one rounding
    ref = x.cpu().numpy().astype(np.float64) - 0.75 * y.cpu().numpy().astype(np.float64)
    np.testing.assert_array_equal(a.cpu().numpy(), ref.astype(np.float32))
    xt = x.t() if x.dim() == 2 else x           # strided input
    u, v = empty(xt.shape, x.dtype, x.device), empty(xt.shape, x.dtype, x.device)
    KE.unary(KE.neg_fn, xt, u)
    KE._launch_map(KE.unary_kernel, KE.neg_fn, (xt,), v, (0.0, 0.0, 0.0), None, xt.dtype)
    assert u.cpu().numpy().tobytes() == v.cpu().numpy().tobytes()
    np.testing.assert_array_equal(u.cpu().numpy(), -xt.cpu().numpy())
