import torch
import torch.nn as nn
from torch.distributions import Categorical, Normal, kl_divergence, Independent

torch.manual_seed(23)


class Env:
    """Move a point on a line toward 0; discrete actions -1/0/+1."""
    def __init__(self, g):
        self.g = g

    def reset(self):
        self.x = torch.rand(1, generator=self.g) * 4 - 2
        self.t = 0
        return torch.cat([self.x, torch.tensor([0.])])

    def step(self, a):
        self.x = self.x + (a - 1) * 0.5
        self.t += 1
        r = -self.x.abs().item()
        return torch.cat([self.x, torch.tensor([self.t / 10])]), r, self.t >= 8


policy = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 3))
value = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 1))
opt = torch.optim.Adam(list(policy.parameters()) + list(value.parameters()), lr=1e-2)
env = Env(torch.Generator().manual_seed(0))
gamma = 0.95
for ep in range(8):
    s = env.reset()
    logps, vals, rews, ents = [], [], [], []
    done = False
    while not done:
        dist = Categorical(logits=policy(s))
        a = dist.sample()
        logps.append(dist.log_prob(a))
        ents.append(dist.entropy())
        vals.append(value(s).squeeze())
        s, r, done = env.step(a.item())
        rews.append(r)
    R, returns = 0.0, []
    for r in reversed(rews):
        R = r + gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + 1e-8)
    vals = torch.stack(vals)
    adv = returns - vals.detach()
    loss = -(torch.stack(logps) * adv).sum() + 0.5 * nn.functional.smooth_l1_loss(vals, returns) - 0.01 * torch.stack(ents).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    print(ep, round(sum(rews), 4), round(loss.item(), 5))

# Gaussian policy with rsample, tanh squashing and KL between old and new policies
mu_net = nn.Linear(3, 2)
log_std = nn.Parameter(torch.zeros(2) - 0.5)
obs = torch.randn(5, 3)
old = Independent(Normal(mu_net(obs).detach(), log_std.exp().detach()), 1)
new = Independent(Normal(mu_net(obs), log_std.exp()), 1)
u = new.rsample()
a = torch.tanh(u)
logp = new.log_prob(u) - torch.log(1 - a.pow(2) + 1e-6).sum(-1)
print(logp.shape, kl_divergence(old, new))
(-logp.mean()).backward()
print(log_std.grad, mu_net.weight.grad.shape)
p = Categorical(probs=torch.tensor([0.2, 0.5, 0.3]))
q = Categorical(logits=torch.tensor([0.0, 1.0, -1.0]))
print(kl_divergence(p, q), p.sample((6,)), q.log_prob(torch.tensor([0, 2])))
print(Normal(0., 1.).cdf(torch.tensor([-1., 0., 1.96])), Normal(torch.zeros(2), 2.).entropy())
