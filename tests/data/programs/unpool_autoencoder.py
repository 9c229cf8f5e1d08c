import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(38)


class ConvAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 4, 3, padding=1)
        self.pool = nn.MaxPool2d(2, return_indices=True)
        self.c2 = nn.Conv2d(4, 8, 3, padding=1)
        self.unpool = nn.MaxUnpool2d(2)
        self.d2 = nn.ConvTranspose2d(8, 4, 3, padding=1)
        self.d1 = nn.ConvTranspose2d(4, 1, 3, padding=1, output_padding=0)

    def forward(self, x):
        h1 = F.relu(self.c1(x))
        p1, i1 = self.pool(h1)
        h2 = F.relu(self.c2(p1))
        p2, i2 = self.pool(h2)
        u2 = self.unpool(p2, i2, output_size=h2.size())
        u2 = F.relu(self.d2(u2))
        u1 = self.unpool(u2, i1)
        return torch.sigmoid(self.d1(u1)), i2


x = torch.rand(4, 1, 12, 12)
model = ConvAE()
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
for it in range(6):
    recon, idx = model(x)
    loss = F.binary_cross_entropy(recon, x)
    opt.zero_grad(); loss.backward(); opt.step()
    print(it, f"{loss.item():.6f}")
print(idx[0, 0])
t = torch.tensor([[[[1., 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15, 16]]]])
p, i = F.max_pool2d(t, 2, return_indices=True)
print(p, i, F.max_unpool2d(p, i, 2))
p1, i1 = F.max_pool1d(torch.tensor([[[3., 1, 4, 1, 5, 9, 2, 6]]]), 2, return_indices=True)
print(F.max_unpool1d(p1, i1, 2, output_size=[9]))
print(F.adaptive_max_pool2d(t, (3, 3), return_indices=True))
print(F.lp_pool2d(t, 2, 2), F.avg_pool2d(t, 3, stride=1, padding=1, count_include_pad=False))
