"""Writes lkj_ref.npz: PyTorch 2.13's seeded LKJCholesky draws (manual_seed(0); LKJCholesky(4, [0.5, 2.0]) in
float64, sample((3,))) and their log_prob.
Run with the PyTorch venv: /work/venv-torch/bin/python tests/data/make_lkj_ref.py"""
import os

import numpy as np
import torch

torch.manual_seed(0)
d = torch.distributions.LKJCholesky(4, torch.tensor([0.5, 2.0], dtype=torch.float64))
s = d.sample((3,))
np.savez(os.path.join(os.path.dirname(os.path.abspath(__file__)), "lkj_ref.npz"), sample=s.numpy(),
         log_prob=d.log_prob(s).numpy())
