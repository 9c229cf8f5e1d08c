"""The cpu replay as one program: each launch's tape (``tape._compile``'s numpy source) inlined into the replay,
its loads and stores at fixed arena addresses bound once to numpy views, and element-wise chains fused: a load
of the value an earlier launch stored at the same place (same address, shape, strides, dtype; nothing written
over it in between) reads the stored array itself, and a store into a temporary nothing reads any more (the
plan's lifetimes: every later read was forwarded) is dropped.  Intermediates are deleted after their last use,
as a tape's locals die when it returns.  Same ufuncs on the same arrays in the same order: bit-identical."""
import re

import numpy as np

from ..kernels.runtime.tape_ops import _Views

# one pass over a tape's source: a view of an argument address, a constant, a local, an argument
_TOKEN = re.compile(r"\b(?:(_k\d+)\[a(\d+)(?: \+ (\d+))?\]|(_k\d+)\b|(s\d+_\d+|x\d+|_r|_t)\b|a(\d+)\b)")
_SCALAR = re.compile(r"^(x\d+) = _nparray\(\[a(\d+)\], dtype=(_u64|_f32)\)$")
_STORE = re.compile(r"^(v\d+)\[\.\.\.\] = (.+)$")
_SIMPLE = re.compile(r"^t\d+(?:s\d+_\d+|x\d+)(?:\[c\d+_k\d+\])?$")     # a local, or a local's constant slice
_VNAME = re.compile(r"\bv\d+\b")
_LOCALS = re.compile(r"\bt\d+(?:s\d+_\d+|x\d+|_r|_t)\b")
_BASE = ("_np", "_nparray", "_u64", "_f32", "_i8", "_bool", "_bt", "_iload", "_istore", "_to_data", "_nanred",
         "_nested_load", "_nested_store", "_sel")


class _View:
    """A view's temporary, recorded byte range [lo, hi), and (shape, dtype) when it is C-contiguous (a
    contiguous view of the same bytes and dtype reads what it stored, reshaped), else None."""
    __slots__ = ("block", "lo", "hi", "flat")

    def __init__(self, block, lo, views):
        self.block, self.lo = block, lo
        self.hi = lo + sum((n - 1) * s for n, s in zip(views.shape, views.strides)) + views.dtype.itemsize
        step, contig = views.dtype.itemsize, True
        for n, s in zip(reversed(views.shape), reversed(views.strides)):
            contig = contig and (n == 1 or s == step)
            step *= n
        self.flat = (tuple(views.shape), views.dtype.str) if contig and min(views.shape, default=1) > 0 else None


class Fuser:
    """The replay's statements, in order: launches inlined where their tape allows (``launch``), anything else
    as given (``opaque``: it may write anywhere, and reads the temporaries named); ``lines()`` at the end."""

    def __init__(self, plan, ns, end):
        self.plan, self.ns, self.end = plan, ns, end
        self.out = []           # statements
        self.views = {}         # view name -> _View (recorded byte range, temporary index)
        self.named = {}         # (recorded address, shape, strides, dtype) -> view name
        self.fwd = {}           # view name -> expression of the array last stored there
        self.reads = {}         # temporary index -> index of the last statement reading it
        self.stores = []        # (statement index, temporary index)
        self.pinned = set()     # temporaries read by host calls (.grad) or at the end: never dropped
        self.n = 0              # launches inlined

    def opaque(self, lines, reads=()):
        for p in reads:
            b = self.plan.temp_of(p)
            if b is not None:
                self.reads[b] = len(self.out)
        self.fwd.clear()
        self.out += lines

    def pin(self, p):
        b = self.plan.temp_of(p)
        if b is not None:
            self.pinned.add(b)

    def launch(self, tape, args):
        """Inline ``tape`` called with ``args`` [(expression, constant value or None, recorded address or
        None)]; False if its source cannot be inlined (it calls the interpreter's builder)."""
        code = getattr(tape, "__code__", None)
        src = getattr(tape, "source", None)
        if code is None or code.co_name != "run" or src is None:
            return False
        g = tape.__globals__
        if any(g.get(nm) is not self.ns.get(nm, g.get(nm)) for nm in _BASE):
            return False
        for nm in _BASE:
            self.ns[nm] = g[nm]
        j, self.n = self.n, self.n + 1
        consts, opaque = {}, set()

        def sub(m):
            kname, ai, start, cname, local, arg = m.groups()
            if kname is not None:
                views, (expr, val, rp) = g[kname], args[int(ai)]
                off = int(start or 0)
                if type(views) is _Views and val is not None and rp is not None:
                    return self._view(views, val + off, rp + off)
                if val is not None and rp is not None:
                    opaque.add(rp)
                self.ns[f"c{j}{kname}"] = views
                return f"c{j}{kname}[{expr}{' + ' + start if start else ''}]"
            if cname is not None:
                self.ns[f"c{j}{cname}"] = g[cname]
                return f"c{j}{cname}"
            if local is not None:
                return consts.get(local, f"t{j}{local}")
            expr, val, rp = args[int(arg)]
            if rp is not None and val is not None:
                opaque.add(rp)          # an address used as a number (a gather's pointer arithmetic)
            return expr if " " not in expr else f"({expr})"
        body = []
        for line in src.split("\n")[1:]:
            line = line[4:]
            if not line or line == "pass":
                continue
            m = _SCALAR.match(line)
            if m is not None:
                expr, val, rp = args[int(m.group(2))]
                if val is not None:         # a constant argument: its array made once
                    name = consts[m.group(1)] = f"c{j}{m.group(1)}"
                    self.ns[name] = np.array([val], dtype=g[m.group(3)])
                    if rp is not None:
                        opaque.add(rp)
                    continue
            body.append(_TOKEN.sub(sub, line))
        # a launch using an address as a number may read or write there on any line: nothing forwarded into,
        # across or out of it, and what it points into is read at its end
        if opaque:
            self.fwd.clear()
        for line in body:
            self._line(line, bool(opaque))
        if opaque:
            self.opaque([], opaque)
        return True

    def _view(self, views, addr, rp):
        key = (rp, views.shape, views.strides, views.dtype.str)
        name = self.named.get(key)
        if name is None:
            name = self.named[key] = f"v{len(self.named)}"
            self.ns[name] = views[addr]
            self.views[name] = _View(self.plan.temp_of(rp), rp, views)
        return name

    def _line(self, line, opaque):
        m = _STORE.match(line)
        if m is not None and m.group(1) in self.views:
            name, rhs = m.groups()
            v = self.views[name]
            for other in [o for o in self.fwd if self.views[o].lo < v.hi and v.lo < self.views[o].hi]:
                del self.fwd[other]
            if _SIMPLE.match(rhs) and not opaque:
                self.fwd[name] = rhs
            self.stores.append((len(self.out), v.block))
            self.out.append(line)
            return
        for name in set(_VNAME.findall(line)):
            rhs = None if opaque else self._stored(name)
            if rhs is not None:
                line = re.sub(rf"\b{name}\b", rhs, line.replace(f"_nparray({name})", rhs))
            elif self.views[name].block is not None:
                self.reads[self.views[name].block] = len(self.out)
        self.out.append(line)

    def _stored(self, name):
        """The expression of the array last stored where view ``name`` reads, or None."""
        rhs = self.fwd.get(name)
        if rhs is not None:
            return rhs
        v = self.views[name]
        if v.flat is not None:
            for o, rhs in self.fwd.items():
                w = self.views[o]
                if w.lo == v.lo and w.hi == v.hi and w.flat is not None and w.flat[1] == v.flat[1]:
                    return f"{rhs}.reshape({v.flat[0]!r})"
        return None

    def lines(self):
        """The statements with dead stores dropped and ``del`` after each intermediate's last use."""
        temps = self.plan.temps
        dead = {i for i, b in self.stores
                if b is not None and b not in self.pinned and temps[b][3] <= self.end and self.reads.get(b, -1) < i}
        out = [ln for i, ln in enumerate(self.out) if i not in dead]
        last = {}
        for i, ln in enumerate(out):
            for name in _LOCALS.findall(ln):
                last[name] = i
        dels = {}
        for name, i in last.items():
            dels.setdefault(i, []).append(name)
        res = []
        for i, ln in enumerate(out):
            res.append(ln)
            if i in dels:
                res.append(f"del {', '.join(sorted(dels[i]))}")
        return res
