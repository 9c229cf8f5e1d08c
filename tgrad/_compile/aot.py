"""``tgrad.compile(model)`` in a training loop (AOTAutograd's split): the Module's forward is replayed as one node of
the autograd graph, ``CompiledFunctionBackward``, whose backward is the recorded backward of that forward; the loss,
``loss.backward()`` and ``optimizer.step()`` run outside, eagerly.

- call 2 of a guard key runs the forward eagerly under the recorder (``record``).  The blocks still allocated at its
  end besides the outputs are what the graph saved for backward: in the replay they are per-call blocks, as the
  outputs are (``Plan(keep=True)``).  Its outputs are handed out through a node whose first backward runs the
  eager graph's backward (``autograd.grad`` of the outputs to the tensors the forward reads that require grad:
  parameters, inputs) under the recorder: the backward program, which reads the outputs' gradients, the saved blocks
  and the bound tensors, and writes one gradient per input.
- later calls, once that backward is recorded (calls before it run eagerly), replay the forward into fresh saved
  blocks held by their node until its backward ran (two calls before one backward, ``retain_graph``); the node's
  backward replays the recorded one; the engine accumulates the gradients into ``.grad`` and runs the parameters'
  hooks, as in eager.  Dropout draws new numbers in each forward (the masks are saved blocks; on cuda a backward
  that regenerates a mask from the forward's Philox key and counter, attention's, reads that call's draws).
- on cuda both programs are ``cuda_replay.program``s: pre-packed launches, and CUDA graphs where they can be.
- eager from then on, with one warning giving the reason: a forward that cannot be replayed (the list in
  ``__init__``), a double backward (``create_graph=True``: through a replayed forward an error, as PyTorch's
  AOTAutograd raises), a backward given other output gradients than the recorded one (which outputs get one,
  their layout, an implicit 1), a gradient the backward does not compute (an output's gradient passed through).
"""
import contextlib
import weakref

from ..autograd import engine as _engine
from ..autograd.grad_mode import _state as _grad_state
from ..autograd.graph import FREED_MSG, Node, edge_of, set_history, version_error
from ..device import device as _device
from ..kernels.runtime import launcher as _L
from ..memory.allocator import get_allocator
from ..tensor import _new
from . import cuda_replay
from .plan import Plan
from .record import Eager, Patches, Recorder, tensors_of
from .replay import FUSE, MISS, OUT, Replay, _bound, _codegen, _only_tensors, rebuild, tier1

_CPU = _device("cpu")
RESTARTS = 2        # recordings whose outputs died before a backward ran through them, then eager


class CompiledFunctionBackward(Node):
    """The node of one compiled forward call (PyTorch's name); ``state`` is what its backward reads."""

    _name = "CompiledFunctionBackward"

    def __init__(self, owner, edges, out_meta, state):
        super().__init__()
        self.owner, self.next_functions, self._out_meta, self.state = owner, edges, out_meta, state

    def apply(self, grads):
        if self.state is None:
            raise RuntimeError(FREED_MSG)
        return self.owner.backward(self, grads)

    def _release(self):
        self.state = None       # the call's saved blocks go back (the next forward reuses them)
        self._released = True


class _Recording:
    """Call 2's node state: the eager outputs (their graph) and the tensors the walk found."""

    __slots__ = ("outs", "tensors", "done")

    def __init__(self, outs, tensors):
        self.outs, self.tensors, self.done = outs, tensors, False


def capture(fn, args, kwargs, walk, entry, fail):
    """Call 2 of a compiled Module's forward in training: run it under the recorder.  Returns (its result, the
    replay to put in ``entry.run``: a ``Training``, a plain ``Replay`` when no output requires grad, or None;
    the reason it stays eager or None).  ``fail(reason)``: the entry runs eagerly from then on (one warning)."""
    allocators = [get_allocator(d) for d in {t._storage.device for t in walk.tensors} | {_CPU}]
    rec = Recorder([])
    with Patches(rec, allocators, walk.objects):
        result = fn(*args, **kwargs)
    try:
        dev = _device_of(rec, allocators)
        if rec.backward_ran:
            raise Eager("a backward runs inside the forward")
        if any(ev[0] == "H" for ev in rec.events):
            raise Eager("the forward calls an optimizer, a scheduler, zero_grad() or train()")
        if not _only_tensors(result):
            raise Eager("it returns Python values besides tensors (a replay returns tensors it computes; "
                        "other values would be the recorded ones)")
        outs = tensors_of(result, [])
        held = _graph_blocks(outs)
        if any(r[2] is None and p not in held for p, r in rec.blocks.items()):
            raise Eager("a tensor made in the forward outlives it other than in its outputs and their autograd "
                        "graph (kept in an object the replay does not update)")
        plan = Plan(rec, outs, dev, keep=True)
        draws = [ev[3] for ev in rec.events if ev[0] == "R" and type(ev[3]) is tuple]     # cuda: (key, offset)
        fwd = _replay(rec, plan, _bound(plan, walk), outs, rebuild(result, iter([OUT] * len(outs))),
                      log_draws=bool(draws))
    except Eager as ex:
        return result, None, str(ex)
    finally:
        for orig, block in rec.deferred:
            orig(block)
    diff = [k for k, o in enumerate(outs) if o._requires_grad]
    if not diff:
        return result, fwd, None
    ts = walk.tensors
    tr = Training(fwd, plan, [i for i, t in enumerate(ts) if t._requires_grad], diff, entry, fail, allocators,
                  draws)
    node = CompiledFunctionBackward(tr, tuple(edge_of(ts[i]) for i in tr.targets), tr.out_meta(outs),
                                    _Recording([outs[k] for k in diff], list(ts)))
    tr.recording = weakref.ref(node)
    return rebuild(result, iter(tr.attach(outs, node))), tr, None


def _graph_blocks(outs):
    """The blocks of ``outs`` and of the tensors the graph behind them holds (saved tensors, tensor attributes)."""
    ts, seen, stack = list(outs), set(), [o.grad_fn for o in outs]
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        d = n.__dict__
        saved = list(d.get("_saved", {}).values()) + list(d.get("_saved_list") or ())
        ts += [x.tensor for x in saved if x is not None and x.tensor is not None]
        tensors_of(list(d.get("_attrs", {}).values()), ts)
        stack += [m for m, _ in n.next_functions]
    return {t._storage._block.ptr for t in ts if t._storage._block is not None}


def _device_of(rec, allocators):
    """The device whose memory recording ``rec`` made: cpu, or one cuda device (raises Eager: e.g. both)."""
    if rec.reason:
        raise Eager(rec.reason)
    if any(a.device.type == "cuda" for a in allocators):
        return cuda_replay.device_allocator(rec, allocators).device
    return _CPU


def _replay(rec, plan, bound, outs, template, draws=(), log_draws=False):
    """The Replay of a recording whose outputs are ``outs`` (cpu: tier 1 now, tier 2 after its first run; cuda:
    ``cuda_replay.program``, with ``draws`` and ``log_draws``)."""
    if plan.arena.device.type == "cuda":
        return cuda_replay.program(rec, plan, bound, outs, template, draws, log_draws)
    run, used, src = tier1(rec, plan, bound)
    blocks = [n for _, (j, n) in sorted(plan.out_blocks.items(), key=lambda kv: kv[1][0])]
    spec = [(plan.out_blocks[o._storage.ptr][0], o._offset, o._shape, o._strides, o.dtype) for o in outs]
    r = Replay(run, plan.arena, blocks, spec, template, used, src)
    r.regen = lambda: _codegen(rec, plan, bound, fuse=FUSE)
    return r


def _grads_key(grads):
    """What a recorded backward assumes of its output gradients: which are given, their layout, an implicit 1
    (``loss.backward()``'s seed, which a backward rule may use for a gradient it computed in forward)."""
    return tuple(None if g is None else
                 (g._shape, g._strides, g.dtype, g._storage.device,
                  g.__dict__.get("_implicit_seed", False) and g._version_counter[0] == 0) for g in grads)


@contextlib.contextmanager
def _muted(targets):
    """The hooks of the backward's inputs silenced (the outer backward runs them when the node hands on its
    gradients: ``autograd.grad`` would run them here too)."""
    saved = []
    for t in targets:
        obj, names = (t, ("_tensor_hooks",)) if t.grad_fn is None else (t.grad_fn, ("_tensor_pre_hooks",
                                                                                   "_retain_refs"))
        for n in names:
            if n in obj.__dict__:
                saved.append((obj, n, obj.__dict__.pop(n)))
    try:
        yield
    finally:
        for obj, n, v in saved:
            obj.__dict__[n] = v


class Training:
    """A compiled forward in training (one guard key): the forward Replay, then (after the first backward) the
    backward Replay.  ``__call__(walk)`` replays the forward and returns its outputs on a new node."""

    def __init__(self, fwd, plan, targets, diff, entry, fail, allocators, draws):
        self.fwd, self.saved = fwd, plan.out_blocks     # saved: recorded block ptr -> (j, nbytes)
        self.targets, self.diff = targets, diff         # walk indices of the inputs; outputs that require grad
        self.entry, self.fail = weakref.ref(entry), fail       # (weak: the entry holds this Training)
        self.allocators, self.device = allocators, plan.arena.device    # (the backward is recorded on them)
        self.draws = draws          # the recorded forward's Philox draws (cuda), read again by its backward
        self.nbound = 0             # the backward's B: gradients, saved blocks, the walk's tensors (then draws)
        self.reads_draws = False    # the backward reads the draws (cuda_replay.program)
        self.recording = None       # weakref to call 2's node
        self.bwd = self.bwd_key = None
        self.grad_pos = self.reads = ()
        self.dead = False

    def out_meta(self, outs):
        return tuple((tuple(outs[k].shape), outs[k].dtype, outs[k].device) for k in self.diff)

    def attach(self, outs, node):
        """``outs`` with those that require grad replaced by aliases whose grad_fn is ``node``."""
        outs = list(outs)
        for n, k in enumerate(self.diff):
            w = outs[k].detach()
            set_history(w, node, n)
            outs[k] = w
        return outs

    def __call__(self, walk):
        if self.bwd is None or self.dead or _L.RECORD is not None:
            e = self.entry()
            if e is not None and self.bwd is None and not self.dead and self.recording() is None:
                # call 2's outputs died unused
                if e.restarts >= RESTARTS:
                    self._fail("no backward ran through its outputs (an evaluation: call it under tgrad.no_grad())")
                else:
                    e.run, e.calls, e.restarts = None, 1, e.restarts + 1       # record again at the next call
            return MISS
        ts = walk.tensors
        B = self.fwd.bind(ts)
        if B is MISS:
            return MISS
        if self.draws:
            self.fwd.drawn.clear()
        stores = self.fwd.execute(B)
        outs = [_new(stores[j], off, shape, strides, dtype) for j, off, shape, strides, dtype in self.fwd.outs]
        node = CompiledFunctionBackward(self, tuple(edge_of(ts[i]) for i in self.targets), self.out_meta(outs),
                                        (tuple(stores), [(ts[i], ts[i]._version_counter[0]) for i in self.reads],
                                         [v for d in self.fwd.drawn for v in d] if self.draws else ()))
        return rebuild(self.fwd.template, iter(self.attach(outs, node)), OUT)

    def _fail(self, reason):
        if not self.dead:
            self.dead = True
            self.fail(reason)

    def backward(self, node, grads):
        st = node.state
        if type(st) is _Recording:
            return self._backward_recorded(st, grads)
        if _grad_state.grad:
            self._fail("a double backward (create_graph=True) through its forward")
            raise RuntimeError("tgrad.compile: a double backward (create_graph=True) through a compiled forward "
                               "is not supported (as torch.compile's aot_autograd); the next calls run eagerly")
        if _grads_key(grads) != self.bwd_key:
            self._fail("a backward was given other output gradients than the recorded one")
            raise RuntimeError("tgrad.compile: the backward of a compiled forward was given other output gradients "
                               "(which outputs get one, their shapes, strides or dtypes) than the recorded one; "
                               "the next calls run eagerly")
        stores, reads, drawn = st
        G, S = len(grads), len(stores)
        if self.reads_draws:
            B = [0] * self.nbound + drawn       # the forward's draws: a regenerated dropout's key and counter
        else:
            B = [0] * (G + S + (self.reads[-1] + 1 if self.reads else 0))
        for k, g in enumerate(grads):
            if g is not None:
                B[k] = g.data_ptr()
        for j, s in enumerate(stores):
            B[G + j] = s.ptr
        for i, (t, version) in zip(self.reads, reads):
            if t._version_counter[0] != version:        # modified in place since the forward (eager's check)
                raise version_error(t, version, t.grad_fn, t._output_nr)
            B[G + S + i] = t.data_ptr()
        out = self.bwd.execute(B, reuse=False)      # fresh blocks: AccumulateGrad takes them as .grad, no copy
        res = [None] * len(self.targets)
        for p, (j, off, shape, strides, dtype) in zip(self.grad_pos, self.bwd.outs):
            res[p] = _new(out[j], off, shape, strides, dtype)
        return tuple(res)

    def _backward_recorded(self, st, grads):
        """Call 2's backward: the eager graph's, recorded the first time (later: a retained graph, eager)."""
        targets = [st.tensors[i] for i in self.targets]
        roots = [(o, g) for o, g in zip(st.outs, grads) if g is not None]
        create = _grad_state.grad

        def run():
            with _muted(targets):
                return _engine.run_backward([o for o, _ in roots], [g for _, g in roots], True, create,
                                            inputs=targets, allow_unused=True, accumulate=False)
        if create or st.done or self.dead:
            if create:
                self._fail("a double backward (create_graph=True) through its forward")
            return tuple(run())
        st.done = True
        rec = Recorder([])
        with Patches(rec, self.allocators, ()):
            res = run()
        try:
            self._build_backward(rec, grads, res, st.tensors)
        except Eager as ex:
            self._fail(f"its backward cannot be replayed: {ex}")
        finally:
            for orig, block in rec.deferred:
                orig(block)
        return tuple(res)

    def _build_backward(self, rec, grads, res, ts):
        """The backward Replay: B = [output gradients, the forward's saved blocks, the walk's tensors, the forward's
        draws (cuda: key and first counter each)]."""
        if _device_of(rec, self.allocators) != self.device:
            raise Eager("it runs on another device than the forward")
        if any(ev[0] == "H" for ev in rec.events):
            raise Eager("it calls an optimizer, a scheduler, zero_grad() or train()")
        outs = [g for g in res if g is not None]
        plan = Plan(rec, outs, self.device)
        G, S = len(grads), len(self.saved)
        bound = [(g._storage.ptr, g._storage.ptr + g._storage.nbytes, k, g.data_ptr())
                 for k, g in enumerate(grads) if g is not None]
        bound += [(p, p + n, G + j, p) for p, (j, n) in self.saved.items()]
        bound += [(t._storage.ptr, t._storage.ptr + t._storage.nbytes, G + S + i, t.data_ptr())
                  for i, t in enumerate(ts) if t._storage.nbytes]
        self.nbound = n = G + S + len(ts)
        bwd = _replay(rec, plan, bound, outs, None,
                      [(key, off, f"B[{n + 2 * j}]", f"B[{n + 2 * j + 1}]") for j, (key, off) in enumerate(self.draws)])
        self.reads = [i - G - S for i in bwd.used if i >= G + S]
        self.reads_draws = getattr(bwd, "reads_draws", False)
        self.grad_pos = [p for p, g in enumerate(res) if g is not None]
        self.bwd_key, self.bwd = _grads_key(grads), bwd
