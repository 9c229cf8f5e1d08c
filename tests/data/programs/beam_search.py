import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(47)
V, H, EOS, BOS = 9, 12, 1, 0
emb = nn.Embedding(V, H)
cell = nn.GRUCell(H, H)
out = nn.Linear(H, V)


def step(tokens, h):
    h = cell(emb(tokens), h)
    return F.log_softmax(out(h), dim=-1), h


@torch.no_grad()
def beam_search(h0, beam=3, max_len=6, length_penalty=0.7):
    h = h0.expand(beam, -1).contiguous()
    seqs = torch.full((beam, 1), BOS, dtype=torch.long)
    scores = torch.tensor([0.0] + [-float('inf')] * (beam - 1))
    finished = []
    for t in range(max_len):
        logp, h = step(seqs[:, -1], h)
        cand = (scores.unsqueeze(1) + logp).view(-1)
        top, idx = cand.topk(beam * 2)
        back, tok = idx // V, idx % V
        new_seqs, new_scores, new_h = [], [], []
        for s, b, k in zip(top.tolist(), back.tolist(), tok.tolist()):
            seq = torch.cat([seqs[b], torch.tensor([k])])
            if k == EOS:
                finished.append((s / (len(seq) ** length_penalty), seq.tolist()))
            else:
                new_seqs.append(seq); new_scores.append(s); new_h.append(h[b])
            if len(new_seqs) == beam:
                break
        seqs, scores, h = torch.stack(new_seqs), torch.tensor(new_scores), torch.stack(new_h)
    for s, seq in zip(scores.tolist(), seqs.tolist()):
        finished.append((s / (len(seq) ** length_penalty), seq))
    return sorted(finished, key=lambda x: -x[0])[:3]


h0 = torch.randn(1, H)
for s, seq in beam_search(h0):
    print(round(s, 5), seq)
logp, _ = step(torch.tensor([BOS, 2]), torch.zeros(2, H))
print(logp.exp().sum(-1), logp.argsort(dim=-1, descending=True)[:, :3])
vals, idx = torch.sort(torch.tensor([3, 1, 3, 2, 1]), stable=True, descending=True)
print(vals, idx, torch.tensor([3, 1, 3, 2, 1]).argsort(stable=True))
