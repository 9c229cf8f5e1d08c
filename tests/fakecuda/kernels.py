"""Small kernels for the fake driver's own tests."""
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, n_elements, alpha, BLOCK: tl.constexpr):
    """y = alpha * x over n_elements.  x, y: (n_elements,)"""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(y_ptr + offs, x * alpha, mask=mask)
