import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(21)


class ESPCN(nn.Module):
    def __init__(self, r=2):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(1, 16, 5, padding=2), nn.Tanh(), nn.Conv2d(16, 8, 3, padding=1), nn.Tanh(),
                                  nn.Conv2d(8, r * r, 3, padding=1))
        self.ps = nn.PixelShuffle(r)

    def forward(self, x):
        return torch.sigmoid(self.ps(self.body(x)))


hr = torch.rand(4, 1, 12, 12)
lr = F.avg_pool2d(hr, 2)
model = ESPCN()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for it in range(6):
    sr = model(lr)
    loss = F.mse_loss(sr, hr)
    psnr = 10 * torch.log10(1 / loss)
    opt.zero_grad(); loss.backward(); opt.step()
    print(it, f"{loss.item():.6f} psnr {psnr.item():.3f}")
x = torch.arange(16.).view(1, 4, 2, 2)
ps = F.pixel_shuffle(x, 2)
print(ps)
print(torch.equal(F.pixel_unshuffle(ps, 2), x), nn.PixelUnshuffle(2)(ps).shape)
# einops-style rearranges: b c (h p1) (w p2) -> b (h w) (p1 p2 c)
img = torch.arange(2 * 3 * 4 * 4.).view(2, 3, 4, 4)
p = 2
patches = img.unflatten(2, (2, p)).unflatten(4, (2, p))           # b c h p1 w p2
patches = patches.permute(0, 2, 4, 3, 5, 1).flatten(1, 2).flatten(2)
print(patches.shape, patches[0, 1, :6])
back = patches.unflatten(2, (p, p, 3)).unflatten(1, (2, 2)).permute(0, 5, 1, 3, 2, 4).reshape(2, 3, 4, 4)
print(torch.equal(back, img))
print(img.movedim(1, -1).shape, img.swapaxes(2, 3).stride(), img.flatten(start_dim=2).mT.shape)
print(F.unfold(img, kernel_size=2, stride=2).shape, F.fold(F.unfold(img, 2, stride=2), (4, 4), 2, stride=2).equal(img))
print(torch.einsum('bchw->bhwc', img).shape, torch.einsum('bchw,c->bhw', img, torch.tensor([1., 0, -1]))[0, 0])
