"""Writes lowrank_mvn_ref.npz: PyTorch 2.13's seeded LowRankMultivariateNormal draws (manual_seed(0), then
sample((5,)) and rsample()) for fixed float64 parameters.
Run with the PyTorch venv: /work/venv-torch/bin/python tests/data/make_lowrank_mvn_ref.py"""
import os

import numpy as np
import torch

rng = np.random.default_rng(0)
loc, W, d = rng.standard_normal((2, 4)), rng.standard_normal((4, 2)), rng.uniform(0.5, 2, 4)
p = torch.distributions.LowRankMultivariateNormal(torch.tensor(loc), torch.tensor(W), torch.tensor(d))
torch.manual_seed(0)
s5 = p.sample((5,)).numpy()
s1 = p.rsample().numpy()
np.savez(os.path.join(os.path.dirname(os.path.abspath(__file__)), "lowrank_mvn_ref.npz"), loc=loc, W=W, d=d,
         sample5=s5, rsample=s1)
