"""Memory statistics under PyTorch's names, per device.

``device`` may be a tgrad device, a string ("cpu", "cuda:1"), an int (a CUDA
index) or None (the default device).
"""
from .allocator import get_allocator


def _allocator(device):
    if device is None:
        from tgrad.device import get_default_device
        device = get_default_device()
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


def _format_size(sz, pref_sz):
    prefix = "B  "
    for new_prefix in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        if pref_sz < 768 * 1024:
            break
        prefix, sz, pref_sz = new_prefix, sz // 1024, pref_sz / 1024
    return f"{sz:6d} {prefix}"


def _format_count(cnt, pref_cnt):
    prefix = " "
    for new_prefix in ("K", "M"):
        if pref_cnt < 750 * 1000:
            break
        prefix, cnt, pref_cnt = new_prefix, cnt // 1000, pref_cnt / 1000
    return f"{cnt:7d} {prefix} "


_METRICS = (
    ("allocated_bytes", "Allocated memory", _format_size),
    ("active_bytes", "Active memory", _format_size),
    ("requested_bytes", "Requested memory", _format_size),
    ("reserved_bytes", "Reserved memory", _format_size),
    ("inactive_split_bytes", "Non-releasable memory", _format_size),
    ("allocation", "Allocations", _format_count),
    ("active", "Active allocs", _format_count),
    ("segment", "Reserved segments", _format_count),
    ("inactive_split", "Non-releasable allocs", _format_count),
)


def format_summary(stats, device_str, abbreviated=False):
    """The table of ``torch.cuda.memory_summary`` for a ``memory_stats()`` dict."""
    rule, double = "-" * 75, "=" * 75
    title = f"tgrad memory summary, device {device_str}"
    ooms, retries = f"OOMs: {stats['num_ooms']}", f"backend malloc retries: {stats['num_alloc_retries']}"
    lines = [double, f"{title:^75}", rule, f"{ooms:^36}|{retries:^38}", double,
             "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  "]
    cols = ("current", "peak", "allocated", "freed")
    for key, name, fmt in _METRICS:
        lines.append(rule)
        rows = [("all", name)]
        if not abbreviated:
            rows += [("large_pool", "      from large pool"), ("small_pool", "      from small pool")]
        scale = [stats[f"{key}.all.{c}"] for c in cols]  # the "all" row picks the units
        for pool, label in rows:
            cells = " | ".join(fmt(stats[f"{key}.{pool}.{c}"], s) for c, s in zip(cols, scale))
            lines.append(f" {label:<21} | {cells} ")
    lines.append(rule)
    for key, name in (("oversize_allocations", "Oversize allocations"),
                      ("oversize_segments", "Oversize segments")):
        cells = " | ".join(_format_count(stats[f"{key}.{c}"], stats[f"{key}.{c}"]) for c in cols)
        lines.append(f" {name:<21} | {cells} ")
    lines.append(double)
    return "|" + "|\n|".join(f"{line:<75}" for line in lines) + "|\n"
