"""Raw memory for tgrad: host and CUDA-driver backends, the caching allocator,
Storage, and PyTorch-named memory statistics."""
from .allocator import (BackendOutOfMemory, Block, CachingAllocator, OutOfMemoryError,
                        get_allocator)
from .cuda_driver import CudaBackend, CudaDriverError
from .host import HostBackend
from .stats import (empty_cache, max_memory_allocated, max_memory_reserved, memory_allocated,
                    memory_reserved, memory_stats, memory_summary, reset_accumulated_memory_stats,
                    reset_peak_memory_stats)
from .storage import Storage

__all__ = [
    "BackendOutOfMemory", "Block", "CachingAllocator", "CudaBackend", "CudaDriverError",
    "HostBackend", "OutOfMemoryError", "Storage", "empty_cache", "get_allocator",
    "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved",
    "memory_stats", "memory_summary", "reset_accumulated_memory_stats", "reset_peak_memory_stats",
]
