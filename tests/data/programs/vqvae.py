import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(30)


class VectorQuantizer(nn.Module):
    def __init__(self, K=8, D=4, beta=0.25):
        super().__init__()
        self.K, self.D, self.beta = K, D, beta
        self.embedding = nn.Embedding(K, D)
        self.embedding.weight.data.uniform_(-1 / K, 1 / K)

    def forward(self, z):
        z = z.permute(0, 2, 3, 1).contiguous()
        flat = z.view(-1, self.D)
        d = (flat.pow(2).sum(1, keepdim=True) + self.embedding.weight.pow(2).sum(1)
             - 2 * flat @ self.embedding.weight.t())
        idx = torch.argmin(d, dim=1).unsqueeze(1)
        enc = torch.zeros(idx.shape[0], self.K).scatter_(1, idx, 1)
        q = (enc @ self.embedding.weight).view(z.shape)
        loss = F.mse_loss(q.detach(), z) * self.beta + F.mse_loss(q, z.detach())
        q = z + (q - z).detach()
        avg = enc.mean(0)
        perplexity = torch.exp(-torch.sum(avg * torch.log(avg + 1e-10)))
        return loss, q.permute(0, 3, 1, 2).contiguous(), perplexity, idx.view(z.shape[:3])


class VQVAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(1, 8, 4, 2, 1), nn.ReLU(), nn.Conv2d(8, 4, 3, 1, 1))
        self.vq = VectorQuantizer()
        self.dec = nn.Sequential(nn.Conv2d(4, 8, 3, 1, 1), nn.ReLU(), nn.ConvTranspose2d(8, 1, 4, 2, 1))

    def forward(self, x):
        vq_loss, q, ppl, codes = self.vq(self.enc(x))
        return self.dec(q), vq_loss, ppl, codes


x = torch.rand(6, 1, 8, 8)
model = VQVAE()
opt = torch.optim.Adam(model.parameters(), lr=2e-3, amsgrad=False)
for it in range(8):
    recon, vq_loss, ppl, codes = model(x)
    rec = F.mse_loss(recon, x)
    loss = rec + vq_loss
    opt.zero_grad(); loss.backward(); opt.step()
    print(it, f"rec {rec.item():.6f} vq {vq_loss.item():.6f} ppl {ppl.item():.4f}")
print(codes[0])
print(model.vq.embedding.weight.grad.abs().sum(1) > 0)
print(torch.cdist(torch.randn(3, 4), model.vq.embedding.weight).argmin(1))
