"""Shape-op kernels that are not plain copies: tril/triu (a masked strided copy).

cat/stack/flip/roll/repeat are strided copies (``elementwise.copy``) between
views; only the triangular masks need their own kernel.
"""
import triton
import triton.language as tl

from . import _geometry as G
from .runtime import cdiv, elementwise_block, launch
from ._lang import kptr, strided_offset


@triton.jit
def tri_kernel(x_ptr, out_ptr, n_elements, R, C, k,
               d1, d2, d3, d4, d5,
               sx0, sx1, sx2, sx3, sx4, sx5,
               so0, so1, so2, so3, so4, so5,
               X_ND: tl.constexpr, O_ND: tl.constexpr, UPPER: tl.constexpr, BLOCK: tl.constexpr):
    """out[..., r, c] = x[..., r, c] if c - r <= k (tril; >= k for triu) else 0; x and out are (..., R, C)."""
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n_elements
    c = i % C
    r = (i // C) % R
    x = tl.load(x_ptr + strided_offset(i, d1, d2, d3, d4, d5, sx0, sx1, sx2, sx3, sx4, sx5, X_ND), mask=mask)
    if UPPER:
        keep = c - r >= k
    else:
        keep = c - r <= k
    v = tl.where(keep, x, tl.zeros_like(x))
    tl.store(out_ptr + strided_offset(i, d1, d2, d3, d4, d5, so0, so1, so2, so3, so4, so5, O_ND), v, mask=mask)


def tri(x, out, k, upper):
    """out = tril(x, k) (or triu when ``upper``); x and out share the shape (..., R, C), any strides."""
    n = out.numel()
    if n == 0:
        return out
    dev = out.device.type
    sizes, per = G.launch_geometry(tuple(out.shape), [list(x.stride()), list(out.stride())])
    block = elementwise_block(n, dev)
    args = [kptr(x), kptr(out), n, out.shape[-2], out.shape[-1], int(k)] + sizes + per[0][0] + per[1][0]
    launch(tri_kernel, (cdiv(n, block),), dev, args,
           {"X_ND": per[0][1], "O_ND": per[1][1], "UPPER": bool(upper), "BLOCK": block})
    return out
