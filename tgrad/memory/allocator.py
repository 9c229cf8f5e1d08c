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
import operator
import os
import threading

from .._native import build
from ..device import canonical, device as _device
from .cuda_driver import CudaBackend, Event
from .host import BackendOutOfMemory, HostBackend
from .meta import MetaAllocator
from .summary import format_summary

MIN_BLOCK = 512              # rounding unit and smallest block
SMALL_SIZE = 1 << 20         # largest request served by the small pool
SMALL_SEGMENT = 2 << 20      # segment size of the small pool
LARGE_SEGMENT = 20 << 20     # segment size for large requests < MIN_LARGE_ALLOC
MIN_LARGE_ALLOC = 10 << 20   # from here a request gets its own segment ...
ROUND_LARGE = 2 << 20        # ... rounded up to a multiple of this

SMALL, LARGE = 1, 2          # pool indexes (0 is "all"), the keys of CachingAllocator._free
_POOL_NAMES = ("all", "small_pool", "large_pool")
_COUNTERS = ("num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free",
             "num_sync_all_streams")

# PyTorch's per-pool stats, each with a current value, a peak, a total "allocated" (the sum of its increases)
# and "freed" (of its decreases). Without streams a block is active exactly while it is allocated: "active"
# and "active_bytes" are "allocation" and "allocated_bytes".
_STATS = ("allocation", "allocated_bytes", "requested_bytes", "inactive_split", "inactive_split_bytes",
          "segment", "reserved_bytes")
_ALIASES = {"active": "allocation", "active_bytes": "allocated_bytes"}

# Stat vectors: one value per stat packed in an int, 64 bits each, so that a malloc or free changes all the
# stats of a pool with one addition (the values stay far below 2**62). The unit vectors:
_W = 64
_MASK = (1 << _W) - 1
(ALLOCATION, ALLOCATED_BYTES, REQUESTED_BYTES, INACTIVE_SPLIT, INACTIVE_SPLIT_BYTES, SEGMENT,
 RESERVED_BYTES) = (1 << _W * i for i in range(len(_STATS)))
# n * INACTIVE_SPLIT(_BYTES) as n << _SPLIT(_BYTES), n * ALLOCATED_BYTES as n << _W (a shift is half a bigint product)
_SPLIT, _SPLIT_BYTES = 3 * _W, 4 * _W
# A pool's ``room`` vector holds peak - current of each stat plus a guard bit 2**63: a change that takes a
# current value above its peak borrows that stat's guard bit, which sends it to the (rare) peak update.
# The current values are not kept: they are peak + guards - room (a malloc or free updates only the rooms).
_GUARDS = sum(1 << _W * i + _W - 1 for i in range(len(_STATS)))


def _unpack(vector):
    return [vector >> _W * i & _MASK for i in range(len(_STATS))]


def _pack(values):
    return sum(v << _W * i for i, v in enumerate(values))


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
    """A piece of a segment: ``ptr``, ``size`` (rounded), its ``pool``.

    ``prev``/``next`` link the blocks of one segment in address order. The first block of a segment stays
    the same object for the segment's life (a merge keeps the lower block). ``active`` is the stat vector
    an allocated block adds to its pool's, 0 while the block is free (it holds the ``requested`` bytes).
    """

    __slots__ = ("ptr", "size", "pool", "prev", "next", "active")

    def __init__(self, ptr, size, pool, prev=None, next=None):
        self.ptr, self.size, self.pool, self.prev, self.next, self.active = ptr, size, pool, prev, next, 0

    @property
    def allocated(self):
        return self.active != 0

    @property
    def requested(self):
        return self.active // REQUESTED_BYTES & _MASK

    def is_split(self):
        return self.prev is not None or self.next is not None

    def __repr__(self):
        state = "allocated" if self.allocated else "free"
        return f"Block(ptr={self.ptr:#x}, size={self.size}, {state})"


class _Pool:
    """The free blocks of a pool, sorted [(size, ptr, block)], and its stats as stat vectors."""

    __slots__ = ("allocator", "free", "split_from", "increases", "base", "room", "peak")

    def __init__(self, allocator, split_from=None):
        self.allocator = allocator
        self.free = []
        self.split_from = split_from   # a block is split when the rest would have at least this many bytes
        self.increases = 0         # the totals "allocated" since the last reset_accumulated_memory_stats
        self.base = 0              # the current values at that reset ("freed" = increases - current + base)
        self.room = _GUARDS        # guarded peak - current
        self.peak = 0              # the peak values

    @property
    def current(self):
        """The current values."""
        return self.peak + _GUARDS - self.room


class _PrivatePool(_Pool):
    """A CUDA graph's pool (small or large): its own free blocks, its stats counted in the allocator's pool of
    the same kind (``stats``), as PyTorch counts a private pool's blocks in "small_pool"/"large_pool"."""

    __slots__ = ("stats",)

    def __init__(self, allocator, split_from, stats):      # (no _Pool.__init__: its stat fields are stats')
        self.allocator, self.free, self.split_from, self.stats = allocator, [], split_from, stats

    room = property(lambda p: p.stats.room, lambda p, v: setattr(p.stats, "room", v))
    peak = property(lambda p: p.stats.peak, lambda p, v: setattr(p.stats, "peak", v))
    increases = property(lambda p: p.stats.increases, lambda p, v: setattr(p.stats, "increases", v))
    base = property(lambda p: p.stats.base, lambda p, v: setattr(p.stats, "base", v))


class GraphPool:
    """The memory of CUDA graph captures (``graph_pool_handle()``, ``CUDAGraph.pool()``): blocks allocated while
    capturing into it, never handed to other allocations while a graph using it lives (the graph's kernels
    keep reading and writing their addresses).  ``users``: the graphs (and captures) holding it."""

    def __init__(self, allocator, handle):
        self.handle = handle
        self.small = _PrivatePool(allocator, MIN_BLOCK, allocator._small)
        self.large = _PrivatePool(allocator, SMALL_SIZE + 1, allocator._large)
        self.classes = {}        # nbytes -> size class, as CachingAllocator._classes, with this pool's pools
        self.users = 0


class CachingAllocator:
    """Caches blocks of ``backend`` memory for device ``device_str``; thread-safe."""

    # what malloc / free read and write: slots, so that allocator.c reaches them directly (others: __dict__)
    __slots__ = ("_pending", "_busy", "_lock", "_deferred", "_after_streams", "_classes", "_all", "_used_on",
                 "release_on_free", "__dict__", "__weakref__")

    def __init__(self, backend, device_str="cpu"):
        if not _native_tried:
            _load_native()
        self.backend = backend
        self.device = _device(device_str)
        self.device_str = str(self.device)
        self.launch_device = "cpu" if self.device.type == "cpu" else f"cuda:{self.device.index or 0}"
        self._lock = threading.RLock()
        self._busy = False       # inside a critical section (see _enter)
        self._deferred = []      # frees that arrived re-entrantly while busy
        self.release_on_free = False
        self._small, self._large = _Pool(self, MIN_BLOCK), _Pool(self, SMALL_SIZE + 1)
        self._all = _Pool(self)  # only its room and peak are kept: its other vectors are the pools' sums
        self._free = {SMALL: self._small.free, LARGE: self._large.free}
        self._segments = {}      # base ptr -> (segment size, first block)
        self._counters = dict.fromkeys(_COUNTERS, 0)
        self._classes = {}       # nbytes -> its _size_class (a malloc looks it up instead of computing it)
        self._used_on = {}       # block -> {(device index, stream handle)}: Tensor.record_stream
        self._after_streams = []  # (block, events, owners): freed, reused once the events on those streams complete
        self._graph_pools = {}   # handle -> GraphPool
        self._target = None      # the GraphPool a capture allocates from (None: the allocator's pools)
        self._own_classes = self._classes
        self._pending = None     # the last freed block, counted as free but not yet in a free list (``_merge``)

    # -- locking -------------------------------------------------------------
    # A Storage finalizer can run inside our own critical section (the garbage
    # collector may fire on any allocation). Its free is queued and done right
    # after the outer call instead of mutating lists mid-update.

    def _enter(self):
        self._lock.acquire()
        if self._busy:
            self._lock.release()
            return False
        self._busy = True
        return True

    def _leave(self):
        self._busy = False
        self._lock.release()
        while self._deferred:
            self.free(self._deferred.pop())

    # -- public API ----------------------------------------------------------

    def malloc(self, nbytes):
        """A Block of at least ``nbytes`` at a 256-byte aligned address."""
        if _c_malloc is not None:      # allocator.c's twin of what follows (the common cases), see _load_native
            block = _c_malloc(self, nbytes)
            if block is not None:
                return block
        if self._after_streams:
            self._free_finished()
        try:
            size, key, pool, active = self._classes[nbytes]
        except KeyError:
            size, key, pool, active = self._size_class(nbytes)
        lock = self._lock       # = self._enter(), inlined (malloc and free are the hot path)
        lock.acquire()
        if self._busy:
            lock.release()
            raise RuntimeError("CachingAllocator.malloc called re-entrantly")
        self._busy = True
        try:
            free = pool.free
            block = self._pending
            if block is not None:       # a free not yet merged into the lists (``free``)
                self._pending = None
                nxt = block.next
                nf = nxt is not None and not nxt.active
                msize = block.size + nxt.size if nf else block.size     # the block with its free neighbours
                reuse = (block.size == size and block.pool is pool and (block.prev is None or block.prev.active)
                         and (not nf or nxt.size >= pool.split_from))
                if reuse:   # it is the best fit unless another free block sorts between (size,) and it
                    i = bisect.bisect_left(free, key)
                    if nf and i < len(free) and free[i][2] is nxt:
                        i += 1
                    reuse = i == len(free) or free[i][0] > msize or free[i][0] == msize and free[i][1] > block.ptr
                if reuse:
                    nxt = nxt.next if nf else nxt
                else:
                    self._merge(block)
            if block is None or not reuse:   # best fit: the smallest free block that fits, ties broken by address
                i = bisect.bisect_left(free, key)
                if i < len(free):
                    block = free[i][2]      # its entry is replaced by the split-off rest's, or removed below
                else:
                    i, block = -1, self._new_segment(pool, size)
                reuse, msize, nxt = False, block.size, block.next
            rest = msize - size
            was_split = block.prev is not None or nxt is not None
            if rest < pool.split_from and not reuse and i >= 0:     # taken whole from the list
                del free[i]
            if rest >= pool.split_from:     # split off the rest as a free block
                if not reuse:       # (reused: the rest is the free block after it, already in the list)
                    tail = Block(block.ptr + size, rest, pool, block, nxt)
                    if nxt is not None:
                        nxt.prev = tail
                    block.next, block.size = tail, size
                    entry = (rest, tail.ptr, tail)
                    # the block's own slot keeps the list sorted when the rest sorts after the entry before it
                    # (the entries after it are >= (msize, ptr) > entry): one store instead of a pop and an insort
                    if i > 0 and free[i - 1] < entry or i == 0:
                        free[i] = entry
                    else:
                        if i > 0:
                            del free[i]
                        bisect.insort(free, entry)
                if was_split:   # an inactive split block shrinks by ``size``
                    split, increase = -size << _SPLIT_BYTES, 0
                else:           # a new inactive split block appears
                    split = increase = INACTIVE_SPLIT + (rest << _SPLIT_BYTES)
            elif was_split:     # a whole inactive split block becomes active
                split, increase = -INACTIVE_SPLIT - (block.size << _SPLIT_BYTES), 0
            else:
                split = increase = 0
            if block.size != size:      # a whole block larger than the request (not worth splitting)
                active += (block.size - size) << _W
            block.active = active
            change = active + split     # = self._count(pool, change, active + increase), inlined
            room = pool.room = pool.room - change
            everything = self._all
            all_room = everything.room = everything.room - change
            pool.increases += active + increase
            if room & all_room & _GUARDS != _GUARDS:
                self._new_peaks()
            return block
        finally:
            self._busy = False      # = self._leave(), inlined
            lock.release()
            while self._deferred:
                self.free(self._deferred.pop())

    def _size_class(self, nbytes):
        """(rounded size, bisect key, pool, stat vector of a block of that size holding ``nbytes``)."""
        if nbytes < 0:
            raise ValueError(f"cannot allocate a negative number of bytes ({nbytes})")
        nbytes = operator.index(nbytes)
        size = round_size(nbytes)
        g = self._target         # a capture's graph pool, else ours
        if g is None:
            pool = self._small if size <= SMALL_SIZE else self._large
        else:
            pool = g.small if size <= SMALL_SIZE else g.large
        entry = (size, (size,), pool, ALLOCATION + size * ALLOCATED_BYTES + nbytes * REQUESTED_BYTES)
        if len(self._classes) >= 4096:
            self._classes.clear()
        self._classes[nbytes] = entry
        return entry

    def free(self, block):
        """Return ``block`` to the cache (its memory stays reserved)."""
        if _c_free is not None and _c_free(self, block):
            return
        if self._used_on and block in self._used_on:
            self._free_after_streams(block)
            return
        lock = self._lock       # = self._enter(), inlined
        lock.acquire()
        if self._busy:
            lock.release()
            self._deferred.append(block)
            return
        self._busy = True
        try:
            if self._pending is not None:
                self._merge(self._pending)
            pool = block.pool
            size, active = block.size, block.active
            if not active or pool.allocator is not self:
                raise RuntimeError(f"{block!r} is not allocated by this allocator (double free?)")
            block.active = 0
            # the stats of merging it with its free neighbours; the lists are updated later (``_merge``),
            # unless the next malloc takes this very block again (the common free-then-malloc of a temporary)
            prev, nxt = block.prev, block.next
            merged, msize = 0, size
            if prev is not None and not prev.active:
                merged, msize, prev = 1, msize + prev.size, prev.prev
            if nxt is not None and not nxt.active:
                merged, msize, nxt = merged + 1, msize + nxt.size, nxt.next
            if prev is not None or nxt is not None:   # inactive split: ``size`` more bytes, merged blocks fold
                sb = size << _SPLIT_BYTES
                change = ((1 - merged) << _SPLIT) + sb - active
                increase = sb if merged else INACTIVE_SPLIT + sb
            else:        # the whole segment is free: the merged blocks were its inactive split ones
                change = (-merged << _SPLIT) - ((msize - size) << _SPLIT_BYTES) - active
                increase = 0
            room = pool.room = pool.room - change      # = self._count(pool, change, increase), inlined
            everything = self._all
            all_room = everything.room = everything.room - change
            if increase:
                pool.increases += increase
                if room & all_room & _GUARDS != _GUARDS:
                    self._new_peaks()
            self._pending = block
            if self.release_on_free:
                self._merge(block)
                self._release_cached()
        finally:
            self._busy = False      # = self._leave(), inlined
            lock.release()
            while self._deferred:
                self.free(self._deferred.pop())

    def settle(self):
        """Merge the last freed block into its pool's free list (which is then exact: a free is merged lazily)."""
        with self._lock:
            if self._pending is not None and not self._busy:
                self._merge(self._pending)

    def _merge(self, block):
        """Put the freed ``block`` (``_pending``) into its pool's free list, merged with its free neighbours."""
        self._pending = None
        free = block.pool.free
        prev, nxt = block.prev, block.next
        i = -1      # a free-list slot left over by a merged neighbour, which the merged block may take
        if prev is not None and not prev.active:     # merge into the free block before
            i = bisect.bisect_left(free, (prev.size, prev.ptr))
            prev.size += block.size
            prev.next = nxt
            if nxt is not None:
                nxt.prev = prev
            block = prev
        if nxt is not None and not nxt.active:       # take in the free block after
            j = bisect.bisect_left(free, (nxt.size, nxt.ptr))
            if i >= 0:
                del free[j]
                i -= j < i
            else:
                i = j
            block.size += nxt.size
            block.next = nxt = nxt.next
            if nxt is not None:
                nxt.prev = block
        entry = (block.size, block.ptr, block)
        # the merged block grew: it keeps the slot when it still sorts before the entry after it (usual: the
        # segment's tail, the largest free block, is taken in), else the slot goes and it is inserted
        if i >= 0 and (i + 1 == len(free) or entry < free[i + 1]) and (i == 0 or free[i - 1] < entry):
            free[i] = entry
        else:
            if i >= 0:
                del free[i]
            bisect.insort(free, entry)

    def record_stream(self, block, index, stream_handle, owner=None):
        """``block`` is used by work queued on a stream: once freed, it is reused only after that work is done.
        ``owner``: an object keeping the stream alive until then."""
        self._used_on.setdefault(block, set()).add((index, stream_handle, owner))

    def _free_after_streams(self, block):
        events, users = [], self._used_on.pop(block)
        for index, handle, _ in users:
            e = Event(index)
            e.record(handle)
            events.append(e)
        self._after_streams.append((block, events, users))

    def _free_finished(self):
        """Free the blocks whose streams finished the work queued before their free (``record_stream``)."""
        with self._lock:
            if self._busy:
                return
            waiting, self._after_streams = self._after_streams, []
        for entry in waiting:
            if all(e.query() for e in entry[1]):
                self.free(entry[0])
            else:
                self._after_streams.append(entry)

    # -- CUDA graph pools ----------------------------------------------------

    def begin_capture(self, handle):
        """Until ``end_capture``, every malloc of this device is served by the graph pool ``handle`` (made on
        first use; PyTorch routes by stream, tgrad has one capture at a time per device); the capture holds it
        (``release_pool`` gives it up)."""
        with self._lock:
            if self._target is not None:
                raise RuntimeError("a CUDA graph capture is already allocating from this device's allocator")
            pool = self._graph_pools.get(handle)
            if pool is None:
                pool = self._graph_pools[handle] = GraphPool(self, handle)
            pool.users += 1
            self._target, self._classes = pool, pool.classes

    def end_capture(self):
        with self._lock:
            self._target, self._classes = None, self._own_classes

    def release_pool(self, handle):
        """A graph using pool ``handle`` is gone; with its last user the pool's segments go back to the backend
        at the next ``empty_cache()`` (or out-of-memory retry) once its blocks are freed, as in PyTorch (no
        synchronize here: this runs from finalizers, possibly inside a kernel compile or run)."""
        with self._lock:
            pool = self._graph_pools.get(handle)
            if pool is not None:
                pool.users -= 1

    def empty_cache(self):
        """Return every fully free segment to the backend."""
        self._free_finished()
        if self._enter():
            try:
                self._release_cached()
            finally:
                self._leave()

    def _current(self, stat):
        return self._all.current >> _W * _STATS.index(stat) & _MASK

    def memory_allocated(self):
        return self._current("allocated_bytes")

    def max_memory_allocated(self):
        return self._all.peak >> _W * _STATS.index("allocated_bytes") & _MASK

    def memory_reserved(self):
        return self._current("reserved_bytes")

    def max_memory_reserved(self):
        return self._all.peak >> _W * _STATS.index("reserved_bytes") & _MASK

    def reset_peak_memory_stats(self):
        with self._lock:
            for pool in self._pools():
                pool.peak, pool.room = pool.current, _GUARDS

    def reset_accumulated_memory_stats(self):
        with self._lock:
            for pool in (self._small, self._large):
                pool.increases, pool.base = 0, pool.current
            self._counters = dict.fromkeys(_COUNTERS, 0)

    def memory_stats(self):
        """PyTorch's flat stats: "allocated_bytes.all.current", "num_ooms", ..."""
        with self._lock:
            stats = self._stat_arrays()
            out = [("max_split_size", -1)]
            out += self._counters.items()
        for name in _STATS + tuple(_ALIASES):
            for pool_name, stat in zip(_POOL_NAMES, stats[_ALIASES.get(name, name)]):
                out += [(f"{name}.{pool_name}.{k}", v)
                        for k, v in zip(("current", "peak", "allocated", "freed"), stat)]
        for name in ("oversize_allocations", "oversize_segments"):
            out += [(f"{name}.{k}", 0) for k in ("current", "peak", "allocated", "freed")]
        return collections.OrderedDict(sorted(out))

    def memory_summary(self, abbreviated=False):
        return format_summary(self.memory_stats(), self.device_str, abbreviated)

    # -- internals (called with the lock held) --------------------------------

    def _count(self, pool, change, increase):
        """Add stat vector ``change`` to ``pool``'s stats; ``increase`` is its positive part."""
        room = pool.room = pool.room - change
        everything = self._all
        all_room = everything.room = everything.room - change
        if increase:
            pool.increases += increase
            if room & all_room & _GUARDS != _GUARDS:     # a current value went above its peak
                self._new_peaks()

    def _new_peaks(self):
        for p in self._pools():
            current = p.current
            p.peak = _pack(map(max, _unpack(p.peak), _unpack(current)))
            p.room = _GUARDS + p.peak - current

    def _pools(self):
        return self._small, self._large, self._all

    def _stat_arrays(self):
        """{stat: [[current, peak, allocated, freed] of "all", of the small pool, of the large pool]}."""
        small, large = self._small, self._large
        rows = []
        for pool, current, increases, base in (
                (self._all, small.current + large.current, small.increases + large.increases, small.base + large.base),
                (small, small.current, small.increases, small.base),
                (large, large.current, large.increases, large.base)):
            rows.append(list(zip(_unpack(current), _unpack(pool.peak), _unpack(increases),
                                 _unpack(increases - current + base))))
        return {name: [list(row[i]) for row in rows] for i, name in enumerate(_STATS)}

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
        block = Block(ptr, nbytes, pool)
        self._segments[ptr] = (nbytes, block)
        change = SEGMENT + nbytes * RESERVED_BYTES
        self._count(pool, change, change)
        return block

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

    def _release_cached(self):
        if self._pending is not None:
            self._merge(self._pending)
        dead = [g for g in self._graph_pools.values() if g.users <= 0]
        pools = [self._small, self._large] + [p for g in dead for p in (g.small, g.large)]
        whole = [b for pool in pools for (_, _, b) in pool.free if b.prev is None and b.next is None]
        for g in dead:           # a dead pool whose segments all go now is forgotten
            if all(head.pool not in (g.small, g.large) or head in whole for _, head in self._segments.values()):
                del self._graph_pools[g.handle]
        if not whole:
            return
        self.backend.synchronize()  # the device may still be using a block we cached
        for block in whole:
            free = block.pool.free
            del free[bisect.bisect_left(free, (block.size, block.ptr))]
            self.backend.free(block.ptr)
            del self._segments[block.ptr]
            self._counters["num_device_free"] += 1
            self._count(block.pool, -SEGMENT - block.size * RESERVED_BYTES, 0)

    def _check_invariants(self):
        """Assert that blocks tile each segment, free neighbours are merged and stats add up."""
        with self._lock:
            if self._pending is not None:
                self._merge(self._pending)
            pools = (self._small, self._large) + tuple(p for g in self._graph_pools.values()
                                                       for p in (g.small, g.large))
            free = {}
            for pool in pools:
                blocks = pool.free
                assert blocks == sorted(blocks, key=lambda e: e[:2]), "free list out of order"
                assert all(s == b.size and p == b.ptr and b.pool is pool and not b.allocated
                           for s, p, b in blocks), "stale free-list entry"
                free.update((b.ptr, b) for _, _, b in blocks)
            expect = {pool: dict.fromkeys(_STATS, 0) for pool in (self._small, self._large)}
            seen = 0
            for base, (seg_size, block) in self._segments.items():
                assert block.ptr == base and block.prev is None, f"segment {base:#x} has no head"
                pool, end = block.pool, base
                add = expect[getattr(pool, "stats", pool)]
                add["segment"] += 1
                add["reserved_bytes"] += seg_size
                while block is not None:
                    assert block.ptr == end and block.pool is pool, "blocks do not tile the segment"
                    assert block.size % MIN_BLOCK == 0 and base % 256 == 0, "misaligned block"
                    if block.allocated:
                        assert block.active == (ALLOCATION + block.size * ALLOCATED_BYTES
                                                + block.requested * REQUESTED_BYTES), "stale stat vector"
                        add["allocation"] += 1
                        add["allocated_bytes"] += block.size
                        add["requested_bytes"] += block.requested
                    else:
                        assert free.get(block.ptr) is block, "a free block is not in its pool"
                        assert block.next is None or block.next.allocated, "two adjacent free blocks"
                        seen += 1
                        if block.is_split():
                            add["inactive_split"] += 1
                            add["inactive_split_bytes"] += block.size
                    if block.next is not None:
                        assert block.next.prev is block, "broken prev link"
                    end += block.size
                    block = block.next
                assert end == base + seg_size, "blocks do not cover the segment"
            assert seen == len(free), "free blocks outside any segment"
            for pool in (self._small, self._large):
                current = dict(zip(_STATS, _unpack(pool.current)))
                assert current == expect[pool], f"stats say {current}, blocks say {expect[pool]}"
            assert self._all.current == self._small.current + self._large.current, "the pools do not add up"
            for pool in self._pools():
                assert pool.room & _GUARDS == _GUARDS, "a peak below its current"


# allocator.c: malloc / free / _merge above in C on the same objects (Block and _Pool slots, the free lists, the
# stat vectors), for the common cases (a known size class, the allocator's own pools, no stream waits, no
# release_on_free, not re-entrant); each returns None / False for the Python method to do the rest.  Same
# blocks, addresses and stats (tests/memory/test_allocator_native.py); ~4x less host time per malloc + free.
_c_malloc = _c_free = None
_native_tried = False


def _load_native():
    """Build and load allocator.c (``tgrad._native.build``); without it (``TGRAD_NATIVE=0``, no compiler) the Python
    methods do everything (same results)."""
    global _c_malloc, _c_free, _native_tried
    _native_tried = True
    m = build(os.path.join(os.path.dirname(os.path.abspath(__file__)), "allocator.c"), "_tgrad_allocator",
              "allocator fast path", "the caching allocator runs in Python (slower)")
    if m is not None:
        m.setup(Block, _Pool, CachingAllocator, _W, _SPLIT, _SPLIT_BYTES, INACTIVE_SPLIT, _GUARDS)
        _c_malloc, _c_free = m.malloc, m.free


_allocators = {}
_META_ALLOCATOR = MetaAllocator()      # (not in _allocators: no memory, no lock, no stats)
_allocators_lock = threading.Lock()
_recent = (None, None)   # (dev, its allocator) of the last get_allocator(dev) whose dev names one device


def _before_fork():
    """Hold every process-wide allocator's lock across ``fork()``: the child starts with consistent pools
    (no other thread is inside malloc/free at the instant of the fork) and locks it can take (issue 16)."""
    _allocators_lock.acquire()
    for a in list(_allocators.values()):
        a._lock.acquire()


def _after_fork():
    for a in list(_allocators.values()):
        a._lock.release()
    _allocators_lock.release()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork, after_in_child=_after_fork)


def get_allocator(dev):
    """The process-wide allocator of device ``dev`` (a device, "cpu", "cuda:1" or an int)."""
    global _recent
    recent = _recent
    if recent[0] is dev:
        return recent[1]
    d = dev if isinstance(dev, _device) else _device(dev)
    if d.type == "meta":
        _recent = (dev, _META_ALLOCATOR)
        return _META_ALLOCATOR
    fixed = d.type == "cpu" or d.index is not None
    if not fixed:
        d = canonical(d)     # the current CUDA device
    key = (d.type, d.index or 0)
    allocator = _allocators.get(key)
    if allocator is None:
        with _allocators_lock:
            allocator = _allocators.get(key)
            if allocator is None:
                if d.type == "cpu":
                    allocator = CachingAllocator(HostBackend(), "cpu")
                    allocator.release_on_free = os.environ.get("TGRAD_HOST_CACHE", "1") == "0"
                else:
                    allocator = CachingAllocator(CudaBackend(d.index), f"cuda:{d.index}")
                _allocators[key] = allocator
    if fixed:
        _recent = (dev, allocator)
    return allocator
