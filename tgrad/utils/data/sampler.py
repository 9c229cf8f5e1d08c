"""Samplers: which indices (or batches of indices) a DataLoader fetches, in which order.

Random samplers draw from a ``tgrad.Generator`` (``randperm``/``randint``/``multinomial``), so an
order is reproducible under ``tgrad.manual_seed`` or a given generator.
"""
import itertools

import numpy as np

from ... import dtypes as D
from ..._creation import empty, randint, randperm
from ...random import Generator


def _seeded_generator():
    """A fresh Generator seeded from the default generator (PyTorch's RandomSampler does the same).  The
    samplers draw on their generator's device, a cpu one (seeded from the cpu generator) whatever the default
    device: indices are host data, and a cuda generator's int64 draws carry only 24 random bits."""
    g = Generator()
    g.manual_seed(int(empty((), dtype=D.int64, device="cpu").random_().item()))
    return g


class Sampler:
    """Base class: ``__iter__`` yields indices (or lists of indices)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation (or ``num_samples`` draws with replacement) of the dataset's indices."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        generator = self.generator if self.generator is not None else _seeded_generator()
        dev = generator.device
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from randint(0, n, (32,), generator=generator, device=dev).tolist()
            yield from randint(0, n, (self.num_samples % 32,), generator=generator, device=dev).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from randperm(n, generator=generator, device=dev).tolist()
            yield from randperm(n, generator=generator, device=dev).tolist()[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in randperm(len(self.indices), generator=self.generator,
                          device=None if self.generator is None else self.generator.device).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """Index i drawn with probability weights[i] / sum(weights).

    The indices are ``torch.multinomial(weights, num_samples, replacement, generator=generator)``'s.
    Bad weights raise when iterating, with ``torch.multinomial``'s checks and messages.
    """

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        w = np.asarray(weights.tolist() if hasattr(weights, "tolist") else weights, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        from ..._creation import tensor
        self.weights = tensor(w, dtype=D.float64, device=None if generator is None else generator.device)
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def _check(self, w):
        """torch.multinomial(w, num_samples, replacement)'s checks, in its order."""
        n = self.num_samples
        if not self.replacement and n > len(w):
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
        if not self.replacement or n == 1:
            if len(w) == 0:
                raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has "
                                   "no identity.")
            if not (w.max() < np.inf and w.min() >= 0):
                raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        else:
            for v in w:
                if not v >= 0:
                    raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0)")
                if not np.isfinite(v):
                    raise RuntimeError("invalid multinomial distribution (encountering probability entry = infinity "
                                       "or NaN)")
        if not w.sum() > 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")

    def __iter__(self):
        self._check(self.weights.cpu().numpy())
        # PyTorch: torch.multinomial(weights, num_samples, replacement, generator=generator)
        yield from self.weights.multinomial(self.num_samples, self.replacement, generator=self.generator).tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups ``sampler``'s indices into lists of ``batch_size`` (the last one shorter unless ``drop_last``)."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        it = iter(self.sampler)
        if self.drop_last:
            for batch in zip(*[it] * self.batch_size):
                yield list(batch)
        else:
            batch = list(itertools.islice(it, self.batch_size))
            while batch:
                yield batch
                batch = list(itertools.islice(it, self.batch_size))

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
