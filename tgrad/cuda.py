"""``tgrad.cuda``: availability, device selection, synchronize, memory statistics (drop-in names)."""
import threading

from .memory import cuda_driver as _drv
from .memory import stats as _stats
from .memory.allocator import OutOfMemoryError  # noqa: F401  (tgrad.cuda.OutOfMemoryError)

_state = threading.local()


def is_available():
    """True when the CUDA driver loads and reports at least one device."""
    return _drv.driver_available()


def device_count():
    return _drv.device_count()


def _check_available():
    if not is_available():
        raise RuntimeError(f"cuda is not available: {_drv.unavailable_reason()}")


def current_device():
    _check_available()
    return getattr(_state, "index", 0)


def set_device(device):
    from .device import device as Device
    idx = device if isinstance(device, int) else Device(device).index or 0
    _check_available()
    if not 0 <= idx < device_count():
        raise RuntimeError(f"CUDA error: invalid device ordinal {idx}")
    _state.index = idx
    _drv.set_current_device(idx)


def synchronize(device=None):
    """Wait for all kernels on ``device`` (default: current) to finish."""
    _check_available()
    from .device import device as Device
    idx = current_device() if device is None else (device if isinstance(device, int) else
                                                    (Device(device).index or 0))
    _drv.synchronize(idx)


def get_device_name(device=None):
    _check_available()
    return _drv.device_name(current_device() if device is None else device) \
        if hasattr(_drv, "device_name") else "CUDA device"


def manual_seed(seed):
    from .random import manual_seed as _ms
    _ms(seed)


manual_seed_all = manual_seed


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
