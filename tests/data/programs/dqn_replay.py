import random
from collections import deque, namedtuple
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

random.seed(0)
np.random.seed(0)
torch.manual_seed(39)
Transition = namedtuple('Transition', ('state', 'action', 'next_state', 'reward', 'done'))


class GridEnv:
    def __init__(self):
        self.rng = np.random.default_rng(0)

    def reset(self):
        self.pos = self.rng.integers(0, 5)
        return self.obs()

    def obs(self):
        o = np.zeros(5, dtype=np.float32)
        o[self.pos] = 1.0
        return o

    def step(self, a):
        self.pos = int(np.clip(self.pos + (1 if a == 1 else -1), 0, 4))
        done = self.pos == 4
        return self.obs(), (1.0 if done else -0.1), done


policy_net = nn.Sequential(nn.Linear(5, 32), nn.ReLU(), nn.Linear(32, 2))
target_net = nn.Sequential(nn.Linear(5, 32), nn.ReLU(), nn.Linear(32, 2))
target_net.load_state_dict(policy_net.state_dict())
opt = torch.optim.AdamW(policy_net.parameters(), lr=1e-3, amsgrad=True)
memory = deque(maxlen=200)
env = GridEnv()
steps, eps = 0, 0.9
for episode in range(6):
    s = env.reset()
    total = 0.0
    for t in range(12):
        eps = 0.05 + 0.85 * np.exp(-steps / 30)
        if random.random() > eps:
            with torch.no_grad():
                a = policy_net(torch.as_tensor(s).unsqueeze(0)).max(1).indices.item()
        else:
            a = random.randrange(2)
        s2, r, done = env.step(a)
        memory.append(Transition(s, a, s2, r, done))
        s, total, steps = s2, total + r, steps + 1
        if len(memory) >= 16:
            batch = Transition(*zip(*random.sample(memory, 16)))
            S = torch.from_numpy(np.stack(batch.state))
            A = torch.tensor(batch.action).unsqueeze(1)
            R = torch.tensor(batch.reward, dtype=torch.float32)
            S2 = torch.as_tensor(np.array(batch.next_state))
            D = torch.tensor(batch.done, dtype=torch.bool)
            q = policy_net(S).gather(1, A).squeeze(1)
            with torch.no_grad():
                next_q = torch.zeros(16)
                next_q[~D] = target_net(S2[~D]).max(1).values
            loss = F.smooth_l1_loss(q, R + 0.9 * next_q)
            opt.zero_grad(); loss.backward()
            torch.nn.utils.clip_grad_value_(policy_net.parameters(), 100)
            opt.step()
            tsd, psd = target_net.state_dict(), policy_net.state_dict()
            for k in psd:
                tsd[k] = psd[k] * 0.005 + tsd[k] * (1 - 0.005)
            target_net.load_state_dict(tsd)
        if done:
            break
    print(episode, t, round(total, 2), round(float(eps), 4), round(loss.item(), 6) if len(memory) >= 16 else None)
print(policy_net(torch.eye(5)).argmax(1))
