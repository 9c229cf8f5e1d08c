"""Layers, losses, init and nn.utils against numpy (and PyTorch's values where hard-coded)."""
import math
import warnings

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad import nn
from tgrad.nn import init

F64 = tgrad.float64


def _t(a, requires_grad=False, dtype=F64):
    return tgrad.tensor(np.asarray(a), dtype=dtype, requires_grad=requires_grad)


def _np(t):
    return t.detach().cpu().numpy()


def test_linear_forward_backward_and_init():
    rng = np.random.default_rng(0)
    lin = nn.Linear(5, 3).double()
    x = rng.standard_normal((2, 4, 5))
    xt = _t(x, requires_grad=True)
    y = lin(xt)
    W, b = _np(lin.weight), _np(lin.bias)
    np.testing.assert_allclose(_np(y), x @ W.T + b, rtol=1e-12)
    g = rng.standard_normal((2, 4, 3))
    y.backward(_t(g))
    np.testing.assert_allclose(_np(lin.weight.grad), g.reshape(-1, 3).T @ x.reshape(-1, 5), rtol=1e-12)
    np.testing.assert_allclose(_np(lin.bias.grad), g.sum((0, 1)), rtol=1e-12)
    np.testing.assert_allclose(_np(xt.grad), g @ W, rtol=1e-12)
    nob = nn.Linear(5, 3, bias=False)
    assert nob.bias is None and [n for n, _ in nob.named_parameters()] == ["weight"]
    tgrad.manual_seed(3)
    big = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    w = _np(big.weight)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound and np.abs(_np(big.bias)).max() <= bound
    tgrad.manual_seed(3)
    assert np.array_equal(_np(nn.Linear(400, 300).weight), w)


ACTS = [
    (nn.ReLU(), lambda x: np.maximum(x, 0)),
    (nn.ReLU6(), lambda x: np.clip(x, 0, 6)),
    (nn.LeakyReLU(0.2), lambda x: np.where(x >= 0, x, 0.2 * x)),
    (nn.ELU(0.5), lambda x: np.where(x > 0, x, 0.5 * (np.exp(x) - 1))),
    (nn.SELU(), lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * (np.exp(x) - 1))),
    (nn.GELU(), lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))),
    (nn.GELU("tanh"), lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))),
    (nn.SiLU(), lambda x: x / (1 + np.exp(-x))),
    (nn.Mish(), lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    (nn.Softplus(2.0, 3.0), lambda x: np.where(2 * x > 3, x, np.log1p(np.exp(2 * x)) / 2)),
    (nn.Sigmoid(), lambda x: 1 / (1 + np.exp(-x))),
    (nn.Tanh(), np.tanh),
    (nn.Hardtanh(-0.5, 1.5), lambda x: np.clip(x, -0.5, 1.5)),
    (nn.Hardsigmoid(), lambda x: np.clip(x + 3, 0, 6) / 6),
    (nn.Hardswish(), lambda x: x * np.clip(x + 3, 0, 6) / 6),
    (nn.LogSigmoid(), lambda x: -np.log1p(np.exp(-x))),
    (nn.Identity(), lambda x: x),
]


@pytest.mark.parametrize("module,ref", ACTS, ids=[repr(m) for m, _ in ACTS])
def test_activations(module, ref):
    x = np.linspace(-4, 4, 41)
    xt = _t(x, requires_grad=True)
    y = module(xt)
    np.testing.assert_allclose(_np(y), ref(x), rtol=1e-6, atol=1e-7)
    if not isinstance(module, nn.Identity):
        y.sum().backward()
        h = 1e-6
        num = (ref(x + h) - ref(x - h)) / (2 * h)
        ok = np.abs(np.abs(x) - 0.0) > 1e-3
        ok &= ~np.isin(x, [-3.0, 3.0, 6.0, -0.5, 1.5, 1.5])    # kinks of the piecewise-linear ones
        np.testing.assert_allclose(_np(xt.grad)[ok], num[ok], rtol=1e-5, atol=1e-6)


def test_inplace_activations_write_into_their_input():
    x = tgrad.tensor([-1.0, 2.0])
    assert nn.ReLU(inplace=True)(x) is x and x.tolist() == [0.0, 2.0]
    y = tgrad.tensor([-1.0, 2.0])
    nn.LeakyReLU(0.5, inplace=True)(y)
    assert y.tolist() == [-0.5, 2.0]
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(x, 2.0, 1.0)


def test_softmax_family():
    x = np.random.default_rng(1).standard_normal((3, 4))
    xt = _t(x)
    e = np.exp(x - x.max(1, keepdims=True))
    sm = e / e.sum(1, keepdims=True)
    np.testing.assert_allclose(_np(nn.Softmax(dim=1)(xt)), sm, rtol=1e-12)
    np.testing.assert_allclose(_np(nn.LogSoftmax(dim=-1)(xt)), np.log(sm), rtol=1e-12)
    e0 = np.exp(-x)
    np.testing.assert_allclose(_np(nn.Softmin(0)(xt)), e0 / e0.sum(0), rtol=1e-12)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax has been deprecated"):
        out = nn.Softmax()(xt)
    np.testing.assert_allclose(_np(out), sm, rtol=1e-12)
    np.testing.assert_allclose(_np(F.softmax(_t(x, dtype=tgrad.float32), 1, dtype=F64)), sm, rtol=1e-6)


def _ce_ref(x, t, w=None, smoothing=0.0):
    logp = x - np.log(np.exp(x).sum(1, keepdims=True))
    C = x.shape[1]
    w = np.ones(C) if w is None else w
    nll = -logp[np.arange(len(t)), t] * w[t]
    smooth = -(logp * w).sum(1) / C
    return ((1 - smoothing) * nll + smoothing * smooth).sum() / w[t].sum()


def test_losses_against_numpy_and_pytorch():
    x = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
    p = np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    xt, pt = _t(x), _t(p)
    tgt = tgrad.tensor([2, 0])
    w = np.array([1.0, 2.0, 3.0])
    assert nn.CrossEntropyLoss()(xt, tgt).item() == pytest.approx(_ce_ref(x, np.array([2, 0])), rel=1e-12)
    assert nn.CrossEntropyLoss(weight=_t(w))(xt, tgrad.tensor([2, 1])).item() == pytest.approx(
        _ce_ref(x, np.array([2, 1]), w), rel=1e-12)
    # PyTorch 2.13's values
    assert nn.CrossEntropyLoss(label_smoothing=0.1)(xt, tgt).item() == pytest.approx(1.124458630550769, rel=1e-12)
    assert nn.CrossEntropyLoss()(xt, tgrad.tensor([2, -100])).item() == pytest.approx(0.4076059644443804, rel=1e-12)
    assert nn.CrossEntropyLoss(weight=_t(w))(xt, tgrad.tensor([2, 1])).item() == pytest.approx(1.5410880973294911,
                                                                                              rel=1e-12)
    assert nn.CrossEntropyLoss()(xt, pt).item() == pytest.approx(0.8994586305507688, rel=1e-12)
    assert nn.CrossEntropyLoss(label_smoothing=0.2)(xt, pt).item() == pytest.approx(1.0344586305507688, rel=1e-12)
    logq = F.log_softmax(xt, 1)
    assert nn.KLDivLoss(reduction="batchmean")(logq, pt).item() == pytest.approx(0.06511619369339355, rel=1e-12)
    assert nn.KLDivLoss(reduction="sum", log_target=True)(logq, pt.log()).item() == pytest.approx(
        0.1302323873867871, rel=1e-12)
    assert nn.BCEWithLogitsLoss(pos_weight=_t(w))(xt, pt).item() == pytest.approx(1.0790200790305753, rel=1e-12)
    assert nn.SmoothL1Loss(beta=0.5)(xt, pt).item() == pytest.approx(1.035, rel=1e-12)
    assert nn.HuberLoss(delta=0.5)(xt, pt).item() == pytest.approx(0.5175, rel=1e-12)
    d = x - p
    np.testing.assert_allclose(_np(nn.MSELoss(reduction="none")(xt, pt)), d ** 2, rtol=1e-12)
    assert nn.MSELoss(reduction="sum")(xt, pt).item() == pytest.approx((d ** 2).sum(), rel=1e-12)
    assert nn.L1Loss()(xt, pt).item() == pytest.approx(np.abs(d).mean(), rel=1e-12)
    s = 1 / (1 + np.exp(-x))
    bce = -(p * np.log(s) + (1 - p) * np.log(1 - s))
    assert nn.BCELoss()(_t(s), pt).item() == pytest.approx(bce.mean(), rel=1e-10)
    assert nn.BCELoss(weight=_t(w))(_t(s), pt).item() == pytest.approx((bce * w).mean(), rel=1e-10)
    logp = x - np.log(np.exp(x).sum(1, keepdims=True))
    assert nn.NLLLoss()(_t(logp), tgt).item() == pytest.approx(-(logp[0, 2] + logp[1, 0]) / 2, rel=1e-12)
    assert F.mse_loss(xt, pt, weight=_t(np.ones_like(x) * 2)).item() == pytest.approx((d ** 2).sum() * 2 / 12,
                                                                                      rel=1e-12)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated, please use "
                                         "reduction='sum' instead."):
        assert nn.L1Loss(size_average=False)(xt, pt).item() == pytest.approx(np.abs(d).sum(), rel=1e-12)


def test_cross_entropy_gradient():
    x = np.random.default_rng(2).standard_normal((4, 5))
    t = np.array([1, 0, 4, 2])
    xt = _t(x, requires_grad=True)
    loss = nn.CrossEntropyLoss()(xt, tgrad.tensor(t))
    assert loss.grad_fn.name() == "NllLossBackward0"  # PyTorch's name (cross_entropy = nll_loss(log_softmax))
    loss.backward()
    sm = np.exp(x) / np.exp(x).sum(1, keepdims=True)
    sm[np.arange(4), t] -= 1
    np.testing.assert_allclose(_np(xt.grad), sm / 4, rtol=1e-10)


def test_layer_norm():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 4))
    ln = nn.LayerNorm((3, 4)).double()
    with tgrad.no_grad():
        ln.weight.copy_(_t(rng.standard_normal((3, 4))))
        ln.bias.copy_(_t(rng.standard_normal((3, 4))))
    mu = x.mean((1, 2), keepdims=True)
    var = x.var((1, 2), keepdims=True)
    ref = (x - mu) / np.sqrt(var + 1e-5) * _np(ln.weight) + _np(ln.bias)
    np.testing.assert_allclose(_np(ln(_t(x))), ref, rtol=1e-10, atol=1e-12)
    plain = nn.LayerNorm(4, elementwise_affine=False)
    assert list(plain.parameters()) == []
    np.testing.assert_allclose(_np(plain(_t(x))), (x - x.mean(-1, keepdims=True)) /
                               np.sqrt(x.var(-1, keepdims=True) + 1e-5), rtol=1e-10, atol=1e-12)


def test_batch_norm_1d_train_eval_and_running_stats():
    rng = np.random.default_rng(4)
    bn = nn.BatchNorm1d(3).double()
    xs = [rng.standard_normal((8, 3)) * 2 + 1, rng.standard_normal((8, 3)) - 1]
    rm, rv = np.zeros(3), np.ones(3)
    for x in xs:
        y = bn(_t(x))
        np.testing.assert_allclose(_np(y), (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), rtol=1e-10, atol=1e-12)
        rm = 0.9 * rm + 0.1 * x.mean(0)
        rv = 0.9 * rv + 0.1 * x.var(0, ddof=1)
    np.testing.assert_allclose(_np(bn.running_mean), rm, rtol=1e-12)
    np.testing.assert_allclose(_np(bn.running_var), rv, rtol=1e-12)
    assert bn.num_batches_tracked.item() == 2 and bn.num_batches_tracked.dtype is tgrad.int64
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    bn.eval()
    x = rng.standard_normal((5, 3))
    np.testing.assert_allclose(_np(bn(_t(x))), (x - rm) / np.sqrt(rv + 1e-5), rtol=1e-10)
    assert bn.num_batches_tracked.item() == 2
    cum = nn.BatchNorm1d(2, momentum=None, affine=False).double()
    a, b = rng.standard_normal((4, 2, 3)), rng.standard_normal((4, 2, 3))
    cum(_t(a))
    cum(_t(b))
    mean_ab = (a.mean((0, 2)) + b.mean((0, 2))) / 2
    np.testing.assert_allclose(_np(cum.running_mean), mean_ab, rtol=1e-12)
    with pytest.raises(ValueError, match="expected 2D or 3D input \\(got 4D input\\)"):
        cum(tgrad.zeros(2, 2, 2, 2))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        nn.BatchNorm1d(3)(tgrad.zeros(1, 3))


def test_embedding():
    emb = nn.Embedding(6, 3, padding_idx=0).double()
    assert _np(emb.weight)[0].tolist() == [0.0, 0.0, 0.0]
    idx = tgrad.tensor([[0, 2], [2, 5]])
    out = emb(idx)
    np.testing.assert_array_equal(_np(out), _np(emb.weight)[[[0, 2], [2, 5]]])
    out.sum().backward()
    assert _np(emb.weight.grad)[:, 0].tolist() == [0.0, 0.0, 2.0, 0.0, 0.0, 1.0]
    pre = nn.Embedding.from_pretrained(tgrad.eye(3))
    assert not pre.weight.requires_grad and pre(tgrad.tensor([1])).tolist() == [[0.0, 1.0, 0.0]]


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_embedding_max_norm_renormalizes_looked_up_rows_in_place(norm_type):
    rng = np.random.default_rng(0)
    w0 = (rng.standard_normal((6, 3)) * [[0.1], [2], [3], [0.2], [4], [1]]).astype(np.float32)
    emb = nn.Embedding(6, 3, max_norm=1.0, norm_type=norm_type, _weight=tgrad.tensor(w0))
    idx = [[1, 2], [2, 0], [1, 5]]
    version = emb.weight._version
    out = emb(tgrad.tensor(idx))
    want = w0.copy()
    for r in np.unique(idx):
        norm = np.linalg.norm(w0[r].astype(np.float64), ord=norm_type)
        if norm > 1.0:
            want[r] = w0[r] * np.float32(1.0 / (norm + 1e-7))
    assert not np.array_equal(want, w0)                           # some rows were renormalized
    np.testing.assert_allclose(_np(emb.weight), want, rtol=1e-6)
    np.testing.assert_array_equal(_np(emb.weight)[[3, 4]], w0[[3, 4]])      # rows not looked up: untouched
    np.testing.assert_array_equal(_np(out), _np(emb.weight)[idx])
    assert emb.weight._version == version + 1
    out.sum().backward()
    np.testing.assert_array_equal(_np(emb.weight.grad)[:, 0], np.bincount(np.ravel(idx), minlength=6))
    before = _np(emb.weight).copy()
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(tgrad.tensor([4, 6]), emb.weight, max_norm=0.1)
    np.testing.assert_array_equal(_np(emb.weight), before)        # the error wrote nothing
    with pytest.raises(RuntimeError, match="Expected 2-dimensional tensor, but got 1-dimensional"):
        F.embedding(tgrad.tensor([0]), tgrad.ones(3), max_norm=1.0)


def test_embedding_scale_grad_by_freq_and_sparse():
    rng = np.random.default_rng(1)
    emb = nn.Embedding(5, 2, scale_grad_by_freq=True, padding_idx=4).double()
    idx = np.array([[0, 0, 3], [0, 1, 3], [4, 1, 0]])
    v = rng.standard_normal((3, 3, 2))
    out = emb(tgrad.tensor(idx))
    (gw,) = tgrad.autograd.grad(out, emb.weight, tgrad.tensor(v, requires_grad=True), create_graph=True)
    counts = np.bincount(idx.ravel(), minlength=5)
    want = np.zeros((5, 2))
    np.add.at(want, idx.ravel(), v.reshape(-1, 2))
    want = want / np.maximum(counts, 1)[:, None]
    want[4] = 0                                                   # padding_idx
    np.testing.assert_allclose(_np(gw), want, rtol=1e-12)
    emb2 = nn.Embedding(5, 2).double()
    emb2.weight.data.copy_(emb.weight.data)
    out2 = emb2(tgrad.tensor(idx))
    (plain,) = tgrad.autograd.grad(out2, emb2.weight, tgrad.tensor(v))
    assert not np.allclose(_np(plain), want)                      # without the option: plain sums
    # second order: d(sum(c * gw))/dv = c[idx] / counts[idx] (0 at padding_idx)
    vt = tgrad.tensor(v, requires_grad=True)
    (gw,) = tgrad.autograd.grad(emb(tgrad.tensor(idx)), emb.weight, vt, create_graph=True)
    c = rng.standard_normal((5, 2))
    (gv,) = tgrad.autograd.grad((gw * tgrad.tensor(c)).sum(), vt)
    cs = c / np.maximum(counts, 1)[:, None]
    cs[4] = 0
    np.testing.assert_allclose(_np(gv), cs[idx], rtol=1e-12)
    # sparse=True is supported (tests/sparse), but not together with scale_grad_by_freq, as in PyTorch
    with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse gradients"):
        nn.Embedding(5, 2, sparse=True, scale_grad_by_freq=True)(tgrad.tensor([0, 0])).sum().backward()


def test_dropout():
    tgrad.manual_seed(0)
    d = nn.Dropout(0.25)
    x = tgrad.ones(4000)
    y = _np(d(x))
    kept = y != 0
    assert abs(kept.mean() - 0.75) < 0.03 and np.allclose(y[kept], 1 / 0.75)
    d.eval()
    assert d(x) is x
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        nn.Dropout(1.5)
    xt = tgrad.ones(100, requires_grad=True)
    F.dropout(xt, 0.5).sum().backward()
    assert set(_np(xt.grad).tolist()) <= {0.0, 2.0}


def test_flatten_unflatten_sequential():
    x = tgrad.arange(24, dtype=tgrad.float32).reshape(2, 3, 4)
    assert nn.Flatten()(x).shape == (2, 12) and nn.Flatten(0, 1)(x).shape == (6, 4)
    assert nn.Unflatten(1, (3, 4))(nn.Flatten()(x)).tolist() == x.tolist()
    tgrad.manual_seed(0)
    mlp = nn.Sequential(nn.Flatten(), nn.Linear(12, 5), nn.ReLU(), nn.Linear(5, 2))
    manual = mlp[3](F.relu(mlp[1](x.reshape(2, 12))))
    assert mlp(x).tolist() == manual.tolist()


def test_init():
    gains = [init.calculate_gain(n) for n in ["linear", "conv2d", "sigmoid", "tanh", "relu", "selu"]]
    assert gains == [1, 1, 1, 1.6666666666666667, 1.4142135623730951, 0.75]
    assert init.calculate_gain("leaky_relu") == 1.4141428569978354
    assert init.calculate_gain("leaky_relu", math.sqrt(5)) == 0.5773502691896257
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    w = tgrad.empty(200, 300)
    init.kaiming_uniform_(w, nonlinearity="relu", generator=tgrad.Generator(w.device).manual_seed(5))
    bound = math.sqrt(2) * math.sqrt(3 / 300)
    assert np.abs(_np(w)).max() <= bound and np.abs(_np(w)).max() > 0.99 * bound
    w2 = tgrad.empty(200, 300)
    init.kaiming_uniform_(w2, nonlinearity="relu", generator=tgrad.Generator(w.device).manual_seed(5))
    assert np.array_equal(_np(w), _np(w2))
    init.kaiming_normal_(w, mode="fan_out")
    assert abs(_np(w).std() - math.sqrt(2 / 200)) < 0.005
    init.xavier_normal_(w, gain=2.0)
    assert abs(_np(w).std() - 2 * math.sqrt(2 / 500)) < 0.02 * 2 * math.sqrt(2 / 500)
    init.xavier_uniform_(w)
    assert np.abs(_np(w)).max() <= math.sqrt(6 / 500)
    init.trunc_normal_(w, mean=1.0, std=2.0, a=0.0, b=1.5)
    assert _np(w).min() >= 0.0 and _np(w).max() <= 1.5 and abs(_np(w).mean() - 0.77) < 0.05
    init.trunc_normal_(w)
    assert _np(w).min() >= -2 and _np(w).max() <= 2 and abs(_np(w).std() - 0.88) < 0.02
    p = nn.Parameter(tgrad.empty(2, 2))
    assert init.eye_(p) is p and p.tolist() == [[1.0, 0.0], [0.0, 1.0]] and p.requires_grad
    assert init.constant_(p, 0.5).tolist() == [[0.5, 0.5], [0.5, 0.5]]
    assert init.zeros_(p).tolist() == [[0.0] * 2] * 2 and init.ones_(p).tolist() == [[1.0] * 2] * 2
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor with fewer than 2"):
        init.xavier_uniform_(tgrad.empty(3))
    with pytest.raises(ValueError, match="Mode fan_avg not supported, please use one of"):
        init.kaiming_uniform_(w, mode="fan_avg")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        init.kaiming_uniform_(tgrad.empty(0, 3))
    assert "Initializing zero-element tensors is a no-op" in str(rec[0].message)


def test_clip_grad_and_vector_conversion():
    a, b = nn.Parameter(tgrad.zeros(3, dtype=F64)), nn.Parameter(tgrad.zeros(2, dtype=F64))
    ga, gb = np.array([3.0, -4.0, 12.0]), np.array([-84.0, 0.0])
    a.grad, b.grad = _t(ga), _t(gb)
    total = nn.utils.clip_grad_norm_([a, b], max_norm=1.0)
    assert total.item() == pytest.approx(85.0, rel=1e-12)
    coef = 1.0 / (85.0 + 1e-6)
    np.testing.assert_allclose(_np(a.grad), ga * coef, rtol=1e-12)
    np.testing.assert_allclose(_np(b.grad), gb * coef, rtol=1e-12)
    a.grad, b.grad = _t(ga), _t(gb)
    assert nn.utils.clip_grad_norm_([a, b], 100.0, norm_type="inf").item() == 84.0
    assert _np(b.grad).tolist() == gb.tolist()             # below max_norm: unchanged
    nn.utils.clip_grad_value_([a, b], 5.0)
    assert _np(a.grad).tolist() == [3.0, -4.0, 5.0] and _np(b.grad).tolist() == [-5.0, 0.0]
    a.grad = _t([math.inf, 0.0, 0.0])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is "
                                           "non-finite"):
        nn.utils.clip_grad_norm_([a, b], 1.0, error_if_nonfinite=True)
    lin = nn.Linear(3, 2)
    vec = nn.utils.parameters_to_vector(lin.parameters())
    assert vec.shape == (8,) and vec.tolist()[:3] == lin.weight.tolist()[0]
    nn.utils.vector_to_parameters(tgrad.arange(8, dtype=tgrad.float32), lin.parameters())
    assert lin.weight.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and lin.bias.tolist() == [6.0, 7.0]
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        nn.utils.vector_to_parameters([1.0], lin.parameters())
