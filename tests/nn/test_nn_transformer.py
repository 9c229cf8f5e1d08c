"""nn.MultiheadAttention and the Transformer family: PyTorch 2.13's outputs and gradients from the same
state_dicts (tests/data/transformer_ref.npz, made by tests/data/make_transformer_ref.py), parameter names,
masks, subclassing, errors."""
import copy
import os

import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F

R = np.load(os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "transformer_ref.npz"))


def T(a, device, **k):
    return tgrad.tensor(np.asarray(a), device=device, **k)


def _load(prefix, m, device):
    sd = {k.split("/sd/")[1]: T(R[k], device) for k in R.files if k.startswith(prefix + "/sd/")}
    res = m.load_state_dict(sd)
    assert not res.missing_keys and not res.unexpected_keys
    assert set(m.state_dict()) == set(sd)
    return m.to(device)


def _close(got, name, atol=1e-6):
    np.testing.assert_allclose(got.detach().cpu().numpy(), R[name], atol=atol, rtol=1e-5)


def test_multihead_self_attention_batch_first_with_padding(device):
    m = _load("mha", nn.MultiheadAttention(8, 2, batch_first=True).eval(), device)
    x, kpm = T(R["mha/x"], device), T(R["mha/kpm"], device)
    o, w = m(x, x, x, key_padding_mask=kpm)
    _close(o, "mha/o")
    _close(w, "mha/w")
    o2, w2 = m(x, x, x, key_padding_mask=kpm, need_weights=False)   # the fused sdpa path
    assert w2 is None
    _close(o2, "mha/o2")


def test_multihead_cross_attention_kdim_vdim_bias_kv_zero_attn(device):
    m = _load("mhx", nn.MultiheadAttention(8, 4, kdim=6, vdim=5, add_bias_kv=True, add_zero_attn=True), device)
    assert m.in_proj_weight is None and tuple(m.k_proj_weight.shape) == (8, 6)
    q = T(R["mhx/q"], device, requires_grad=True)
    o, w = m(q, T(R["mhx/k"], device), T(R["mhx/v"], device), attn_mask=T(R["mhx/am"], device),
             average_attn_weights=False)
    assert tuple(w.shape) == (2, 4, 4, 9)
    _close(o, "mhx/o")
    _close(w, "mhx/w")
    o.sum().backward()
    _close(q.grad, "mhx/gq")
    _close(m.in_proj_bias.grad, "mhx/gw", 2e-6)


def test_transformer_pre_norm_gelu_causal_decoder(device):
    t = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=32,
                       dropout=0.0, activation="gelu", batch_first=True, norm_first=True)
    _load("tr", t, device)
    mask = nn.Transformer.generate_square_subsequent_mask(5, device=device)
    np.testing.assert_array_equal(mask.cpu().numpy(), R["tr/mask"])
    tgt = T(R["tr/tgt"], device, requires_grad=True)
    o = t(T(R["tr/src"], device), tgt, tgt_mask=mask, tgt_is_causal=True)
    _close(o, "tr/o", 2e-6)
    o.pow(2).sum().backward()
    _close(tgt.grad, "tr/gtgt", 2e-5)


def test_post_norm_encoder_bool_mask_and_padding(device):
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0), 2,
                                enable_nested_tensor=False)
    _load("enc", enc, device)
    assert enc.layers[0] is not enc.layers[1] and enc.layers[0].linear1.weight is not enc.layers[1].linear1.weight
    o = enc(T(R["enc/s"], device), mask=T(R["enc/sm"], device), src_key_padding_mask=T(R["mha/kpm"], device))
    _close(o, "enc/o", 2e-6)


def test_parameter_names_as_pytorch():
    m = nn.MultiheadAttention(8, 2)
    assert list(dict(m.named_parameters())) == ["in_proj_weight", "in_proj_bias", "out_proj.weight",
                                                "out_proj.bias"]
    layer = nn.TransformerDecoderLayer(8, 2, dim_feedforward=4, bias=False)
    names = list(layer.state_dict())
    assert names[:2] == ["self_attn.in_proj_weight", "self_attn.out_proj.weight"] and "norm3.weight" in names
    assert "norm1.bias" not in names and layer.norm1.bias is None


def test_transformer_subclassed_at_import_time():
    class Model(nn.Transformer):
        def __init__(self, ntoken, d):
            super().__init__(d_model=d, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8)
            self.head = nn.Linear(d, ntoken)

    m = Model(5, 4)
    assert isinstance(m.encoder, nn.TransformerEncoder) and isinstance(m.decoder.layers[0], nn.TransformerDecoderLayer)
    y = m.head(m(tgrad.randn(3, 2, 4), tgrad.randn(3, 2, 4)))
    assert tuple(y.shape) == (3, 2, 5)
    copy.deepcopy(m)


def test_dropout_only_in_training():
    tgrad.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.5)
    x = tgrad.randn(4, 3, 8)
    a, b = layer(x), layer(x)
    assert not np.allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy())
    layer.eval()
    np.testing.assert_array_equal(layer(x).detach().cpu().numpy(), layer(x).detach().cpu().numpy())


def test_errors():
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(6, 4)
    t = nn.Transformer(d_model=4, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=4)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        t(tgrad.randn(3, 2, 4), tgrad.randn(3, 1, 4))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        t(tgrad.randn(3, 2, 4), tgrad.randn(3, 2, 5))
    m = nn.MultiheadAttention(4, 2)
    x = tgrad.randn(3, 2, 4)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is \(2, 3\), but should be \(3, 3\)."):
        m(x, x, x, attn_mask=tgrad.zeros(2, 3))
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(x, x, x, is_causal=True)


def test_gelu_tanh_matches_pytorch():
    x = tgrad.tensor([-3.0, -0.5, 0.0, 0.7, 2.5])
    # torch.nn.GELU(approximate='tanh')(x) in PyTorch 2.13
    np.testing.assert_allclose(nn.GELU(approximate="tanh")(x).cpu().numpy(),
                               [-0.00363743, -0.15428600, 0.0, 0.53057015, 2.48491573], atol=2e-7)
    np.testing.assert_allclose(F.gelu(x, approximate="tanh").cpu().numpy(), nn.GELU("tanh")(x).cpu().numpy())
