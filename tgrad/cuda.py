"""``tgrad.cuda``: availability, device selection, synchronize, memory statistics (drop-in names).

A facade on the api floor: the current device and the device count live in ``tgrad.device`` (over the
driver in ``tgrad.memory.cuda_driver``), the statistics in ``tgrad.memory.stats``; nothing below imports
this module.
"""
from .device import current_device, device as _Device, device_count, is_available, set_device  # noqa: F401
from .device import check_available as _check_available
from .memory import cuda_driver as _drv
from .memory import stats as _stats
from .memory.allocator import OutOfMemoryError  # noqa: F401  (tgrad.cuda.OutOfMemoryError)
from .random import manual_seed_cuda as _manual_seed_cuda


def synchronize(device=None):
    """Wait for all kernels on ``device`` (default: current) to finish."""
    _check_available()
    idx = current_device() if device is None else (device if isinstance(device, int) else
                                                    (_Device(device).index or 0))
    _drv.synchronize(idx)


def get_device_name(device=None):
    _check_available()
    return _drv.device_name(current_device() if device is None else device) \
        if hasattr(_drv, "device_name") else "CUDA device"


def manual_seed(seed):
    """Seed the current cuda device's generator (cpu draws are unchanged, as in PyTorch; without a GPU the
    seed waits in device 0's generator, as PyTorch's lazy call does)."""
    _manual_seed_cuda(seed, current_device() if is_available() else 0)


def manual_seed_all(seed):
    """Seed every cuda device's generator."""
    _manual_seed_cuda(seed)


def _dev(device):
    if device is None:
        return f"cuda:{current_device()}"
    if isinstance(device, int):
        return f"cuda:{device}"
    return device


def memory_allocated(device=None):
    return _stats.memory_allocated(_dev(device))


def max_memory_allocated(device=None):
    return _stats.max_memory_allocated(_dev(device))


def memory_reserved(device=None):
    return _stats.memory_reserved(_dev(device))


def max_memory_reserved(device=None):
    return _stats.max_memory_reserved(_dev(device))


def reset_peak_memory_stats(device=None):
    return _stats.reset_peak_memory_stats(_dev(device))


def memory_stats(device=None):
    return _stats.memory_stats(_dev(device))


def memory_summary(device=None, abbreviated=False):
    return _stats.memory_summary(_dev(device), abbreviated=abbreviated)


def empty_cache():
    if is_available():
        _stats.empty_cache(_dev(None))
