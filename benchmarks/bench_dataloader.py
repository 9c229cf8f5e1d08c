"""DataLoader parallelism: one epoch of scikit-learn's digits in the main process, with 2 threads, with 2 processes.

    python benchmarks/bench_dataloader.py [--repeat 5]

Two datasets: the digits as a TensorDataset (per sample: tgrad indexing), and
the digits with a per-sample numpy augmentation (random shift + noise), the
usual shape of an image pipeline.  "2 threads" is a prototype (a thread pool
running the same fetch + collate per batch, in order); "2 processes" is
``DataLoader(num_workers=2)``.  Reported: best wall time of ``--repeat``
epochs, and the CPU seconds of the main process and of the worker processes.
On a machine shared with other jobs the wall times say little; the CPU split
does: with threads everything runs in the main process under one GIL, with
processes the main process only unpickles and the fetching is spread over the
workers.  This measurement chose worker processes for
``tgrad.utils.data.DataLoader`` (see its docstring).
"""
import argparse
import os
import resource
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from sklearn.datasets import load_digits

import tgrad
from tgrad.utils.data import DataLoader, Dataset, TensorDataset, default_collate
from tgrad.utils.data.dataloader import _Fetcher


class Augmented(Dataset):
    """8x8 digit shifted by up to one pixel, plus Gaussian noise (numpy, ~0.1 ms a sample)."""

    def __init__(self, X, y):
        self.X, self.y = X.reshape(-1, 8, 8), y

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        dx, dy = np.random.randint(-1, 2, 2)
        img = np.roll(np.roll(self.X[i], dx, 0), dy, 1)
        img = np.clip(img + np.random.normal(0, 0.05, img.shape), 0, 1).astype(np.float32)
        return img.reshape(64), int(self.y[i])


def epoch_main(ds, bs):
    for _ in DataLoader(ds, batch_size=bs, shuffle=True):
        pass


def epoch_processes(ds, bs):
    for _ in DataLoader(ds, batch_size=bs, shuffle=True, num_workers=2):
        pass


def epoch_threads(ds, bs):
    order = tgrad.randperm(len(ds)).tolist()
    batches = [order[i:i + bs] for i in range(0, len(order), bs)]
    fetcher = _Fetcher(ds, False, True, default_collate, False)
    with ThreadPoolExecutor(2) as pool:
        for _ in pool.map(fetcher.fetch, batches):
            pass


def cpu_seconds():
    """(main process, finished children) CPU seconds so far."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return np.array([me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=64)
    args = p.parse_args()
    X, y = load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32)
    datasets = {"TensorDataset": TensorDataset(tgrad.tensor(X), tgrad.tensor(y)), "augmented": Augmented(X, y)}
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus")
    for name, ds in datasets.items():
        for label, fn in (("main", epoch_main), ("2 threads", epoch_threads), ("2 processes", epoch_processes)):
            fn(ds, args.batch_size)
            walls, cpus = [], []
            for _ in range(args.repeat):
                c0, t0 = cpu_seconds(), time.perf_counter()
                fn(ds, args.batch_size)
                walls.append(time.perf_counter() - t0)
                cpus.append(cpu_seconds() - c0)
            main_cpu, worker_cpu = np.median(cpus, axis=0)
            print(f"{name:14s} {label:12s} wall {min(walls):.3f} s (median {sorted(walls)[len(walls) // 2]:.3f})"
                  f"  cpu: main {main_cpu:.3f} s, workers {worker_cpu:.3f} s", flush=True)


if __name__ == "__main__":
    main()
