"""Train a character-level GPT (nanoGPT-style) on a bundled text, then sample from it.

    python examples/train_gpt.py              # 4 layers, 4 heads, 64 channels, 300 steps
    python examples/train_gpt.py --fast       # a tiny model, 30 steps (CI)
    python examples/train_gpt.py --torch      # the same script on PyTorch (step-time comparison)
    python examples/train_gpt.py --amp        # forward under autocast (bfloat16 on cpu, float16 on cuda)

Token + position embeddings, blocks of causal self-attention (``F.scaled_dot_product_attention``, one
fused flash-attention kernel each way) and a GELU MLP with pre-LayerNorm residuals, a weight-tied head,
AdamW with weight decay on matrices only.  Prints the train / validation loss, the mean step time and a
sample (``torch.multinomial`` when the library has it, greedy argmax otherwise).  The text
(examples/data/stdlib_docs.txt, 64 KB) is docstrings of Python's standard library (textwrap, json,
argparse, ...; PSF license), as the installed Python 3.11 prints them.
"""
import argparse
import math
import os
import time

import numpy as np

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "stdlib_docs.txt")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fast", action="store_true", help="tiny model, 30 steps (the CI setting)")
    p.add_argument("--torch", action="store_true", help="run on PyTorch instead of tgrad")
    p.add_argument("--amp", action="store_true", help="forward pass under autocast")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--block-size", type=int, default=64)
    p.add_argument("--n-layer", type=int, default=4)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--n-embd", type=int, default=64)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--sample-chars", type=int, default=200)
    p.add_argument("--seed", type=int, default=1337)
    args = p.parse_args(argv)
    if args.fast:
        args.steps, args.batch_size, args.block_size = 30, 8, 32
        args.n_layer, args.n_head, args.n_embd, args.sample_chars = 2, 2, 32, 60
    return args


args = parse_args()
if args.torch:
    import torch
else:
    import tgrad as torch
nn, F = torch.nn, torch.nn.functional


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, dropout):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.resid_dropout = nn.Dropout(dropout)
        self.n_head, self.dropout = n_head, dropout

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0,
                                           is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, dropout)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * n_embd, n_embd), nn.Dropout(dropout))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size, block_size, n_layer, n_head, n_embd, dropout):
        super().__init__()
        self.block_size = block_size
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList([Block(n_embd, n_head, dropout) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.wte.weight = self.lm_head.weight           # weight tying
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    @staticmethod
    def _init_weights(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx, targets=None):
        T = idx.size(1)
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)).float(), targets.view(-1))

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0):
        """Append ``max_new_tokens`` characters: sampled with ``torch.multinomial`` if the library has it,
        else the most likely one (greedy)."""
        sample = hasattr(torch, "multinomial")
        for _ in range(max_new_tokens):
            logits, _ = self(idx[:, -self.block_size:])
            logits = logits[:, -1, :] / temperature
            if sample:
                nxt = torch.multinomial(F.softmax(logits, dim=-1), num_samples=1)
            else:
                nxt = logits.argmax(dim=-1, keepdim=True)
            idx = torch.cat((idx, nxt), dim=1)
        return idx


def main():
    torch.manual_seed(args.seed)
    text = open(DATA, encoding="utf-8").read()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor(np.array([stoi[c] for c in text], dtype=np.int64))
    n = int(0.9 * len(data))
    train, val = data[:n], data[n:]

    def get_batch(split):
        d = train if split == "train" else val
        ix = torch.randint(len(d) - args.block_size - 1, (args.batch_size,))
        x = torch.stack([d[i:i + args.block_size] for i in ix.tolist()])
        y = torch.stack([d[i + 1:i + 1 + args.block_size] for i in ix.tolist()])
        return x, y

    model = GPT(len(chars), args.block_size, args.n_layer, args.n_head, args.n_embd, args.dropout)
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=args.lr, betas=(0.9, 0.99))
    print(f"{'PyTorch' if args.torch else 'tgrad'}: {sum(p.numel() for p in params):,} parameters, "
          f"vocabulary {len(chars)}, {len(text):,} characters")

    @torch.no_grad()
    def estimate_loss(iters=4):
        model.eval()
        out = {}
        for split in ("train", "val"):
            out[split] = sum(model(*get_batch(split))[1].item() for _ in range(iters)) / iters
        model.train()
        return out

    first = estimate_loss()
    print(f"step 0: train loss {first['train']:.4f}, val loss {first['val']:.4f}")
    times = []
    for step in range(1, args.steps + 1):
        lr = args.lr * min(1.0, step / 10) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / args.steps)))
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = get_batch("train")
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.amp):
            _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss_value = loss.item()
        times.append(time.perf_counter() - t0)
        if step % max(1, args.steps // 5) == 0 or step == args.steps:
            print(f"step {step}: loss {loss_value:.4f}, {1000 * times[-1]:.1f} ms")
    last = estimate_loss()
    steady = times[2:] or times
    print(f"step {args.steps}: train loss {last['train']:.4f}, val loss {last['val']:.4f}")
    print(f"mean step time: {1000 * sum(steady) / len(steady):.1f} ms (steps 3..{args.steps}, "
          f"{args.batch_size}x{args.block_size} tokens)")
    assert last["train"] < first["train"] - 0.3, "the model did not learn"

    model.eval()
    how = "sampled with multinomial" if hasattr(torch, "multinomial") else \
        "greedy: this library has no multinomial yet"
    ctx = torch.tensor([[stoi["\n"]]], dtype=torch.long)
    out = model.generate(ctx, args.sample_chars)[0].tolist()
    print(f"--- sample ({how}) ---")
    print("".join(chars[i] for i in out))


if __name__ == "__main__":
    main()
