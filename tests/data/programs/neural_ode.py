import torch
import torch.nn as nn

torch.manual_seed(13)


class ODEFunc(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 50), nn.Tanh(), nn.Linear(50, 2))
        for m in self.net.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, mean=0, std=0.1)
                nn.init.constant_(m.bias, val=0)
        self.nfe = 0

    def forward(self, t, y):
        self.nfe += 1
        return self.net(y ** 3)


def rk4(func, y0, t):
    ys = [y0]
    y = y0
    for t0, t1 in zip(t[:-1], t[1:]):
        h = t1 - t0
        k1 = func(t0, y)
        k2 = func(t0 + h / 2, y + h * k1 / 2)
        k3 = func(t0 + h / 2, y + h * k2 / 2)
        k4 = func(t1, y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        ys.append(y)
    return torch.stack(ys)


true_A = torch.tensor([[-0.1, 2.0], [-2.0, -0.1]])
t = torch.linspace(0., 2., 21)
true_y0 = torch.tensor([[2., 0.]])
with torch.no_grad():
    true_y = rk4(lambda t, y: torch.mm(y ** 3, true_A), true_y0, t)
print(true_y[-1], true_y.shape)

func = ODEFunc()
opt = torch.optim.RMSprop(func.parameters(), lr=1e-3)
for itr in range(8):
    s = torch.from_numpy(__import__('numpy').array([0, 3, 7, 11])).long()
    batch_y0 = true_y[s]
    batch_t = t[:6]
    batch_y = torch.stack([true_y[s + i] for i in range(6)], dim=0)
    pred_y = rk4(func, batch_y0, batch_t)
    loss = torch.mean(torch.abs(pred_y - batch_y))
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(itr, loss.item(), func.nfe)
with torch.no_grad():
    pred = rk4(func, true_y0, t)
    print('total', torch.mean(torch.abs(pred - true_y)).item())
