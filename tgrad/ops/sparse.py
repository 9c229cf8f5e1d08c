"""Sparse COO value ops: ordered segment sums over a sorted index (``kernels.sparse``).

The index bookkeeping (sort, segment heads and starts) is integer work done by ``tgrad._sparse`` on the
device; these entries are the differentiable part, on the values.  Inputs: ``perm`` (nnz,) the stable
sort order of the entries, ``start`` (nseg + 1,) where each segment starts in it, ``tgt`` (nseg,) the
output row of each segment, ``pos`` (nnz,) the output row each entry lands in (for the backward gathers).
Forward sums run in entry order within each output row (ATen's cpu order) on both devices.
"""
from .. import dtypes as D
from ..kernels import sparse as KS
from ..tensor import empty
from . import Op, call


def _rows(t):
    """``t`` as a contiguous (n, W) matrix (W = the product of the trailing dims)."""
    t = t.contiguous()
    return t.view(t._shape[0] if t.dim() else 1, -1)


def sparse_segments_forward(self, indices):
    """Runs of equal keys of ``self`` (nnz,) int64 after a stable sort: (perm (nnz,) the sort order, start
    (nseg + 1,) where each run starts in it, ukey (nseg,) each run's key, uidx (sdim, nseg) the index column
    ``indices`` (sdim, nnz) has at each run's first entry, pos (nnz,) each entry's run).  Reads nseg back."""
    n, dev = self.numel(), self.device
    skey, perm = call("sort", self, dim=0, stable=True)
    head = KS.segment_heads(skey, empty((n,), D.int64, dev))
    seg = call("cumsum", head, dim=0)
    nseg = int(seg[n - 1].item()) if n else 0
    if not 0 <= nseg <= n:      # (the AOT workload's dry run reads garbage here: it then runs this op for real)
        raise RuntimeError(f"sparse_segments: {nseg} runs among {n} keys")
    start, ukey = empty((nseg + 1,), D.int64, dev), empty((nseg,), D.int64, dev)
    uidx, pos = empty((indices._shape[0], nseg), D.int64, dev), empty((n,), D.int64, dev)
    if n:
        KS.segment_starts(skey, seg, perm, indices, start, ukey, uidx, pos)
    else:
        start.zero_()
    return perm, start, ukey, uidx, pos


def sparse_count_below_forward(self, *, n, right=False):
    """(n,) int64: out[i] = #{k : self[k] < i} (right: <= i) for a sorted int64 ``self`` (CSR row pointers)."""
    return KS.count_below(self.contiguous(), empty((n,), D.int64, self.device), right)


def _order(start, width):
    """Segments by decreasing length (a stable sort of the lengths, on the device) when the launch has more than
    one block of segments, else None (see ``kernels.sparse.segment_sum_kernel``)."""
    nseg = start.numel() - 1
    if nseg <= KS.segment_blocks(nseg, width, start._storage.launch_device)[0]:
        return None
    return call("sort", start[:-1] - start[1:], dim=0, stable=True)[1]


def sparse_coalesce_values_forward(values, perm, start, pos):
    """out[s] = values[perm[start[s]]] + ... + values[perm[start[s + 1] - 1]]: (nnz, *D) -> (nseg, *D)."""
    out = empty((start.numel() - 1,) + tuple(values._shape[1:]), values.dtype, values.device)
    o = _rows(out)
    KS.segment_sum("coalesce", _rows(values), perm, start, o, order=_order(start, o._shape[1]))
    return out


def sparse_coalesce_values_backward(ctx, grad):
    return grad.index_select(0, ctx.saved["pos"]), None, None, None


def sparse_scatter_add_forward(self, values, perm, start, tgt, pos, *, alpha=1):
    """self (R, *D) with, for each segment s in order, out[tgt[s]] += alpha * values[e] (e in segment s)."""
    out = self.contiguous().clone()
    v = values if values.dtype is self.dtype else values.to(self.dtype)
    o = _rows(out)
    KS.segment_sum("add", _rows(v), perm, start, o, tgt=tgt, alpha=alpha, order=_order(start, o._shape[1]),
                   fma=values.dim() > 1)     # (ATen: a hybrid tensor's rows by add_(alpha), one fma each)
    return out


def sparse_scatter_add_backward(ctx, grad):
    alpha = ctx.attrs.get("alpha", 1)
    gv = None
    if ctx.needs_input_grad[1]:
        gv = grad.index_select(0, ctx.saved["pos"])
        gv = gv if alpha == 1 else gv.mul(alpha)
    return grad, gv, None, None, None, None


def sparse_mm_forward(values, dense, perm, start, tgt, col, row, *, rows):
    """(rows x K sparse, entries (tgt-row, col, values)) @ dense (K, P) -> (rows, P), each row's entries in order;
    perm / tgt None: the identity (CSR: start = crow).  ``row``: each entry's row (for the backward)."""
    out = empty((rows, dense._shape[1]), dense.dtype, dense.device)
    out.zero_()
    v = values if values.dtype is dense.dtype else values.to(dense.dtype)
    d = dense if dense._strides[1] == 1 else dense.contiguous()
    start = start.contiguous()
    KS.segment_sum("mm", v.contiguous(), perm, start, out, tgt=tgt, col=col.contiguous(), dense=d, fma=True,
                   order=_order(start, out._shape[1]))  # (ATen: one axpy an entry)
    return out


def sparse_mm_backward(ctx, grad):
    values, dense, col, row = ctx.saved["values"], ctx.saved["dense"], ctx.saved["col"], ctx.saved["row"]
    gv = gd = None
    if ctx.needs_input_grad[0]:
        gv = (grad.index_select(0, row) * dense.index_select(0, col)).sum(1)
    if ctx.needs_input_grad[1]:
        gd = grad.new_zeros(dense.shape).index_add(0, col, grad.index_select(0, row) * values.unsqueeze(1))
    return gv, gd, None, None, None, None, None


SPARSE_SEGMENTS = Op("sparse_segments", sparse_segments_forward, inputs=("self", "indices"), outputs=5)
SPARSE_COUNT_BELOW = Op("sparse_count_below", sparse_count_below_forward)
SPARSE_COALESCE_VALUES = Op("sparse_coalesce_values", sparse_coalesce_values_forward, sparse_coalesce_values_backward,
                            "CoalesceBackward0", inputs=("self", "perm", "start", "pos"), save=("pos",))
SPARSE_SCATTER_ADD = Op("sparse_scatter_add", sparse_scatter_add_forward, sparse_scatter_add_backward,
                        "AddBackward0", inputs=("self", "values", "perm", "start", "tgt", "pos"), save=("pos",))
SPARSE_MM = Op("sparse_mm", sparse_mm_forward, sparse_mm_backward, "SparseAddmmBackward0",
               inputs=("values", "dense", "perm", "start", "tgt", "col", "row"), save=("values", "dense", "col", "row"))

ENTRIES = [SPARSE_SEGMENTS, SPARSE_COUNT_BELOW, SPARSE_COALESCE_VALUES, SPARSE_SCATTER_ADD, SPARSE_MM]
