import torch
import torch.nn as nn
from torch.nn.utils.rnn import pad_sequence, pack_padded_sequence, pad_packed_sequence

torch.manual_seed(4)
PAD = 0
V, T, E, H = 20, 5, 8, 6
lengths = [7, 3, 5, 6]
sents = [torch.randint(1, V, (n,)) for n in lengths]
tags = [s % T for s in sents]


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, E, padding_idx=PAD)
        self.lstm = nn.LSTM(E, H, num_layers=2, bidirectional=True, batch_first=True, dropout=0.2)
        self.fc = nn.Linear(2 * H, T)

    def forward(self, x, lens):
        e = self.emb(x)
        packed = pack_padded_sequence(e, lens, batch_first=True, enforce_sorted=False)
        out, (h, c) = self.lstm(packed)
        out, out_lens = pad_packed_sequence(out, batch_first=True, padding_value=0.0)
        return self.fc(out), h, out_lens


model = Tagger()
x = pad_sequence(sents, batch_first=True, padding_value=PAD)
y = pad_sequence(tags, batch_first=True, padding_value=-100)
lens = torch.tensor(lengths)
print(x)
opt = torch.optim.Adam(model.parameters(), lr=0.02)
loss_fn = nn.CrossEntropyLoss(ignore_index=-100)
for ep in range(10):
    model.train()
    opt.zero_grad()
    logits, h, ol = model(x, lens)
    loss = loss_fn(logits.reshape(-1, T), y.reshape(-1))
    loss.backward()
    opt.step()
    if ep % 3 == 0:
        print(ep, f"{loss.item():.6f}", h.shape, ol)
model.eval()
with torch.no_grad():
    logits, h, ol = model(x, lens)
    pred = logits.argmax(-1)
    mask = y != -100
    acc = (pred[mask] == y[mask]).float().mean()
    print(pred * mask, acc)
    print(model.emb.weight[PAD], model.emb.weight.grad is None)
print(model.emb.weight.grad[PAD].abs().sum())
