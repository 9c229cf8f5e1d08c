import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(28)
text = "hello world, hello tensors, hello gradients. " * 4
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text])
V, H = len(chars), 24


class CharRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, 12)
        self.cell1 = nn.LSTMCell(12, H)
        self.cell2 = nn.GRUCell(H, H)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(H, V)

    def forward(self, x, state):
        h1, c1, h2 = state
        outs = []
        for t in range(x.size(1)):
            h1, c1 = self.cell1(self.emb(x[:, t]), (h1, c1))
            h2 = self.cell2(self.drop(h1), h2)
            outs.append(self.head(h2))
        return torch.stack(outs, 1), (h1, c1, h2)

    def init_state(self, b):
        return tuple(torch.zeros(b, H) for _ in range(3))


model = CharRNN()
opt = torch.optim.Adamax(model.parameters(), lr=0.02)
B, T = 4, 10
starts = torch.arange(B) * (len(data) // B)
state = model.init_state(B)
for it in range(10):
    idx = starts.unsqueeze(1) + torch.arange(T) + it * T
    x, y = data[idx % len(data)], data[(idx + 1) % len(data)]
    state = tuple(s.detach() for s in state)       # truncated BPTT
    logits, state = model(x, state)
    loss = F.cross_entropy(logits.transpose(1, 2), y)
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 5.0, error_if_nonfinite=True)
    opt.step()
    if it % 3 == 0:
        print(it, f"{loss.item():.5f}", f"ppl {loss.exp().item():.3f}")
model.eval()
with torch.no_grad():
    torch.manual_seed(1)
    st = model.init_state(1)
    cur = torch.tensor([[stoi['h']]])
    out = ['h']
    for _ in range(20):
        logits, st = model(cur, st)
        p = F.softmax(logits[0, -1] / 0.8, dim=-1)
        cur = torch.multinomial(p, 1).view(1, 1)
        out.append(chars[cur.item()])
    print(''.join(out))
