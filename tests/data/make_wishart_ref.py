"""Writes wishart_ref.npz: PyTorch 2.13's Wishart log_prob / entropy / mean / variance / mode / precision for
three parameterizations, and its seeded draws (manual_seed(0): sample(), rsample((3,)) with df = [4, 6]).
Run with the PyTorch venv: /work/venv-torch/bin/python tests/data/make_wishart_ref.py"""
import os
import warnings

import numpy as np
import torch

rng = np.random.default_rng(0)
A = rng.standard_normal((3, 3))
S = A @ A.T + 3 * np.eye(3)
B = rng.standard_normal((2, 3, 3))
X = B @ B.transpose(0, 2, 1) + 2 * np.eye(3)
out = {"S": S, "X": X}
for name in ("covariance_matrix", "precision_matrix", "scale_tril"):
    w = torch.distributions.Wishart(torch.tensor(5.5), **{name: torch.tensor(np.linalg.cholesky(S) if name ==
                                                                               "scale_tril" else S)})
    for what in ("log_prob", "entropy", "mean", "variance", "mode", "precision_matrix"):
        v = w.log_prob(torch.tensor(X)) if what == "log_prob" else w.entropy() if what == "entropy" else \
            getattr(w, what)
        out[f"{name}/{what}"] = v.numpy()
w = torch.distributions.Wishart(torch.tensor([4.0, 6.0]), covariance_matrix=torch.tensor(S))
torch.manual_seed(0)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    out["sample"] = w.sample().numpy()
    out["rsample3"] = w.rsample((3,)).numpy()
np.savez(os.path.join(os.path.dirname(os.path.abspath(__file__)), "wishart_ref.npz"), **out)
