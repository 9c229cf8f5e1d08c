"""``tgrad.utils``: ``data`` (Dataset, DataLoader, samplers) and ``hooks``."""
from . import data, hooks  # noqa: F401
