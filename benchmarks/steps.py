"""The training steps of issues 6 and 18, written once against a ``torch``-like module.

``build(name, torch)`` returns ``step()``: one training step of (a)-(c), or one
epoch of (d), written with the public API exactly as a PyTorch user would;
``build(name, torch, compile=True)`` the same step under ``torch.compile``.
``torch`` is ``tgrad`` (``import tgrad as torch``) or the real PyTorch (in a
separate process). Data are numpy-generated, so both sides see the same values.

- a: seed 000's MLP 8->12->4, batch 10, BCE-with-logits
- b: MLP 64->128->10, batch 64, cross-entropy, digits-shaped data (8x8 images, 0..16)
- c: MLP 784->256->10, batch 128, cross-entropy (MNIST-shaped), Adam (lr 1e-3); (a), (b): SGD momentum 0.9
- d: seed 003's linear regression, yhat = b + w * x over 80 points, the manual update
  ``b.sub_(lr * b.grad)`` under ``no_grad`` (lr=0.1); a run is 1000 epochs (``EPOCHS``)
- e: the same with ``optim.SGD(lr=0.1)``
- f: word-level LSTM language model (pytorch/examples style): embedding 32, 2-layer LSTM 64 with
  dropout 0.2, batch_first, vocab 50, seq 35, batch 20; clip_grad_norm_ 0.25, plain SGD on p.data,
  hidden state detached between batches
- g: char-level GPT (examples/train_gpt.py's model at its default size): vocab 65, 4 layers, 4 heads,
  64 channels, block 64, batch 16, dropout 0.1, weight-tied head, causal scaled_dot_product_attention,
  AdamW (decay on matrices only), clip_grad_norm_ 1.0
- h: the CNN of examples/train_cnn.py (conv 1->16 -> BatchNorm2d -> ReLU -> MaxPool2d 2, conv 16->32 -> ... ->
  Dropout 0.25 -> Linear 128->10) on batches of 32 digits-shaped images (1x8x8), cross-entropy, AdamW (lr 1e-2,
  weight decay 1e-4); the example's step without its OneCycleLR (whose schedule ends) and ``loss.item()``
"""
import numpy as np

NAMES = ("a", "b", "c", "d", "e", "f", "g", "h")
DESCRIPTION = {
    "a": "MLP 8-12-4, batch 10, BCE-with-logits",
    "b": "MLP 64-128-10, batch 64, cross-entropy",
    "c": "MLP 784-256-10, batch 128, CE, Adam",
    "d": "linear regression, manual update, 1 epoch",
    "e": "linear regression, optim.SGD, 1 epoch",
    "f": "LSTM LM 50-32-64x2, seq 35, batch 20",
    "g": "char GPT 4x(4 heads, 64), block 64, batch 16",
    "h": "CNN 2x(conv, BN, ReLU, pool), 8x8, batch 32",
}
EPOCHS = 1000


def _mlp(torch, n_in, hidden, n_out):
    nn = torch.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.hidden = nn.Linear(n_in, hidden)
            self.act = nn.ReLU()
            self.output = nn.Linear(hidden, n_out)

        def forward(self, x):
            return self.output(self.act(self.hidden(x)))
    return MLP()


def _classifier_step(torch, model, x, y, loss_fn, adam=False):
    optimizer = (torch.optim.Adam(model.parameters(), lr=1e-3) if adam else
                 torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9))

    def step():
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss
    return step


def build(name, torch, compile=False):
    """``step()`` of training step ``name`` on the module ``torch``; ``compile``: under ``torch.compile``.

    (a)-(e) compile the whole step.  (f), (g) and (h) compile the training step proper, a function of the batch
    (and of (f)'s hidden state) returning the loss (and the new hidden state), with the batch picked and the
    hidden state kept by the caller, as a torch.compile user writes it: a step that reads a changing batch
    index or stores a new tensor in an outer object would be recorded again on every call."""
    if name in ("f", "g", "h"):
        return {"f": _lstm_lm, "g": _gpt, "h": _cnn}[name](torch, np.random.default_rng(0), compile=compile)
    step = _build(name, torch)
    if compile:
        step = torch.compile(step)
    return step


def _build(name, torch):
    F = torch.nn.functional
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    if name == "a":
        x = torch.tensor(rng.standard_normal((10, 8)).astype(np.float32))
        y = torch.tensor(rng.integers(0, 2, (10, 4)).astype(np.float32))
        return _classifier_step(torch, _mlp(torch, 8, 12, 4), x, y, F.binary_cross_entropy_with_logits)
    if name == "b":
        x = torch.tensor((rng.integers(0, 17, (64, 64)) / 16.0).astype(np.float32))
        y = torch.tensor(rng.integers(0, 10, 64))
        return _classifier_step(torch, _mlp(torch, 64, 128, 10), x, y, F.cross_entropy)
    if name == "c":
        x = torch.tensor(rng.random((128, 784), dtype=np.float32))
        y = torch.tensor(rng.integers(0, 10, 128))
        return _classifier_step(torch, _mlp(torch, 784, 256, 10), x, y, F.cross_entropy, adam=True)
    if name in ("d", "e"):
        np.random.seed(42)
        xs = np.random.rand(100, 1)
        ys = 1 + 2 * xs + .1 * np.random.randn(100, 1)
        idx = np.arange(100)
        np.random.shuffle(idx)
        x_train = torch.as_tensor(xs[idx[:80]]).float()
        y_train = torch.as_tensor(ys[idx[:80]]).float()
        torch.manual_seed(42)
        b = torch.randn(1, requires_grad=True, dtype=torch.float)
        w = torch.randn(1, requires_grad=True, dtype=torch.float)
        lr = 0.1
        optimizer = torch.optim.SGD([b, w], lr=lr)

        def step():
            yhat = b + w * x_train
            loss = ((yhat - y_train) ** 2).mean()
            loss.backward()
            if name == "e":
                optimizer.step()
                optimizer.zero_grad()
                return loss
            with torch.no_grad():
                b.sub_(lr * b.grad)         # seed 003's b -= lr * b.grad, in a function
                w.sub_(lr * w.grad)
            b.grad.zero_()
            w.grad.zero_()
            return loss
        step.params = (b, w)
        return step
    raise ValueError(f"unknown step {name!r}")


def _lstm_lm(torch, rng, ntokens=50, emsize=32, nhid=64, nlayers=2, bptt=35, bsz=20, lr=5.0, compile=False):
    nn = torch.nn
    torch.manual_seed(0)

    class RNNModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.2)
            self.encoder = nn.Embedding(ntokens, emsize)
            self.rnn = nn.LSTM(emsize, nhid, nlayers, dropout=0.2, batch_first=True)
            self.decoder = nn.Linear(nhid, ntokens)

        def forward(self, x, hidden):
            out, hidden = self.rnn(self.drop(self.encoder(x)), hidden)
            return self.decoder(self.drop(out)).view(-1, ntokens), hidden

    model = RNNModel()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(rng.uniform(-0.1, 0.1, tuple(p.shape)).astype(np.float32)))
    data = torch.tensor(rng.integers(0, ntokens, (bsz, bptt * 8 + 1)))
    state = {"i": 0, "hidden": (torch.zeros(nlayers, bsz, nhid), torch.zeros(nlayers, bsz, nhid))}
    criterion = nn.CrossEntropyLoss()

    def train(x, y, hidden):
        model.zero_grad()
        out, hidden = model(x, hidden)
        loss = criterion(out, y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        return loss, hidden
    train = torch.compile(train) if compile else train

    def step():
        i = state["i"] * bptt
        state["i"] = (state["i"] + 1) % 8
        x, y = data[:, i:i + bptt], data[:, i + 1:i + 1 + bptt]
        loss, state["hidden"] = train(x, y, tuple(h.detach() for h in state["hidden"]))
        return loss
    return step


def _gpt(torch, rng, vocab=65, block=64, n_layer=4, n_head=4, n_embd=64, bsz=16, dropout=0.1, compile=False):
    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(0)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)
            self.resid_dropout = nn.Dropout(dropout)

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(C, dim=2)
            q, k, v = (t.view(B, T, n_head, C // n_head).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout if self.training else 0.0, is_causal=True)
            return self.resid_dropout(self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn, self.ln_2 = nn.LayerNorm(n_embd), Attention(), nn.LayerNorm(n_embd)
            self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(approximate="tanh"),
                                     nn.Linear(4 * n_embd, n_embd), nn.Dropout(dropout))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, n_embd), nn.Embedding(block, n_embd)
            self.drop = nn.Dropout(dropout)
            self.blocks = nn.ModuleList([Block() for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(n_embd)
            self.lm_head = nn.Linear(n_embd, vocab, bias=False)
            self.wte.weight = self.lm_head.weight

        def forward(self, idx, targets):
            pos = torch.arange(0, idx.size(1), dtype=torch.long)
            x = self.drop(self.wte(idx) + self.wpe(pos))
            for b in self.blocks:
                x = b(x)
            logits = self.lm_head(self.ln_f(x))
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    model = GPT()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor((rng.standard_normal(tuple(p.shape)) * 0.02).astype(np.float32)))
    params = list(model.parameters())
    opt = torch.optim.AdamW([{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
                             {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
                            lr=3e-3, betas=(0.9, 0.99))
    data = rng.integers(0, vocab, (8, bsz, block + 1))
    xs = [torch.tensor(d[:, :-1].copy()) for d in data]
    ys = [torch.tensor(d[:, 1:].copy()) for d in data]
    state = {"i": 0}

    def train(x, y):
        loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss
    train = torch.compile(train) if compile else train

    def step():
        i = state["i"]
        state["i"] = (i + 1) % 8
        return train(xs[i], ys[i])
    return step


def cnn_model(torch):
    """examples/train_cnn.py's model (16 x 4 x 4 after the first pool, 32 x 2 x 2 after the second)."""
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(0.25), nn.Linear(32 * 2 * 2, 10))


def _cnn(torch, rng, bsz=32, compile=False):
    torch.manual_seed(0)
    model = cnn_model(torch)
    model.train()
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-4)
    data = [(torch.tensor(((rng.integers(0, 17, (bsz, 1, 8, 8)) / 16.0 - 0.3) / 0.4).astype(np.float32)),
             torch.tensor(rng.integers(0, 10, bsz))) for _ in range(8)]
    state = {"i": 0}

    def train(x, y):
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        return loss
    train = torch.compile(train) if compile else train

    def step():
        i = state["i"]
        state["i"] = (i + 1) % 8
        return train(*data[i])
    return step
