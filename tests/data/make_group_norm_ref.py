"""Reference values for tests/ops/test_group_norm_aten_order.py: F.group_norm's float32 forward (and the weight /
bias gradients for the grad g of the same seed) printed by
PyTorch 2.13 (CPU, AVX2 build).  Run with a PyTorch venv (``/work/venv-torch/bin/python
tests/data/make_group_norm_ref.py``); writes group_norm_ref.npz next to this file.  The test rebuilds the inputs
from the same numpy seeds."""
import os

import numpy as np

CASES = [((2, 4, 3), 2), ((3, 6, 5, 5), 3), ((2, 8, 17), 4), ((4, 32, 33), 8), ((1, 6, 100), 2), ((2, 4), 2),
         ((2, 6, 9, 9), 1), ((1, 12, 70), 6)]
MODES = ("wb", "w", "b", "none")


def inputs(i, shape):
    rng = np.random.default_rng(200 + i)
    C = shape[1]
    return ((rng.normal(size=shape) * 2 + 0.5).astype(np.float32), rng.normal(size=C).astype(np.float32),
            rng.normal(size=C).astype(np.float32), rng.normal(size=shape).astype(np.float32))


def main():
    import torch                                 # only here: the test imports the inputs above
    import torch.nn.functional as F
    out = {}
    for i, (s, G) in enumerate(CASES):
        x, w, b, g = inputs(i, s)
        wt, bt = torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)
        F.group_norm(torch.tensor(x), G, wt, bt).backward(torch.tensor(g))
        out[f"dw{i}"], out[f"db{i}"] = wt.grad.numpy(), bt.grad.numpy()
        for mode in MODES:
            out[f"y{i}_{mode}"] = F.group_norm(torch.tensor(x), G, torch.tensor(w) if "w" in mode else None,
                                               torch.tensor(b) if "b" in mode else None).numpy()
    np.savez_compressed(os.path.join(os.path.dirname(os.path.abspath(__file__)), "group_norm_ref.npz"), **out)


if __name__ == "__main__":
    main()
