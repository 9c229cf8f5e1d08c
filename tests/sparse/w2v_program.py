# word2vec skip-gram with negative sampling, sparse embeddings + SparseAdam
import torch
import torch.nn as nn
import torch.nn.functional as F
from collections import Counter

torch.manual_seed(11)
text = ("the quick brown fox jumps over the lazy dog the dog barks at the fox "
        "a quick cat sees the brown dog and the lazy fox sleeps").split()
vocab = sorted(set(text))
w2i = {w: i for i, w in enumerate(vocab)}
counts = Counter(text)
freq = torch.tensor([counts[w] for w in vocab], dtype=torch.float) ** 0.75
noise_dist = freq / freq.sum()
ids = torch.tensor([w2i[w] for w in text])
pairs = [(ids[i].item(), ids[j].item()) for i in range(len(ids))
         for j in range(max(0, i - 2), min(len(ids), i + 3)) if i != j]
pairs = torch.tensor(pairs)
print("vocab", len(vocab), "pairs", len(pairs))

class SGNS(nn.Module):
    def __init__(self, V, D):
        super().__init__()
        self.inp = nn.Embedding(V, D, sparse=True)
        self.out = nn.Embedding(V, D, sparse=True)
        nn.init.uniform_(self.inp.weight, -0.5 / D, 0.5 / D)
        nn.init.zeros_(self.out.weight)

    def forward(self, c, o, neg):
        vc = self.inp(c)
        pos = F.logsigmoid((vc * self.out(o)).sum(-1))
        negs = F.logsigmoid(-torch.bmm(self.out(neg), vc.unsqueeze(2)).squeeze(2)).sum(-1)
        return -(pos + negs).mean()

model = SGNS(len(vocab), 10)
opt = torch.optim.SparseAdam(model.parameters(), lr=0.05)
for ep in range(6):
    perm = torch.randperm(len(pairs))
    tot = 0.0
    for b in range(0, len(pairs), 32):
        batch = pairs[perm[b:b + 32]]
        neg = torch.multinomial(noise_dist, batch.size(0) * 4, replacement=True).view(-1, 4)
        loss = model(batch[:, 0], batch[:, 1], neg)
        opt.zero_grad()
        loss.backward()
        opt.step()
        tot += loss.item() * batch.size(0)
    print(f"epoch {ep} loss {tot / len(pairs):.6f}")
g = model.inp.weight.grad
print("sparse grad", g.is_sparse, g.layout, g.coalesce().indices().shape)
E = F.normalize(model.inp.weight.detach(), dim=1)
sims = E @ E[w2i["fox"]]
top = sims.topk(4)
print("near fox", [vocab[i] for i in top.indices.tolist()], [round(v, 4) for v in top.values.tolist()])
print(F.embedding(torch.tensor([[0, 2]]), model.inp.weight.detach()[:3]))
