"""Host backend: 256-byte aligned host memory from libc ``posix_memalign``.

Implements the backend interface the caching allocator sits on (``malloc``,
``free``, ``memcpy_htod/dtoh/dtod``, ``memset``, ``synchronize``,
``mem_get_info``). For the host every copy is a ``memmove``. An optional
``capacity`` makes it run out of memory like a small GPU would.
"""
import ctypes
import os


class BackendOutOfMemory(Exception):
    """Raised by a backend's ``malloc`` when it cannot provide the memory."""

ALIGNMENT = 256

_libc = ctypes.CDLL(None)
_posix_memalign = _libc.posix_memalign
_posix_memalign.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_size_t]
_posix_memalign.restype = ctypes.c_int
_free = _libc.free
_free.argtypes = [ctypes.c_void_p]
_free.restype = None
# Blocks of >= 4 MiB get madvise(MADV_HUGEPAGE) on their whole pages, as numpy's arrays (fewer TLB misses: a
# 64 MiB MPI all_reduce runs ~25% faster). Not 2 MiB aligned: buffers at equal offsets modulo 2 MiB slow MPI's
# reduction by ~30% (cache sets), numpy's page+16 addresses do not.
PAGE, HUGE_MIN, _MADV_HUGEPAGE = 4096, 2 ** 22, 14
_madvise = getattr(_libc, "madvise", None)


class HostBackend:
    """Raw host memory. Not locked: the allocator serialises malloc/free."""

    def __init__(self, capacity=None):
        self.capacity = capacity
        self.num_mallocs = 0
        self.num_frees = 0
        self._sizes = {}  # ptr -> nbytes of live blocks
        self._in_use = 0

    def malloc(self, nbytes):
        if self.capacity is not None and self._in_use + nbytes > self.capacity:
            raise BackendOutOfMemory(
                f"host backend capacity {self.capacity} bytes exceeded "
                f"({self._in_use} in use, {nbytes} asked)")
        if nbytes >= 1 << 63:       # beyond size_t's range: ctypes would wrap it (2**64 -> 0)
            raise BackendOutOfMemory(f"{nbytes} bytes is more than host memory can address")
        p = ctypes.c_void_p()
        if _posix_memalign(ctypes.byref(p), ALIGNMENT, max(nbytes, 1)) != 0 or not p.value:
            raise BackendOutOfMemory(f"posix_memalign could not provide {nbytes} bytes")
        if nbytes >= HUGE_MIN and _madvise is not None:
            start = -(-p.value // PAGE) * PAGE
            _madvise(ctypes.c_void_p(start), ctypes.c_size_t((p.value + nbytes - start) // PAGE * PAGE),
                     _MADV_HUGEPAGE)
        self._sizes[p.value] = nbytes
        self._in_use += nbytes
        self.num_mallocs += 1
        return p.value

    def free(self, ptr):
        nbytes = self._sizes.pop(ptr, None)
        if nbytes is None:
            raise ValueError(f"HostBackend.free: {ptr:#x} was not allocated by this backend")
        _free(ptr)
        self._in_use -= nbytes
        self.num_frees += 1

    def memcpy_htod(self, dst_ptr, src_host_ptr, n):
        ctypes.memmove(dst_ptr, src_host_ptr, n)

    def memcpy_dtoh(self, dst_host_ptr, src_ptr, n):
        ctypes.memmove(dst_host_ptr, src_ptr, n)

    def memcpy_dtod(self, dst, src, n):
        ctypes.memmove(dst, src, n)

    def memset(self, ptr, byte, n):
        ctypes.memset(ptr, byte, n)

    def synchronize(self):
        pass

    def mem_get_info(self):
        """(free, total) bytes: of ``capacity`` if given, else of physical memory."""
        if self.capacity is not None:
            return self.capacity - self._in_use, self.capacity
        try:
            page = os.sysconf("SC_PAGE_SIZE")
            return os.sysconf("SC_AVPHYS_PAGES") * page, os.sysconf("SC_PHYS_PAGES") * page
        except (ValueError, OSError):
            return 0, 0
