import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(20)
C = 4
X = torch.randn(120, 6)
W = torch.randn(6, C)
y = (X @ W + 0.5 * torch.randn(120, C)).argmax(1)
model = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, C))
opt = torch.optim.NAdam(model.parameters(), lr=1e-2)
for ep in range(15):
    loss = F.cross_entropy(model(X[:90]), y[:90])
    opt.zero_grad(); loss.backward(); opt.step()
model.eval()
with torch.no_grad():
    logits = model(X[90:])
    probs = logits.softmax(-1)
    pred = logits.argmax(dim=1)
    target = y[90:]
    acc = (pred == target).sum().item() / target.numel()
    cm = torch.bincount(target * C + pred, minlength=C * C).reshape(C, C)
    tp = cm.diag()
    precision = tp / cm.sum(0).clamp(min=1)
    recall = tp / cm.sum(1).clamp(min=1)
    f1 = 2 * precision * recall / (precision + recall + 1e-8)
    print(f"acc {acc:.4f}")
    print(cm)
    print(precision, recall, f1.mean())
    top2 = probs.topk(2, dim=1).indices
    print('top2', (top2 == target.unsqueeze(1)).any(1).float().mean())
    conf, _ = probs.max(1)
    bins = torch.linspace(0, 1, 6)
    which = torch.bucketize(conf, bins)
    ece = torch.zeros(1)
    for b in range(1, 6):
        m = which == b
        if m.any():
            ece += m.float().mean() * ((pred[m] == target[m]).float().mean() - conf[m].mean()).abs()
    print('ece', ece)
    hist = torch.histc(conf, bins=5, min=0, max=1)
    print(hist)
    order = torch.argsort(probs[:, 0], descending=True)
    t0 = (target[order] == 0).float()
    tpr = t0.cumsum(0) / t0.sum().clamp(min=1)
    fpr = (1 - t0).cumsum(0) / (1 - t0).sum()
    auc = torch.trapezoid(tpr, fpr)
    print('auc', auc)
    print(torch.nn.functional.one_hot(pred[:5], C))
    print(torch.unique(pred, return_counts=True))
    print(logits.max(dim=1))
