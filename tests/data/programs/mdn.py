import math
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical, Normal, MixtureSameFamily, Independent

torch.manual_seed(12)
K = 3


class MDN(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(1, 24), nn.Tanh())
        self.pi, self.mu, self.sigma = nn.Linear(24, K), nn.Linear(24, K), nn.Linear(24, K)

    def forward(self, x):
        h = self.body(x)
        return self.pi(h), self.mu(h), F.softplus(self.sigma(h)) + 1e-4


def mdn_nll(logits, mu, sigma, y):
    log_pi = F.log_softmax(logits, dim=1)
    log_n = -0.5 * ((y - mu) / sigma) ** 2 - torch.log(sigma) - 0.5 * math.log(2 * math.pi)
    return -torch.logsumexp(log_pi + log_n, dim=1).mean()


y = torch.rand(200, 1) * 2 - 1
x = y + 0.3 * torch.sin(2 * math.pi * y) + 0.05 * torch.randn(200, 1)
model = MDN()
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
for ep in range(15):
    logits, mu, sigma = model(x)
    loss = mdn_nll(logits, mu, sigma, y)
    mix = MixtureSameFamily(Categorical(logits=logits), Normal(mu, sigma))
    loss2 = -mix.log_prob(y.squeeze(1)).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if ep % 5 == 0:
        print(ep, loss.item(), (loss - loss2).abs().item() < 1e-5)
with torch.no_grad():
    logits, mu, sigma = model(torch.tensor([[0.0], [0.5]]))
    mix = MixtureSameFamily(Categorical(logits=logits), Normal(mu, sigma))
    print(mix.mean, mix.variance)
    torch.manual_seed(3)
    print(mix.sample((4,)))
    print(mix.cdf(torch.tensor([0.0, 0.5])))
    ind = Independent(Normal(mu, sigma), 1)
    print(ind.batch_shape, ind.event_shape, ind.log_prob(mu))
    print(Categorical(logits=logits).entropy(), Categorical(logits=logits).probs)
