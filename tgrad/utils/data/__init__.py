"""``tgrad.utils.data``: datasets, samplers, ``DataLoader`` and collation (PyTorch's API)."""
from .collate import default_collate, default_convert  # noqa: F401
from .dataloader import DataLoader, get_worker_info  # noqa: F401
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset,  # noqa: F401
                      TensorDataset, random_split)
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,  # noqa: F401
                      WeightedRandomSampler)
from . import distributed  # noqa: F401,E402
from .distributed import DistributedSampler  # noqa: F401,E402
