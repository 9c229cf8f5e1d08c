import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.parametrizations import weight_norm

torch.manual_seed(29)


class Chomp1d(nn.Module):
    def __init__(self, chomp):
        super().__init__()
        self.chomp = chomp

    def forward(self, x):
        return x[:, :, :-self.chomp].contiguous()


class TemporalBlock(nn.Module):
    def __init__(self, cin, cout, k, dilation):
        super().__init__()
        pad = (k - 1) * dilation
        self.net = nn.Sequential(weight_norm(nn.Conv1d(cin, cout, k, padding=pad, dilation=dilation)), Chomp1d(pad),
                                 nn.ReLU(), nn.Dropout(0.0),
                                 weight_norm(nn.Conv1d(cout, cout, k, padding=pad, dilation=dilation)), Chomp1d(pad),
                                 nn.ReLU())
        self.down = nn.Conv1d(cin, cout, 1) if cin != cout else None

    def forward(self, x):
        res = x if self.down is None else self.down(x)
        return F.relu(self.net(x) + res)


class TCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(*[TemporalBlock(1 if i == 0 else 8, 8, 3, 2 ** i) for i in range(3)])
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        return self.head(self.blocks(x)[:, :, -1])


t = torch.linspace(0, 12, 400)
series = torch.sin(t) + 0.3 * torch.sin(3.1 * t) + 0.05 * torch.randn(400)
win = 24
X = series.unfold(0, win, 1)[:-1].unsqueeze(1)
Y = series[win:].unsqueeze(1)
print(X.shape, Y.shape)
model = TCN()
opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-2, amsgrad=True)
sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=4, T_mult=2, eta_min=1e-4)
perm = torch.randperm(len(X))
for ep in range(8):
    for i in range(0, 96, 32):
        b = perm[i:i + 32]
        loss = F.huber_loss(model(X[b]), Y[b], delta=0.5)
        opt.zero_grad(); loss.backward(); opt.step()
    sched.step()
    print(ep, f"{loss.item():.6f}", f"{sched.get_last_lr()[0]:.6f}")
with torch.no_grad():
    pred = model(X[-5:])
print(torch.cat([pred, Y[-5:]], 1))
print(F.conv1d(torch.arange(8.).view(1, 1, 8), torch.ones(1, 1, 2), dilation=3, padding='same'))
print(F.conv1d(torch.arange(8.).view(1, 2, 4), torch.ones(4, 1, 3), groups=2, padding='valid', stride=1))
