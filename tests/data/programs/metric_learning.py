import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(8)
N, D, K = 60, 10, 3
centers = torch.randn(K, D) * 2
labels = torch.arange(N) % K
X = centers[labels] + 0.5 * torch.randn(N, D)

net = nn.Sequential(nn.Linear(D, 16), nn.PReLU(), nn.Linear(16, 4))
opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, nesterov=True)
triplet = nn.TripletMarginLoss(margin=1.0, p=2)
cosine = nn.CosineEmbeddingLoss(margin=0.2)
contrast = nn.MarginRankingLoss(margin=0.5)


def batch_hard_triplets(emb, y):
    dist = torch.cdist(emb, emb)
    same = y.unsqueeze(0) == y.unsqueeze(1)
    hardest_pos = (dist * same.float()).max(dim=1).values
    hardest_neg = dist.masked_fill(same, float('inf')).min(dim=1).values
    return F.relu(hardest_pos - hardest_neg + 0.5).mean()


for epoch in range(6):
    perm = torch.randperm(N)
    a_idx = perm[:20]
    pos_idx = torch.stack([torch.nonzero(labels == labels[i]).flatten()[(epoch + 1) % 20] for i in a_idx])
    neg_idx = torch.stack([torch.nonzero(labels != labels[i]).flatten()[epoch] for i in a_idx])
    ea, ep, en = net(X[a_idx]), net(X[pos_idx]), net(X[neg_idx])
    l1 = triplet(ea, ep, en)
    tgt = torch.where(labels[a_idx] == labels[neg_idx], 1, -1)
    l2 = cosine(ea, en, tgt)
    l3 = batch_hard_triplets(net(X), labels)
    l4 = contrast(F.pairwise_distance(ea, en), F.pairwise_distance(ea, ep), torch.ones(20))
    loss = l1 + l2 + l3 + 0.1 * l4
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(epoch, [round(v.item(), 5) for v in (l1, l2, l3, l4)])
with torch.no_grad():
    E = F.normalize(net(X), dim=1)
    sim = E @ E.T
    sim.fill_diagonal_(-2)
    nn_idx = sim.argmax(dim=1)
    print('1-NN acc', (labels[nn_idx] == labels).float().mean().item())
    print(F.cosine_similarity(E[:3], E[3:6]))
    print(F.triplet_margin_with_distance_loss(E[:5], E[5:10], E[10:15],
          distance_function=lambda a, b: 1 - F.cosine_similarity(a, b), margin=0.3, swap=True))
    print(F.triplet_margin_loss(E[:5], E[5:10], E[10:15], p=1, swap=True, reduction='none'))
