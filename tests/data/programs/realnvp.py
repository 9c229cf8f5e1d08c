import math
import torch
import torch.nn as nn

torch.manual_seed(11)


class Coupling(nn.Module):
    def __init__(self, dim, mask):
        super().__init__()
        self.register_buffer('mask', mask)
        self.s = nn.Sequential(nn.Linear(dim, 32), nn.LeakyReLU(), nn.Linear(32, dim), nn.Tanh())
        self.t = nn.Sequential(nn.Linear(dim, 32), nn.LeakyReLU(), nn.Linear(32, dim))

    def forward(self, x):
        xm = x * self.mask
        s = self.s(xm) * (1 - self.mask)
        t = self.t(xm) * (1 - self.mask)
        y = xm + (1 - self.mask) * (x * torch.exp(s) + t)
        return y, s.sum(dim=1)

    def inverse(self, y):
        ym = y * self.mask
        s = self.s(ym) * (1 - self.mask)
        t = self.t(ym) * (1 - self.mask)
        return ym + (1 - self.mask) * ((y - t) * torch.exp(-s))


class RealNVP(nn.Module):
    def __init__(self, dim=2, n=4):
        super().__init__()
        masks = [torch.tensor([float((i + j) % 2) for j in range(dim)]) for i in range(n)]
        self.layers = nn.ModuleList([Coupling(dim, m) for m in masks])
        self.prior = torch.distributions.MultivariateNormal(torch.zeros(dim), torch.eye(dim))

    def forward(self, x):
        log_det = torch.zeros(x.size(0))
        for layer in self.layers:
            x, ld = layer(x)
            log_det = log_det + ld
        return x, log_det

    def log_prob(self, x):
        z, ld = self(x)
        return self.prior.log_prob(z) + ld

    def sample(self, n):
        z = self.prior.sample((n,))
        for layer in reversed(self.layers):
            z = layer.inverse(z)
        return z


def moons(n):
    t = torch.rand(n) * math.pi
    a = torch.stack([torch.cos(t), torch.sin(t)], 1)
    b = torch.stack([1 - torch.cos(t), 0.5 - torch.sin(t)], 1)
    x = torch.where((torch.arange(n) % 2 == 0).unsqueeze(1), a, b)
    return x + 0.05 * torch.randn(n, 2)


flow = RealNVP()
opt = torch.optim.Adam([p for p in flow.parameters() if p.requires_grad], lr=1e-3)
for it in range(10):
    x = moons(64)
    loss = -flow.log_prob(x).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(it, f"{loss.item():.6f}")
x = moons(5)
z, ld = flow(x)
x2 = z
for layer in reversed(flow.layers):
    x2 = layer.inverse(x2)
print(torch.allclose(x, x2, atol=1e-5), ld)
jac = torch.autograd.functional.jacobian(lambda v: flow(v.unsqueeze(0))[0].squeeze(0), x[0])
print(torch.logdet(jac), ld[0], torch.slogdet(jac))
print(flow.sample(3).shape, list(flow.state_dict().keys())[:3])
