import math
import torch
from torch.utils.data import IterableDataset, DataLoader, get_worker_info


class Range(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            lo, hi = self.start, self.end
        else:
            per = int(math.ceil((self.end - self.start) / float(info.num_workers)))
            lo = self.start + info.id * per
            hi = min(lo + per, self.end)
        for i in range(lo, hi):
            yield torch.tensor([float(i), float(i) ** 2])


if __name__ == '__main__':
    torch.manual_seed(52)
    ds = Range(3, 10)
    print([b.tolist() for b in DataLoader(ds, batch_size=3)])
    print(sorted(t[0, 0].item() for t in DataLoader(ds, num_workers=2)))
    dl = DataLoader(ds, batch_size=2, num_workers=2, persistent_workers=True, prefetch_factor=2)
    for ep in range(2):
        print(ep, sorted(b[:, 0].tolist() for b in dl))
    mapped = DataLoader(torch.utils.data.TensorDataset(torch.arange(10.)), batch_size=4, shuffle=True, num_workers=2,
                        generator=torch.Generator().manual_seed(0))
    print([b[0].tolist() for b in mapped])
    print(torch.utils.data.get_worker_info())
