"""Helpers the row-wise families share (softmax, loss, norm, nn, sort): a tensor seen as (OUTER, K, INNER)
around one dim, contiguous copies, PyTorch's dtype check and size string."""
from ..kernels import _geometry as G
from ..kernels import elementwise as KE
from ..tensor import empty


def float_check(x, name):
    if not x.dtype.is_floating_point:
        raise RuntimeError(f'"{name}" not implemented for \'{x.dtype.legacy_name}\'')


def contig(t):
    return t if t.is_contiguous() else KE.copy(t, empty(t.shape, t.dtype, t.device))


def opt_contig(t):
    return None if t is None else contig(t)


def size_str(t):
    return f"tgrad.Size({list(t.shape)})"


def rows3(t, dim):
    """(tensor, OUTER, K, INNER, (stride_o, stride_k, stride_i)): t seen as (OUTER, K, INNER) around ``dim``.

    The dims before / after ``dim`` must each merge into one stride; otherwise a contiguous copy is used.
    """
    shape, st = list(t.shape) or [1], list(t.stride()) or [1]
    outer = inner = 1
    for s in shape[:dim]:
        outer *= s
    for s in shape[dim + 1:]:
        inner *= s
    so = merged_stride(shape[:dim], st[:dim])
    si = merged_stride(shape[dim + 1:], st[dim + 1:])
    if so is None or si is None:
        c = empty(t.shape, t.dtype, t.device)
        KE.copy(t, c)
        return c, outer, shape[dim], inner, (shape[dim] * inner, inner, 1)
    return t, outer, shape[dim], inner, (so, st[dim], si)


def merged_stride(shape, strides):
    if not shape:
        return 0
    cs, cst = G.collapse(shape, [strides])
    return cst[0][0] if len(cs) == 1 else None


def contig3(K, inner):
    return (K * inner, inner, 1)
