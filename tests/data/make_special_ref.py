"""Writes special_ref.npz: PyTorch 2.13's i0/i0e/i1/i1e (float32 and float64), igamma/igammac, frexp and
nextafter on fixed inputs, and mpmath's (40 digits) regularized incomplete gamma where ATen's own float64 is off
(its large-a asymptotic series multiplies by float pi: ~1e-9 relative) or its float32 is (float32 sums: ~1e-5).
Run with the PyTorch venv: /work/venv-torch/bin/python tests/data/make_special_ref.py"""
import os

import mpmath as mp
import numpy as np
import torch

mp.mp.dps = 40
rng = np.random.default_rng(0)
out = {}
x = np.concatenate([rng.uniform(-20, 20, 40), [0.0, -0.0, 1e-30, 7.99, 8.0, 8.01, 50.0, -100.0, 700.0, np.inf,
                                              -np.inf, np.nan]])
out["x"] = x
for dt in ("float32", "float64"):
    t = torch.tensor(x, dtype=getattr(torch, dt))
    out["i0_" + dt] = torch.i0(t).numpy()
    out["i0e_" + dt] = torch.special.i0e(t).numpy()
    out["i1_" + dt] = torch.special.i1(t).numpy()
    out["i1e_" + dt] = torch.special.i1e(t).numpy()
a = np.concatenate([rng.uniform(0.01, 3, 20), rng.uniform(3, 60, 20), [250.0, 1000.0, 1e4, 1e-3, 0.3]])
ax = np.concatenate([rng.uniform(0.01, 30, 20), rng.uniform(1, 80, 20), [260.0, 990.0, 1.01e4, 2.0, 1e-4]])
out["a"], out["ax"] = a, ax
for dt in ("float32", "float64"):
    A, X = torch.tensor(a, dtype=getattr(torch, dt)), torch.tensor(ax, dtype=getattr(torch, dt))
    out["igamma_" + dt] = torch.igamma(A, X).numpy()
    out["igammac_" + dt] = torch.igammac(A, X).numpy()
    # the exact values of the same (rounded) arguments
    out["igamma_mp_" + dt] = np.array([float(mp.gammainc(mp.mpf(float(u)), 0, mp.mpf(float(v)), regularized=True))
                                       for u, v in zip(A.tolist(), X.tolist())])
    out["igammac_mp_" + dt] = np.array([float(mp.gammainc(mp.mpf(float(u)), mp.mpf(float(v)), mp.inf,
                                                          regularized=True)) for u, v in zip(A.tolist(), X.tolist())])
f = np.array([0.0, -0.0, 1.0, -3.0, 1e-40, 1e-310, np.inf, np.nan, 3e38, 0.75, -1e-300, 6.5e4])
out["f"] = f
for dt in ("float32", "float64"):
    m, e = torch.frexp(torch.tensor(f, dtype=getattr(torch, dt)))
    out["frexp_m_" + dt], out["frexp_e_" + dt] = m.numpy(), e.numpy()
ny = np.array([2.0, 0.0, -1.0, 1.0, 0.0, -5.0, 0.0, 1.0, 0.0, 1.0, 0.0, np.inf])
out["ny"] = ny
for dt in ("float32", "float64", "bfloat16"):
    r = torch.nextafter(torch.tensor(f, dtype=getattr(torch, dt)), torch.tensor(ny, dtype=getattr(torch, dt)))
    out["nextafter_" + dt] = r.float().numpy() if dt == "bfloat16" else r.numpy()
np.savez(os.path.join(os.path.dirname(os.path.abspath(__file__)), "special_ref.npz"), **out)
