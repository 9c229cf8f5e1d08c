import io
import copy
import torch
import torch.nn as nn

torch.manual_seed(26)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.bn = nn.BatchNorm2d(2)
        self.fc = nn.Linear(2, 3)
        self.register_buffer('steps', torch.zeros((), dtype=torch.long))
        self.register_buffer('scratch', torch.ones(2), persistent=False)

    def forward(self, x):
        self.steps += 1
        return self.fc(self.bn(self.conv(x)).mean((2, 3)))


net = Net()
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
x = torch.randn(3, 1, 5, 5)
for _ in range(3):
    loss = net(x).square().mean()
    opt.zero_grad(); loss.backward(); opt.step(); sched.step()
print(list(net.state_dict().keys()))
buf = io.BytesIO()
torch.save({'model': net.state_dict(), 'opt': opt.state_dict(), 'sched': sched.state_dict(), 'epoch': 3,
            'note': 'ckpt'}, buf)
buf.seek(0)
ck = torch.load(buf, weights_only=True)
print(ck['epoch'], ck['note'], ck['sched']['last_epoch'], ck['opt']['param_groups'][0]['lr'])
net2 = Net()
missing = net2.load_state_dict(ck['model'])
print(missing)
opt2 = torch.optim.Adam(net2.parameters(), lr=1e-2)
opt2.load_state_dict(ck['opt'])
sched2 = torch.optim.lr_scheduler.StepLR(opt2, step_size=2, gamma=0.5)
sched2.load_state_dict(ck['sched'])
net.eval(); net2.eval()
print(torch.equal(net(x), net2(x)), net2.steps, opt2.state_dict()['state'][0]['step'])
res = net2.load_state_dict({k: v for k, v in ck['model'].items() if not k.startswith('fc')}, strict=False)
print(res.missing_keys, res.unexpected_keys)
try:
    net2.load_state_dict({'fc.weight': torch.zeros(4, 2)}, strict=False)
except RuntimeError as e:
    print(str(e).splitlines()[0])
net3 = copy.deepcopy(net2)
print(torch.equal(net3.fc.weight, net2.fc.weight), net3.fc.weight is net2.fc.weight)
b2 = io.BytesIO()
torch.save(net2.fc.weight.detach(), b2)
b2.seek(0)
print(torch.load(b2).shape)
t = torch.arange(10.)
b3 = io.BytesIO()
torch.save([t[2:5], t], b3)
b3.seek(0)
v, whole = torch.load(b3)
v[0] = 100
print(whole[:4])
sd = net2.state_dict()
sd['fc.bias'].add_(1)
print(net2.fc.bias)
print({k: tuple(v.shape) for k, v in net2.named_buffers()})
