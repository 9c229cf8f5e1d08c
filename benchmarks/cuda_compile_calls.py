"""Host work per training step on cuda: eager vs ``tgrad.compile``'s pre-packed launches vs its CUDA graph.

    python benchmarks/cuda_compile_calls.py [--steps a b c] [--calls 50] [--exec]

On the fake driver (tests/fakecuda) each mode runs ``--calls`` steps of benchmarks/steps.py after warm-up,
and reports per step: driver API calls (``fakecuda_call_count``), kernels launched one by one
(``fakecuda_launch_count``; a graph launch counts none) and host CPU time (``time.process_time``, the
queued work finished by a synchronize at the end included).  Kernel execution is off unless ``--exec``
(then the time is dominated by the cpu executor running the kernels): what is timed is the host's work to
issue a step.
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, HERE)


def measure(step, lib, calls):
    for _ in range(3):
        step()
    lib.cuCtxSynchronize()
    c0, l0, t0 = lib.fakecuda_call_count(), lib.fakecuda_launch_count(), time.process_time()
    for _ in range(calls):
        step()
    lib.cuCtxSynchronize()          # queued work done (with --exec: the kernels run) inside the timing
    t = time.process_time() - t0
    return ((lib.fakecuda_call_count() - c0 - 1) / calls, (lib.fakecuda_launch_count() - l0) / calls,
            t / calls * 1e6)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", nargs="*", default=["a", "b", "c"])
    p.add_argument("--calls", type=int, default=50)
    p.add_argument("--exec", action="store_true", help="run the kernels (the cpu executor) too")
    a = p.parse_args()
    import fakecuda
    lib = fakecuda.use(cc=90, execute=a.exec)
    import steps as S
    import tgrad
    tgrad.set_default_device("cuda")
    print(f"{'step':<5}{'mode':<10}{'driver calls':>14}{'launches':>10}{'host us':>10}")
    for name in a.steps:
        for mode in ("eager", "replay", "graph"):
            step = S.build(name, tgrad)
            if mode != "eager":
                step = tgrad.compile(step)
                step()
                step()          # recorded
                if mode == "replay":
                    for e in step._cache.values():
                        e.run.graphable = False
            calls, launches, us = measure(step, lib, a.calls)
            if mode != "eager":
                stats = [getattr(e.run, "stats", None) for e in step._cache.values()]
                assert all(s is not None for s in stats), "the step was not replayed"
            print(f"{name:<5}{mode:<10}{calls:>14.1f}{launches:>10.1f}{us:>10.0f}")


if __name__ == "__main__":
    main()
