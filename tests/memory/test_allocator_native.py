"""allocator.c (the C twin of the caching allocator's common malloc/free) hands out the same blocks and keeps the
same free lists and stats as the Python methods, step by step; with it off (``TGRAD_NATIVE=0``, no compiler)
the Python methods do everything."""
import random

import pytest

from tgrad.memory import allocator as A
from tgrad.memory.allocator import CachingAllocator

MiB = 1 << 20
CPU_ONLY = True


class Addresses:
    """A backend handing out the same addresses in every run (the allocator never touches the memory)."""

    def __init__(self):
        self.top, self.sizes = 1 << 40, {}

    def malloc(self, nbytes):
        p, self.top = self.top, self.top + ((nbytes + (4 << 20)) >> 21 << 21)
        self.sizes[p] = nbytes
        return p

    def free(self, ptr):
        del self.sizes[ptr]

    def synchronize(self):
        pass

    def mem_get_info(self):
        return 1 << 40, 1 << 40


CachingAllocator(Addresses(), "cpu")      # the first allocator builds allocator.c (A._load_native)


def state(alloc):
    """Everything the policy decides: the free lists (with the pending block), blocks of each segment, stats."""
    pending = alloc._pending
    pending = None if pending is None else (pending.ptr, pending.size)
    free = [[(s, p) for s, p, _ in pool.free] for pool in (alloc._small, alloc._large)]
    segments = []
    for base, (_, b) in sorted(alloc._segments.items()):
        while b is not None:
            segments.append((b.ptr, b.size, b.active))
            b = b.next
    return pending, free, segments, alloc._small.room, alloc._large.room, alloc._all.room, alloc._small.peak, \
        alloc._small.increases, alloc._large.increases


def run(seed, steps, native, monkeypatch):
    if not native:
        monkeypatch.setattr(A, "_c_malloc", None)
        monkeypatch.setattr(A, "_c_free", None)
    rng = random.Random(seed)
    alloc = CachingAllocator(Addresses(), "cpu")
    live, trace = [], []
    for i in range(steps):
        r = rng.random()
        if r < 0.52 or not live:
            n = rng.choice([rng.randrange(0, 5000), rng.randrange(0, 40000), rng.randrange(0, 3 * MiB),
                            rng.choice([320, 4, 512, 1024])])
            b = alloc.malloc(n)
            live.append(b)
            trace.append(("m", n, b.ptr, b.size))
        elif r < 0.99:
            b = live.pop(rng.randrange(len(live)))
            alloc.free(b)
            trace.append(("f", b.ptr))
        else:
            alloc.reset_peak_memory_stats()
        trace.append(state(alloc))
        if i % 200 == 0:
            alloc._check_invariants()
    alloc._check_invariants()
    stats = alloc.memory_stats()
    monkeypatch.undo()
    return trace, stats


@pytest.mark.parametrize("seed", [0, 1])
def test_native_matches_python_step_by_step(seed, monkeypatch):
    if A._c_malloc is None:
        pytest.skip("allocator.c not built (no C compiler, or TGRAD_NATIVE=0)")
    calls = []
    c_malloc = A._c_malloc
    monkeypatch.setattr(A, "_c_malloc", lambda a, n: calls.append(n) or c_malloc(a, n))
    fast, fast_stats = run(seed, 1500, True, monkeypatch)
    assert len(calls) > 700        # (the C twin ran)
    slow, slow_stats = run(seed, 1500, False, monkeypatch)
    for i, (f, s) in enumerate(zip(fast, slow)):
        assert f == s, f"step {i // 2}: {f} != {s}"
    assert fast_stats == slow_stats


def test_native_serves_the_common_cases():
    """A known size class's malloc and its free are done in C (None / False: left to the Python method)."""
    if A._c_malloc is None:
        pytest.skip("allocator.c not built (no C compiler, or TGRAD_NATIVE=0)")
    alloc = CachingAllocator(Addresses(), "cpu")
    assert A._c_malloc(alloc, 1000) is None         # a new size class: the Python method computes it
    b = alloc.malloc(1000)
    alloc.free(b)
    c = A._c_malloc(alloc, 1000)
    assert c is b and c.allocated
    assert A._c_free(alloc, c) is True and not c.allocated
    assert A._c_free(alloc, c) is False             # a double free: the Python method raises
    with pytest.raises(RuntimeError, match="double free"):
        alloc.free(c)
    assert alloc._enter()
    try:
        assert A._c_malloc(alloc, 1000) is None     # re-entrant: the Python method raises
    finally:
        alloc._leave()
    alloc._check_invariants()


def test_without_native_the_python_methods_do_everything():
    """``TGRAD_NATIVE=0``: allocator.c is not built and a step's blocks come from the Python methods."""
    import os
    import subprocess
    import sys
    code = ("import tgrad; from tgrad.memory import allocator as A; x = tgrad.ones(100) * 2; "
            "assert A._c_malloc is None and A._c_free is None; assert float(x.sum()) == 200.0; "
            "A.get_allocator('cpu')._check_invariants(); print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, TGRAD_NATIVE="0"))
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_native_leaves_overrides_graph_pools_and_stream_waits_to_python():
    """The cases allocator.c must not serve: an instance's own malloc/free (tgrad.compile's recorder wraps them), a
    graph capture's pool, blocks waiting on streams, release_on_free."""
    if A._c_malloc is None:
        pytest.skip("allocator.c not built (no C compiler, or TGRAD_NATIVE=0)")
    from tgrad.device import device
    from tgrad.memory.storage import Storage
    alloc = A.get_allocator(device("cpu"))
    alloc.free(alloc.malloc(700))       # (a known size class)
    seen = []
    alloc.malloc = lambda n, _m=alloc.malloc: seen.append(("m", n)) or _m(n)
    alloc.free = lambda b, _f=alloc.free: seen.append(("f", b.size)) or _f(b)
    try:
        assert A._c_malloc(alloc, 700) is None
        st = Storage(700, device("cpu"))
        del st
    finally:
        del alloc.malloc, alloc.free
    assert seen == [("m", 700), ("f", 1024)]

    mine = CachingAllocator(Addresses(), "cpu")
    mine.free(mine.malloc(700))
    mine.begin_capture(7)
    try:
        mine.free(mine.malloc(700))     # a graph pool's size class
        assert A._c_malloc(mine, 700) is None     # (its block is the pending free)
        mine.settle()
        assert A._c_malloc(mine, 700) is None     # (nothing pending: the pool itself)
    finally:
        mine.end_capture()
    b = A._c_malloc(mine, 700)                # the allocator's own pool again
    assert b is not None and b.pool is mine._small
    mine._after_streams.append((None, [], ()))
    try:
        assert A._c_malloc(mine, 700) is None
    finally:
        mine._after_streams.clear()
    mine.release_on_free = True
    assert A._c_free(mine, b) is False
    mine.release_on_free = False
    assert A._c_free(mine, b) is True
    mine._check_invariants()
