import torch
import torch.nn as nn
import torch.nn.functional as F
from collections import OrderedDict

torch.manual_seed(10)


def task():
    amp = torch.rand(1) * 4.9 + 0.1
    phase = torch.rand(1) * 3.14159
    def f(n):
        x = torch.rand(n, 1) * 10 - 5
        return x, amp * torch.sin(x + phase)
    return f


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(1, 40), nn.Linear(40, 40), nn.Linear(40, 1)

    def forward(self, x, params=None):
        if params is None:
            params = OrderedDict(self.named_parameters())
        x = F.relu(F.linear(x, params['l1.weight'], params['l1.bias']))
        x = F.relu(F.linear(x, params['l2.weight'], params['l2.bias']))
        return F.linear(x, params['l3.weight'], params['l3.bias'])


net = Net()
meta_opt = torch.optim.Adam(net.parameters(), lr=1e-3)
inner_lr = 0.01
for it in range(6):
    meta_opt.zero_grad()
    meta_loss = 0.
    for _ in range(3):
        f = task()
        xs, ys = f(5)
        xq, yq = f(5)
        params = OrderedDict(net.named_parameters())
        for step in range(2):
            loss = F.mse_loss(net(xs, params), ys)
            grads = torch.autograd.grad(loss, params.values(), create_graph=True)
            params = OrderedDict((n, p - inner_lr * g) for (n, p), g in zip(params.items(), grads))
        meta_loss = meta_loss + F.mse_loss(net(xq, params), yq)
    meta_loss = meta_loss / 3
    meta_loss.backward()
    gn = torch.norm(torch.stack([p.grad.norm() for p in net.parameters()]))
    meta_opt.step()
    print(f"{it} meta {meta_loss.item():.5f} grad {gn.item():.5f}")

# first-order variant and a Hessian-vector product
x = torch.randn(4, 1)
loss = net(x).pow(2).mean()
g = torch.autograd.grad(loss, list(net.parameters()), create_graph=True)
v = [torch.ones_like(p) for p in net.parameters()]
hv = torch.autograd.grad(g, list(net.parameters()), grad_outputs=v, allow_unused=True)
print([None if h is None else round(h.sum().item(), 4) for h in hv])
