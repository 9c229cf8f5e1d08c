"""Time per small eager op on cpu (issue 18): host work plus a 1,000-element kernel, tgrad beside PyTorch.

    python benchmarks/cpu_host_time.py [--n 1000] [--repeat 3000] [--torch-python PY]

The ops of a training step's eager tail: ``x + y``, ``x * 2.0`` (a Python number), ``w * x`` (records
MulBackward0), ``x.sub_(y)``, ``p.sub_(0.1 * p.grad)`` under ``no_grad`` (seed 003's update), ``g.zero_()``.
CPU time of this process (``time.process_time``, best of 7) so other processes on a shared machine count
less; run it against two trees one after the other (``PYTHONPATH=<tree>``) to compare them.
``--torch-python``: the same ops in PyTorch (1 thread) in that python, printed beside.
"""
import argparse
import os
import subprocess
import sys
import time

NAMES = ("add", "mul_scalar", "mul_grad", "sub_", "nograd_update", "zero_")


def best(fn, repeat):
    for _ in range(200):
        fn()
    out = []
    for _ in range(7):
        t0 = time.process_time()
        for _ in range(repeat):
            fn()
        out.append((time.process_time() - t0) / repeat)
    return min(out) * 1e6


def ops(lib, n, repeat):
    """us per op of NAMES in ``lib`` (tgrad or torch)."""
    x, y = lib.ones(n), lib.ones(n)
    w = lib.ones(n, requires_grad=True)
    p = lib.ones(n, requires_grad=True)
    p.grad = lib.ones(n)

    def update():
        with lib.no_grad():
            p.sub_(0.1 * p.grad)
    fns = (lambda: x + y, lambda: x * 2.0, lambda: w * x, lambda: x.sub_(y), update, lambda: y.zero_())
    return [best(f, repeat) for f in fns]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--repeat", type=int, default=3000)
    p.add_argument("--torch-python", default=None, help="also time PyTorch cpu in this python")
    p.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.torch_worker:
        import torch
        torch.set_num_threads(1)
        print(*ops(torch, a.n, a.repeat))
        return
    import tgrad
    print("us per op  " + "  ".join(f"{k:>13}" for k in NAMES))
    print("tgrad      " + "  ".join(f"{v:13.1f}" for v in ops(tgrad, a.n, a.repeat)), flush=True)
    if a.torch_python:
        r = subprocess.run([a.torch_python, os.path.abspath(__file__), "--torch-worker", "--n", str(a.n),
                            "--repeat", str(a.repeat)], capture_output=True, text=True,
                           env=dict(os.environ, OMP_NUM_THREADS="1"))
        if r.returncode:
            print(f"torch      failed: {r.stderr.strip()[-300:]}")
        else:
            print("torch      " + "  ".join(f"{float(v):13.1f}" for v in r.stdout.split()))


if __name__ == "__main__":
    sys.exit(main())
