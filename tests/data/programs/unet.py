import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(2)


class DoubleConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                                 nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    def forward(self, x):
        return self.net(x)


class Up(nn.Module):
    def __init__(self, cin, cout, bilinear):
        super().__init__()
        if bilinear:
            self.up = nn.Upsample(scale_factor=2, mode='bilinear', align_corners=True)
            self.conv = DoubleConv(cin + cin // 2, cout)
        else:
            self.up = nn.ConvTranspose2d(cin, cin // 2, kernel_size=2, stride=2)
            self.conv = DoubleConv(cin, cout)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        diffY = x2.size()[2] - x1.size()[2]
        diffX = x2.size()[3] - x1.size()[3]
        x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2, diffY // 2, diffY - diffY // 2])
        return self.conv(torch.cat([x2, x1], dim=1))


class UNet(nn.Module):
    def __init__(self, bilinear=False):
        super().__init__()
        self.inc = DoubleConv(3, 8)
        self.down1 = nn.Sequential(nn.MaxPool2d(2), DoubleConv(8, 16))
        self.down2 = nn.Sequential(nn.MaxPool2d(2), DoubleConv(16, 32))
        self.up1 = Up(32, 16, bilinear)
        self.up2 = Up(16, 8, bilinear)
        self.outc = nn.Conv2d(8, 2, kernel_size=1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x = self.up1(x3, x2)
        x = self.up2(x, x1)
        return self.outc(x)


x = torch.randn(2, 3, 17, 19)
mask = (torch.rand(2, 17, 19) > 0.5).long()
for bilinear in (False, True):
    torch.manual_seed(3)
    model = UNet(bilinear)
    opt = torch.optim.RMSprop(model.parameters(), lr=1e-3, weight_decay=1e-8, momentum=0.9)
    for step in range(3):
        logits = model(x)
        loss = F.cross_entropy(logits, mask) + (1 - (F.softmax(logits, 1)[:, 1] * mask).sum() * 2 /
                                                 (F.softmax(logits, 1)[:, 1].sum() + mask.sum() + 1e-6))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        print(bilinear, step, loss.item())
    model.eval()
    with torch.no_grad():
        pred = model(x).argmax(dim=1)
    print(pred.shape, (pred == mask).float().mean().item())

y = torch.arange(16.).view(1, 1, 4, 4)
for mode, ac in [('nearest', None), ('bilinear', False), ('bilinear', True), ('bicubic', False)]:
    out = F.interpolate(y, size=(6, 5), mode=mode, align_corners=ac)
    print(mode, ac, out[0, 0, 1])
print(F.interpolate(y, scale_factor=1.5, mode='nearest-exact')[0, 0, :, 0])
print(F.interpolate(torch.arange(6.).view(1, 1, 6), scale_factor=0.5, mode='linear'))
