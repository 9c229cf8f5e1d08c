"""Reference values for tests/ops/test_norm_backward_aten_order.py, printed by PyTorch 2.13 (CPU, AVX2 build, 2
threads): run with a PyTorch venv (``/work/venv-torch/bin/python tests/data/make_norm_backward_ref.py``); writes
norm_backward_ref.npz next to this file.  The inputs are rebuilt by the test from the same numpy seeds."""
import os

import numpy as np

BN_SHAPES = [(4, 3), (7, 5), (16, 9), (33, 12), (24, 20), (50, 7), (3, 17), (2, 4, 5), (4, 3, 7), (8, 6, 16),
             (5, 4, 33), (3, 2, 4, 4), (6, 8, 5, 5), (2, 3, 10, 11), (9, 2, 3)]
LN_KS = [3, 5, 8, 13, 16, 21, 37, 64, 100, 200, 520]


def bn_inputs(i, s):
    rng = np.random.default_rng(i)
    C = s[1]
    x = (rng.normal(size=s) * 2 + 0.5).astype(np.float32)
    g = rng.normal(size=s).astype(np.float32)
    w, b = rng.normal(size=C).astype(np.float32), rng.normal(size=C).astype(np.float32)
    rm = rng.normal(size=C).astype(np.float32) * 0.3
    rv = (rng.random(C) + 0.5).astype(np.float32)
    return x, g, w, b, rm, rv


def ln_inputs(K, M=3):
    rng = np.random.default_rng(K)
    x = (rng.normal(size=(M, K)) * 2 - 0.5).astype(np.float32)
    g = rng.normal(size=(M, K)).astype(np.float32)
    return x, g, rng.normal(size=K).astype(np.float32), rng.normal(size=K).astype(np.float32)


def main():
    import torch                                 # only here: the test imports the inputs above
    import torch.nn.functional as F
    torch.set_num_threads(2)
    out = {}
    for i, s in enumerate(BN_SHAPES):
        x, g, w, b, rm, rv = bn_inputs(i, s)
        for training in (True, False):
            for hw in (True, False):
                xt = torch.tensor(x, requires_grad=True)
                wt = torch.tensor(w, requires_grad=True) if hw else None
                bt = torch.tensor(b, requires_grad=True) if hw else None
                F.batch_norm(xt, torch.tensor(rm), torch.tensor(rv), wt, bt, training=training).backward(torch.tensor(g))
                k = f"bn{i}_{int(training)}{int(hw)}"
                if training:                      # eval: dx = dy rstd w, one rounding order
                    out["dx_" + k] = xt.grad.numpy()
                if hw:
                    out["dw_" + k], out["db_" + k] = wt.grad.numpy(), bt.grad.numpy()
    for K in LN_KS:
        x, g, w, b = ln_inputs(K)
        for mode in ("wb", "w", "b", "none"):
            xt = torch.tensor(x, requires_grad=True)
            wt = torch.tensor(w, requires_grad=True) if "w" in mode else None
            bt = torch.tensor(b, requires_grad=True) if "b" in mode else None
            y = F.layer_norm(xt, (K,), wt, bt)
            y.backward(torch.tensor(g))
            k = f"ln{K}_{mode}"
            out["dx_" + k] = xt.grad.numpy()
            if mode == "b":                       # the other forwards: tests/ops/test_norm_aten_order.py
                out["y_" + k] = y.detach().numpy()
            if wt is not None:
                out["dw_" + k] = wt.grad.numpy()
            if bt is not None:
                out["db_" + k] = bt.grad.numpy()
    np.savez_compressed(os.path.join(os.path.dirname(os.path.abspath(__file__)), "norm_backward_ref.npz"), **out)


if __name__ == "__main__":
    main()
