import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(7)
V, D, NH, L, CTX = 17, 16, 4, 2, 24


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(D, 3 * D)
        self.c_proj = nn.Linear(D, D)
        self.register_buffer("bias", torch.tril(torch.ones(CTX, CTX)).view(1, 1, CTX, CTX), persistent=False)

    def forward(self, x, past=None):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(D, dim=2)
        q = q.view(B, T, NH, C // NH).transpose(1, 2)
        k = k.view(B, T, NH, C // NH).transpose(1, 2)
        v = v.view(B, T, NH, C // NH).transpose(1, 2)
        if past is not None:
            pk, pv = past
            k = torch.cat((pk, k), dim=-2)
            v = torch.cat((pv, v), dim=-2)
        present = (k, v)
        S = k.size(-2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, S - T:S, :S] == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y), present


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.attn = CausalSelfAttention()
        self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(approximate='tanh'), nn.Linear(4 * D, D))

    def forward(self, x, past=None):
        a, present = self.attn(self.ln_1(x), past)
        x = x + a
        return x + self.mlp(self.ln_2(x)), present


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, D), nn.Embedding(CTX, D)
        self.h = nn.ModuleList([Block() for _ in range(L)])
        self.ln_f = nn.LayerNorm(D)
        self.lm_head = nn.Linear(D, V, bias=False)
        self.lm_head.weight = self.wte.weight
        self.apply(self._init)

    def _init(self, m):
        if isinstance(m, nn.Linear):
            torch.nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if m.bias is not None:
                torch.nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            torch.nn.init.normal_(m.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None, past=None, start=0):
        T = idx.size(1)
        pos = torch.arange(start, start + T, dtype=torch.long).unsqueeze(0)
        x = self.wte(idx) + self.wpe(pos)
        presents = []
        for i, block in enumerate(self.h):
            x, p = block(x, None if past is None else past[i])
            presents.append(p)
        logits = self.lm_head(self.ln_f(x))
        loss = None if targets is None else F.cross_entropy(logits.view(-1, V), targets.view(-1))
        return logits, loss, presents

    @torch.no_grad()
    def generate(self, idx, n, use_cache=True, temperature=1.0, top_k=None):
        past = None
        for _ in range(n):
            if use_cache and past is not None:
                logits, _, past = self(idx[:, -1:], past=past, start=idx.size(1) - 1)
            else:
                logits, _, past = self(idx)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float('Inf')
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


model = GPT()
print(sum(p.numel() for p in model.parameters()))
decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
opt = torch.optim.AdamW([{'params': decay, 'weight_decay': 0.1}, {'params': no_decay, 'weight_decay': 0.0}],
                        lr=3e-3, betas=(0.9, 0.95))
data = torch.arange(200) % V
for it in range(12):
    ix = torch.randint(len(data) - 9, (4,))
    x = torch.stack([data[i:i + 8] for i in ix])
    y = torch.stack([data[i + 1:i + 9] for i in ix])
    _, loss, _ = model(x, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if it % 3 == 0:
        print(f"iter {it}: loss {loss.item():.4f} norm {norm.item():.4f}")
model.eval()
ctx = torch.tensor([[1, 2, 3]])
torch.manual_seed(42)
a = model.generate(ctx, 8, use_cache=True, top_k=5)
torch.manual_seed(42)
b = model.generate(ctx, 8, use_cache=False, top_k=5)
print(a)
print(torch.equal(a, b))
torch.manual_seed(0)
print(model.generate(ctx, 5, temperature=0.5))
print(len(model.state_dict()), 'h.0.attn.bias' in model.state_dict())
