"""The CUDA driver API through ctypes on ``libcuda.so.1``, and ``CudaBackend``.

No dependency beyond the driver itself. The library is loaded and ``cuInit``
run once per process, on first use; without a driver every query answers
"unavailable" instead of raising. ``TRITON_LIBCUDA_PATH`` (the directory Triton
links its launcher against) is honoured first, so tgrad and Triton load the
same library (the test suite's fake driver, tests/fakecuda, is found this way).
Each backend call pushes the device's primary context and pops it afterwards,
so the calling thread's current context is left as it was; kernel launches
make their tensor's device current with ``make_current``.
"""
import ctypes
import functools
import os
import threading
from ctypes import (POINTER, byref, c_char_p, c_float, c_int, c_size_t, c_ubyte, c_uint, c_uint64,
                    c_void_p, create_string_buffer)

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
    "cuCtxGetCurrent": [POINTER(c_void_p)],
    "cuCtxGetDevice": [POINTER(c_int)],
    "cuDeviceGetName": [c_char_p, c_int, c_int],
    "cuDeviceTotalMem_v2": [POINTER(c_size_t), c_int],
    "cuDeviceGetAttribute": [POINTER(c_int), c_int, c_int],
    "cuMemcpyHtoDAsync_v2": [_CUdeviceptr, c_void_p, c_size_t, c_void_p],
    "cuMemcpyDtoHAsync_v2": [c_void_p, _CUdeviceptr, c_size_t, c_void_p],
    "cuMemcpyDtoDAsync_v2": [_CUdeviceptr, _CUdeviceptr, c_size_t, c_void_p],
    "cuMemcpyPeer": [_CUdeviceptr, c_void_p, _CUdeviceptr, c_void_p, c_size_t],
    "cuMemHostAlloc": [POINTER(c_void_p), c_size_t, c_uint],
    "cuMemFreeHost": [c_void_p],
    "cuStreamCreate": [POINTER(c_void_p), c_uint],
    "cuStreamDestroy_v2": [c_void_p],
    "cuStreamSynchronize": [c_void_p],
    "cuStreamQuery": [c_void_p],
    "cuStreamWaitEvent": [c_void_p, c_void_p, c_uint],
    "cuEventCreate": [POINTER(c_void_p), c_uint],
    "cuEventDestroy_v2": [c_void_p],
    "cuEventRecord": [c_void_p, c_void_p],
    "cuEventSynchronize": [c_void_p],
    "cuEventQuery": [c_void_p],
    "cuEventElapsedTime": [POINTER(c_float), c_void_p, c_void_p],
}
CUDA_ERROR_NOT_READY = 600
# cuDeviceGetAttribute numbers (cuda.h)
_ATTR = {"multi_processor_count": 16, "major": 75, "minor": 76, "warp_size": 10,
         "max_threads_per_multi_processor": 39, "L2_cache_size": 38,
         "shared_memory_per_block_optin": 97, "regs_per_multiprocessor": 82}


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
        _raise(lib, rc, fn_name)


def _raise(lib, rc, fn_name):
    msg = _error_message(lib, rc, fn_name)
    raise (BackendOutOfMemory if rc == CUDA_ERROR_OUT_OF_MEMORY else CudaDriverError)(msg)


def _library_path():
    """``$TRITON_LIBCUDA_PATH/libcuda.so.1`` when that directory holds one (Triton links against it), else the name."""
    d = os.environ.get("TRITON_LIBCUDA_PATH")
    if d and LIBCUDA == "libcuda.so.1" and os.path.exists(os.path.join(d, LIBCUDA)):
        return os.path.join(d, LIBCUDA)
    return LIBCUDA


@functools.lru_cache(maxsize=None)
def _driver():
    """``(lib, device_count, reason)``, computed once; ``lib`` is None when unusable."""
    try:
        lib = ctypes.CDLL(_library_path())
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


def make_current(index):
    """Bind device ``index``'s primary context to this thread unless it already is (one cheap query).

    Returns the context handle. The query (not a cached belief) is what makes it safe when someone else
    (Triton's utilities, a CUDA torch) changed the thread's context in between.
    """
    ctx = _contexts.get(index)
    if ctx is None:
        ctx = _primary_context(index)
    t = _tls
    if _driver()[0].cuCtxGetCurrent(t.cur_ref) or t.cur.value != ctx:
        _call(_driver()[0], "cuCtxSetCurrent", ctx)
    return ctx


def current_device_index():
    """The device of the context current on this thread (0 when none is)."""
    lib = _lib_for(0)
    cur, dev = c_void_p(), c_int()
    _call(lib, "cuCtxGetCurrent", byref(cur))
    if not cur.value:
        return 0
    _call(lib, "cuCtxGetDevice", byref(dev))
    return dev.value


class _ThreadState(threading.local):
    """Per thread: ``cur``, the context ``cuCtxGetCurrent`` last answered (``cur_ref`` points at it), and
    ``streams``, the current stream handle per device index."""

    def __init__(self):
        self.cur = c_void_p()
        self.cur_ref = byref(self.cur)
        self.streams = {}


_tls = THREAD = _ThreadState()     # THREAD: read by the launch path (kernels/runtime/gpu.py)


def current_stream_handle(index):
    """This thread's current stream of device ``index`` (0: the legacy default stream)."""
    return _tls.streams.get(index, 0)


def set_current_stream_handle(index, handle):
    """Make ``handle`` this thread's current stream of device ``index``; returns the previous one."""
    streams = _tls.streams
    prev = streams.get(index, 0)
    streams[index] = handle
    return prev


def context_handle(index):
    """Device ``index``'s primary context handle (retained once, for the life of the process)."""
    return _primary_context(index)


def device_properties(index):
    """Name, total memory and attributes of device ``index``, from the driver (a dict)."""
    lib = _lib_for(index)
    name = create_string_buffer(256)
    _call(lib, "cuDeviceGetName", name, 256, index)
    total = c_size_t()
    _call(lib, "cuDeviceTotalMem_v2", byref(total), index)
    props = {"name": name.value.decode(), "total_memory": total.value}
    v = c_int()
    for key, attr in _ATTR.items():
        _call(lib, "cuDeviceGetAttribute", byref(v), attr, index)
        props[key] = v.value
    return props


# What finalizers hand over.  A finalizer may run at interpreter exit (this module's globals already gone), in
# any thread, or inside a kernel run (the fake driver runs kernels in its callbacks; the launch lock is then
# held), where cuStreamDestroy and cuMemFreeHost, which wait for queued work, would deadlock: so ``__del__`` only
# appends (kind, device index, handle) here (atomic, never raises) and ``release_deferred`` destroys and frees
# them at the next safe point (a new stream, a pinned allocation, ``synchronize``), as PyTorch's pools defer.
_RELEASED = []


def release_deferred():
    """Destroy the streams and free the pinned memory of the owners collected since the last call."""
    while _RELEASED:
        try:
            kind, index, handle = _RELEASED.pop()
        except IndexError:          # another thread took the last one
            return
        lib = _lib_for(index)
        with _Current(lib, index):
            if kind == "stream":
                lib.cuStreamDestroy_v2(handle)      # waits for its queued work (done, or the error is sticky)
            else:
                lib.cuMemFreeHost(handle)


class Stream:
    """A driver stream of device ``index``, destroyed after this object is collected (``release_deferred``;
    flags 0: ordered with the legacy default stream, which tgrad's synchronous copies use)."""

    def __init__(self, index):
        release_deferred()
        self.index, self._lib = index, _lib_for(index)
        h = c_void_p()
        with _Current(self._lib, index):
            _call(self._lib, "cuStreamCreate", byref(h), 0)
        self.handle = h.value

    def __del__(self):
        try:
            _RELEASED.append(("stream", self.index, self.handle))
        except Exception:       # interpreter exit (the module's globals are gone), or __init__ raised
            pass


def stream_synchronize(index, handle):
    lib = _lib_for(index)
    with _Current(lib, index):
        _call(lib, "cuStreamSynchronize", handle)


def stream_query(index, handle):
    """True when all work queued on the stream is done."""
    lib = _lib_for(index)
    with _Current(lib, index):
        rc = lib.cuStreamQuery(handle)
    if rc == CUDA_ERROR_NOT_READY:
        return False
    if rc:
        raise CudaDriverError(_error_message(lib, rc, "cuStreamQuery"))
    return True


def stream_wait_event(index, handle, event):
    """Work queued on the stream after this waits for ``event``'s last record."""
    lib = _lib_for(index)
    with _Current(lib, index):
        _call(lib, "cuStreamWaitEvent", handle, event.handle, 0)


class Event:
    """A driver event; ``timing=False`` creates it with CU_EVENT_DISABLE_TIMING."""

    def __init__(self, index, timing=False):
        self.index, self._lib = index, _lib_for(index)
        h = c_void_p()
        with _Current(self._lib, index):
            _call(self._lib, "cuEventCreate", byref(h), 0 if timing else 2)
        self.handle = h.value

    def record(self, stream_handle):
        with _Current(self._lib, self.index):
            _call(self._lib, "cuEventRecord", self.handle, stream_handle)

    def synchronize(self):
        _call(self._lib, "cuEventSynchronize", self.handle)

    def query(self):
        rc = self._lib.cuEventQuery(self.handle)
        if rc == CUDA_ERROR_NOT_READY:
            return False
        if rc:
            raise CudaDriverError(_error_message(self._lib, rc, "cuEventQuery"))
        return True

    def elapsed_time(self, end):
        ms = c_float()
        _call(self._lib, "cuEventElapsedTime", byref(ms), self.handle, end.handle)
        return ms.value

    def __del__(self):      # cuEventDestroy does not wait: safe in any finalizer but at interpreter exit
        try:
            if self.__dict__.get("handle"):
                self._lib.cuEventDestroy_v2(self.handle)
        except Exception:
            pass


class PinnedHost:
    """``nbytes`` of page-locked host memory, freed after this object is collected (``release_deferred``)."""

    __slots__ = ("ptr", "nbytes")

    def __init__(self, nbytes):
        if _driver()[0] is None:
            raise RuntimeError(f"cannot pin memory: {unavailable_reason()}")
        self.ptr, self.nbytes = host_alloc(nbytes), nbytes

    def __del__(self):
        try:
            _RELEASED.append(("pinned", 0, self.ptr))
        except Exception:       # interpreter exit (the module's globals are gone), or __init__ raised
            pass


def host_alloc(nbytes, index=0):
    """Page-locked host memory (``cuMemHostAlloc``, portable): the source/target of asynchronous copies."""
    release_deferred()
    lib = _lib_for(index)
    p = c_void_p()
    with _Current(lib, index):
        _call(lib, "cuMemHostAlloc", byref(p), max(nbytes, 1), 1)   # CU_MEMHOSTALLOC_PORTABLE
    return p.value


def synchronize(index):
    """Wait for all work on device ``index``."""
    lib = _lib_for(index)
    with _Current(lib, index):
        _call(lib, "cuCtxSynchronize")
    release_deferred()


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

    def memcpy_htod_async(self, dst_ptr, src_host_ptr, n, stream):
        """Queued in the device's context, left current as after a kernel launch (no push and pop: this is
        the copy of every Python number operand, ``x * 2.0``)."""
        make_current(self.index)
        rc = self._lib.cuMemcpyHtoDAsync_v2(dst_ptr, src_host_ptr, n, stream)
        if rc:
            _raise(self._lib, rc, "cuMemcpyHtoDAsync_v2")

    def memcpy_dtoh_async(self, dst_host_ptr, src_ptr, n, stream):
        with self._ctx:
            _call(self._lib, "cuMemcpyDtoHAsync_v2", dst_host_ptr, src_ptr, n, stream)

    def memcpy_dtod_async(self, dst, src, n, stream):
        with self._ctx:
            _call(self._lib, "cuMemcpyDtoDAsync_v2", dst, src, n, stream)

    def memcpy_peer(self, dst, src_index, src, n):
        """Copy ``n`` bytes from device ``src_index``'s ``src`` to this device's ``dst`` (synchronous)."""
        with self._ctx:
            _call(self._lib, "cuMemcpyPeer", dst, _primary_context(self.index), src,
                  _primary_context(src_index), n)

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


# ---------------------------------------------------------------- CUDA graphs (stream capture)
# Optional entry points (a driver without them: ``graphs_available()`` is False).
_GRAPH_PROTOTYPES = {
    "cuStreamBeginCapture_v2": [c_void_p, c_int],
    "cuStreamEndCapture": [c_void_p, POINTER(c_void_p)],
    "cuStreamIsCapturing": [c_void_p, POINTER(c_int)],
    "cuGraphInstantiateWithFlags": [POINTER(c_void_p), c_void_p, c_uint64],
    "cuGraphLaunch": [c_void_p, c_void_p],
    "cuGraphExecDestroy": [c_void_p],
    "cuGraphDestroy": [c_void_p],
    "cuMemsetD8Async": [_CUdeviceptr, c_ubyte, c_size_t, c_void_p],
}
CAPTURE_MODES = {"global": 0, "thread_local": 1, "relaxed": 2}       # CUstreamCaptureMode
CAPTURING = set()       # device indices with a capture under way (host-side value checks are skipped there)


@functools.lru_cache(maxsize=None)
def graphs_available():
    """True when the driver has stream capture and graph launch (their prototypes are then set)."""
    lib = _driver()[0]
    if lib is None or not all(hasattr(lib, n) for n in _GRAPH_PROTOTYPES):
        return False
    for n, argtypes in _GRAPH_PROTOTYPES.items():
        fn = getattr(lib, n)
        fn.argtypes, fn.restype = argtypes, c_int
    return True


def is_capturing(index, handle):
    """True while stream ``handle`` of device ``index`` captures (CU_STREAM_CAPTURE_STATUS_ACTIVE)."""
    if not graphs_available():
        return False
    lib, st = _lib_for(index), c_int()
    with _Current(lib, index):
        _call(lib, "cuStreamIsCapturing", handle, byref(st))
    return st.value == 1


class Graph:
    """One captured graph of device ``index``: ``begin(stream)`` ... ``end()`` captures the work queued on
    ``stream`` (tgrad's copies go there too, see ``_CaptureCopies``), ``launch(stream)`` queues it again,
    ``destroy()`` frees the graph and its executable (and the pinned host memory its copies read)."""

    def __init__(self, index, backend):
        if not graphs_available():
            raise RuntimeError(f"CUDA graphs are not supported by this driver ({_library_path()})")
        self.index, self.backend, self._lib = index, backend, _lib_for(index)
        self.graph = self.exec = self.stream = None
        self.staging = []        # [ptr, nbytes, used] of pinned chunks the captured host-to-device copies read
        self._copies = None

    def begin(self, stream, mode="global"):
        with _Current(self._lib, self.index):
            _call(self._lib, "cuStreamBeginCapture_v2", stream, CAPTURE_MODES[mode])
        self.stream = stream
        self._copies = _CaptureCopies(self)
        CAPTURING.add(self.index)

    def end(self, keep_graph=False):
        """End the capture and instantiate the graph (the capture's error, if it was invalidated); the graph
        itself is destroyed once instantiated unless ``keep_graph``."""
        self._copies.remove()
        CAPTURING.discard(self.index)
        g = c_void_p()
        with _Current(self._lib, self.index):
            _call(self._lib, "cuStreamEndCapture", self.stream, byref(g))
            self.graph = g.value
            e = c_void_p()
            _call(self._lib, "cuGraphInstantiateWithFlags", byref(e), self.graph, 0)
            if not keep_graph:
                _call(self._lib, "cuGraphDestroy", self.graph)
                self.graph = None
        self.exec = e.value

    def abort(self):
        """End a capture that failed (its graph, if any, is dropped)."""
        if self._copies is not None:
            self._copies.remove()
        CAPTURING.discard(self.index)
        g = c_void_p()
        with _Current(self._lib, self.index):
            if self._lib.cuStreamEndCapture(self.stream, byref(g)) == 0 and g.value:
                self._lib.cuGraphDestroy(g)

    def launch(self, stream):
        make_current(self.index)
        _call(self._lib, "cuGraphLaunch", self.exec, stream)

    def destroy(self):
        if _driver()[0] is None:
            return
        with _Current(self._lib, self.index):
            if self.exec:
                _call(self._lib, "cuGraphExecDestroy", self.exec)
            if self.graph:
                _call(self._lib, "cuGraphDestroy", self.graph)
        self.exec = self.graph = None
        _SPARE_STAGING.extend((c[0], c[1]) for c in self.staging)
        self.staging = []

    def stage(self, src, n):
        """Pinned host memory holding ``n`` bytes copied from ``src`` (bytes or an address), kept with the graph."""
        chunk = self.staging[-1] if self.staging else None
        if chunk is None or chunk[2] + n > chunk[1]:
            size = max(n, 1 << 16)
            spare = next((i for i, (_, nb) in enumerate(_SPARE_STAGING) if nb >= size), None)
            chunk = list(_SPARE_STAGING.pop(spare)) if spare is not None else [host_alloc(size, self.index), size]
            self.staging.append(chunk + [0])
            chunk = self.staging[-1]
        p = chunk[0] + chunk[2]
        ctypes.memmove(p, src, n)
        chunk[2] += (n + 255) // 256 * 256
        return p


# (ptr, nbytes) of the pinned staging chunks of destroyed graphs, reused by the next captures: never freed, as
# cuMemFreeHost waits for the device, and a graph is often destroyed by a finalizer (inside a kernel compile
# or run, or at exit)
_SPARE_STAGING = []


class _CaptureCopies:
    """While a graph captures, the backend's copies and memsets are queued on the thread's current stream
    (the capture stream: a synchronous copy would wait for it, which capture forbids), host data first staged
    in pinned memory the graph keeps (it is read at every launch: the captured values, as in PyTorch).
    A copy back to the host stays synchronous: inside a capture it fails, as on a GPU."""

    def __init__(self, graph):
        be, lib, index = graph.backend, graph._lib, graph.index
        self.backend = be

        def htod(dst, src, n, stream=None):
            with be._ctx:
                _call(lib, "cuMemcpyHtoDAsync_v2", dst, graph.stage(src, n), n,
                      _tls.streams.get(index, 0) if stream is None else stream)

        def dtod(dst, src, n):
            with be._ctx:
                _call(lib, "cuMemcpyDtoDAsync_v2", dst, src, n, _tls.streams.get(index, 0))

        def memset(ptr, byte, n):
            with be._ctx:
                _call(lib, "cuMemsetD8Async", ptr, byte, n, _tls.streams.get(index, 0))
        be.memcpy_htod, be.memcpy_htod_async, be.memcpy_dtod, be.memset = htod, htod, dtod, memset

    def remove(self):
        for name in ("memcpy_htod", "memcpy_htod_async", "memcpy_dtod", "memset"):
            self.backend.__dict__.pop(name, None)
