import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(40)
feat = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(),
                     nn.AvgPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU()).eval()
for p in feat.parameters():
    p.requires_grad_(False)
layers = {1: 'relu1', 3: 'relu2', 6: 'relu3'}


def features(x):
    out = {}
    for i, m in enumerate(feat):
        x = m(x)
        if i in layers:
            out[layers[i]] = x
    return out


def gram(x):
    b, c, h, w = x.size()
    f = x.view(b * c, h * w)
    return torch.mm(f, f.t()).div(b * c * h * w)


mean = torch.tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
std = torch.tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
content = torch.rand(1, 3, 16, 16)
style = torch.rand(1, 3, 16, 16)
cf = features((content - mean) / std)
sg = {k: gram(v).detach() for k, v in features((style - mean) / std).items()}
img = content.clone().requires_grad_(True)
opt = torch.optim.LBFGS([img], max_iter=5)
for it in range(3):
    def closure():
        with torch.no_grad():
            img.clamp_(0, 1)
        opt.zero_grad()
        f = features((img - mean) / std)
        s_loss = sum(F.mse_loss(gram(f[k]), sg[k]) for k in sg) * 1e5
        c_loss = F.mse_loss(f['relu2'], cf['relu2'].detach())
        loss = s_loss + c_loss
        loss.backward()
        return loss
    l = opt.step(closure)
    print(it, f"{l.item():.5f}")
with torch.no_grad():
    img.clamp_(0, 1)
tv = (img[:, :, 1:, :] - img[:, :, :-1, :]).abs().mean() + (img[:, :, :, 1:] - img[:, :, :, :-1]).abs().mean()
print(tv, img.min(), img.max())
print(gram(torch.arange(8.).view(1, 2, 2, 2)))
