import math
import torch

torch.manual_seed(34)
X = torch.linspace(-3, 3, 25, dtype=torch.float64).unsqueeze(1)
y = torch.sin(2 * X).squeeze(1) + 0.1 * torch.randn(25, dtype=torch.float64)
log_ls = torch.zeros((), dtype=torch.float64, requires_grad=True)
log_sf = torch.zeros((), dtype=torch.float64, requires_grad=True)
log_sn = torch.tensor(-1.0, dtype=torch.float64, requires_grad=True)


def kernel(a, b):
    d2 = torch.cdist(a, b).pow(2)
    return log_sf.exp().pow(2) * torch.exp(-0.5 * d2 / log_ls.exp().pow(2))


def nlml():
    K = kernel(X, X) + log_sn.exp().pow(2) * torch.eye(len(X), dtype=torch.float64)
    L = torch.linalg.cholesky(K)
    alpha = torch.cholesky_solve(y.unsqueeze(1), L)
    return 0.5 * (y.unsqueeze(0) @ alpha).squeeze() + torch.log(torch.diagonal(L)).sum() + 0.5 * len(X) * math.log(2 * math.pi)


opt = torch.optim.LBFGS([log_ls, log_sf, log_sn], lr=0.5, max_iter=20, line_search_fn='strong_wolfe')
for i in range(3):
    def closure():
        opt.zero_grad()
        l = nlml()
        l.backward()
        return l
    l = opt.step(closure)
    print(i, f"{l.item():.8f}", f"{log_ls.exp().item():.6f} {log_sf.exp().item():.6f} {log_sn.exp().item():.6f}")
with torch.no_grad():
    Xs = torch.tensor([[-1.0], [0.5], [2.0]], dtype=torch.float64)
    K = kernel(X, X) + log_sn.exp().pow(2) * torch.eye(len(X), dtype=torch.float64)
    Ks = kernel(Xs, X)
    mean = Ks @ torch.linalg.solve(K, y)
    var = kernel(Xs, Xs).diag() - (Ks @ torch.linalg.solve(K, Ks.T)).diag()
    print(mean, var.clamp(min=0).sqrt())
    sol = torch.linalg.lstsq(torch.cat([X, torch.ones_like(X)], 1), y.unsqueeze(1)).solution
    print(sol.squeeze())
    U, S, V = torch.pca_lowrank(torch.cat([X, X ** 2, torch.sin(X)], 1), q=2, center=True)
    print(S, torch.linalg.eigvalsh(K)[:3])
    print(torch.linalg.det(K[:3, :3]), torch.linalg.inv(K[:2, :2]))
