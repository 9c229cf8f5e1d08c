"""Data-parallel speed on this machine: DDP step time and all_reduce bandwidth.

    python benchmarks/bench_distributed.py          # starts 1 and 2 ranks itself, prints a table
    python benchmarks/bench_distributed.py --steps 30 --size-mib 64

step: the MLP 784 -> 256 -> 10 (batch 128 per rank, Adam, cross-entropy) forward + backward + step,
median over ``--steps`` after 5 warm-up steps: one process without DDP; 2 independent processes without
communication (what sharing the cores costs); 2 ranks with DDP, gradients in one bucket (all-reduce
after backward: no overlap) and in small buckets (the first all-reduce starts while backward still
computes the first layer's gradient: overlap).
all_reduce: float32 tensors of ``--size-mib`` MiB, tgrad.distributed.all_reduce vs mpi4py's Allreduce
on a numpy array (both in place, SUM), median of ``--reps``; bus bandwidth = 2 (n - 1) / n * bytes / time.
"""
import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--size-mib", type=float, default=64)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--rank-mode", choices=["step", "nosync", "bandwidth"], help=argparse.SUPPRESS)
    return p.parse_args(argv)


def _median_step(model, opt, x, y, steps, F):
    times = []
    for i in range(5 + steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    times = sorted(times[5:])
    return times[len(times) // 2]


def rank_step(args, ddp_mode):
    import tgrad as torch
    import tgrad.distributed as dist
    from tgrad import nn
    from tgrad.nn import functional as F
    from tgrad.nn.parallel import DistributedDataParallel as DDP
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    x, y = torch.randn(128, 784), torch.randint(0, 10, (128,))
    results = {}
    if ddp_mode == "nosync":
        results["no DDP"] = _median_step(net, torch.optim.Adam(net.parameters()), x, y, args.steps, F)
    else:
        dist.init_process_group("mpi")
        # one bucket: 1 MiB holds all 0.8 MB of gradients; small: 0.005 MiB closes a bucket after the output layer
        for name, cap in (("DDP, 1 bucket (no overlap)", None), ("DDP, 2 buckets (overlap)", 0.005)):
            model = DDP(net, bucket_cap_mb=cap)
            dist.barrier()
            results[name] = _median_step(model, torch.optim.Adam(model.parameters()), x, y, args.steps, F)
            for h in model._hooks:
                h.remove()
        if dist.get_rank() != 0:
            results = {}
    for k, v in results.items():
        print(f"RESULT step {k}: {v * 1e3:.2f} ms", flush=True)


def rank_bandwidth(args):
    import numpy as np
    import tgrad as torch
    import tgrad.distributed as dist
    dist.init_process_group("mpi")
    from mpi4py import MPI
    n = int(args.size_mib * 2 ** 20) // 4
    t = torch.ones(n)
    a = np.ones(n, np.float32)
    comm = MPI.COMM_WORLD
    out = {"tgrad.distributed.all_reduce": [], "mpi4py Allreduce": []}
    for _ in range(args.reps + 1):
        comm.Barrier()
        t0 = time.perf_counter()
        dist.all_reduce(t)
        out["tgrad.distributed.all_reduce"].append(time.perf_counter() - t0)
        comm.Barrier()
        t0 = time.perf_counter()
        comm.Allreduce(MPI.IN_PLACE, a)
        out["mpi4py Allreduce"].append(time.perf_counter() - t0)
    world = dist.get_world_size()
    if dist.get_rank() == 0:
        for k, v in out.items():
            med = sorted(v[1:])[len(v[1:]) // 2]
            bus = 2 * (world - 1) / world * n * 4 / med / 1e9
            print(f"RESULT all_reduce {args.size_mib:g} MiB {k}: {med * 1e3:.1f} ms, bus bandwidth {bus:.2f} GB/s",
                  flush=True)


def _launch(nproc, mode, args, plain=False):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), OPENBLAS_NUM_THREADS="1")
    me = [os.path.abspath(__file__), "--rank-mode", mode, "--steps", str(args.steps), "--size-mib",
          str(args.size_mib), "--reps", str(args.reps)]
    if plain:       # independent processes, no MPI
        procs = [subprocess.Popen([sys.executable] + me, env=env, stdout=subprocess.PIPE, text=True)
                 for _ in range(nproc)]
        outs = [p.communicate()[0] for p in procs]
        lines = [line for o in outs for line in o.splitlines() if line.startswith("RESULT")]
        return [f"{line} (x{nproc} processes at once)" if nproc > 1 else line for line in lines[:1]]
    cmd = [sys.executable, "-m", "tgrad.distributed.run", "--nproc-per-node", str(nproc)] + me
    out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True, check=True).stdout
    return [f"{line} ({nproc} ranks)" for line in out.splitlines() if line.startswith("RESULT")]


def main():
    args = parse_args()
    if args.rank_mode == "bandwidth":
        return rank_bandwidth(args)
    if args.rank_mode:
        return rank_step(args, args.rank_mode)
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    lines = _launch(1, "nosync", args, plain=True) + _launch(2, "nosync", args, plain=True)
    lines += _launch(2, "step", args) + _launch(2, "bandwidth", args)
    for line in lines:
        print(line[len("RESULT "):])


if __name__ == "__main__":
    main()
