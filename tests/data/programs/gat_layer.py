import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(37)
N, Fin, H, Fout = 7, 5, 2, 4
edge_index = torch.tensor([[0, 1, 2, 3, 4, 5, 6, 0, 2, 4, 1, 3],
                           [1, 2, 3, 4, 5, 6, 0, 3, 5, 0, 4, 6]])
edge_index = torch.cat([edge_index, torch.arange(N).repeat(2, 1)], 1)   # self loops


def scatter_softmax(src, index, n):
    mx = torch.full((n, src.size(1)), float('-inf')).scatter_reduce(0, index.unsqueeze(1).expand_as(src), src, 'amax')
    e = (src - mx[index]).exp()
    den = torch.zeros(n, src.size(1)).index_add_(0, index, e)
    return e / den[index]


class GATLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.W = nn.Linear(Fin, H * Fout, bias=False)
        self.a_src = nn.Parameter(torch.empty(1, H, Fout))
        self.a_dst = nn.Parameter(torch.empty(1, H, Fout))
        nn.init.xavier_uniform_(self.a_src, gain=1.414)
        nn.init.xavier_uniform_(self.a_dst)

    def forward(self, x, ei):
        h = self.W(x).view(-1, H, Fout)
        src, dst = ei
        alpha = (h * self.a_src).sum(-1)[src] + (h * self.a_dst).sum(-1)[dst]
        alpha = F.leaky_relu(alpha, 0.2)
        alpha = scatter_softmax(alpha, dst, x.size(0))
        out = torch.zeros(x.size(0), H, Fout).index_add_(0, dst, h[src] * alpha.unsqueeze(-1))
        return F.elu(out.flatten(1)), alpha


x = torch.randn(N, Fin)
labels = torch.tensor([0, 1, 0, 1, 1, 0, 1])
layer = GATLayer()
head = nn.Linear(H * Fout, 2)
opt = torch.optim.Adam(list(layer.parameters()) + list(head.parameters()), lr=0.01, weight_decay=5e-4)
train_mask = torch.tensor([1, 1, 1, 0, 1, 0, 1], dtype=torch.bool)
for ep in range(10):
    h, alpha = layer(x, edge_index)
    out = head(F.dropout(h, 0.3, training=True))
    loss = F.cross_entropy(out[train_mask], labels[train_mask])
    opt.zero_grad(); loss.backward(); opt.step()
    if ep % 3 == 0:
        print(ep, f"{loss.item():.6f}")
print(alpha[:5])
den = torch.zeros(N, H).index_add_(0, edge_index[1], alpha.detach())
print(den)
adj = torch.zeros(N, N).index_put_((edge_index[0], edge_index[1]), torch.ones(edge_index.size(1)), accumulate=True)
deg = adj.sum(1)
norm_adj = adj / deg.sqrt().unsqueeze(1) / deg.sqrt().unsqueeze(0)
print(torch.linalg.eigvalsh((norm_adj + norm_adj.T) / 2)[-2:], torch.matrix_power(adj, 2).trace())
