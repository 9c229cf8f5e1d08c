"""Surface and bits that the issue-14 programs in tests/data/programs hit (round 7: GAN, U-Net, seq2seq with
attention, taggers, CTC, GPT with a KV cache, metric learning, distillation, MAML, flows, MDN, neural ODE...)."""
import io

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F

CPU_ONLY = True


def _f32(bits):
    return tgrad.tensor(np.array(bits, dtype=np.int32).view(np.float32).reshape(4, 3))


def _bits(t):
    return t.detach().numpy().view(np.int32).ravel().tolist()


def test_repr_of_a_no_grad_view_of_a_leaf_says_requires_grad():
    # PyTorch: a view of a leaf that requires grad, made under no_grad, requires grad (no grad_fn) and prints so
    w = tgrad.nn.Parameter(tgrad.zeros(3, 2))
    with tgrad.no_grad():
        row = w[0]
        assert row.requires_grad and row.grad_fn is None
        assert repr(row) == "tensor([0., 0.], requires_grad=True)"
        assert repr(w[:2] * 2) == "tensor([[0., 0.],\n        [0., 0.]])"
    e = tgrad.nn.Embedding(4, 2, padding_idx=0)
    with tgrad.no_grad():
        assert repr(e.weight[0]) == "tensor([0., 0.], requires_grad=True)"


# PyTorch 2.13 (cpu) printed these float32 bits (tests/data/make_kl_div_ref.py printed them):
# lp = log_softmax(randn(4, 3) * 3 / 4), p = softmax(b / 4), lq = log_softmax(b / 4)
LP = [-1098131723, -1076686703, -1069283431, -1093286790, -1076617188, -1074641212, -1081833284, -1087005670, -1074770467, -1080213248, -1078997162, -1085661850]
P = [1042637202, 1060336681, 1041026509, 1052158071, 1046078547, 1054631265, 1047750789, 1041840521, 1058854782, 1054914004, 1050182909, 1049019696]
LQ = [-1075224770, -1095375710, -1073875172, -1081872828, -1077537898, -1084766155, -1078466861, -1074584325, -1090856596, -1085091396, -1080360165, -1079322319]
KL_NONE = [-1098895969, 1063790595, 1041754208, -1101004165, 1019171392, 1055351811, -1111270112, -1103733662, 1062837154, 1043728324, 1028014344, -1106053378]
KL_BM = [1054620725]
KL_GRAD = [-1121623662, -1103924183, -1123234355, -1112102793, -1118182317, -1109629599, -1116510075, -1122420343, -1105406082, -1109346860, -1114077955, -1115241168]
KLL_NONE = [-1098895969, 1063790594, 1041754207, -1101004164, 1019171414, 1055351812, -1111270110, -1103733662, 1062837154, 1043728322, 1028014350, -1106053378]
KLL_BM = [1054620722]
KLL_GRAD = [-1121623662, -1103924183, -1123234356, -1112102794, -1118182316, -1109629599, -1116510076, -1122420343, -1105406082, -1109346860, -1114077955, -1115241169]
XLOGY_PP = [-1097415851, -1098972469, -1098141875, -1094957973, -1096247483, -1095121535, -1095836881, -1097758785, -1097224283, -1095168704, -1095191362, -1095507311]
XLOGY_2 = [-1089656281, 1041389428, -1121349986, 1027027837, -1112586767, 1025362696, -1107959543, -1094075294, 1035908716, 1034218265, -1125567875, -1109682155]


def test_kl_div_and_xlogy_have_atens_float32_bits():
    # kl_div = xlogy(y, y) - y x with xlogy's scalar (correctly rounded) log; log_target: exp(y) (y - x) with
    # ATen's exp (MKL, correctly rounded): numpy's float32 log/exp gave other last bits (the distillation program)
    lp, p, lq = _f32(LP), _f32(P), _f32(LQ)
    for lt, tgt, none, bm, grad in ((False, p, KL_NONE, KL_BM, KL_GRAD), (True, lq, KLL_NONE, KLL_BM, KLL_GRAD)):
        x = lp.clone().requires_grad_()
        assert _bits(F.kl_div(x, tgt, reduction="none", log_target=lt)) == none
        out = F.kl_div(x, tgt, reduction="batchmean", log_target=lt)
        assert _bits(out) == bm
        out.backward()
        assert _bits(x.grad) == grad
    assert _bits(tgrad.xlogy(p, p)) == XLOGY_PP
    assert _bits(tgrad.special.xlogy(lp.exp(), p * 3)) == XLOGY_2


def test_scatter_with_reduce_add_and_multiply():
    # the deprecated scatter(..., reduce=) form: scatter_reduce('sum' | 'prod', include_self=True); values from
    # PyTorch 2.13
    i = tgrad.tensor([[1, 2], [3, 3], [0, 0]])
    s = tgrad.tensor([[1., 2.], [3., 4.], [5., 6.]])
    z = tgrad.zeros(3, 4)
    with pytest.warns(UserWarning, match="reduce argument of torch.scatter with Tensor src is deprecated"):
        tgrad.Tensor._scatter_reduce_warned = False
        got = z.scatter(1, i, s, reduce="add")
    assert got.tolist() == [[0., 1., 2., 0.], [0., 0., 0., 7.], [11., 0., 0., 0.]]
    assert z.scatter(1, i, 2.0, reduce="add").tolist() == [[0., 2., 2., 0.], [0., 0., 0., 4.], [4., 0., 0., 0.]]
    assert tgrad.ones(3, 4).scatter(1, i, s, reduce="multiply").tolist() == \
        [[1., 1., 2., 1.], [1., 1., 1., 12.], [30., 1., 1., 1.]]
    o = tgrad.ones(3, 4)
    assert o.scatter_(1, i, 3.0, reduce="multiply") is o
    assert o.tolist() == [[1., 3., 3., 1.], [1., 1., 1., 9.], [9., 1., 1., 1.]]
    assert tgrad.scatter(z, 1, i, s, reduce="add").tolist() == got.tolist()
    r = tgrad.arange(4).scatter(0, tgrad.tensor([1, 1]), tgrad.tensor([5, 6]), reduce="add")
    assert r.tolist() == [0, 12, 2, 3] and r.dtype == tgrad.int64
    for bad in ("mean", "sum"):
        with pytest.raises(RuntimeError, match="reduce argument must be either add or multiply."):
            z.scatter(1, i, 2.0, reduce=bad)
    assert z.tolist() == [[0.] * 4] * 3


def test_segment_reduce_matches_pytorch():
    # PyTorch 2.13's values: empty segments give sum 0, prod 1, max -inf, min inf, mean nan, or initial
    vals = tgrad.arange(1., 8.)
    lengths = tgrad.tensor([2, 0, 3, 2])
    want = {"sum": ([3., 0., 12., 13.], [5., 2., 14., 15.]), "max": ([2., -np.inf, 5., 7.], [2., 2., 5., 7.]),
            "min": ([1., np.inf, 3., 6.], [1., 2., 2., 2.]), "prod": ([2., 1., 60., 42.], [4., 2., 120., 84.]),
            "mean": ([1.5, np.nan, 4., 6.5], [2.5, 2., 14 / 3, 7.5])}
    for red, (plain, init) in want.items():
        np.testing.assert_allclose(tgrad.segment_reduce(vals, red, lengths=lengths).numpy(), plain, rtol=1e-6)
        np.testing.assert_allclose(tgrad.segment_reduce(vals, red, lengths=lengths, initial=2.0).numpy(), init,
                                   rtol=1e-6)
    offsets = tgrad.tensor([0, 2, 2, 5, 7])
    assert tgrad.segment_reduce(vals, "sum", offsets=offsets).tolist() == [3., 0., 12., 13.]
    d2 = tgrad.arange(12.).view(6, 2)
    assert tgrad.segment_reduce(d2, "amax", lengths=tgrad.tensor([1, 5])).tolist() == [[0., 1.], [10., 11.]]
    x = vals.clone().requires_grad_()
    tgrad.segment_reduce(x, "mean", lengths=lengths).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [.5, .5, 1 / 3, 1 / 3, 1 / 3, .5, .5], rtol=1e-6)
    x = vals.clone().requires_grad_()
    tgrad.segment_reduce(x, "max", lengths=lengths)[0].backward()
    assert x.grad.tolist() == [0., 1., 0., 0., 0., 0., 0.]
    with pytest.raises(RuntimeError, match=r"Expected all rows of lengths along axis to sum to data.size\(lengths"):
        tgrad.segment_reduce(vals, "sum", lengths=tgrad.tensor([2, 2]))
    with pytest.raises(RuntimeError, match="Either lengths or offsets must be defined."):
        tgrad.segment_reduce(vals, "sum")
    with pytest.raises(RuntimeError, match="indices based reduction is not supported yet."):
        tgrad.segment_reduce(vals, "sum", lengths=lengths, indices=tgrad.tensor([0]))
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, amax or amin, got avg"):
        tgrad.segment_reduce(vals, "avg", lengths=lengths)
    with pytest.raises(NotImplementedError, match="\"_segment_reduce_cpu\" not implemented for 'Long'"):
        tgrad.segment_reduce(tgrad.arange(7), "sum", lengths=lengths)


def test_view_dtype_reinterprets_the_bytes():
    x = tgrad.arange(6.).view(2, 3)
    i = x.view(tgrad.int32)
    assert i.shape == (2, 3) and i.stride() == (3, 1)
    assert i.numpy().tolist() == np.arange(6, dtype=np.float32).view(np.int32).reshape(2, 3).tolist()
    assert x.view(tgrad.int16).shape == (2, 6) and x.view(tgrad.uint8).stride() == (12, 1)
    d = tgrad.arange(4.).view(2, 2).view(tgrad.float64)
    assert d.shape == (2, 1) and d.stride() == (1, 1)
    assert d.numpy().ravel().tolist() == np.arange(4, dtype=np.float32).view(np.float64).tolist()
    assert tgrad.arange(4.).view(tgrad.complex64).tolist() == [1j, 2 + 3j]
    y = tgrad.randn(4, requires_grad=True)
    for dt in (tgrad.int32, tgrad.float32, tgrad.bfloat16):     # not differentiable, not an autograd view
        v = y.view(dt)
        assert not v.requires_grad and v.grad_fn is None and not v._is_view()
    z = tgrad.zeros(3)
    z.view(tgrad.int32)[0] = 1065353216                          # writes through to z's storage
    assert z.tolist() == [1., 0., 0.]
    assert (tgrad.tensor([1.0, -2.0]).view(tgrad.int32) >> 31).tolist() == [0, -1]
    assert tgrad.tensor([1, 0], dtype=tgrad.uint8).view(tgrad.bool).tolist() == [True, False]
    # PyTorch's errors
    for f, msg in ((lambda: tgrad.tensor(1.).view(tgrad.int16),
                    r"self.dim\(\) cannot be 0 to view Float as Short \(different element sizes\)"),
                   (lambda: x.t().view(tgrad.int16),
                    r"self.stride\(-1\) must be 1 to view Float as Short \(different element sizes\), but got 3"),
                   (lambda: tgrad.arange(3.).view(tgrad.float64),
                    r"self.size\(-1\) must be divisible by 2 to view Float as Double \(different element sizes\), "
                    "but got 3"),
                   (lambda: tgrad.arange(8.).view(2, 4)[:, 1:3].view(tgrad.float64),
                    r"self.storage_offset\(\) must be divisible by 2 to view Float as Double"),
                   (lambda: tgrad.arange(12.).view(4, 3)[:, :2].view(tgrad.float64),
                    r"self.stride\(0\) must be divisible by 2 to view Float as Double \(different element sizes\), "
                    "but got 3")):
        with pytest.raises(RuntimeError, match=msg):
            f()


def _save_load(obj, **kw):
    buf = io.BytesIO()
    tgrad.save(obj, buf)
    buf.seek(0)
    return tgrad.load(buf, **kw)


def test_saved_views_of_one_storage_load_as_views_of_one_storage():
    # PyTorch saves storages, so a view and its base (or two slices) load sharing memory (state_dict_io program)
    t = tgrad.arange(10.)
    v, whole, tt = _save_load([t[2:5], t, t.view(2, 5).t()])
    v[0] = 100
    assert whole[:4].tolist() == [0., 1., 100., 3.] and tt[:, 0].tolist() == [0., 1., 100., 3., 4.]
    assert tt[0, 1] == 5.0
    assert v.storage_offset() == 2 and tt.stride() == (1, 5) and v.is_contiguous()
    a = tgrad.nn.Parameter(tgrad.ones(4))
    loaded = _save_load({"a": a, "b": a.detach()[1:3]})
    assert type(loaded["a"]) is tgrad.nn.Parameter and loaded["a"].requires_grad
    with tgrad.no_grad():
        loaded["a"][2] = 7
    assert loaded["b"].tolist() == [1., 7.]
    p, q = _save_load((tgrad.zeros(6)[:3], tgrad.zeros(6)[3:]))     # two storages: independent
    q[0] = 5
    assert p.tolist() == [0., 0., 0.]
    m = _save_load(tgrad.nn.Linear(2, 2), weights_only=False)       # the pickled form too
    assert m.weight.shape == (2, 2)


def test_saving_one_storage_as_two_dtypes_is_refused(tmp_path):
    t = tgrad.arange(10.)
    path = tmp_path / "x.pt"
    with pytest.raises(RuntimeError, match="Cannot save multiple tensors or storages that view the same data as "
                                           "different types"):
        tgrad.save([t[4:].view(tgrad.int32), t], path)
    assert not path.exists()


def test_a_view_entry_outside_its_storage_is_a_checkpoint_error():
    t = tgrad.arange(4.)
    buf = io.BytesIO()
    tgrad.save([t[1:], t], buf)
    blob = buf.getvalue().replace(b'[4],[1],0]', b'[9],[1],0]')
    assert blob != buf.getvalue()
    with pytest.raises(tgrad.serialization.CheckpointError, match="does not fit its storage"):
        tgrad.load(io.BytesIO(blob))


def test_channels_last_memory_format():
    # PyTorch 2.13's strides: C innermost, then W, H, (D), N
    x = tgrad.randn(2, 4, 6, 6)
    cl = x.to(memory_format=tgrad.channels_last)
    assert cl.stride() == (144, 1, 24, 4) and tgrad.equal(cl, x)
    assert cl.is_contiguous(memory_format=tgrad.channels_last) and not cl.is_contiguous()
    assert not x.is_contiguous(memory_format=tgrad.channels_last)
    assert x.contiguous(memory_format=tgrad.channels_last).stride() == (144, 1, 24, 4)
    assert cl.contiguous().stride() == (144, 36, 6, 1)
    assert x.clone(memory_format=tgrad.channels_last).stride() == (144, 1, 24, 4)
    assert cl.contiguous(memory_format=tgrad.channels_last) is cl
    assert tgrad.ones(3, 1, 1, 1).is_contiguous(memory_format=tgrad.channels_last)
    assert not tgrad.ones(2, 3).is_contiguous(memory_format=tgrad.channels_last)
    v = tgrad.randn(1, 2, 3, 4, 5).contiguous(memory_format=tgrad.channels_last_3d)
    assert v.stride() == (120, 1, 40, 10, 2) and v.is_contiguous(memory_format=tgrad.channels_last_3d)
    for f in (lambda: tgrad.ones(2, 3).contiguous(memory_format=tgrad.channels_last),
              lambda: tgrad.ones(2, 3).to(memory_format=tgrad.channels_last)):
        with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
            f()
    y = x.clone().requires_grad_()
    y.to(memory_format=tgrad.channels_last).sum().backward()
    assert y.grad.tolist() == tgrad.ones(2, 4, 6, 6).tolist()
    assert tgrad.empty(2, 3, 4, 5, memory_format=tgrad.channels_last).stride() == (60, 1, 15, 3)
    assert tgrad.empty(2, 1, 3, 3, memory_format=tgrad.channels_last).stride() == (9, 1, 3, 1)
    z = tgrad.zeros_like(x, memory_format=tgrad.channels_last)
    assert z.stride() == (144, 1, 24, 4) and z.sum().item() == 0
    assert tgrad.ones_like(v, memory_format=tgrad.channels_last_3d).stride() == (120, 1, 40, 10, 2)
    assert x.to(tgrad.float64, memory_format=tgrad.channels_last).stride() == (144, 1, 24, 4)


def test_rnn_cells_use_atens_sigmoid_and_tanh():
    # GRUCell / LSTMCell: ATen composes linear, sigmoid_, tanh_ (SLEEF exp; tanh rounded as from float64); the
    # fused cell kernels gave other last bits than the same ops written out (the beam_search program)
    tgrad.manual_seed(47)
    x, hx, cx = tgrad.randn(5, 12) * 2, tgrad.randn(5, 12), tgrad.randn(5, 12)
    gru, lstm = tgrad.nn.GRUCell(12, 12), tgrad.nn.LSTMCell(12, 12)
    with tgrad.no_grad():
        i_r, i_z, i_n = F.linear(x, gru.weight_ih, gru.bias_ih).chunk(3, 1)
        h_r, h_z, h_n = F.linear(hx, gru.weight_hh, gru.bias_hh).chunk(3, 1)
        r, z = (h_r + i_r).sigmoid(), (h_z + i_z).sigmoid()
        n = (i_n + h_n * r).tanh()
        assert _bits(gru(x, hx)) == _bits((hx - n) * z + n)
        gates = F.linear(hx, lstm.weight_hh, lstm.bias_hh) + F.linear(x, lstm.weight_ih, lstm.bias_ih)
        i, f, g, o = gates.chunk(4, 1)
        cy = f.sigmoid() * cx + i.sigmoid() * g.tanh()
        hy = o.sigmoid() * cy.tanh()
        h2, c2 = lstm(x, (hx, cx))
        assert _bits(c2) == _bits(cy) and _bits(h2) == _bits(hy)


def test_cross_map_lrn2d_forward_and_its_legacy_backward():
    # PyTorch 2.13's values (its legacy Function's backward is not the exact gradient of the forward)
    x = (tgrad.arange(24.).view(1, 4, 2, 3) * 0.37 - 3).requires_grad_()
    m = tgrad.nn.CrossMapLRN2d(3, alpha=0.05, beta=0.75, k=1.5)
    y = m(x)
    (y * tgrad.arange(24.).view(1, 4, 2, 3)).sum().backward()
    np.testing.assert_allclose(y.detach().numpy().ravel(), [
        -2.051222, -1.83318, -1.599761, -1.353121, -1.09596, -0.831419, -0.52514, -0.278755, -0.027298, 0.224662,
        0.472518, 0.711949, 0.883554, 1.09967, 1.302578, 1.488995, 1.656665, 1.804383, 2.254644, 2.451088,
        2.629083, 2.787148, 2.924603, 3.041492], rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(x.grad.numpy().ravel(), [
        0.0, 0.622536, 1.301676, 2.024965, 2.776399, 3.537312, 4.003283, 4.735668, 5.457371, 6.138613, 6.750892,
        7.269567, 7.230867, 7.66937, 7.982157, 8.152418, 8.171449, 8.038622, 8.806306, 8.514544, 8.044364,
        7.416626, 6.66023, 5.808987], rtol=2e-6, atol=2e-6)
    assert repr(m) == "CrossMapLRN2d(3, alpha=0.05, beta=0.75, k=1.5)"
    with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 2D instead."):
        m(tgrad.ones(2, 3))


def test_pow_3_and_minus_2_round_as_atens_products():
    # ATen's pow kernel: x ** 3 is x * x * x and x ** -2 is 1 / (x * x) (each step rounded), not pow rounded once
    x = np.random.default_rng(3).uniform(1, 3, 4096).astype(np.float32)
    t = tgrad.tensor(x)
    for e in (3, 3.0):
        assert _bits(t.pow(e)) == (x * x * x).view(np.int32).tolist()
    for e in (-2, -2.0):
        assert _bits(t ** e) == (np.float32(1) / (x * x)).view(np.int32).tolist()
    d = x.astype(np.float64)
    np.testing.assert_array_equal(tgrad.tensor(d).pow(3).numpy(), d * d * d)
    special = tgrad.tensor([0.0, -0.0, np.inf, -np.inf, np.nan])
    np.testing.assert_array_equal(special.pow(3).numpy(), [0.0, -0.0, np.inf, -np.inf, np.nan])
    np.testing.assert_array_equal(special.pow(-2).numpy(), [np.inf, np.inf, 0.0, 0.0, np.nan])


def test_float32_cumsum_and_cumprod_carry_a_double_as_aten():
    # ATen's cpu kernels: cum_number is acc_type<float, false> = double, each output rounded once
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(5000) * 3).astype(np.float32)
    assert _bits(tgrad.tensor(a).cumsum(0)) == np.cumsum(a.astype(np.float64)).astype(np.float32).view(np.int32).tolist()
    m = rng.standard_normal((30, 40)).astype(np.float32)
    for d in (0, 1):
        want = np.cumsum(m.astype(np.float64), d).astype(np.float32)
        assert _bits(tgrad.tensor(m).cumsum(d)) == want.view(np.int32).ravel().tolist()
    p = (1 + a[:300] * 0.001).astype(np.float32)
    assert _bits(tgrad.tensor(p).cumprod(0)) == np.cumprod(p.astype(np.float64)).astype(np.float32).view(np.int32).tolist()


def test_float32_unary_math_rounds_from_float64_as_atens_nearly_always_does():
    # ATen's SLEEF u10 expm1/log1p/sinh/cosh/log2/log10 (and selu's expm1) are the float64 values rounded in >99.3%
    # of float32 inputs; float32 evaluation matched in 60-90% (the celu/selu and metrics programs)
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(4000) * 3).astype(np.float32)
    p = (rng.random(4000) * 5 + 0.01).astype(np.float32)
    for name, src, ref in (("expm1", x, np.expm1), ("log1p", p, np.log1p), ("sinh", x, np.sinh),
                           ("cosh", x, np.cosh), ("log2", p, np.log2), ("log10", p, np.log10)):
        got = getattr(tgrad, name)(tgrad.tensor(src))
        with np.errstate(over="ignore"):
            want = ref(src.astype(np.float64)).astype(np.float32)
        assert _bits(got) == want.view(np.int32).tolist(), name
    neg = x[x <= 0]
    want = np.expm1(neg.astype(np.float64)).astype(np.float32) * np.float32(1.0507009873554804934 *
                                                                            1.6732632423543772848)
    assert _bits(F.selu(tgrad.tensor(neg))) == want.view(np.int32).tolist()
