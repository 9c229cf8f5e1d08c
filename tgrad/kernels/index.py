"""Index kernels: one gather and one scatter over strided views with an int64 index tensor.

Every indexing op is one of these two launches over an iteration shape:

    gather:  out[o(i)] = src[s(i) + idx[x(i)] * scale]
    scatter: out[o(i) + idx[x(i)] * scale] (=|+=) src[s(i)]

where ``s/x/o`` are strided offsets (stride 0 on dims an operand does not
walk).  ``gather(dim)`` zeroes src's stride on ``dim`` and uses it as
``scale``; ``index_select`` walks a 1-D index with stride 0 off ``dim``;
advanced indexing gathers from precomputed element offsets (``scale`` 1).
Launchers never check index values: the ops check them on the host first.
"""
import triton
import triton.language as tl

from . import _geometry as G
from . import elementwise as KE
from .runtime import cdiv, elementwise_block, launch
from ._lang import cast_store, kptr, strided_offset


@triton.jit
def gather_kernel(src_ptr, idx_ptr, out_ptr, n_elements, scale,
                  d1, d2, d3, d4, d5,
                  ss0, ss1, ss2, ss3, ss4, ss5,
                  si0, si1, si2, si3, si4, si5,
                  so0, so1, so2, so3, so4, so5,
                  S_ND: tl.constexpr, I_ND: tl.constexpr, O_ND: tl.constexpr, BLOCK: tl.constexpr):
    """out[o(i)] = src[s(i) + idx[x(i)] * scale]; idx is int64, out has src's dtype."""
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n_elements
    xo = strided_offset(i, d1, d2, d3, d4, d5, si0, si1, si2, si3, si4, si5, I_ND)
    j = tl.load(idx_ptr + xo, mask=mask, other=0).to(tl.int64)
    so = strided_offset(i, d1, d2, d3, d4, d5, ss0, ss1, ss2, ss3, ss4, ss5, S_ND) + j * scale
    v = tl.load(src_ptr + so, mask=mask)
    oo = strided_offset(i, d1, d2, d3, d4, d5, so0, so1, so2, so3, so4, so5, O_ND)
    tl.store(out_ptr + oo, v, mask=mask)


@triton.jit
def scatter_kernel(src_ptr, idx_ptr, out_ptr, n_elements, scale,
                   d1, d2, d3, d4, d5,
                   ss0, ss1, ss2, ss3, ss4, ss5,
                   si0, si1, si2, si3, si4, si5,
                   so0, so1, so2, so3, so4, so5,
                   S_ND: tl.constexpr, I_ND: tl.constexpr, O_ND: tl.constexpr,
                   ACCUMULATE: tl.constexpr, BLOCK: tl.constexpr):
    """out[o(i) + idx[x(i)] * scale] = src[s(i)] (ACCUMULATE: += with atomics; out is fp32/fp64/int)."""
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n_elements
    xo = strided_offset(i, d1, d2, d3, d4, d5, si0, si1, si2, si3, si4, si5, I_ND)
    j = tl.load(idx_ptr + xo, mask=mask, other=0).to(tl.int64)
    v = tl.load(src_ptr + strided_offset(i, d1, d2, d3, d4, d5, ss0, ss1, ss2, ss3, ss4, ss5, S_ND), mask=mask)
    oo = strided_offset(i, d1, d2, d3, d4, d5, so0, so1, so2, so3, so4, so5, O_ND) + j * scale
    if ACCUMULATE:
        tl.atomic_add(out_ptr + oo, v.to(out_ptr.dtype.element_ty), mask=mask)
    else:
        cast_store(out_ptr + oo, v, mask)


@triton.jit
def masked_fill_fn(m, v, x, p0, p1):
    """masked_fill as a ternary map: v where m else x."""
    return tl.where(m != 0, v, x)


def _launch(kernel, shape, src, s_strides, idx, x_strides, out, o_strides, scale, extra):
    result = out
    if out.dtype._kind == 3:    # complex: move the (real, imaginary) float pairs, a trailing dim of 2
        shape, scale = tuple(shape) + (2,), 2 * scale
        s_strides = [2 * v for v in s_strides] + [1]
        o_strides = [2 * v for v in o_strides] + [1]
        x_strides = list(x_strides) + [0]
        src, out = KE.FloatView(src), KE.FloatView(out)
    n = 1
    for d in shape:
        n *= d
    if n == 0:
        return result
    dev = out._storage.launch_device
    sizes, per = G.launch_geometry(tuple(shape), [list(s_strides), list(x_strides), list(o_strides)])
    args = [kptr(src), kptr(idx), kptr(out), n, int(scale)] + sizes
    for st, _ in per:
        args += st
    block = elementwise_block(n, dev)
    cexpr = {"S_ND": per[0][1], "I_ND": per[1][1], "O_ND": per[2][1], "BLOCK": block}
    cexpr.update(extra)
    launch(kernel, (cdiv(n, block),), dev, args, cexpr)
    return result


def gather(shape, src, s_strides, idx, x_strides, out, o_strides, scale):
    """out[o(i)] = src[s(i) + idx[x(i)] * scale] over ``shape`` (strides per operand, in elements)."""
    return _launch(gather_kernel, shape, src, s_strides, idx, x_strides, out, o_strides, scale, {})


def scatter(shape, src, s_strides, idx, x_strides, out, o_strides, scale, accumulate=False):
    """out[o(i) + idx[x(i)] * scale] = src[s(i)] (or += when ``accumulate``: out must be fp32/fp64/int32/int64)."""
    return _launch(scatter_kernel, shape, src, s_strides, idx, x_strides, out, o_strides, scale,
                   {"ACCUMULATE": bool(accumulate)})
