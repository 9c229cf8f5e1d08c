"""Losses: PyTorch's numbers and errors, launch counts, the saved gradient the forward writes for the backward."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import dispatch
from tgrad.kernels.runtime import COUNTER


def call(name, *a, **k):
    return dispatch.call(name, *a, **k)


def T(a, device, dtype=None, requires_grad=False):
    return tgrad.tensor(np.asarray(a), dtype=dtype, device=device, requires_grad=requires_grad)


def test_seed000_bce_with_logits_matches_pytorch(device):
    """Seed 000's example with fixed w, b: values and gradients computed with PyTorch 2.13."""
    x = tgrad.ones(5, device=device)
    y = tgrad.zeros(3, device=device)
    w = T([[0.5, -1.2, 0.3], [1.1, 0.4, -0.7], [-0.2, 0.9, 1.5], [0.8, -0.3, 0.2], [-1.0, 0.6, 0.1]], device,
          tgrad.float32, requires_grad=True)
    b = T([0.1, -0.2, 0.3], device, tgrad.float32, requires_grad=True)
    z = (x.unsqueeze(0) * w.t()).sum(1) + b
    loss = call("binary_cross_entropy_with_logits", z, y, None, None)
    assert type(loss.grad_fn).__name__ == "BinaryCrossEntropyWithLogitsBackward0"
    np.testing.assert_allclose(loss.item(), 1.4023112058639526, rtol=1e-6)
    loss.backward()
    g = [0.2619450092315674, 0.18327797949314117, 0.28184494376182556]
    np.testing.assert_allclose(b.grad.cpu().numpy(), g, rtol=1e-5)
    np.testing.assert_allclose(w.grad.cpu().numpy(), np.tile(g, (5, 1)), rtol=1e-5)


def test_cross_entropy_matches_pytorch(device):
    x = T([[0.2, -1.0, 0.5], [1.5, 0.3, -0.4]], device, tgrad.float32, requires_grad=True)
    t = T([2, 0], device)
    loss = call("cross_entropy", x, t, None, label_smoothing=0.1)
    assert type(loss.grad_fn).__name__ == "CrossEntropyLossBackward0"
    # torch.nn.functional.cross_entropy(x, t, label_smoothing=0.1) and its gradient
    np.testing.assert_allclose(loss.item(), 0.605189859867096, rtol=1e-6)
    loss.backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), [[0.17193763, 0.04013986, -0.21207750], [-0.12202039, 0.08713880, 0.03488160]], atol=1e-6)


def test_cross_entropy_one_launch_each_way(device):
    rng = np.random.default_rng(0)
    x = T(rng.normal(size=(64, 10)), device, tgrad.float32, requires_grad=True)
    t = T(rng.integers(0, 10, 64), device)
    w = T(rng.uniform(0.5, 2, 10), device, tgrad.float32)
    for kw in [dict(), dict(reduction="none"), dict(reduction="sum", label_smoothing=0.1)]:
        COUNTER.enabled = True
        try:
            COUNTER.counts.clear()
            loss = call("cross_entropy", x, t, w, **kw)
            assert sum(COUNTER.counts.values()) == 1, dict(COUNTER.counts)
            go = tgrad.ones(loss.shape, device=device)
            COUNTER.counts.clear()
            (gx,) = tgrad.autograd.grad(loss, x, go)
            assert dict(COUNTER.counts) == {"cross_entropy_backward_kernel": 1}
        finally:
            COUNTER.enabled = False
        p = np.exp(x.detach().cpu().numpy() - x.detach().cpu().numpy().max(1, keepdims=True))
        assert gx.shape == x.shape and np.isfinite(gx.cpu().numpy()).all() and p.shape == gx.shape


@pytest.mark.parametrize("args,exc,msg", [
    ((3, 5), IndexError, "Target 5 is out of bounds."),
    ((3, -1), IndexError, "Target -1 is out of bounds."),
])
def test_cross_entropy_target_out_of_bounds(device, args, exc, msg):
    x = T(np.zeros((3, 5)), device, tgrad.float32)
    t = T([0, 1, args[1]], device)
    with pytest.raises(exc, match=msg):
        call("cross_entropy", x, t, None)
    with pytest.raises(exc, match=msg):
        call("nll_loss", x, t, None)


def test_loss_shape_errors(device):
    x = T(np.zeros((3, 5)), device, tgrad.float32)
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target batch_size \(2\)\."):
        call("cross_entropy", x, T([1, 0], device), None)
    with pytest.raises(ValueError, match=r"Target size \(tgrad.Size\(\[5\]\)\) must be the same as input size "
                                         r"\(tgrad.Size\(\[3, 5\]\)\)"):
        call("binary_cross_entropy_with_logits", x, T(np.zeros(5), device, tgrad.float32), None, None)
    with pytest.raises(ValueError, match=r"Using a target size \(tgrad.Size\(\[5\]\)\) that is different"):
        call("binary_cross_entropy", x, T(np.zeros(5), device, tgrad.float32), None)
    with pytest.warns(UserWarning, match=r"Using a target size \(tgrad.Size\(\[5\]\)\) that is different to the "
                                         r"input size \(tgrad.Size\(\[3, 5\]\)\)"):
        call("mse_loss", x, T(np.zeros(5), device, tgrad.float32))
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        call("mse_loss", x, x, reduction="bad")
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 5 classes"):
        call("cross_entropy", x, T([0, 1, 2], device), T(np.ones(2), device, tgrad.float32))


def test_class_index_loss_weight_is_not_differentiable(device):
    """PyTorch: nll_loss (so cross_entropy with class indices) refuses a weight that requires grad, while
    recording; probability targets differentiate the weight (checked by the cross_entropy_probs OpInfo)."""
    w = T(np.ones(3), device, tgrad.float64, requires_grad=True)
    for shape, fn in [((2, 3), "nll_loss_forward"), ((2, 3, 4), "nll_loss2d_forward")]:
        x = T(np.zeros(shape), device, tgrad.float64, requires_grad=True)
        t = T(np.zeros((2,) + shape[2:], np.int64), device)
        for name in ("cross_entropy", "nll_loss"):
            with pytest.raises(RuntimeError, match=f"The function '{fn}' is not differentiable with respect to "
                                                   "argument 'weight'. This input cannot have requires_grad True."):
                call(name, x, t, w)
        with tgrad.no_grad():
            np.testing.assert_allclose(call("cross_entropy", x, t, w).item(), np.log(3))


def test_pos_weight_is_not_differentiable(device):
    """PyTorch refuses a pos_weight that requires grad while recording (tgrad computes none for it)."""
    x = T(np.zeros((2, 3)), device, tgrad.float64, requires_grad=True)
    y = T(np.ones((2, 3)), device, tgrad.float64)
    pw = T(np.full(3, 2.0), device, tgrad.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="The function 'binary_cross_entropy_with_logits' is not differentiable "
                                           "with respect to argument 'pos_weight'. This input cannot have "
                                           "requires_grad True."):
        F.binary_cross_entropy_with_logits(x, y, pos_weight=pw)
    with tgrad.no_grad():
        np.testing.assert_allclose(F.binary_cross_entropy_with_logits(x, y, pos_weight=pw).item(), 2 * np.log(2))


@pytest.mark.parametrize("dtype", [tgrad.float32, tgrad.float64])
def test_binary_cross_entropy_range_errors(device, dtype):
    nan = float("nan")
    cases = [([0.5, 1.5], [1.0, 0.0], "input"), ([-0.1, 0.5], [1.0, 0.0], "input"),
             ([nan, 0.5], [1.0, 0.0], "input"), ([0.3, 0.5], [1.5, 0.0], "target"),
             ([0.3, 0.5], [-0.5, 0.0], "target"), ([0.3, 0.5], [nan, 0.0], "target"),
             ([0.5, 2.0], [-1.0, 0.5], "target"), ([2.0, 0.5], [0.5, -1.0], "input")]    # the first bad element wins
    for x, y, which in cases:
        xt = T(x, device, dtype, requires_grad=True)
        with pytest.raises(RuntimeError, match=f"^all elements of {which} should be between 0 and 1$"):
            F.binary_cross_entropy(xt, T(y, device, dtype))
        assert xt.grad is None
    out = F.binary_cross_entropy(T([0.0, 1.0], device, dtype), T([1.0, 0.0], device, dtype))   # the bounds pass
    assert out.item() == 100.0                                                          # logs clamped at -100


def test_cross_entropy_all_ignored_is_nan(device):
    x = T(np.zeros((2, 3)), device, tgrad.float32)
    assert np.isnan(call("cross_entropy", x, T([-100, -100], device), None).item())


def test_cross_entropy_large_logits_keep_precision(device):
    x = T([[1000.0, 1000.0, -1000.0], [0.0, 1e4, 0.0]], device, tgrad.float32)
    loss = call("cross_entropy", x, T([0, 1], device), None, reduction="none")
    np.testing.assert_allclose(loss.cpu().numpy(), [np.log(2), 0.0], rtol=1e-6, atol=1e-7)


def test_nll_loss_node_names(device):
    x = T(np.zeros((2, 3, 4)), device, tgrad.float32, requires_grad=True)
    t = T(np.zeros((2, 4), dtype=np.int64), device)
    assert type(call("nll_loss2d", x, t, None).grad_fn).__name__ == "NllLoss2DBackward0"
    assert type(call("nll_loss", x[:, :, 0], t[:, 0], None).grad_fn).__name__ == "NllLossBackward0"


def _ce_case(rng, device, dtype, kind):
    """(op name, x, target, weight, kwargs) for a cross-entropy / nll_loss variant."""
    shape, name, kw, w = (7, 5), "cross_entropy", {}, None
    if kind == "weights_ignore_smooth":
        kw = dict(ignore_index=2, label_smoothing=0.15)
        w = T(rng.uniform(0.5, 2, 5), device, dtype)
    elif kind == "spatial_sum":
        shape, kw = (3, 4, 2, 3), dict(reduction="sum", label_smoothing=0.1)
    elif kind == "probabilities":
        kw = dict(label_smoothing=0.2)
        w = T(rng.uniform(0.5, 2, 5), device, dtype)
    elif kind == "nll_weights_ignore":
        name, kw = "nll_loss", dict(ignore_index=0)
        w = T(rng.uniform(0.5, 2, 5), device, dtype)
    elif kind == "nll2d_sum":
        name, shape, kw = "nll_loss2d", (2, 5, 3, 2), dict(reduction="sum")
    x = T(rng.normal(size=shape), device, dtype, requires_grad=True)
    tshape = (shape[0],) + shape[2:]
    if kind == "probabilities":
        t = T(rng.dirichlet(np.ones(5), shape[0]), device, dtype)
    else:
        t = T(rng.integers(0, shape[1], tshape), device)
    return name, x, t, w, kw


def _cpu_only(device):
    if device != "cpu":
        pytest.skip("a cpu-path optimization: only on cpu do the loss forwards also write the seed gradient")


KINDS = ["plain", "weights_ignore_smooth", "spatial_sum", "probabilities", "nll_weights_ignore", "nll2d_sum"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [tgrad.float32, tgrad.float64, tgrad.float16, tgrad.bfloat16])
def test_loss_backward_uses_the_gradient_the_forward_wrote(device, dtype, kind):
    """loss.backward() takes d loss / d x from the forward's launch: the very bits the backward kernel
    writes for grad_output = 1, and no cross_entropy_backward launch."""
    _cpu_only(device)
    name, x, t, w, kw = _ce_case(np.random.default_rng(3), device, dtype, kind)
    loss = call(name, x, t, w, **kw)
    bwd = "nll_loss_backward" if name.startswith("nll") else "cross_entropy_backward"
    with tgrad.no_grad():
        want = call(bwd, tgrad.ones_like(loss), x, t, w, **kw)[0].cpu().numpy()
    COUNTER.enabled = True
    try:
        COUNTER.counts.clear()
        loss.backward()
        assert not any(k.endswith("backward_kernel") for k in COUNTER.counts), dict(COUNTER.counts)
    finally:
        COUNTER.enabled = False
    assert x.grad.dtype is dtype
    assert np.array_equal(x.grad.cpu().numpy().view(np.uint8), want.view(np.uint8))


def test_explicit_grad_create_graph_and_reduction_none_run_the_backward_kernel(device):
    rng = np.random.default_rng(4)
    x = T(rng.normal(size=(6, 4)), device, tgrad.float64, requires_grad=True)
    t = T(rng.integers(0, 4, 6), device)
    loss = call("cross_entropy", x, t, None)
    COUNTER.enabled = True
    try:
        COUNTER.counts.clear()
        (g1,) = tgrad.autograd.grad(loss, x, tgrad.tensor(2.0, dtype=tgrad.float64, device=device),
                                    retain_graph=True)
        assert COUNTER.counts["cross_entropy_backward_kernel"] == 1
        COUNTER.counts.clear()
        (g2,) = tgrad.autograd.grad(loss, x, create_graph=True)
        assert COUNTER.counts["cross_entropy_backward_kernel"] == 1
    finally:
        COUNTER.enabled = False
    np.testing.assert_array_equal(g1.cpu().numpy(), 2 * g2.detach().cpu().numpy())
    assert g2.requires_grad               # double backward still goes through the backward op
    (gg,) = tgrad.autograd.grad(g2.pow(2).sum(), x)
    assert gg.shape == x.shape and np.isfinite(gg.cpu().numpy()).all()
    loss = call("cross_entropy", x, t, None)
    loss.register_hook(lambda g: g.mul_(3))      # a hook changing the seed in place: the kernel sees it
    x.grad = None
    loss.backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 3 * g2.detach().cpu().numpy(), rtol=1e-15)
    none = call("cross_entropy", x, t, None, reduction="none")
    with pytest.raises(AttributeError):
        none.grad_fn._saved_seed_grad


def test_retain_graph_twice_reuses_the_saved_gradient(device):
    """The saved gradient is handed to the leaf but stays the node's: three backwards give 3x."""
    _cpu_only(device)
    rng = np.random.default_rng(5)
    x = T(rng.normal(size=(8, 5)), device, tgrad.float32, requires_grad=True)
    t = T(rng.integers(0, 5, 8), device)
    loss = call("cross_entropy", x, t, None, label_smoothing=0.1)
    saved = loss.grad_fn._saved_seed_grad.cpu().numpy().copy()
    for _ in range(3):
        loss.backward(retain_graph=True)
    np.testing.assert_array_equal(x.grad.cpu().numpy(), (saved + saved) + saved)
    np.testing.assert_array_equal(loss.grad_fn._saved_seed_grad.cpu().numpy(), saved)


def test_saved_gradient_memory(device):
    """Allocated only when the graph is recorded; freed with the node's saved tensors."""
    _cpu_only(device)
    rng = np.random.default_rng(6)
    x = T(rng.normal(size=(64, 10)), device, tgrad.float32, requires_grad=True)   # 2560 bytes, 5 blocks
    t = T(rng.integers(0, 10, 64), device)
    base = tgrad.memory_allocated(device)
    with tgrad.no_grad():
        loss = call("cross_entropy", x, t, None)
    assert tgrad.memory_allocated(device) - base == 512           # the loss only
    loss = call("cross_entropy", x.detach(), t, None)
    assert tgrad.memory_allocated(device) - base == 512
    loss = call("cross_entropy", x, t, None)
    assert tgrad.memory_allocated(device) - base == 512 + 2560    # + the saved gradient
    loss.backward()
    assert tgrad.memory_allocated(device) - base == 512 + 2560    # it became x.grad, or was freed
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.grad_fn._saved_seed_grad
    del loss
    x.grad = None
    assert tgrad.memory_allocated(device) == base
    loss = call("cross_entropy", x, t, None)
    loss.backward(retain_graph=True)
    assert tgrad.memory_allocated(device) - base == 512 + 2 * 2560  # x.grad is a copy: the node keeps its own
    del loss
    assert tgrad.memory_allocated(device) - base == 2560


POINTWISE = [("mse_loss", {}), ("mse_loss", dict(reduction="sum")), ("l1_loss", {}),
             ("smooth_l1_loss", dict(beta=0.5)), ("huber_loss", dict(delta=0.7, reduction="sum")),
             ("binary_cross_entropy", {}), ("binary_cross_entropy:w", {}),
             ("binary_cross_entropy_with_logits", {}), ("binary_cross_entropy_with_logits:w:pw", {}),
             ("kl_div", dict(reduction="batchmean")), ("kl_div", dict(reduction="sum", log_target=True))]


@pytest.mark.parametrize("case", POINTWISE, ids=lambda c: c[0] + "-" + "-".join(f"{k}={v}" for k, v in c[1].items()))
@pytest.mark.parametrize("dtype", [tgrad.float32, tgrad.float64, tgrad.float16, tgrad.bfloat16])
def test_pointwise_loss_backward_uses_the_gradient_the_forward_wrote(device, dtype, case):
    """Point-wise losses too: the forward's launch writes d loss / d x for grad 1, bit for bit what the
    backward kernel writes, and loss.backward() launches no loss kernel."""
    _cpu_only(device)
    kind, kw = case
    rng = np.random.default_rng(7)
    name, *extra = kind.split(":")
    prob = name == "binary_cross_entropy"
    x = T(rng.uniform(0.05, 0.95, (6, 5)) if prob else rng.normal(size=(6, 5)), device, dtype, requires_grad=True)
    y = T(rng.uniform(0, 1, (6, 5)), device, dtype)
    w = T(rng.uniform(0.5, 2, (5,)), device, dtype) if "w" in extra else None
    pw = T(rng.uniform(0.5, 2, (5,)), device, dtype) if "pw" in extra else None
    args = (x, y, w, pw) if name == "binary_cross_entropy_with_logits" else \
        (x, y, w) if name == "binary_cross_entropy" else (x, y)
    loss = call(name, *args, **kw)
    with tgrad.no_grad():
        want = call(name + "_backward", tgrad.ones_like(loss), x, y, w, pw, order=1, **kw).cpu().numpy()
    COUNTER.enabled = True
    try:
        COUNTER.counts.clear()
        loss.backward()
        assert "loss_map_kernel" not in COUNTER.counts, dict(COUNTER.counts)
    finally:
        COUNTER.enabled = False
    assert np.array_equal(x.grad.cpu().numpy().view(np.uint8), want.view(np.uint8))


def test_pointwise_loss_seed_gradient_only_when_it_can_be_used(device):
    """No gradient written under no_grad, for reduction='none' or a detached input; an explicit grad,
    create_graph or a target that requires grad still get correct gradients."""
    _cpu_only(device)
    rng = np.random.default_rng(8)
    x = T(rng.normal(size=(4, 3)), device, tgrad.float64, requires_grad=True)
    y = T(rng.normal(size=(4, 3)), device, tgrad.float64, requires_grad=True)
    base = tgrad.memory_allocated(device)
    with tgrad.no_grad():
        loss = call("mse_loss", x, y)
    assert tgrad.memory_allocated(device) - base == 512
    for loss in (call("mse_loss", x, y, reduction="none"), call("mse_loss", x.detach(), y.detach())):
        with pytest.raises(AttributeError):
            loss.grad_fn._saved_seed_grad if loss.grad_fn is not None else loss._no_such_attribute
    loss = call("mse_loss", x, y)
    loss.backward(tgrad.tensor(2.0, dtype=tgrad.float64, device=device), retain_graph=True)
    d = 2 * (x.detach().cpu().numpy() - y.detach().cpu().numpy()) / 12
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * d, rtol=1e-15)
    np.testing.assert_allclose(y.grad.cpu().numpy(), -2 * d, rtol=1e-15)
    x.grad = y.grad = None
    loss.backward()                                 # the implicit seed: the saved gradient, -it for y
    np.testing.assert_allclose(x.grad.cpu().numpy(), d, rtol=1e-15)
    np.testing.assert_allclose(y.grad.cpu().numpy(), -d, rtol=1e-15)
    (gx,) = tgrad.autograd.grad(call("mse_loss", x, y), x, create_graph=True)
    assert gx.requires_grad
    (ggx,) = tgrad.autograd.grad(gx.sum(), x)
    np.testing.assert_allclose(ggx.cpu().numpy(), np.full((4, 3), 2 / 12), rtol=1e-15)
