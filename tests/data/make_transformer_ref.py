"""Reference outputs of PyTorch 2.13 for tests/nn/test_nn_transformer.py (run with a torch install:
``python tests/data/make_transformer_ref.py``; writes transformer_ref.npz next to this file)."""
import os

import numpy as np
import torch
import torch.nn as nn
torch.manual_seed(0)
out = {}
def save(prefix, m):
    for k, v in m.state_dict().items(): out[f"{prefix}/sd/{k}"] = v.detach().numpy()
# MHA self-attention, batch_first, need_weights default, key_padding_mask
m = nn.MultiheadAttention(8, 2, batch_first=True); m.eval(); save("mha", m)
x = torch.randn(3, 5, 8); out["mha/x"] = x.numpy()
kpm = torch.tensor([[False]*5, [False]*3+[True]*2, [False]*4+[True]]); out["mha/kpm"] = kpm.numpy()
o, w = m(x, x, x, key_padding_mask=kpm); out["mha/o"] = o.detach().numpy(); out["mha/w"] = w.detach().numpy()
o2, _ = m(x, x, x, key_padding_mask=kpm, need_weights=False); out["mha/o2"] = o2.detach().numpy()
# cross attention with kdim/vdim, not batch first, float attn_mask, per-head weights, bias_kv, zero attn
m = nn.MultiheadAttention(8, 4, kdim=6, vdim=5, add_bias_kv=True, add_zero_attn=True); save("mhx", m)
q = torch.randn(4, 2, 8, requires_grad=True); k = torch.randn(7, 2, 6); v = torch.randn(7, 2, 5)
am = torch.randn(4, 7)
o, w = m(q, k, v, attn_mask=am, average_attn_weights=False)
out.update({"mhx/q": q.detach().numpy(), "mhx/k": k.numpy(), "mhx/v": v.numpy(), "mhx/am": am.numpy(),
            "mhx/o": o.detach().numpy(), "mhx/w": w.detach().numpy()})
o.sum().backward(); out["mhx/gq"] = q.grad.numpy(); out["mhx/gw"] = m.in_proj_bias.grad.numpy()
# encoder (gelu, norm_first) + decoder through nn.Transformer, batch_first, causal tgt mask
t = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=32,
                   dropout=0.0, activation="gelu", batch_first=True, norm_first=True)
save("tr", t)
src = torch.randn(2, 6, 16); tgt = torch.randn(2, 5, 16, requires_grad=True)
mask = nn.Transformer.generate_square_subsequent_mask(5); out["tr/mask"] = mask.numpy()
o = t(src, tgt, tgt_mask=mask, tgt_is_causal=True)
out.update({"tr/src": src.numpy(), "tr/tgt": tgt.detach().numpy(), "tr/o": o.detach().numpy()})
o.pow(2).sum().backward(); out["tr/gtgt"] = tgt.grad.numpy()
# post-norm encoder with relu, bool src mask, padding
layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False); save("enc", enc)
s = torch.randn(5, 3, 8); sm = torch.rand(5, 5) > 0.7; sm.fill_diagonal_(False)
o = enc(s, mask=sm, src_key_padding_mask=kpm)
out.update({"enc/s": s.numpy(), "enc/sm": sm.numpy(), "enc/o": o.detach().numpy()})
np.savez_compressed(os.path.join(os.path.dirname(os.path.abspath(__file__)), "transformer_ref.npz"), **out)
print("ok", len(out))
