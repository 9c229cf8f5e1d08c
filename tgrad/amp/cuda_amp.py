"""``tgrad.cuda.amp``: PyTorch's deprecated cuda spellings of ``tgrad.amp``'s autocast and GradScaler."""
from .. import dtypes as D
from .autocast_mode import autocast as _autocast
from .grad_scaler import GradScaler as _GradScaler


class autocast(_autocast):
    """``tgrad.cuda.amp.autocast(enabled=True, dtype=float16, cache_enabled=True)`` = ``autocast("cuda", ...)``."""

    def __init__(self, enabled=True, dtype=D.float16, cache_enabled=True):
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """``tgrad.cuda.amp.GradScaler(init_scale, ...)`` = ``tgrad.amp.GradScaler("cuda", init_scale, ...)``."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)
