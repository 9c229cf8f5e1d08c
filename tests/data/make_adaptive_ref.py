"""Writes adaptive_ref.npz: a seeded torch.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 10], div_value=2.0,
head_bias=True) in float64 (its state dict, keys prefixed "sd/"), an input, targets, and PyTorch 2.13's forward
output/loss, the input gradient of the loss, log_prob and predict.
Run with the PyTorch venv: /work/venv-torch/bin/python tests/data/make_adaptive_ref.py"""
import os

import numpy as np
import torch

torch.manual_seed(0)
m = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 10], div_value=2.0, head_bias=True).double()
x = torch.randn(9, 16, dtype=torch.float64, requires_grad=True)
t = torch.tensor([0, 3, 4, 9, 10, 19, 2, 15, 7])
out, loss = m(x, t)
(gx,) = torch.autograd.grad(loss, x)
ref = {"sd/" + k: v.detach().numpy() for k, v in m.state_dict().items()}
ref.update(x=x.detach().numpy(), t=t.numpy(), output=out.detach().numpy(), loss=loss.detach().numpy(),
           gx=gx.numpy(), log_prob=m.log_prob(x).detach().numpy(), predict=m.predict(x).numpy(),
           out0=m(x[0], t[0]).output.detach().numpy())
np.savez(os.path.join(os.path.dirname(os.path.abspath(__file__)), "adaptive_ref.npz"), **ref)
