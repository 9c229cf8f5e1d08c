"""Reference values for tests/ops/test_layer_norm_param_aten_order.py: layer_norm's weight and bias gradients
printed by PyTorch 2.13 (CPU, AVX2 build) at 1 and 2 threads (the threads split the rows).  Run with a PyTorch
venv (``/work/venv-torch/bin/python tests/data/make_layer_norm_param_ref.py``); writes layer_norm_param_ref.npz
next to this file.  The test rebuilds the inputs from the same numpy seeds."""
import os

import numpy as np

SHAPES = [(1, 5), (2, 8), (3, 7), (5, 16), (9, 17), (4, 3, 33), (33, 100), (64, 24), (7, 520), (2, 2, 2, 13)]


def inputs(i, shape):
    rng = np.random.default_rng(100 + i)
    x = (rng.normal(size=shape) * 2 - 0.5).astype(np.float32)
    return x, rng.normal(size=shape).astype(np.float32)


def main():
    import torch                                 # only here: the test imports the inputs above
    import torch.nn.functional as F
    out = {}
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for i, s in enumerate(SHAPES):
            x, g = inputs(i, s)
            ns = s[-2:] if len(s) == 4 else s[-1:]
            w, b = torch.ones(ns, requires_grad=True), torch.zeros(ns, requires_grad=True)
            F.layer_norm(torch.tensor(x), ns, w, b).backward(torch.tensor(g))
            out[f"dw{i}_{threads}"], out[f"db{i}_{threads}"] = w.grad.numpy(), b.grad.numpy()
    np.savez_compressed(os.path.join(os.path.dirname(os.path.abspath(__file__)), "layer_norm_param_ref.npz"), **out)


if __name__ == "__main__":
    main()
