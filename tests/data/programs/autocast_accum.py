import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(31)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scaler = torch.amp.GradScaler('cpu', init_scale=2.0 ** 8, growth_interval=2)
X, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
accum = 4
for step in range(3):
    opt.zero_grad(set_to_none=True)
    for micro in range(accum):
        xb, yb = X[micro * 16:(micro + 1) * 16], y[micro * 16:(micro + 1) * 16]
        with torch.autocast(device_type='cpu', dtype=torch.bfloat16):
            out = model(xb)
            loss = F.cross_entropy(out, yb) / accum
        print(step, micro, out.dtype, loss.dtype, round(loss.item(), 4))
        scaler.scale(loss).backward()
    scaler.unscale_(opt)
    gn = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
    print('scale', scaler.get_scale(), round(gn.item(), 3))
with torch.autocast('cpu', dtype=torch.bfloat16):
    a = torch.randn(3, 4) @ torch.randn(4, 2)
    b = torch.randn(3, 4).sum()
    with torch.autocast('cpu', enabled=False):
        c = torch.randn(2, 2) @ torch.randn(2, 2)
print(a.dtype, b.dtype, c.dtype, torch.is_autocast_enabled('cpu'))
half = model.to(torch.bfloat16)
print(half[0].weight.dtype, half(X[:2].bfloat16()).float())
print(torch.get_autocast_dtype('cpu'))
