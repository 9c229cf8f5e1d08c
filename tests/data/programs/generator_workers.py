import random
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info


def seed_worker(worker_id):
    worker_seed = torch.initial_seed() % 2 ** 32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


class Noisy(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return torch.tensor([float(i)]) + torch.rand(1), (info.id if info is not None else -1)


torch.manual_seed(25)
g = torch.Generator()
g.manual_seed(0)
print(g.initial_seed(), torch.initial_seed())
dl = DataLoader(Noisy(), batch_size=4, shuffle=True, num_workers=0, worker_init_fn=seed_worker, generator=g)
for xb, wid in dl:
    print(xb.squeeze(1), wid)
g2 = torch.Generator().manual_seed(0)
print(torch.randperm(8, generator=g2))
state = g.get_state()
a = torch.rand(3, generator=g)
g.set_state(state)
b = torch.rand(3, generator=g)
print(torch.equal(a, b), a)
print(torch.randn(2, generator=torch.Generator().manual_seed(7)), torch.randint(0, 10, (4,), generator=torch.Generator().manual_seed(7)))
rs = torch.get_rng_state()
r1 = torch.rand(2)
torch.set_rng_state(rs)
print(torch.equal(r1, torch.rand(2)))
with torch.random.fork_rng():
    torch.manual_seed(123)
    inner = torch.rand(1)
print(inner, torch.rand(1))
print(torch.normal(torch.zeros(3), torch.ones(3), generator=torch.Generator().manual_seed(1)))
print(torch.multinomial(torch.tensor([0.1, 0.6, 0.3]), 5, replacement=True, generator=torch.Generator().manual_seed(2)))
print(torch.empty(3).uniform_(-1, 1, generator=torch.Generator().manual_seed(3)))
print(torch.bernoulli(torch.full((6,), 0.5), generator=torch.Generator().manual_seed(4)))
print(g.seed() != 0)
