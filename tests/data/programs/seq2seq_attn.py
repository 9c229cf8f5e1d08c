import random
import torch
import torch.nn as nn
import torch.nn.functional as F

random.seed(0)
torch.manual_seed(0)
SOS, EOS = 0, 1
V_in, V_out, H, MAXLEN = 12, 10, 16, 7


class EncoderRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(V_in, H)
        self.gru = nn.GRU(H, H, batch_first=True)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        return self.gru(self.dropout(self.embedding(x)))


class BahdanauAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.Wa, self.Ua, self.Va = nn.Linear(H, H), nn.Linear(H, H), nn.Linear(H, 1)

    def forward(self, query, keys):
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
        scores = scores.squeeze(2).unsqueeze(1)
        weights = F.softmax(scores, dim=-1)
        return torch.bmm(weights, keys), weights


class AttnDecoderRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(V_out, H)
        self.attention = BahdanauAttention()
        self.gru = nn.GRU(2 * H, H, batch_first=True)
        self.out = nn.Linear(H, V_out)
        self.dropout = nn.Dropout(0.1)

    def forward(self, enc_out, enc_hidden, target=None, tf_ratio=0.5):
        B = enc_out.size(0)
        dec_in = torch.empty(B, 1, dtype=torch.long).fill_(SOS)
        hidden = enc_hidden
        outs, attns = [], []
        for i in range(MAXLEN):
            emb = self.dropout(self.embedding(dec_in))
            query = hidden.permute(1, 0, 2)
            ctx, w = self.attention(query, enc_out)
            out, hidden = self.gru(torch.cat((emb, ctx), dim=2), hidden)
            out = self.out(out)
            outs.append(out)
            attns.append(w)
            if target is not None and random.random() < tf_ratio:
                dec_in = target[:, i].unsqueeze(1)
            else:
                _, topi = out.topk(1)
                dec_in = topi.squeeze(-1).detach()
        outs = torch.cat(outs, dim=1)
        return F.log_softmax(outs, dim=-1), hidden, torch.cat(attns, dim=1)


enc, dec = EncoderRNN(), AttnDecoderRNN()
src = torch.randint(2, V_in, (6, MAXLEN))
tgt = (src % (V_out - 2)) + 2
tgt[:, -1] = EOS
eo = torch.optim.Adam(enc.parameters(), lr=0.01)
do = torch.optim.Adam(dec.parameters(), lr=0.01)
crit = nn.NLLLoss()
for epoch in range(8):
    eo.zero_grad(); do.zero_grad()
    enc_out, enc_h = enc(src)
    dec_out, _, _ = dec(enc_out, enc_h, tgt)
    loss = crit(dec_out.view(-1, dec_out.size(-1)), tgt.view(-1))
    loss.backward()
    eo.step(); do.step()
    print(epoch, round(loss.item(), 5))
enc.eval(); dec.eval()
with torch.no_grad():
    enc_out, enc_h = enc(src[:2])
    dec_out, _, attn = dec(enc_out, enc_h)
    print(dec_out.argmax(-1))
    print(attn[0, :3].sum(-1), attn.shape)
