import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Beta

torch.manual_seed(35)
C = 3
X = torch.randn(48, 1, 8, 8)
y = torch.randint(0, C, (48,))
model = nn.Sequential(nn.Conv2d(1, 6, 3, padding=1), nn.GroupNorm(2, 6), nn.Mish(), nn.MaxPool2d(2),
                      nn.Conv2d(6, 8, 3, padding=1), nn.Hardswish(), nn.AdaptiveMaxPool2d(1), nn.Flatten(),
                      nn.Dropout(0.2), nn.Linear(8, C))
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
beta = Beta(torch.tensor(0.4), torch.tensor(0.4))


def rand_bbox(H, W, lam):
    cut = (1 - lam) ** 0.5
    ch, cw = int(H * cut), int(W * cut)
    cy, cx = torch.randint(H, (1,)).item(), torch.randint(W, (1,)).item()
    y1, y2 = max(cy - ch // 2, 0), min(cy + ch // 2, H)
    x1, x2 = max(cx - cw // 2, 0), min(cx + cw // 2, W)
    return y1, y2, x1, x2


for ep in range(4):
    for i in range(0, 48, 16):
        xb, yb = X[i:i + 16].clone(), y[i:i + 16]
        lam = beta.sample().item()
        perm = torch.randperm(xb.size(0))
        if ep % 2 == 0:
            xb = lam * xb + (1 - lam) * xb[perm]
        else:
            y1, y2, x1, x2 = rand_bbox(8, 8, lam)
            xb[:, :, y1:y2, x1:x2] = xb[perm, :, y1:y2, x1:x2]
            lam = 1 - (y2 - y1) * (x2 - x1) / 64
        target = lam * F.one_hot(yb, C).float() + (1 - lam) * F.one_hot(yb[perm], C).float()
        loss = F.cross_entropy(model(xb), target)
        opt.zero_grad(); loss.backward(); opt.step()
    print(ep, f"{lam:.5f}", f"{loss.item():.5f}")
model.eval()
with torch.no_grad():
    print((model(X).argmax(1) == y).float().mean())
print(beta.mean, beta.variance, beta.log_prob(torch.tensor([0.1, 0.5])))
