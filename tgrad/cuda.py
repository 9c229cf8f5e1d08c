"""``tgrad.cuda``: availability, device selection, synchronize, memory statistics, streams and events,
CUDA graphs (``CUDAGraph``, ``graph``, ``graph_pool_handle``, ``make_graphed_callables``): drop-in names.

A facade on the api floor: the current device and the device count live in ``tgrad.device`` (over the
driver in ``tgrad.memory.cuda_driver``), the statistics in ``tgrad.memory.stats``; nothing below imports
this module.
"""
import itertools

from ._creation import empty_like as _empty_like
from .autograd import grad as _autograd_grad
from .autograd.function import Function as _Function, once_differentiable as _once_differentiable
from .device import current_device, device as _Device, device_count, is_available, set_device  # noqa: F401
from .device import check_available as _check_available
from .memory import cuda_driver as _drv
from .memory import stats as _stats
from .memory.allocator import OutOfMemoryError  # noqa: F401  (tgrad.cuda.OutOfMemoryError)
from .memory.allocator import get_allocator as _get_allocator
from .random import manual_seed_cuda as _manual_seed_cuda
from .tensor import Tensor as _Tensor


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


# ---------------------------------------------------------------- CUDA graphs
_pool_ids = itertools.count(1)


def graph_pool_handle():
    """An opaque token naming a graph memory pool: captures given the same token share its memory
    (``graph(g, pool=handle)``, ``CUDAGraph.capture_begin(pool=handle)``)."""
    if not is_available():
        raise RuntimeError("Tried to instantiate dummy base class _graph_pool_handle")
    return (0, next(_pool_ids))


def is_current_stream_capturing():
    """True while the current stream of the current device captures a CUDA graph."""
    if not is_available():
        return False
    idx = current_device()
    return _drv.is_capturing(idx, _drv.current_stream_handle(idx))


class CUDAGraph:
    """A CUDA graph (``torch.cuda.CUDAGraph``): the kernels, copies and memsets queued on a non-default stream
    between ``capture_begin`` and ``capture_end``, replayed with ``replay()`` on the same addresses.  Memory
    allocated during the capture comes from a private pool (``pool()``) that no other allocation uses while
    the graph lives, so the graph's addresses stay valid; ``reset()`` (or deleting the graph) gives it up."""

    def __init__(self, keep_graph=False):
        if not is_available():
            raise RuntimeError("Tried to instantiate dummy base class CUDAGraph")
        self._graph = self._pool = self._allocator = None
        self._capturing = False
        self._keep_graph = keep_graph        # keep the captured graph besides its executable

    def capture_begin(self, pool=None, capture_error_mode="global"):
        if self._graph is not None:
            raise RuntimeError("This CUDAGraph instance already owns a captured graph. To capture a new graph, "
                               "create a new instance.")
        if capture_error_mode not in _drv.CAPTURE_MODES:
            raise RuntimeError(f"Unknown capture error mode. Expected `global`, `thread_local`, or `relaxed`, "
                               f"got {capture_error_mode}")
        idx = current_device()
        handle = _drv.current_stream_handle(idx)
        if handle == 0:
            raise RuntimeError("CUDA graphs must be captured on a non-default stream. (However, after capture, "
                               "it's ok to replay them on the default stream.)")
        al = _get_allocator(f"cuda:{idx}")
        g = _drv.Graph(idx, al.backend)
        pool = graph_pool_handle() if pool is None else tuple(pool)
        al.begin_capture(pool)
        try:
            g.begin(handle, capture_error_mode)
        except BaseException:
            al.end_capture()
            al.release_pool(pool)
            raise
        self._graph, self._pool, self._allocator, self._capturing = g, pool, al, True

    def capture_end(self):
        if not self._capturing:
            raise RuntimeError("Called CUDAGraph::capture_end without a preceding capture_begin.")
        self._capturing = False
        self._allocator.end_capture()
        try:
            self._graph.end(self._keep_graph)
        except BaseException:
            self.reset()
            raise

    def _abort(self):
        """End a capture whose code raised: the capture is dropped, the pool given up."""
        if self._capturing:
            self._capturing = False
            self._allocator.end_capture()
            self._graph.abort()
            self.reset()

    def replay(self):
        if self._graph is None or self._capturing:
            raise RuntimeError("Called CUDAGraph::replay without a preceding successful capture.")
        g = self._graph
        g.launch(_drv.current_stream_handle(g.index))

    def reset(self):
        """Free the graph and give up its pool (its memory returns once its tensors are freed too)."""
        g, self._graph = self._graph, None
        if g is not None:
            g.destroy()
            self._allocator.release_pool(self._pool)

    def pool(self):
        if self._pool is None:
            raise RuntimeError("Called CUDAGraph::pool() without a preceding successful capture.")
        return self._pool

    def __del__(self):
        try:
            if getattr(self, "_graph", None) is not None and not self._capturing:
                self.reset()
        except Exception:
            pass


class graph:
    """``with tgrad.cuda.graph(g):`` captures the CUDA work of the block into ``g`` (``torch.cuda.graph``):
    the device is synchronized and the cache emptied first, the block runs on ``stream`` (default: a side
    stream shared by captures), allocating from ``pool`` (default: a new private pool)."""

    default_capture_stream = None

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        if stream is None and graph.default_capture_stream is None:
            graph.default_capture_stream = Stream()
        self.pool = () if pool is None else (pool,)
        self.capture_stream = stream if stream is not None else graph.default_capture_stream
        self.stream_ctx = globals()["stream"](self.capture_stream)
        self.cuda_graph = cuda_graph
        self.capture_error_mode = capture_error_mode

    def __enter__(self):
        synchronize()
        empty_cache()
        self.stream_ctx.__enter__()
        try:
            self.cuda_graph.capture_begin(*self.pool, capture_error_mode=self.capture_error_mode)
        except BaseException:
            self.stream_ctx.__exit__(None, None, None)
            raise

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is not None:        # the block's error is the one to see, not the dead capture's
                self.cuda_graph._abort()
            else:
                self.cuda_graph.capture_end()
        finally:
            self.stream_ctx.__exit__(exc_type, exc, tb)
        return False


def _leaves(x, out):
    """The tensors (and other leaves) of nested tuples/lists/dicts, in order."""
    if isinstance(x, (list, tuple)):
        for y in x:
            _leaves(y, out)
    elif isinstance(x, dict):
        for y in x.values():
            _leaves(y, out)
    else:
        out.append(x)
    return out


def _rebuild(x, it):
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*[_rebuild(y, it) for y in x])
    if isinstance(x, (list, tuple)):
        return type(x)(_rebuild(y, it) for y in x)
    if isinstance(x, dict):
        return {k: _rebuild(v, it) for k, v in x.items()}
    return next(it)


def _is_module(c):
    return all(hasattr(c, a) for a in ("parameters", "buffers", "_forward_hooks", "training"))


def make_graphed_callables(callables, sample_args, num_warmup_iters=3, allow_unused_input=False, pool=None):
    """Graphed versions of ``callables`` (Modules or functions; ``torch.cuda.make_graphed_callables``).

    Each callable's forward and backward are captured into two CUDA graphs after ``num_warmup_iters``
    warm-up iterations on a side stream; calling the result copies its tensor arguments into the static
    inputs the graphs read (``sample_args``), replays the forward graph and returns its static outputs
    (detached, wired into autograd), and its backward replays the backward graph.  A Module keeps its
    eager forward when its ``training`` flag differs from the one it had when graphed."""
    just_one = not isinstance(callables, tuple)
    if just_one:
        callables, sample_args = (callables,), (sample_args,)
    flat_args = []
    for c, args in zip(callables, sample_args):
        if _is_module(c):
            if getattr(c, "_backward_hooks", None) or c._forward_hooks or c._forward_pre_hooks:
                raise AssertionError("Modules must not have hooks registered at the time they are passed. However, "
                                     "registering hooks on modules after passing them through "
                                     "make_graphed_callables is allowed.")
            if not all(b.requires_grad is False for b in c.buffers()):
                raise AssertionError("In any :class:`~torch.nn.Module` passed to :func:`~make_graphed_callables`, "
                                     "only parameters may be trainable. All buffers must have "
                                     "``requires_grad=False``.")
        flat = tuple(_leaves(args, []))
        if not all(isinstance(a, _Tensor) for a in flat):
            raise AssertionError("In the beta API, sample_args for each callable must contain only Tensors. "
                                 "Other types are not allowed.")
        flat_args.append(flat)
    n_user = [len(a) for a in flat_args]
    params = [tuple(c.parameters()) if _is_module(c) else () for c in callables]
    surfaces = [flat_args[i] + params[i] for i in range(len(callables))]
    fwd_graphs = [CUDAGraph() for _ in callables]
    bwd_graphs = [CUDAGraph() for _ in callables]
    mempool = graph_pool_handle() if pool is None else pool

    def grads_of(outs, surface, grad_outputs):
        return _autograd_grad(outputs=tuple(o for o in outs if o.requires_grad),
                              inputs=tuple(i for i in surface if i.requires_grad), grad_outputs=grad_outputs,
                              only_inputs=True, allow_unused=allow_unused_input)

    synchronize()
    with globals()["stream"](Stream()):        # warm-up on a side stream, as PyTorch does
        for func, args, surface in zip(callables, sample_args, surfaces):
            for _ in range(num_warmup_iters):
                outs = [o for o in _leaves(func(*args), []) if isinstance(o, _Tensor)]
                if any(o.requires_grad for o in outs):
                    grads_of(outs, surface, tuple(_empty_like(o) for o in outs if o.requires_grad))
            del outs
    synchronize()

    static_outputs, specs = [], []
    for func, args, g in zip(callables, sample_args, fwd_graphs):
        with graph(g, pool=mempool):
            out = func(*args)
        static_outputs.append(tuple(_leaves(out, [])))
        specs.append(out)
    static_grad_outputs, static_grad_inputs = [None] * len(callables), [None] * len(callables)
    for i in reversed(range(len(callables))):
        outs = static_outputs[i]
        grad_outs = tuple(_empty_like(o) if o.requires_grad else None for o in outs)
        grad_inputs = None
        if any(o.requires_grad for o in outs):
            with graph(bwd_graphs[i], pool=mempool):
                grad_inputs = grads_of(outs, surfaces[i], tuple(g for g in grad_outs if g is not None))
        it = iter(grad_inputs or ())
        static_grad_inputs[i] = tuple(next(it) if a.requires_grad and grad_inputs is not None else None
                                      for a in surfaces[i])
        static_grad_outputs[i] = grad_outs

    def graphed_function(fwd, bwd, module_params, n_args, spec, surface, outs, grad_outs, grad_ins):
        class Graphed(_Function):
            @staticmethod
            def forward(ctx, *inputs):
                for k in range(n_args):
                    if surface[k].data_ptr() != inputs[k].data_ptr():
                        surface[k].copy_(inputs[k])
                fwd.replay()
                return tuple(o.detach() for o in outs)

            @staticmethod
            @_once_differentiable
            def backward(ctx, *grads):
                for g, gr in zip(grad_outs, grads):
                    if g is not None and gr is not None and g.data_ptr() != gr.data_ptr():
                        g.copy_(gr)
                bwd.replay()
                return tuple(b.detach() if b is not None else b for b in grad_ins)

        def functionalized(*user_args):
            out = Graphed.apply(*(tuple(_leaves(user_args, [])) + module_params))
            return _rebuild(spec, iter(out))
        return functionalized

    ret = []
    for i, func in enumerate(callables):
        graphed = graphed_function(fwd_graphs[i], bwd_graphs[i], params[i], n_user[i], specs[i], surfaces[i],
                                   static_outputs[i], static_grad_outputs[i], static_grad_inputs[i])
        if _is_module(func):
            def make_forward(func, training, graphed, orig):
                def new_forward(*user_args, **user_kwargs):
                    if func.training == training:
                        return graphed(*user_args, **user_kwargs)
                    return orig(*user_args, **user_kwargs)
                return new_forward
            func.forward = make_forward(func, func.training, graphed, func.forward)
            ret.append(func)
        else:
            ret.append(graphed)
    return ret[0] if just_one else tuple(ret)
