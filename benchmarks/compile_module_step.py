"""The training step with ``tgrad.compile(model)`` (the Module compiled, loss / backward / optimizer step outside:
tgrad/_compile/aot.py) vs tgrad eager vs the whole step compiled (``tgrad.compile(step)``) vs PyTorch CPU eager, for
the CNN example's model (examples/train_cnn.py: batch 32 of 8x8 digits, AdamW, cross-entropy) and the GPT example's
(examples/train_gpt.py at its default size: 4 layers, 4 heads, 64 channels, block 64, batch 16, dropout 0.1,
AdamW, clip_grad_norm_ 1.0), at 1 thread.

    python benchmarks/compile_module_step.py [--model cnn gpt] [--rounds 3] [--steps 10] [--torch-python PATH]

One run alternates the processes: in each round a tgrad worker (which times its three variants step by step in
turn, each on its own copy of the model, so all see the same load) then a PyTorch worker.  Figures are medians
over all rounds of wall and process CPU time per step, and their ratios (the machine is shared: compare ratios).
The tgrad process never imports torch.
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VARIANTS = ("eager", "module", "step")      # tgrad: eager, tgrad.compile(model), tgrad.compile(step)


def _gpt_class(torch_side):
    """examples/train_gpt.py's GPT class (the script imported with its argv, ``main`` not run)."""
    argv, sys.argv = sys.argv, ["train_gpt.py"] + (["--torch"] if torch_side else [])
    try:
        spec = importlib.util.spec_from_file_location("_train_gpt", os.path.join(ROOT, "examples", "train_gpt.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.argv = argv
    return mod.GPT


def build(torch, name, variant, torch_side=False):
    """``step(i)`` of model ``name`` ("cnn" or "gpt") in ``variant`` (one of VARIANTS) on batch i % 8."""
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    if name == "cnn":       # examples/train_cnn.py's make_model
        model = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Dropout(0.25), nn.Linear(32 * 2 * 2, 10))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-4)
        xs = [torch.tensor(((rng.integers(0, 17, (32, 1, 8, 8)) / 16.0 - 0.3) / 0.4).astype(np.float32))
              for _ in range(8)]
        ys = [torch.tensor(rng.integers(0, 10, 32)) for _ in range(8)]
        call = torch.compile(model) if variant == "module" else model

        def train(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(call(x), y)
            loss.backward()
            opt.step()
            return loss
    else:
        model = _gpt_class(torch_side)(65, 64, 4, 4, 64, 0.1)
        params = list(model.parameters())
        opt = torch.optim.AdamW([{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
                                 {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
                                lr=3e-3, betas=(0.9, 0.99))
        data = rng.integers(0, 65, (8, 16, 65))
        xs = [torch.tensor(d[:, :-1].copy()) for d in data]
        ys = [torch.tensor(d[:, 1:].copy()) for d in data]
        call = torch.compile(model) if variant == "module" else model

        def train(x, y):
            _, loss = call(x, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            return loss
    model.train()
    if variant == "step":
        train = torch.compile(train)
    return lambda i: train(xs[i % 8], ys[i % 8]).item()


def worker(side, name, steps, warmup):
    if side == "torch":
        import torch
        torch.set_num_threads(1)
        variants = {"torch": build(torch, name, "eager", torch_side=True)}
    else:
        sys.path.insert(0, ROOT)
        import tgrad
        variants = {v: build(tgrad, name, v) for v in VARIANTS}
    for step in variants.values():
        for i in range(warmup):
            step(i)
    out = {v: {"wall": [], "cpu": []} for v in variants}
    for i in range(steps):
        for v, step in variants.items():        # in turn: each step of a variant next to the others'
            t0, c0 = time.perf_counter(), time.process_time()
            step(warmup + i)
            out[v]["wall"].append(time.perf_counter() - t0)
            out[v]["cpu"].append(time.process_time() - c0)
    if side != "torch":
        assert "torch" not in sys.modules
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", nargs="+", choices=("cnn", "gpt"), default=["cnn", "gpt"])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=4)
    p.add_argument("--torch-python", default=os.environ.get("TGRAD_TORCH_PYTHON", "/work/venv-torch/bin/python"))
    p.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker:
        print(json.dumps(worker(a.worker[0], a.worker[1], a.steps, a.warmup)))
        return
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONPATH=ROOT)
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    for name in a.model:
        res = {}
        for _ in range(a.rounds):
            for side, py in (("tgrad", sys.executable), ("torch", a.torch_python)):
                if not os.path.exists(py):
                    continue
                r = subprocess.run([py, __file__, "--worker", side, name, "--steps", str(a.steps), "--warmup",
                                    str(a.warmup)], env=env, check=True, capture_output=True, text=True)
                for v, t in json.loads(r.stdout.strip().splitlines()[-1]).items():
                    for k in ("wall", "cpu"):
                        res.setdefault(v, {}).setdefault(k, []).extend(t[k])
        med = {v: {k: float(np.median(t[k])) * 1e3 for k in t} for v, t in res.items()}
        print(f"{name}: median ms per step over {a.rounds} rounds x {a.steps} steps (wall / process cpu)")
        for v in med:
            label = {"eager": "tgrad eager", "module": "tgrad.compile(model)", "step": "tgrad.compile(step)",
                     "torch": "PyTorch eager"}[v]
            print(f"  {label:<22} {med[v]['wall']:9.2f} / {med[v]['cpu']:9.2f}")
        pairs = [("module", "eager"), ("module", "step"), ("module", "torch"), ("eager", "torch"), ("step", "torch")]
        for x, y in pairs:
            if x in med and y in med:
                print(f"  {x} / {y}: {med[x]['wall'] / med[y]['wall']:.2f}x wall, "
                      f"{med[x]['cpu'] / med[y]['cpu']:.2f}x cpu")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
