"""``tgrad.amp``: automatic mixed precision (``autocast``, ``GradScaler``), as ``torch.amp``.

Also provides the legacy per-device spellings ``tgrad.cuda.amp`` (``autocast(enabled, dtype=float16)``,
``GradScaler(init_scale, ...)``) and ``tgrad.cpu.amp`` (``autocast(enabled, dtype=bfloat16)``).
"""
import sys

from .. import cuda as _cuda
from . import cuda_amp
from .autocast_mode import (autocast, get_autocast_cpu_dtype, get_autocast_dtype, get_autocast_gpu_dtype,  # noqa: F401
                            is_autocast_available, is_autocast_enabled)
from .grad_scaler import GradScaler  # noqa: F401

_cuda.amp = cuda_amp                        # ``tgrad.cuda`` is a module: its ``amp`` is this one
sys.modules.setdefault(_cuda.__name__ + ".amp", cuda_amp)     # ``from tgrad.cuda.amp import GradScaler``
