import math
import torch
import torch.nn as nn

torch.manual_seed(46)
net = nn.Sequential(nn.Linear(1, 20), nn.Tanh(), nn.Linear(20, 20), nn.Tanh(), nn.Linear(20, 1)).double()
opt = torch.optim.Adam(net.parameters(), lr=5e-3)
x = torch.linspace(0, math.pi, 30, dtype=torch.float64).unsqueeze(1).requires_grad_(True)
bc = torch.tensor([[0.0], [math.pi]], dtype=torch.float64)
for it in range(15):
    u = net(x)
    du = torch.autograd.grad(u, x, grad_outputs=torch.ones_like(u), create_graph=True)[0]
    d2u = torch.autograd.grad(du, x, grad_outputs=torch.ones_like(du), create_graph=True)[0]
    residual = d2u + torch.sin(x)              # u'' = -sin(x), u(0) = u(pi) = 0 -> u = sin(x)
    loss = residual.pow(2).mean() + net(bc).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 5 == 0:
        print(it, f"{loss.item():.10f}")
xt = torch.tensor([[1.0]], dtype=torch.float64)
print(net(xt), torch.autograd.functional.jacobian(net, xt).squeeze())
f = lambda v: net(v.view(1, 1)).squeeze()
print(torch.autograd.functional.hessian(f, torch.tensor([0.5], dtype=torch.float64)))
print(torch.autograd.functional.vjp(f, torch.tensor([0.5], dtype=torch.float64))[1])
print(torch.autograd.functional.jvp(f, torch.tensor([0.5], dtype=torch.float64), torch.tensor([1.0], dtype=torch.float64))[1])
print(torch.autograd.functional.hvp(f, torch.tensor([0.5], dtype=torch.float64), torch.tensor([1.0], dtype=torch.float64))[1])
