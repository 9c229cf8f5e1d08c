"""tgrad.compile's one-time and memory costs per training step of steps.py, in CPU time of this thread
(``time.thread_time``: steady under a loaded machine, where wall times are not).

    PYTHONPATH=$PWD OPENBLAS_NUM_THREADS=1 python benchmarks/compile_costs.py --steps a,b,c,d,e

Per step, in one process whose eager steps ran first (its kernels traced, as in a program that trains
eagerly before compiling, or a second record of the same shapes): the eager step; the recording call (the
first compiled call whose key has been seen once: call 2, or 3 when call 1 changes what the guards read);
the first replay (tier 1, which then generates the fused program); the steady replay.  Memory: the eager
step's allocator peak above what it holds between steps, against the compiled step's arena plus output
blocks (held between calls) and its allocator peak during a call; host peaks (tracemalloc: numpy's
temporaries) of one step each."""
import argparse
import os
import statistics
import sys
import time
import tracemalloc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import steps  # noqa: E402
import tgrad  # noqa: E402
from tgrad.device import device  # noqa: E402
from tgrad.memory.allocator import get_allocator  # noqa: E402


def _per_call(f, n, rounds=3):
    ts = []
    for _ in range(rounds):
        t = time.thread_time()
        for _ in range(n):
            f()
        ts.append((time.thread_time() - t) / n)
    return statistics.median(ts)


def _peaks(f, al):
    base = al.memory_allocated()
    al.reset_peak_memory_stats()
    tracemalloc.start()
    t0 = tracemalloc.get_traced_memory()[0]
    f()
    host = tracemalloc.get_traced_memory()[1] - t0
    tracemalloc.stop()
    return al.max_memory_allocated() - base, host


def measure(name):
    n = 10 if name == "c" else 40
    al = get_allocator(device("cpu"))
    eager = steps.build(name, tgrad)
    for _ in range(6):
        eager()
    t_eager = _per_call(eager, n)
    peak_eager, host_eager = _peaks(eager, al)
    step = steps.build(name, tgrad, compile=True)
    while True:
        t = time.thread_time()
        step()
        t_record = time.thread_time() - t
        run = next((e.run for e in step._cache.values() if e.run is not None), None)
        if run is not None:
            break
    t = time.thread_time()
    step()
    t_first = time.thread_time() - t
    t_replay = _per_call(step, 5 * n)
    peak_comp, host_comp = _peaks(step, al)
    return dict(eager=t_eager, record=t_record, first=t_first, replay=t_replay, peak_eager=peak_eager,
                host_eager=host_eager, arena=run.arena.nbytes + sum(run.blocks), peak_comp=peak_comp,
                host_comp=host_comp)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", default="a,b,d,e")
    args = ap.parse_args()
    print(f"{'step':5} {'eager ms':>9} {'record':>14} {'1st replay':>14} {'replay':>15} | {'eager peak B':>12} "
          f"{'arena+out B':>12} {'call peak B':>11} {'host eager':>10} {'host comp':>10}")
    for name in args.steps.split(","):
        r = measure(name)
        e = r["eager"]
        print(f"({name})  {e * 1e3:9.3f} {r['record'] * 1e3:8.2f} {r['record'] / e:4.1f}x {r['first'] * 1e3:8.2f} "
              f"{r['first'] / e:4.1f}x {r['replay'] * 1e3:8.3f} {r['replay'] / e:5.2f}x | {r['peak_eager']:12d} "
              f"{r['arena']:12d} {r['peak_comp']:11d} {r['host_eager']:10d} {r['host_comp']:10d}")
    print("times: CPU time of this thread; x: over the eager step")


if __name__ == "__main__":
    main()
