"""Host time per op on the cuda path, measured on the fake driver with kernel execution off.

    python benchmarks/cuda_host_time.py [--n 1000] [--repeat 20000]

The fake driver (tests/fakecuda, ``FAKECUDA_EXEC=0``) checks and queues each launch but runs no kernel,
so what is timed is tgrad's host work for an op on cuda: dispatch, allocation, the launch path (context,
stream, the site's compiled kernel, Triton's C launcher) and the driver call.  CPU time of this
process (``time.process_time``, best of 5) so other processes on a shared machine count less.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))


def best(fn, repeat):
    for _ in range(200):
        fn()
    out = []
    for _ in range(5):
        t0 = time.process_time()
        for _ in range(repeat):
            fn()
        out.append((time.process_time() - t0) / repeat)
    return min(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--repeat", type=int, default=20000)
    a = p.parse_args()
    import fakecuda
    fakecuda.use(cc=90, execute=False)
    import tgrad
    for dev in ("cuda", "cpu"):
        x, y = tgrad.ones(a.n, device=dev), tgrad.ones(a.n, device=dev)
        w = tgrad.ones(a.n, 8, device=dev)
        print(f"{dev:>4}: add {best(lambda: x + y, a.repeat) * 1e6:6.1f} us   "
              f"mul {best(lambda: x * 2.0, a.repeat) * 1e6:6.1f} us   "
              f"sum(1) {best(lambda: w.sum(1), a.repeat // 2) * 1e6:6.1f} us"
              + ("   (no kernel runs)" if dev == "cuda" else "   (kernel runs)"))


if __name__ == "__main__":
    main()
