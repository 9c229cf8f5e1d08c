"""The CNN example's training step (examples/train_cnn.py's model, batch 32 of 8x8 digits, AdamW,
cross-entropy) in tgrad eager and compiled (``tgrad.compile`` of the whole step) vs PyTorch CPU eager at 1 and 2
threads, in one run (targets of issue 14: eager <= 3x, compiled <= 1x).

    python benchmarks/cnn_step.py [--steps 50] [--torch-python PATH] [--threads 1 2] [--before DIR] [--model mnist]

``--model mnist``: the pytorch/examples MNIST CNN instead (conv 1->32 -> relu -> conv 32->64 -> relu -> max_pool 2
-> dropout -> linear 9216->128 -> relu -> dropout -> linear -> log_softmax, NLL, Adadelta), batch 16 of 28x28.

``--before DIR``: also time the tgrad tree in DIR (e.g. a checkout of main) in the same run.

Each measurement runs in its own worker process (this script with ``--worker``), one after the
other; the ratio is tgrad's median over PyTorch's better median.  At 1 thread the
medians of process CPU time per step are compared too: on a shared machine wall time counts the time other
processes hold the core, CPU time does not.
The tgrad process never imports torch.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from steps import cnn_model  # noqa: E402  (examples/train_cnn.py's model)


def build(torch, batch=32, model="digits", compiled=False):
    """``step()`` of the CNN of examples/train_cnn.py on fixed digits-shaped data (or of the MNIST example);
    ``compiled``: the step (zero_grad, forward, backward, optimizer step) under ``torch.compile``, its loss
    read with ``.item()`` outside."""
    nn = torch.nn
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    if model == "mnist":
        return _loss_item(torch, _mnist(torch, rng), compiled)
    model = cnn_model(torch)
    x = torch.tensor(((rng.integers(0, 17, (batch, 1, 8, 8)) / 16.0 - 0.3) / 0.4).astype(np.float32))
    y = torch.tensor(rng.integers(0, 10, batch))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-4)
    model.train()

    def step():
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        return loss
    return _loss_item(torch, step, compiled)


def _loss_item(torch, step, compiled):
    if compiled:
        step = torch.compile(step)
    return lambda: step().item()


def _mnist(torch, rng, batch=16):
    nn, F = torch.nn, torch.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2 = nn.Conv2d(1, 32, 3, 1), nn.Conv2d(32, 64, 3, 1)
            self.dropout1, self.dropout2 = nn.Dropout(0.25), nn.Dropout(0.5)
            self.fc1, self.fc2 = nn.Linear(9216, 128), nn.Linear(128, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
            x = F.relu(self.fc1(torch.flatten(self.dropout1(x), 1)))
            return F.log_softmax(self.fc2(self.dropout2(x)), dim=1)
    model = Net()
    x = torch.tensor(((rng.random((batch, 1, 28, 28)) - 0.1307) / 0.3081).astype(np.float32))
    y = torch.tensor(rng.integers(0, 10, batch))
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    model.train()

    def step():
        optimizer.zero_grad()
        loss = F.nll_loss(model(x), y)
        loss.backward()
        optimizer.step()
        return loss
    return step


def worker(impl, steps, warmup, threads, root, model="digits"):
    if impl == "torch":
        import torch
        torch.set_num_threads(threads)
    else:
        sys.path.insert(0, root)
        import tgrad as torch
    step = build(torch, model=model, compiled=impl == "compiled")
    for _ in range(warmup):
        step()
    times, cpu = [], []
    for _ in range(steps):
        t0, c0 = time.perf_counter(), time.process_time()
        step()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return {"times": times, "cpu": cpu}


def find_torch_python(given):
    for p in (given, os.environ.get("TGRAD_TORCH_PYTHON"), "/work/venv-torch/bin/python"):
        if p and os.path.exists(p):
            return p
    return None


def run(python, impl, steps, warmup, threads, root=ROOT, model="digits"):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads), PYTHONPATH=root)
    out = subprocess.run([python, __file__, "--worker", impl, "--steps", str(steps), "--warmup", str(warmup),
                          "--threads", str(threads), "--root", root, "--model", model], env=env, check=True, capture_output=True,
                         text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--torch-python")
    p.add_argument("--before", help="another tgrad tree to time in the same run (e.g. /work/main)")
    p.add_argument("--model", choices=("digits", "mnist"), default="digits")
    p.add_argument("--worker", choices=("tgrad", "compiled", "torch"), help=argparse.SUPPRESS)
    p.add_argument("--root", default=ROOT, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker:
        print(json.dumps(worker(a.worker, a.steps, a.warmup, a.threads[0], a.root, a.model)))
        return
    tpy = find_torch_python(a.torch_python)
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    med, cpu = {}, {}
    sides = [("tgrad", "tgrad", sys.executable, ROOT), ("compiled", "compiled", sys.executable, ROOT),
             ("torch", "torch", tpy, None)]
    if a.before:
        sides.insert(1, ("before", "tgrad", sys.executable, os.path.abspath(a.before)))
    for th in a.threads:
        for label, impl, py, root in sides:
            if py is None:
                continue
            r = run(py, impl, a.steps, a.warmup, th, root or ROOT, a.model)
            t = r["times"]
            med[label, th] = float(np.median(t)) * 1e3
            cpu[label, th] = float(np.median(r["cpu"])) * 1e3
            print(f"{label:<6} {th} thread(s): median {med[label, th]:8.3f} ms, min {min(t) * 1e3:8.3f} ms, "
                  f"cpu time median {cpu[label, th]:8.3f} ms ({a.steps} steps)")
    best = {label: min(v for (i, _), v in med.items() if i == label) for label, *_ in sides if (label, a.threads[0]) in med}
    if "torch" in best:
        for label in ("before", "tgrad", "compiled"):
            if label in best:
                kind = "compiled" if label == "compiled" else "eager"
                print(f"CNN step ({label}): tgrad {kind} {best[label]:.3f} ms / PyTorch eager {best['torch']:.3f} ms "
                      f"(better thread count) = {best[label] / best['torch']:.1f}x")
            if (label, 1) in cpu and ("torch", 1) in cpu:
                print(f"CNN step ({label}), 1 thread, cpu time per step (robust to other processes on the machine): "
                      f"{cpu[label, 1]:.3f} ms / {cpu['torch', 1]:.3f} ms = {cpu[label, 1] / cpu['torch', 1]:.1f}x")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
