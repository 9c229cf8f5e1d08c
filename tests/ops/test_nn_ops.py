"""NN functional ops: PyTorch's numbers and errors, launch counts, dropout's mask, embedding's checks."""
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


def test_softmax_large_values_and_fp16(device):
    x = T([[1000.0, 1000.0, -1000.0]], device, tgrad.float32)
    np.testing.assert_allclose(call("softmax", x, dim=1).cpu().numpy(), [[0.5, 0.5, 0.0]])
    np.testing.assert_allclose(call("log_softmax", x, dim=1).cpu().numpy(), [[-np.log(2), -np.log(2), -2000 - np.log(2)]],
                               rtol=1e-6)
    h = T([[1.0, 2.0, 3.0]], device, tgrad.float16)
    y = call("softmax", h, dim=-1)
    assert y.dtype is tgrad.float16
    e = np.exp([1.0, 2.0, 3.0])
    np.testing.assert_allclose(y.cpu().numpy().astype(np.float64), [e / e.sum()], atol=1e-3)


def test_dropout_mask_is_philox_and_seeded(device):
    x = T(np.ones((50, 40)), device, tgrad.float32, requires_grad=True)
    y, mask = call("dropout", x, p=0.25, training=True, seed=123, offset=8)
    y2, mask2 = call("dropout", x, p=0.25, training=True, seed=123, offset=8)
    m = mask.cpu().numpy()
    assert (m == mask2.cpu().numpy()).all()
    assert 0.7 < m.mean() < 0.8
    np.testing.assert_allclose(y.detach().cpu().numpy(), m / 0.75, rtol=1e-6)
    assert type(y.grad_fn).__name__ == "MulBackward0"
    (g,) = tgrad.autograd.grad(y.sum(), x)
    np.testing.assert_allclose(g.cpu().numpy(), m / 0.75, rtol=1e-6)
    y3, _ = call("dropout", x, p=0.25, training=True, seed=123, offset=8 + 2000)
    assert not (y3.detach().cpu().numpy() == y.detach().cpu().numpy()).all()   # another counter range
    z, zm = call("dropout", x, p=1.0, training=True, seed=1, offset=0)
    assert (z.detach().cpu().numpy() == 0).all() and not zm.cpu().numpy().any()
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        call("dropout", x, p=1.5, training=True)
    with pytest.raises(ValueError, match="takes words= or seed= and offset="):
        call("dropout", x, p=0.5, training=True)


def test_functional_dropout_draws_from_the_generator(device):
    x = T(np.ones((50, 40)), device, tgrad.float32)
    tgrad.manual_seed(123)
    y = F.dropout(x, 0.25)
    tgrad.manual_seed(123)
    rng = tgrad.random.default_generator_for(x.device)._bernoulli_rng(x.numel())
    if x.device.type == "cpu":      # PyTorch's bernoulli_(1 - p): two mt19937 words per element
        assert set(rng) == {"words"} and rng["words"].numel() == 2 * x.numel()
    else:                           # Philox: key and first counter
        assert (rng["seed"], rng["offset"]) == (123, 0)
    y_op, _ = call("dropout", x, p=0.25, training=True, **rng)
    np.testing.assert_array_equal(y.cpu().numpy(), y_op.cpu().numpy())
    y2 = F.dropout(x, 0.25)
    assert not (y2.cpu().numpy() == y.cpu().numpy()).all()          # the generator advanced


def test_embedding_errors_and_padding(device):
    w = T(np.arange(12.0).reshape(4, 3), device, tgrad.float32, requires_grad=True)
    before = w.detach().cpu().numpy().copy()
    with pytest.raises(IndexError, match="index out of range in self"):
        call("embedding", w, T([0, 4], device))
    with pytest.raises(IndexError, match="index out of range in self"):
        call("embedding", w, T([-1], device))
    np.testing.assert_array_equal(w.detach().cpu().numpy(), before)
    e = call("embedding", w, T([[1, 1], [3, 0]], device), padding_idx=1)
    assert type(e.grad_fn).__name__ == "EmbeddingBackward0"
    e.sum().backward()
    np.testing.assert_array_equal(w.grad.cpu().numpy()[:, 0], [1, 0, 0, 1])


def test_one_hot_errors(device):
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        call("one_hot", T([3], device), num_classes=2)
    with pytest.raises(RuntimeError, match="Class values must be non-negative."):
        call("one_hot", T([-1], device), num_classes=2)
    out = call("one_hot", T([1, 0, 4], device))
    assert out.dtype is tgrad.int64 and out.shape == (3, 5)


def test_pad_negative_crops_and_errors(device):
    x = T(np.arange(12.0).reshape(3, 4), device, tgrad.float64, requires_grad=True)
    y = call("pad", x, pad=(-1, 2, 1, -2), value=7.0)
    want = np.pad(np.arange(12.0).reshape(3, 4)[:1, 1:], ((1, 0), (0, 2)), constant_values=7.0)
    np.testing.assert_array_equal(y.detach().cpu().numpy(), want)
    assert tgrad.autograd.gradcheck(lambda a: call("pad", a, pad=(-1, 2, 1, -2)), (x,))
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        call("pad", x, pad=(1,))
    with pytest.raises(RuntimeError, match="Padding length should be less than or equal to two times"):
        call("pad", x, pad=(1, 1, 1, 1, 1, 1))


def test_layer_norm_shape_error(device):
    x = T(np.zeros((2, 3)), device, tgrad.float32)
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\]"):
        call("layer_norm", x, None, None, normalized_shape=(4,))


def test_batch_norm_running_stats_match_pytorch(device):
    x = T([[1.0, 2.0], [3.0, 5.0], [4.0, -1.0]], device, tgrad.float32)
    rm = T([0.5, 0.0], device, tgrad.float32)
    rv = T([1.0, 2.0], device, tgrad.float32)
    y = call("batch_norm", x, None, None, rm, rv, training=True, momentum=0.1, eps=1e-5)
    # torch.nn.functional.batch_norm(x, rm, rv, training=True, momentum=0.1)
    np.testing.assert_allclose(y.cpu().numpy(), [[-1.3363018, 0.0], [0.2672604, 1.2247438], [1.0690415, -1.2247438]], atol=1e-6)
    np.testing.assert_allclose(rm.cpu().numpy(), [0.7166666984558105, 0.20000000298023224], rtol=1e-6)
    np.testing.assert_allclose(rv.cpu().numpy(), [1.1333333253860474, 2.700000047683716], rtol=1e-6)
    ye = call("batch_norm", x, None, None, rm, rv, training=False, momentum=0.1, eps=1e-5)
    np.testing.assert_allclose(ye.cpu().numpy(), (x.cpu().numpy() - rm.cpu().numpy()) / np.sqrt(rv.cpu().numpy() + 1e-5), rtol=1e-5)


def test_batch_norm_errors(device):
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when training, got input size "
                                         r"tgrad.Size\(\[1, 3\]\)"):
        call("batch_norm", tgrad.ones(1, 3, device=device), None, None, None, None, training=True)


@pytest.mark.parametrize("training,expected", [
    (True, ([[73.27516050296443, -1.0590067613967487], [-98.24984924765047, 0.579765960048379],
             [29.181012021953045, 0.8233742691821366], [-4.206323277266975, -0.34413346783376725]],
            [218.46422067113747, -6.444777513668535])),
    (False, ([[56.31869885982839, 3.744448213219129], [6533.5949511336285, 28.676159731848056],
              [17828.96103426707, 0.7251777173356416], [0.0, 0.05081668899934064]],
             [78103.98899004383, -275.4433329732559]))])
def test_batch_norm_double_backward_matches_pytorch(device, training, expected):
    """Second derivatives through NativeBatchNormBackwardBackward0, numbers from PyTorch 2.13."""
    x = T([[1.0, 2.0], [3.0, 5.0], [4.0, -1.0], [0.5, 0.25]], device, tgrad.float64, requires_grad=True)
    w = T([1.5, -0.5], device, tgrad.float64, requires_grad=True)
    rm, rv = T([0.5, 0.0], device, tgrad.float64), T([1.0, 2.0], device, tgrad.float64)
    y = call("batch_norm", x, w, None, rm, rv, training=training)
    g, gw = tgrad.autograd.grad(y.pow(3).sum(), [x, w], create_graph=True)
    assert type(g.grad_fn).__name__ == "NativeBatchNormBackwardBackward0"
    hx, hw = tgrad.autograd.grad(g.pow(2).sum() + gw.sum(), [x, w])
    np.testing.assert_allclose(hx.cpu().numpy(), expected[0], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(hw.cpu().numpy(), expected[1], rtol=1e-10)


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_gradgradcheck(device, training, affine):
    rng = np.random.default_rng(1)
    x = T(rng.normal(size=(3, 2, 4)), device, tgrad.float64, requires_grad=True)
    w = T(rng.normal(size=2), device, tgrad.float64, requires_grad=True) if affine else None
    b = T(rng.normal(size=2), device, tgrad.float64, requires_grad=True) if affine else None
    rm, rv = T(rng.normal(size=2), device, tgrad.float64), T(rng.uniform(0.5, 2, 2), device, tgrad.float64)
    args = (x, w, b) if affine else (x,)
    assert tgrad.autograd.gradgradcheck(
        lambda x, w=None, b=None: call("batch_norm", x, w, b, rm, rv, training=training), args)


def test_cross_entropy_large_logits_keep_precision(device):
    x = T([[1000.0, 1000.0, -1000.0], [0.0, 1e4, 0.0]], device, tgrad.float32)
    loss = call("cross_entropy", x, T([0, 1], device), None, reduction="none")
    np.testing.assert_allclose(loss.cpu().numpy(), [np.log(2), 0.0], rtol=1e-6, atol=1e-7)


def _log_softmax_np(x, axis):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


@pytest.mark.parametrize("gpu_blocks", [False, True])
def test_row_kernels_loop_over_long_rows_and_strided_views(device, gpu_blocks, monkeypatch):
    """K > one block (GPU block sizes loop over K), softmax over a middle dim of a permuted, step-sliced view."""
    import tgrad.kernels.runtime.launcher as TT
    monkeypatch.setattr(TT, "FORCE_GPU_BLOCKS", gpu_blocks)
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 2500))
    x = T(a, device, tgrad.float64)
    np.testing.assert_allclose(call("log_softmax", x, dim=1).cpu().numpy(), _log_softmax_np(a, 1), atol=1e-12)
    t = rng.integers(0, 2500, 3)
    ce = call("cross_entropy", x, T(t, device), None)
    np.testing.assert_allclose(ce.item(), -_log_softmax_np(a, 1)[np.arange(3), t].mean(), rtol=1e-12)
    ln = call("layer_norm", x, None, None, normalized_shape=(2500,), eps=1e-5)
    np.testing.assert_allclose(ln.cpu().numpy(), (a - a.mean(1, keepdims=True)) / np.sqrt(a.var(1, keepdims=True) + 1e-5),
                               atol=1e-10)
    b = rng.normal(size=(4, 6, 5, 2))
    v = T(b, device, tgrad.float64).permute(2, 0, 3, 1)[:, ::2]     # (5, 2, 2, 6), no mergeable outer dims
    want = np.exp(_log_softmax_np(b.transpose(2, 0, 3, 1)[:, ::2], 2))
    np.testing.assert_allclose(call("softmax", v, dim=2).cpu().numpy(), want, atol=1e-12)
    x4 = T(rng.normal(size=(2, 5, 3, 4)), device, tgrad.float64).transpose(2, 3)
    t4 = rng.integers(0, 5, (2, 4, 3))
    want = -np.take_along_axis(_log_softmax_np(x4.cpu().numpy(), 1), t4[:, None], 1)[:, 0]
    np.testing.assert_allclose(call("cross_entropy", x4, T(t4, device), None, reduction="none").cpu().numpy(), want,
                               atol=1e-12)


def test_nll_loss_node_names(device):
    x = T(np.zeros((2, 3, 4)), device, tgrad.float32, requires_grad=True)
    t = T(np.zeros((2, 4), dtype=np.int64), device)
    assert type(call("nll_loss2d", x, t, None).grad_fn).__name__ == "NllLoss2DBackward0"
    assert type(call("nll_loss", x[:, :, 0], t[:, 0], None).grad_fn).__name__ == "NllLossBackward0"


# ------------------------------------------------------------------ loss.backward() without a backward launch
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


# ------------------------------------------------------------------ PyTorch's top-level and Tensor-method forms
def _softmax_np(a, dim):
    e = np.exp(a - a.max(dim, keepdims=True))
    return e / e.sum(dim, keepdims=True)


def test_softmax_log_softmax_forms(device):
    a = np.random.default_rng(3).standard_normal((3, 4))
    x = T(a, device, tgrad.float32)
    for got, dim in [(tgrad.softmax(x, 1), 1), (x.softmax(0), 0), (x.softmax(dim=-1), 1)]:
        np.testing.assert_allclose(got.cpu().numpy(), _softmax_np(a, dim), rtol=1e-5, atol=1e-7)
    for got, dim in [(tgrad.log_softmax(x, 0), 0), (x.log_softmax(1), 1)]:
        np.testing.assert_allclose(got.cpu().numpy(), np.log(_softmax_np(a, dim)), rtol=1e-5, atol=1e-6)
    assert tgrad.softmax(x, 1, tgrad.float64).dtype is tgrad.float64
    assert x.log_softmax(1, dtype=tgrad.float64).dtype is tgrad.float64
    assert x.softmax(1).grad_fn is None and type(T(a, device, requires_grad=True).softmax(1).grad_fn).__name__ \
        == "SoftmaxBackward0"
    with pytest.raises(TypeError):
        x.softmax()


def test_where_one_argument_is_nonzero_tuple(device):
    rows, cols = tgrad.where(T([[0, 1], [1, 0]], device))
    assert rows.tolist() == [0, 1] and cols.tolist() == [1, 0]
    (i,) = tgrad.where(T([0.0, 2.0, 0.0, -1.0], device))
    assert i.tolist() == [1, 3]
    with pytest.raises(TypeError):
        tgrad.where(T([True], device), T([1.0], device))


def test_top_level_nn_forms(device):
    a = np.random.default_rng(4).standard_normal((4, 3))
    x = T(a, device, tgrad.float32)
    assert tgrad.dropout(x, 0.5, False) is x
    assert (tgrad.dropout(x, 1.0, True).cpu().numpy() == 0).all()
    ln = (a - a.mean(1, keepdims=True)) / np.sqrt(a.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(tgrad.layer_norm(x, (3,)).cpu().numpy(), ln, rtol=1e-5, atol=1e-5)
    w, b = T([1.0, 2.0, 3.0], device, tgrad.float32), T([0.5, 0.0, -0.5], device, tgrad.float32)
    np.testing.assert_allclose(tgrad.layer_norm(x, [3], w, b, 1e-5, False).cpu().numpy(), ln * [1, 2, 3] + [0.5, 0, -0.5],
                               rtol=1e-5, atol=1e-5)
    rm, rv = tgrad.zeros(3, device=device), tgrad.ones(3, device=device)
    bn = (a - a.mean(0)) / np.sqrt(a.var(0) + 1e-5) * [1, 2, 3] + [0.5, 0, -0.5]
    np.testing.assert_allclose(tgrad.batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5, False).cpu().numpy(), bn,
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rm.cpu().numpy(), 0.1 * a.mean(0), rtol=1e-5, atol=1e-6)
    e = T(a, device, tgrad.float32, requires_grad=True)
    out = tgrad.embedding(e, T([1, 3, 1], device))
    np.testing.assert_array_equal(out.detach().cpu().numpy(), a[[1, 3, 1]].astype(np.float32))
    out.sum().backward()
    np.testing.assert_array_equal(e.grad.cpu().numpy()[:, 0], [0, 2, 0, 1])
    e.grad = None
    tgrad.embedding(e, T([1, 3, 1], device), padding_idx=1).sum().backward()
    np.testing.assert_array_equal(e.grad.cpu().numpy()[:, 0], [0, 0, 0, 1])
    y = T(a[::-1].copy(), device, tgrad.float32)
    cos = (a * a[::-1]).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(a[::-1], axis=1))
    np.testing.assert_allclose(tgrad.cosine_similarity(x, y).cpu().numpy(), cos, rtol=1e-5)
    np.testing.assert_allclose(tgrad.cosine_similarity(x, y, 0).cpu().numpy(),
                               (a * a[::-1]).sum(0) / (np.linalg.norm(a, axis=0) * np.linalg.norm(a[::-1], axis=0)),
                               rtol=1e-5)
