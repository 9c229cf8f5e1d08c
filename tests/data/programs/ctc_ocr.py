import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(5)
C, T, N = 6, 20, 3


class CRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.cnn = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d((2, 1)),
                                 nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d((1, None)))
        self.rnn = nn.GRU(8, 12, bidirectional=True)
        self.fc = nn.Linear(24, C)

    def forward(self, x):
        f = self.cnn(x).squeeze(2)          # N, 8, W
        f = f.permute(2, 0, 1)              # W, N, 8
        out, _ = self.rnn(f)
        return self.fc(out).log_softmax(2)  # T, N, C


model = CRNN()
imgs = torch.randn(N, 1, 8, T)
target_lengths = torch.tensor([4, 2, 5])
targets = torch.randint(1, C, (int(target_lengths.sum()),), dtype=torch.long)
input_lengths = torch.full((N,), T, dtype=torch.long)
ctc = nn.CTCLoss(blank=0, zero_infinity=True)
opt = torch.optim.Adadelta(model.parameters(), lr=1.0)
for i in range(5):
    lp = model(imgs)
    loss = ctc(lp, targets, input_lengths, target_lengths)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(i, loss.item())
lp = model(imgs)
print(F.ctc_loss(lp, targets, input_lengths, target_lengths, reduction='none'))
padded = torch.zeros(N, 5, dtype=torch.long)
off = 0
for i, l in enumerate(target_lengths.tolist()):
    padded[i, :l] = targets[off:off + l]
    off += l
print(F.ctc_loss(lp, padded, input_lengths, target_lengths, reduction='sum'))
best = lp.argmax(2).t()
for row in best:
    r = torch.unique_consecutive(row)
    print(r[r != 0].tolist())
