import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader

torch.manual_seed(14)


class PairDataset(Dataset):
    def __init__(self, n=40):
        g = torch.Generator().manual_seed(0)
        self.imgs = torch.randn(n, 1, 12, 12, generator=g)
        self.labels = torch.randint(0, 4, (n,), generator=g)
        self.imgs += self.labels.view(-1, 1, 1, 1).float() * 0.5

    def __len__(self):
        return len(self.imgs)

    def __getitem__(self, i):
        j = (i * 7 + 3) % len(self.imgs)
        return self.imgs[i], self.imgs[j], torch.tensor(float(self.labels[i] == self.labels[j]))


class SiameseNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.cnn = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(1, 4, 3), nn.ReLU(inplace=True), nn.BatchNorm2d(4),
                                 nn.ReflectionPad2d(1), nn.Conv2d(4, 8, 3), nn.ReLU(inplace=True), nn.BatchNorm2d(8),
                                 nn.AvgPool2d(2))
        self.fc = nn.Sequential(nn.Flatten(), nn.Linear(8 * 6 * 6, 32), nn.ReLU(inplace=True), nn.Linear(32, 5))

    def forward_once(self, x):
        return self.fc(self.cnn(x))

    def forward(self, a, b):
        return self.forward_once(a), self.forward_once(b)


class ContrastiveLoss(nn.Module):
    def __init__(self, margin=2.0):
        super().__init__()
        self.margin = margin

    def forward(self, o1, o2, label):
        d = F.pairwise_distance(o1, o2, keepdim=True)
        return torch.mean(label * torch.pow(d, 2) + (1 - label) * torch.pow(torch.clamp(self.margin - d, min=0.0), 2))


ds = PairDataset()
dl = DataLoader(ds, batch_size=8, shuffle=True, drop_last=True)
net = SiameseNetwork()
crit = ContrastiveLoss()
opt = torch.optim.Adam(net.parameters(), lr=5e-4)
for epoch in range(3):
    for i, (a, b, lab) in enumerate(dl):
        o1, o2 = net(a, b)
        loss = crit(o1, o2, lab.unsqueeze(1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"epoch {epoch} loss {loss.item():.6f}")
net.eval()
a, b, lab = next(iter(DataLoader(ds, batch_size=4)))
with torch.no_grad():
    o1, o2 = net(a, b)
print(F.pairwise_distance(o1, o2), lab)
print(net.cnn[3].running_mean, net.cnn[3].num_batches_tracked)
