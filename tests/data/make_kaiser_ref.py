"""Writes kaiser_ref.npz: PyTorch 2.13's torch.kaiser_window(n, periodic, beta) (float32) and float64 windows.
Run with the PyTorch venv: /work/venv-torch/bin/python tests/data/make_kaiser_ref.py"""
import os

import numpy as np
import torch

out = {}
for n in (0, 1, 2, 5, 16, 33, 100):
    for p in (True, False):
        for beta in (12.0, 0.5, 5.0):
            out[f"{n}_{p}_{beta}"] = torch.kaiser_window(n, p, beta).numpy()
    out[f"{n}_f64"] = torch.kaiser_window(n, dtype=torch.float64).numpy()
np.savez(os.path.join(os.path.dirname(os.path.abspath(__file__)), "kaiser_ref.npz"), **out)
