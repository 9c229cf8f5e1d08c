import torch
import torch.nn as nn
from torch.nn.utils import parametrize
from torch.nn.utils.parametrizations import weight_norm, spectral_norm, orthogonal

torch.manual_seed(18)
lin = weight_norm(nn.Linear(5, 3))
print(type(lin.parametrizations.weight.original0), lin.parametrizations.weight.original0.shape,
      lin.parametrizations.weight.original1.shape)
print(torch.allclose(lin.weight, lin.parametrizations.weight.original1 /
                     lin.parametrizations.weight.original1.norm(dim=1, keepdim=True) * lin.parametrizations.weight.original0))
x = torch.randn(4, 5)
opt = torch.optim.SGD(lin.parameters(), lr=0.1)
for _ in range(3):
    loss = lin(x).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    print(round(loss.item(), 6))
print(sorted(lin.state_dict().keys()))

sn = spectral_norm(nn.Linear(6, 4))
sn.train()
for _ in range(5):
    y = sn(torch.randn(2, 6))
sigma = torch.linalg.matrix_norm(sn.weight.detach(), ord=2)
print(round(sigma.item(), 3), sorted(sn.state_dict().keys()))
sn.eval()
w1 = sn.weight.clone()
print(torch.equal(w1, sn.weight))

orth = orthogonal(nn.Linear(4, 4))
W = orth.weight
print(torch.allclose(W @ W.T, torch.eye(4), atol=1e-5))
opt = torch.optim.Adam(orth.parameters(), lr=0.05)
for _ in range(3):
    loss = (orth(torch.eye(4)) - torch.ones(4, 4)).pow(2).sum()
    opt.zero_grad(); loss.backward(); opt.step()
W = orth.weight
print(torch.allclose(W @ W.T, torch.eye(4), atol=1e-5), round(loss.item(), 3))


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)


class PositiveDiag(nn.Module):
    def forward(self, X):
        return X - torch.diag(X.diagonal()) + torch.diag(torch.nn.functional.softplus(X.diagonal()))


layer = nn.Linear(3, 3)
parametrize.register_parametrization(layer, "weight", Symmetric())
parametrize.register_parametrization(layer, "weight", PositiveDiag())
print(parametrize.is_parametrized(layer), parametrize.is_parametrized(layer, "bias"))
print(torch.equal(layer.weight, layer.weight.T), (layer.weight.diagonal() > 0).all())
with parametrize.cached():
    a = layer.weight
    b = layer.weight
    print(a is b)
parametrize.remove_parametrizations(layer, "weight", leave_parametrized=True)
print(parametrize.is_parametrized(layer), type(layer.weight).__name__)
old = torch.nn.utils.weight_norm(nn.Conv1d(2, 3, 3), name='weight', dim=0)
print(old.weight_g.shape, old.weight_v.shape)
torch.nn.utils.remove_weight_norm(old)
print(hasattr(old, 'weight_g'), old.weight.shape)
