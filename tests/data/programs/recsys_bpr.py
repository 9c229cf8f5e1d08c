import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(36)
U, I, D = 12, 20, 6
inter = (torch.rand(U, I) < 0.25)
users, items = inter.nonzero(as_tuple=True)
print(len(users), users[:6], items[:6])


class MF(nn.Module):
    def __init__(self):
        super().__init__()
        self.u = nn.Embedding(U, D, sparse=True)
        self.i = nn.Embedding(I, D, sparse=True)
        self.ib = nn.Embedding(I, 1, sparse=True)
        nn.init.normal_(self.u.weight, std=0.1)
        nn.init.normal_(self.i.weight, std=0.1)
        nn.init.zeros_(self.ib.weight)

    def score(self, u, i):
        return (self.u(u) * self.i(i)).sum(-1) + self.ib(i).squeeze(-1)


model = MF()
opt = torch.optim.SparseAdam(list(model.parameters()), lr=0.05)
for ep in range(6):
    perm = torch.randperm(len(users))
    tot = 0.0
    for b in perm.split(16):
        u, pos = users[b], items[b]
        neg = torch.randint(0, I, (len(b),))
        loss = -F.logsigmoid(model.score(u, pos) - model.score(u, neg)).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        tot += loss.item() * len(b)
    print(ep, round(tot / len(users), 5))
with torch.no_grad():
    scores = model.u.weight @ model.i.weight.T + model.ib.weight.T
    scores[inter] = -float('inf')
    top = scores.topk(3, dim=1).indices
    print(top[:4])
    hits = torch.zeros(U)
    print(torch.stack([scores.argmax(1), scores.max(1).values.round(decimals=3)], 1)[:3])
    ndcg_w = 1 / torch.log2(torch.arange(2, 5).float())
    print(ndcg_w, F.normalize(model.u.weight, dim=1).norm(dim=1)[:3])
