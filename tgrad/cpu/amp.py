"""``tgrad.cpu.amp``: PyTorch's cpu spelling of ``tgrad.amp.autocast``."""
from .. import dtypes as D
from ..amp.autocast_mode import autocast as _autocast


class autocast(_autocast):
    """``tgrad.cpu.amp.autocast(enabled=True, dtype=bfloat16, cache_enabled=True)`` = ``autocast("cpu", ...)``."""

    def __init__(self, enabled=True, dtype=D.bfloat16, cache_enabled=True):
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)
