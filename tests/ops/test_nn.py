"""dropout's mask, embedding's checks, one_hot, pad, the top-level nn forms (tgrad.dropout, tgrad.layer_norm, ...)."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import dispatch


def call(name, *a, **k):
    return dispatch.call(name, *a, **k)


def T(a, device, dtype=None, requires_grad=False):
    return tgrad.tensor(np.asarray(a), dtype=dtype, device=device, requires_grad=requires_grad)


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


# PyTorch 2.13 printed these (weight = arange(30).reshape(10, 3), the loss sum(out * arange(12).reshape(4, 3)))
_BAG = {"sum": ([[21, 24, 27], [0, 0, 0], [27, 29, 31], [42, 45, 48]], [0, 0, 9, 9, 6, 6, 0, 0, 0, 9]),
        "mean": ([[7, 8, 9], [0, 0, 0], [13.5, 14.5, 15.5], [14, 15, 16]], [0, 0, 3, 3, 3, 3, 0, 0, 0, 3]),
        "max": ([[12, 13, 14], [0, 0, 0], [15, 16, 17], [27, 28, 29]], [0, 0, 0, 0, 0, 6, 0, 0, 0, 9])}


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_is_one_op_with_pytorchs_values(device, mode):
    """EmbeddingBag is one table op (grad_fn EmbeddingBagBackward0) with an empty bag in the middle; values and
    weight gradients as PyTorch prints them."""
    w = T(np.arange(30.).reshape(10, 3), device, tgrad.float32, requires_grad=True)
    inp, off = T([1, 2, 4, 5, 4, 3, 2, 9], device), T([0, 3, 3, 5], device)
    out = F.embedding_bag(inp, w, off, mode=mode)
    assert type(out.grad_fn).__name__ == "EmbeddingBagBackward0"
    np.testing.assert_allclose(out.detach().cpu().numpy(), _BAG[mode][0], rtol=1e-6)
    (out * T(np.arange(12.).reshape(4, 3), device, tgrad.float32)).sum().backward()
    np.testing.assert_allclose(w.grad.cpu().numpy()[:, 0], _BAG[mode][1], rtol=1e-6)


def test_embedding_bag_per_sample_weights_padding_and_errors(device):
    w = T(np.arange(30.).reshape(10, 3), device, tgrad.float32, requires_grad=True)
    psw = T(np.arange(1., 9.), device, tgrad.float32, requires_grad=True)
    inp, off = T([1, 2, 4, 5, 4, 3, 2, 9], device), T([0, 3, 3, 5], device)
    out = F.embedding_bag(inp, w, off, mode="sum", per_sample_weights=psw, padding_idx=4)
    out.sum().backward()
    # PyTorch 2.13 printed these; a padding row's per-sample-weight gradient is +0
    np.testing.assert_array_equal(out.detach().cpu().numpy(), [[15, 18, 21], [0, 0, 0], [60, 64, 68],
                                                               [312, 333, 354]])
    np.testing.assert_array_equal(psw.grad.cpu().numpy(), [12, 21, 0, 48, 0, 30, 21, 84])
    assert not np.signbit(psw.grad.cpu().numpy()).any()
    np.testing.assert_array_equal(w.grad.cpu().numpy()[:, 0], [0, 1, 9, 6, 0, 4, 0, 0, 0, 8])
    with pytest.raises(NotImplementedError, match="only supported for mode='sum'"):
        F.embedding_bag(inp, w, off, mode="mean", per_sample_weights=psw)
    with pytest.raises(ValueError, match="max mode does not support scaling"):
        F.embedding_bag(inp, w, off, mode="max", scale_grad_by_freq=True)
    with pytest.raises(IndexError, match="index out of range"):
        F.embedding_bag(T([1, 10], device), w, T([0], device))
    if device == "cpu":
        with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
            F.embedding_bag(inp, w, T([1, 3], device))
