"""``tgrad.utils``: ``data`` (Dataset, DataLoader, samplers), ``hooks`` and ``dlpack``."""
from . import data, dlpack, hooks  # noqa: F401
