"""``tgrad.utils``: ``data`` (Dataset, DataLoader, samplers), ``checkpoint``, ``hooks``, ``dlpack`` and ``benchmark``."""
from . import benchmark, checkpoint, data, dlpack, hooks  # noqa: F401
