import torch
from torch.utils.data import (DataLoader, TensorDataset, ConcatDataset, Subset, random_split, WeightedRandomSampler,
                              SubsetRandomSampler, SequentialSampler, BatchSampler, RandomSampler, Dataset)

torch.manual_seed(17)
X = torch.arange(40, dtype=torch.float32).view(20, 2)
y = torch.tensor([0] * 15 + [1] * 5)
ds = TensorDataset(X, y)
print(len(ds), ds[3])

train, val = random_split(ds, [0.75, 0.25], generator=torch.Generator().manual_seed(42))
print(len(train), len(val), train.indices, val.indices)
a, b, c = random_split(range(10), [3, 3, 4], generator=torch.Generator().manual_seed(1))
print(list(a), list(b), list(c))

class_count = torch.bincount(y)
weights = 1.0 / class_count[y].float()
sampler = WeightedRandomSampler(weights, num_samples=12, replacement=True, generator=torch.Generator().manual_seed(3))
idx = list(sampler)
print(idx, torch.bincount(y[idx], minlength=2))
print(list(WeightedRandomSampler([0.1, 0.9, 0.4, 0.7], 3, replacement=False, generator=torch.Generator().manual_seed(0))))

sub = SubsetRandomSampler([1, 4, 7, 9, 12], generator=torch.Generator().manual_seed(5))
print(list(sub), len(sub))
print(list(BatchSampler(SequentialSampler(range(10)), batch_size=4, drop_last=False)))
print(list(BatchSampler(RandomSampler(range(10), generator=torch.Generator().manual_seed(2)), 3, True)))
print(list(RandomSampler(range(5), replacement=True, num_samples=7, generator=torch.Generator().manual_seed(9))))

cat = ConcatDataset([TensorDataset(torch.zeros(3, 2), torch.zeros(3, dtype=torch.long)), ds])
print(len(cat), cat[2], cat[3], cat.cumulative_sizes)


class Seqs(Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(11)
        self.data = [torch.randint(1, 9, (int(n),), generator=g) for n in torch.randint(1, 6, (9,), generator=g)]

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return self.data[i], i % 3


def collate(batch):
    seqs, labels = zip(*batch)
    lengths = torch.tensor([len(s) for s in seqs])
    padded = torch.nn.utils.rnn.pad_sequence(seqs, batch_first=True)
    return padded, lengths, torch.tensor(labels)


g = torch.Generator()
g.manual_seed(0)
dl = DataLoader(Seqs(), batch_size=4, shuffle=True, collate_fn=collate, generator=g)
for padded, lengths, labels in dl:
    print(padded.shape, lengths.tolist(), labels)
dl2 = DataLoader(Subset(ds, [0, 5, 10, 15, 19]), batch_size=2, sampler=None, drop_last=True)
print([b[1].tolist() for b in dl2], len(dl2))
dl3 = DataLoader(ds, batch_sampler=BatchSampler(sub, 2, False))
print([b[0][:, 0].tolist() for b in dl3])
default = torch.utils.data.default_collate([{'a': torch.tensor(1.), 'b': (1, 2.5)}, {'a': torch.tensor(2.), 'b': (3, 4.5)}])
print(default)
