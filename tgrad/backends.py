"""``tgrad.backends``: global switches read by the kernels (PyTorch's ``torch.backends`` names).

``tgrad.backends.cuda.matmul.allow_tf32`` (default False): fp32 matmuls on
cuda may use TF32 tensor cores (~1e-3 relative error) instead of exact fp32.
Read at each launch, passed to the kernel as a constexpr.  The interpreter
(``cpu``) always computes exact fp32.
"""


class _MatmulFlags:
    def __init__(self):
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True


class _CudaBackend:
    def __init__(self):
        self.matmul = _MatmulFlags()


cuda = _CudaBackend()
