import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(15)


class TiedAE(nn.Module):
    def __init__(self, d_in=20, d_h=6):
        super().__init__()
        self.W = nn.Parameter(torch.empty(d_h, d_in))
        nn.init.xavier_uniform_(self.W)
        self.b_enc = nn.Parameter(torch.zeros(d_h))
        self.b_dec = nn.Parameter(torch.zeros(d_in))

    def encode(self, x):
        return torch.sigmoid(F.linear(x, self.W, self.b_enc))

    def forward(self, x):
        h = self.encode(x)
        return F.linear(h, self.W.t(), self.b_dec), h


class SharedDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(20, 6)
        self.dec = nn.Linear(6, 20)
        self.dec.weight = nn.Parameter(self.enc.weight.t())   # not tied, a copy with its own storage

    def forward(self, x):
        return self.dec(F.relu(self.enc(x)))


X = torch.rand(64, 20)
model = TiedAE()
opt = torch.optim.Adagrad(model.parameters(), lr=0.1, lr_decay=1e-3, initial_accumulator_value=0.1)
for ep in range(10):
    noisy = X + 0.1 * torch.randn_like(X)
    recon, h = model(noisy)
    sparsity = 0.05
    rho = h.mean(0)
    kl = (sparsity * torch.log(sparsity / rho) + (1 - sparsity) * torch.log((1 - sparsity) / (1 - rho))).sum()
    loss = F.mse_loss(recon, X) + 1e-3 * kl
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(ep, round(loss.item(), 6), round(kl.item(), 4))
print(model.W.grad.shape, model.W.grad.abs().mean())
m2 = SharedDecoder()
print(m2.dec.weight.shape, m2.dec.weight.is_contiguous(), len(list(m2.parameters())))
tied = nn.Linear(20, 6)
dec = nn.Linear(6, 20)
out = F.linear(F.relu(tied(X)), tied.weight.T, dec.bias)
out.sum().backward()
print(tied.weight.grad.sum(), dec.weight.grad, dec.bias.grad.sum())
