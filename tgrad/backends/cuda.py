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


# scaled_dot_product_attention's backends (``tgrad.nn.attention.sdpa_kernel`` sets them for a block): tgrad has
# the fused flash-attention kernel (FLASH_ATTENTION) and PyTorch's math path (MATH); the memory-efficient and
# cuDNN kernels are PyTorch's CUDA libraries, which tgrad does not have (their flags are kept, and ignored).
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def flash_sdp_enabled():
    return _sdp["flash"]


def enable_flash_sdp(enabled):
    _sdp["flash"] = bool(enabled)


def mem_efficient_sdp_enabled():
    return _sdp["mem_efficient"]


def enable_mem_efficient_sdp(enabled):
    _sdp["mem_efficient"] = bool(enabled)


def math_sdp_enabled():
    return _sdp["math"]


def enable_math_sdp(enabled):
    _sdp["math"] = bool(enabled)


def cudnn_sdp_enabled():
    return _sdp["cudnn"]


def enable_cudnn_sdp(enabled):
    _sdp["cudnn"] = bool(enabled)
