"""``tgrad.backends.cuda``.

``matmul.allow_tf32`` (default False): fp32 matmuls on cuda may use TF32 tensor cores (~1e-3 relative
error) instead of exact fp32; read at each launch, passed to the kernel as a constexpr.  The interpreter
(``cpu``) always computes exact fp32.  ``allow_fp16/bf16_reduced_precision_reduction`` allow PyTorch's
cuBLAS to reduce in low precision; tgrad's matmuls always accumulate in fp32, which these flags permit.
"""


class _MatmulFlags:
    def __init__(self):
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True


matmul = _MatmulFlags()


def is_built():
    """True: tgrad's cuda path needs no build step (Triton compiles kernels at run time)."""
    return True
