"""The caching allocator: PyTorch's CUDA caching policy, on any backend.

- Sizes are rounded up to multiples of 512 B (a 0-byte request gets 512 B).
- Requests <= 1 MiB come from the small pool, carved out of 2 MiB segments.
  Larger ones come from the large pool: a 20 MiB segment for requests < 10 MiB,
  else a segment of the request rounded up to a multiple of 2 MiB.
- Best fit: the smallest free block that fits, ties broken by address.
- A block is split when the remainder is >= 512 B (small pool) or > 1 MiB
  (large pool); a freed block merges with free neighbours in its segment.
- When the backend is out of memory, every fully free cached segment is
  returned to it and the request retried once; then ``OutOfMemoryError``.
Segments are only returned to the backend by that retry and ``empty_cache()``,
unless ``release_on_free`` is set: then each block is a segment of its own,
returned to the backend when freed (no caching: every tensor is a backend
malloc/free; ``TGRAD_HOST_CACHE=0`` sets it for ``cpu``, to measure what the
cache saves, e.g. page faults).
"""
import bisect
import collections
import os
import threading

from tgrad.device import device as _device

MIN_BLOCK = 512              # rounding unit and smallest block
SMALL_SIZE = 1 << 20         # largest request served by the small pool
SMALL_SEGMENT = 2 << 20      # segment size of the small pool
LARGE_SEGMENT = 20 << 20     # segment size for large requests < MIN_LARGE_ALLOC
MIN_LARGE_ALLOC = 10 << 20   # from here a request gets its own segment ...
ROUND_LARGE = 2 << 20        # ... rounded up to a multiple of this

SMALL, LARGE = 1, 2          # pool ids = their index in a stat array (0 is "all")
_POOL_NAMES = ("all", "small_pool", "large_pool")
_ARRAY_STATS = ("allocation", "segment", "active", "inactive_split", "allocated_bytes",
                "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes")
_COUNTERS = ("num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free",
             "num_sync_all_streams")


class BackendOutOfMemory(Exception):
    """Raised by a backend's ``malloc`` when it cannot provide the memory."""


class OutOfMemoryError(RuntimeError):
    """The allocator could not provide a block, even after emptying its cache."""


OutOfMemoryError.__module__ = "tgrad"  # tracebacks read "tgrad.OutOfMemoryError: ..."


def round_size(nbytes):
    return max(MIN_BLOCK, (nbytes + MIN_BLOCK - 1) // MIN_BLOCK * MIN_BLOCK)


def segment_size(size):
    """Bytes asked of the backend for a new segment that serves a ``size`` block."""
    if size <= SMALL_SIZE:
        return SMALL_SEGMENT
    if size < MIN_LARGE_ALLOC:
        return LARGE_SEGMENT
    return (size + ROUND_LARGE - 1) // ROUND_LARGE * ROUND_LARGE


def format_size(nbytes):
    """PyTorch's wording of a size in OOM messages: "512 bytes", "2.00 MiB"."""
    if nbytes <= 1024:
        return f"{nbytes} bytes"
    for unit, scale in (("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30)):
        if nbytes <= scale << 10:
            return f"{nbytes / scale:.2f} {unit}"
    return f"{nbytes / (1 << 40):.2f} TiB"


class Block:
    """A piece of a segment: ``ptr``, ``size`` (rounded), ``requested`` bytes.

    ``prev``/``next`` link the blocks of one segment in address order.
    """

    __slots__ = ("ptr", "size", "requested", "pool", "allocated", "prev", "next")

    def __init__(self, ptr, size, pool, prev=None, next=None):
        self.ptr, self.size, self.pool = ptr, size, pool
        self.requested, self.allocated = 0, False
        self.prev, self.next = prev, next

    def is_split(self):
        return self.prev is not None or self.next is not None

    def __repr__(self):
        state = "allocated" if self.allocated else "free"
        return f"Block(ptr={self.ptr:#x}, size={self.size}, {state})"


def _active_stats(block):
    """The stats an allocated block counts towards, with its share of each."""
    return (("allocation", 1), ("active", 1), ("allocated_bytes", block.size),
            ("active_bytes", block.size), ("requested_bytes", block.requested))


class CachingAllocator:
    """Caches blocks of ``backend`` memory for device ``device_str``; thread-safe."""

    def __init__(self, backend, device_str="cpu"):
        self.backend = backend
        self.device = _device(device_str)
        self.device_str = str(self.device)
        self._lock = threading.RLock()
        self._busy = False       # inside a critical section (see _enter)
        self._deferred = []      # frees that arrived re-entrantly while busy
        self.release_on_free = False
        self._free = {SMALL: [], LARGE: []}  # sorted [(size, ptr, block)]
        self._active = {}        # ptr -> allocated Block
        self._segments = {}      # base ptr -> segment size
        self._stats = {name: [[0, 0, 0, 0] for _ in _POOL_NAMES] for name in _ARRAY_STATS}
        # without streams a block is active exactly while it is allocated: "active" and "active_bytes" are
        # "allocation" and "allocated_bytes" (the same lists, updated once)
        self._stats["active"] = self._stats["allocation"]
        self._stats["active_bytes"] = self._stats["allocated_bytes"]
        self._counters = dict.fromkeys(_COUNTERS, 0)
        # per pool: the ("all", pool) stat pairs malloc/free update (_active_stats without the aliases)
        self._active_pairs = {pool: tuple((self._stats[name][0], self._stats[name][pool])
                                          for name in ("allocation", "allocated_bytes", "requested_bytes"))
                              for pool in (SMALL, LARGE)}

    # -- locking -------------------------------------------------------------
    # A Storage finalizer can run inside our own critical section (the garbage
    # collector may fire on any allocation). Its free is queued and done when
    # the outer call finishes instead of mutating lists mid-update.

    def _enter(self):
        self._lock.acquire()
        if self._busy:
            self._lock.release()
            return False
        self._busy = True
        return True

    def _leave(self):
        try:
            while self._deferred:
                self._free_block(self._deferred.pop())
        finally:
            self._busy = False
            self._lock.release()

    # -- public API ----------------------------------------------------------

    def malloc(self, nbytes):
        """A Block of at least ``nbytes`` at a 256-byte aligned address."""
        if nbytes < 0:
            raise ValueError(f"cannot allocate a negative number of bytes ({nbytes})")
        size = (nbytes + MIN_BLOCK - 1) // MIN_BLOCK * MIN_BLOCK or MIN_BLOCK     # round_size
        pool = SMALL if size <= SMALL_SIZE else LARGE
        lock = self._lock       # = self._enter(), inlined (malloc and free are the hot path)
        lock.acquire()
        if self._busy:
            lock.release()
            raise RuntimeError("CachingAllocator.malloc called re-entrantly")
        self._busy = True
        try:
            blocks = self._free[pool]      # best fit: _take_free_block, inlined
            i = bisect.bisect_left(blocks, (size, 0))
            block = blocks.pop(i)[2] if i < len(blocks) else self._new_segment(pool, size)
            self._split(block, size)
            block.allocated, block.requested = True, nbytes
            self._active[block.ptr] = block
            size = block.size
            for (a, p), n in zip(self._active_pairs[pool], (1, size, nbytes)):   # = _update(+n)
                a[0] += n
                a[2] += n
                if a[0] > a[1]:
                    a[1] = a[0]
                p[0] += n
                p[2] += n
                if p[0] > p[1]:
                    p[1] = p[0]
            return block
        finally:
            if self._deferred:
                self._leave()
            else:
                self._busy = False
                lock.release()

    def free(self, block):
        """Return ``block`` to the cache (its memory stays reserved)."""
        lock = self._lock       # = self._enter(), inlined
        lock.acquire()
        if self._busy:
            lock.release()
            self._deferred.append(block)
            return
        self._busy = True
        try:
            self._free_block(block)
            if self.release_on_free:
                self._release_cached()
        finally:
            if self._deferred:
                self._leave()
            else:
                self._busy = False
                lock.release()

    def empty_cache(self):
        """Return every fully free segment to the backend."""
        if self._enter():
            try:
                self._release_cached()
            finally:
                self._leave()

    def memory_allocated(self):
        return self._stats["allocated_bytes"][0][0]

    def max_memory_allocated(self):
        return self._stats["allocated_bytes"][0][1]

    def memory_reserved(self):
        return self._stats["reserved_bytes"][0][0]

    def max_memory_reserved(self):
        return self._stats["reserved_bytes"][0][1]

    def reset_peak_memory_stats(self):
        with self._lock:
            for arrays in self._stats.values():
                for stat in arrays:
                    stat[1] = stat[0]

    def reset_accumulated_memory_stats(self):
        with self._lock:
            for arrays in self._stats.values():
                for stat in arrays:
                    stat[2] = stat[3] = 0
            self._counters = dict.fromkeys(_COUNTERS, 0)

    def memory_stats(self):
        """PyTorch's flat stats: "allocated_bytes.all.current", "num_ooms", ..."""
        with self._lock:
            out = [("max_split_size", -1)]
            out += self._counters.items()
            for name, arrays in self._stats.items():
                for pool_name, stat in zip(_POOL_NAMES, arrays):
                    out += [(f"{name}.{pool_name}.{k}", v)
                            for k, v in zip(("current", "peak", "allocated", "freed"), stat)]
            for name in ("oversize_allocations", "oversize_segments"):
                out += [(f"{name}.{k}", 0) for k in ("current", "peak", "allocated", "freed")]
        return collections.OrderedDict(sorted(out))

    def memory_summary(self, abbreviated=False):
        from .stats import format_summary
        return format_summary(self.memory_stats(), self.device_str, abbreviated)

    # -- internals (called with the lock held) --------------------------------

    def _update(self, name, pool, delta):
        arrays = self._stats[name]
        a, p = arrays[0], arrays[pool]     # [current, peak, allocated, freed] of "all" and of the pool
        a[0] += delta
        p[0] += delta
        if delta > 0:
            a[2] += delta
            p[2] += delta
            if a[0] > a[1]:
                a[1] = a[0]
            if p[0] > p[1]:
                p[1] = p[0]
        else:
            a[3] -= delta
            p[3] -= delta

    def _insert_free(self, block):
        bisect.insort(self._free[block.pool], (block.size, block.ptr, block))

    def _remove_free(self, block):
        blocks = self._free[block.pool]
        del blocks[bisect.bisect_left(blocks, (block.size, block.ptr))]

    def _take_free_block(self, pool, size):
        blocks = self._free[pool]
        i = bisect.bisect_left(blocks, (size, 0))
        return blocks.pop(i)[2] if i < len(blocks) else None

    def _new_segment(self, pool, size):
        nbytes = size if self.release_on_free else segment_size(size)
        try:
            ptr = self.backend.malloc(nbytes)
        except BackendOutOfMemory:
            self._release_cached()
            self._counters["num_alloc_retries"] += 1
            try:
                ptr = self.backend.malloc(nbytes)
            except BackendOutOfMemory:
                self._counters["num_ooms"] += 1
                raise OutOfMemoryError(self._oom_message(nbytes)) from None
        self._counters["num_device_alloc"] += 1
        self._segments[ptr] = nbytes
        self._update("segment", pool, 1)
        self._update("reserved_bytes", pool, nbytes)
        return Block(ptr, nbytes, pool)

    def _oom_message(self, nbytes):
        free, total = self.backend.mem_get_info()
        allocated, reserved = self.memory_allocated(), self.memory_reserved()
        dev = self.device_str
        if dev.startswith("cuda"):
            what, where = "CUDA", f"GPU {dev.partition(':')[2] or 0}"
        else:
            what = where = dev
        return (f"{what} out of memory. Tried to allocate {format_size(nbytes)}. "
                f"{where} has a total capacity of {format_size(total)} of which "
                f"{format_size(free)} is free. Of the allocated memory {format_size(allocated)} "
                f"is allocated by tgrad, and {format_size(reserved - allocated)} is reserved "
                f"by tgrad but unallocated.")

    def _split(self, block, size):
        """Cut ``block`` (just taken from its pool) down to ``size`` if the rest is worth keeping."""
        remaining = block.size - size
        nxt = block.next
        was_split = block.prev is not None or nxt is not None
        if remaining >= MIN_BLOCK if block.pool == SMALL else remaining > SMALL_SIZE:
            rest = Block(block.ptr + size, remaining, block.pool, block, nxt)
            if nxt is not None:
                nxt.prev = rest
            block.next, block.size = rest, size
            bisect.insort(self._free[block.pool], (remaining, rest.ptr, rest))     # = _insert_free(rest)
            if was_split:  # an inactive split block shrinks by ``size``
                self._update("inactive_split_bytes", block.pool, -size)
            else:          # a new inactive split block appears
                self._update("inactive_split_bytes", block.pool, remaining)
                self._update("inactive_split", block.pool, 1)
        elif was_split:    # a whole inactive split block becomes active
            self._update("inactive_split_bytes", block.pool, -block.size)
            self._update("inactive_split", block.pool, -1)

    def _free_block(self, block):
        if self._active.get(block.ptr) is not block:
            raise RuntimeError(f"{block!r} is not allocated by this allocator (double free?)")
        del self._active[block.ptr]
        pool = block.pool
        block.allocated = False
        size = block.size
        for (a, p), n in zip(self._active_pairs[pool], (1, size, block.requested)):  # = _update(-n)
            a[0] -= n
            a[3] += n
            p[0] -= n
            p[3] += n
        split_blocks = split_bytes = 0
        free = self._free[pool]
        for neighbour in (block.prev, block.next):
            if neighbour is None or neighbour.allocated:
                continue
            del free[bisect.bisect_left(free, (neighbour.size, neighbour.ptr))]     # = _remove_free(neighbour)
            if neighbour is block.prev:
                block.ptr, block.prev = neighbour.ptr, neighbour.prev
                if block.prev is not None:
                    block.prev.next = block
            else:
                block.next = neighbour.next
                if block.next is not None:
                    block.next.prev = block
            block.size += neighbour.size
            split_blocks -= 1
            split_bytes -= neighbour.size
        if block.prev is not None or block.next is not None:      # = block.is_split()
            split_blocks += 1
            split_bytes += block.size
        if split_blocks:
            self._update("inactive_split", pool, split_blocks)
        if split_bytes:
            self._update("inactive_split_bytes", pool, split_bytes)
        bisect.insort(free, (block.size, block.ptr, block))       # = _insert_free(block)

    def _release_cached(self):
        whole = [b for pool in self._free.values() for (_, _, b) in pool if not b.is_split()]
        if not whole:
            return
        self.backend.synchronize()  # the device may still be using a block we cached
        for block in whole:
            self._remove_free(block)
            self.backend.free(block.ptr)
            del self._segments[block.ptr]
            self._counters["num_device_free"] += 1
            self._update("segment", block.pool, -1)
            self._update("reserved_bytes", block.pool, -block.size)

    def _check_invariants(self):
        """Assert that blocks tile each segment, free neighbours are merged and stats add up."""
        with self._lock:
            free = {b.ptr: b for pool in self._free.values() for (_, _, b) in pool}
            for pool, blocks in self._free.items():
                assert blocks == sorted(blocks, key=lambda e: e[:2]), "free list out of order"
                assert all(s == b.size and p == b.ptr and b.pool == pool and not b.allocated
                           for s, p, b in blocks), "stale free-list entry"
            assert not set(free) & set(self._active), "a block is both free and allocated"
            expect = {name: [0, 0, 0] for name in _ARRAY_STATS}

            def add(name, pool, n):
                expect[name][0] += n
                expect[name][pool] += n

            seen = 0
            for base, seg_size in self._segments.items():
                block = free.get(base) or self._active.get(base)
                assert block is not None and block.prev is None, f"segment {base:#x} has no head"
                pool, end = block.pool, base
                add("segment", pool, 1)
                add("reserved_bytes", pool, seg_size)
                while block is not None:
                    assert block.ptr == end and block.pool == pool, "blocks do not tile the segment"
                    assert block.size % MIN_BLOCK == 0 and base % 256 == 0, "misaligned block"
                    assert (free if not block.allocated else self._active).get(block.ptr) is block
                    if block.allocated:
                        for name, n in _active_stats(block):
                            add(name, pool, n)
                    else:
                        assert block.next is None or block.next.allocated, "two adjacent free blocks"
                        if block.is_split():
                            add("inactive_split", pool, 1)
                            add("inactive_split_bytes", pool, block.size)
                    if block.next is not None:
                        assert block.next.prev is block, "broken prev link"
                    end += block.size
                    seen += 1
                    block = block.next
                assert end == base + seg_size, "blocks do not cover the segment"
            assert seen == len(free) + len(self._active), "blocks outside any segment"
            for name, values in expect.items():
                current = [stat[0] for stat in self._stats[name]]
                assert current == values, f"{name}: stats say {current}, blocks say {values}"


_allocators = {}
_allocators_lock = threading.Lock()


def get_allocator(dev):
    """The process-wide allocator of device ``dev`` (a device, "cpu", "cuda:1" or an int)."""
    d = dev if isinstance(dev, _device) else _device(dev)
    if d.type == "cuda" and d.index is None:
        from tgrad.device import _canonical  # the current CUDA device
        d = _canonical(d)
    key = (d.type, d.index or 0)
    allocator = _allocators.get(key)
    if allocator is None:
        with _allocators_lock:
            allocator = _allocators.get(key)
            if allocator is None:
                if d.type == "cpu":
                    from .host import HostBackend
                    allocator = CachingAllocator(HostBackend(), "cpu")
                    allocator.release_on_free = os.environ.get("TGRAD_HOST_CACHE", "1") == "0"
                else:
                    from .cuda_driver import CudaBackend
                    allocator = CachingAllocator(CudaBackend(d.index), f"cuda:{d.index}")
                _allocators[key] = allocator
    return allocator
