"""Memory statistics under PyTorch's names, per device.

``device`` may be a tgrad device, a string ("cpu", "cuda:1"), an int (a CUDA
index) or None (the default device).
"""
from ..device import get_default_device, is_available
from .allocator import get_allocator
from .summary import _format_count, _format_size, format_summary  # noqa: F401  (tgrad.memory.stats.format_summary)


def _allocator(device):
    """The allocator whose stats are asked for: ``device``'s, or the default device's (under a meta default,
    the device tensors would otherwise go to: meta memory is no memory)."""
    if device is None:
        device = get_default_device()
        if device.type == "meta":
            device = "cuda" if is_available() else "cpu"
    elif (device if isinstance(device, str) else getattr(device, "type", "")).partition(":")[0] == "meta":
        raise ValueError(f"Expected a cpu or cuda device, but got: {device}")
    return get_allocator(device)


def memory_allocated(device=None):
    """Bytes currently held by live blocks (rounded sizes)."""
    return _allocator(device).memory_allocated()


def max_memory_allocated(device=None):
    """Peak of ``memory_allocated`` since the start or the last ``reset_peak_memory_stats``."""
    return _allocator(device).max_memory_allocated()


def memory_reserved(device=None):
    """Bytes of segments taken from the backend (allocated plus cached)."""
    return _allocator(device).memory_reserved()


def max_memory_reserved(device=None):
    return _allocator(device).max_memory_reserved()


def reset_peak_memory_stats(device=None):
    _allocator(device).reset_peak_memory_stats()


def reset_accumulated_memory_stats(device=None):
    _allocator(device).reset_accumulated_memory_stats()


def memory_stats(device=None):
    """An OrderedDict with PyTorch's flat keys ("allocated_bytes.all.current", ...)."""
    return _allocator(device).memory_stats()


def memory_summary(device=None, abbreviated=False):
    """A table of the current, peak, total allocated and total freed of each stat."""
    return _allocator(device).memory_summary(abbreviated)


def empty_cache(device=None):
    """Return the cached, fully free segments to the device."""
    _allocator(device).empty_cache()
