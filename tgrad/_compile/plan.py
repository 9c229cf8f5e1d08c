"""The static memory plan of a recorded step: every block the step allocated is a temporary with a lifetime
(malloc .. free event) packed into one arena by lifetime, so a replay holds about the eager step's peak.
``.grad`` tensors backward leaves behind live in the arena to the end; outputs get their own blocks, reused only
once no tensor holds the last call's (a returned tensor is never overwritten); with ``keep`` (a compiled forward
whose backward runs later: ``aot``) every block still allocated at the end gets such a block too (saved tensors)."""
import bisect

from ..memory import Storage
from ..tensor import _new
from .record import Desc, Eager


def pack(blocks):
    """Offsets in one arena for blocks [(size, start, end)], no two with overlapping lifetimes sharing
    bytes (greedy by size, lowest fitting offset).  Returns (offsets, arena bytes)."""
    order = sorted(range(len(blocks)), key=lambda i: (-blocks[i][0], blocks[i][1]))
    placed, offs, top = [], [0] * len(blocks), 0
    for i in order:
        size, s, e = blocks[i]
        busy = sorted((o, o + sz) for (o, sz, s2, e2) in placed if s2 < e and s < e2)
        off = 0
        for lo, hi in busy:
            if off + size <= lo:
                break
            off = max(off, hi)
        offs[i] = off
        placed.append((off, size, s, e))
        top = max(top, off + size)
    return offs, top


class Plan:
    """Where each recorded address lives in a replay: in the arena (``relocate``), in output block j
    (``output``), or elsewhere (a bound tensor's, found by the caller)."""

    def __init__(self, rec, outs, device, keep=False):
        end = len(rec.events)
        # blocks still allocated at the end: outputs get a fresh block per call (the program writes into it),
        # .grad tensors are planned (live to the end); any other means a tensor made in the step outlives it
        # somewhere the replay does not know
        self.out_blocks = {}        # recorded block ptr -> (j, nbytes)
        for o in outs:
            b = o._storage._block
            if b is None or b.ptr not in rec.blocks or rec.blocks[b.ptr][2] is not None:
                raise Eager("an output is not made by the step (returned as is: aliasing)")
            self.out_blocks.setdefault(b.ptr, (len(self.out_blocks), o._storage.nbytes))
        accounted = {leaf._grad._storage.ptr for leaf in rec.leaves
                     if leaf._grad is not None and leaf._grad._storage._block is not None}
        temps = []
        for ptr, (size, s, e, block) in rec.blocks.items():
            if ptr in self.out_blocks:
                continue
            if e is None and keep:      # (a forward's saved tensors: a block per call, as the outputs')
                self.out_blocks[ptr] = (len(self.out_blocks), size)
                continue
            if e is None:
                if ptr not in accounted:
                    raise Eager("a tensor made in the step outlives it (kept in a graph or an object the replay "
                                "does not update)")
                e = end + 1
            temps.append((ptr, size, s, e))
        temps.sort()
        offs, size = pack([(sz, s, e) for _, sz, s, e in temps])
        self.temps, self.offs = temps, offs
        self.arena = Storage(max(size, 1), device)
        self._starts = [t[0] for t in temps]
        self._outs = sorted((p, j, n) for p, (j, n) in self.out_blocks.items())
        self._views = {}

    def temp_of(self, p):
        """The index in ``temps`` of the temporary holding recorded address ``p``, or None."""
        i = bisect.bisect_right(self._starts, p) - 1
        return i if i >= 0 and p < self.temps[i][0] + self.temps[i][1] else None

    def relocate(self, p):
        """The arena address of recorded address ``p``, or None if no temporary held it."""
        i = self.temp_of(p)
        return None if i is None else self.arena.ptr + self.offs[i] + p - self.temps[i][0]

    def output(self, p):
        """(output block j, byte offset) of recorded address ``p``, or None."""
        for lo, j, n in self._outs:
            if lo <= p < lo + n:
                return j, p - lo
        return None

    def view(self, t):
        """The arena's tensor at the place ``t`` (a tensor or a Desc) had in the recording (one per place)."""
        r = self.relocate(t.ptr if type(t) is Desc else t._storage.ptr)
        key = (r, t._offset, t._shape, t._strides, t.dtype)
        v = self._views.get(key)
        if v is None:
            off = (r - self.arena.ptr) // t.dtype.itemsize + t._offset
            v = self._views[key] = _new(self.arena, off, t._shape, t._strides, t.dtype)
        return v

    def adopt_grads(self, leaves):
        """After the recording: each ``.grad`` backward made becomes the arena's copy of it."""
        arena_arr = self.arena.host_array("u1", self.arena.nbytes)
        for leaf in leaves:
            g = leaf._grad
            if g is not None and self.relocate(g._storage.ptr) is not None:
                v = self.view(g)
                n = g._storage.nbytes
                o = v._offset * v.dtype.itemsize - g._offset * g.dtype.itemsize
                arena_arr[o:o + n] = g._storage.host_array("u1", n)
                leaf._grad = v
