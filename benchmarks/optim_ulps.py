"""How far tgrad's optimizer steps are from PyTorch's CPU steps, in float32 ulps (the README's figures).

    python benchmarks/optim_ulps.py [--torch-python PATH]

Each optimizer takes 6 steps on the same 4096 float32 parameters and gradients in tgrad and in PyTorch
(run in a subprocess by ``--torch-python``, default: this interpreter); printed per optimizer: the largest
ulp distance of the parameters after steps 1..8, the share of elements that differ after step 6, and the
largest relative difference.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

STEPS, N = 8, 4096
CONFIGS = {
    "SGD": ("SGD", dict(lr=0.1)),
    "SGD nesterov+wd": ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-2)),
    "Adam": ("Adam", dict(lr=1e-3)),
    "AdamW": ("AdamW", dict(lr=1e-3)),
    "Adam amsgrad": ("Adam", dict(lr=1e-3, amsgrad=True)),
    "RMSprop": ("RMSprop", dict(lr=1e-2)),
    "RMSprop centered+momentum": ("RMSprop", dict(lr=1e-2, momentum=0.9, centered=True)),
    "Adagrad": ("Adagrad", dict(lr=1e-2)),
    "Adadelta": ("Adadelta", dict(weight_decay=1e-2)),
    "Adamax": ("Adamax", dict()),
    "NAdam": ("NAdam", dict(weight_decay=1e-2)),
    "NAdam decoupled": ("NAdam", dict(weight_decay=1e-2, decoupled_weight_decay=True)),
    "RAdam": ("RAdam", dict()),
    "RAdam decoupled wd": ("RAdam", dict(weight_decay=1e-2, decoupled_weight_decay=True)),
}


def run(lib, path):
    """Steps every config in ``lib`` (a torch-like module); saves the parameters after each step to ``path``."""
    rng = np.random.default_rng(0)
    p0 = rng.standard_normal(N).astype(np.float32)
    grads = [rng.standard_normal(N).astype(np.float32) for _ in range(STEPS)]
    out = {}
    for name, (cls, kw) in CONFIGS.items():
        p = lib.tensor(p0.copy(), requires_grad=True)
        opt = getattr(lib.optim, cls)([p], **kw)
        for k in range(STEPS):
            p.grad = lib.tensor(grads[k].copy())
            opt.step()
            out[f"{name}/{k}"] = p.detach().numpy().copy()
    np.savez(path, **out)


def ulps(x, y):
    """Distance in float32 ulps (the integers of an order-preserving map of the bits)."""
    def key(a):
        i = a.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(2 ** 31) - i, i)
    return np.abs(key(x) - key(y))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--torch-python", default=sys.executable, help="a Python that can import torch")
    a = ap.parse_args()
    import tgrad
    with tempfile.TemporaryDirectory() as d:
        mine, ref = os.path.join(d, "tgrad.npz"), os.path.join(d, "torch.npz")
        run(tgrad, mine)
        code = f"import sys, torch; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); " \
               f"import optim_ulps; optim_ulps.run(torch, {ref!r})"
        subprocess.run([a.torch_python, "-c", code], check=True)
        A, B = np.load(mine), np.load(ref)
        print(f"{'optimizer':28s} {'max ulp after steps 1..8':32s} {'differ (step 8)':>15s} {'max rel diff':>13s}")
        for name in CONFIGS:
            u = [int(ulps(A[f"{name}/{k}"], B[f"{name}/{k}"]).max()) for k in range(STEPS)]
            x, y = A[f"{name}/{STEPS - 1}"], B[f"{name}/{STEPS - 1}"]
            share = float((x != y).mean())
            rel = float(np.max(np.abs(x.astype(np.float64) - y) / np.maximum(np.abs(y.astype(np.float64)), 1e-30)))
            print(f"{name:28s} {str(u):32s} {share:15.2%} {rel:13.1e}")


if __name__ == "__main__":
    main()
