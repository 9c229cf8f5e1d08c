"""``tgrad.compile`` on cuda: the recorded step replayed as pre-packed launches, and as one CUDA graph.

The replay program is the cpu one (``replay._codegen``: the same events, memory plan and guards), its
launches the launch sites' compiled kernels called with pre-packed parameters (``gpu.site``: no dispatch,
no graph building, no allocator call), its copies and memsets queued on the current stream.

Where the driver has graphs and the step has nothing a graph cannot repeat (a random draw: new numbers
each call; a host call other than an SGD step replayed as its launches, ``zero_grad(set_to_none=True)`` or
``train()``), the first replay captures the program into a CUDA graph and launches it; later calls with
the same addresses (the bound tensors: parameters, inputs, optimizer state; the output blocks, which are
the last call's again unless its outputs are still held) run only the program's Python side (guards of the
SGD step, ``.grad`` bindings, version counters: its launches and copies replaced by no-ops) and launch the
graph.  New addresses replay the launches, and are captured when a later call has them again, up to
``MAX_GRAPHS`` (a loss kept each call alternates between two output blocks; a new batch each call, and the
gradients a compiled Module's backward hands to ``.grad``, cycle through a few cached blocks: a graph each).
A graph allocates nothing.

``tgrad.compile(model)`` in training (``aot``) runs its forward and its backward as two such programs
(``program``); a forward's Philox draws are logged (``drawn``) for its backward, which reads them from its
inputs (a backward that reads them is not a graph: it would repeat one call's).
"""
from .. import cuda as _cuda
from ..kernels.runtime.launcher import Launch
from ..memory import cuda_driver as _drv
from ..optim.sgd import SGD
from ..random import Generator
from .plan import Plan
from .record import Eager, tensors_of
from .replay import OUT, Replay, _bound, _codegen, _only_tensors, rebuild

_SGD_STEP = SGD.step
MAX_GRAPHS = 8          # graphs kept per replay (by bound addresses: a new batch each call cycles through a few)
_STREAMS = {}           # device index -> the side stream captures run on (never destroyed: its destruction
                        # waits for its work, and a replay is often collected inside a kernel compile or run)


class _Fallback(Exception):
    """An SGD step's guard failed in the graph's Python side: this call replays the launches instead."""


def _fallback(*args, **kwargs):
    raise _Fallback


def build(rec, result, walk, allocators):
    """The CudaReplay of a recording on one cuda device (raises Eager when it cannot be replayed)."""
    al = device_allocator(rec, allocators)
    outs = tensors_of(result, [])
    if any(o._requires_grad for o in outs) and not rec.backward_ran:
        raise Eager("an output requires grad and no backward ran in the step (a backward outside would need "
                    "the graph the replay does not build)")
    if not _only_tensors(result):
        raise Eager("it returns Python values besides tensors (a replay returns tensors it computes; "
                    "other values would be the recorded ones)")
    plan = Plan(rec, outs, al.device)
    r = program(rec, plan, _bound(plan, walk), outs, rebuild(result, iter([OUT] * len(outs))))
    _adopt_grads(plan, rec.leaves)
    return r


def device_allocator(rec, allocators):
    """The allocator of the one cuda device whose memory the recording ``rec`` made (raises Eager otherwise)."""
    if rec.reason:
        raise Eager(rec.reason)
    cuda = [a for a in allocators if a.device.type == "cuda"]
    if len(cuda) != 1:
        raise Eager("the step uses more than one cuda device")
    al = cuda[0]
    if any(block.pool.allocator is not al for (_, _, _, block) in rec.blocks.values()):
        raise Eager("the step makes tensors on cpu and on cuda (a replay plans one device's memory)")
    return al


def program(rec, plan, bound, outs, template, draws=(), log_draws=False):
    """The CudaReplay of recording ``rec`` under memory plan ``plan`` (``bound``: see ``replay._bound``) whose
    outputs are ``outs`` in ``template``.  ``draws``: Philox draws made before it (``replay._codegen``; read from
    B; a program reading them is not graphed); ``log_draws``: each call's draws kept in ``drawn`` as (key, offset)."""
    src, ns, used, _ = _codegen(rec, plan, bound, draws=draws)
    be = plan.arena.allocator.backend
    index = be.index

    def copy(dst, src, n):       # looked up per call: a capture replaces the backend's copies
        if type(src) is bytes:
            be.memcpy_htod_async(dst, src, n, _drv.current_stream_handle(index))
        else:
            be.memcpy_dtod(dst, src, n)
    ns["_mm"] = copy
    ns["_ms"] = lambda ptr, byte, n: be.memset(ptr, byte, n)
    drawn = []
    if log_draws:
        for name, v in list(ns.items()):
            if isinstance(v, Generator):
                ns[name] = _Logged(v, drawn)
    code = compile(src, "<tgrad.compile cuda replay>", "exec")
    exec(code, ns)
    blocks = [n for _, (j, n) in sorted(plan.out_blocks.items(), key=lambda kv: kv[1][0])]
    outs = [(plan.out_blocks[o._storage.ptr][0], o._offset, o._shape, o._strides, o.dtype) for o in outs]
    r = CudaReplay(ns.pop("replay"), plan.arena, blocks, outs, template, used, src)
    r.drawn = drawn
    r.reads_draws = any(e in src for d in draws for e in d[2:])       # (a graph would keep this call's)
    r.graphable = not r.reads_draws and _graph_reason(rec) is None and _drv.graphs_available()
    if r.graphable:
        r.python_side = _variant(code, ns, python_only=True)
        r.capture_run = _variant(code, ns, python_only=False)
    return r


class _Logged:
    """A generator whose draws (``_take``) are appended to ``log``: a compiled forward's, for its backward."""

    __slots__ = ("gen", "log")

    def __init__(self, gen, log):
        self.gen, self.log = gen, log

    def _take(self, n):
        r = self.gen._take(n)
        self.log.append(r)
        return r


def _graph_reason(rec):
    """Why the step cannot be one CUDA graph (None: it can)."""
    for ev in rec.events:
        if ev[0] == "R":
            return "it draws random numbers (new ones each call)"
        if ev[0] == "H":
            _, func, obj, args, kwargs, sgd = ev
            if sgd is not None and func is _SGD_STEP or func.__name__ == "train":
                continue
            if func.__name__ == "zero_grad" and not args and kwargs.get("set_to_none", True) is True:
                continue
            return f"it runs {type(obj).__name__}.{func.__name__}() (host work a graph cannot repeat)"
    return None


def _variant(code, ns, python_only):
    """The replay program over a namespace where an SGD step's fallback (its guard failed) raises _Fallback,
    and, for ``python_only``, launches, copies and memsets do nothing."""
    ns2 = {}
    for name, v in ns.items():
        if v is _SGD_STEP:
            v = _fallback
        elif python_only and (isinstance(v, Launch) or name in ("_mm", "_ms")):
            v = _noop
        ns2[name] = v
    exec(code, ns2)
    return ns2.pop("replay")


def _noop(*args):
    pass


def _adopt_grads(plan, leaves):
    """After the recording: each ``.grad`` backward made becomes the arena's copy of it (``Plan.adopt_grads``
    on the device)."""
    for leaf in leaves:
        g = leaf._grad
        if g is not None and plan.relocate(g._storage.ptr) is not None:
            v = plan.view(g)
            o = v._offset * v.dtype.itemsize - g._offset * g.dtype.itemsize
            plan.arena.copy_(o, g._storage, 0, g._storage.nbytes)
            leaf._grad = v


class CudaReplay(Replay):
    """A recorded cuda step: pre-packed launches, or its CUDA graphs by bound addresses (``graphable``)."""

    __slots__ = ("graphable", "python_side", "capture_run", "graphs", "seen", "stream", "stats", "drawn",
                 "reads_draws")

    def __init__(self, *args):
        super().__init__(*args)
        self.graphable, self.graphs, self.seen, self.stream = False, {}, set(), None
        self.drawn, self.reads_draws = [], False
        self.stats = {"launches": 0, "graph": 0, "captures": 0}

    def _execute(self, B, O):
        if not (self.graphable and self._graph_call(B, O)):
            self.stats["launches"] += 1
            self.run(B, O)

    def _graph_call(self, B, O):
        """Run the call as a graph launch; False when it must replay the launches instead."""
        key = (tuple(B), tuple(O))
        g = self.graphs.get(key)
        if g is None:
            if self.graphs and key not in self.seen:        # new addresses: captured if they come again
                if len(self.seen) >= 4 * MAX_GRAPHS:
                    self.seen.clear()
                self.seen.add(key)
                return False
            self.seen.discard(key)
            g = self._capture(key, B, O)
            if g is None:
                return False
        else:
            try:
                self.python_side(B, O)
            except _Fallback:
                return False
            g.replay()
        self.stats["graph"] += 1
        return True

    def _capture(self, key, B, O):
        """Capture the program into a new CUDA graph and launch it once; None when this call cannot (an SGD
        guard failed: launches replayed) or the capture failed (then no more graphs for this replay)."""
        if self.stream is None:
            idx = self.arena.allocator.backend.index
            self.stream = _STREAMS.get(idx) or _STREAMS.setdefault(idx, _cuda.Stream(idx))
        g = _cuda.CUDAGraph()
        self.stream.wait_stream(_cuda.current_stream(self.stream.device_index))
        try:
            with _cuda.stream(self.stream):
                g.capture_begin()
                try:
                    self.capture_run(B, O)
                except BaseException:
                    g._abort()
                    raise
                g.capture_end()
        except _Fallback:
            return None     # an SGD guard failed in this call: replayed as launches (the next call captures)
        except RuntimeError:
            self.graphable = False
            return None
        if len(self.graphs) >= MAX_GRAPHS:
            self.graphs.pop(next(iter(self.graphs)))
        self.graphs[key] = g
        self.stats["captures"] += 1
        g.replay()
        return g
