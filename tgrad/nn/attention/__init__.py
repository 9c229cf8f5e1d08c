"""``tgrad.nn.attention``: ``SDPBackend`` and ``sdpa_kernel``, which choose the kernels
``F.scaled_dot_product_attention`` may use in a block (PyTorch's flags in ``tgrad.backends.cuda``).

tgrad has two: the fused flash-attention kernel (``FLASH_ATTENTION``, the default) and PyTorch's math path
(``MATH``: matmul, softmax, matmul, as ATen's ``_scaled_dot_product_attention_math``).  A block allowing neither
raises PyTorch's "No viable backend" error."""
import contextlib
from enum import IntEnum

from ...backends import cuda as _cuda

__all__ = ["SDPBackend", "sdpa_kernel"]


class SDPBackend(IntEnum):
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_FLAGS = {SDPBackend.MATH: "math", SDPBackend.FLASH_ATTENTION: "flash",
          SDPBackend.EFFICIENT_ATTENTION: "mem_efficient", SDPBackend.CUDNN_ATTENTION: "cudnn"}


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Within the block only ``backends`` (one SDPBackend or a list) may run scaled_dot_product_attention."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend instances")
    backends = set([backends] if isinstance(backends, SDPBackend) else backends)
    saved = dict(_cuda._sdp)
    try:
        for b, flag in _FLAGS.items():
            _cuda._sdp[flag] = b in backends
        yield {}
    finally:
        _cuda._sdp.update(saved)
