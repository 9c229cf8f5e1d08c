import math
import torch
import torch.nn as nn

torch.manual_seed(27)
V, D, BOS, EOS = 11, 16, 1, 2


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=50):
        super().__init__()
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer('pe', pe.unsqueeze(0))

    def forward(self, x):
        return x + self.pe[:, :x.size(1)]


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.src_emb, self.tgt_emb = nn.Embedding(V, D), nn.Embedding(V, D)
        self.pos = PositionalEncoding(D)
        enc_layer = nn.TransformerEncoderLayer(D, 2, 32, dropout=0.0, batch_first=True)
        dec_layer = nn.TransformerDecoderLayer(D, 2, 32, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(enc_layer, 2, enable_nested_tensor=False)
        self.decoder = nn.TransformerDecoder(dec_layer, 2, norm=nn.LayerNorm(D))
        self.out = nn.Linear(D, V)

    def encode(self, src, src_pad):
        return self.encoder(self.pos(self.src_emb(src) * math.sqrt(D)), src_key_padding_mask=src_pad)

    def decode(self, tgt, memory, src_pad):
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
        h = self.decoder(self.pos(self.tgt_emb(tgt) * math.sqrt(D)), memory, tgt_mask=mask,
                         memory_key_padding_mask=src_pad, tgt_is_causal=True)
        return self.out(h)


model = Seq2Seq()
src = torch.randint(3, V, (5, 6))
src[1, 4:] = 0
src[3, 5:] = 0
src_pad = src == 0
tgt = torch.cat([torch.full((5, 1), BOS), src.flip(1).clamp(min=3), torch.full((5, 1), EOS)], 1)
opt = torch.optim.Adam(model.parameters(), lr=5e-3, betas=(0.9, 0.98), eps=1e-9)
warm = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min((s + 1) ** -0.5, (s + 1) * 4 ** -1.5))
crit = nn.CrossEntropyLoss(label_smoothing=0.1)
for step in range(8):
    mem = model.encode(src, src_pad)
    logits = model.decode(tgt[:, :-1], mem, src_pad)
    loss = crit(logits.reshape(-1, V), tgt[:, 1:].reshape(-1))
    opt.zero_grad(); loss.backward(); opt.step(); warm.step()
    print(step, f"{loss.item():.5f}", f"{warm.get_last_lr()[0]:.6f}")
print(nn.Transformer.generate_square_subsequent_mask(3))
model.eval()
with torch.no_grad():
    mem = model.encode(src[:2], src_pad[:2])
    ys = torch.full((2, 1), BOS)
    for _ in range(7):
        nxt = model.decode(ys, mem, src_pad[:2])[:, -1].argmax(-1, keepdim=True)
        ys = torch.cat([ys, nxt], 1)
    print(ys)
