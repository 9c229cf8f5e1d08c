"""Reference values for tests/ops/test_vector_norm_aten_order.py, printed by PyTorch 2.13 (CPU, AVX2 build): run
with a PyTorch venv (``/work/venv-torch/bin/python tests/data/make_vector_norm_ref.py``); writes
vector_norm_ref.npz next to this file.  The inputs are rebuilt by the test from the same numpy seed."""
import os

import numpy as np

KS = (3, 8, 9, 40, 100, 333, 1000, 4097, 20000)


def inputs():
    rng = np.random.default_rng(0)
    return {K: (rng.normal(size=(5, K)) * 3).astype(np.float32) for K in KS}


def main():
    import torch                                 # only here: the test imports inputs() above
    import torch.nn.functional as F
    out = {}
    for K, x in inputs().items():
        t = torch.tensor(x)
        out[f"rows{K}"] = torch.linalg.vector_norm(t, dim=1).numpy()
        out[f"full{K}"] = torch.linalg.vector_norm(t).numpy()
        if K <= 100:
            out[f"normalize{K}"] = F.normalize(t, dim=1).numpy()
    np.savez_compressed(os.path.join(os.path.dirname(os.path.abspath(__file__)), "vector_norm_ref.npz"), **out)


if __name__ == "__main__":
    main()
