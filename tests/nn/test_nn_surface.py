"""The nn / nn.functional forms composed of ops (tgrad/nn/_functional_more.py and their modules): values against
numpy formulas, or numbers printed by PyTorch 2.13 (/work/venv-torch, same seeds and calls) where the draws or
init streams matter (said so); gradcheck in float64; PyTorch's errors and reprs."""
import numpy as np
import pytest

import tgrad as torch
import tgrad.nn as nn
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck

CPU_ONLY = True     # seeded values are PyTorch's cpu random stream, reprs are cpu's (conftest)

RNG = np.random.default_rng(0)


def A(*shape):
    return RNG.standard_normal(shape)


def T(a, dtype=torch.float32, rg=False):
    return torch.tensor(np.asarray(a), dtype=dtype, requires_grad=rg)


def D(a):
    return T(a, torch.float64, True)


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a.tolist() if hasattr(a, "tolist") else a, dtype=np.float64),
                               np.asarray(b, dtype=np.float64), rtol=tol, atol=tol)


def test_rms_norm_and_module():
    x, w = A(2, 3, 4), A(4)
    ref = x / np.sqrt((x ** 2).mean(-1, keepdims=True) + np.finfo(np.float32).eps) * w
    close(F.rms_norm(T(x), [4], T(w)), ref)
    close(F.rms_norm(T(x), (3, 4), eps=1e-3), x / np.sqrt((x ** 2).mean((1, 2), keepdims=True) + 1e-3))
    m = nn.RMSNorm(4)
    assert repr(m) == "RMSNorm((4,), eps=None, elementwise_affine=True)" and m.weight.tolist() == [1.0] * 4
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    assert gradcheck(lambda a, b: F.rms_norm(a, [4], b, 1e-5), (D(x), D(w)))
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[5\], expected input with shape \[\*5\], but "
                                           r"got input of size\[2, 3, 4\]"):
        F.rms_norm(T(x), [5])


def test_local_response_norm_matches_a_numpy_loop():
    x = A(2, 5, 3, 2)
    size, alpha, beta, k = 3, 0.1, 0.75, 2.0
    ref = np.empty_like(x)
    for c in range(5):
        lo, hi = max(0, c - size // 2), min(5, c + (size - 1) // 2 + 1)
        ref[:, c] = x[:, c] / (k + alpha / size * (x[:, lo:hi] ** 2).sum(1)) ** beta
    close(F.local_response_norm(T(x), size, alpha, beta, k), ref)
    close(nn.LocalResponseNorm(size, alpha, beta, k)(T(x[0, :, :, 0])[None]), ref[:1, :, :, 0])
    assert gradcheck(lambda t: F.local_response_norm(t, 2), (D(x[:1]),))
    with pytest.raises(ValueError, match="Expected 3D or higher dimensionality"):
        F.local_response_norm(T(A(2, 3)), 2)


@pytest.mark.parametrize("name, fn, ref", [
    ("celu", lambda t: F.celu(t, 0.7), lambda x: np.where(x > 0, x, 0.7 * np.expm1(x / 0.7))),
    ("threshold", lambda t: F.threshold(t, 0.1, 20.0), lambda x: np.where(x > 0.1, x, 20.0)),
    ("tanhshrink", F.tanhshrink, lambda x: x - np.tanh(x)),
    ("softsign", F.softsign, lambda x: x / (1 + np.abs(x))),
    ("softshrink", F.softshrink, lambda x: np.where(x > 0.5, x - 0.5, np.where(x < -0.5, x + 0.5, 0))),
    ("hardshrink", lambda t: F.hardshrink(t, 0.3), lambda x: np.where(np.abs(x) > 0.3, x, 0)),
    ("glu", F.glu, lambda x: x[:, :3] / (1 + np.exp(-x[:, 3:]))),
    ("rrelu_eval", F.rrelu, lambda x: np.where(x >= 0, x, x * (1 / 8 + 1 / 3) / 2)),
    ("prelu", lambda t: F.prelu(t, torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=t.dtype).reshape(4)),
     lambda x: np.where(x > 0, x, x * np.array([0.1, 0.2, 0.3, 0.4])[None, :, None])),
])
def test_activations(name, fn, ref):
    x = A(3, 4, 2) if name == "prelu" else A(4, 6)
    close(fn(T(x)), ref(x))
    xd = x + 0.05 * np.sign(x)                 # away from the kinks for finite differences
    xd[np.abs(np.abs(xd) - 0.5) < 0.05] += 0.1
    xd[np.abs(np.abs(xd) - 0.3) < 0.05] += 0.1
    xd[np.abs(xd - 0.1) < 0.05] += 0.1
    assert gradcheck(fn, (D(xd),))


def test_activation_modules_reprs_and_errors():
    assert repr(nn.PReLU()) == "PReLU(num_parameters=1)"
    assert repr(nn.RReLU()) == "RReLU(lower=0.125, upper=0.3333333333333333)"
    assert repr(nn.CELU(inplace=True)) == "CELU(alpha=1.0, inplace=True)"
    assert repr(nn.Threshold(0.1, 20)) == "Threshold(threshold=0.1, value=20)"
    assert repr(nn.Softshrink()) == "Softshrink(0.5)" and repr(nn.GLU()) == "GLU(dim=-1)"
    x = A(2, 3, 4, 1)
    close(nn.Softmax2d()(T(x)), np.exp(x) / np.exp(x).sum(1, keepdims=True))
    p = nn.PReLU(3)
    assert p.weight.tolist() == [0.25] * 3
    y = p(T(A(2, 3)))
    y.sum().backward()
    assert p.weight.grad.shape == (3,)
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 1 is size 5"):
        F.glu(torch.ones(2, 5))
    with pytest.raises(RuntimeError, match="Found parameter numbers = 3 and channel size = 4."):
        F.prelu(torch.ones(2, 4), torch.ones(3))
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D instead"):
        nn.Softmax2d()(torch.ones(2, 2))
    t = torch.tensor([-1.0, 2.0])
    F.threshold_(t, 0.0, 5.0)
    assert t.tolist() == [5.0, 2.0]


def test_rrelu_training_draws_pytorchs_slopes():
    # PyTorch 2.13: manual_seed(1); F.rrelu([-1, 2, -3], training=True) printed
    # [-0.13771943747997284, 2.0, -0.5153465867042542]
    torch.manual_seed(1)
    x = torch.tensor([-1.0, 2.0, -3.0], requires_grad=True)
    y = F.rrelu(x, training=True)
    close(y, [-0.13771943747997284, 2.0, -0.5153465867042542], tol=1e-7)
    y.sum().backward()
    close(x.grad, [0.13771943747997284, 1.0, 0.5153465867042542 / 3], tol=1e-6)


def test_gumbel_softmax_draws_pytorchs_numbers():
    # PyTorch 2.13, manual_seed(0), logits arange(12).reshape(2, 6) / 5
    torch.manual_seed(0)
    a = (torch.arange(12.0).reshape(2, 6) / 5).requires_grad_()
    close(F.gumbel_softmax(a, tau=0.5), [[0.005381719209253788, 0.06527652591466904, 0.3897123634815216,
                                           0.03421983867883682, 0.30585795640945435, 0.1995515525341034],
                                          [0.09417743980884552, 0.029077468439936638, 0.010702569037675858,
                                           0.10470344871282578, 0.04965101182460785, 0.7116881012916565]], 1e-5)
    h = F.gumbel_softmax(a, hard=True)
    assert h.tolist() == [[0, 0, 0, 0, 0, 1.0], [0, 0, 0, 0, 1.0, 0]]
    h.mul(torch.arange(6.0)).sum().backward()
    assert a.grad is not None and abs(a.grad.sum().item()) < 1e-5        # straight-through: softmax's gradient


def test_distances_and_bilinear():
    a, b = A(4, 6), A(4, 6)
    close(F.pairwise_distance(T(a), T(b)), np.linalg.norm(a - b + 1e-6, axis=1))
    close(nn.PairwiseDistance(p=1, keepdim=True)(T(a), T(b)), np.abs(a - b + 1e-6).sum(1, keepdims=True))
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    close(nn.CosineSimilarity()(T(a), T(b)), cos)
    w, x2, bias = A(2, 6, 5), A(4, 5), A(2)
    close(F.bilinear(T(a), T(x2), T(w), T(bias)), np.einsum("bi,oij,bj->bo", a, w, x2) + bias, 1e-4)
    assert gradcheck(F.bilinear, (D(a), D(x2), D(w), D(bias)))
    assert gradcheck(F.pairwise_distance, (D(a), D(b)))
    with pytest.raises(RuntimeError, match="bilinear\\(\\): input2 size does not match weight size: got 4 but "
                                           "expected 3"):
        F.bilinear(torch.ones(2, 3), torch.ones(2, 4), torch.ones(5, 3, 3))
    # PyTorch 2.13, manual_seed(0): nn.Bilinear(3, 2, 2).weight[0, 0] and EmbeddingBag(4, 2, padding_idx=1).weight
    torch.manual_seed(0)
    m = nn.Bilinear(3, 2, 2)
    close(m.weight[0, 0], [-0.004322517663240433, 0.3097158372402191])
    assert repr(m) == "Bilinear(in1_features=3, in2_features=2, out_features=2, bias=True)"
    nn.PReLU(3)
    e = nn.EmbeddingBag(4, 2, padding_idx=1)
    close(e.weight, [[-0.7830641269683838, 1.0621709823608398], [0.0, 0.0], [0.41589120030403137,
                     0.8395664095878601], [-0.8264687061309814, -0.7949366569519043]])
    assert repr(e) == "EmbeddingBag(4, 2, mode='mean', padding_idx=1)"


def test_embedding_bag():
    w = A(10, 3)
    idx = [1, 2, 4, 5, 4, 3, 2, 9]
    bags = [idx[:4], idx[4:]]
    for mode, red in (("sum", np.sum), ("mean", np.mean), ("max", np.max)):
        ref = np.stack([red(w[b], 0) for b in bags])
        close(F.embedding_bag(torch.tensor(idx), T(w), torch.tensor([0, 4]), mode=mode), ref)
        close(F.embedding_bag(torch.tensor(idx).reshape(2, 4), T(w), mode=mode), ref)
    psw = np.arange(8.0)
    ref = np.stack([(w[idx[:4]] * psw[:4, None]).sum(0), (w[idx[4:]] * psw[4:, None]).sum(0)])
    close(F.embedding_bag(torch.tensor(idx), T(w), torch.tensor([0, 4]), mode="sum",
                          per_sample_weights=T(psw)), ref, 1e-4)
    ref = np.stack([w[[1, 2, 5]].mean(0), w[[3, 2, 9]].mean(0)])
    close(F.embedding_bag(torch.tensor(idx), T(w), torch.tensor([0, 4]), padding_idx=4), ref)
    out = F.embedding_bag(torch.tensor(idx), T(w), torch.tensor([0, 0, 5]))      # an empty bag is zeros
    close(out[0], [0, 0, 0])
    close(out[1], w[idx[:5]].mean(0))
    close(F.embedding_bag(torch.tensor(idx), T(w), torch.tensor([0, 3, 8]), mode="sum", include_last_offset=True),
          np.stack([w[idx[:3]].sum(0), w[idx[3:]].sum(0)]))
    wd = D(w)
    assert gradcheck(lambda t: F.embedding_bag(torch.tensor(idx), t, torch.tensor([0, 4]), mode="mean"), (wd,))
    assert gradcheck(lambda t: F.embedding_bag(torch.tensor(idx), t, torch.tensor([0, 4]), mode="max"), (wd,))
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(torch.tensor([1, 2]), torch.ones(3, 2))


def _im2col(x, k, d, p, s):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    cols = np.zeros((n, c, k[0], k[1], oh, ow))
    for i in range(k[0]):
        for j in range(k[1]):
            cols[:, :, i, j] = xp[:, :, i * d[0]:i * d[0] + s[0] * oh:s[0], j * d[1]:j * d[1] + s[1] * ow:s[1]]
    return cols.reshape(n, c * k[0] * k[1], oh * ow), (oh, ow)


def test_unfold_fold():
    x = A(2, 3, 5, 6)
    k, d, p, s = (2, 3), (1, 2), (1, 1), (2, 1)
    cols, _ = _im2col(x, k, d, p, s)
    close(F.unfold(T(x), k, d, p, s), cols)
    close(nn.Unfold(2)(T(x[0])), _im2col(x[:1], (2, 2), (1, 1), (0, 0), (1, 1))[0][0])
    # fold is unfold's adjoint: <unfold(x), y> = <x, fold(y)>
    y = A(*cols.shape)
    lhs = (cols * y).sum()
    rhs = (x * F.fold(T(y), (5, 6), k, d, p, s).numpy()).sum()
    assert abs(lhs - rhs) < 1e-3
    ones = F.fold(F.unfold(torch.ones(1, 1, 4, 4), 2), (4, 4), 2)                # how many blocks cover a pixel
    assert ones[0, 0].tolist() == [[1, 2, 2, 1], [2, 4, 4, 2], [2, 4, 4, 2], [1, 2, 2, 1]]
    assert gradcheck(lambda t: F.unfold(t, k, d, p, s), (D(x[:1, :1]),))
    assert gradcheck(lambda t: F.fold(t, (5, 6), k, d, p, s), (D(y[:1, :6]),))
    assert repr(nn.Fold(3, 2)) == "Fold(output_size=3, kernel_size=2, dilation=1, padding=0, stride=1)"
    with pytest.raises(RuntimeError, match=r"expected size of input's dimension 2 to match the calculated number "
                                           r"of sliding blocks 3 \* 3 = 9, but got input.size\(2\)=5."):
        F.fold(torch.ones(2, 12, 5), (4, 4), 2)
    with pytest.raises(RuntimeError, match="but its components must be at least one"):
        F.unfold(torch.ones(1, 1, 2, 2), 3)


def test_losses_against_numpy():
    x1, x2 = A(5), A(5)
    y = np.array([1.0, -1, 1, -1, 1])
    close(F.margin_ranking_loss(T(x1), T(x2), T(y), margin=0.2), np.maximum(0, -y * (x1 - x2) + 0.2).mean())
    close(nn.HingeEmbeddingLoss(reduction="none")(T(x1), T(y)), np.where(y == 1, x1, np.maximum(0, 1 - x1)))
    close(nn.SoftMarginLoss()(T(x1), T(y)), np.log1p(np.exp(-y * x1)).mean())
    a, b, c = A(4, 6), A(4, 6), A(4, 6)
    t = np.array([1.0, -1, 1, -1])
    cos = (a * b).sum(1) / np.sqrt(((a * a).sum(1) + 1e-12) * ((b * b).sum(1) + 1e-12))
    close(nn.CosineEmbeddingLoss(margin=0.1, reduction="none")(T(a), T(b), T(t)),
          np.where(t == 1, 1 - cos, np.maximum(0, cos - 0.1)))
    dp, dn = np.linalg.norm(a - b + 1e-6, axis=1), np.linalg.norm(a - c + 1e-6, axis=1)
    close(nn.TripletMarginLoss()(T(a), T(b), T(c)), np.maximum(0, 1 + dp - dn).mean())
    dpn = np.linalg.norm(b - c + 1e-6, axis=1)
    close(F.triplet_margin_loss(T(a), T(b), T(c), swap=True, reduction="sum"),
          np.maximum(0, 1 + dp - np.minimum(dn, dpn)).sum())
    tgt = np.abs(x2) * 3
    close(nn.PoissonNLLLoss()(T(x1), T(tgt)), (np.exp(x1) - tgt * x1).mean())
    pos = np.abs(x1) + 0.1
    st = np.where(tgt > 1, tgt * np.log(tgt) - tgt + 0.5 * np.log(2 * np.pi * tgt), 0)
    close(F.poisson_nll_loss(T(pos), T(tgt), log_input=False, full=True, reduction="none"),
          pos - tgt * np.log(pos + 1e-8) + st)
    var = np.abs(c)
    close(nn.GaussianNLLLoss()(T(a), T(b), T(var)), (0.5 * (np.log(var) + (a - b) ** 2 / var)).mean())
    close(F.gaussian_nll_loss(T(a), T(b), T(var[:, 0]), full=True, reduction="sum"),
          (0.5 * (np.log(var[:, :1]) + (a - b) ** 2 / var[:, :1]) + 0.5 * np.log(2 * np.pi)).sum(), 1e-4)
    tg = np.array([0, 5, 2, 3])
    z = np.maximum(0, 1 - a[np.arange(4), tg][:, None] + a)
    z[np.arange(4), tg] = 0
    close(nn.MultiMarginLoss()(T(a), torch.tensor(tg)), (z.sum(1) / 6).mean())
    wt = np.arange(1.0, 7.0)
    z2 = np.maximum(0, 0.5 - a[np.arange(4), tg][:, None] + a) ** 2 * wt[tg][:, None]
    z2[np.arange(4), tg] = 0
    close(F.multi_margin_loss(T(a), torch.tensor(tg), p=2, margin=0.5, weight=T(wt), reduction="none"),
          z2.sum(1) / 6)
    lab = (b > 0).astype(np.float64)
    ls = lambda v: -np.log1p(np.exp(-v))
    close(nn.MultiLabelSoftMarginLoss()(T(a), T(lab)), (-(lab * ls(a) + (1 - lab) * ls(-a))).mean(1).mean())


def test_losses_gradcheck_and_errors():
    a, b, c = D(A(3, 4)), D(A(3, 4)), D(np.abs(A(3, 4)) + 0.5)
    y = torch.tensor([1.0, -1, 1], dtype=torch.float64)
    assert gradcheck(lambda p, q: F.cosine_embedding_loss(p, q, y, margin=-0.5), (a, b))
    assert gradcheck(lambda p, q, r: F.triplet_margin_loss(p, q, r, margin=5.0), (a, b, c))
    assert gradcheck(lambda p, q, v: F.gaussian_nll_loss(p, q, v), (a, b, c))
    assert gradcheck(lambda p: F.multi_margin_loss(p, torch.tensor([0, 3, 1]), margin=4.0), (a,))
    assert gradcheck(lambda p: F.poisson_nll_loss(p, c), (a,))
    assert gradcheck(lambda p: F.multilabel_soft_margin_loss(p, (b > 0).double()), (a,))
    with pytest.raises(RuntimeError, match="margin_ranking_loss : All input tensors should have same dimension"):
        F.margin_ranking_loss(torch.ones(3), torch.ones(3), torch.ones(3, 1))
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(torch.ones(2, 3), torch.ones(2, 3), torch.ones(2, 2))
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        F.multi_margin_loss(torch.ones(2, 3), torch.tensor([0, 1]), p=3)
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        F.soft_margin_loss(torch.ones(2), torch.ones(2), reduction="bad")


def test_parameter_list_and_dict():
    pl = nn.ParameterList([torch.ones(3), nn.Parameter(torch.zeros(2, 2))])
    assert isinstance(pl[0], nn.Parameter) and len(pl) == 2
    pl.append(torch.ones(1))
    m = nn.Module()
    m.pl = pl
    assert [n for n, _ in m.named_parameters()] == ["pl.0", "pl.1", "pl.2"]
    assert list(m.state_dict()) == ["pl.0", "pl.1", "pl.2"]
    assert repr(nn.ParameterList([torch.ones(3)])) == \
        "ParameterList(  (0): Parameter containing: [tgrad.float32 of size 3])"
    assert len(pl[1:]) == 2 and pl[-1].shape == (1,)
    pd = nn.ParameterDict({"b": torch.ones(2), "a": torch.zeros(1)})
    assert list(pd.keys()) == ["a", "b"] and isinstance(pd["a"], nn.Parameter)      # a dict's keys sorted
    pd["c"] = nn.Parameter(torch.ones(3))
    assert "c" in pd and len(pd) == 3 and [n for n, _ in pd.named_parameters()] == ["a", "b", "c"]
    assert pd.pop("a").shape == (1,) and list(pd) == ["b", "c"]
    opt = torch.optim.SGD(pd.parameters(), lr=1.0)
    (pd["b"].sum() + pd["c"].sum()).backward()
    opt.step()
    assert pd["b"].tolist() == [0.0, 0.0]
    with pytest.raises(TypeError, match="cannot be used as a key as it is not a string"):
        pd[1] = torch.ones(1)
    with pytest.raises(IndexError, match="index 5 is out of range"):
        pl[5]


def test_lazy_linear_becomes_linear_with_pytorchs_init():
    # PyTorch 2.13 printed these for the same seeded program (the init is drawn at the first forward)
    torch.manual_seed(0)
    m = nn.Sequential(nn.LazyLinear(3), nn.ReLU(), nn.LazyLinear(2))
    assert "LazyLinear(in_features=0, out_features=3, bias=True)" in repr(m)
    assert isinstance(m[0].weight, nn.UninitializedParameter)
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter"):
        m[0].weight.shape
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    x = torch.randn(4, 5)
    y = m(x)
    assert type(m[0]) is nn.Linear and type(m[0].weight) is nn.Parameter and m[2].in_features == 3
    close(y.reshape(-1), [0.170572, -0.024064, 0.720675, -0.299078, 0.630633, -0.283103, 0.923241, -0.533312])
    y.sum().backward()
    opt.step()                                         # the optimizer holds the materialized parameters
    close(m[0].weight.reshape(-1)[:5], [-0.27365, 0.382634, 0.22528, 0.238693, 0.032241])


def test_dropout3d_draws_pytorchs_channels():
    # PyTorch 2.13, manual_seed(0): Dropout3d(0.5)(ones(2, 3, 2, 1, 1)) kept only channel (0, 2)
    torch.manual_seed(0)
    y = nn.Dropout3d(0.5)(torch.ones(2, 3, 2, 1, 1))
    assert y.reshape(2, 3, 2).tolist() == [[[0, 0], [0, 0], [2, 2]], [[0, 0], [0, 0], [0, 0]]]
    close(F.dropout3d(torch.ones(3, 1, 1, 2), 0.4).reshape(-1), [1 / 0.6] * 6)
    assert F.dropout3d(torch.ones(2, 2, 1, 1, 1), 0.5, training=False).tolist() == torch.ones(2, 2, 1, 1, 1).tolist()


def test_affine_grid_and_grid_sample():
    """Spatial-transformer sampling.  Reference sums were printed by PyTorch 2.13 for the same inputs."""
    rng = np.random.default_rng(0)
    x = T(rng.standard_normal((2, 3, 4, 5)))
    theta = T(rng.standard_normal((2, 2, 3)) * 0.5 + np.array([[1, 0, 0], [0, 1, 0]]))
    g = F.affine_grid(theta, (2, 3, 3, 6), align_corners=False)
    close(g.reshape(-1)[:4], [-1.40506, -0.41192, -0.94046, -0.64972])
    close(g.sum(), -8.9465, 1e-4)
    sums = {("bilinear", "zeros", False): 27.6782, ("bilinear", "border", False): 30.3978,
            ("nearest", "zeros", False): 29.0684, ("nearest", "border", False): 32.2976,
            ("bilinear", "zeros", True): 26.994, ("bilinear", "border", True): 28.0267,
            ("nearest", "zeros", True): 33.5756, ("nearest", "border", True): 34.2153}
    for (mode, pad, ac), ref in sums.items():
        y = F.grid_sample(x, F.affine_grid(theta, (2, 3, 3, 6), align_corners=ac), mode=mode, padding_mode=pad,
                          align_corners=ac)
        close(y.sum(), ref, 2e-4)
    ident = torch.tensor([[[1.0, 0, 0], [0, 1, 0]]]).expand(2, 2, 3)
    close(F.grid_sample(x, F.affine_grid(ident, (2, 3, 4, 5), align_corners=True), align_corners=True), x.numpy())
    xd = D(rng.standard_normal((1, 2, 3, 4)))
    td = D(rng.standard_normal((1, 2, 3)) * 0.3 + np.array([[1, 0, 0], [0, 1, 0]]))
    assert gradcheck(lambda a, t: F.grid_sample(a, F.affine_grid(t, (1, 2, 2, 3), align_corners=False),
                                                align_corners=False), (xd, td))
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior has changed"):
        F.affine_grid(theta, (2, 3, 3, 6))
    with pytest.raises(ValueError, match="Expected a batch of 2D affine matrices of shape Nx2x3"):
        F.affine_grid(torch.ones(2, 3, 3), (2, 3, 3, 6), align_corners=False)


def test_alpha_dropout_draws_pytorchs_numbers():
    # PyTorch 2.13, manual_seed(0), x = arange(12).reshape(2, 3, 2) / 5 - 1: printed these
    torch.manual_seed(0)
    x = torch.arange(12.0).reshape(2, 3, 2) / 5 - 1
    close(nn.AlphaDropout(0.3)(x).reshape(-1), [-1.059548, -1.059548, -0.06248, -1.059548, 0.281902, -1.059548,
                                                0.626283, 0.798473, 0.970664, 1.142854, 1.315045, 1.487235])
    close(F.feature_alpha_dropout(x, 0.4, training=True).reshape(-1),
          [-0.256188, -0.083531, -0.910642, -0.910642, 0.434438, 0.607095, 0.779751, 0.952408, 1.125064, 1.297721,
           1.470377, 1.643034])
    assert F.alpha_dropout(x, 0.5) is x                     # training=False by default
    assert repr(nn.AlphaDropout(0.2)) == "AlphaDropout(p=0.2, inplace=False)"


def test_embedding_bag_from_pretrained():
    w = torch.arange(12.).view(4, 3)
    bag = torch.nn.EmbeddingBag.from_pretrained(w, mode="sum")
    assert not bag.weight.requires_grad and bag.mode == "sum"
    out = bag(torch.tensor([0, 1, 2, 3]), torch.tensor([0, 2]), per_sample_weights=torch.tensor([1., 2., .5, 1.]))
    np.testing.assert_array_equal(out.numpy(), [[6., 9., 12.], [12., 13.5, 15.]])   # PyTorch 2.13's values
    assert torch.nn.EmbeddingBag.from_pretrained(w, freeze=False).weight.requires_grad
    with pytest.raises(AssertionError, match="expected to be 2-dimensional"):
        torch.nn.EmbeddingBag.from_pretrained(w.view(-1))
