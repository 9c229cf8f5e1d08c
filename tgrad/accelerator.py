"""``tgrad.accelerator``: PyTorch's device-generic accelerator API; tgrad's one accelerator is ``cuda``."""
from . import cuda as _cuda
from .device import device as _device


def is_available():
    return _cuda.is_available()


def device_count():
    return _cuda.device_count() if _cuda.is_available() else 0


def current_accelerator(check_available=False):
    """``tgrad.device('cuda')`` when a GPU is present, else None (as a CPU-only PyTorch answers)."""
    return _device("cuda") if _cuda.is_available() else None


def current_device_index():
    return _cuda.current_device()


def set_device_index(device):
    _cuda.set_device(device)


set_device_idx = set_device_index
current_device_idx = current_device_index


def synchronize(device=None):
    _cuda.synchronize(device)
