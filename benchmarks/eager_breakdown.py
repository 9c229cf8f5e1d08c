"""Where an eager training step's host time goes (issue 18), measured in one process.

    python benchmarks/eager_breakdown.py [--steps a,b,d,e] [--rounds 7] [--n 200]

For each step of benchmarks/steps.py:

1. Python calls per step (cProfile's count, builtins included) and the functions called most;
2. CPU time per step (``time.process_time``, median of ``--rounds`` alternating rounds of ``--n`` steps)
   as tgrad runs it, beside what-if variants patched into the same process (measurement only: they
   break stats or policy, never use them):

   - ``ideal_alloc``: Storage takes blocks from a per-size free list (no best fit, no split/merge,
     no stats, no lock): the most a native allocator fast path could save;
   - ``python_alloc``: the caching allocator's Python methods only (memory/allocator.c's malloc/free
     off, as with ``TGRAD_NATIVE=0``): what the C twin saves;
   - ``lean_call``: the dispatcher's ``call`` without its generic checks (autocast, op recording,
     conjugate views, devices, inference tensors; none of them acts in these steps): the most a
     per-signature dispatch cache in front of the op's forward could save on top of the forward itself.

Ratios between variants of one round are what to read (a shared machine moves the absolute figures).
"""
import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))


def call_counts(step, n=50, top=12):
    """(Python calls per step, [(calls per step, function)] of the ``top`` most called)."""
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(n):
        step()
    pr.disable()
    st = pstats.Stats(pr).stats
    total = sum(v[1] for v in st.values()) / n
    rows = sorted(((v[1] / n, f"{os.path.basename(k[0])}:{k[2]}") for k, v in st.items()), reverse=True)
    return total, rows[:top]


def variants(torch):
    """{name: (install, uninstall)} of the what-if variants."""
    from tgrad.memory import allocator as A, storage as S
    al = A.get_allocator(torch.device("cpu"))
    init, dele = S.Storage.__init__, S.Storage.__del__
    pool = {}

    def ideal_init(self, nbytes, device):
        free = pool.get(nbytes)
        self.allocator = al
        self._block = block = free.pop() if free else al.malloc(nbytes)
        self.ptr, self.nbytes, self.device, self._owner = block.ptr, nbytes, al.device, None
        self.launch_device, self.pinned = "cpu", False

    def ideal_del(self):
        block = self._block
        if block is not None:
            self._block = None
            pool.setdefault(self.nbytes, []).append(block)

    def set_storage(i, d):
        S.Storage.__init__, S.Storage.__del__ = i, d

    c_malloc, c_free = A._c_malloc, A._c_free

    def set_alloc(m, f):
        A._c_malloc, A._c_free = m, f
    import tgrad.tensor as T
    from tgrad.autograd import dispatch as DP
    call = DP.call

    def lean_call(name, *inputs, **attrs):
        op = DP._TABLE[name]
        spec = DP._specs.get(op) or DP._spec(op)
        n = spec.n_inputs
        ins = inputs if n is None or len(inputs) == n else inputs[:n]
        out = op.forward(*inputs, **attrs)
        if op.view:
            mode = ("multi" if isinstance(out, tuple) else True) if DP.grad_mode.is_grad_enabled() else False
            for o in (out if isinstance(out, tuple) else (out,)):
                if o._base is not None:
                    o._view_mode = mode
        if DP._grad_state.recording and op.backward is not None and DP._any_requires_grad(ins):
            DP._record(spec, ins, attrs, out)
        return out

    def set_call(c):
        T._call = DP.call = c
    return {"tgrad": (lambda: None, lambda: None),
            "lean_call": (lambda: set_call(lean_call), lambda: set_call(call)),
            "ideal_alloc": (lambda: set_storage(ideal_init, ideal_del), lambda: set_storage(init, dele)),
            "python_alloc": (lambda: set_alloc(None, None), lambda: set_alloc(c_malloc, c_free))}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", default="a,b,d,e")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--n", type=int, default=200, help="steps per timed round")
    a = p.parse_args()
    import steps as S

    import tgrad as torch
    names = a.steps.split(",")
    fns = {n: S.build(n, torch) for n in names}
    for n in names:
        for _ in range(20):
            fns[n]()
        total, rows = call_counts(fns[n])
        print(f"({n}) {S.DESCRIPTION[n]}: {total:.0f} Python calls per step; most called:")
        for c, f in rows:
            print(f"    {c:6.1f}  {f}")
    vs = variants(torch)
    times = {(n, v): [] for n in names for v in vs}
    for _ in range(a.rounds):
        for n in names:
            for v, (on, off) in vs.items():
                on()
                try:
                    for _ in range(5):
                        fns[n]()
                    t0 = time.process_time()
                    for _ in range(a.n):
                        fns[n]()
                    times[n, v].append((time.process_time() - t0) / a.n * 1e6)
                finally:
                    off()
    print("\nus per step (CPU time, median of rounds); ratio to tgrad as it is")
    print("step  " + "".join(f"{v:>22s}" for v in vs))
    for n in names:
        base = statistics.median(times[n, "tgrad"])
        cells = "".join(f"{statistics.median(times[n, v]):12.1f} ({statistics.median(times[n, v]) / base:5.2f}x)"
                        for v in vs)
        print(f"({n})  {cells}")


if __name__ == "__main__":
    main()
