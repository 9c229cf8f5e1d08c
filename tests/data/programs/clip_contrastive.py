import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(44)


class Tower(nn.Module):
    def __init__(self, d_in):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 16, bias=False))

    def forward(self, x):
        return F.normalize(self.net(x), dim=-1)


img_tower, txt_tower = Tower(20), Tower(12)
logit_scale = nn.Parameter(torch.ones([]) * math.log(1 / 0.07))
params = list(img_tower.parameters()) + list(txt_tower.parameters()) + [logit_scale]
opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.2, betas=(0.9, 0.98), eps=1e-6)
sched = torch.optim.lr_scheduler.SequentialLR(
    opt, [torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=3),
          torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=5)], milestones=[3])
latent = torch.randn(24, 8)
imgs = torch.cat([latent, torch.randn(24, 12)], 1)
txts = torch.cat([latent, torch.randn(24, 4)], 1)
for step in range(8):
    idx = torch.randperm(24)[:12]
    ie, te = img_tower(imgs[idx]), txt_tower(txts[idx])
    scale = logit_scale.exp().clamp(max=100)
    logits = scale * ie @ te.t()
    labels = torch.arange(12)
    loss = (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels)) / 2
    opt.zero_grad(); loss.backward(); opt.step(); sched.step()
    with torch.no_grad():
        logit_scale.clamp_(0, math.log(100))
    acc = (logits.argmax(1) == labels).float().mean()
    print(step, f"{loss.item():.5f} acc {acc.item():.3f} lr {sched.get_last_lr()[0]:.6f} scale {scale.item():.4f}")
with torch.no_grad():
    sim = img_tower(imgs) @ txt_tower(txts).T
    r1 = (sim.argmax(1) == torch.arange(24)).float().mean()
    ranks = (sim > sim.diag().unsqueeze(1)).sum(1)
    print(r1, ranks[:8], ranks.float().median())
