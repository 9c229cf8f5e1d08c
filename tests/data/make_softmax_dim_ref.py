"""Reference values for tests/ops/test_softmax_dim_aten_order.py, printed by PyTorch 2.13 (CPU, AVX2 build, 2
threads): run with a PyTorch venv (``/work/venv-torch/bin/python tests/data/make_softmax_dim_ref.py``); writes
softmax_dim_ref.npz next to this file.  The inputs are rebuilt by the test from the same numpy seed."""
import os

import numpy as np

# (shape, dim): inner rows shorter than a vector, vectors and tails, a thread chunk ending inside an inner row
CASES = [((3, 5, 4), 1), ((2, 7, 9), 1), ((4, 3, 17), 1), ((2, 33, 8), 1), ((5, 6), 0), ((3, 4, 5, 6), 1),
         ((2, 10, 40), 1), ((3, 6, 13), 1), ((5, 3, 7, 3), 2), ((4, 9, 2, 11), 0)]


def inputs():
    rng = np.random.default_rng(0)
    return [(rng.normal(size=s) * 3).astype(np.float32) for s, _ in CASES]


def main():
    import torch                                 # only here: the test imports inputs() above
    torch.set_num_threads(2)
    out = {}
    for i, (x, (_, dim)) in enumerate(zip(inputs(), CASES)):
        out[f"softmax{i}"] = torch.softmax(torch.tensor(x), dim=dim).numpy()
        out[f"log_softmax{i}"] = torch.log_softmax(torch.tensor(x), dim=dim).numpy()
    np.savez_compressed(os.path.join(os.path.dirname(os.path.abspath(__file__)), "softmax_dim_ref.npz"), **out)


if __name__ == "__main__":
    main()
