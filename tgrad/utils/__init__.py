"""``tgrad.utils``: ``hooks`` (RemovableHandle)."""
from . import hooks  # noqa: F401
