import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(9)
X = torch.randn(128, 20)
y = (X[:, :5].sum(1) > 0).long() + (X[:, 5:10].sum(1) > 1).long()
teacher = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 3))
student = nn.Sequential(nn.Linear(20, 8), nn.ReLU(), nn.Linear(8, 3))
opt_t = torch.optim.Adam(teacher.parameters(), lr=1e-2)
for ep in range(30):
    loss = F.cross_entropy(teacher(X), y, label_smoothing=0.1)
    opt_t.zero_grad(); loss.backward(); opt_t.step()
print('teacher', loss.item())
teacher.eval()
T, alpha = 4.0, 0.7
kl = nn.KLDivLoss(reduction='batchmean')
kl_log = nn.KLDivLoss(reduction='batchmean', log_target=True)
opt_s = torch.optim.SGD(student.parameters(), lr=0.1, weight_decay=5e-4)
sched = torch.optim.lr_scheduler.OneCycleLR(opt_s, max_lr=0.5, total_steps=20)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=32, shuffle=True)
for ep in range(5):
    tot = 0.
    for xb, yb in loader:
        with torch.no_grad():
            t_logits = teacher(xb)
        s_logits = student(xb)
        soft = kl(F.log_softmax(s_logits / T, dim=1), F.softmax(t_logits / T, dim=1)) * T * T
        soft2 = kl_log(F.log_softmax(s_logits / T, dim=1), F.log_softmax(t_logits / T, dim=1)) * T * T
        hard = F.cross_entropy(s_logits, yb)
        loss = alpha * soft + (1 - alpha) * hard
        opt_s.zero_grad(); loss.backward(); opt_s.step(); sched.step()
        tot += loss.item() * xb.size(0)
    print(ep, tot / len(X), soft.item() - soft2.item(), sched.get_last_lr())
with torch.no_grad():
    acc_t = (teacher(X).argmax(1) == y).float().mean()
    acc_s = (student(X).argmax(1) == y).float().mean()
print(f"teacher {acc_t:.4f} student {acc_s:.4f}")
print(F.kl_div(torch.tensor([[-1.0, -0.5]]), torch.tensor([[0.3, 0.7]]), reduction='none'))
print(F.kl_div(torch.tensor([[-1.0, -0.5]]), torch.tensor([[-1.2, -0.1]]), reduction='sum', log_target=True))
