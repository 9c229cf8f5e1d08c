"""``tgrad.utils``: ``data`` (Dataset, DataLoader, samplers), ``checkpoint``, ``hooks`` and ``dlpack``."""
from . import checkpoint, data, dlpack, hooks  # noqa: F401
