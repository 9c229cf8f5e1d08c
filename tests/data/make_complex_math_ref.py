"""PyTorch 2.13's complex64 element-wise math on 64 points (tests/ops/test_complex.py::test_math_complex64_near_pytorch).
Run with /work/venv-torch/bin/python tests/data/make_complex_math_ref.py (writes complex_math_ref.npz)."""
import os

import numpy as np
import torch

NAMES = ["log", "log10", "log1p", "tan", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "sqrt",
         "reciprocal", "square", "exp", "sin", "cos", "sinh", "cosh", "sigmoid", "expm1", "rsqrt"]

r = np.random.default_rng(0)
z = ((r.standard_normal(64) + 1j * r.standard_normal(64)) * 1.5).astype(np.complex64)
out = {"z": z, **{n: getattr(torch.tensor(z), n)().numpy() for n in NAMES}}
np.savez(os.path.join(os.path.dirname(__file__), "complex_math_ref.npz"), **out)
