"""Sparse COO value ops: ordered segment sums over a sorted index (``kernels.sparse``).

The index bookkeeping (sort, segment heads and starts) is integer work done by ``tgrad._sparse`` on the
device; these entries are the differentiable part, on the values.  Inputs: ``perm`` (nnz,) the stable
sort order of the entries, ``start`` (nseg + 1,) where each segment starts in it, ``tgt`` (nseg,) the
output row of each segment, ``pos`` (nnz,) the output row each entry lands in (for the backward gathers).
Forward sums run in entry order within each output row (ATen's cpu order) on both devices.
"""
from .. import dtypes as D
from ..kernels import sparse as KS
from ..kernels.runtime import gpu_blocks, next_pow2
from ..tensor import empty, zeros
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


def on_gpu(device):
    """Whether the segment sums on ``device`` take sorted segments (GPU: segment_sum_kernel, one program a block of
    segments) rather than each entry's row alone (cpu: rounds, ``_rounds_sum``)."""
    return gpu_blocks(device.type if hasattr(device, "type") else device)


def _by_key(key, nkeys):
    """A stable counting sort of ``key`` (n,) int64 in [0, nkeys): (perm, size, end): perm lists the entries key by
    key, size[k] how many have key k, end its inclusive cumsum (atomic counters: the cpu's entry order)."""
    n, dev = key.numel(), key.device
    size = zeros((nkeys,), D.int64, dev)
    rank = KS.entry_rank(key, size, empty((n,), D.int64, dev))
    end = call("cumsum", size, dim=0)
    return KS.entry_place(key, rank, end, size, empty((n,), D.int64, dev)), size, end


def _rounds_sum(mode, src, tgt, out, *, start=None, **kw):
    """out (R, W) += the entries' sums on cpu (segment_tile_kernel), in the compute dtype; ``tgt`` (nnz,): each
    entry's row (``start``: the row pointers when the entries are listed row by row already).  The entries
    listed row by row in entry order, the rows by decreasing length, in tiles of ROUNDS entries of BLOCK_S rows:
    one launch for the rows longer than 8 tiles (few rows, long tiles), one for the others."""
    nnz, nrows = tgt.numel(), out._shape[0]
    if nnz == 0 or out.numel() == 0:
        return out
    width = out._shape[1] if out.dim() > 1 else 1
    if start is None:
        perm, lens, end = _by_key(tgt.contiguous(), nrows)
        start = end.sub_(lens)
    else:
        perm, lens = None, start[1:] - start[:-1]
        start = start.contiguous()
    longest = int(lens.max().item())
    if not 1 <= longest <= nnz:     # (the AOT workload's dry run reads garbage here: it then runs this for real)
        raise RuntimeError(f"sparse segment sums: a longest row of {longest} entries among {nnz}")
    order, _, by_len = _by_key(lens.neg().add_(longest), longest + 1)      # rows by decreasing length
    lanes = nrows - int(by_len[-1].item() - by_len[-2].item()) if longest else 0     # (the empty rows last)
    rounds = max(1, min(16, next_pow2(max(1, nnz // max(lanes, 1)))))     # ~ the mean row length
    heavy = int(by_len[longest - 8 * rounds - 1].item()) if longest > 8 * rounds else 0   # rows longer than 8 tiles
    ct = _COMPUTE.get(out.dtype.name, D.int64)
    buf = out if out.dtype is ct else out.to(ct)
    for lo, hi, r in ((0, heavy, 32), (heavy, lanes, rounds)):
        if hi == lo:
            continue
        top = lens[order[lo]].item()
        # a program costs ~20 us, an element ~40 ns: blocks near sqrt(2000 * nnz / (longest * width)) rows balance
        # the programs against the padding of each block's shorter rows
        bs = max(1, min(next_pow2(hi - lo), max(1, 65536 // (next_pow2(width) * r)),
                        next_pow2(max(1, int((2000 * nnz / (top * width)) ** 0.5)))))
        part = order[lo:hi]
        ntiles = lens.index_select(0, part[::bs].contiguous())     # each lane block's longest row
        ntiles = ntiles.add_(r - 1).div_(r, rounding_mode="floor")
        tend = call("cumsum", ntiles, dim=0)
        blk = call("sparse_count_below", tend, n=int(tend[-1].item()), right=True)
        KS.segment_tiles(mode, src, perm, start, lens, part, blk, tend.sub_(ntiles), hi - lo, buf, r, bs, **kw)
    return out if buf is out else out.copy_(buf)


_COMPUTE = {"float64": D.float64, "float32": D.float32, "float16": D.float32, "bfloat16": D.float32}


def sparse_coalesce_values_forward(values, perm, start, pos):
    """out[s] = values[perm[start[s]]] + ... + values[perm[start[s + 1] - 1]]: (nnz, *D) -> (nseg, *D)."""
    out = empty((start.numel() - 1,) + tuple(values._shape[1:]), values.dtype, values.device)
    o = _rows(out)
    if on_gpu(out.device):
        KS.segment_sum("coalesce", _rows(values), perm, start, o, order=_order(start, o._shape[1]))
    else:
        _rounds_sum("coalesce", _rows(values), pos, o)
    return out


def sparse_coalesce_values_backward(ctx, grad):
    return grad.index_select(0, ctx.saved["pos"]), None, None, None


def sparse_scatter_add_forward(self, values, perm, start, tgt, pos, *, alpha=1):
    """self (R, *D) with, for each segment s in order, out[tgt[s]] += alpha * values[e] (e in segment s)."""
    out = self.contiguous().clone()
    v = values if values.dtype is self.dtype else values.to(self.dtype)
    o = _rows(out)
    fma = values.dim() > 1      # (ATen: a hybrid tensor's rows by add_(alpha), one fma each)
    if on_gpu(out.device):
        KS.segment_sum("add", _rows(v), perm, start, o, tgt=tgt, alpha=alpha, fma=fma,
                       order=_order(start, o._shape[1]))
    else:
        _rounds_sum("add", _rows(v), pos, o, alpha=alpha, fma=fma)
    return out


def sparse_scatter_add_backward(ctx, grad):
    alpha = ctx.attrs.get("alpha", 1)
    gv = None
    if ctx.needs_input_grad[1]:
        gv = grad.index_select(0, ctx.saved["pos"])
        gv = gv if alpha == 1 else gv.mul(alpha)
    return grad, gv, None, None, None, None


def sparse_mm_forward(values, dense, perm, start, tgt, col, row, *, rows, fma=True):
    """(rows x K sparse, entries (tgt-row, col, values)) @ dense (K, P) -> (rows, P), each row's entries in order;
    perm / tgt None: the identity (CSR: start = crow).  ``row``: each entry's row (for the backward).  ``fma``:
    each += one fma (ATen's axpy of sparse @ dense), else a rounded product added (its dense @ sparse loop)."""
    out = empty((rows, dense._shape[1]), dense.dtype, dense.device)
    out.zero_()
    v = values if values.dtype is dense.dtype else values.to(dense.dtype)
    d = dense if dense._strides[1] == 1 else dense.contiguous()
    if on_gpu(out.device):
        start = start.contiguous()
        KS.segment_sum("mm", v.contiguous(), perm, start, out, tgt=tgt, col=col.contiguous(), dense=d, fma=fma,
                       order=_order(start, out._shape[1]))
    else:
        _rounds_sum("mm", v.contiguous(), row, out, start=start if perm is None and tgt is None else None,
                    col=col.contiguous(), dense=d, fma=fma)
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

SPARSE_CSR_MM = Op("sparse_csr_mm", sparse_mm_forward, sparse_mm_backward, "MmBackward0",      # (PyTorch's name)
                   inputs=("values", "dense", "perm", "start", "tgt", "col", "row"),
                   save=("values", "dense", "col", "row"))

ENTRIES = [SPARSE_SEGMENTS, SPARSE_COUNT_BELOW, SPARSE_COALESCE_VALUES, SPARSE_SCATTER_ADD, SPARSE_MM, SPARSE_CSR_MM]
