import torch
import torch.nn as nn
import torch.nn.functional as F
from collections import Counter
from torch.nn.utils.rnn import pack_sequence, pad_packed_sequence, pad_sequence

torch.manual_seed(51)
corpus = [("the movie was great fun", 1), ("terrible plot and bad acting", 0), ("great acting", 1),
          ("bad bad movie", 0), ("fun and great", 1), ("the plot was terrible", 0)]
counter = Counter(w for s, _ in corpus for w in s.split())
itos = ['<pad>', '<unk>'] + [w for w, _ in counter.most_common()]
stoi = {w: i for i, w in enumerate(itos)}
print(len(itos), counter.most_common(3))
seqs = [torch.tensor([stoi.get(w, 1) for w in s.split()]) for s, _ in corpus]
labels = torch.tensor([l for _, l in corpus])


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(len(itos), 8, padding_idx=0)
        self.rnn = nn.GRU(8, 10, batch_first=True, bidirectional=True)
        self.conv = nn.Conv1d(8, 6, 2, padding=1)
        self.fc = nn.Linear(20 + 6, 2)

    def forward(self, seqs):
        order = sorted(range(len(seqs)), key=lambda i: -len(seqs[i]))
        packed = pack_sequence([self.emb(seqs[i]) for i in order])
        _, h = self.rnn(packed)
        h = torch.cat([h[0], h[1]], 1)
        h = h[torch.argsort(torch.tensor(order))]
        padded = pad_sequence(seqs, batch_first=True)
        c = F.relu(self.conv(self.emb(padded).transpose(1, 2)))
        c = F.adaptive_max_pool1d(c, 1).squeeze(-1)
        return self.fc(torch.cat([h, c], 1))


model = Model()
opt = torch.optim.Adam(model.parameters(), lr=0.02)
for ep in range(8):
    logits = model(seqs)
    loss = F.cross_entropy(logits, labels)
    opt.zero_grad(); loss.backward(); opt.step()
    if ep % 2 == 0:
        print(ep, f"{loss.item():.5f}")
with torch.no_grad():
    print(model(seqs).softmax(-1)[:, 1])
    test = [torch.tensor([stoi.get(w, 1) for w in "great unknown movie".split()])]
    print(test, model(test).argmax(-1))
packed = pack_sequence([torch.tensor([1., 2., 3.]), torch.tensor([4., 5.])])
print(packed.data, packed.batch_sizes, pad_packed_sequence(packed, batch_first=True, total_length=4))
