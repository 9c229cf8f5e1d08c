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


def test_binary_shortcut_keeps_an_int_p1():
    """pow's backward passes its exponent - 1 as an int p1: the shortcut launch gives the general launch's bits."""
    rng = np.random.default_rng(2)
    g = tgrad.tensor(rng.standard_normal((3, 4)).astype(np.float32))
    x = tgrad.tensor(rng.standard_normal((3, 4)).astype(np.float32))
    for p in (2, 3, -2):
        fn = KE.pow2_grad_fn if p == 2 else KE.pow_grad_fn
        a, b = empty((3, 4), x.dtype, x.device), empty((3, 4), x.dtype, x.device)
        KE.binary(fn, g, x, a, float(p), p - 1)
        KE._launch_map(KE.binary_kernel, fn, (g, x), b, (float(p), p - 1), None, b.dtype)
        assert a.cpu().numpy().tobytes() == b.cpu().numpy().tobytes()


def test_accumulate_into_existing_grad_skips_the_dispatcher(monkeypatch):
    """A gradient summed into an existing .grad (grad mode off) is ``.grad.add_(g)``'s sum without its dispatch:
    the same tensor object, 0 + (-0) = +0 as PyTorch's in-place add, one version bump; a broadcast .grad takes
    the general path (and its error)."""
    from tgrad.tensor import Tensor
    added = []
    add_ = Tensor.add_
    monkeypatch.setattr(Tensor, "add_", lambda self, *a, **k: added.append(1) or add_(self, *a, **k))
    w = tgrad.tensor([1.0, -2.0, 3.0], requires_grad=True)
    w.grad = tgrad.zeros(3)
    grad = w.grad
    v0 = grad._version
    (w * tgrad.tensor([-0.0, 0.5, -1.5])).sum().backward()
    assert w.grad is grad and grad._version == v0 + 1 and added == []
    assert np.signbit(grad.cpu().numpy()).tolist() == [False, False, True]     # +0, not the incoming -0
    np.testing.assert_array_equal(grad.cpu().numpy(), [0.0, 0.5, -1.5])
    (w * 2).sum().backward()
    np.testing.assert_array_equal(grad.cpu().numpy(), [2.0, 2.5, 0.5])
    assert added == []
    b = tgrad.tensor([1.0], requires_grad=True)
    b.grad = tgrad.zeros(1).expand(1)           # (size 1: no overlap) a view
    (b * 3).sum().backward()
    np.testing.assert_array_equal(b.grad.cpu().numpy(), [3.0])


def test_repeated_sum_reuses_its_launches(monkeypatch):
    """A sum/mean/sum_to_size/mul-sum of a geometry already planned calls the remembered launches (no planning),
    with the bits of a planned run, at any address; inputs the plan reads through a copy are never remembered."""
    from tgrad.kernels import reduce as KR
    from tgrad.ops import reduce as R
    rng = np.random.default_rng(3)
    xs = [tgrad.tensor(rng.standard_normal((80, 3)).astype(np.float32) * 1e3) for _ in range(3)]
    ys = [tgrad.tensor(rng.standard_normal((80, 1)).astype(np.float32)) for _ in range(3)]
    cases = [lambda x, y: x.sum(), lambda x, y: x.mean(0), lambda x, y: x.t().sum(1),
             lambda x, y: x.sum_to_size(1, 3), lambda x, y: R.mul_sum_to_size(x, y, (1, 3)),
             lambda x, y: x[::2].sum(0)]
    planned = []
    plan = KR.cascade_plan
    monkeypatch.setattr(KR, "cascade_plan", lambda *a: planned.append(1) or plan(*a))
    for case in cases:
        R._CASCADES.clear()
        fresh = []
        for x, y in zip(xs, ys):
            R._CASCADES.clear()
            fresh.append(case(x, y).cpu().numpy().tobytes())
        R._CASCADES.clear()
        del planned[:]
        again = [case(x, y).cpu().numpy().tobytes() for x, y in zip(xs, ys)]
        assert again == fresh
        assert len(planned) == 1
    z = [tgrad.tensor(rng.standard_normal((4, 5, 6)).astype(np.float32)) for _ in range(2)]
    R._CASCADES.clear()
    del planned[:]
    for t in z + z:     # dims 0 and 2 of a contiguous tensor: summed from a contiguous copy, planned every time
        np.testing.assert_allclose(t.sum((0, 2)).cpu().numpy(), t.cpu().numpy().sum((0, 2)), rtol=1e-5)
    assert len(planned) == 4 and not R._CASCADES


def test_plain_inplace_shortcut_keeps_the_checks(monkeypatch):
    """``x.sub_(y)`` / ``g.zero_()`` on plain tensors skip the dispatcher's general in-place path (the same values,
    one version bump each); a leaf requiring grad in grad mode, an expanded tensor and an inference tensor still
    get PyTorch's refusals, and a recorded in-place op still records."""
    from tgrad.autograd import dispatch
    checked = []
    check = dispatch._check_inplace
    monkeypatch.setattr(dispatch, "_check_inplace", lambda *a, **k: checked.append(1) or check(*a, **k))
    x = tgrad.tensor([1.0, 2.0, 3.0])
    y = tgrad.tensor([0.5, -0.0, 4.0])
    v = x._version
    x.sub_(y)
    np.testing.assert_array_equal(x.cpu().numpy(), [0.5, 2.0, -1.0])
    x.zero_()
    np.testing.assert_array_equal(x.cpu().numpy(), [0.0, 0.0, 0.0])
    p = tgrad.ones(3, requires_grad=True)
    with tgrad.no_grad():
        p.sub_(y)
    np.testing.assert_array_equal(p.detach().cpu().numpy(), [0.5, 1.0, -3.0])
    assert x._version == v + 2 and checked == []
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        p.sub_(y)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        tgrad.zeros(1).expand(3).sub_(y)
    with tgrad.inference_mode():
        t = tgrad.ones(3)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
        t.zero_()
    h = tgrad.ones(3, requires_grad=True) * 2
    h.sub_(y)
    assert h.grad_fn.name() == "SubBackward0"
