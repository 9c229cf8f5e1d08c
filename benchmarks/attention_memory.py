"""Peak memory of one attention forward + backward with the GPU's block sizes, for growing T.

    python benchmarks/attention_memory.py [--dry] [--heads 4] [--dim 64] [--lengths 256 512 1024]

Runs ``F.scaled_dot_product_attention(q, k, v, is_causal=True)`` and its backward on ``cpu`` with
``FORCE_GPU_BLOCKS`` (the cuda tiles: 64 x 32 for float32, one head per program) and reports the
allocator's peak (``max_memory_allocated``) above the inputs: no T x T buffer, so it grows like T
(q, k, v, out, their gradients, lse/delta rows).  ``--dry``: launches are recorded, not executed (the
allocations are the same; the interpreter with GPU tiles takes a while at T = 1024).
"""
import argparse

import tgrad
import tgrad.nn.functional as F
from tgrad.kernels.runtime import launcher


def peak(T, heads, dim, dtype):
    q, k, v = (tgrad.randn(1, heads, T, dim, dtype=dtype, requires_grad=True) for _ in range(3))
    go = tgrad.randn(1, heads, T, dim, dtype=dtype)
    tgrad.reset_peak_memory_stats("cpu")
    base = tgrad.memory_allocated("cpu")
    F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(go)
    return tgrad.max_memory_allocated("cpu") - base


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lengths", type=int, nargs="+", default=[256, 512, 1024])
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--dry", action="store_true")
    a = p.parse_args()
    launcher.FORCE_GPU_BLOCKS = True
    if a.dry:
        launcher.RECORD, launcher.DRY_RUN = launcher.SpecRecord(), True
    print(f"causal attention fwd+bwd, 1 x {a.heads} heads x T x {a.dim}, float32, cuda block sizes")
    print(f"{'T':>6} {'peak above inputs':>18} {'/ T':>10} {'T x T fp32 scores, all heads':>30}")
    for T in a.lengths:
        b = peak(T, a.heads, a.dim, tgrad.float32)
        print(f"{T:>6} {b / 2**10:>14.1f} KiB {b / T:>10.1f} {a.heads * T * T * 4 / 2**10:>26.1f} KiB")


if __name__ == "__main__":
    main()
