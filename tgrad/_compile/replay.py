"""The replay: a recorded step becomes one generated Python program (``Replay.source``): each launch's compiled
tape inlined with the addresses of the memory plan and of the bound tensors and element-wise chains fused
(``fuse.py``; a tape that calls the interpreter's builder is called), the host calls in between, the random draws
renewed; ``Replay(walk)`` runs it for the tensors found by this call's walk."""
import builtins
import ctypes
import functools
import sys

import numpy as np

from ..autograd import dispatch as _dispatch
from ..device import device as _device
from ..kernels.runtime import host_state as _host_state
from ..kernels.runtime import launcher as _L
from ..kernels.runtime.direct import Ptr, _entry
from ..kernels.runtime.host_state import FP_STATE as _FP_STATE
from ..kernels.runtime.host_state import fp_ignore as _fp_ignore
from ..kernels.optim import sgd_update, sgd_ufuncs
from ..kernels.runtime.native import aten_ufunc, run_loops
from ..kernels.runtime.tape_ops import _Views
from ..kernels.runtime.trace import _FAST
from ..ops.optim import _contiguous, adam_hyper
from ..memory import Storage
from ..memory.allocator import get_allocator
from ..optim import optimizer as _optim
from ..tensor import Tensor, _new
from .fuse import Fuser
from .hoist import hoist, instrument
from .plan import Plan
from .record import _ADAM_STEP, _PLAIN, Eager, Patches, Recorder, tensors_of

_refs = sys.getrefcount
OUT = object()      # an output's place in the result's structure
MISS = object()     # a replay's answer when this call's tensors do not fit the record
FUSE = True         # inline the tapes into the program and fuse element-wise chains (fuse.py); False: call them
HOIST = True        # after a run of the fused program: its small intermediates in buffers (hoist.py)


def capture(fn, args, kwargs, walk, build_cuda=None):
    """Run the step once eagerly under the recorder; returns (its result, its Replay or None, the reason
    it stays eager or None).  ``build_cuda``: builds the replay of a cuda step (``cuda_replay.build``)."""
    leaves = [t for t in walk.tensors if t._requires_grad and t.grad_fn is None]
    devices = {t._storage.device for t in walk.tensors} | {_device("cpu")}
    allocators = [get_allocator(d) for d in devices]
    rec = Recorder(leaves)
    with Patches(rec, allocators, walk.objects):
        result = fn(*args, **kwargs)
        rec.sync_grads()
    try:
        return result, build(rec, result, walk, allocators, build_cuda), None
    except Eager as ex:
        return result, None, str(ex)
    finally:
        for orig, block in rec.deferred:
            orig(block)


def build(rec, result, walk, allocators, build_cuda=None):
    """The Replay of a recording (raises Eager when it cannot be replayed)."""
    if rec.reason:
        raise Eager(rec.reason)
    if build_cuda is not None and any(a.device.type == "cuda" for a in allocators):
        return build_cuda(rec, result, walk, allocators)
    if len(allocators) != 1 or allocators[0].device.type != "cpu":
        raise Eager("tgrad.compile replays cpu steps")
    outs = tensors_of(result, [])
    if any(o._requires_grad for o in outs) and not rec.backward_ran:
        raise Eager("an output requires grad and no backward ran in the step (a backward outside would need "
                    "the graph the replay does not build)")
    if not _only_tensors(result):
        raise Eager("it returns Python values besides tensors (a replay returns tensors it computes; "
                    "other values would be the recorded ones)")
    plan = Plan(rec, outs, allocators[0].device)
    bound = _bound(plan, walk)
    run, used, src = tier1(rec, plan, bound)       # tier 1: the recorded calls, no source compiled
    plan.adopt_grads(rec.leaves)        # state after the recording: .grad set by backward is the arena's
    blocks = [n for _, (j, n) in sorted(plan.out_blocks.items(), key=lambda kv: kv[1][0])]
    outs = [(plan.out_blocks[o._storage.ptr][0], o._offset, o._shape, o._strides, o.dtype) for o in outs]
    r = Replay(run, plan.arena, blocks, outs, rebuild(result, iter([OUT] * len(outs))), used, src)
    # tier 2 after the first replay: the tapes inlined and fused (fuse.py), SGD steps as their launches, launches
    # the first replay traced (their key's 2nd launch) included; the recording call pays only tier 1's small program
    r.regen = lambda: _codegen(rec, plan, bound, fuse=FUSE)
    return r


def _bound(plan, walk):
    """The tensors found by the walk and not made in the step, as (lo, hi, walk index, data_ptr) at the recording;
    a pointer binds to the first one containing it."""
    bound = []
    for i, t in enumerate(walk.tensors):
        st = t._storage
        if plan.relocate(st.ptr) is None and st.nbytes:
            bound.append((st.ptr, st.ptr + st.nbytes, i, t.data_ptr()))
    return bound


def _where(plan, bound, used):
    """``where(v)``: recorded address ``v`` in the replay: an int (the arena's, fixed), (0, i, offset) (walk tensor
    i's data_ptr, B[i], plus offset; i added to ``used``) or (1, j, offset) (output block j, O[j], plus offset);
    raises Eager for an address no found tensor holds."""
    def where(v):
        r = plan.relocate(v)
        if r is not None:
            return r
        o = plan.output(v)
        if o is not None:
            return (1,) + o
        for lo, hi, i, base in bound:
            if lo <= v < hi:
                used.add(i)
                return 0, i, v - base
        raise Eager("the step reads a tensor that tgrad.compile cannot find from its arguments, closure "
                    "or globals")
    return where


def tier1(rec, plan, bound):
    """(``replay(B, O)``, the walk indices of the bound tensors it reads, a listing): tier 1, the recorded events as
    calls (each launch's tape, or its Launch where it has none yet; host calls, copies, fills, random refills, the
    ``.grad`` each leaf gets) in a list, each call's addresses of bound tensors and outputs patched in from B and O.
    No source is generated or compiled: the recording call pays only this list (tier 2, generated after the
    first replay, is the program)."""
    used, untaped, calls = set(), [False], []
    where = _where(plan, bound, used)
    for ev in rec.events:
        kind = ev[0]
        if kind == "L":
            site, dyn = ev[1], ev[2]
            tape = _tape(site, untaped)
            args = [(where(v) if v else 0) if type(site.args[p]) is Ptr else v for p, v in zip(site.pos, dyn)]
            calls.append((site if tape is None else tape, args))
        elif kind == "H":
            _, func, obj, a, kw, _ = ev
            calls.append((functools.partial(func, obj, *a, **kw), ()))
        elif kind == "G":
            calls += [(functools.partial(setattr, leaf, "_grad", None if g is None else plan.view(g)), ())
                      for leaf, g in ev[1]]
        elif kind == "C":
            _, dst, src, n = ev
            calls.append((ctypes.memmove, (where(dst), src if type(src) is bytes else where(src), n)))
        elif kind == "S":
            calls.append((ctypes.memset, (where(ev[1]), ev[2], ev[3])))
        else:       # "R": fresh mt19937 words where the step's kernels read them (cpu)
            _, gen, n, r = ev
            if type(r) is not int:      # (a Philox draw: its key and offset reach kernels as numbers)
                return _compiled_tier1(rec, plan, bound)
            calls.append((gen._refill, (where(r), n)))
    ops = []
    for f, args in calls:
        patches = tuple((pos,) + a for pos, a in enumerate(args) if type(a) is tuple)
        ops.append((f, tuple(0 if type(a) is tuple else a for a in args), patches))

    def replay(B, O):
        src = (B, O)
        for f, args, patches in ops:
            if patches:
                args = list(args)
                for pos, w, i, off in patches:
                    args[pos] = src[w][i] + off
            f(*args)
    return replay, sorted(used), f"# tier 1: {len(ops)} recorded calls (replay.tier1)\n"


def _compiled_tier1(rec, plan, bound):
    """``tier1``'s answer as a generated program (the tapes called, host calls called)."""
    src, ns, used, _ = _codegen(rec, plan, bound, tier1=True)
    exec(builtins.compile(src, "<tgrad.compile replay>", "exec"), ns)
    # (every exec'd function is popped from its namespace, its globals: left in, the two would be a cycle holding
    # the arena, freed only by a garbage collection)
    return ns.pop("replay"), used, src


def _codegen(rec, plan, bound, fuse=True, tier1=False, draws=()):
    """(source of ``replay(B, O)``, its namespace, the walk indices of the bound tensors it reads, whether a
    cpu launch has no compiled tape yet: it is called as a Launch); ``fuse``: tapes inlined and fused; ``tier1``:
    neither, and host calls called (an SGD step's long guard of what it reads not compiled); ``draws``: Philox
    draws made before the program, [(recorded key, offset, key expression, offset expression)] (``aot``: a
    backward's forward draws)."""
    ns = {"_arena": plan.arena, "_mm": ctypes.memmove, "_ms": ctypes.memset}
    used = set()
    untaped = [False]
    where = _where(plan, bound, used)

    def ptr(v):
        w = where(v)
        if type(w) is int:
            return str(w)
        return f"{'bo'[w[0]]}{w[1]} + {w[2]}" if w[2] else f"{'bo'[w[0]]}{w[1]}"

    names = {}          # id -> name of the objects in ns (which keeps them alive)

    def k(v):
        name = names.get(id(v))
        if name is None:
            name = names[id(v)] = f"k{len(ns)}"
            ns[name] = v
        return name
    draws = list(draws)     # the random draws (cuda): (recorded key, offset, their expressions in the program)
    host = not tier1 and plan.arena.device.type == "cpu"       # copies and fills as numpy's (cpu memory)
    fz = Fuser(plan, ns, len(rec.events))
    for ev in rec.events:
        kind = ev[0]
        if kind == "R":
            _, gen, n, r = ev
            if type(r) is int:      # cpu: fresh words written where the step's kernels read them
                fz.opaque([f"{k(gen)}._refill({ptr(r)}, {n})"])
                continue
            tv = f"r{len(fz.out)}"
            fz.opaque([f"{tv}k, {tv}o = {k(gen)}._take({n})"])
            draws.append(r + (f"{tv}k", f"{tv}o"))
        elif kind == "C":
            _, dst, src, n = ev
            d = ptr(dst)
            if type(src) is bytes and d.isdigit() and host:     # host bytes to a planned place: numpy's copy
                fz.opaque([f"{k(_u8(int(d), n))}[...] = {k(np.frombuffer(src[:n], np.uint8))}"])
                continue
            fz.opaque([f"_mm({d}, {k(src) if type(src) is bytes else ptr(src)}, {n})"],
                      () if type(src) is bytes else (src,))
        elif kind == "S":
            _, dst, byte, n = ev
            d = ptr(dst)
            if not host:
                fz.opaque([f"_ms({d}, {byte}, {n})"])
            else:                   # (a fill of a numpy view of the bytes: cheaper than a ctypes call)
                fz.opaque([f"{k(_u8(int(d), n))}.fill({byte})" if d.isdigit() else
                           f"{k(_u8_views(n))}[{d}].fill({byte})"])
        elif kind == "H":
            _, func, obj, a, kw, sgd = ev
            call = f"{k(func)}({k(obj)}, *{k(a)}, **{k(kw)})"
            lines = [call] if sgd is None or tier1 else (_adam_lines(obj, sgd[0], plan, k, call) if func is _ADAM_STEP
                                                         else _sgd_lines(obj, sgd, plan, k, call, untaped))
            fz.opaque(lines)
        elif kind == "G":
            for leaf, g in ev[1]:
                if g is not None:
                    fz.pin(g.ptr)       # read by the host calls through the leaf
            fz.opaque([f"{k(leaf)}._grad = {'None' if g is None else k(plan.view(g))}" for leaf, g in ev[1]])
        else:
            site, dyn = ev[1], ev[2]
            args = _launch_args(site, dyn, ptr, k, draws)
            tape = _tape(site, untaped)
            if tape is None or tier1 or not fuse or not fz.launch(tape, args):
                fz.opaque([f"{k(site) if tape is None else k(tape)}({', '.join(a[0] for a in args)})"],
                          [a[2] for a in args if a[2] is not None])
    lines = fz.lines()
    head = [f"b{i} = B[{i}]" for i in sorted(used)] + [f"o{j} = O[{j}]" for j in range(len(plan.out_blocks))]
    src = "def replay(B, O):\n" + "".join(f"    {ln}\n" for ln in head + lines or ["pass"])
    return src, ns, sorted(used), untaped[0]


def _u8(addr, n):
    """A numpy view of the ``n`` bytes at ``addr``."""
    return _u8_views(n)[addr]


def _u8_views(n):
    """address -> numpy view of ``n`` bytes there (``tape_ops._Views``)."""
    return _Views((n,), (1,), np.dtype(np.uint8))


def _sgd_lines(opt, sgd, plan, k, call, untaped):
    """An SGD step as its recorded launches, run while everything it reads is as recorded (``_step_checks``),
    with ``Optimizer._fused``'s version bumps; else the step itself."""
    snap, launches = sgd
    checks = _step_checks(opt, snap, plan, k)
    if checks is None:
        return [call]

    spec = _sgd_native(snap, plan)
    if spec is not None:
        plan_bytes = _loops_plan(spec)
        if plan_bytes is not None:      # (spec keeps the arrays whose addresses the plan holds)
            k(spec)
            return _guarded(checks, [f"{k(run_loops())}({k(spec[0][1])}, {k(plan_bytes)})"], call)
        return _guarded(checks, [f"{k(_sgd_run)}({k(spec)})"], call)

    def const(v):       # parameters and state at their recorded addresses (the checks above hold them)
        r = plan.relocate(v)
        if r is None and plan.output(v) is not None:
            raise Eager
        return str(v if r is None else r)
    try:
        body = [_launch_line(site, dyn, const, k, None, untaped) for site, dyn in launches]
    except Eager:
        return [call]
    return _guarded(checks, body, call)


def _sgd_native(snap, plan):
    """The recorded SGD step (cpu float32, contiguous, momentum buffers made, no maximize) as ``_sgd_run``'s
    items over numpy views fixed at the recording: per parameter ``kernels/optim.py``'s ``sgd_update`` over the
    whole tensor, its hyper-parameters rounded to float32 as its arguments are; None where it does not apply (the
    launches are relaunched)."""
    items = []
    for _, hyper, _, ps in snap:
        h = dict(hyper)
        if h.get("maximize") or any(type(h.get(n)) not in (int, float) for n in
                                    ("lr", "momentum", "dampening", "weight_decay")):
            return None
        lr, mom, damp, wd = (float(h[n]) for n in ("lr", "momentum", "dampening", "weight_decay"))
        x = np.array([-lr, mom, 1 - damp, wd], _F32)
        x = tuple(x[i:i + 1] for i in range(4))
        mo = 0 if mom == 0 else 1 if damp == 0 else 2
        fns = sgd_ufuncs(int(wd != 0), mo, int(bool(h.get("nesterov"))))
        if fns is None:
            return None
        for p, g_desc, st, _ in ps:
            if g_desc is None:
                continue
            buf = st.get("momentum_buffer") if mo and st else None
            ts = (p, plan.view(g_desc)) + ((buf,) if mo else ())
            if any(not isinstance(t, Tensor) or t._shape != p._shape or t.dtype.np != _F32 or
                   t._storage.device.type != "cpu" or not _contiguous(t) for t in ts):
                return None
            P, G = ts[0]._np_view(), ts[1]._np_view()
            items.append(fns + (P, G, ts[2]._np_view() if mo else G, x))
    return items


def _loops_plan(items):
    """``_sgd_native``'s items as one ``run_loops`` plan of their fused step ufunc (``sgd_update``'s ``fs``, the
    same loop on the same operands: P, G, U, the four scalars, out U, P), or None (a step without it, or no
    ``run_loops``)."""
    if not items or run_loops() is None or any(it[1] is None or it[1] is not items[0][1] for it in items):
        return None
    q = []
    for _, _, _, _, P, G, U, x in items:
        ops = (P, G, U) + tuple(x) + (U, P)
        if any(not a.flags.c_contiguous or a.dtype != _F32 for a in ops) or any(a.size != 1 for a in x):
            return None
        q.append(P.size)
        for a in ops:
            q += [a.ctypes.data, 0 if a.size == 1 else 4]      # (a 1-element operand: broadcast)
    return np.array(q, np.int64).tobytes()


def _sgd_run(items):
    """``_sgd_native``'s update: ``sgd_update`` per parameter, in place."""
    for it in items:
        sgd_update(*it)


def _adam_lines(opt, snap, plan, k, call):
    """An Adam/AdamW step (cpu float32, contiguous, no amsgrad or maximize) as one call of ``_adam_run`` over
    numpy views fixed at the recording, run while everything it reads is as recorded (``_step_checks``: a new
    learning rate, e.g. from a scheduler, runs the step itself); else the step itself."""
    checks = _step_checks(opt, snap, plan, k)
    if checks is None:
        return [call]
    spec = []
    names = ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "decoupled_weight_decay")
    for g, hyper, params, ps in snap:
        h = dict(hyper)
        if any(n not in h for n in names) or h["amsgrad"] or h["maximize"] or \
                any(type(h[n]) not in (int, float) for n in ("lr", "eps", "weight_decay")):
            return [call]
        (beta1, beta2), wd = h["betas"], h["weight_decay"]
        fs = _adam_ufuncs(np.float32(1 - beta1), wd != 0, h["decoupled_weight_decay"])
        items = []
        for p, g_desc, st, _ in ps:
            if g_desc is None:
                continue
            if not st:
                return [call]
            grad = plan.view(g_desc)
            ts = (p, grad, st.get("exp_avg"), st.get("exp_avg_sq"))
            stp = st.get("step")
            if fs is None or not isinstance(stp, Tensor) or stp._shape != () or stp.dtype.np != _F32 or \
                    any(not isinstance(t, Tensor) or t._shape != p._shape or t.dtype.np != _F32 or
                        t._storage.device.type != "cpu" or not _contiguous(t) for t in ts):
                return [call]
            items.append((stp._np_view(),) + tuple(t._np_view() for t in ts))
        spec.append(((h["lr"], beta1, beta2, h["eps"], wd), fs, items))
    return _guarded(checks, [f"{k(_adam_run)}({k(spec)})"], call)


def _adam_run(spec):
    """``_adam_lines``' update: per parameter ``state["step"] += 1`` (as ``_bump_step``) and the three ufuncs of
    ``_adam_native``."""
    for hp, fs, items in spec:
        xs = {}
        for sv, P, G, M, V in items:
            sv[...] = sv + 1
            step = float(sv)
            x = xs.get(step)
            if x is None:
                h = np.array(adam_hyper(*hp, step), _F32)
                x = xs[step] = [h[i:i + 1] for i in range(8)]
            _adam_update(fs, P, G, M, V, x)


def _adam_update(fs, P, G, M, V, x):
    """One parameter's update by ``_adam_ufuncs``' ``fs``: adam_m, adam_v, adam_p in turn, or optim_cpu.c's
    ``adam_step`` doing the three per element in one pass (the same operations on each element)."""
    fm, fv, fp, f = fs
    if f is not None:
        f(P, G, M, V, *x, out=(M, V, P))
        return
    fm(M, G, P, x[1], x[5], out=M)
    fv(V, G, P, x[2], x[3], x[5], out=V)
    fp(P, M, V, x[0], x[7], x[4], x[6], out=P)


def _guarded(checks, body, call):
    conds, bumps = checks
    return [f"if ({' and '.join(conds)}):"] + [f"    {ln}" for ln in body + bumps] + ["else:", f"    {call}"]


def _step_checks(opt, snap, plan, k):
    """(conditions, version bumps) of an optimizer step recorded as ``snap`` (``record.sgd_reads``): the same
    objects (groups, hyper-parameters, parameters and their storage and layout, ``.grad`` the arena tensors this
    replay set, state tensors) and ``Optimizer._fused``'s version bumps; None when a gradient was not made by
    the step or a state value is neither a tensor nor a plain value (the step decides)."""
    o = k(opt)
    conds = [f"{o}.param_groups is {k(opt.param_groups)}", f"len({k(opt.param_groups)}) == {len(snap)}",
             f"{o}.state is {k(opt.state)}"]
    bumps = []
    for j, (g, hyper, params, ps) in enumerate(snap):
        gk = k(g)
        conds += [f"{k(opt.param_groups)}[{j}] is {gk}", f"{gk}['params'] is {k(params)}",
                  f"len({k(params)}) == {len(ps)}"]
        conds += [f"type({gk}[{name!r}]) is {k(type(v))} and {gk}[{name!r}] == {k(v)}"
                  for name, v in hyper]
        for i, (p, g_desc, st, items) in enumerate(ps):
            pk = k(p)
            conds += [f"{k(params)}[{i}] is {pk}"] + _same_place(p, pk, k)
            if g_desc is None:
                conds.append(f"{pk}._grad is None")
                continue
            if plan.relocate(g_desc.ptr) is None:
                return None           # a gradient not made by this step: the step decides
            conds.append(f"{pk}._grad is {k(plan.view(g_desc))}")
            bumps.append(f"{pk}._version_counter[0] += 1")
            conds.append(f"{k(opt.state)}.get({pk}) is {k(st)}" + (f" and len({k(st)}) == {len(items)}" if st else ""))
            for name, v in items:
                vk = k(v)
                if isinstance(v, Tensor):
                    conds += [f"{k(st)}[{name!r}] is {vk}"] + _same_place(v, vk, k)
                    bumps.append(f"{vk}._version_counter[0] += 1")
                elif type(v) in _PLAIN:
                    conds.append(f"{k(st)}[{name!r}] == {vk}")
                else:
                    return None
    return conds, bumps


def _same_place(t, tk, k):
    return [f"{tk}._storage is {k(t._storage)}", f"{tk}._offset == {t._offset}", f"{tk}._shape == {t._shape!r}",
            f"{tk}._strides == {t._strides!r}"]


def _launch_args(site, dyn, ptr, k, draws):
    """A launch's tape arguments with the replay's addresses: [(expression, constant value or None, recorded
    address or None)]; a ``dynamic_args`` seed or offset of a random draw (``draws``: see ``_codegen``) is the
    replay's new draw (a backward regenerating a forward's dropout reads an earlier draw than the last)."""
    args = []
    dyn_int = site.kernel.__dict__.get("_tgrad_dynamic", ())
    names = None
    for pos, v in zip(site.pos, dyn):
        a = site.args[pos]
        if type(a) is Ptr:
            e = ptr(v) if v else "0"
            args.append((e, int(e) if e.isdigit() else None, v or None))
        elif type(v) is int and dyn_int and draws:
            if names is None:
                names = _entry(site.kernel)[1]
            e = _drawn(draws, names[pos], v) if names[pos] in dyn_int else None
            args.append((repr(v), v, None) if e is None else (e, None, None))
        elif type(v) is float and v != v or v in (float("inf"), float("-inf")):
            args.append((k(v), v, None))
        else:
            args.append((repr(v), v, None))
    return args


def _drawn(draws, name, v):
    """The expression of the latest draw whose key (argument ``seed``/``key``) or first counter (``offset``) was
    ``v`` in the recording, or None."""
    i = 0 if name in ("seed", "key") else 1 if name == "offset" else None
    if i is not None:
        for d in reversed(draws):
            if d[i] == v:
                return d[2 + i]
    return None


def _tape(site, untaped):
    """The compiled tape of a launch, or None (its Launch is called; ``untaped[0]`` set if a cpu launch has none
    yet, its key not traced so far)."""
    if type(site.tape) is _L.CpuTwin and _L.EXECUTOR == "trace":
        return site.tape
    hit = _FAST.get(site.fkey) if site.fkey is not None else None
    if hit is None and site.fkey is not None and _L.EXECUTOR == "trace":
        untaped[0] = True
    return hit[1] if hit is not None and hit[0] is site.kernel and _L.EXECUTOR == "trace" else None


def _launch_line(site, dyn, ptr, k, draws, untaped):
    """One launch as a call of its tape (or of its Launch when it has none) with the replay's addresses."""
    tape = _tape(site, untaped)
    return f"{k(site) if tape is None else k(tape)}({', '.join(a[0] for a in _launch_args(site, dyn, ptr, k, draws))})"


def _only_tensors(x):
    if x is None or isinstance(x, Tensor):
        return True
    if isinstance(x, (list, tuple)):
        return all(_only_tensors(y) for y in x)
    if isinstance(x, dict):
        return all(_only_tensors(y) for y in x.values())
    return False


def rebuild(x, fresh, place=Tensor):
    """``x`` with each tensor (or each ``place`` marker) replaced by the next of ``fresh``."""
    if x is place or (place is Tensor and isinstance(x, Tensor)):
        return next(fresh)
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*[rebuild(y, fresh, place) for y in x])
    if isinstance(x, (list, tuple)):
        return type(x)(rebuild(y, fresh, place) for y in x)
    if isinstance(x, dict):
        return {k: rebuild(v, fresh, place) for k, v in x.items()}
    return x


class Replay:
    """A recorded step: ``run(B, O)`` with the bound tensors' addresses B and the outputs' blocks O (the last
    call's again when nothing references them any more, else fresh ones)."""

    __slots__ = ("run", "arena", "blocks", "outs", "template", "used", "source", "lo", "hi", "last", "regen",
                 "hoist")

    def __init__(self, run, arena, blocks, outs, template, used, source):
        self.run, self.arena, self.blocks, self.outs = run, arena, blocks, outs
        self.template, self.used, self.source = template, used, source
        self.lo, self.hi = arena.ptr, arena.ptr + arena.nbytes
        self.last = None        # the previous call's output blocks
        self.regen = None       # after the first run: the program generated again (launches it traced inlined)
        self.hoist = None       # the fused program's namespace while its instrumented run is pending (hoist.py)

    def __call__(self, walk):
        B = self.bind(walk.tensors)
        if B is MISS:
            return MISS
        stores = self.execute(B)
        fresh = iter([_new(stores[j], off, shape, strides, dtype) for j, off, shape, strides, dtype in self.outs])
        return rebuild(self.template, fresh, OUT)

    def bind(self, ts):
        """The input addresses B of the walk's tensors ``ts`` (MISS: one lies in this step's arena)."""
        B = [0] * (self.used[-1] + 1 if self.used else 0)
        for i in self.used:
            p = ts[i].data_ptr()
            if self.lo <= p < self.hi:
                return MISS        # a tensor of this step's arena read as an input (a .grad it left)
            B[i] = p
        return B

    def execute(self, B, reuse=True):
        """Run the program over input addresses B; returns the output blocks (the last call's again when
        ``reuse`` and nothing references them any more, else fresh ones)."""
        stores = self.last
        if stores is not None:
            for st in stores:
                if _refs(st) > 3:       # a tensor (or numpy view) of the last output lives: fresh blocks
                    stores = None
                    break
        if stores is None:
            dev = self.arena.device
            stores = [Storage(n, dev) for n in self.blocks]
            self.last = stores if reuse else None
        _optim._FUSED_REPLAY = _FUSED
        try:
            self._execute(B, [st.ptr for st in stores])
        finally:
            _optim._FUSED_REPLAY = None
        if self.regen is not None:
            regen, self.regen = self.regen, None
            try:
                src, ns, used, _ = regen()
            except Eager:           # (the tier-1 program stays)
                used = None
            if used == self.used:
                exec(builtins.compile(src, "<tgrad.compile replay>", "exec"), ns)
                self.run, self.source = ns.pop("replay"), src
                if HOIST and "    t" in src:      # (tapes inlined: locals to hoist)
                    ns2 = dict(ns, _rec={})
                    exec(builtins.compile(instrument(src), "<tgrad.compile replay>", "exec"), ns2)
                    self.run, self.hoist = ns2.pop("replay"), ns2
        elif self.hoist is not None:        # the instrumented run done: tier 3
            ns, self.hoist = self.hoist, None
            rec = ns.pop("_rec")
            src = hoist(self.source, ns, rec)
            exec(builtins.compile(src, "<tgrad.compile replay>", "exec"), ns)
            self.run, self.source = ns.pop("replay"), src
        return stores

    def _execute(self, B, O):
        """Run the program over input addresses B and output blocks O (cpu: under the interpreter's fp state)."""
        outer, c = _FP_STATE.get(), _host_state.fp_cache
        tok = _FP_STATE.set(c[1] if outer is c[0] else _fp_ignore(outer))
        try:
            self.run(B, O)
        finally:
            _FP_STATE.reset(tok)


class _FusedMemo(dict):
    """The launches of optimizer updates (``Optimizer._fused``) seen in replays, by op, hyper-parameters and
    tensor addresses and shapes: the optimizer's Python still runs (step counts, learning rates), a repeated
    update skips dispatch and relaunches (a new learning rate or step count is a new entry)."""

    def __call__(self, name, params, grads, states, attrs):
        if name == "adam_step" and _adam_native(params, grads, states, attrs):
            return True
        key = [name, tuple(attrs.items())]
        for group in (params, grads) + states:
            for t in group:
                key.append(None if t is None else (t.data_ptr(), t._shape, t.dtype))
        key = tuple(key)
        launches = self.get(key)
        if launches is None:
            if len(self) >= 256:
                self.clear()
            launches = []
            al = params[0]._storage.allocator
            m = al.malloc

            def malloc(n):              # an update through temporaries (non-contiguous tensors) is not kept
                launches.append(None)
                return m(n)
            outer, _L.RECORD = _L.RECORD, _Launches(launches)
            al.malloc = malloc
            try:
                _dispatch.call(name, params, grads, *states, **attrs)
            finally:
                _L.RECORD = outer
                del al.malloc
            self[key] = launches if None not in launches else False
            return True
        if launches is False:
            return False
        for site, dyn in launches:
            site(*dyn)
        return True


_F32 = np.dtype(np.float32)
_VIEWS = {}         # element count -> _Views (address -> 1-D float32 view)


def _adam_native(params, grads, states, attrs):
    """Adam's update (``adam_step``, cpu float32, contiguous, no amsgrad or maximize) as three of optim_cpu.c's
    ufuncs per parameter over whole tensors, in place: the kernel's per-element operations (``_adam_m``,
    ``_adam_v``, ``_adam_p`` with its hyper-parameters rounded to float32 as its arguments are), without its
    tiles, padding and dispatch (a new step count is a new memo key every step).  False: not handled."""
    if attrs["amsgrad"] or attrs["maximize"] or not params:
        return False
    ms, vs = states[0], states[1]
    for col in (params, grads, ms, vs):
        for t in col:
            if t is None or t.dtype.np != _F32 or t._storage.device.type != "cpu" or not _contiguous(t):
                return False
    if any(not (p._shape == g._shape == m._shape == v._shape) for p, g, m, v in zip(params, grads, ms, vs)):
        return False
    h = np.array(adam_hyper(attrs["lr"], attrs["beta1"], attrs["beta2"], attrs["eps"], attrs["weight_decay"],
                            attrs["step"]), _F32)
    fs = _adam_ufuncs(h[1], attrs["weight_decay"] != 0, attrs["decoupled_weight_decay"])
    if fs is None:
        return False
    x = [h[i:i + 1] for i in range(8)]
    for p, g, m, v in zip(params, grads, ms, vs):
        n = p.numel()
        views = _VIEWS.get(n)
        if views is None:
            if len(_VIEWS) >= 64:
                _VIEWS.clear()
            views = _VIEWS[n] = _Views((n,), (4,), _F32)
        P, G, M, V = views[p.data_ptr()], views[g.data_ptr()], views[m.data_ptr()], views[v.data_ptr()]
        _adam_update(fs, P, G, M, V, x)
    return True


def _adam_ufuncs(w1, has_wd, decoupled):
    """optim_cpu.c's (adam_m, adam_v, adam_p, adam_step or None) ufuncs for lerp weight ``w1`` (float32: the
    kernel's LERP_LOW side) and the weight decay kind, or None (not built)."""
    w, low, d = int(has_wd and not decoupled), int(bool(w1 < 0.5)), int(has_wd and decoupled)
    fs = (aten_ufunc(f"adam_m_{w}{low}"), aten_ufunc(f"adam_v_{w}"), aten_ufunc(f"adam_p_{d}"))
    return None if None in fs else fs + (aten_ufunc(f"adam_step_{w}{low}{d}"),)


class _Launches:
    """A launch recorder (``launcher.RECORD``) appending ``(site, dyn)`` to a list."""

    exact = takes_memsets = False

    def __init__(self, out):
        self.out = out

    def __call__(self, site, dyn):
        self.out.append((site, dyn))


_FUSED = _FusedMemo()