"""Makes tests/data/layer_norm_bf16_params.json: PyTorch 2.13 cpu layer_norm weight/bias gradients of a bfloat16
input with float32 weight and bias (ATen's mixed type: bf16 buffers per thread), at 1 and 2 threads.
Run with a python that has torch: python layer_norm_bf16_params.py > layer_norm_bf16_params.json"""
import json

import torch

M, K = 13, 20
x = (torch.arange(M * K, dtype=torch.float32).reshape(M, K) * 0.37).sin().mul(3).add(0.5).bfloat16()
dy = (torch.arange(M * K, dtype=torch.float32).reshape(M, K) * 0.91).cos().bfloat16()
w = torch.linspace(0.5, 1.5, K)
b = torch.linspace(-1, 1, K)
out = {}
for threads in (1, 2):
    torch.set_num_threads(threads)
    ww, bb = w.clone().requires_grad_(), b.clone().requires_grad_()
    torch.nn.functional.layer_norm(x, (K,), ww, bb).backward(dy)
    out[str(threads)] = {"dw": ww.grad.tolist(), "db": bb.grad.tolist()}
print(json.dumps(out))
