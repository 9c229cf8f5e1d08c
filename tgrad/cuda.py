"""``tgrad.cuda``: availability, device selection, synchronize, memory statistics (drop-in names).

A facade on the api floor: the current device and the device count live in ``tgrad.device`` (over the
driver in ``tgrad.memory.cuda_driver``), the statistics in ``tgrad.memory.stats``; nothing below imports
this module.
"""
from .device import current_device, device as _Device, device_count, is_available, set_device  # noqa: F401
from .device import check_available as _check_available
from .memory import cuda_driver as _drv
from .memory import stats as _stats
from .memory.allocator import OutOfMemoryError  # noqa: F401  (tgrad.cuda.OutOfMemoryError)
from .random import manual_seed_cuda as _manual_seed_cuda


def synchronize(device=None):
    """Wait for all kernels on ``device`` (default: current) to finish."""
    _check_available()
    idx = current_device() if device is None else (device if isinstance(device, int) else
                                                    (_Device(device).index or 0))
    _drv.synchronize(idx)


def _index(device):
    """The device ordinal of ``device`` (None: the current device; an int, "cuda:1", a tgrad.device)."""
    _check_available()
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    from .device import device as Device
    d = Device(device)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return current_device() if d.index is None else d.index


class _CudaDeviceProperties:
    """What ``get_device_properties`` answers, read from the driver (PyTorch's field names)."""

    def __init__(self, props):
        self.name, self.total_memory = props["name"], props["total_memory"]
        self.major, self.minor = props["major"], props["minor"]
        self.multi_processor_count = props["multi_processor_count"]
        self.warp_size = props["warp_size"]
        self.max_threads_per_multi_processor = props["max_threads_per_multi_processor"]
        self.L2_cache_size = props["L2_cache_size"]
        self.regs_per_multiprocessor = props["regs_per_multiprocessor"]
        self.shared_memory_per_block_optin = props["shared_memory_per_block_optin"]
        self.is_integrated, self.is_multi_gpu_board = False, False

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1 << 20)}MB, "
                f"multi_processor_count={self.multi_processor_count}, "
                f"L2_cache_size={self.L2_cache_size // (1 << 20)}MB)")


def get_device_properties(device=None):
    return _CudaDeviceProperties(_drv.device_properties(_index(device)))


def get_device_name(device=None):
    return get_device_properties(device).name


def get_device_capability(device=None):
    p = get_device_properties(device)
    return (p.major, p.minor)


def mem_get_info(device=None):
    """(free, total) bytes of the device, as the driver reports them."""
    idx = _index(device)
    return _drv.CudaBackend(idx).mem_get_info()


class Stream:
    """A CUDA stream (``torch.cuda.Stream``): kernels launched while it is current run on it, in order.

    Created ordered with the legacy default stream (which tgrad's synchronous copies use)."""

    def __init__(self, device=None, priority=0, *, _handle=None):
        self.device_index = _index(device)
        self._stream = None
        if _handle is None:
            self._stream = _drv.Stream(self.device_index)
            _handle = self._stream.handle
        self.cuda_stream = _handle
        self.priority = priority

    @property
    def device(self):
        from .device import device as Device
        return Device("cuda", self.device_index)

    def synchronize(self):
        _drv.stream_synchronize(self.device_index, self.cuda_stream)

    def query(self):
        return _drv.stream_query(self.device_index, self.cuda_stream)

    def record_event(self, event=None):
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event):
        event.wait(self)

    def wait_stream(self, stream):
        self.wait_event(stream.record_event())

    def __eq__(self, other):
        return isinstance(other, Stream) and (self.device_index, self.cuda_stream) == \
            (other.device_index, other.cuda_stream)

    def __hash__(self):
        return hash((self.device_index, self.cuda_stream))

    def __enter__(self):
        self._prev = _drv.set_current_stream_handle(self.device_index, self.cuda_stream)
        return self

    def __exit__(self, *exc):
        _drv.set_current_stream_handle(self.device_index, self._prev)

    def __repr__(self):
        return f"<tgrad.cuda.Stream device=cuda:{self.device_index} cuda_stream={self.cuda_stream:#x}>"


class Event:
    """A CUDA event (``torch.cuda.Event``): ``record`` on a stream, ``elapsed_time`` in milliseconds."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        if interprocess:
            raise NotImplementedError("tgrad.cuda.Event(interprocess=True): events shared between processes are "
                                      "not supported")
        self.enable_timing = enable_timing
        self._event = None

    def record(self, stream=None):
        stream = current_stream() if stream is None else stream
        if self._event is None:
            self._event = _drv.Event(stream.device_index, timing=self.enable_timing)
        self._event.record(stream.cuda_stream)

    def wait(self, stream=None):
        stream = current_stream() if stream is None else stream
        if self._event is not None:
            _drv.stream_wait_event(stream.device_index, stream.cuda_stream, self._event)

    def query(self):
        return True if self._event is None else self._event.query()

    def synchronize(self):
        if self._event is not None:
            self._event.synchronize()

    def elapsed_time(self, end_event):
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._event is None or end_event._event is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return self._event.elapsed_time(end_event._event)


def current_stream(device=None):
    """This thread's current stream of ``device`` (the default stream unless one was made current)."""
    idx = _index(device)
    return Stream(idx, _handle=_drv.current_stream_handle(idx))


def default_stream(device=None):
    return Stream(_index(device), _handle=0)


def set_stream(stream):
    _drv.set_current_stream_handle(stream.device_index, stream.cuda_stream)


class stream:
    """``with tgrad.cuda.stream(s):`` launches on ``s`` (None: no change)."""

    def __init__(self, s):
        self.s = s

    def __enter__(self):
        if self.s is not None:
            self.s.__enter__()
        return self.s

    def __exit__(self, *exc):
        if self.s is not None:
            self.s.__exit__(*exc)


def manual_seed(seed):
    """Seed the current cuda device's generator (cpu draws are unchanged, as in PyTorch; without a GPU the
    seed waits in device 0's generator, as PyTorch's lazy call does)."""
    _manual_seed_cuda(seed, current_device() if is_available() else 0)


def manual_seed_all(seed):
    """Seed every cuda device's generator."""
    _manual_seed_cuda(seed)


def _dev(device):
    if device is None:
        return f"cuda:{current_device()}"
    if isinstance(device, int):
        return f"cuda:{device}"
    return device


def memory_allocated(device=None):
    return _stats.memory_allocated(_dev(device))


def max_memory_allocated(device=None):
    return _stats.max_memory_allocated(_dev(device))


def memory_reserved(device=None):
    return _stats.memory_reserved(_dev(device))


def max_memory_reserved(device=None):
    return _stats.max_memory_reserved(_dev(device))


def reset_peak_memory_stats(device=None):
    return _stats.reset_peak_memory_stats(_dev(device))


def memory_stats(device=None):
    return _stats.memory_stats(_dev(device))


def memory_summary(device=None, abbreviated=False):
    return _stats.memory_summary(_dev(device), abbreviated=abbreviated)


def empty_cache():
    if is_available():
        _stats.empty_cache(_dev(None))
