import torch
import torch.nn as nn
from torch import autograd

torch.manual_seed(1)
critic = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
gen = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
optC = torch.optim.Adam(critic.parameters(), lr=1e-3, betas=(0.0, 0.9))
optG = torch.optim.Adam(gen.parameters(), lr=1e-3, betas=(0.0, 0.9))
LAMBDA = 10.0


def sample_real(n):
    theta = torch.rand(n) * 2 * torch.pi
    return torch.stack([torch.cos(theta), torch.sin(theta)], dim=1) + 0.05 * torch.randn(n, 2)


def gradient_penalty(critic, real, fake):
    alpha = torch.rand(real.size(0), 1)
    alpha = alpha.expand(real.size())
    interpolates = alpha * real + (1 - alpha) * fake
    interpolates.requires_grad_(True)
    disc = critic(interpolates)
    gradients = autograd.grad(outputs=disc, inputs=interpolates, grad_outputs=torch.ones(disc.size()),
                              create_graph=True, retain_graph=True, only_inputs=True)[0]
    return ((gradients.norm(2, dim=1) - 1) ** 2).mean() * LAMBDA


for it in range(5):
    for p in critic.parameters():
        p.requires_grad = True
    for _ in range(3):
        real = sample_real(16)
        z = torch.randn(16, 4)
        with torch.no_grad():
            fake = gen(z)
        optC.zero_grad()
        d_real = critic(real).mean()
        d_fake = critic(fake).mean()
        gp = gradient_penalty(critic, real, fake)
        loss_c = d_fake - d_real + gp
        loss_c.backward()
        optC.step()
    for p in critic.parameters():
        p.requires_grad = False
    optG.zero_grad()
    z = torch.randn(16, 4)
    loss_g = -critic(gen(z)).mean()
    loss_g.backward()
    optG.step()
    print(f"it {it}: critic {loss_c.item():.5f} gp {gp.item():.5f} W {(d_real - d_fake).item():.5f} gen {loss_g.item():.5f}")
print(gen(torch.zeros(2, 4)))
print(critic[0].weight.grad is None, gen[0].weight.grad.norm())
