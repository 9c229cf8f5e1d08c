"""The CUDA driver API through ctypes on ``libcuda.so.1``, and ``CudaBackend``.

No dependency beyond the driver itself. The library is loaded and ``cuInit``
run once per process, on first use; without a driver every query answers
"unavailable" instead of raising. Each backend call pushes the device's primary
context and pops it afterwards, so the calling thread's current context (the
one kernel launches use) is left as it was.
"""
import ctypes
import functools
import threading
from ctypes import POINTER, byref, c_char_p, c_int, c_size_t, c_ubyte, c_uint, c_uint64, c_void_p

from .host import BackendOutOfMemory

LIBCUDA = "libcuda.so.1"
CUDA_ERROR_OUT_OF_MEMORY = 2
CUDA_ERROR_NO_DEVICE = 100

_CUdeviceptr = c_uint64
_PROTOTYPES = {
    "cuInit": [c_uint],
    "cuDeviceGetCount": [POINTER(c_int)],
    "cuDeviceGet": [POINTER(c_int), c_int],
    "cuDevicePrimaryCtxRetain": [POINTER(c_void_p), c_int],
    "cuCtxSetCurrent": [c_void_p],
    "cuCtxPushCurrent_v2": [c_void_p],
    "cuCtxPopCurrent_v2": [POINTER(c_void_p)],
    "cuCtxSynchronize": [],
    "cuMemAlloc_v2": [POINTER(_CUdeviceptr), c_size_t],
    "cuMemFree_v2": [_CUdeviceptr],
    "cuMemcpyHtoD_v2": [_CUdeviceptr, c_void_p, c_size_t],
    "cuMemcpyDtoH_v2": [c_void_p, _CUdeviceptr, c_size_t],
    "cuMemcpyDtoD_v2": [_CUdeviceptr, _CUdeviceptr, c_size_t],
    "cuMemsetD8_v2": [_CUdeviceptr, c_ubyte, c_size_t],
    "cuMemGetInfo_v2": [POINTER(c_size_t), POINTER(c_size_t)],
    "cuGetErrorName": [c_int, POINTER(c_char_p)],
    "cuGetErrorString": [c_int, POINTER(c_char_p)],
}


class CudaDriverError(RuntimeError):
    """A CUDA driver call returned an error code."""


def _error_message(lib, rc, fn_name):
    name, text = c_char_p(), c_char_p()
    lib.cuGetErrorName(rc, byref(name))
    lib.cuGetErrorString(rc, byref(text))
    name = name.value.decode() if name.value else f"CUresult {rc}"
    text = text.value.decode() if text.value else "unknown error"
    return f"CUDA driver error {name}: {text} in {fn_name}"


def _call(lib, fn_name, *args):
    rc = getattr(lib, fn_name)(*args)
    if rc != 0:
        msg = _error_message(lib, rc, fn_name)
        raise (BackendOutOfMemory if rc == CUDA_ERROR_OUT_OF_MEMORY else CudaDriverError)(msg)


@functools.lru_cache(maxsize=None)
def _driver():
    """``(lib, device_count, reason)``, computed once; ``lib`` is None when unusable."""
    try:
        lib = ctypes.CDLL(LIBCUDA)
    except OSError:
        return None, 0, f"no CUDA driver found ({LIBCUDA} could not be loaded)"
    try:
        for fn_name, argtypes in _PROTOTYPES.items():
            fn = getattr(lib, fn_name)
            fn.argtypes, fn.restype = argtypes, c_int
    except AttributeError as e:
        return None, 0, f"CUDA driver found but too old ({e})"
    rc = lib.cuInit(0)
    if rc == CUDA_ERROR_NO_DEVICE:
        return None, 0, "CUDA driver found but no device"
    if rc != 0:
        return None, 0, f"CUDA driver found but cuInit failed: {_error_message(lib, rc, 'cuInit')}"
    count = c_int()
    rc = lib.cuDeviceGetCount(byref(count))
    if rc != 0 or count.value == 0:
        return None, 0, "CUDA driver found but no device"
    return lib, count.value, ""


def driver_available():
    """True when libcuda loads, ``cuInit`` succeeds and there is at least one device."""
    return _driver()[0] is not None


def device_count():
    return _driver()[1]


def unavailable_reason():
    """Why CUDA cannot be used ("" when it can)."""
    return _driver()[2]


_contexts = {}
_contexts_lock = threading.Lock()


def _lib_for(index):
    lib, count, reason = _driver()
    if lib is None:
        raise RuntimeError(f"cuda:{index} cannot be used: {reason}")
    if not 0 <= index < count:
        raise RuntimeError(
            f"CUDA error: invalid device ordinal (asked for cuda:{index}, {count} device(s) present)")
    return lib


def _primary_context(index):
    """The retained primary context of device ``index`` (kept for the life of the process)."""
    ctx = _contexts.get(index)
    if ctx is None:
        lib = _lib_for(index)
        with _contexts_lock:
            ctx = _contexts.get(index)
            if ctx is None:
                dev, ctx = c_int(), c_void_p()
                _call(lib, "cuDeviceGet", byref(dev), index)
                _call(lib, "cuDevicePrimaryCtxRetain", byref(ctx), dev.value)
                _contexts[index] = ctx = ctx.value
    return ctx


class _Current:
    """``with _Current(lib, index):`` runs driver calls in the device's primary context."""

    __slots__ = ("lib", "index")

    def __init__(self, lib, index):
        self.lib, self.index = lib, index

    def __enter__(self):
        _call(self.lib, "cuCtxPushCurrent_v2", _primary_context(self.index))

    def __exit__(self, *exc):
        _call(self.lib, "cuCtxPopCurrent_v2", byref(c_void_p()))


def set_current_device(index):
    """Make device ``index``'s primary context current on this thread (for kernel launches)."""
    _call(_lib_for(index), "cuCtxSetCurrent", _primary_context(index))


def synchronize(index):
    """Wait for all work on device ``index``."""
    lib = _lib_for(index)
    with _Current(lib, index):
        _call(lib, "cuCtxSynchronize")


class CudaBackend:
    """GPU memory of device ``index`` via ``cuMemAlloc``; copies are synchronous."""

    def __init__(self, index=0):
        self._lib = _lib_for(index)  # raises RuntimeError without a driver/device
        self.index = index
        self.num_mallocs = 0
        self.num_frees = 0
        self._ctx = _Current(self._lib, index)  # context retained lazily, on first call

    def malloc(self, nbytes):
        p = _CUdeviceptr()
        with self._ctx:
            _call(self._lib, "cuMemAlloc_v2", byref(p), nbytes)
        self.num_mallocs += 1
        return p.value

    def free(self, ptr):
        with self._ctx:
            _call(self._lib, "cuMemFree_v2", ptr)
        self.num_frees += 1

    def memcpy_htod(self, dst_ptr, src_host_ptr, n):
        with self._ctx:
            _call(self._lib, "cuMemcpyHtoD_v2", dst_ptr, src_host_ptr, n)

    def memcpy_dtoh(self, dst_host_ptr, src_ptr, n):
        with self._ctx:
            _call(self._lib, "cuMemcpyDtoH_v2", dst_host_ptr, src_ptr, n)

    def memcpy_dtod(self, dst, src, n):
        with self._ctx:
            _call(self._lib, "cuMemcpyDtoD_v2", dst, src, n)

    def memset(self, ptr, byte, n):
        with self._ctx:
            _call(self._lib, "cuMemsetD8_v2", ptr, byte, n)

    def synchronize(self):
        with self._ctx:
            _call(self._lib, "cuCtxSynchronize")

    def mem_get_info(self):
        free, total = c_size_t(), c_size_t()
        with self._ctx:
            _call(self._lib, "cuMemGetInfo_v2", byref(free), byref(total))
        return free.value, total.value
