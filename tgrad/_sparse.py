"""Sparse tensors: COO (``layout=tgrad.sparse_coo``): ``indices`` (sparse_dim, nnz) int64 and ``values``
(nnz, *dense_shape); CSR (``layout=tgrad.sparse_csr``, CSC its transpose): ``crow_indices`` (*B, nrows + 1),
``col_indices`` (*B, nnz) and ``values`` (*B, nnz, *dense) of a (*B, nrows, ncols, *dense) tensor (B the batch
dims, every batch the same nnz; the batches are worked as one 2-D CSR of B * nrows rows).  The parts are
ordinary dense tensors the allocator owns; the sparse tensor holds them and its full ``size``.

A ``SparseTensor`` / ``SparseCsrTensor`` is a ``Tensor`` (isinstance holds, as in PyTorch) whose storage is a
placeholder: an op without a sparse rule that reaches a kernel gets PyTorch's "Could not run 'aten::<op>' with
arguments from the 'SparseCPU' backend" error.  The index work (sort, segments, row pointers) and the ordered
segment sums (coalesce, to_dense, dense + sparse, sparse @ dense) are op-table rows with Triton kernels
(``ops/sparse.py``, ``kernels/sparse.py``) on the tensor's device; the values carry autograd through them.
"""
import sys

import numpy as np

from . import dtypes as D
from . import tensor as _tensor
from .device import canonical
from .kernels._geometry import contiguous_strides
from .kernels.runtime import gpu_blocks
from ._tensor_str import _add_suffixes, _tensor_str, _to_work_array
from .tensor import Size, Tensor, _init_from, from_host, full, zeros


def _arange(n, device):
    """0, 1, ..., n - 1 int64 on ``device`` (a host constant, as tgrad.arange: batch and row offsets)."""
    return from_host(np.arange(n, dtype=np.int64), D.int64, device)


def cat(ts, dim):
    return _tensor._call("cat", *ts, dim=dim)       # (the dispatcher, through Tensor's one upward seam)


class layout:
    """``tgrad.strided`` (dense tensors) or ``tgrad.sparse_coo``."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "tgrad." + self.name

    def __reduce__(self):
        return self.name


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
LAYOUTS = {"strided": strided, "sparse_coo": sparse_coo, "sparse_csr": sparse_csr, "sparse_csc": sparse_csc,
           "sparse_bsr": sparse_bsr, "sparse_bsc": sparse_bsc}


def _device(device):
    return canonical(device)


def _backend(device, kind="Sparse"):
    return kind + ("CPU" if device.type == "cpu" else "CUDA")


def _running_op():
    """The name of the op the dispatcher is running on this thread (read off the stack: only on the error path)."""
    f = sys._getframe(1)
    while f is not None:
        if f.f_globals.get("__name__") == "tgrad.autograd.dispatch" and "name" in f.f_locals:
            return f.f_locals["name"]
        f = f.f_back
    return None


class _NoStorage:
    """A sparse tensor's ``_storage``: it has a device and nothing a kernel could read."""

    _owner = None
    _block = None

    def __init__(self, device, kind="Sparse"):
        self.device = device
        self.kind = kind

    def __getattr__(self, item):
        _no_data(self.device, self.kind)


def _no_data(device, kind="Sparse"):
    """PyTorch's error for reading a sparse tensor's (absent) dense data, naming the running op if any."""
    op = _running_op()
    if op is None:
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")
    raise NotImplementedError(
            f"Could not run 'aten::{op}' with arguments from the '{_backend(device, kind)}' backend. This could be "
            "because the operator doesn't exist for this backend, or was omitted during the selective/custom "
            "build process (if using custom build).")


def _check_index_dtype(indices):
    if indices.dtype is not D.int64:
        raise RuntimeError("indices must be an int64 tensor")


class _LeafValues:
    """Gradients of a COO leaf: requires_grad_() gives it values of their own that require grad (every op reads
    ``_sp_values``, so the graph reaches them) and ``.grad`` is the sparse tensor of their gradient on the leaf's
    pattern (PyTorch's COO gradient of sparse.mm and to_dense is that masked one; its compressed layouts' are
    not, so they do not take this)."""

    def _set_requires_grad(self, requires_grad, *args):
        r = Tensor._set_requires_grad(self, requires_grad, *args)
        v = self._sp_values
        if requires_grad and v.grad_fn is None and not v.requires_grad:
            self._sp_values = v.detach().requires_grad_()
            self._own_values = True
        elif not requires_grad and self.__dict__.get("_own_values"):
            self._sp_values = v.detach()
            self._own_values = False
        return r

    @property
    def grad(self):
        g = self._sp_values.grad if self.__dict__.get("_own_values") else None
        return self._grad if g is None else self._with_values(g)

    @grad.setter
    def grad(self, value):
        if value is None and self.__dict__.get("_own_values"):
            self._sp_values.grad = None
        Tensor.grad.fset(self, value)

    @grad.deleter
    def grad(self):
        self.grad = None


class SparseTensor(_LeafValues, Tensor):
    """A sparse COO tensor; see the module docstring."""

    is_sparse = True
    layout = sparse_coo

    # ------------------------------------------------------------ metadata
    def sparse_dim(self):
        return self._sp_indices._shape[0]

    def dense_dim(self):
        return len(self._shape) - self.sparse_dim()

    def _nnz(self):
        return self._sp_indices._shape[1]

    def is_coalesced(self):
        return self._coalesced

    def _coalesced_(self, flag):
        self._coalesced = bool(flag)
        return self

    def _indices(self):
        return self._sp_indices

    def _values(self):
        return self._sp_values

    def indices(self):
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._sp_indices

    def values(self):
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._sp_values

    def stride(self, dim=None):
        return (0,) * len(self._shape) if dim is None else 0      # (what PyTorch's sparse tensors answer)

    def data_ptr(self):
        _no_data(self.device)

    def numpy(self, *, force=False):
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first.")

    def tolist(self):
        raise RuntimeError("tolist() is not implemented for sparse tensors; use Tensor.to_dense() first")

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self.to_dense().item()

    def reshape(self, *shape):
        raise RuntimeError("reshape is not implemented for sparse tensors")

    def view(self, *shape):
        raise NotImplementedError(f"Could not run 'aten::view' with arguments from the '{_backend(self.device)}' "
                                  "backend.")

    def contiguous(self, memory_format=None):
        raise RuntimeError("unsupported memory format option Contiguous")

    def __repr__(self, *, tensor_contents=None):
        return _repr(self, [("indices", self._sp_indices), ("values", self._sp_values)])

    __str__ = __repr__

    def _rebuild_args(self):
        """(layout, data) for ``_rebuild_sparse_tensor``: PyTorch's pickled form of a sparse tensor."""
        return self.layout, (self._sp_indices, self._sp_values, Size(self._shape), self._coalesced)

    def __reduce_ex__(self, proto):
        return _rebuild_sparse_tensor, self._rebuild_args()

    def __deepcopy__(self, memo):
        t = self.clone()
        t._requires_grad = self._requires_grad
        memo[id(self)] = t
        return t

    # ------------------------------------------------------------ conversions
    def coalesce(self):
        return coalesce(self)

    def to_dense(self, dtype=None, *, masked_grad=None):
        return to_dense(self, dtype)

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        if layout is sparse_csr:
            return dense_to_csr(self, dense_dim)
        if layout is sparse_csc:
            return dense_to_csc(self, dense_dim)
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise RuntimeError("to_sparse: conversion from Sparse to Sparse with sparse_dim argument !=self."
                               "sparse_dim() is not supported")
        return self

    def clone(self, *, memory_format=None):
        return _make(self._sp_indices.clone(), self._sp_values.clone(), self._shape, self._coalesced)

    def detach(self):
        return _make(self._sp_indices, self._sp_values.detach(), self._shape, self._coalesced)

    def to(self, *args, **kwargs):
        v = self._sp_values.to(*args, **kwargs)
        if v is self._sp_values:
            return self
        return _make(self._sp_indices.to(v.device), v, self._shape, self._coalesced)

    def new(self, *args, **kwargs):
        """``grad.new(indices, values, size)`` (optim's idiom) or ``new()``: an empty sparse tensor like this one."""
        if len(args) == 3:
            return sparse_coo_tensor(*args)
        if not args:
            return _make(zeros((self.sparse_dim(), 0), D.int64, self.device),
                         zeros((0,) + tuple(self._shape[self.sparse_dim():]), self.dtype, self.device),
                         self._shape, True)
        raise TypeError("new(): only new(indices, values, size) and new() are supported for sparse tensors")

    def resize_as_(self, other):
        self._shape = tuple(other._shape)
        return self

    def zero_(self):
        self._sp_indices = zeros((self.sparse_dim(), 0), D.int64, self.device)
        self._sp_values = zeros((0,) + tuple(self._shape[self.sparse_dim():]), self.dtype, self.device)
        self._coalesced = True
        return self

    # ------------------------------------------------------------ arithmetic
    def add(self, other, *, alpha=1):
        if isinstance(other, SparseTensor):
            return add_sparse(self, other, alpha)
        if isinstance(other, Tensor):
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
        raise TypeError(f"add(): argument 'other' must be Tensor, not {type(other).__name__}")

    __add__ = add

    def __radd__(self, other):
        if isinstance(other, Tensor):
            return other.add(self)
        raise TypeError(f"unsupported operand type(s) for +: '{type(other).__name__}' and 'Tensor'")

    def add_(self, other, *, alpha=1):
        if not isinstance(other, SparseTensor):
            raise RuntimeError("add_(sparse, dense) is not supported: use add(dense, sparse) for a dense result")
        r = add_sparse(self, other, alpha)
        self._sp_indices, self._sp_values, self._coalesced = r._sp_indices, r._sp_values, r._coalesced
        return self

    __iadd__ = add_

    def sub(self, other, *, alpha=1):
        return self.add(other, alpha=-alpha)

    __sub__ = sub

    def mul(self, other):
        if isinstance(other, SparseTensor) and other.dim() > 0:
            return sparse_sparse_mul(self, other)
        if isinstance(other, SparseCsrTensor):
            raise RuntimeError("Expected result Tensor to be of format CSR")
        if isinstance(other, Tensor) and other.layout is strided and other.dim() > 0 and \
                tuple(other._shape) == tuple(self._shape):      # self's pattern, each value times other there
            c = coalesce(self)
            return _named(c._with_values(c._sp_values * other[tuple(c._sp_indices.unbind(0))]), "MulBackward0")
        if isinstance(other, Tensor) and other.dim() > 0:
            raise NotImplementedError("mul(sparse, tensor) is only supported for a scalar (0-d) other")
        return _named(_make(self._sp_indices, self._sp_values.mul(other), self._shape, self._coalesced), "MulBackward0")

    __mul__ = __rmul__ = mul

    def mul_(self, other):
        if isinstance(other, Tensor) and other.dim() > 0:
            raise NotImplementedError("mul_(sparse, tensor) is only supported for a scalar (0-d) other")
        self._sp_values.mul_(other)
        return self

    def div(self, other):
        return _make(self._sp_indices, self._sp_values.div(other), self._shape, self._coalesced)

    __truediv__ = div

    def div_(self, other):
        self._sp_values.div_(other)
        return self

    def neg(self):
        return _make(self._sp_indices, self._sp_values.neg(), self._shape, self._coalesced)

    __neg__ = neg

    def pow(self, exponent):
        return _make(self._sp_indices, self._sp_values.pow(exponent), self._shape, self._coalesced)

    def _with_values(self, values):
        return _make(self._sp_indices, values, self._shape, self._coalesced)

    def sum(self, dim=None, keepdim=False, dtype=None):
        if dim is None:
            return coalesce(self)._sp_values.sum(dtype=dtype)
        r = sparse_sum(self, dim, dtype)
        if keepdim:         # PyTorch's: the sum unsqueezed at each reduced dim (uncoalesced)
            for d in sorted({d % self.dim() for d in ((dim,) if isinstance(dim, int) else dim)}):
                r = _unsqueeze(r, d)
        return r

    def mm(self, mat2):
        return sparse_mm(self, mat2)

    matmul = __matmul__ = mm

    def t(self):
        if self.sparse_dim() != 2 or self.dense_dim():
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but got "
                               f"{self.sparse_dim()} sparse and {self.dense_dim()} dense dimensions")
        return _make(self._sp_indices.flip(0), self._sp_values, self._shape[::-1], False)


def _named(t, name):
    """``t`` (a sparse result) printed with PyTorch's grad_fn name ``name`` when its values carry a graph (the
    graph itself is the values' own nodes)."""
    t._node_name = name
    return t


def _repr(t, parts):
    """PyTorch's repr of a sparse tensor (torch/_tensor_str.py): its index and value tensors ``parts``
    [(name, tensor)], then device, size, nnz, dtype, layout and grad suffixes (COO: from a new line)."""
    indent = len("tensor(")
    body = []
    for name, x in parts:
        prefix = name + "=tensor("
        text = _tensor_str(_to_work_array(x._host_copy(), x.dtype.name), indent + len(prefix), x.dtype.name)
        body.append(prefix + text + (f", size={tuple(x.shape)}" if x.numel() == 0 else "") + ")")
    suffixes = [] if t.device.type == "cpu" else [f"device='{t.device}'"]
    suffixes += [f"size={tuple(t._shape)}", f"nnz={t._nnz()}"]
    if t.dtype not in (D.get_default_dtype(), D.int64, D.bool_):
        suffixes.append(f"dtype={t.dtype}")
    suffixes.append(f"layout={t.layout}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(t.grad_fn).__name__}>")
    elif t._requires_grad and t.__dict__.get("_node_name") and t._sp_values.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t._node_name}>")        # the node PyTorch's sparse op records
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes("tensor(" + (",\n" + " " * indent).join(body), suffixes, indent,
                         force_newline=t.layout is sparse_coo)


def _rebuild_sparse_tensor(layout, data):
    """Inverse of a sparse tensor's ``__reduce_ex__`` (pickle, copy, tgrad.save), as ``torch._utils.
    _rebuild_sparse_tensor``: COO data = (indices, values, size[, is_coalesced])."""
    if layout is sparse_coo:
        indices, values, size = data[:3]
        return sparse_coo_tensor(indices, values, size, check_invariants=False,
                                 is_coalesced=data[3] if len(data) > 3 else None)
    if layout is sparse_csr:
        crow, col, values, size = data
        return sparse_csr_tensor(crow, col, values, size, check_invariants=False)
    if layout is sparse_csc:
        ccol, row, values, size = data
        return sparse_csc_tensor(ccol, row, values, size, check_invariants=False)
    raise NotImplementedError(f"rebuilding a sparse tensor of layout {layout} is not supported")


def _make(indices, values, shape, coalesced):
    """A SparseTensor over ``indices`` (sparse_dim, nnz) and ``values`` (nnz, *dense) (no checks)."""
    t = object.__new__(SparseTensor)
    _init_from(t, _NoStorage(values._storage.device), 0, tuple(shape), contiguous_strides(tuple(shape)), values.dtype)
    t._sp_indices = indices
    t._sp_values = values
    t._coalesced = bool(coalesced)
    if values._requires_grad or values.grad_fn is not None:
        t._requires_grad = values.requires_grad
    return t


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, requires_grad=False,
                      check_invariants=None, is_coalesced=None):
    """``tgrad.sparse_coo_tensor``: a sparse COO tensor of ``size`` holding ``values[k]`` at
    ``indices[:, k]``; without ``size``, the smallest size holding every index."""
    if not isinstance(indices, Tensor):
        indices = from_host(np.asarray(indices, dtype=np.int64), D.int64, _device(device))
    if not isinstance(values, Tensor):
        a = np.asarray(values)
        vt = dtype or (D.get_default_dtype() if a.dtype.kind == "f" else D.int64 if a.dtype.kind in "iu"
                       else D.bool_ if a.dtype.kind == "b" else D.get_default_dtype())
        values = from_host(a, vt, _device(device))
    if dtype is not None and values.dtype is not dtype:
        values = values.to(dtype)
    if device is not None:
        values, indices = values.to(device), indices.to(device)
    if indices.dtype is not D.int64:
        indices = indices.long()
    if indices.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    sdim, nnz = indices._shape
    if values.dim() < 1 or values._shape[0] != nnz:
        raise RuntimeError(f"number of dimensions must be sparse_dim ({sdim}) + dense_dim ({values.dim() - 1}), "
                           f"but got {len(size) if size is not None else '?'}" if values.dim() >= 1 else
                           "values must have at least one dimension")
    dense = tuple(values._shape[1:])
    if size is None:
        top = indices.max(1).values.tolist() if nnz else [-1] * sdim
        size = tuple(int(m) + 1 for m in top) + dense
    else:
        size = tuple(int(s) for s in size)
        if len(size) != sdim + len(dense):
            raise RuntimeError(f"number of dimensions must be sparse_dim ({sdim}) + dense_dim ({len(dense)}), "
                               f"but got {len(size)}")
        if tuple(size[sdim:]) != dense:
            raise RuntimeError(f"values has incorrect size, expected {[nnz, *size[sdim:]]}, got "
                               f"{list(values.shape)}")
        if nnz and (check_invariants or check_invariants is None and _INVARIANTS[0]):
            _check_bounds(indices, size)
    t = _make(indices.detach(), values.detach() if not values.requires_grad else values, size,
              bool(is_coalesced) if is_coalesced is not None else nnz <= 1)
    if requires_grad:
        t.requires_grad_(True)
    return t


_INVARIANTS = [False]     # tgrad.sparse.check_sparse_tensor_invariants


def _check_bounds(indices, size):
    lo = indices.min(1).values.tolist()
    hi = indices.max(1).values.tolist()
    for d, (a, b) in enumerate(zip(lo, hi)):
        if a < 0:
            raise RuntimeError(f"`indices[{d}]` contains negative values: found index {a}")
        if b >= size[d]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found "
                               f"index {b}")


def _linear(indices, shape):
    """Row-major linear position of each index column: (sparse_dim, nnz) -> (nnz,) int64."""
    if indices._shape[0] == 0:
        return zeros((indices._shape[1],), D.int64, indices.device)
    lin = indices[0]
    for d in range(1, indices._shape[0]):
        lin = lin * shape[d] + indices[d]
    return lin


def _segments(key, indices):
    """The runs of equal ``key`` after a stable sort, on the device (op ``sparse_segments``):
    (perm, start, ukey, uidx, pos)."""
    return _tensor._call("sparse_segments", key, indices)


def coalesce(s):
    """One entry per distinct index, sorted, duplicates summed in entry order (ATen's _coalesce_sparse_cpu: a
    stable sort of the linear index, then a sequential segment sum; here both on the device)."""
    if s._coalesced:
        return s
    if s._nnz() < 2:
        return _make(s._sp_indices, s._sp_values, s._shape, True)
    perm, start, _, uidx, pos = _segments(_linear(s._sp_indices, s._shape), s._sp_indices)
    vals = _tensor._call("sparse_coalesce_values", s._sp_values, perm, start, pos)
    return _make(uidx, vals, s._shape, True)


def _scatter_add(dense, s, alpha):
    """dense + alpha * s (same shape), each index's entries added one by one in entry order (ATen's
    add_out_dense_sparse_cpu order), by one segment-sum launch over the sorted linear index."""
    sd = s.sparse_dim()
    rows = 1
    for n in s._shape[:sd]:
        rows *= n
    lin = _linear(s._sp_indices, s._shape)
    # the segments of a GPU launch (the cpu takes each entry's row alone: ops/sparse.py's rounds)
    perm, start, ukey, _, _ = _segments(lin, s._sp_indices[:0]) if gpu_blocks(s.device.type) else (None,) * 5
    flat = dense.reshape((rows,) + tuple(s._shape[sd:]))
    out = _tensor._call("sparse_scatter_add", flat, s._sp_values, perm, start, ukey, lin, alpha=alpha)
    return out.view(s._shape)


def to_dense(s, dtype=None):
    """The dense tensor: zeros with ``values`` summed in at ``indices``."""
    out = zeros(s._shape, dtype or s.dtype, s.device)
    if not s._nnz():
        return out
    return _scatter_add(out, s if dtype is None else _make(s._sp_indices, s._sp_values.to(dtype), s._shape,
                                                           s._coalesced), 1)


def dense_to_sparse(x, sparse_dim=None):
    """``x.to_sparse(sparse_dim)``: the (sorted, coalesced) entries of ``x`` whose values are not all zero."""
    n = x.dim()
    sd = n if sparse_dim is None else sparse_dim
    if not 0 <= sd <= n:
        raise RuntimeError(f"sparse_dim must be in [0, {n}], but got {sd}")
    nz = x != 0
    for _ in range(n - sd):
        nz = nz.any(-1)
    idx = nz.nonzero().t().contiguous() if sd else zeros((0, 1), D.int64, x.device)
    vals = x[tuple(idx.unbind(0))] if sd else x.unsqueeze(0)
    return _make(idx, vals, x._shape, True)


def add_sparse(a, b, alpha=1):
    """a + alpha * b, both sparse: ATen's add_out_sparse_contiguous, a two-pointer merge of the two index lists
    (equal indices meet in one entry); the result is coalesced when both inputs are."""
    if a._shape != b._shape:
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has size "
                           f"{list(a._shape)} while other has size {list(b._shape)} (FYI: dense-sparse addition "
                           "does not currently support broadcasting)")
    bv = b._sp_values if alpha == 1 else b._sp_values.mul(alpha)
    if b._nnz() == 0:
        return _make(a._sp_indices.clone(), a._sp_values.clone(), a._shape, a._coalesced)
    if a._nnz() == 0:
        return _make(b._sp_indices.clone(), bv if bv is not b._sp_values else bv.clone(), a._shape, b._coalesced)
    if a.device.type != "cpu":
        # ATen's add_out_sparse_cuda: the two entry lists concatenated, uncoalesced
        return _make(cat([a._sp_indices, b._sp_indices], 1), cat([a._sp_values, bv], 0), a._shape, False)
    if not (a._sp_values.is_contiguous() and bv.is_contiguous()):
        # ATen's add_out_sparse_non_contiguous: concatenate (coalescing once nnz outgrows numel)
        r = _make(cat([a._sp_indices, b._sp_indices], 1), cat([a._sp_values, bv], 0), a._shape, False)
        return coalesce(r) if r._nnz() > r.numel() else r
    la, lb = _linear(a._sp_indices, a._shape).tolist(), _linear(b._sp_indices, b._shape).tolist()
    # the merge's schedule on the host: which entry of a / b each output row takes
    ta, tb, i, j = [], [], 0, 0
    while i < len(la) or j < len(lb):
        cmp = -1 if i >= len(la) else 1 if j >= len(lb) else (1 if la[i] < lb[j] else -1 if la[i] > lb[j] else 0)
        ta.append(i if cmp >= 0 else -1)
        tb.append(j if cmp <= 0 else -1)
        i += cmp >= 0
        j += cmp <= 0
    dev = a.device
    ia = from_host(np.asarray(ta, np.int64), D.int64, dev)
    ib = from_host(np.asarray(tb, np.int64), D.int64, dev)
    ha, hb = ia >= 0, ib >= 0
    ia, ib = ia.clamp(min=0), ib.clamp(min=0)
    idx = a._sp_indices.index_select(1, ia).where(ha, b._sp_indices.index_select(1, ib))
    m = (-1,) + (1,) * (a._sp_values.dim() - 1)
    va = a._sp_values.index_select(0, ia).where(ha.view(m), 0)
    out = va.add(b._sp_values.index_select(0, ib).where(hb.view(m), 0), alpha=alpha)  # axpy: one fma a row
    return _make(idx, out, a._shape, a._coalesced and b._coalesced)


def add_dense(dense, s, alpha=1, inplace=False):
    """dense + alpha * sparse (ATen's add_out_dense_sparse: entry by entry, each an ``add(value, alpha)``)."""
    if dense._shape != s._shape:
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has size "
                           f"{list(dense._shape)} while other has size {list(s._shape)} (FYI: dense-sparse "
                           "addition does not currently support broadcasting)")
    if not s._nnz():
        return dense if inplace else dense.clone()
    out = _scatter_add(dense, s, alpha)
    return dense.copy_(out) if inplace else out


def sparse_mask(dense, mask):
    """``dense.sparse_mask(mask)``: a sparse tensor with ``mask``'s indices holding ``dense``'s values there."""
    if not isinstance(mask, SparseTensor):
        raise RuntimeError("sparse_mask: expected mask to be a sparse COO tensor")
    if dense._shape != mask._shape:
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size {list(dense.shape)} "
                           f"but mask has size {list(mask.shape)}")
    vals = dense[tuple(mask._sp_indices.unbind(0))] if mask._nnz() else \
        zeros((0,) + tuple(dense._shape[mask.sparse_dim():]), dense.dtype, dense.device)
    return _make(mask._sp_indices, vals, mask._shape, mask._coalesced)


def sparse_mm(s, d, fma=True):
    """sparse (n, m) @ dense (m, p) -> dense (n, p): out[row] += value * d[col], entry by entry."""
    if isinstance(s, SparseCsrTensor):
        return s.mm(d)          # (CSR: csr_mm; CSC: through its COO form)
    if not isinstance(s, SparseTensor):
        raise RuntimeError("sparse.mm: the first argument must be a sparse COO tensor")
    if isinstance(d, (SparseTensor, SparseCsrTensor)):
        return sparse_sparse_mm(s, d)
    if s.dim() != 2 or s.sparse_dim() != 2 or d.dim() != 2:
        raise RuntimeError(f"mm: expected 2D tensors, got {s.dim()}D and {d.dim()}D tensors")
    if s._shape[1] != d._shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({s._shape[0]}x{s._shape[1]} and "
                           f"{d._shape[0]}x{d._shape[1]})")
    if not s._nnz():
        return zeros((s._shape[0], d._shape[1]), d.dtype, d.device)
    # one segment per output row, its entries in entry order (ATen's s_addmm_out_sparse_dense_worker)
    row, col = s._sp_indices[0], s._sp_indices[1]
    if s._coalesced:        # rows already sorted: the row pointers by a binary search, no sort (as CSR)
        crow = _tensor._call("sparse_count_below", row, n=s._shape[0] + 1)
        return _tensor._call("sparse_mm", s._sp_values, d, None, crow, None, col, row, rows=s._shape[0], fma=fma)
    if not gpu_blocks(s.device.type):      # (the cpu takes each entry's row alone: ops/sparse.py's rounds)
        return _tensor._call("sparse_mm", s._sp_values, d, None, None, None, col, row, rows=s._shape[0], fma=fma)
    perm, start, ukey, _, _ = _segments(row, s._sp_indices[:0])
    return _tensor._call("sparse_mm", s._sp_values, d, perm, start, ukey, col, row, rows=s._shape[0], fma=fma)


def _unsqueeze(t, d):
    """A size-1 dim at d: of a COO tensor a sparse dim (zero indices) when d <= sparse_dim, else a dense one."""
    if not isinstance(t, SparseTensor):
        return t.unsqueeze(d)
    sd = t.sparse_dim()
    shape = t._shape[:d] + (1,) + t._shape[d:]
    if d <= sd:
        i = t._sp_indices
        idx = cat([i[:d], zeros((1, i._shape[1]), D.int64, i.device), i[d:]], 0)
        return _make(idx, t._sp_values, shape, False)
    return _make(t._sp_indices, t._sp_values.unsqueeze(d - sd + 1), shape, False)


def sparse_sum(s, dim=None, dtype=None):
    """``tgrad.sparse.sum``: all elements (a 0-d dense tensor), or over ``dim``s: sparse while sparse dims
    remain, else dense."""
    if isinstance(s, SparseCsrTensor):          # (PyTorch 2.13's errors: it coalesces / reads COO indices)
        if dim is None:
            raise RuntimeError(f"coalesce expected sparse coordinate tensor layout but got {s._kind()}")
        raise NotImplementedError(f"Could not run 'aten::_indices' with arguments from the "
                                  f"'{_backend(s.device, 'SparseCsr')}' backend. This could be because the operator "
                                  "doesn't exist for this backend, or was omitted during the selective/custom build "
                                  "process (if using custom build).")
    if dim is None:
        return coalesce(s)._sp_values.sum(dtype=dtype)
    dims = sorted({d % s.dim() for d in ((dim,) if isinstance(dim, int) else dim)})
    sd = s.sparse_dim()
    sdims = [d for d in dims if d < sd]
    ddims = [d - sd + 1 for d in dims if d >= sd]
    vals = s._sp_values.sum(ddims) if ddims else s._sp_values
    if dtype is not None:
        vals = vals.to(dtype)
    keep = [d for d in range(sd) if d not in sdims]
    shape = [s._shape[d] for d in range(s.dim()) if d not in dims]
    if not keep:
        return vals.sum(0)
    idx = s._sp_indices.index_select(0, from_host(np.asarray(keep, np.int64), D.int64, s.device))
    return _named(coalesce(_make(idx, vals, shape, False)), "SparseSumBackward0")


# ---------------------------------------------------------------------------------------------- CSR
class SparseCsrTensor(Tensor):
    """A sparse CSR tensor (``layout=tgrad.sparse_csr``) of size (*B, nrows, ncols, *dense): ``crow_indices``
    (*B, nrows + 1) int64 row pointers, ``col_indices`` (*B, nnz) int64 and ``values`` (*B, nnz, *dense), each
    batch row by row, over a placeholder storage (as COO)."""

    is_sparse = False
    is_sparse_csr = True
    layout = sparse_csr

    def crow_indices(self):
        return self._index(0)

    def col_indices(self):
        return self._index(1)

    def _index(self, k):
        """crow (k = 0) or col (1) in the dtype the tensor was built with (PyTorch keeps int32 indices): the int64
        array the kernels read, or a cached int32 copy (the caller's own tensor when it gave one)."""
        t = (self._crow, self._col)[k]
        dt = self._idx[k]
        if dt is D.int64:
            return t
        cache = self.__dict__.setdefault("_idx_cache", {})
        if k not in cache:
            cache[k] = t.to(dt)
        return cache[k]

    def values(self):
        return self._sp_values

    def _nnz(self):
        return self._col._shape[-1]

    def sparse_dim(self):
        return 2

    def dense_dim(self):
        return self._sp_values.dim() - 1 - len(self._batch())

    def _batch(self):
        """The batch shape: crow_indices (*B, nrows + 1), col_indices (*B, nnz), values (*B, nnz, *dense)."""
        return tuple(self._crow._shape[:-1])

    def _flat(self):
        """The batches as one 2-D tensor of nb * nrows rows: (crow (nb * nrows + 1,), col (nb * nnz,), values
        (nb * nnz, *dense)), batch b's row pointers offset by b * nnz (its entries follow batch b - 1's)."""
        b = self._batch()
        if not b:
            return self._crow, self._col, self._sp_values
        nb, nnz, n = int(np.prod(b)), self._nnz(), self._crow._shape[-1] - 1
        off = _arange(nb, self.device).mul(nnz).view(nb, 1)
        crow = cat([(self._crow.reshape(nb, n + 1)[:, :-1] + off).reshape(-1), full((1,), nb * nnz, D.int64,
                                                                                   self.device)], 0)
        return crow, self._col.reshape(-1), self._sp_values.reshape((nb * nnz,) + tuple(self._sp_values._shape[
            len(b) + 1:]))

    def _coo_indices(self):
        """(len(B) + 2, nb * nnz) int64: each entry's batch indices, its major (row; CSC: column) and minor index."""
        b, n = self._batch(), max(self._crow._shape[-1] - 1, 1)        # (no rows: no entries, any divisor)
        crow, col, _ = self._flat()
        rows = _tensor._call("sparse_count_below", crow[1:], n=col._shape[0], right=True)
        parts = [rows.remainder(n), col] if b else [rows, col]
        if b:
            k = rows.div(n, rounding_mode="floor")
            for m in reversed(b):
                parts.insert(0, k.remainder(max(m, 1)))
                k = k.div(max(m, 1), rounding_mode="floor")
        return cat([p.view(1, -1) for p in parts], 0)

    def stride(self, dim=None):
        raise RuntimeError("Sparse CSR tensors do not have strides")

    def data_ptr(self):
        _no_data(self.device, "SparseCsr")

    def numpy(self, *, force=False):
        raise TypeError("can't convert SparseCsr layout tensor to numpy. Use Tensor.to_dense() first.")

    def tolist(self):
        raise RuntimeError("tolist() is not implemented for sparse tensors; use Tensor.to_dense() first")

    def indices(self):
        raise RuntimeError("indices expected sparse coordinate tensor layout but got SparseCsr")

    def ccol_indices(self):
        raise RuntimeError("ccol_indices expected sparse column compressed tensor layout but got SparseCsr")

    def row_indices(self):
        raise RuntimeError("row_indices expected sparse column compressed tensor layout but got SparseCsr")

    def view(self, *shape):
        raise NotImplementedError(f"Could not run 'aten::view' with arguments from the "
                                  f"'{_backend(self.device, 'SparseCsr')}' backend.")

    reshape = view

    def __repr__(self, *, tensor_contents=None):
        return _repr(self, [("crow_indices", self._index(0)), ("col_indices", self._index(1)),
                            ("values", self._sp_values)])

    __str__ = __repr__

    def _rebuild_args(self):
        return self.layout, (self._index(0), self._index(1), self._sp_values, Size(self._shape))

    def __reduce_ex__(self, proto):
        return _rebuild_sparse_tensor, self._rebuild_args()

    def __deepcopy__(self, memo):
        t = self.clone()
        t._requires_grad = self._requires_grad
        memo[id(self)] = t
        return t

    def _rg(self, flag):
        if flag:
            self._requires_grad = True
        return self

    def _rows(self):
        """Each entry's row (nnz,) int64 (CSC: its column), on the device: the number of row ends at or before it."""
        return _tensor._call("sparse_count_below", self._crow[1:], n=self._nnz(), right=True)

    def clone(self, *, memory_format=None):
        return _make_csr(self._crow.clone(), self._col.clone(), self._sp_values.clone(), self._shape, type(self),
                         self._idx)

    def detach(self):
        return _make_csr(self._crow, self._col, self._sp_values.detach(), self._shape, type(self), self._idx)

    def to(self, *args, **kwargs):
        v = self._sp_values.to(*args, **kwargs)
        if v is self._sp_values:
            return self
        return _make_csr(self._crow.to(v.device), self._col.to(v.device), v, self._shape, type(self), self._idx)

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        if layout is sparse_csr:
            return self
        if layout is sparse_csc:
            return dense_to_csc(self)
        if layout not in (None, sparse_coo):
            raise NotImplementedError(f"to_sparse: conversion from SparseCsr to {layout} is not supported")
        return _make(self._coo_indices(), self._flat()[2], self._shape, True)

    def select(self, dim, index):
        """Of a batch dimension: the batch's CSR / CSC tensor over the selected index arrays and values."""
        nbd = len(self._batch())
        d = dim % self.dim()
        if not nbd or d >= nbd:
            if nbd and d < nbd + 2:
                raise RuntimeError("select(): selecting sparse dimensions is not supported for batched sparse "
                                   "compressed tensors.")
            raise NotImplementedError(f"select: of a non-batch dimension of a {self._kind()} tensor is not supported "
                                      "by tgrad")
        n = self._shape[d]
        if not -n <= index < n:
            raise IndexError(f"index {index} is out of bounds for dimension {d} with size {n}")
        return _make_csr(self._crow.select(d, index), self._col.select(d, index), self._sp_values.select(d, index),
                         self._shape[:d] + self._shape[d + 1:], type(self), self._idx)

    def __getitem__(self, index):
        if isinstance(index, int) and self._batch():
            return self.select(0, index)
        return super().__getitem__(index)

    def unbind(self, dim=0):
        return tuple(self.select(dim, i) for i in range(self._shape[dim % self.dim()]))

    def _no_dense_dim(self, target, dense_dim):
        if dense_dim is not None:
            head = "to_sparse_" if target == self._kind() else "sparse_compressed_to_sparse_"
            raise RuntimeError(f"{head}{target[6:].lower()}: conversion from {self._kind()} to {target} with dense_dim "
                               "argument given is not supported")

    def to_sparse_csr(self, dense_dim=None):
        self._no_dense_dim("SparseCsr", dense_dim)
        return self

    def to_sparse_csc(self, dense_dim=None):
        self._no_dense_dim("SparseCsc", dense_dim)
        return _retype(dense_to_csc(self), self._idx)

    def to_dense(self, dtype=None, *, masked_grad=None):
        return to_dense(self.to_sparse(), dtype)

    def sum(self, dim=None, keepdim=False, dtype=None):
        """The sum of every element: of the values (a dense 0-d tensor); over ``dim`` with keepdim=True (2-D CSR
        only, as PyTorch 2.13): dim 0 gives (1, m) with the columns that hold entries, dim 1 (n, 1) with the rows
        that do, both a (1, 1) of one entry; the sums in entry order, the index dtype kept."""
        if dim is None:
            return self._sp_values.sum(dtype=dtype)
        if not keepdim:
            raise RuntimeError("reduction operations on CSR tensors with keepdim=False is unsupported")
        if type(self) is not SparseCsrTensor:
            raise RuntimeError(f"Currently the only compressed sparse format supported for sum.dim_IntList is CSR, "
                               f"but got layout {self._kind()}")
        if self.dim() != 2:
            raise RuntimeError("input_dim == 2 INTERNAL ASSERT FAILED: sum over dims of a batched or hybrid SparseCsr "
                               "tensor (PyTorch 2.13 fails this internal assert too)")
        dims = {d % 2 for d in ((dim,) if isinstance(dim, int) else dim)} or {0, 1}
        v = self._sp_values if dtype is None else self._sp_values.to(dtype)
        n, m = self._shape
        dev = self.device
        if dims == {0, 1}:
            k = 1 if self._nnz() else 0
            return _make_csr(from_host(np.array([0, k]), D.int64, dev), zeros((k,), D.int64, dev),
                             v.sum().view(1)[:k], (1, 1), idx=self._idx)
        if dims == {1}:         # the rows that hold entries
            sums = zeros((n,), v.dtype if dtype is not None else v.sum().dtype, dev).index_add(0, self._rows(), v)
            has = (self._crow[1:] - self._crow[:-1]) > 0
            k = has.sum()
            crow = cat([zeros((1,), D.int64, dev), has.cumsum(0)], 0)
            return _make_csr(crow, zeros((int(k.item()),), D.int64, dev), sums[has], (n, 1), idx=self._idx)
        cols = self._col.long()
        sums = zeros((m,), v.sum().dtype, dev).index_add(0, cols, v)
        has = zeros((m,), D.int64, dev).index_add(0, cols, cols.mul(0).add(1)) > 0
        keep = has.nonzero().view(-1)
        return _make_csr(from_host(np.array([0, keep._shape[0]]), D.int64, dev), keep, sums[keep], (1, m),
                         idx=self._idx)

    def mm(self, mat2):
        if self.dim() != 2:
            raise RuntimeError(f"mat1 must be a matrix, got {self.dim()}-D tensor")
        return self._mm(mat2)

    def _mm(self, mat2):
        if isinstance(mat2, (SparseTensor, SparseCsrTensor)):
            return sparse_sparse_mm(self, mat2)
        return csr_mm(self, mat2)

    def matmul(self, other):
        """CSR @ dense; PyTorch 2.13 refuses a batched or hybrid CSR operand (with these errors: its matmul
        expands a batched operand first, on every device; ``bmm`` takes a batched CSR on cuda)."""
        if self.dim() != 2:
            if isinstance(other, Tensor) and other.dim() > 2:
                raise RuntimeError(f"expand is unsupported for {self._kind()} tensors")
            raise RuntimeError(f"Sparse {self._kind()[6:].upper()} tensors do not have strides")
        return self._mm(other)

    __matmul__ = matmul

    def bmm(self, mat2):
        if self.device.type != "cpu" and type(self) is SparseCsrTensor:
            return csr_bmm(self, mat2)
        raise NotImplementedError(f"Could not run 'aten::bmm.out' with arguments from the "
                                  f"'{_backend(self.device, self._kind())}' backend.")

    def __rmatmul__(self, other):
        if self.dim() != 2:
            raise RuntimeError(f"Sparse {self._kind()[6:].upper()} tensors do not have strides")
        return dense_mm_compressed(other, self)

    # ------------------------------------------------------------ arithmetic (PyTorch's compressed-layout kernels)
    def _with_values(self, values):
        return _make_csr(self._crow, self._col, values, self._shape, type(self), self._idx)

    def _kind(self):
        return "SparseCsr"

    def mul(self, other):
        """By a scalar (a number or 0-d tensor): the values scaled, the pattern kept; by a CSR / COO tensor: the
        intersection (CSR); by a dense tensor of its size: its pattern."""
        if isinstance(other, Tensor) and other.dim() > 0 and type(self) in (SparseCsrTensor, SparseCscTensor):
            if type(self) is SparseCscTensor:       # (PyTorch 2.13 writes every product into a CSR result)
                raise RuntimeError("Expected result Tensor to be of format CSR")
            if type(other) in (SparseTensor, SparseCsrTensor):
                return sparse_sparse_mul(self, other)
            if type(other) is SparseCscTensor:      # PyTorch's: other's pattern, in CSR, times self's values
                return compressed_mul_dense(other.to_sparse_csr(), self.to_dense())
            if other.layout is strided:
                return compressed_mul_dense(self, other)
        if isinstance(other, Tensor) and (other.layout is not strided or other.dim() > 0):
            raise NotImplementedError(f"mul: a {self._kind()} tensor times a {other.layout} tensor with "
                                      f"{other.dim()} dims is not supported (a scalar is)")
        return _named(self._with_values(self._sp_values.mul(other)), "MulBackward0")

    __mul__ = __rmul__ = mul

    def mul_(self, other):
        if isinstance(other, Tensor) and (other.layout is not strided or other.dim() > 0):
            raise NotImplementedError(f"mul_: a {self._kind()} tensor times a {other.layout} tensor with "
                                      f"{other.dim()} dims is not supported (a scalar is)")
        self._sp_values.mul_(other)
        return self

    def neg(self):
        return self._with_values(self._sp_values.neg())

    __neg__ = neg

    def add(self, other, *, alpha=1):
        """+ alpha * other: a sparse tensor of the same layout (the union of the patterns, as ATen's merge), or
        a dense one (a dense result)."""
        if isinstance(other, SparseCsrTensor):
            if type(other) is not type(self):
                a, b = ("crow", "row") if type(self) is SparseCsrTensor else ("ccol", "column")
                raise RuntimeError(f"{a}_indices expected sparse {b} compressed tensor layout but got "
                                   f"{other._kind()}")
            if self._batch() or other._batch():
                # (the union of two batches' patterns need not have one nnz; PyTorch 2.13 returns a malformed tensor)
                raise NotImplementedError(f"add: of batched {self._kind()} tensors is not supported by tgrad")
            # (ATen: a + (alpha * b) rounded apart, no fma)
            coo = add_sparse(self.to_sparse(), other.to_sparse() if alpha == 1 else other.to_sparse().mul(alpha))
            return _retype(dense_to_csr(coo) if type(self) is SparseCsrTensor else dense_to_csc(coo), self._idx)
        if isinstance(other, Tensor) and other.layout is strided:
            return add_dense(other.mul(alpha) if alpha != 1 else other, self.to_sparse(), 1)
        raise NotImplementedError(f"add: a {self._kind()} tensor plus {type(other).__name__} is not supported")

    __add__ = add

    def __radd__(self, other):
        return self.add(other)

    def sub(self, other, *, alpha=1):
        raise RuntimeError(f"unsupported tensor layout: {self._kind()}")

    __sub__ = __rsub__ = div = __truediv__ = sub

    def t(self):
        """The transpose in the other compressed layout, the same three arrays (PyTorch's CSR.t() is CSC)."""
        if self.dim() > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
        return self.transpose(0, 1)

    def transpose(self, dim0, dim1):
        """Of the two sparse dimensions: the other compressed layout over the same arrays (no dense dims)."""
        nd, nbd = self.dim(), len(self._batch())
        d0, d1 = dim0 % nd, dim1 % nd
        if d0 == d1:
            return self
        kinds = ["Batch" if d < nbd else "Sparse" if d < nbd + 2 else "Dense" for d in (d0, d1)]
        if kinds[0] != kinds[1]:
            raise RuntimeError(f"transpose(): can only transpose dimensions of the same type (Batch, Sparse, Dense),"
                               f" got {d0}({kinds[0]}) and {d1}({kinds[1]})")
        if kinds[0] != "Sparse":
            raise NotImplementedError(f"transpose: of two {kinds[0].lower()} dimensions of a {self._kind()} tensor "
                                      "is not supported by tgrad")
        if self.dense_dim():
            raise RuntimeError("transpose(): hybrid sparse compressed tensors with dense dimensions are not supported")
        return _make_csr(self._crow, self._col, self._sp_values, _swap_sparse(self._shape, 0),
                         SparseCscTensor if type(self) is SparseCsrTensor else SparseCsrTensor, self._idx)


class SparseCscTensor(SparseCsrTensor):
    """A sparse CSC tensor (``layout=tgrad.sparse_csc``): the CSR arrays of its transpose (the two sparse dims
    swapped), ``ccol_indices`` (*B, ncols + 1) and ``row_indices`` (*B, nnz), each batch column by column."""

    is_sparse_csr = False
    layout = sparse_csc

    def _kind(self):
        return "SparseCsc"

    def ccol_indices(self):
        return self._index(0)

    def row_indices(self):
        return self._index(1)

    def crow_indices(self):
        raise RuntimeError("crow_indices expected sparse row compressed tensor layout but got SparseCsc")

    def col_indices(self):
        raise RuntimeError("col_indices expected sparse row compressed tensor layout but got SparseCsc")

    def indices(self):
        raise RuntimeError("indices expected sparse coordinate tensor layout but got SparseCsc")

    def numpy(self, *, force=False):
        raise TypeError("can't convert SparseCsc layout tensor to numpy. Use Tensor.to_dense() first.")

    def __repr__(self, *, tensor_contents=None):
        return _repr(self, [("ccol_indices", self._index(0)), ("row_indices", self._index(1)),
                            ("values", self._sp_values)])

    __str__ = __repr__

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        if layout is sparse_csc:
            return self
        if layout is sparse_csr:
            return self.to_sparse_csr()
        if layout not in (None, sparse_coo):
            raise NotImplementedError(f"to_sparse: conversion from SparseCsc to {layout} is not supported")
        # PyTorch: the entries in column order, uncoalesced
        idx = self._coo_indices()
        k = idx._shape[0]
        return _make(idx[list(range(k - 2)) + [k - 1, k - 2]], self._flat()[2], self._shape, False)

    def to_sparse_csr(self, dense_dim=None):
        self._no_dense_dim("SparseCsr", dense_dim)
        return _retype(dense_to_csr(self.to_sparse()) if self.dim() == 2 else dense_to_csr(self), self._idx)

    def to_sparse_csc(self, dense_dim=None):
        self._no_dense_dim("SparseCsc", dense_dim)
        return self

    def _mm(self, mat2):
        if isinstance(mat2, (SparseTensor, SparseCsrTensor)):
            return sparse_sparse_mm(self, mat2)
        return sparse_mm(self.to_sparse(), mat2)


_LONG = (D.int64, D.int64)


def _make_csr(crow, col, values, shape, cls=SparseCsrTensor, idx=_LONG):
    """A compressed tensor over int64 ``crow`` / ``col`` (what the kernels read) and ``values``; ``idx``: the
    dtypes crow_indices() / col_indices() return (PyTorch keeps the int32 ones it was built with)."""
    t = object.__new__(cls)
    _init_from(t, _NoStorage(values._storage.device, cls._kind(None)), 0, tuple(shape),
               contiguous_strides(tuple(shape)), values.dtype)
    crow, col = (x if x.dtype is D.int64 else x.long() for x in (crow, col))
    t._crow, t._col, t._sp_values, t._idx = crow, col, values, idx
    if values._requires_grad or values.grad_fn is not None:
        t._requires_grad = values.requires_grad
    return t


def _retype(t, idx):
    t._idx = idx
    return t


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, device=None, requires_grad=False,
                      check_invariants=None):
    """``tgrad.sparse_csr_tensor``: a CSR tensor of size (*B, nrows, ncols, *dense) from ``crow_indices``
    (*B, nrows + 1), ``col_indices`` (*B, nnz) and ``values`` (*B, nnz, *dense); without ``size``,
    (*B, crow_indices.shape[-1] - 1, max col + 1, *dense)."""
    return _compressed(crow_indices, col_indices, values, size, dtype, device, requires_grad, check_invariants,
                       SparseCsrTensor)


def _compressed(crow_indices, col_indices, values, size, dtype, device, requires_grad, check_invariants, cls):
    """The CSR (``cls`` SparseCsrTensor) or CSC tensor: checked in CSR terms (CSC: the transposed size)."""
    dev = None if device is None else _device(device)
    csc = cls is SparseCscTensor

    def as_tensor(x, dt=None):
        if isinstance(x, Tensor):
            return x if dev is None else x.to(dev)
        a = np.asarray(x)
        kind = dt or (D.get_default_dtype() if a.dtype.kind == "f" else D.int64 if a.dtype.kind in "iu" else
                      D.bool_ if a.dtype.kind == "b" else D.get_default_dtype())
        return from_host(a, kind, dev or _device(None))

    crow, col, values = as_tensor(crow_indices), as_tensor(col_indices), as_tensor(values, dtype)
    if dtype is not None and values.dtype is not dtype:
        values = values.to(dtype)
    checked = check_invariants or check_invariants is None and _INVARIANTS[0]
    if checked and crow.dtype is not col.dtype:
        raise RuntimeError(f"crow_indices and col_indices must have the same dtype, bot got "
                           f"{D.TENSOR_TYPE_NAMES[crow.dtype][:-6]} and {D.TENSOR_TYPE_NAMES[col.dtype][:-6]}, "
                           "respectively")
    if checked and crow.dtype not in (D.int32, D.int64):
        raise RuntimeError(f"crow_indices and col_indices dtype must be Int or Long, but got "
                           f"{D.TENSOR_TYPE_NAMES[crow.dtype][:-6]}")
    for x in (crow, col):
        if x.dtype.is_floating_point or x.dtype.is_complex or x.dtype is D.bool_:
            raise NotImplementedError(f"\"estimate_sparse_compressed_tensor_size\" not implemented for "
                                      f"'{D.TENSOR_TYPE_NAMES[x.dtype][:-6]}'")
    given = (crow, col)
    if crow.dim() != col.dim():
        raise RuntimeError(f"crow_indices and col_indices dimensionalities must be equal but got {crow.dim()} and "
                           f"{col.dim()}, respectively")
    nbd = crow.dim() - 1                             # batch dims
    if values.dim() <= nbd:
        raise RuntimeError(f"values must have dimensionality > sum of batch and block dimensionalities "
                           f"(={nbd} + 0) but got {values.dim()}")
    crow, col = crow.long(), col.long()
    batch, dense = tuple(crow._shape[:-1]), tuple(values._shape[nbd + 1:])
    nnz = values._shape[nbd]
    if size is None:
        size = batch + (crow._shape[-1] - 1, int(col.max().item()) + 1 if col.numel() else 0) + dense
    else:
        size = tuple(int(n) for n in size)
        if csc and len(size) >= 2 + len(dense):     # checked as the transposed CSR
            k = len(size) - len(dense)
            size = size[:k - 2] + (size[k - 1], size[k - 2]) + size[k:]
    if len(size) != nbd + 2 + len(dense):
        raise RuntimeError(f"tensor dimensionality must be sum of batch, base, and dense dimensionalities "
                           f"(={nbd} + 2 + {len(dense)}) but got {len(size)}")
    if not (batch == tuple(col._shape[:-1]) == tuple(values._shape[:nbd]) == size[:nbd]):
        raise RuntimeError(f"all batch dimensions of crow_indices (={list(batch)}), col_indices "
                           f"(={list(col._shape[:-1])}), and values (={list(values._shape[:nbd])}) must be equal to "
                           f"tensor batch dimensions (={list(size[:nbd])})")
    if tuple(size[nbd + 2:]) != dense:
        # (PyTorch 2.13 accepts this and reads past the values; tgrad refuses it)
        raise RuntimeError(f"values dense dimensions (={list(dense)}) must be equal to the tensor dense dimensions "
                           f"(={list(size[nbd + 2:])})")
    if checked:
        _check_compressed(crow, col, nnz, size[nbd:nbd + 2], nbd)
    t = _make_csr(crow.detach(), col.detach(), values if values.requires_grad else values.detach(),
                  _swap_sparse(size, len(dense)) if csc else size, cls, (given[0].dtype, given[1].dtype))
    t._idx_cache = {k: g.detach() for k, g in enumerate(given) if g.dtype is not D.int64}
    if requires_grad:
        t.requires_grad_(True)
    return t


def _swap_sparse(size, ndense):
    """``size`` with its two sparse dimensions (before ``ndense`` dense ones) swapped."""
    k = len(size) - ndense
    return tuple(size[:k - 2]) + (size[k - 1], size[k - 2]) + tuple(size[k:])


def _check_compressed(crow, col, nnz, size, nbd):
    """PyTorch's compressed-index invariants (``check_invariants=True``), every batch at once."""
    if col._shape[-1] != nnz:
        raise RuntimeError(f"col_indices.shape[-1] must be equal to nnz (={nnz}) as defined by values.shape[{nbd}], "
                           f"but got {col._shape[-1]}")
    if crow._shape[-1] != size[0] + 1:
        raise RuntimeError(f"crow_indices.shape[-1] must be equal to the number of rows + 1 (={size[0] + 1}), "
                           f"but got {crow._shape[-1]}")
    if not crow.numel():
        return
    if (crow[..., 0] != 0).any().item():
        raise RuntimeError("`crow_indices[..., 0] == 0` is not satisfied.")
    if (crow[..., -1] != nnz).any().item():
        raise RuntimeError("`crow_indices[..., -1] == nnz` is not satisfied.")
    if nnz and (col.min().item() < 0 or col.max().item() >= size[1]):
        raise RuntimeError("`0 <= col_indices < ncols` is not satisfied.")
    if size[0] and (crow[..., 1:] - crow[..., :-1]).min().item() < 0:
        raise RuntimeError("`0 <= crow_indices[..., 1:] - crow_indices[..., :-1] <= ncols` is not satisfied.")
    if nnz > 1:
        # the flat row (batch * nrows + row) of each entry, then its linear index: strictly increasing
        nb = crow.numel() // crow._shape[-1]
        off = _arange(nb, crow.device).mul(nnz).view(nb, 1)
        fc = cat([(crow.reshape(nb, -1)[:, :-1] + off).reshape(-1), full((1,), nb * nnz, D.int64, crow.device)], 0)
        rows = _tensor._call("sparse_count_below", fc[1:], n=nb * nnz, right=True)
        key = rows * size[1] + col.reshape(-1)
        if not (key[1:] > key[:-1]).all().item():
            raise RuntimeError("`col_indices[..., crow_indices[..., i - 1]:crow_indices[..., i]] for all i = 1, "
                               "..., nrows are sorted and distinct along the last dimension values` is not "
                               "satisfied.")


def dense_to_csc(x, dense_dim=None):
    """``x.to_sparse_csc(dense_dim)``: the CSR arrays of ``x``'s transpose (entries column by column)."""
    if isinstance(x, SparseCscTensor):
        return x
    if isinstance(x, SparseTensor):                 # its transpose: the index rows swapped, the same values
        _coo_check(x, dense_dim, "csc")
        t = dense_to_csr(_make(x._sp_indices.flip(0), x._sp_values, _swap_sparse(x._shape, x.dense_dim()), False))
        return _make_csr(t._crow, t._col, t._sp_values, x._shape, SparseCscTensor)
    if x.dim() == 2 and not dense_dim and x.layout is strided:
        t = dense_to_csr(x.t())
        return _make_csr(t._crow, t._col, t._sp_values, x._shape, SparseCscTensor)
    if x.layout is not strided:
        dense_dim, x = x.dense_dim() if dense_dim is None else dense_dim, x.to_dense()
    dd = _check_dense_dim(x, dense_dim, "csc")
    t = dense_to_csr(x.transpose(x.dim() - dd - 2, x.dim() - dd - 1), dd, "csc")
    return _make_csr(t._crow, t._col, t._sp_values, x._shape, SparseCscTensor)


def _coo_check(x, dense_dim, name):
    """PyTorch's refusals of a COO -> CSR / CSC conversion."""
    target = "SparseCsr" if name == "csr" else "SparseCsc"
    if dense_dim is not None:
        raise RuntimeError(f"coo_to_sparse_{name}: conversion from Sparse to {target} with dense_dim argument given is "
                           "not supported")
    if x.sparse_dim() != 2:
        raise RuntimeError(f"coo_to_sparse_{name}: conversion from Sparse to {target} for input tensors with "
                           "sparse_dim()!=2 is not supported")


def _check_dense_dim(x, dense_dim, name):
    dd = 0 if dense_dim is None else int(dense_dim)
    if x.dim() < 2:
        raise RuntimeError(f"to_sparse_{name}: expected a tensor of at least 2 dimensions, got {x.dim()}")
    if not 0 <= dd <= x.dim() - 2:
        raise RuntimeError(f"dense_to_sparse_{name}: dense_dim argument must be in [0,{x.dim() - 2}] range, but "
                           f"{dd} is given")
    return dd


def sparse_csc_tensor(ccol_indices, row_indices, values, size=None, *, dtype=None, device=None, requires_grad=False,
                      check_invariants=None):
    """``tgrad.sparse_csc_tensor``: a CSC tensor (*B, nrows, ncols, *dense); without ``size``, (*B, max row + 1,
    ccol_indices.shape[-1] - 1, *dense)."""
    return _compressed(ccol_indices, row_indices, values, size, dtype, device, requires_grad, check_invariants,
                       SparseCscTensor)


def dense_to_csr(x, dense_dim=None, name="csr"):
    """``x.to_sparse_csr(dense_dim)``: its (coalesced) entries, rows compressed on the device.  A strided ``x`` of
    (*B, n, m, *dense) (``dense_dim`` = len(dense)): the (row, col) places whose dense value is not all zeros, the
    batches taken as one (nb * n, m) matrix whose flat row pointers give each batch's (all batches need the same
    nnz, as in PyTorch)."""
    if isinstance(x, SparseTensor):
        _coo_check(x, dense_dim, name)
    if isinstance(x, SparseTensor) or x.dim() == 2 and not dense_dim and x.layout is strided:
        s = coalesce(x) if isinstance(x, SparseTensor) else dense_to_sparse(x)
        rows = s._sp_indices[0]
        crow = _tensor._call("sparse_count_below", rows, n=x._shape[0] + 1)
        return _make_csr(crow, s._sp_indices[1].contiguous(), s._sp_values, x._shape)
    if x.layout is not strided:
        dense_dim, x = x.dense_dim() if dense_dim is None else dense_dim, x.to_dense()
    dd = _check_dense_dim(x, dense_dim, name)
    k = x.dim() - dd
    batch, (n, m), dense = tuple(x._shape[:k - 2]), x._shape[k - 2:k], tuple(x._shape[k:])
    nb = int(np.prod(batch))
    if not nb:
        raise RuntimeError(f"to_sparse_{name}: Expected product of batch dimensions to be non-zero.")
    nz = x != 0
    if dd:
        nz = nz.reshape(x._shape[:k] + (int(np.prod(dense)),)).any(-1)
    counts = nz.reshape(nb, n * m).sum(1)
    nnz = int(counts[0].item())
    if (counts != nnz).any().item():
        raise RuntimeError("Expect the same number of specified elements per batch.")
    idx = nz.reshape(nb * n, m).nonzero()
    rows, col = idx[:, 0].contiguous(), idx[:, 1].contiguous()
    vals = x.reshape((nb * n, m) + dense)[rows, col]
    crow = _batched_crow(rows, nb, n, nnz)
    return _make_csr(crow.reshape(batch + (n + 1,)), col.reshape(batch + (nnz,)),
                     vals.reshape(batch + (nnz,) + dense), x._shape)


def _batched_crow(rows, nb, n, nnz):
    """(nb, n + 1) row pointers of each batch from the sorted flat rows (batch * n + row) of nb * nnz entries."""
    fc = _tensor._call("sparse_count_below", rows, n=nb * n + 1)           # flat row pointers
    pick = _arange(nb, rows.device).mul(n).view(nb, 1) + _arange(n + 1, rows.device).view(1, n + 1)
    return fc[pick.reshape(-1)].reshape(nb, n + 1) - _arange(nb, rows.device).mul(nnz).view(nb, 1)


def csr_mm(c, d):
    """CSR (n, m) @ dense (m, p) -> dense (n, p): one segment-sum launch whose segments are the rows (start = crow)."""
    if not isinstance(d, Tensor) or d.layout is not strided:
        d = d.to_dense()
    if d.dim() != 2:
        raise RuntimeError(f"mm: expected 2D tensors, got {c.dim()}D and {d.dim()}D tensors")
    if c._shape[1] != d._shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({c._shape[0]}x{c._shape[1]} and "
                           f"{d._shape[0]}x{d._shape[1]})")
    if not c._nnz() or not c._shape[0]:
        return zeros((c._shape[0], d._shape[1]), d.dtype, d.device)
    return _tensor._call("sparse_csr_mm", c._sp_values, d, None, c._crow, None, c._col, c._rows(), rows=c._shape[0])


def csr_bmm(c, d):
    """Batched CSR (B, n, m) @ dense (B, m, p) -> dense (B, n, p) (PyTorch's cuda bmm): the batches as one CSR
    (B * n, B * m), batch b's columns moved by b * m, times d as (B * m, p): one sparse_csr_mm launch."""
    if not isinstance(d, Tensor) or d.layout is not strided or c.dim() != 3 or d.dim() != 3 or c.dense_dim():
        raise RuntimeError(f"bmm: expected a batched CSR tensor (3-D, no dense dims) and a 3-D strided tensor, got "
                           f"{c.dim()}-D and {getattr(d, 'ndim', '?')}-D")
    (nb, n, m), p = c._shape, d._shape[2]
    if d._shape[0] != nb or d._shape[1] != m:
        raise RuntimeError(f"bmm: expected mat2 of size ({nb}, {m}, *), got {tuple(d._shape)}")
    if not c._nnz() or not n or not nb:
        return zeros((nb, n, p), d.dtype, d.device)
    crow, col, vals = c._flat()
    col = (col.view(nb, -1) + _arange(nb, c.device).mul(m).view(nb, 1)).reshape(-1)
    rows = _tensor._call("sparse_count_below", crow[1:], n=col._shape[0], right=True)
    out = _tensor._call("sparse_csr_mm", vals, d.reshape(nb * m, p), None, crow, None, col, rows, rows=nb * n)
    return out.view(nb, n, p)


def dense_mm_compressed(d, c):
    """dense (n, m) @ CSR / CSC (m, p) -> dense (n, p): (c^T @ d^T)^T, c^T the same arrays in the other layout."""
    if not isinstance(d, Tensor) or d.layout is not strided or d.dim() != 2:
        raise RuntimeError(f"mm: expected 2D tensors, got {getattr(d, 'ndim', '?')}D and {c.dim()}D tensors")
    if d._shape[1] != c._shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({d._shape[0]}x{d._shape[1]} and "
                           f"{c._shape[0]}x{c._shape[1]})")
    # (ATen's loop: each output column's products x[i, k] * c[k, j] rounded, then added in k order: no fma)
    return sparse_mm(c.t().to_sparse(), d.t(), fma=False).t()


def addmm(mat, mat1, mat2, beta=1, alpha=1):
    """beta * mat + alpha * (mat1 @ mat2), mat1 or mat2 sparse (COO, CSR, CSC)."""
    prod = mat1.mm(mat2) if mat1.layout is not strided else mat1.matmul(mat2)
    return mat.mul(beta).add(prod.mul(alpha)) if (beta, alpha) != (1, 1) else mat.add(prod)


# ---------------------------------------------------------------------------------------------- sparse x sparse
def _csr_parts(t):
    """(rows, cols, values, crow) of a 2-D COO / CSR / CSC tensor's entries in row-major order (COO coalesced)."""
    if isinstance(t, SparseTensor):
        t = coalesce(t)
        rows, cols = t._sp_indices[0], t._sp_indices[1]
        return rows, cols, t._sp_values, _tensor._call("sparse_count_below", rows, n=t._shape[0] + 1)
    if type(t) is SparseCscTensor:
        t = t.to_sparse_csr()
    return t._rows(), t._col, t._sp_values, t._crow


def _check_2d_sparse(a, b, name):
    for t in (a, b):
        if t.dim() != 2 or t.dense_dim() or isinstance(t, SparseTensor) and t.sparse_dim() != 2 or \
                isinstance(t, SparseBsrTensor):
            raise NotImplementedError(f"{name}: of a {t.dim()}-D {t.layout} tensor with {t.dense_dim()} dense dims "
                                      "with another sparse tensor is not supported by tgrad (2-D COO / CSR / CSC are)")


def sparse_sparse_mm(a, b):
    """sparse (n, k) @ sparse (k, m) -> COO (``a`` COO: coalesced, PyTorch's sparse.mm) or CSR (``a`` CSR / CSC).
    Gustavson's products: each entry a[i, l] of a (row-major) times each entry of b's row l, in b's order, summed
    per (i, j) in that order (ATen's _csr_matmult; a CSR result lists each row's columns in the order they first
    appear, as ATen's cpu kernel does).  All on the device through table ops, so the values carry gradients."""
    _check_2d_sparse(a, b, "mm")
    (n, k), (k2, m) = a._shape, b._shape
    if k != k2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected mat1 and mat2 to have the same dtype, but got: {a.dtype.legacy_name} != "
                           f"{b.dtype.legacy_name}")
    coo = isinstance(a, SparseTensor)
    arow, acol, aval, _ = _csr_parts(a)
    _, bcol, bval, bcrow = _csr_parts(b)
    dev = aval.device
    first = bcrow[acol]                                  # each entry of a: where b's row acol starts, its length
    cnt = bcrow[acol + 1] - first
    end = cnt.cumsum(0)
    total = int(end[-1].item()) if end.numel() else 0
    if total == 0:
        empty_idx = zeros((2, 0), D.int64, dev)
        r = _make(empty_idx, zeros((0,), aval.dtype, dev), (n, m), True)
        return r if coo else dense_to_csr(r)
    e = _tensor._call("sparse_count_below", end, n=total, right=True)          # each product's entry of a
    j = _arange(total, dev) - (end - cnt)[e] + first[e]                         # ... and of b
    prod = aval[e] * bval[j]
    rows, cols = arow[e], bcol[j]
    perm, start, ukey, uidx, pos = _segments(rows * m + cols, cat([rows.view(1, -1), cols.view(1, -1)], 0))
    vals = _tensor._call("sparse_coalesce_values", prod, perm, start, pos)
    if coo:
        return _named(_make(uidx, vals, (n, m), True), "SparseSparseMatmulBackward0")
    order = _tensor._call("sort", perm[start[:-1]], dim=0, stable=True)[1]    # first appearance, row by row
    r_rows, r_cols = uidx[0][order], uidx[1][order]
    crow = _tensor._call("sparse_count_below", r_rows, n=n + 1)
    return _named(_make_csr(crow, r_cols.contiguous(), vals[order], (n, m)), "MmBackward0")


def sparse_sparse_mul(a, b):
    """a * b of two sparse tensors of one shape: the entries present in both (their intersection, row-major),
    the values a * b (ATen's sparse_binary_op_intersection); COO if ``a`` is COO, else CSR."""
    _check_2d_sparse(a, b, "mul")
    if a._shape != b._shape:
        raise RuntimeError("sparse_binary_op_intersection_cpu(): expects sparse inputs with equal dimensionality, "
                           "number of sparse dimensions, and shape of sparse dimensions")
    n, m = a._shape
    arow, acol, aval, _ = _csr_parts(a)
    brow, bcol, bval, _ = _csr_parts(b)
    na = aval._shape[0]
    keys = cat([arow * m + acol, brow * m + bcol], 0)
    perm, start, ukey, _, _ = _segments(keys, keys.view(1, -1)[:0])
    both = ((start[1:] - start[:-1]) == 2).nonzero().view(-1)     # a key in both (each once in each)
    first = start[both]
    pa, pb = perm[first], perm[first + 1] - na
    key = ukey[both]
    rows, cols = key.div(m, rounding_mode="floor"), key.remainder(m)
    vals = aval[pa] * bval[pb]
    if isinstance(a, SparseTensor):
        return _named(_make(cat([rows.view(1, -1), cols.view(1, -1)], 0), vals, (n, m), True), "MulBackward0")
    return _named(_make_csr(_tensor._call("sparse_count_below", rows, n=n + 1), cols, vals, (n, m)), "MulBackward0")


def compressed_mul_dense(c, d):
    """CSR * dense (same shape): c's pattern, each value times d there (PyTorch keeps every entry)."""
    if tuple(d._shape) != tuple(c._shape) or c.dim() != 2 or c.dense_dim():
        raise NotImplementedError(f"mul: a {c._kind()} tensor of size {tuple(c._shape)} times a dense tensor of size "
                                  f"{tuple(d._shape)} is not supported by tgrad (one 2-D size is)")
    rows, cols = c._rows(), c._col
    if type(c) is SparseCscTensor:
        rows, cols = cols, rows
    return _named(c._with_values(c._sp_values * d[rows, cols]), "MulBackward0")


# ---------------------------------------------------------------------------------------------- BSR / BSC
class SparseBsrTensor(SparseCsrTensor):
    """A 2-D block sparse row tensor (``layout=tgrad.sparse_bsr``): CSR arrays over blocks, ``crow_indices``
    (nrows / R + 1,), ``col_indices`` (nnz,) of the blocks and ``values`` (nnz, R, C) the blocks."""

    is_sparse_csr = False
    layout = sparse_bsr

    def _kind(self):
        return "SparseBsr"

    def dense_dim(self):
        return self._sp_values.dim() - 3 - len(self._batch())

    def _blocks(self):
        """(row block, column block) of each stored block, (nnz,) int64 each."""
        return self._rows(), self._col

    def numpy(self, *, force=False):
        raise TypeError(f"can't convert {self._kind()} layout tensor to numpy. Use Tensor.to_dense() first.")

    def __repr__(self, *, tensor_contents=None):
        names = ("ccol_indices", "row_indices") if self.layout is sparse_bsc else ("crow_indices", "col_indices")
        return _repr(self, [(names[0], self._index(0)), (names[1], self._index(1)), ("values", self._sp_values)])

    __str__ = __repr__

    def to_dense(self, dtype=None, *, masked_grad=None):
        """The blocks put in place: a (nb, nrows / R, ncols / C, R, C, *dense) grid of zeros indexed by the (batch,
        row block, column block) of each block."""
        batch, nd = self._batch(), self.dense_dim()
        r, c = self._sp_values._shape[len(batch) + 1:len(batch) + 3]
        k = len(self._shape) - nd
        (n, m), dense = self._shape[k - 2:k], tuple(self._shape[k:])
        nb = int(np.prod(batch))
        grid = zeros((nb, n // r, m // c, r, c) + dense, dtype or self.dtype, self.device)
        if self._nnz() and nb:
            crow, minor, v = self._flat()
            nmaj = self._crow._shape[-1] - 1
            flat = _tensor._call("sparse_count_below", crow[1:], n=minor._shape[0], right=True)
            b, major = flat.div(nmaj, rounding_mode="floor"), flat.remainder(nmaj)
            rb, cb = (minor, major) if self.layout is sparse_bsc else (major, minor)
            grid = grid.index_put((b, rb, cb), v if dtype is None else v.to(dtype))
        return grid.permute((0, 1, 3, 2, 4) + tuple(range(5, 5 + nd))).reshape(self._shape)

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        if layout is self.layout and blocksize in (None, tuple(self._sp_values._shape[1:])):
            return self
        raise RuntimeError(f"to_sparse: conversion from {self._kind()} to {layout or sparse_coo} is not supported "
                           "by tgrad (go through to_dense())")

    def to_sparse_csr(self, dense_dim=None):
        raise RuntimeError(f"sparse_compressed_to_sparse_csr: expected SparseCsr or SparseCsc layout but got "
                           f"{self._kind()}")

    def to_sparse_csc(self, dense_dim=None):
        raise RuntimeError(f"sparse_compressed_to_sparse_csc: expected SparseCsr or SparseCsc layout but got "
                           f"{self._kind()}")

    def _mm(self, mat2):
        """block sparse @ dense: the dense form's product (each output row a dot over the block columns)."""
        if not isinstance(mat2, Tensor) or mat2.layout is not strided:
            raise NotImplementedError(f"mm: a {self._kind()} tensor times a {getattr(mat2, 'layout', mat2)} tensor "
                                      "is not supported")
        return self.to_dense().mm(mat2)

    def bmm(self, mat2):
        raise NotImplementedError(f"Could not run 'aten::bmm.out' with arguments from the "
                                  f"'{_backend(self.device, self._kind())}' backend.")

    def __rmatmul__(self, other):
        if self.dim() != 2:
            raise RuntimeError(f"Sparse {self._kind()[6:].upper()} tensors do not have strides")
        return other.mm(self.to_dense())

    def add(self, other, *, alpha=1):
        if isinstance(other, Tensor) and other.layout is strided:
            return other.add(self.to_dense(), alpha=alpha)
        raise NotImplementedError(f"add: a {self._kind()} tensor plus a {getattr(other, 'layout', other)} tensor is "
                                  "not supported")

    __add__ = __radd__ = add

    def t(self):
        raise NotImplementedError(f"t: a {self._kind()} tensor's transpose is not supported by tgrad")


class SparseBscTensor(SparseBsrTensor):
    """A 2-D block sparse column tensor (``layout=tgrad.sparse_bsc``): the BSR arrays of the block pattern's
    transpose, ``ccol_indices``, ``row_indices`` and the blocks (not transposed) column by column."""

    layout = sparse_bsc

    def _kind(self):
        return "SparseBsc"

    def _blocks(self):
        return self._col, self._rows()

    def ccol_indices(self):
        return self._index(0)

    def row_indices(self):
        return self._index(1)

    def crow_indices(self):
        raise RuntimeError("crow_indices expected sparse row compressed tensor layout but got SparseBsc")

    def col_indices(self):
        raise RuntimeError("col_indices expected sparse row compressed tensor layout but got SparseBsc")


def dense_to_bsr(x, blocksize, layout=sparse_bsr, dense_dim=None):
    """``x.to_sparse_bsr(blocksize, dense_dim)`` / ``to_sparse_bsc`` of a (*B, n, m, *dense) tensor (``dense_dim``
    = len(dense)): the (R, C) blocks with a nonzero, row (column) major in each batch (every batch the same number
    of blocks), values (*B, nnz, R, C, *dense)."""
    name = "bsr" if layout is sparse_bsr else "bsc"
    if blocksize is None:
        raise RuntimeError(f"to_sparse: blocksize is required for layout {layout}")
    r, c = (blocksize, blocksize) if isinstance(blocksize, int) else tuple(int(b) for b in blocksize)
    idt = x._idx if isinstance(x, SparseCsrTensor) else _LONG      # (a compressed input's index dtypes kept)
    if x.layout is not strided:
        x = x.to_dense()
    if x.dim() < 2:
        raise RuntimeError(f"to_sparse_{name}: expected a tensor of at least 2 dimensions, got {x.dim()}")
    dd = _check_dense_dim(x, dense_dim, name)
    k = x.dim() - dd
    batch, (n, m), dense = tuple(x._shape[:k - 2]), x._shape[k - 2:k], tuple(x._shape[k:])
    if n % r or m % c:
        raise RuntimeError(f"dense_to_sparse_{name}: tensor sparse size ({n},{m}) must be divisible by given "
                           f"blocksize ({r},{c})")
    nb = int(np.prod(batch))
    if not nb:
        raise RuntimeError(f"to_sparse_{name}: Expected product of batch dimensions to be non-zero.")
    # (batch, row block, col block, R, C, *dense)
    grid = x.reshape((nb, n // r, r, m // c, c) + dense).permute((0, 1, 3, 2, 4) + tuple(range(5, 5 + dd)))
    nz = (grid != 0).reshape(nb, n // r, m // c, -1).any(-1)
    if layout is sparse_bsc:
        nz = nz.permute(0, 2, 1)
    nmaj, nmin = nz._shape[1:]
    counts = nz.reshape(nb, nmaj * nmin).sum(1)
    nnz = int(counts[0].item())
    if (counts != nnz).any().item():
        raise RuntimeError("Expect the same number of specified elements per batch.")
    idx = nz.reshape(nb * nmaj, nmin).nonzero()
    flat, minor = idx[:, 0].contiguous(), idx[:, 1].contiguous()
    bi, major = flat.div(nmaj, rounding_mode="floor"), flat.remainder(nmaj)
    vals = grid[(bi, major, minor) if layout is sparse_bsr else (bi, minor, major)]
    crow = _batched_crow(flat, nb, nmaj, nnz)
    return _make_csr(crow.reshape(batch + (nmaj + 1,)), minor.reshape(batch + (nnz,)),
                     vals.reshape(batch + (nnz, r, c) + dense), x._shape,
                     SparseBsrTensor if layout is sparse_bsr else SparseBscTensor, idt)


def sparse_bsr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, device=None, requires_grad=False,
                      check_invariants=None):
    """``tgrad.sparse_bsr_tensor``: a 2-D BSR tensor of blocks ``values`` (nnz, R, C); without ``size``,
    ((len(crow_indices) - 1) * R, (max col + 1) * C)."""
    return _block_tensor(crow_indices, col_indices, values, size, dtype, device, requires_grad, check_invariants,
                         SparseBsrTensor)


def sparse_bsc_tensor(ccol_indices, row_indices, values, size=None, *, dtype=None, device=None, requires_grad=False,
                      check_invariants=None):
    """``tgrad.sparse_bsc_tensor``: a 2-D BSC tensor of blocks ``values`` (nnz, R, C)."""
    return _block_tensor(ccol_indices, row_indices, values, size, dtype, device, requires_grad, check_invariants,
                         SparseBscTensor)


def _block_tensor(crow, col, values, size, dtype, device, requires_grad, check_invariants, cls):
    if not isinstance(values, Tensor):
        values = from_host(np.asarray(values, dtype=np.float64 if dtype is None else dtype.np),
                           dtype or D.get_default_dtype(), _device(device))
    if values.dim() < 3:
        raise RuntimeError(f"values must have dimensionality > sum of batch and block dimensionalities (=0 + 2) but "
                           f"got {values.dim()}")
    nbd = (crow.dim() if isinstance(crow, Tensor) else np.ndim(crow)) - 1
    r, c = values._shape[nbd + 1:nbd + 3]
    dense = tuple(values._shape[nbd + 3:])              # hybrid: (*B, nnz, R, C, *dense)
    nd = len(dense)
    bsc = cls is SparseBscTensor
    if size is not None:
        size = tuple(int(n) for n in size)
        if len(size) < 2 + nd or size[len(size) - nd - 2] % r or size[len(size) - nd - 1] % c:
            raise RuntimeError(f"size {size} is not divisible by the block size ({r}, {c})")
    k = None if size is None else len(size) - nd
    bsize = None if size is None else size[:k - 2] + (size[k - 2] // r, size[k - 1] // c) + size[k:]
    t = sparse_csr_tensor(crow, col, values.select(nbd + 1, 0).select(nbd + 1, 0),
                          None if bsize is None else _swap_sparse(bsize, nd) if bsc else bsize, dtype=dtype,
                          device=device, check_invariants=check_invariants)
    bs, (n, m) = tuple(t._shape[:len(t._shape) - nd - 2]), t._shape[len(t._shape) - nd - 2:len(t._shape) - nd]
    shape = bs + ((m * r, n * c) if bsc else (n * r, m * c)) + dense
    v = values if dtype is None or values.dtype is dtype else values.to(dtype)
    v = v if device is None else v.to(device)
    out = _make_csr(t._crow, t._col, v if v.requires_grad else v.detach(), shape, cls, t._idx)
    out._idx_cache = t.__dict__.get("_idx_cache", {})
    if requires_grad:
        out.requires_grad_(True)
    return out


def is_sparse(t):
    return isinstance(t, SparseTensor)
