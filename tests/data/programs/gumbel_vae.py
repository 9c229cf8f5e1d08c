import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(41)
N_LAT, K = 4, 5


class GumbelVAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(16, 32), nn.ELU(), nn.Linear(32, N_LAT * K))
        self.dec = nn.Sequential(nn.Linear(N_LAT * K, 32), nn.ELU(), nn.Linear(32, 16))

    def forward(self, x, tau, hard):
        logits = self.enc(x).view(-1, N_LAT, K)
        z = F.gumbel_softmax(logits, tau=tau, hard=hard, dim=-1)
        return self.dec(z.view(-1, N_LAT * K)), logits, z


x = (torch.rand(32, 16) > 0.5).float()
model = GumbelVAE()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
tau = 1.0
for it in range(8):
    recon, logits, z = model(x, tau, hard=it % 2 == 1)
    q = F.softmax(logits, -1)
    kl = (q * (torch.log(q + 1e-20) - torch.log(torch.tensor(1.0 / K)))).sum((1, 2)).mean()
    bce = F.binary_cross_entropy_with_logits(recon, x, reduction='sum') / x.size(0)
    loss = bce + kl
    opt.zero_grad(); loss.backward(); opt.step()
    tau = max(0.5, tau * 0.9)
    print(it, f"{bce.item():.5f} {kl.item():.5f} tau {tau:.4f}", z.sum(-1).mean().item())
print(z[0])
y_hard = F.one_hot(logits.argmax(-1), K).float()
print(y_hard[0], torch.distributions.RelaxedOneHotCategorical(torch.tensor(0.5), logits=logits[0, 0]).rsample().sum())
