import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(42)


def squash(s, dim=-1):
    n2 = (s ** 2).sum(dim=dim, keepdim=True)
    return n2 / (1 + n2) * s / torch.sqrt(n2 + 1e-8)


class Caps(nn.Module):
    def __init__(self, in_caps=12, in_dim=4, out_caps=3, out_dim=6, iters=3):
        super().__init__()
        self.W = nn.Parameter(0.1 * torch.randn(1, in_caps, out_caps, out_dim, in_dim))
        self.iters = iters

    def forward(self, u):
        u_hat = (self.W @ u[:, :, None, :, None]).squeeze(-1)     # B, in, out, out_dim
        b = torch.zeros(u_hat.shape[:3])
        for r in range(self.iters):
            c = F.softmax(b, dim=2)
            v = squash((c.unsqueeze(-1) * u_hat).sum(dim=1))
            if r < self.iters - 1:
                b = b + torch.einsum('bioj,boj->bio', u_hat, v)
        return v


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 16, 3)
        self.prim = nn.Conv2d(16, 16, 3, stride=2)
        self.caps = Caps()

    def forward(self, x):
        h = F.relu(self.conv(x))
        p = self.prim(h)                                        # B, 16, 2, 2 -> 12? use 3 x 4 caps
        u = squash(p.flatten(2).transpose(1, 2).reshape(x.size(0), -1, 4)[:, :12])
        return self.caps(u)


def margin_loss(v, y, m_pos=0.9, m_neg=0.1, lam=0.5):
    lengths = v.norm(dim=-1)
    t = F.one_hot(y, 3).float()
    return (t * F.relu(m_pos - lengths) ** 2 + lam * (1 - t) * F.relu(lengths - m_neg) ** 2).sum(1).mean()


x = torch.randn(8, 1, 8, 8)
y = torch.randint(0, 3, (8,))
net = Net()
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
for it in range(6):
    v = net(x)
    loss = margin_loss(v, y)
    opt.zero_grad(); loss.backward(); opt.step()
    print(it, f"{loss.item():.6f}")
print(v.norm(dim=-1)[:3])
print(squash(torch.tensor([[3., 4.]])))
