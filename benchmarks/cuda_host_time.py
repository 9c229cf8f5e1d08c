"""Host time per op on the cuda path, measured on the fake driver with kernel execution off.

    python benchmarks/cuda_host_time.py [--n 1000] [--repeat 20000] [--torch-python PY]

The fake driver (tests/fakecuda, ``FAKECUDA_EXEC=0``) checks and queues each launch but runs no kernel,
so what is timed is tgrad's host work for an op on cuda: dispatch, allocation, the launch path (context,
stream, the site's compiled kernel, Triton's C launcher) and the driver call.  CPU time of this
process (``time.process_time``, best of 5) so other processes on a shared machine count less.
``--torch-python``: the same ops timed the same way in PyTorch on cpu (1 thread, kernel runs) in that
python, printed beside (``python -m tgrad.bench --host-time`` runs this script).
"""
import argparse
import os
import subprocess
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


def ops(lib, dev, n, repeat):
    """Host time (us) of ``x + y``, ``x * 2.0`` and ``w.sum(1)`` in ``lib`` (tgrad or torch) on ``dev``."""
    x, y = lib.ones(n, device=dev), lib.ones(n, device=dev)
    w = lib.ones(n, 8, device=dev)
    return (best(lambda: x + y, repeat) * 1e6, best(lambda: x * 2.0, repeat) * 1e6,
            best(lambda: w.sum(1), repeat // 2) * 1e6)


def line(name, t, note):
    return f"{name:>11}: add {t[0]:6.1f} us   mul {t[1]:6.1f} us   sum(1) {t[2]:6.1f} us   ({note})"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--repeat", type=int, default=20000)
    p.add_argument("--torch-python", default=None, help="also time PyTorch cpu in this python (same run)")
    p.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.torch_worker:      # in the torch python: one line of three floats
        import torch
        torch.set_num_threads(1)
        print(*ops(torch, "cpu", a.n, a.repeat))
        return
    import fakecuda
    fakecuda.use(cc=90, execute=False)
    import tgrad
    print(line("tgrad cuda", ops(tgrad, "cuda", a.n, a.repeat), "fake driver, no kernel runs"), flush=True)
    print(line("tgrad cpu", ops(tgrad, "cpu", a.n, a.repeat), "kernel runs"), flush=True)
    if a.torch_python:
        r = subprocess.run([a.torch_python, os.path.abspath(__file__), "--torch-worker", "--n", str(a.n),
                            "--repeat", str(a.repeat)], capture_output=True, text=True,
                           env=dict(os.environ, OMP_NUM_THREADS="1"))
        if r.returncode:
            print(f"  torch cpu: failed ({r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode})")
        else:
            print(line("torch cpu", [float(v) for v in r.stdout.split()], "PyTorch eager, 1 thread, kernel runs"))


if __name__ == "__main__":
    main()
