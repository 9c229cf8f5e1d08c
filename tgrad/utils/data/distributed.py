"""``DistributedSampler``: each of ``num_replicas`` processes gets its own share of a dataset's indices."""
import math

from ..._creation import randperm
from ...random import Generator
from .sampler import Sampler


class DistributedSampler(Sampler):
    """Indices ``rank, rank + num_replicas, ...`` of the (shuffled) index list, padded or cut to a multiple of
    ``num_replicas`` (PyTorch's rule: padding repeats the list from its start; ``drop_last`` cuts the tail).

    shuffle: a permutation drawn from a ``tgrad.Generator`` seeded with ``seed + epoch`` (the same on every
    rank; call ``set_epoch`` each epoch for a new order). It is tgrad's generator, so the order differs from
    PyTorch's for the same seed; with ``shuffle=False`` the indices are exactly PyTorch's.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        from ... import distributed as dist
        if num_replicas is None:
            num_replicas = dist.get_world_size()
        if rank is None:
            rank = dist.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if self.drop_last and len(self.dataset) % self.num_replicas != 0:
            self.num_samples = math.ceil((len(self.dataset) - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(len(self.dataset) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        if self.shuffle:
            g = Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = randperm(len(self.dataset), generator=g, device=g.device).tolist()
        else:
            indices = list(range(len(self.dataset)))
        if not self.drop_last:
            padding_size = self.total_size - len(indices)
            if padding_size <= len(indices):
                indices += indices[:padding_size]
            else:
                indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """The epoch mixed into the seed: a new shuffled order per epoch, the same on every rank."""
        self.epoch = epoch
