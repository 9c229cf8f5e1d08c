import torch
import torch.nn as nn

torch.manual_seed(48)
w = torch.empty(4, 6)
nn.init.kaiming_normal_(w, mode='fan_out', nonlinearity='relu'); print(w.std().item() > 0, w[0, :3])
nn.init.kaiming_uniform_(w, a=0.1); print(w[1, :3])
nn.init.orthogonal_(w, gain=2.0); print(torch.allclose(w @ w.T, 4 * torch.eye(4), atol=1e-5))
nn.init.trunc_normal_(w, std=0.02, a=-0.04, b=0.04); print(w.abs().max() <= 0.04, w[2, :2])
nn.init.sparse_(w, sparsity=0.5); print((w == 0).sum(0))
c = torch.empty(3, 3, 3, 3); nn.init.dirac_(c); print(c[1, 1])
e = torch.empty(3, 5); nn.init.eye_(e); print(e)
nn.init.xavier_normal_(e, gain=nn.init.calculate_gain('tanh')); print(e[0, :2])
print(nn.init.calculate_gain('leaky_relu', 0.2), nn.init.calculate_gain('selu'), nn.init.calculate_gain('conv2d'))
nn.init.uniform_(e, a=-0.1, b=0.1); nn.init.constant_(e[0], 0.3); print(e[:2, :2])


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleDict({'enc': nn.Linear(4, 8), 'dec': nn.Linear(8, 4)})
        self.scales = nn.ParameterList([nn.Parameter(torch.ones(8)), nn.Parameter(torch.zeros(4))])
        self.extra = nn.ParameterDict({'temp': nn.Parameter(torch.tensor(1.0))})
        self.register_buffer('count', torch.tensor(0))

    def forward(self, x):
        h = self.blocks['enc'](x) * self.scales[0]
        return self.blocks['dec'](h) + self.scales[1] / self.extra['temp']


net = Net()
print([n for n, _ in net.named_parameters()])
print([n for n, m in net.named_modules() if isinstance(m, nn.Linear)])
net.blocks['enc'].requires_grad_(False)
opt = torch.optim.SGD(filter(lambda p: p.requires_grad, net.parameters()), lr=0.1)
x = torch.randn(3, 4)
loss = net(x).pow(2).sum()
loss.backward()
opt.step()
print(net.blocks['enc'].weight.grad, net.scales[0].grad is not None, round(net.extra['temp'].item(), 5))
print(sum(p.numel() for p in net.parameters() if p.requires_grad), len(list(net.buffers())), len(net.blocks))
net.apply(lambda m: nn.init.zeros_(m.bias) if isinstance(m, nn.Linear) else None)
print(net.blocks['dec'].bias, 'enc' in net.blocks, list(net.blocks.keys()))
print(net)
