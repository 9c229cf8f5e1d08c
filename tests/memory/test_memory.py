"""The memory layer: caching-allocator policy, OOM handling, stats, Storage, CUDA probing."""
import ctypes
import gc
import random
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:  # run from a checkout without tgrad installed
    sys.path.insert(0, ROOT)

import tgrad.memory as mem  # noqa: E402  (tgrad.memory must import on its own)
from tgrad.memory import cuda_driver  # noqa: E402
from tgrad.memory.allocator import (BackendOutOfMemory, CachingAllocator, OutOfMemoryError,  # noqa: E402
                                    format_size)
from tgrad.memory.host import HostBackend  # noqa: E402

KiB, MiB = 1 << 10, 1 << 20


def make(capacity=None):
    return CachingAllocator(HostBackend(capacity), "cpu")


def free_blocks(alloc):
    alloc.settle()
    return sorted((b.ptr, b.size) for pool in alloc._free.values() for (_, _, b) in pool)


def test_host_backend_aligned_real_memory_and_capacity():
    be = HostBackend(capacity=1 * MiB)
    p = be.malloc(1000)
    assert p % 256 == 0
    be.memset(p, 7, 1000)
    assert ctypes.string_at(p, 1000) == b"\x07" * 1000
    assert be.mem_get_info() == (1 * MiB - 1000, 1 * MiB)
    with pytest.raises(BackendOutOfMemory):
        be.malloc(1 * MiB)
    be.free(p)
    assert (be.num_mallocs, be.num_frees) == (1, 1)
    with pytest.raises(ValueError):
        be.free(p)


def test_same_size_cycles_call_backend_once():
    alloc = make()
    for _ in range(1000):
        alloc.free(alloc.malloc(3000))
    assert alloc.backend.num_mallocs == 1
    stats = alloc.memory_stats()
    assert stats["num_device_alloc"] == 1
    assert stats["allocation.all.allocated"] == 1000
    assert stats["allocation.all.freed"] == 1000
    assert alloc.memory_allocated() == 0
    alloc._check_invariants()


def test_rounding():
    alloc = make()
    for asked, size in ((1, 512), (512, 512), (513, 1024), (0, 512), (1 * MiB + 1, 1 * MiB + 512)):
        b = alloc.malloc(asked)
        assert (b.size, b.requested) == (size, asked)
        assert b.ptr % 256 == 0
        alloc.free(b)
    b = alloc.malloc(1)
    assert alloc.memory_allocated() == 512
    assert alloc.memory_stats()["requested_bytes.all.current"] == 1
    alloc.free(b)
    assert alloc.memory_allocated() == 0
    alloc._check_invariants()


@pytest.mark.parametrize("asked, pool, segment", [
    (1, "small_pool", 2 * MiB),
    (1 * MiB, "small_pool", 2 * MiB),
    (1 * MiB + 1, "large_pool", 20 * MiB),
    (10 * MiB - 512, "large_pool", 20 * MiB),
    (10 * MiB, "large_pool", 10 * MiB),
    (11 * MiB, "large_pool", 12 * MiB),
])
def test_pool_and_segment_sizes(asked, pool, segment):
    alloc = make()
    b = alloc.malloc(asked)
    stats = alloc.memory_stats()
    assert stats[f"reserved_bytes.{pool}.current"] == segment
    assert stats[f"segment.{pool}.current"] == 1
    assert stats["reserved_bytes.all.current"] == segment
    alloc.free(b)
    alloc._check_invariants()


def test_split_and_coalesce():
    alloc = make()
    a = alloc.malloc(1000)
    b = alloc.malloc(1000)
    assert alloc.backend.num_mallocs == 1
    assert b.ptr == a.ptr + 1024                     # carved from one segment, adjacent
    base = a.ptr
    assert free_blocks(alloc) == [(base + 2048, 2 * MiB - 2048)]
    stats = alloc.memory_stats()
    assert stats["inactive_split.all.current"] == 1
    assert stats["inactive_split_bytes.all.current"] == 2 * MiB - 2048
    alloc.free(a)
    assert free_blocks(alloc) == [(base, 1024), (base + 2048, 2 * MiB - 2048)]
    alloc._check_invariants()
    alloc.free(b)
    assert free_blocks(alloc) == [(base, 2 * MiB)]   # one whole free segment again
    assert alloc.memory_stats()["inactive_split.all.current"] == 0
    c = alloc.malloc(512 * KiB)                      # bigger: same segment, no backend call
    assert c.ptr == base and alloc.backend.num_mallocs == 1
    alloc.free(c)
    alloc._check_invariants()


def test_split_thresholds():
    alloc = make()
    s = alloc.malloc(1 * MiB)
    t = alloc.malloc(1 * MiB - 512)  # small pool: a 512 B remainder is kept as a free block
    assert t.size == 1 * MiB - 512
    assert free_blocks(alloc) == [(s.ptr + 2 * MiB - 512, 512)]
    alloc.free(s)
    alloc.free(t)
    alloc.empty_cache()
    a = alloc.malloc(19 * MiB)  # 20 MiB segment, 1 MiB left: not > 1 MiB, so not split
    assert a.size == 20 * MiB
    alloc.free(a)
    b = alloc.malloc(18 * MiB)  # 2 MiB left: split
    assert b.size == 18 * MiB
    assert free_blocks(alloc) == [(b.ptr + 18 * MiB, 2 * MiB)]
    alloc.free(b)
    alloc._check_invariants()


def test_best_fit():
    alloc = make()
    blocks = [alloc.malloc(n) for n in (4096, 512, 2048, 512, 1024, 512)]
    hole_4k, hole_2k, hole_1k = blocks[0], blocks[2], blocks[4]
    for b in (hole_4k, hole_2k, hole_1k):
        alloc.free(b)
    assert alloc.malloc(1500).ptr == hole_2k.ptr   # smallest free block that fits
    assert alloc.malloc(1024).ptr == hole_1k.ptr
    assert alloc.malloc(600).ptr == hole_4k.ptr    # only the 4 KiB hole is left below the tail
    assert alloc.backend.num_mallocs == 1
    alloc._check_invariants()


def test_peak_and_reset():
    alloc = make()
    a = alloc.malloc(3 * MiB)
    b = alloc.malloc(1 * MiB)
    alloc.free(a)
    assert alloc.memory_allocated() == 1 * MiB
    assert alloc.max_memory_allocated() == 4 * MiB
    assert alloc.max_memory_reserved() == 22 * MiB
    alloc.reset_peak_memory_stats()
    assert alloc.max_memory_allocated() == 1 * MiB
    c = alloc.malloc(512)
    assert alloc.max_memory_allocated() == 1 * MiB + 512
    alloc.free(b)
    alloc.free(c)
    assert alloc.max_memory_allocated() == 1 * MiB + 512
    alloc.reset_accumulated_memory_stats()
    stats = alloc.memory_stats()
    assert stats["allocated_bytes.all.allocated"] == 0 and stats["num_device_alloc"] == 0
    assert stats["allocated_bytes.all.peak"] == 1 * MiB + 512


def test_memory_stats_schema():
    alloc = make()
    stats = alloc.memory_stats()
    assert list(stats) == sorted(stats)
    for name in ("allocated_bytes", "reserved_bytes", "active_bytes", "inactive_split_bytes",
                 "requested_bytes", "allocation", "segment", "active", "inactive_split"):
        for pool in ("all", "small_pool", "large_pool"):
            for k in ("current", "peak", "allocated", "freed"):
                assert stats[f"{name}.{pool}.{k}"] == 0
    for name in ("oversize_allocations", "oversize_segments"):
        for k in ("current", "peak", "allocated", "freed"):
            assert stats[f"{name}.{k}"] == 0
    assert stats["max_split_size"] == -1
    for name in ("num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free",
                 "num_sync_all_streams"):
        assert stats[name] == 0


def _fill_24mib():
    """A 24 MiB device: a cached 12 MiB large segment and 12 MiB of full small segments."""
    alloc = make(capacity=24 * MiB)
    big = alloc.malloc(12 * MiB)
    small = [alloc.malloc(1 * MiB) for _ in range(12)]
    assert alloc.memory_reserved() == 24 * MiB
    alloc.free(big)
    return alloc, small


def test_oom_retry_frees_cache_then_succeeds():
    alloc, small = _fill_24mib()
    b = alloc.malloc(1 * MiB)          # no free small block; the backend is full until the cache goes
    stats = alloc.memory_stats()
    assert stats["num_alloc_retries"] == 1
    assert stats["num_ooms"] == 0
    assert stats["num_device_free"] == 1                   # the cached 12 MiB segment
    assert alloc.memory_reserved() == 14 * MiB
    assert alloc.backend.mem_get_info() == (10 * MiB, 24 * MiB)
    for blk in small + [b]:
        alloc.free(blk)
    assert alloc.memory_allocated() == 0
    alloc._check_invariants()


def test_oom_error_message_and_state():
    alloc, small = _fill_24mib()
    alloc.malloc(1 * MiB)              # retry #1 frees the cache; 10 MiB of the device left
    before = (alloc.memory_allocated(), alloc.memory_reserved())
    assert before == (13 * MiB, 14 * MiB)
    with pytest.raises(OutOfMemoryError) as info:
        alloc.malloc(12 * MiB)
    assert isinstance(info.value, RuntimeError)
    assert str(info.value) == (
        "cpu out of memory. Tried to allocate 12.00 MiB. cpu has a total capacity of 24.00 MiB "
        "of which 10.00 MiB is free. Of the allocated memory 13.00 MiB is allocated by tgrad, "
        "and 1024.00 KiB is reserved by tgrad but unallocated.")  # PyTorch's units
    assert OutOfMemoryError.__module__ == "tgrad"
    stats = alloc.memory_stats()
    assert stats["num_ooms"] == 1
    assert stats["num_alloc_retries"] == 2
    assert (alloc.memory_allocated(), alloc.memory_reserved()) == before
    alloc._check_invariants()
    n = alloc.backend.num_mallocs
    c = alloc.malloc(512 * KiB)        # the allocator still works from its cache
    assert alloc.backend.num_mallocs == n == 8 and c.size == 512 * KiB
    alloc._check_invariants()


def test_empty_cache_returns_free_segments():
    alloc = make()
    a = alloc.malloc(12 * MiB)
    b = alloc.malloc(10 * MiB)
    c = [alloc.malloc(1 * MiB) for _ in range(2)]
    alloc.free(a)
    assert (alloc.memory_reserved(), alloc.memory_allocated()) == (24 * MiB, 12 * MiB)
    alloc.empty_cache()
    assert alloc.memory_stats()["num_device_free"] == 1
    assert alloc.backend.num_frees == 1
    assert alloc.memory_reserved() == alloc.memory_allocated() == 12 * MiB
    alloc.empty_cache()                # nothing more to return
    assert alloc.backend.num_frees == 1
    for blk in [b] + c:
        alloc.free(blk)
    alloc.empty_cache()
    assert alloc.memory_reserved() == 0
    assert alloc.backend.num_frees == alloc.backend.num_mallocs == 3
    alloc._check_invariants()


def test_double_free_is_an_error():
    alloc = make()
    b = alloc.malloc(100)
    alloc.free(b)
    with pytest.raises(RuntimeError, match="double free"):
        alloc.free(b)
    alloc._check_invariants()


def test_free_during_critical_section_is_deferred():
    """A Storage finalizer run by gc inside malloc must not corrupt the pools."""
    alloc = make()
    a, b = alloc.malloc(1000), alloc.malloc(1000)
    assert alloc._enter()              # as if we were inside malloc on this thread
    alloc.free(a)
    assert alloc.memory_allocated() == 2048
    alloc._leave()
    assert alloc.memory_allocated() == 1024
    alloc.free(b)
    alloc._check_invariants()


def test_free_inside_malloc_is_done_when_malloc_returns():
    """A free that arrives while malloc holds the pools (a finalizer run by gc) waits until malloc is done."""
    alloc = make()
    a = alloc.malloc(1000)
    backend_malloc = alloc.backend.malloc

    def malloc_and_free(nbytes):    # runs inside malloc, as a finalizer would
        alloc.free(a)
        assert alloc.memory_allocated() == 1024 and alloc._deferred == [a]
        return backend_malloc(nbytes)

    alloc.backend.malloc = malloc_and_free
    b = alloc.malloc(2 * MiB)       # needs a new segment
    assert alloc.memory_allocated() == 2 * MiB and not alloc._deferred
    alloc.free(b)
    alloc._check_invariants()
    assert alloc.memory_stats()["allocation.all.freed"] == 2


def test_peaks_and_totals_follow_each_change():
    """Each malloc/free/empty_cache changes a stat by one net amount: a model that only sees the current
    values after each call must agree on every peak, "allocated" and "freed"."""
    rng = random.Random(3)
    alloc = make()
    model, live = {}, []
    for step in range(3000):
        r = rng.random()
        if r < 0.5 or not live:
            live.append(alloc.malloc(rng.choice([rng.randrange(0, 5000), rng.randrange(0, 3 * MiB)])))
        elif r < 0.97:
            alloc.free(live.pop(rng.randrange(len(live))))
        elif r < 0.98:
            alloc.empty_cache()
        elif r < 0.99:
            alloc.reset_peak_memory_stats()
            for m in model.values():
                m["peak"] = m["current"]
        else:
            alloc.reset_accumulated_memory_stats()
            for m in model.values():
                m["allocated"] = m["freed"] = 0
        stats = alloc.memory_stats()
        for key in {k.rpartition(".")[0] for k in stats if k.endswith(".current") and k.count(".") == 2}:
            m = model.setdefault(key, dict.fromkeys(("current", "peak", "allocated", "freed"), 0))
            delta = stats[key + ".current"] - m["current"]
            m["current"] += delta
            m["allocated" if delta > 0 else "freed"] += abs(delta)
            m["peak"] = max(m["peak"], m["current"])
            assert {k: stats[f"{key}.{k}"] for k in m} == m, (step, key)
        if step % 500 == 0:
            alloc._check_invariants()
    alloc._check_invariants()


def test_threads_random_alloc_free():
    alloc = make()
    errors = []

    def work(seed):
        rng = random.Random(seed)
        live = []
        try:
            for i in range(500):
                if live and rng.random() < 0.5:
                    alloc.free(live.pop(rng.randrange(len(live))))
                else:
                    big = rng.random() < 0.05
                    live.append(alloc.malloc(rng.randrange(1, 3 * MiB if big else 64 * KiB)))
                if i % 100 == 0:
                    alloc._check_invariants()
            for blk in live:
                alloc.free(blk)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert errors == []
    assert alloc.memory_allocated() == 0
    stats = alloc.memory_stats()
    assert stats["allocation.all.current"] == 0
    assert stats["allocation.all.allocated"] == stats["allocation.all.freed"] > 2000
    alloc._check_invariants()
    alloc.empty_cache()
    assert alloc.memory_reserved() == 0
    assert alloc.backend.num_frees == alloc.backend.num_mallocs


def test_format_size_and_summary():
    assert format_size(512) == "512 bytes"
    assert format_size(1536) == "1.50 KiB"
    assert format_size(2 * MiB) == "2.00 MiB"
    assert format_size(3 << 30) == "3.00 GiB"
    alloc = make()
    b = alloc.malloc(1 * MiB)
    summary = alloc.memory_summary()
    assert "| Allocated memory      |   1024 KiB |   1024 KiB |   1024 KiB |      0 B   |" in summary
    assert "|       from small pool |   2048 KiB |" in summary     # reserved
    assert all(len(line) == 77 for line in summary.splitlines())
    assert "from small pool" not in alloc.memory_summary(abbreviated=True)
    alloc.free(b)


# -- the per-device allocators, stats functions and Storage ---------------------

def test_get_allocator_one_per_device():
    from tgrad.device import device
    a = mem.get_allocator("cpu")
    assert a is mem.get_allocator(device("cpu")) is mem.get_allocator(device("cpu", 0))
    assert isinstance(a.backend, HostBackend) and a.backend.capacity is None
    got = []
    threads = [threading.Thread(target=lambda: got.append(mem.get_allocator("cpu"))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(x is a for x in got)


def test_stats_functions_follow_storage_lifetime():
    from tgrad.device import get_default_device, set_default_device
    base = mem.memory_allocated("cpu")
    s = mem.Storage(1000, "cpu")
    assert mem.memory_allocated("cpu") == base + 1024
    assert mem.max_memory_allocated("cpu") >= base + 1024
    assert mem.memory_reserved("cpu") >= base + 1024
    assert mem.memory_stats("cpu")["allocated_bytes.all.current"] == base + 1024
    prev = get_default_device()
    set_default_device("cpu")
    try:
        assert mem.memory_allocated() == base + 1024
    finally:
        set_default_device(prev)        # the session's device (cuda under --device cuda), not cpu
    del s
    assert mem.memory_allocated("cpu") == base
    mem.reset_peak_memory_stats("cpu")
    assert mem.max_memory_allocated("cpu") == base
    mem.empty_cache("cpu")
    assert mem.memory_reserved("cpu") == mem.get_allocator("cpu").memory_reserved()
    mem.get_allocator("cpu")._check_invariants()


def test_storage_gc_returns_block_once():
    alloc = mem.get_allocator("cpu")
    gc.collect()                       # earlier tests' cyclic garbage must not be freed inside the window
    gc.disable()
    try:
        _storage_gc_returns_block_once(alloc)
    finally:
        gc.enable()


def _storage_gc_returns_block_once(alloc):
    base = alloc.memory_allocated()
    s = mem.Storage(0, "cpu")
    assert s.ptr != 0 and s.ptr % 256 == 0 and s.nbytes == 0
    t = mem.Storage(5000, "cpu")
    assert t.ptr % 256 == 0 and str(t.device) == "cpu" and t.allocator is alloc
    assert alloc.memory_allocated() == base + 512 + 5120
    cycle = [t]
    cycle.append(cycle)                # only the cycle collector can free t now
    del s, t, cycle
    assert alloc.memory_allocated() == base + 5120
    gc.collect()
    assert alloc.memory_allocated() == base
    alloc._check_invariants()


def test_host_array_shares_memory_and_keeps_storage_alive():
    alloc = mem.get_allocator("cpu")
    base = alloc.memory_allocated()
    s = mem.Storage(64, "cpu")
    ptr = s.ptr
    a = s.host_array(np.float32, 8, offset_bytes=32)
    assert a.ctypes.data == ptr + 32 and a.flags.writeable
    a[:] = np.arange(8)
    whole = s.host_array(np.float32, 16)
    assert list(whole[8:]) == list(range(8))
    with pytest.raises(IndexError):
        s.host_array(np.float32, 9, offset_bytes=32)
    del s, whole
    gc.collect()
    assert alloc.memory_allocated() == base + 512   # the array still holds the storage
    other = mem.Storage(64, "cpu")                   # so its memory is not handed out again
    assert other.ptr != ptr
    assert list(a) == list(range(8))
    del a
    assert alloc.memory_allocated() == base + 512
    del other
    assert alloc.memory_allocated() == base


def test_storage_copies():
    src = mem.Storage(40, "cpu")
    data = np.arange(10, dtype=np.int32)
    src.copy_from_host(data.ctypes.data, 40)
    dst = mem.Storage(40, "cpu")
    dst.fill_zero()
    dst.copy_(8, src, 4, 12)           # elements 1..3 of src into elements 2..4 of dst
    assert list(dst.host_array(np.int32, 10)) == [0, 0, 1, 2, 3, 0, 0, 0, 0, 0]
    out = np.full(3, -1, dtype=np.int32)
    dst.copy_to_host(out.ctypes.data, 8, src_offset=12)
    assert list(out) == [2, 3, -1]
    with pytest.raises(IndexError):
        dst.copy_(36, src, 0, 8)
    with pytest.raises(IndexError):
        src.copy_from_host(data.ctypes.data, 8, dst_offset=-1)


# -- CUDA driver without a GPU ---------------------------------------------------

@pytest.fixture
def no_libcuda(monkeypatch, device):
    if device == "cuda":    # before the driver is loaded again: its cuInit would orphan this session's streams
        pytest.skip("checks the path without a driver; this session's cuda allocators already exist")
    monkeypatch.setattr(cuda_driver, "LIBCUDA", "libcuda-that-does-not-exist.so.1")
    cuda_driver._driver.cache_clear()
    yield
    cuda_driver._driver.cache_clear()


def test_cuda_unavailable_without_driver(no_libcuda, device):
    assert cuda_driver.driver_available() is False
    assert cuda_driver.device_count() == 0
    assert cuda_driver.unavailable_reason() == (
        "no CUDA driver found (libcuda-that-does-not-exist.so.1 could not be loaded)")
    with pytest.raises(RuntimeError, match="no CUDA driver found"):
        cuda_driver.CudaBackend(0)
    with pytest.raises(RuntimeError, match="no CUDA driver found"):
        cuda_driver.synchronize(0)
    with pytest.raises(RuntimeError, match="no CUDA driver found"):
        mem.get_allocator("cuda:0")
    with pytest.raises(RuntimeError, match="no CUDA driver found"):
        mem.Storage(16, "cuda:0")


@pytest.mark.skipif(cuda_driver.driver_available(), reason="a CUDA device is present")
def test_cuda_unavailable_on_this_machine():
    assert cuda_driver.device_count() == 0
    reason = cuda_driver.unavailable_reason()
    assert "no CUDA driver found" in reason or "no device" in reason
    with pytest.raises(RuntimeError, match="CUDA driver found|no device"):
        cuda_driver.CudaBackend(0)


def test_cuda_errors_are_translated():
    class FakeLib:
        """Answers cuGetErrorName/String like the driver does, through byref pointers."""
        names = {2: (b"CUDA_ERROR_OUT_OF_MEMORY", b"out of memory"),
                 1: (b"CUDA_ERROR_INVALID_VALUE", b"invalid argument")}

        def cuGetErrorName(self, rc, out):
            out._obj.value = self.names[rc][0]
            return 0

        def cuGetErrorString(self, rc, out):
            out._obj.value = self.names[rc][1]
            return 0

        def cuMemAlloc_v2(self, *args):
            return 2

        def cuMemFree_v2(self, *args):
            return 1

    with pytest.raises(BackendOutOfMemory) as info:
        cuda_driver._call(FakeLib(), "cuMemAlloc_v2", None, 1 << 40)
    assert str(info.value) == "CUDA driver error CUDA_ERROR_OUT_OF_MEMORY: out of memory in cuMemAlloc_v2"
    with pytest.raises(cuda_driver.CudaDriverError, match="CUDA_ERROR_INVALID_VALUE: invalid argument in cuMemFree_v2"):
        cuda_driver._call(FakeLib(), "cuMemFree_v2", 0)


def test_cuda_oom_wording():
    alloc = CachingAllocator(HostBackend(capacity=4 * MiB), "cuda:1")  # no GPU needed for the wording
    with pytest.raises(OutOfMemoryError, match=r"^CUDA out of memory\. Tried to allocate 20\.00 MiB\. "
                                               r"GPU 1 has a total capacity of 4\.00 MiB"):
        alloc.malloc(5 * MiB)


def test_no_torch():
    assert "torch" not in sys.modules
