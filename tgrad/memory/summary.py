"""``memory_summary``'s table (PyTorch's layout) for a ``memory_stats()`` dict."""


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
