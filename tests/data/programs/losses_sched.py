import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(16)


class FocalLoss(nn.Module):
    def __init__(self, alpha=None, gamma=2.0, reduction='mean'):
        super().__init__()
        self.alpha, self.gamma, self.reduction = alpha, gamma, reduction

    def forward(self, logits, target):
        logp = F.log_softmax(logits, dim=-1)
        ce = F.nll_loss(logp, target, weight=self.alpha, reduction='none')
        pt = logp.gather(1, target.unsqueeze(1)).squeeze(1).exp()
        loss = (1 - pt) ** self.gamma * ce
        return loss.mean() if self.reduction == 'mean' else loss.sum()


def sigmoid_focal_loss(inputs, targets, alpha=0.25, gamma=2):
    p = torch.sigmoid(inputs)
    ce = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce * ((1 - p_t) ** gamma)
    alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
    return (alpha_t * loss).mean()


X = torch.randn(96, 12)
y = torch.randint(0, 4, (96,))
y[:60] = 0
model = nn.Sequential(nn.Linear(12, 32), nn.BatchNorm1d(32), nn.SiLU(), nn.Linear(32, 4))
bn_or_bias = [p for n, p in model.named_parameters() if n.endswith('bias') or '1.' in n]
rest = [p for n, p in model.named_parameters() if not (n.endswith('bias') or '1.' in n)]
opt = torch.optim.SGD([{'params': rest, 'weight_decay': 1e-2}, {'params': bn_or_bias, 'weight_decay': 0, 'lr': 0.05}],
                      lr=0.1, momentum=0.9)
counts = torch.bincount(y, minlength=4).float()
focal = FocalLoss(alpha=(1.0 / counts) / (1.0 / counts).sum() * 4)
ls = nn.CrossEntropyLoss(label_smoothing=0.1, weight=torch.tensor([0.5, 1., 1., 1.]))
sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode='min', factor=0.5, patience=1, threshold=1e-2)
print(counts, focal.alpha)
for ep in range(10):
    out = model(X)
    l1, l2 = focal(out, y), ls(out, y)
    loss = l1 + l2
    opt.zero_grad()
    loss.backward()
    if ep % 2:
        nn.utils.clip_grad_value_(model.parameters(), clip_value=0.05)
    else:
        total = nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5, norm_type=2.0)
    opt.step()
    val = loss.item() + (0.3 if ep > 3 else 0.0)
    sched.step(val)
    print(ep, f"{l1.item():.5f} {l2.item():.5f}", [g['lr'] for g in opt.param_groups], f"{total.item():.4f}")
print(sigmoid_focal_loss(torch.randn(5, 3), torch.randint(0, 2, (5, 3)).float()))
print(nn.utils.clip_grad_norm_(model.parameters(), 1.0, norm_type='inf'))
print(F.cross_entropy(torch.randn(3, 5), torch.tensor([[0.1, 0.2, 0.3, 0.2, 0.2]] * 3), label_smoothing=0.2))
print(F.cross_entropy(torch.randn(2, 3, 4), torch.tensor([[0, 1, 2, -100], [2, 2, 1, 0]]), label_smoothing=0.05))
print(sched.state_dict()['num_bad_epochs'], sched.best)
