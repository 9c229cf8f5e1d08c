"""Tensor: a storage plus view metadata (shape, element strides, offset) and autograd state.

Every computing method calls the op table through ``dispatch.call`` (which
records the graph); metadata-only methods (``shape``, ``stride()``,
``is_contiguous()`` ...) are plain Python.  Views share their base's storage
and version counter.  The internal factories (``empty``, ``zeros``, ``full``,
``from_host`` ...) that ops and autograd build tensors with sit at the bottom,
followed by the one upward edge: the imports of the floors above.
"""
import struct
import types
import warnings
import weakref

import numpy as np

from . import dtypes as D
from . import return_types
from ._state import state as _grad_state
from ._tensor_str import format_meta, format_tensor
from .memory.meta import NO_ITEM as _NO_ITEM, READS as _meta_reads
from .device import canonical
from .device import device as Device
from .kernels import elementwise as KE
from .kernels._geometry import broadcast_shapes, contiguous_strides, preserved_strides
from .memory import Storage


class memory_format:
    """``tgrad.preserve_format`` (the default of ``clone`` and ``*_like``: keep a dense input's strides) or
    ``tgrad.contiguous_format``."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "tgrad." + self.name


preserve_format = memory_format("preserve_format")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
_CHANNELS_LAST = {channels_last: (4, (1, 3, 2, 0)), channels_last_3d: (5, (1, 4, 3, 2, 0))}


def _channels_last_strides(shape, mf):
    """The strides of a dense ``shape`` laid out as ``mf`` (channels_last / channels_last_3d)."""
    nd, order = _CHANNELS_LAST[mf]
    if len(shape) != nd:
        raise RuntimeError(f"required rank {nd} tensor to use {mf.name} format")
    strides, expected = [0] * nd, 1
    for d in order:
        strides[d] = expected
        expected *= max(shape[d], 1)
    return tuple(strides)


def _in_channels_last(t, mf):
    """``t``'s values laid out channels-last (C innermost, then W, H, (D), N), as ``contiguous(memory_format=mf)``:
    a permuted contiguous copy (itself when it already is so laid out)."""
    nd = _CHANNELS_LAST[mf][0]
    if t.dim() != nd:
        raise RuntimeError(f"required rank {nd} tensor to use {mf.name} format")
    if t.is_contiguous(memory_format=mf):
        return t
    return t.permute(0, *range(2, nd), 1).contiguous().permute(0, nd - 1, *range(1, nd - 1))


def _check_memory_format(fn, mf):
    """True for preserve_format (or None), False for contiguous_format."""
    if mf is None or mf is preserve_format:
        return True
    if mf is contiguous_format:
        return False
    raise TypeError(f"{fn}(): argument 'memory_format' must be torch.memory_format, not {type(mf).__name__}")


class Size(tuple):
    """``torch.Size``: a tuple of ints that prints as ``tgrad.Size([2, 3])``."""

    def __repr__(self):
        return f"tgrad.Size({list(self)})"

    __str__ = __repr__

    def numel(self):
        n = 1
        for d in self:
            n *= d
        return n

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Size(r) if isinstance(i, slice) else r


_NO_HOOKS = types.MappingProxyType({})   # Tensor._tensor_hooks until register_hook


class UntypedStorage:
    """The public view of a tensor's memory (``Tensor.untyped_storage()``): its bytes, one object per storage."""

    _cache = weakref.WeakValueDictionary()       # id(Storage) -> its UntypedStorage (it keeps the Storage alive)

    def __new__(cls, storage):
        u = cls._cache.get(id(storage))
        if u is None or u._storage is not storage:
            u = object.__new__(cls)
            u._storage = storage
            cls._cache[id(storage)] = u
        return u

    def data_ptr(self):
        return self._storage.ptr

    def nbytes(self):
        return self._storage.nbytes

    def size(self):
        return self._storage.nbytes

    def __len__(self):
        return self._storage.nbytes

    def element_size(self):
        return 1

    @property
    def device(self):
        return self._storage.device

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    def tolist(self):
        return _storage_values(self._storage, D.uint8, self._storage.nbytes).tolist()

    def __repr__(self):
        return _storage_repr(self, "UntypedStorage(device={})".format(self.device))


class TypedStorage:
    """``Tensor.storage()`` (deprecated in PyTorch): the storage seen as ``dtype`` elements."""

    def __init__(self, storage, dtype):
        self._untyped, self.dtype = UntypedStorage(storage), dtype

    def untyped(self):
        return self._untyped

    def data_ptr(self):
        return self._untyped.data_ptr()

    def nbytes(self):
        return self._untyped.nbytes()

    def size(self):
        return self._untyped.nbytes() // self.dtype.itemsize

    def __len__(self):
        return self.size()

    def element_size(self):
        return self.dtype.itemsize

    @property
    def device(self):
        return self._untyped.device

    @property
    def is_cuda(self):
        return self._untyped.is_cuda

    def tolist(self):
        return _storage_values(self._untyped._storage, self.dtype, self.size()).tolist()

    def __repr__(self):
        return _storage_repr(self, f"TypedStorage(dtype={self.dtype}, device={self.device})")


def _storage_values(storage, dtype, count):
    arr = np.empty(count, dtype.np)
    if count:
        storage.copy_to_host(arr.ctypes.data, count * dtype.itemsize)
    return arr


def _storage_repr(st, what):
    """PyTorch's storage repr: one element a line, then ``[tgrad.storage.<what> of size n]`` (meta: ``...``)."""
    if st.device.type == "meta":
        return f"...\n[tgrad.storage.{what} of size {len(st)}]"
    return "".join(f" {v}\n" for v in st.tolist()) + f"[tgrad.storage.{what} of size {len(st)}]"


class Tensor:
    """A multi-dimensional array on a device, with PyTorch's autograd semantics."""

    __array_priority__ = 1000  # numpy defers to Tensor's reflected operators

    # per-tensor fields until first set (``_init_from`` stores only the others)
    _requires_grad = False
    _grad_fn = None
    _view_mode = None  # views made by view ops: True / "multi" in grad mode, False in no_grad
    _grad = None
    _base = None
    _is_conj = False    # the lazy conjugate bit: the values are the conjugates of the stored ones (conj())
    _output_nr = 0
    _retains_grad = False
    _tensor_hooks = _NO_HOOKS    # read-only: register_hook gives the tensor its own dict
    _grad_accumulator = None

    def __init__(self, *args, **kwargs):
        # tgrad.Tensor(3, 4) / tgrad.Tensor([1, 2]) legacy constructors
        if len(args) == 1 and not isinstance(args[0], int):
            t = _creation.tensor(args[0], dtype=D.get_default_dtype())
        else:
            t = _creation.empty(*args, dtype=D.get_default_dtype(), **kwargs)
        _init_from(self, t._storage, t._offset, t._shape, t._strides, t.dtype, counter=t._version_counter)

    # ------------------------------------------------------------ metadata
    @property
    def shape(self):
        return Size(self._shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._shape)
        return self._shape[_wrap_dim(dim, len(self._shape))]

    def dim(self):
        return len(self._shape)

    ndimension = dim

    @property
    def ndim(self):
        return len(self._shape)

    def numel(self):
        n = 1
        for d in self._shape:
            n *= d
        return n

    nelement = numel

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    @property
    def device(self):
        return self._storage.device

    @property
    def is_cuda(self):
        return self._storage.device.type == "cuda"

    @property
    def is_cpu(self):
        return self._storage.device.type == "cpu"

    @property
    def is_meta(self):
        """True for a tensor of the ``meta`` device (shape, dtype and strides, no memory)."""
        return self._storage.device.type == "meta"

    is_sparse = False       # True on _sparse.SparseTensor (layout tgrad.sparse_coo)
    is_sparse_csr = False

    @property
    def layout(self):
        return _sparse.strided

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        if layout not in (None, _sparse.sparse_coo, _sparse.sparse_csr, _sparse.sparse_csc, _sparse.sparse_bsr,
                          _sparse.sparse_bsc):
            raise NotImplementedError(f"to_sparse: layout {layout} is not supported")
        if dense_dim is not None and layout not in (_sparse.sparse_csr, _sparse.sparse_csc, _sparse.sparse_bsr,
                                                    _sparse.sparse_bsc):
            raise NotImplementedError("to_sparse: dense_dim of a COO tensor is not supported")
        if layout in (_sparse.sparse_bsr, _sparse.sparse_bsc):
            return _sparse.dense_to_bsr(self, blocksize, layout, dense_dim)
        if blocksize is not None:
            raise RuntimeError(f"to_sparse: blocksize belongs to the block layouts, not to {layout}")
        if layout is _sparse.sparse_csr:
            return _sparse.dense_to_csr(self, dense_dim)
        if layout is _sparse.sparse_csc:
            return _sparse.dense_to_csc(self, dense_dim)
        return _sparse.dense_to_sparse(self, sparse_dim)

    def to_sparse_bsr(self, blocksize, dense_dim=None):
        return _sparse.dense_to_bsr(self, blocksize, _sparse.sparse_bsr, dense_dim)

    def to_sparse_bsc(self, blocksize, dense_dim=None):
        return _sparse.dense_to_bsr(self, blocksize, _sparse.sparse_bsc, dense_dim)

    def to_sparse_coo(self):
        return self.to_sparse()

    def to_sparse_csr(self, dense_dim=None):
        return _sparse.dense_to_csr(self, dense_dim)

    def crow_indices(self):
        raise RuntimeError(f"crow_indices expected sparse row compressed tensor layout but got "
                           f"{'Sparse' if self.is_sparse else 'Strided'}")

    def col_indices(self):
        raise RuntimeError(f"col_indices expected sparse row compressed tensor layout but got "
                           f"{'Sparse' if self.is_sparse else 'Strided'}")

    def ccol_indices(self):
        raise RuntimeError(f"ccol_indices expected sparse column compressed tensor layout but got "
                           f"{'Sparse' if self.is_sparse else 'Strided'}")

    def row_indices(self):
        raise RuntimeError(f"row_indices expected sparse column compressed tensor layout but got "
                           f"{'Sparse' if self.is_sparse else 'Strided'}")

    def to_sparse_csc(self, dense_dim=None):
        return _sparse.dense_to_csc(self, dense_dim)

    def to_dense(self, dtype=None, *, masked_grad=None):
        return self if dtype is None or dtype is self.dtype else self.to(dtype)

    def sparse_mask(self, mask):
        return _sparse.sparse_mask(self, mask)

    # devices tgrad does not have: PyTorch's device tests are False on every tgrad tensor
    is_xpu = is_mps = is_mkldnn = is_vulkan = is_ipu = is_hpu = is_mtia = is_maia = False

    def get_device(self):
        return -1 if self.device.type != "cuda" else self.device.index

    def stride(self, dim=None):
        if dim is None:
            return tuple(self._strides)
        return self._strides[_wrap_dim(dim, len(self._shape))]

    def storage_offset(self):
        return self._offset

    def is_contiguous(self, memory_format=None):
        """Dense in row-major order; with channels_last(_3d): dense with C innermost, then W, H, (D), N (a 4-d
        (5-d) tensor only; size-1 dims' strides do not matter, as ATen's compute_channels_last_contiguous)."""
        if memory_format in _CHANNELS_LAST:
            nd, order = _CHANNELS_LAST[memory_format]
            if self.dim() != nd:
                return False
            expected = 1
            for d in order:
                if self._shape[d] != 1:
                    if self._strides[d] != expected:
                        return False
                    expected *= self._shape[d]
            return True
        if 0 in self._shape:
            return True             # no element is addressed (PyTorch)
        expected = 1
        for d, s in zip(reversed(self._shape), reversed(self._strides)):
            if d != 1 and s != expected:
                return False
            expected *= d
        return True

    def record_stream(self, stream):
        """Mark this tensor's memory as used by ``stream`` (a ``tgrad.cuda.Stream``): when the tensor is freed, the
        caching allocator reuses the memory only once the work queued on ``stream`` by then is done."""
        if self.device.type != "cuda":
            raise NotImplementedError(f"Could not run 'aten::record_stream' with arguments from the "
                                      f"'{self.device.type.upper()}' backend.")
        if stream.device != self.device:
            raise RuntimeError(f"record_stream: the stream is on {stream.device}, the tensor on {self.device}")
        st = self._storage
        st.allocator.record_stream(st._block, stream.device_index, stream.cuda_stream, stream)

    def data_ptr(self):
        return self._storage.ptr + self._offset * self.dtype.itemsize

    def element_size(self):
        return self.dtype.itemsize

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.numel() * self.dtype.itemsize

    def untyped_storage(self):
        return UntypedStorage(self._storage)

    def storage(self):
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the "
                      "only storage class. This should only matter to you if you are using storages directly.  To "
                      "access UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()",
                      UserWarning, stacklevel=2)
        return TypedStorage(self._storage, self.dtype)

    def is_floating_point(self):
        return self.dtype.is_floating_point

    def is_complex(self):
        return self.dtype._kind == 3

    @property
    def real(self):
        """A view of the real parts (a real tensor: itself)."""
        return _call("real", self) if self.dtype._kind == 3 else self

    @real.setter
    def real(self, value):
        self.real.copy_(value)

    @property
    def imag(self):
        """A view of the imaginary parts (complex tensors only)."""
        return _call("imag", self)

    @imag.setter
    def imag(self, value):
        self.imag.copy_(value)

    @property
    def is_leaf(self):
        return self.grad_fn is None

    def is_inference(self):
        return self._inference

    def _is_view(self):
        return self._view_mode is not None

    def type(self, dtype=None):
        if dtype is None:
            prefix = "tgrad.cuda." if self.is_cuda else "tgrad."
            return prefix + D.TENSOR_TYPE_NAMES[self.dtype]
        if isinstance(dtype, str):      # "tgrad.FloatTensor", "torch.cuda.LongTensor"
            mod, _, name = dtype.rpartition(".")
            found = [d for d, n in D.TENSOR_TYPE_NAMES.items() if n == name]
            if not found or mod not in ("tgrad", "torch", "tgrad.cuda", "torch.cuda"):
                raise ValueError(f"invalid type: '{dtype}'")
            return self.to(device="cuda" if mod.endswith("cuda") else "cpu", dtype=found[0])
        return self.to(dtype)

    # ------------------------------------------------------------ autograd state
    @property
    def grad_fn(self):
        """The node that made this tensor (None for leaves).

        A view whose base was modified in place since its grad_fn was set gets
        a fresh ``AsStridedBackward0`` of the base's current history.
        """
        if self._view_mode and self._version_counter[0] != self._grad_fn_version:
            _dispatch.refresh_view_grad_fn(self)
        return self._grad_fn

    @property
    def _version(self):
        """How many times the tensor (or a view of it, or its detach()) was modified in place: an int, as in
        PyTorch; the counter itself is ``_version_counter``, a one-element list they share."""
        return self._version_counter[0]

    @property
    def requires_grad(self):
        return self._requires_grad or (self._view_mode is not None and self._base.requires_grad)

    @requires_grad.setter
    def requires_grad(self, value):
        """Unlike ``requires_grad_(True)``, setting the flag on a non-leaf always raises (PyTorch)."""
        if type(value) is not bool:
            raise RuntimeError("requires_grad must be a bool")
        if self.grad_fn is not None:
            raise RuntimeError(_NON_LEAF_FLAG_MSG + ("" if value else _NON_LEAF_FLAG_HINT))
        self._set_requires_grad(value, "only Tensors of floating point and complex dtype can require gradients")

    def requires_grad_(self, requires_grad=True):
        return self._set_requires_grad(requires_grad, "only Tensors of floating point dtype can require gradients")

    def _set_requires_grad(self, requires_grad,
                           dtype_error="Only Tensors of floating point and complex dtype can require gradients"):
        """requires_grad_ with the wording of the caller's dtype error (PyTorch's differ: requires_grad_(),
        the attribute, and factories / Parameter / Variable, the default)."""
        if self.grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(_NON_LEAF_FLAG_MSG + _NON_LEAF_FLAG_HINT)
            return self
        if requires_grad and not self.dtype.is_floating_point and self.dtype._kind != 3:
            raise RuntimeError(dtype_error)
        if requires_grad and self._inference:
            if not _grad_state.inference:
                raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is "
                                   "not allowed.")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def grad(self):
        if self._grad is None and self.grad_fn is not None and not self._retains_grad:
            import warnings
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
                "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
                "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
                "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
                "instead. See github.com/pytorch/pytorch/pull/30531 for more information.",
                UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        _graph.check_grad_assignment(self, value)
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    def retain_grad(self):
        """Keep the gradient of this non-leaf in ``.grad`` during backward (no-op for leaves)."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None or self._retains_grad:
            return
        self.grad_fn.__dict__.setdefault("_retain_refs", {})[id(self)] = (self._output_nr, weakref.ref(self))
        self._retains_grad = True

    @property
    def retains_grad(self):
        return self._retains_grad

    def register_hook(self, hook):
        """hook(grad) -> None or a replacement gradient; runs when this tensor's gradient is computed.

        On a non-leaf the hooks live on its grad_fn (as PyTorch's tensor pre-hooks), so they run even
        if the tensor itself is gone; on a leaf its AccumulateGrad runs them.
        """
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._tensor_hooks is _NO_HOOKS:
            self._tensor_hooks = {}
        h = _graph.RemovableHandle(self._tensor_hooks)
        if self.grad_fn is not None and not self._tensor_hooks:    # attached once (x.t_() keeps it on the old node)
            self.grad_fn.__dict__.setdefault("_tensor_pre_hooks", {})[id(self._tensor_hooks)] = \
                (self._output_nr, self._tensor_hooks)
        self._tensor_hooks[h.id] = hook
        return h

    def register_post_accumulate_grad_hook(self, hook):
        """hook(tensor) runs after the gradient has been accumulated into ``.grad`` of this leaf."""
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        hooks = self.__dict__.setdefault("_post_accumulate_hooks", {})
        h = _graph.RemovableHandle(hooks)
        hooks[h.id] = hook
        return h

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) (times ``gradient``) into the ``.grad`` of the graph's leaves."""
        _engine.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def detach(self):
        """A new tensor sharing storage and version counter, outside the graph."""
        return self._detached_alias()

    def detach_(self):
        if self._view_mode is not None:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel "
                "(DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP "
                "buckets, and hence detach_() cannot be called on these gradients. To fix this error, please "
                "refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.")
        self._grad_fn = None
        self._requires_grad = False
        return self

    @property
    def data(self):
        """A detached alias with a fresh version counter: changes made through it are not tracked (PyTorch)."""
        t = _new(self._storage, self._offset, self._shape, self._strides, self.dtype)
        t._inference = self._inference
        if self._is_conj:
            _mark_conj(t)
        return t

    @data.setter
    def data(self, value):
        """Swap in ``value``'s storage and geometry; identity, grad_fn and requires_grad stay."""
        if not isinstance(value, Tensor):
            raise TypeError("data must be a Tensor")
        self._storage = value._storage
        self._offset = value._offset
        self._shape = value._shape
        self._strides = value._strides
        self.dtype = value.dtype

    # ------------------------------------------------------------ arithmetic (op table)
    def _wrap(self, other):
        """Scalars become 0-dim tensors of the promoted dtype on self's device."""
        if isinstance(other, Tensor):
            return other
        if isinstance(other, (int, float, bool, complex, np.number, np.bool_)):
            return scalar(other, D.result_type(self, other), self.device)
        if isinstance(other, (list, tuple, np.ndarray)):
            return _creation.tensor(other, device=self.device)
        raise TypeError(f"unsupported operand type: '{type(other).__name__}'")

    def _wrap_opmath(self, other):
        """mul/div: a Python number meets a float16/bfloat16 tensor as a float32 value, as in PyTorch (whose
        kernels take it in float32, "opmath"); the result keeps self's dtype, a 0-dim operand not promoting
        a tensor with dims of its category.  (A 0-dim self gets the number in its own dtype.)"""
        if isinstance(other, Tensor):
            return other
        if (self.dtype is D.float16 or self.dtype is D.bfloat16) and self._shape and isinstance(other, (int, float)) \
                and not isinstance(other, bool):
            return scalar(other, D.float32, self.device)
        return self._wrap(other)

    def _rwrap(self, other):
        if isinstance(other, Tensor):
            return other
        return scalar(other, D.result_type(self, other), self.device)

    def add(self, other, *, alpha=1):
        if type(other) is Tensor:
            return _call("add", self, other, alpha=alpha)
        if type(other) is _SparseTensor:
            return _sparse.add_dense(self, other, alpha)
        if isinstance(other, _sparse.SparseCsrTensor):
            return _sparse.add_dense(self, other.to_sparse(), alpha)
        if type(alpha) is int and alpha == 1:      # (the default) a Python number may be a kernel argument
            r = _scalar_op("add", self, other)
            if r is not None:
                return r
        return _call("add", self, self._wrap(other), alpha=alpha)

    __add__ = add

    def add_(self, other, *, alpha=1):
        if type(other) is not Tensor:
            if type(other) is _SparseTensor:
                return _sparse.add_dense(self, other, alpha, inplace=True)
            if type(alpha) is int and alpha == 1:
                r = _inplace_scalar("add", self, other)
                if r is not None:
                    return r
        return _inplace("add", self, self._wrap(other), alpha=alpha)

    def _wrap_sub(self, other):
        """A Python bool stays bool, so that sub refuses it as PyTorch does (``x - True``)."""
        if isinstance(other, Tensor):
            return other
        if isinstance(other, (bool, np.bool_)):
            return scalar(other, D.bool_, self.device)
        return self._wrap(other)

    def sub(self, other, *, alpha=1):
        if type(other) is Tensor:
            return _call("sub", self, other, alpha=alpha)
        if type(alpha) is int and alpha == 1:
            r = _scalar_op("sub", self, other)
            if r is not None:
                return r
        return _call("sub", self, self._wrap_sub(other), alpha=alpha)

    __sub__ = sub

    def sub_(self, other, *, alpha=1):
        if type(alpha) is int and alpha == 1 and type(other) is not Tensor:
            r = _inplace_scalar("sub", self, other)
            if r is not None:
                return r
        return _inplace("sub", self, self._wrap_sub(other), alpha=alpha)

    subtract = sub

    def mul(self, other):
        if type(other) is Tensor:
            return _call("mul", self, other)
        if type(other) in (_sparse.SparseCsrTensor, _sparse.SparseCscTensor, _SparseTensor) and self.dim():
            return other.mul(self)          # dense * sparse: the sparse operand's pattern
        r = _scalar_op("mul", self, other)
        return r if r is not None else _call("mul", self, self._wrap_opmath(other))

    __mul__ = mul

    def mul_(self, other):
        if type(other) is not Tensor:
            r = _inplace_scalar("mul", self, other)
            if r is not None:
                return r
        return _inplace("mul", self, self._wrap_opmath(other))

    multiply = mul

    def div(self, other, *, rounding_mode=None):
        if rounding_mode is not None:
            return _call("div_mode", self, self._wrap(other), rounding_mode=rounding_mode)
        if type(other) is Tensor:
            return _call("div", self, other)
        r = _scalar_op("div", self, other)
        return r if r is not None else _call("div", self, self._wrap_opmath(other))

    def div_(self, other, *, rounding_mode=None):
        if rounding_mode is not None:
            return _inplace("div_mode", self, self._wrap(other), rounding_mode=rounding_mode)
        if type(other) is not Tensor:
            r = _inplace_scalar("div", self, other)
            if r is not None:
                return r
        return _inplace("div", self, self._wrap_opmath(other))

    divide = div
    true_divide = div

    def neg(self):
        return _call("neg", self)

    def neg_(self):
        return _inplace("neg", self)

    negative = neg

    def __radd__(self, other):
        r = _scalar_op("add", self, other)     # (x + s and s + x: the same bits)
        return r if r is not None else _call("add", self._rwrap(other), self)

    def __iadd__(self, other):
        return self.add_(other)

    def __rsub__(self, other):
        r = _scalar_op("rsub", self, other)
        if r is not None:
            return r
        return _call("rsub", self, self._wrap_sub(other) if isinstance(other, (bool, np.bool_)) else
                     self._rwrap(other), alpha=1)

    def __isub__(self, other):
        return self.sub_(other)

    def __rmul__(self, other):
        r = _scalar_op("mul", self, other)
        return r if r is not None else _call("mul", self._wrap_opmath(other), self)

    def __imul__(self, other):
        return self.mul_(other)

    def __truediv__(self, other):
        return self.div(other)

    def __rtruediv__(self, other):
        return self.reciprocal().mul(other)         # as PyTorch computes it (grad_fn MulBackward0)

    def __itruediv__(self, other):
        return self.div_(other)

    def __neg__(self):
        return self.neg()

    def pow(self, exponent):
        if isinstance(exponent, Tensor):
            return _call("pow_tensor", self, exponent)
        return _call("pow", self, exponent=exponent)

    __pow__ = pow

    def pow_(self, exponent):
        if isinstance(exponent, Tensor):
            return _inplace("pow_tensor", self, exponent)
        return _inplace("pow", self, exponent=exponent)

    def __ipow__(self, exponent):
        return self.pow_(exponent)

    def __rpow__(self, base):
        return _call("pow_scalar_base", self, base=base)

    def exp(self):
        return _call("exp", self)

    def exp_(self):
        return _inplace("exp", self)

    def __pos__(self):
        return self

    # ------------------------------------------------------------ linear algebra (ops/matmul.py)
    def matmul(self, other):
        if isinstance(other, _sparse.SparseCsrTensor):
            return _sparse.dense_mm_compressed(self, other)
        if self.dtype._kind == 3 or getattr(other, "dtype", self.dtype)._kind == 3:
            return _fm.complex_bilinear(Tensor.matmul, self, other)
        return _ops.matmul.matmul(self, other)

    def __matmul__(self, other):
        return self.matmul(other)

    def __rmatmul__(self, other):
        return other.matmul(self)

    def mm(self, mat2):
        if isinstance(mat2, _sparse.SparseCsrTensor):
            return _sparse.dense_mm_compressed(self, mat2)
        if self.dtype._kind == 3 or mat2.dtype._kind == 3:
            return _fm.complex_bilinear(Tensor.mm, self, mat2)
        return _call("mm", self, mat2)

    def bmm(self, mat2):
        if self.dtype._kind == 3 or mat2.dtype._kind == 3:
            return _fm.complex_bilinear(Tensor.bmm, self, mat2)
        return _call("bmm", self, mat2)

    def mv(self, vec):
        if self.dtype._kind == 3 or vec.dtype._kind == 3:
            return _fm.complex_bilinear(Tensor.mv, self, vec)
        return _call("mv", self, vec)

    def dot(self, tensor):
        if self.dtype._kind == 3 and tensor.dtype is self.dtype:
            return _fm.complex_bilinear(Tensor.dot, self, tensor)
        return _call("dot", self, tensor)

    def vdot(self, other):
        """sum(conj(self) * other)."""
        if self.dtype._kind == 3 and other.dtype is self.dtype:
            return self.conj().dot(other)
        return _call("vdot", self, other)

    def inner(self, other):
        """sum over the last dim of self and other: shape self.shape[:-1] + other.shape[:-1] (a product when
        either is 0-d); PyTorch's tensordot composition, so the grad_fn is ViewBackward0."""
        if self.dim() == 0 or other.dim() == 0:
            return self.mul(other)
        if self._shape[-1] != other._shape[-1]:
            raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                               f"{list(self.shape)} and {list(other.shape)}")
        k = self._shape[-1]
        prod = self.reshape(-1, k).mm(other.reshape(-1, k).t())
        return prod.reshape(self._shape[:-1] + other._shape[:-1])

    def outer(self, vec2):
        return _ops.matmul.outer(self, vec2)

    ger = outer

    def addmm(self, mat1, mat2, *, beta=1, alpha=1):
        if mat1.layout is not _sparse.strided or mat2.layout is not _sparse.strided:
            return _sparse.addmm(self, mat1, mat2, beta, alpha)
        return _call("addmm", self, mat1, mat2, beta=beta, alpha=alpha)

    def baddbmm(self, batch1, batch2, *, beta=1, alpha=1):
        return _call("baddbmm", self, batch1, batch2, beta=beta, alpha=alpha)

    # ------------------------------------------------------------ element-wise math (ops/elementwise.py)
    def _binop(self, name, other, **kw):
        return _call(name, self, self._wrap(other), **kw)

    def _ibinop(self, name, other, **kw):
        return _inplace(name, self, self._wrap(other), **kw)

    def abs(self):
        return _call("abs", self)

    def abs_(self):
        return _inplace("abs", self)

    absolute = abs
    __abs__ = abs

    def sign(self):
        return _call("sign", self)

    def sign_(self):
        return _inplace("sign", self)

    def exp2(self):
        return _call("exp2", self)

    def exp2_(self):
        return _inplace("exp2", self)

    def log(self):
        return _call("log", self)

    def log_(self):
        return _inplace("log", self)

    def log2(self):
        return _call("log2", self)

    def log2_(self):
        return _inplace("log2", self)

    def log10(self):
        return _call("log10", self)

    def log10_(self):
        return _inplace("log10", self)

    def log1p(self):
        return _call("log1p", self)

    def log1p_(self):
        return _inplace("log1p", self)

    def expm1(self):
        return _call("expm1", self)

    def expm1_(self):
        return _inplace("expm1", self)

    def sqrt(self):
        return _call("sqrt", self)

    def sqrt_(self):
        return _inplace("sqrt", self)

    def rsqrt(self):
        return _call("rsqrt", self)

    def rsqrt_(self):
        return _inplace("rsqrt", self)

    def square(self):
        return _call("pow", self, exponent=2)

    def square_(self):
        return _inplace("pow", self, exponent=2)

    def reciprocal(self):
        return _call("reciprocal", self)

    def reciprocal_(self):
        return _inplace("reciprocal", self)

    def sin(self):
        return _call("sin", self)

    def sin_(self):
        return _inplace("sin", self)

    def cos(self):
        return _call("cos", self)

    def cos_(self):
        return _inplace("cos", self)

    def tan(self):
        return _call("tan", self)

    def tan_(self):
        return _inplace("tan", self)

    def asin(self):
        return _call("asin", self)

    def asin_(self):
        return _inplace("asin", self)

    def acos(self):
        return _call("acos", self)

    def acos_(self):
        return _inplace("acos", self)

    def atan(self):
        return _call("atan", self)

    def atan_(self):
        return _inplace("atan", self)

    def sinh(self):
        return _call("sinh", self)

    def sinh_(self):
        return _inplace("sinh", self)

    def cosh(self):
        return _call("cosh", self)

    def cosh_(self):
        return _inplace("cosh", self)

    def asinh(self):
        return _call("asinh", self)

    def asinh_(self):
        return _inplace("asinh", self)

    def acosh(self):
        return _call("acosh", self)

    def acosh_(self):
        return _inplace("acosh", self)

    def atanh(self):
        return _call("atanh", self)

    def atanh_(self):
        return _inplace("atanh", self)

    def erfc(self):
        return _call("erfc", self)

    def erfc_(self):
        return _inplace("erfc", self)

    def lgamma(self):
        return _call("lgamma", self)

    def lgamma_(self):
        return _inplace("lgamma", self)

    def digamma(self):
        return _call("digamma", self)

    def digamma_(self):
        return _inplace("digamma", self)

    def polygamma(self, n):
        return _call("polygamma", self, n=int(n))

    def polygamma_(self, n):
        return _inplace("polygamma", self, n=int(n))

    def erfinv(self):
        return _call("erfinv", self)

    def erfinv_(self):
        return _inplace("erfinv", self)

    def i0(self):
        return _call("i0", self)

    def i0_(self):
        return _inplace("i0", self)

    def igamma(self, other):
        return _call("igamma", self, tensor_arg("igamma", other))

    def igamma_(self, other):
        return _inplace("igamma", self, tensor_arg("igamma_", other))

    def igammac(self, other):
        return _call("igammac", self, tensor_arg("igammac", other))

    def igammac_(self, other):
        return _inplace("igammac", self, tensor_arg("igammac_", other))

    def nextafter(self, other):
        return _call("nextafter", self, tensor_arg("nextafter", other))

    def nextafter_(self, other):
        return _inplace("nextafter", self, tensor_arg("nextafter_", other))

    def frexp(self):
        """(mantissa, exponent): self = mantissa * 2^exponent, |mantissa| in [0.5, 1), exponent int32."""
        return return_types.frexp(*_call("frexp", self))

    def mvlgamma(self, p):
        """sum_i lgamma(x - i/2) over i < p, + p(p-1)/4 log pi (PyTorch's composite, which no longer checks
        x > (p-1)/2)."""
        if p < 1:
            raise RuntimeError("p has to be greater than or equal to 1")
        dt = self.dtype if self.dtype.is_floating_point else D.get_default_dtype()
        args = self.unsqueeze(-1) + from_host(np.arange(-p * 0.5 + 0.5, 0.5, 0.5), dt, self.device)
        return args.lgamma().sum(-1) + (p * (p - 1)) * 0.28618247146235004    # log(pi) / 4

    def mvlgamma_(self, p):
        return self.copy_(self.mvlgamma(p))

    arcsin, arcsin_, arccos, arccos_, arctan, arctan_ = asin, asin_, acos, acos_, atan, atan_
    arcsinh, arcsinh_, arccosh, arccosh_, arctanh, arctanh_ = asinh, asinh_, acosh, acosh_, atanh, atanh_

    def tanh(self):
        return _call("tanh", self)

    def tanh_(self):
        return _inplace("tanh", self)

    def sigmoid(self):
        return _call("sigmoid", self)

    def sigmoid_(self):
        return _inplace("sigmoid", self)

    def hardshrink(self, lambd=0.5):
        return _call("hardshrink", self, lambd=lambd)

    def relu(self):
        return _call("relu", self)

    def relu_(self):
        return _inplace("relu", self)

    def erf(self):
        return _call("erf", self)

    def erf_(self):
        return _inplace("erf", self)

    def floor(self):
        return _call("floor", self)

    def floor_(self):
        return _inplace("floor", self)

    def ceil(self):
        return _call("ceil", self)

    def ceil_(self):
        return _inplace("ceil", self)

    def round(self, *, decimals=0):
        if decimals:
            return _call("round_decimals", self, decimals=decimals)
        return _call("round", self)

    def round_(self, *, decimals=0):
        if decimals:
            return _inplace("round_decimals", self, decimals=decimals)
        return _inplace("round", self)

    def __round__(self, ndigits=None):
        return self.round(decimals=ndigits or 0)

    def trunc(self):
        return _call("trunc", self)

    def trunc_(self):
        return _inplace("trunc", self)

    fix = trunc
    fix_ = trunc_

    def frac(self):
        return _call("frac", self)

    def frac_(self):
        return _inplace("frac", self)

    def isnan(self):
        return _call("isnan", self)

    def isinf(self):
        return _call("isinf", self)

    def isfinite(self):
        return _call("isfinite", self)

    def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
        return _call("nan_to_num", self, nan=nan, posinf=posinf, neginf=neginf)

    def nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
        return _inplace("nan_to_num", self, nan=nan, posinf=posinf, neginf=neginf)

    def maximum(self, other):
        return _call("maximum", self, tensor_arg("maximum", other))

    def minimum(self, other):
        return _call("minimum", self, tensor_arg("minimum", other))

    def fmod(self, other):
        return self._binop("fmod" if isinstance(other, Tensor) else "fmod_scalar", other)

    def fmod_(self, other):
        return self._ibinop("fmod" if isinstance(other, Tensor) else "fmod_scalar", other)

    def remainder(self, other):
        return self._binop("remainder" if isinstance(other, Tensor) else "remainder_scalar", other)

    def remainder_(self, other):
        return self._ibinop("remainder" if isinstance(other, Tensor) else "remainder_scalar", other)

    def floor_divide(self, other):
        return self._binop("div_mode", other, rounding_mode="floor")

    def floor_divide_(self, other):
        return self._ibinop("div_mode", other, rounding_mode="floor")

    def __floordiv__(self, other):
        return self.floor_divide(other)

    def __rfloordiv__(self, other):
        return _call("div_mode", self._rwrap(other), self, rounding_mode="floor")

    def __ifloordiv__(self, other):
        return self.floor_divide_(other)

    def __mod__(self, other):
        return self.remainder(other)

    def __rmod__(self, other):
        return _call("remainder", self._rwrap(other), self)

    def __imod__(self, other):
        return self.remainder_(other)

    def atan2(self, other):
        return _call("atan2", self, tensor_arg("atan2", other))

    def atan2_(self, other):
        return _inplace("atan2", self, tensor_arg("atan2_", other))

    def arctan2(self, other):
        return _call("atan2", self, tensor_arg("arctan2", other))

    def arctan2_(self, other):
        return _inplace("atan2", self, tensor_arg("arctan2_", other))

    def eq(self, other):
        return self._binop("eq", other)

    def eq_(self, other):
        return self._ibinop("eq", other)

    def ne(self, other):
        return self._binop("ne", other)

    def ne_(self, other):
        return self._ibinop("ne", other)

    def lt(self, other):
        return self._binop("lt", other)

    def lt_(self, other):
        return self._ibinop("lt", other)

    def le(self, other):
        return self._binop("le", other)

    def le_(self, other):
        return self._ibinop("le", other)

    def gt(self, other):
        return self._binop("gt", other)

    def gt_(self, other):
        return self._ibinop("gt", other)

    def ge(self, other):
        return self._binop("ge", other)

    def ge_(self, other):
        return self._ibinop("ge", other)

    not_equal, less, less_equal, greater, greater_equal = ne, lt, le, gt, ge
    not_equal_, less_, less_equal_, greater_, greater_equal_ = ne_, lt_, le_, gt_, ge_

    def __eq__(self, other):
        if not isinstance(other, (Tensor, int, float, bool, complex, np.number, np.bool_)):
            return NotImplemented
        return self.eq(other)

    def __ne__(self, other):
        if not isinstance(other, (Tensor, int, float, bool, complex, np.number, np.bool_)):
            return NotImplemented
        return self.ne(other)

    def __lt__(self, other):
        return self.lt(other)

    def __le__(self, other):
        return self.le(other)

    def __gt__(self, other):
        return self.gt(other)

    def __ge__(self, other):
        return self.ge(other)

    def logical_and(self, other):
        return _call("logical_and", self, tensor_arg("logical_and", other))

    def logical_and_(self, other):
        return _inplace("logical_and", self, tensor_arg("logical_and_", other))

    def logical_or(self, other):
        return _call("logical_or", self, tensor_arg("logical_or", other))

    def logical_or_(self, other):
        return _inplace("logical_or", self, tensor_arg("logical_or_", other))

    def logical_xor(self, other):
        return _call("logical_xor", self, tensor_arg("logical_xor", other))

    def logical_xor_(self, other):
        return _inplace("logical_xor", self, tensor_arg("logical_xor_", other))

    def logical_not(self):
        return _call("logical_not", self)

    def logical_not_(self):
        return _inplace("logical_not", self)

    def bitwise_and(self, other):
        return self._binop("bitwise_and", other)

    def bitwise_and_(self, other):
        return self._ibinop("bitwise_and", other)

    def bitwise_or(self, other):
        return self._binop("bitwise_or", other)

    def bitwise_or_(self, other):
        return self._ibinop("bitwise_or", other)

    def bitwise_xor(self, other):
        return self._binop("bitwise_xor", other)

    def bitwise_xor_(self, other):
        return self._ibinop("bitwise_xor", other)

    def bitwise_not(self):
        return _call("bitwise_not", self)

    def bitwise_not_(self):
        return _inplace("bitwise_not", self)

    __and__, __or__, __xor__ = bitwise_and, bitwise_or, bitwise_xor

    def __invert__(self):
        if self.dtype.is_floating_point or self.dtype.is_complex:
            raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
        return self.bitwise_not()

    __rand__, __ror__, __rxor__ = bitwise_and, bitwise_or, bitwise_xor
    __iand__, __ior__, __ixor__ = bitwise_and_, bitwise_or_, bitwise_xor_

    def bitwise_left_shift(self, other):
        return self._binop("bitwise_left_shift", other)

    def bitwise_left_shift_(self, other):
        return self._ibinop("bitwise_left_shift", other)

    def bitwise_right_shift(self, other):
        return self._binop("bitwise_right_shift", other)

    def bitwise_right_shift_(self, other):
        return self._ibinop("bitwise_right_shift", other)

    __lshift__, __rshift__ = bitwise_left_shift, bitwise_right_shift
    __ilshift__, __irshift__ = bitwise_left_shift_, bitwise_right_shift_

    def __rlshift__(self, other):
        return _call("bitwise_left_shift", self._rwrap(other), self)

    def __rrshift__(self, other):
        return _call("bitwise_right_shift", self._rwrap(other), self)

    def where(self, condition, other):
        return _call("where", condition, self, self._wrap(other))

    def clamp(self, min=None, max=None):
        if isinstance(min, Tensor) or isinstance(max, Tensor):
            return _call("clamp_tensor", self, *_clamp_bounds(self, min, max))
        return _call("clamp", self, min=min, max=max)

    def clamp_(self, min=None, max=None):
        if isinstance(min, Tensor) or isinstance(max, Tensor):
            return _inplace("clamp_tensor", self, *_clamp_bounds(self, min, max))
        return _inplace("clamp", self, min=min, max=max)

    clip, clip_ = clamp, clamp_

    def clamp_min(self, min):
        return self.clamp(min=min)

    def clamp_max(self, max):
        return self.clamp(max=max)

    def lerp(self, end, weight):
        if isinstance(weight, Tensor):
            return _call("lerp_tensor", self, end, weight)
        return _call("lerp", self, end, weight=weight)

    def lerp_(self, end, weight):
        if isinstance(weight, Tensor):
            return _inplace("lerp_tensor", self, end, weight)
        return _inplace("lerp", self, end, weight=weight)

    def addcmul(self, tensor1, tensor2, *, value=1):
        return _call("addcmul", self, tensor1, tensor2, value=value)

    def addcmul_(self, tensor1, tensor2, *, value=1):
        return _inplace("addcmul", self, tensor1, tensor2, value=value)

    def addcdiv(self, tensor1, tensor2, *, value=1):
        return _call("addcdiv", self, tensor1, tensor2, value=value)

    def addcdiv_(self, tensor1, tensor2, *, value=1):
        return _inplace("addcdiv", self, tensor1, tensor2, value=value)

    # ------------------------------------------------------------ copies and conversion
    def clone(self, *, memory_format=None):
        if memory_format in _CHANNELS_LAST:
            out = _in_channels_last(self, memory_format)
            return _call("clone", self) if out is self else out
        return _call("clone" if _check_memory_format("clone", memory_format) else "contiguous", self)

    def contiguous(self, memory_format=None):
        if memory_format in _CHANNELS_LAST:
            return _in_channels_last(self, memory_format)
        if memory_format is not None and memory_format is not contiguous_format:
            raise RuntimeError("contiguous(): only contiguous_format is supported")
        return self if self.is_contiguous() else _call("contiguous", self)

    def copy_(self, src, non_blocking=False):
        """``self[...] = src`` (broadcast, cast, across devices); a ``non_blocking`` copy is synchronous."""
        if not isinstance(src, Tensor):
            raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
        return _inplace("copy_", self, src)

    def fill_(self, value):
        if isinstance(value, Tensor):
            return _inplace("fill_", self, value)
        D.check_fill_value(value, self.dtype)
        return _inplace("fill_scalar", self, value=value)

    def zero_(self):
        return _inplace("zero_", self)

    def to(self, *args, dtype=None, device=None, non_blocking=False, copy=False, memory_format=None):
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(other_tensor)``.

        ``memory_format=tgrad.contiguous_format`` makes the result contiguous; ``non_blocking`` copies are
        synchronous (the same values, as PyTorch's are once synchronized)."""
        if memory_format in _CHANNELS_LAST:
            t = self.to(*args, dtype=dtype, device=device, non_blocking=non_blocking, copy=copy)
            return _in_channels_last(t, memory_format)
        keep = _check_memory_format("to", memory_format)
        for a in args:
            if isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            elif isinstance(a, D.dtype) or a in (float, int, bool):
                dtype = a
            elif isinstance(a, (str, Device, int)) and not isinstance(a, bool):
                device = a
            elif a is not None:
                raise TypeError(f"to() received an invalid combination of arguments: {a!r}")
        dt = D.to_dtype(dtype, "to") if dtype is not None else self.dtype
        dev = canonical(device) if device is not None else self.device
        if dt is self.dtype and dev == self.device and not copy and (keep or self.is_contiguous()):
            return self
        t = self
        if dev != self.device:
            t = _call("to_device", t, device=dev, non_blocking=bool(non_blocking))
        if dt is not t.dtype or (copy and t is self):
            t = _call("to_copy", t, dtype=dt)
        return t if keep else t.contiguous()

    def cpu(self, memory_format=None):
        return self.to("cpu", memory_format=memory_format)

    def cuda(self, device=None, non_blocking=False, memory_format=None):
        return self.to(Device("cuda") if device is None else (Device("cuda", device) if isinstance(device, int)
                                                            else device), non_blocking=non_blocking,
                       memory_format=memory_format)

    def pin_memory(self, device=None):
        """A copy of this cpu tensor in page-locked host memory (itself if already pinned): the source of
        ``to("cuda", non_blocking=True)`` copies that return before they are done."""
        if self.device.type != "cpu":
            raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
        if self.is_pinned():
            return self
        out = _empty_pinned(self.shape, self.dtype)
        src = self.detach().contiguous()
        out._storage.copy_(0, src._storage, src._offset * self.dtype.itemsize, src.nbytes)
        return out

    def is_pinned(self, device=None):
        return self._storage.pinned

    def float(self, memory_format=None):
        return self.to(D.float32, memory_format=memory_format)

    def double(self, memory_format=None):
        return self.to(D.float64, memory_format=memory_format)

    def half(self, memory_format=None):
        return self.to(D.float16, memory_format=memory_format)

    def bfloat16(self, memory_format=None):
        return self.to(D.bfloat16, memory_format=memory_format)

    def long(self, memory_format=None):
        return self.to(D.int64, memory_format=memory_format)

    def int(self, memory_format=None):
        return self.to(D.int32, memory_format=memory_format)

    def short(self, memory_format=None):
        return self.to(D.int16, memory_format=memory_format)

    def char(self, memory_format=None):
        return self.to(D.int8, memory_format=memory_format)

    def byte(self, memory_format=None):
        return self.to(D.uint8, memory_format=memory_format)

    def bool(self, memory_format=None):
        return self.to(D.bool_, memory_format=memory_format)

    def type_as(self, other):
        return self.to(other.dtype)

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        return _creation.tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                                requires_grad=requires_grad)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        return _creation.zeros(*size, dtype=dtype or self.dtype, device=device or self.device,
                               requires_grad=requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        return _creation.ones(*size, dtype=dtype or self.dtype, device=device or self.device,
                              requires_grad=requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        return _creation.empty(*size, dtype=dtype or self.dtype, device=device or self.device,
                               requires_grad=requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        return _creation.full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                              requires_grad=requires_grad)

    def uniform_(self, a=0.0, b=1.0, *, generator=None):
        return _random_inplace(self, lambda: _creation.uniform_(self, a, b, generator))

    def normal_(self, mean=0.0, std=1.0, *, generator=None):
        return _random_inplace(self, lambda: _creation.normal_(self, mean, std, generator))

    def random_(self, *args, generator=None, **kwargs):
        """random_(), random_(to), random_(from, to) (``from`` may be given as a keyword)."""
        lo, hi = (0, args[0]) if len(args) == 1 else (tuple(args) + (0, None))[:2]
        lo, hi = kwargs.get("from", lo), kwargs.get("to", hi)
        return _random_inplace(self, lambda: _creation.random_(self, lo, hi, generator))

    def bernoulli_(self, p=0.5, *, generator=None):
        return _random_inplace(self, lambda: _creation.bernoulli_(self, p, generator))

    def bernoulli(self, p=None, *, generator=None):
        return _creation.bernoulli(self, p, generator)

    def exponential_(self, lambd=1.0, *, generator=None):
        return _random_inplace(self, lambda: _creation.exponential_(self, lambd, generator))

    def geometric_(self, p, *, generator=None):
        return _random_inplace(self, lambda: _creation.geometric_(self, p, generator))

    def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
        return _random_inplace(self, lambda: _creation.log_normal_(self, mean, std, generator))

    def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
        return _random_inplace(self, lambda: _creation.cauchy_(self, median, sigma, generator))

    # ------------------------------------------------------------ reductions
    def sum(self, dim=None, keepdim=False, *, dtype=None, keepdims=None):
        keepdim = keepdim if keepdims is None else keepdims     # PyTorch accepts numpy's spelling too
        if dim is None and not keepdim:
            return _call("sum_all", self, dtype=dtype)
        return _call("sum", self, dim=dim, keepdim=keepdim, dtype=dtype)

    def mean(self, dim=None, keepdim=False, *, dtype=None, keepdims=None):
        keepdim = keepdim if keepdims is None else keepdims
        if dim is None and not keepdim:
            return _call("mean_all", self, dtype=dtype)
        return _call("mean", self, dim=dim, keepdim=keepdim, dtype=dtype)

    def sum_to_size(self, *size):
        size = _size_args(size)
        if tuple(size) == tuple(self.shape):
            return self
        return _call("sum_to_size", self, size=size)

    def prod(self, dim=None, keepdim=False, *, dtype=None):
        if dim is None:
            return _call("prod_all", self, dtype=dtype)
        if not isinstance(dim, int):
            raise TypeError(f"prod(): argument 'dim' must be int, not {type(dim).__name__}")
        return _call("prod", self, dim=dim, keepdim=keepdim, dtype=dtype)

    def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        if unbiased is not None and correction is not None:
            raise TypeError("var(): takes either 'unbiased' or 'correction', not both")
        if isinstance(dim, bool):   # legacy var(unbiased)
            dim, unbiased = None, dim
        return _call("var", self, dim=dim, keepdim=keepdim, correction=correction, unbiased=unbiased)

    def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        if unbiased is not None and correction is not None:
            raise TypeError("std(): takes either 'unbiased' or 'correction', not both")
        if isinstance(dim, bool):
            dim, unbiased = None, dim
        return _call("std", self, dim=dim, keepdim=keepdim, correction=correction, unbiased=unbiased)

    def max(self, dim=None, keepdim=False):
        """max() -> value; max(dim, keepdim) -> (values, indices); max(other) -> maximum."""
        if isinstance(dim, Tensor):
            return self.maximum(dim)
        if dim is None:
            return _call("max_all", self)
        return return_types.max(*_call("max", self, dim=dim, keepdim=keepdim))

    def matrix_exp(self):
        return _call("linalg_matrix_exp", self)

    def cummax(self, dim):
        return return_types.cummax(*_call("cummax", self, dim=dim))

    def cummin(self, dim):
        return return_types.cummin(*_call("cummin", self, dim=dim))

    def logcumsumexp(self, dim):
        return _call("logcumsumexp", self, dim=dim)

    def min(self, dim=None, keepdim=False):
        if isinstance(dim, Tensor):
            return self.minimum(dim)
        if dim is None:
            return _call("min_all", self)
        return return_types.min(*_call("min", self, dim=dim, keepdim=keepdim))

    def sort(self, dim=-1, descending=False, stable=False):
        """(values, indices) sorted along ``dim``; always stable (PyTorch allows it when ``stable=False``)."""
        return return_types.sort(*_call("sort_stable" if stable else "sort", self, dim=dim, descending=descending,
                                        stable=stable))

    def argsort(self, dim=-1, descending=False, stable=False):
        return _call("sort", self, dim=dim, descending=descending, stable=stable)[1]

    def msort(self):
        return self.sort(0)[0]

    def topk(self, k, dim=-1, largest=True, sorted=True):
        return return_types.topk(*_call("topk", self, k=k, dim=dim, largest=largest, sorted=sorted))

    # ---- linear algebra (tgrad.linalg)
    def inverse(self):
        return _linalg.inv(self)

    def det(self):
        return _linalg.det(self)

    def logdet(self):
        return _linalg.logdet(self)

    def slogdet(self):
        return return_types.slogdet(*_linalg.slogdet(self))

    def cholesky(self, upper=False):
        return _linalg.cholesky(self, upper=upper)

    def cholesky_solve(self, input2, upper=False):
        return _linalg.cholesky_solve(self, input2, upper)

    def cholesky_inverse(self, upper=False):
        return _linalg.cholesky_inverse(self, upper)

    def triangular_solve(self, A, upper=True, transpose=False, unitriangular=False):
        return _linalg.triangular_solve(self, A, upper, transpose, unitriangular)

    def matrix_power(self, n):
        return _linalg.matrix_power(self, n)

    def svd(self, some=True, compute_uv=True):
        return _linalg._torch_svd(self, some, compute_uv)

    def qr(self, some=True):
        return _linalg._torch_qr(self, some)

    def pinverse(self, rcond=1e-15):
        return _linalg.pinv(self, rtol=rcond)

    def multinomial(self, num_samples, replacement=False, *, generator=None):
        return _call("multinomial", self, num_samples=num_samples, replacement=replacement,
                     generator=_creation._gen(generator, self.device))

    def amax(self, dim=(), keepdim=False):
        return _call("amax", self, dim=dim, keepdim=keepdim)

    def amin(self, dim=(), keepdim=False):
        return _call("amin", self, dim=dim, keepdim=keepdim)

    def argmax(self, dim=None, keepdim=False):
        return _call("argmax", self, dim=dim, keepdim=keepdim)

    def argmin(self, dim=None, keepdim=False):
        return _call("argmin", self, dim=dim, keepdim=keepdim)

    def softmax(self, dim, dtype=None):
        return _call("softmax", self, dim=dim, dtype=dtype)

    def log_softmax(self, dim, dtype=None):
        return _call("log_softmax", self, dim=dim, dtype=dtype)

    def logsumexp(self, dim, keepdim=False):
        return _call("logsumexp", self, dim=dim, keepdim=keepdim)

    def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
        return _call("norm", self, p=2 if p is None else p, dim=dim, keepdim=keepdim, dtype=dtype)

    def cumsum(self, dim, *, dtype=None):
        return _call("cumsum", self, dim=dim, dtype=dtype)

    def cumprod(self, dim, *, dtype=None):
        return _call("cumprod", self, dim=dim, dtype=dtype)

    def all(self, dim=None, keepdim=False):
        return _call("all", self, dim=dim, keepdim=keepdim)

    def any(self, dim=None, keepdim=False):
        return _call("any", self, dim=dim, keepdim=keepdim)

    # ------------------------------------------------------------ views
    def view(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], D.dtype):
            return self._view_dtype(shape[0])
        return _call("view", self, size=_size_args(shape))

    def _view_dtype(self, dtype):
        """view(dtype): the same bytes read as ``dtype``; a different element size scales the last dim (stride 1)
        and the other strides and the offset by the ratio.  Not differentiable (no grad, no view of a base for
        autograd), as PyTorch's; shares storage and version counter."""
        shape, strides, offset = list(self._shape), list(self._strides), self._offset
        old, new = self.dtype.itemsize, dtype.itemsize
        what = (f"to view {D.TENSOR_TYPE_NAMES[self.dtype][:-6]} as {D.TENSOR_TYPE_NAMES[dtype][:-6]} "
                "(different element sizes)")
        if old != new:
            if self.dim() == 0:
                raise RuntimeError(f"self.dim() cannot be 0 {what}")
            if strides[-1] != 1:
                raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {strides[-1]}")
            if old > new:
                r = old // new
                shape[-1] *= r
                strides = [st * r for st in strides[:-1]] + [1]
                offset *= r
            else:
                r = new // old
                if shape[-1] % r:
                    raise RuntimeError(f"self.size(-1) must be divisible by {r} {what}, but got {shape[-1]}")
                if offset % r:
                    raise RuntimeError(f"self.storage_offset() must be divisible by {r} {what}, but got {offset}")
                for i, st in enumerate(strides[:-1]):
                    if st % r:
                        raise RuntimeError(f"self.stride({i}) must be divisible by {r} {what}, but got {st}")
                shape[-1] //= r
                strides = [st // r for st in strides[:-1]] + [1]
                offset //= r
        t = _new(self._storage, offset, tuple(shape), tuple(strides), dtype, counter=self._version_counter)
        t._inference = self._inference
        return t

    def view_as(self, other):
        return self.view(other.shape)

    def reshape(self, *shape):
        size = _ops.shape.infer_size(_size_args(shape), self.numel())
        if _ops.shape.compute_stride(self.shape, self.stride(), size) is not None:
            return _call("view", self, size=size)
        return _call("unsafe_view", _call("contiguous", self), size=size)

    def reshape_as(self, other):
        return self.reshape(other.shape)

    def expand(self, *size):
        return _call("expand", self, size=_size_args(size))

    def expand_as(self, other):
        return self.expand(other.shape)

    def permute(self, *dims):
        if not dims:
            raise TypeError('permute() missing 1 required positional arguments: "dims"')
        return _call("permute", self, dims=_size_args(dims))

    def transpose(self, dim0, dim1):
        return _call("transpose", self, dim0=dim0, dim1=dim1)

    swapaxes = transpose
    swapdims = transpose

    def transpose_(self, dim0, dim1):
        return _dispatch.call_inplace_view("transpose_", self, dim0=dim0, dim1=dim1)

    swapaxes_ = transpose_
    swapdims_ = transpose_

    def t(self):
        return _call("t", self)

    def t_(self):
        return _dispatch.call_inplace_view("t_", self)

    @property
    def T(self):
        if self.dim() == 0:
            return self.t()
        return self.permute(*reversed(range(self.dim())))     # PermuteBackward0 also for 2 dims (PyTorch)

    @property
    def mT(self):
        return self.transpose(-2, -1) if self.dim() else self.transpose(0, 0)

    def squeeze(self, dim=None):
        if dim is None:
            return _call("squeeze", self)
        return _call("squeeze_dims" if isinstance(dim, (tuple, list)) else "squeeze_dim", self, dim=dim)

    def squeeze_(self, dim=None):
        if dim is None:
            return _dispatch.call_inplace_view("squeeze_", self)
        name = "squeeze_dims_" if isinstance(dim, (tuple, list)) else "squeeze_dim_"
        return _dispatch.call_inplace_view(name, self, dim=dim)

    def unsqueeze(self, dim):
        return _call("unsqueeze", self, dim=dim)

    def unsqueeze_(self, dim):
        return _dispatch.call_inplace_view("unsqueeze_", self, dim=dim)

    def flatten(self, start_dim=0, end_dim=-1):
        s, e = _wrap_dim(start_dim, self.dim()), _wrap_dim(end_dim, self.dim())
        if self.dim() == 0:
            return self.reshape(1)
        if s > e:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        if s == e:
            return self
        shape = list(self.shape[:s]) + [-1] + list(self.shape[e + 1:])
        return self.reshape(*shape)

    def select(self, dim, index):
        return _call("select", self, dim=dim, index=int(index))

    def _slice(self, dim, start, end, step):
        return _call("slice", self, dim=dim, start=start, end=end, step=step)

    def as_strided(self, size, stride, storage_offset=None):
        return _call("as_strided", self, size=tuple(size), stride=tuple(stride), storage_offset=storage_offset)

    def as_strided_(self, size, stride, storage_offset=None):
        return _dispatch.call_inplace_view("as_strided_", self, size=tuple(size), stride=tuple(stride),
                                           storage_offset=storage_offset)

    # ------------------------------------------------------------ shape ops, indexing (ops/shape.py, index.py)
    def unflatten(self, dim, sizes):
        if self.dim() == 0:
            raise RuntimeError(f"unflatten got an unexpected error:\nDimension specified as {dim} but tensor has "
                               "no dimensions")
        d = _wrap_dim(dim, self.dim())
        sizes = [int(s) for s in sizes]
        n = 1
        for s in sizes:
            n *= s
        infer = -1 in sizes and n != 0      # -1 comes from this dim's size, not from numel (which may be 0)
        if (self.shape[d] % -n != 0) if infer else (-1 not in sizes and n != self.shape[d]):
            raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {dim} "
                               f"({self.shape[d]}) in the input tensor")
        if infer:
            sizes = [self.shape[d] // -n if s == -1 else s for s in sizes]
        return self.reshape(list(self.shape[:d]) + sizes + list(self.shape[d + 1:]))

    def movedim(self, source, destination):
        nd = self.dim()
        src = [source] if isinstance(source, int) else list(source)
        dst = [destination] if isinstance(destination, int) else list(destination)
        if len(src) != len(dst):
            raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) should contain "
                               f"the same number of dims as destination ({dst} dims)")
        src = [_wrap_dim(d, nd) for d in src]
        dst = [_wrap_dim(d, nd) for d in dst]
        for name, ds in (("source", src), ("destination", dst)):
            if len(set(ds)) != len(ds):
                raise RuntimeError(f"movedim: repeated dim in `{name}` ({ds})")
        if nd == 0:
            return self.permute(())
        order = [-1] * nd
        for s_, d_ in zip(src, dst):
            order[d_] = s_
        rest = iter(i for i in range(nd) if i not in src)
        return self.permute([o if o != -1 else next(rest) for o in order])

    moveaxis = movedim

    def repeat(self, *sizes):
        return _call("repeat", self, repeats=_size_args(sizes))

    def tile(self, *dims):
        dims = _size_args(dims)
        return self.repeat((1,) * (self.dim() - len(dims)) + tuple(dims))

    def split(self, split_size, dim=0):
        if isinstance(split_size, (list, tuple)):
            return _call("split_with_sizes", self, split_size=[int(s) for s in split_size], dim=dim)
        return _call("split", self, split_size=int(split_size), dim=dim)

    def split_with_sizes(self, split_sizes, dim=0):
        return self.split(list(split_sizes), dim)

    def chunk(self, chunks, dim=0):
        if self.dim() == 0:
            raise RuntimeError("chunk expects at least a 1-dimensional tensor")
        if chunks <= 0:
            raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
        size = self.shape[_wrap_dim(dim, self.dim())] if self.dim() else 0
        if size == 0:
            return self.split([0] * chunks, dim)
        return self.split(-(-size // chunks), dim)

    def unbind(self, dim=0):
        return _call("unbind", self, dim=dim)

    def narrow(self, dim, start, length):
        if self.dim() == 0:
            raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
        d = _wrap_dim(dim, self.dim())
        size, start, length = self.shape[d], int(start), int(length)
        if length < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        if not -size <= start <= size:
            raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
        if start < 0:
            start += size
        if start + length > size:
            raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
        return self._slice(d, start, start + length, 1)

    def flip(self, *dims):
        return _call("flip", self, dims=_size_args(dims))

    def fliplr(self):
        return self.flip(1)

    def flipud(self):
        return self.flip(0)

    def rot90(self, k=1, dims=(0, 1)):
        """Rotate by 90 degrees k times in the plane dims[0] -> dims[1]: a flip and a transpose."""
        if len(dims) != 2:
            raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
        if self.dim() < 2:
            raise RuntimeError(f"expected total dims >= 2, but got total dims = {self.dim()}")
        d0, d1 = _wrap_dim(dims[0], self.dim()), _wrap_dim(dims[1], self.dim())
        if d0 == d1:
            raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
        k %= 4
        if k == 1:
            return self.flip(d1).transpose(d0, d1)
        if k == 2:
            return self.flip(d0, d1)
        if k == 3:
            return self.flip(d0).transpose(d0, d1)
        return self.clone()

    def tensor_split(self, indices_or_sections, dim=0):
        """numpy.array_split: n near-equal parts (the first size % n one longer), or cuts at the given indices."""
        d = _wrap_dim(dim, self.dim())
        size = self.shape[d]
        if isinstance(indices_or_sections, Tensor):
            indices_or_sections = indices_or_sections.tolist()
        if isinstance(indices_or_sections, int):
            n = indices_or_sections
            if n <= 0:
                raise RuntimeError(f"number of sections must be larger than 0, got {n}")
            q, r = divmod(size, n)
            bounds = [0]
            for i in range(n):
                bounds.append(bounds[-1] + q + (i < r))
        else:
            bounds = [0] + [min(max(int(i) + (size if int(i) < 0 else 0), 0), size)
                            for i in indices_or_sections] + [size]
        return tuple(self._slice(d, a, max(a, b), 1) for a, b in zip(bounds, bounds[1:]))

    def _hvdsplit(self, sections, dim, name, need):
        if self.dim() < need:
            raise RuntimeError(f"torch.{name} requires a tensor with at least {need} dimension, but got a tensor "
                               f"with {self.dim()} dimensions!")
        if isinstance(sections, int) and self.shape[dim] % sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the "
                               f"dimension {self.shape[dim]} is not divisible by the split_size {sections}!")
        return self.tensor_split(sections, dim)

    def hsplit(self, sections):
        return self._hvdsplit(sections, 0 if self.dim() == 1 else 1, "hsplit", 1)

    def vsplit(self, sections):
        return self._hvdsplit(sections, 0, "vsplit", 2)

    def dsplit(self, sections):
        return self._hvdsplit(sections, 2, "dsplit", 3)

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """|self - other| <= atol + rtol |other| (finite), or equal (infinities), or both NaN if equal_nan."""
        other = self._wrap(other)
        if self.dtype is not other.dtype:
            raise RuntimeError(f"{self.dtype.legacy_name} did not match {other.dtype.legacy_name}")
        close = self.eq(other)
        if equal_nan and (self.dtype.is_floating_point or self.dtype.is_complex):
            close = close.logical_or(self.isnan().logical_and(other.isnan()))
        if rtol == 0 and atol == 0:
            return close
        a, b = (self, other) if self.dtype.is_floating_point or self.dtype.is_complex else (self.to(D.get_default_dtype()),
                                                                   other.to(D.get_default_dtype()))
        diff = (a - b).abs()
        return close.logical_or(diff.isfinite().logical_and(diff.le(b.abs() * rtol + atol)))

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        return bool(self.isclose(other, rtol, atol, equal_nan).all().item())

    def count_nonzero(self, dim=None):
        return self.ne(0).sum(dim) if dim is not None else self.ne(0).sum()

    def nansum(self, dim=None, keepdim=False, *, dtype=None):
        x = self.masked_fill(self.isnan(), 0) if self.dtype.is_floating_point else self
        return x.sum(dim, keepdim, dtype=dtype)

    def nanmean(self, dim=None, keepdim=False, *, dtype=None):
        if not self.dtype.is_floating_point:
            raise RuntimeError(f"nanmean(): expected input to have floating point dtype but got "
                               f"{self.dtype.legacy_name}")
        n = self.isnan().logical_not().sum(dim, keepdim)
        return self.nansum(dim, keepdim, dtype=dtype).div(n)

    def logaddexp(self, other):
        """log(e^a + e^b) = max + log1p(e^-|a - b|); equal infinities give that infinity."""
        other = self._wrap(other)
        m = self.maximum(other)
        r = m + (self - other).abs().neg().exp().log1p()
        return r.where(self.ne(other), m + 0.6931471805599453 * (m.isfinite()).to(m.dtype))

    def logaddexp2(self, other):
        """log2(2^a + 2^b) = max + log2(1 + 2^-|a - b|)."""
        other = self._wrap(other)
        m = self.maximum(other)
        r = m + (self - other).abs().neg().exp2().log1p() * 1.4426950408889634
        return r.where(self.ne(other), m + (m.isfinite()).to(m.dtype))

    def hypot(self, other):
        """sqrt(a^2 + b^2): in float64 for narrower floats (no overflow, one rounding), scaled by
        max(|a|, |b|) in float64; inf if either is infinite (even with a NaN), as C99."""
        other = self._wrap(other)
        a, b, dt = self.abs(), other.abs(), D.promote_types(self.dtype, other.dtype)
        if dt is D.float64:
            m = a.maximum(b)
            s = m.masked_fill(m.eq(0).logical_or(m.isinf()), 1.0)
            r = ((a / s).square() + (b / s).square()).sqrt() * s
        else:
            r = (a.double().square() + b.double().square()).sqrt().to(dt)
        return r.masked_fill(a.isinf().logical_or(b.isinf()), float("inf"))

    def deg2rad(self):
        return self * 0.017453292519943295

    def rad2deg(self):
        return self * 57.29577951308232

    def sgn(self):
        return _call("sgn", self) if self.dtype._kind == 3 else self.sign()

    def signbit(self):
        if not self.dtype.is_floating_point:
            return self.lt(0)
        return self.lt(0).logical_or(self.eq(0).logical_and((1.0 / self).lt(0)))

    def positive(self):
        if self.dtype is D.bool_:
            raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
        return self

    def fmax(self, other):
        """maximum that ignores a NaN operand (NaN only where both are NaN)."""
        other = self._wrap(other)
        m = self.maximum(other)
        if not m.dtype.is_floating_point:
            return m
        return m.where(self.isnan().logical_not(), other).where(other.isnan().logical_not(), self)

    def fmin(self, other):
        other = self._wrap(other)
        m = self.minimum(other)
        if not m.dtype.is_floating_point:
            return m
        return m.where(self.isnan().logical_not(), other).where(other.isnan().logical_not(), self)

    def heaviside(self, values):
        """0 where self < 0, values where self == 0, 1 where self > 0 (NaN stays NaN)."""
        if self.dtype is not values.dtype:
            raise RuntimeError(f"heaviside is not yet implemented for tensors with different dtypes")
        step = self.gt(0).to(self.dtype)
        return values.expand_as(step).where(self.eq(0), step).where(self.isnan().logical_not(), self)

    def copysign(self, other):
        """|self| with the sign (sign bit, so -0.0 counts as negative) of other."""
        other = self._wrap(other)
        a = self.abs() if self.dtype.is_floating_point else self.to(D.get_default_dtype()).abs()
        neg = other.signbit() if isinstance(other, Tensor) else (other < 0)
        return a.neg().where(neg, a)

    def is_nonzero(self):
        if self.numel() == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        if self.numel() > 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def is_same_size(self, other):
        return tuple(self.shape) == tuple(other.shape)

    def is_signed(self):
        return self.dtype.is_signed

    def is_conj(self):
        """True for a lazy conjugate view (conj() of a complex tensor): it shares its base's memory and reads
        the conjugates of the stored values; ops that read it see those values (the dispatcher resolves it)."""
        return self._is_conj

    def is_neg(self):
        return False

    def conj(self):
        """The complex conjugate as a view with the conjugate bit flipped (PyTorch's lazy conj: no copy); a real
        tensor is its own conjugate."""
        return _call("conj", self) if self.dtype._kind == 3 else self

    def conj_physical(self):
        return _call("conj_physical", self)

    def resolve_conj(self):
        """A new tensor holding the values of a conjugate view (the bit cleared); any other tensor itself."""
        return _call("resolve_conj", self) if self._is_conj else self

    def resolve_neg(self):
        return self

    def angle(self):
        return _call("angle", self)

    def roll(self, shifts, dims=None):
        return _call("roll", self, shifts=shifts, dims=() if dims is None else dims)

    def tril(self, diagonal=0):
        return _call("tril", self, diagonal=diagonal)

    def triu(self, diagonal=0):
        return _call("triu", self, diagonal=diagonal)

    def tril_(self, diagonal=0):
        return _inplace("tril", self, diagonal=diagonal)

    def triu_(self, diagonal=0):
        return _inplace("triu", self, diagonal=diagonal)

    def broadcast_to(self, size):
        return self.expand(size)

    def unfold(self, dimension, size, step):
        """A view of every ``size``-long window along ``dimension``, ``step`` apart: that dim becomes the
        window count and a new last dim of ``size`` holds each window."""
        d = dimension % max(self.dim(), 1)
        n = self.shape[d] if self.dim() else 1
        if size > n:
            raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
        if step <= 0:
            raise RuntimeError(f"step is {step} but must be > 0")
        if self.dim() == 0:
            return self.as_strided((size,), (1,), self.storage_offset())
        shape, strides = list(self.shape), list(self.stride())
        shape[d], strides[d] = (n - size) // step + 1, strides[d] * step
        return self.as_strided(shape + [size], strides + [self.stride(d)], self.storage_offset())

    # small linear-algebra and reduction helpers composed of ops (_functional_more.py)
    def float_power(self, exponent):
        return _fm.float_power(self, exponent)

    def aminmax(self, *, dim=None, keepdim=False):
        return _fm.aminmax(self, dim=dim, keepdim=keepdim)

    def trace(self):
        return _fm.trace(self)

    def diagflat(self, offset=0):
        return _fm.diagflat(self, offset)

    def addmv(self, mat, vec, *, beta=1, alpha=1):
        return _fm.addmv(self, mat, vec, beta=beta, alpha=alpha)

    def addr(self, vec1, vec2, *, beta=1, alpha=1):
        return _fm.addr(self, vec1, vec2, beta=beta, alpha=alpha)

    def addbmm(self, batch1, batch2, *, beta=1, alpha=1):
        return _fm.addbmm(self, batch1, batch2, beta=beta, alpha=alpha)

    def fill_diagonal_(self, fill_value, wrap=False):
        return _fm.fill_diagonal_(self, fill_value, wrap)

    # order statistics, counting, set and distance methods (compositions of ops, in _functional_more.py)
    def median(self, dim=None, keepdim=False):
        return _fm.median(self, dim, keepdim)

    def nanmedian(self, dim=None, keepdim=False):
        return _fm.nanmedian(self, dim, keepdim)

    def kthvalue(self, k, dim=-1, keepdim=False):
        return _fm.kthvalue(self, k, dim, keepdim)

    def mode(self, dim=-1, keepdim=False):
        return _fm.mode(self, dim, keepdim)

    def quantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
        return _fm.quantile(self, q, dim, keepdim, interpolation=interpolation)

    def nanquantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
        return _fm.nanquantile(self, q, dim, keepdim, interpolation=interpolation)

    def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
        return _fm.unique(self, sorted, return_inverse, return_counts, dim)

    def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
        return _fm.unique_consecutive(self, return_inverse, return_counts, dim)

    def bincount(self, weights=None, minlength=0):
        return _fm.bincount(self, weights, minlength)

    def histc(self, bins=100, min=0, max=0):
        return _fm.histc(self, bins, min, max)

    def diff(self, n=1, dim=-1, prepend=None, append=None):
        return _fm.diff(self, n, dim, prepend, append)

    def cross(self, other, dim=None):
        return _fm.cross(self, other, dim)

    def kron(self, other):
        return _fm.kron(self, other)

    def stft(self, *args, **kwargs):
        """``tgrad.stft(self, ...)``."""
        return _fft.stft(self, *args, **kwargs)

    def istft(self, *args, **kwargs):
        """``tgrad.istft(self, ...)``."""
        return _fft.istft(self, *args, **kwargs)

    def dist(self, other, p=2):
        return _fm.dist(self, other, p)

    def logit(self, eps=None):
        return _fm.logit(self, eps)

    def xlogy(self, other):
        return _fm.xlogy(self, other)

    def _composite_(self, fn, *args, **kwargs):
        """In-place form of a composite op: self.copy_(fn(self, ...)), fn reading a recorded clone when grad is
        recorded (PyTorch's original_self: its parts may save their input, which copy_ would invalidate)."""
        src = self.clone() if _grad_mode.is_grad_enabled() else self
        return self.copy_(fn(src, *args, **kwargs))

    def logit_(self, eps=None):
        return self._composite_(_fm.logit, eps)

    def xlogy_(self, other):
        return self._composite_(_fm.xlogy, other)

    def deg2rad_(self):
        return self._composite_(Tensor.deg2rad)

    def rad2deg_(self):
        return self._composite_(Tensor.rad2deg)

    def addmv_(self, mat, vec, *, beta=1, alpha=1):
        return self._composite_(_fm.addmv, mat, vec, beta=beta, alpha=alpha)

    def negative_(self):
        return self.neg_()

    absolute_, subtract_, multiply_ = abs_, sub_, mul_
    divide_ = true_divide_ = div_

    def addmm_(self, mat1, mat2, *, beta=1, alpha=1):
        return self._composite_(Tensor.addmm, mat1, mat2, beta=beta, alpha=alpha)

    def baddbmm_(self, batch1, batch2, *, beta=1, alpha=1):
        return self._composite_(Tensor.baddbmm, batch1, batch2, beta=beta, alpha=alpha)

    def addbmm_(self, batch1, batch2, *, beta=1, alpha=1):
        return self._composite_(_fm.addbmm, batch1, batch2, beta=beta, alpha=alpha)

    def addr_(self, vec1, vec2, *, beta=1, alpha=1):
        return self._composite_(_fm.addr, vec1, vec2, beta=beta, alpha=alpha)

    def cumsum_(self, dim, *, dtype=None):
        return self._composite_(Tensor.cumsum, dim, dtype=dtype)

    def cumprod_(self, dim, *, dtype=None):
        return self._composite_(Tensor.cumprod, dim, dtype=dtype)

    def copysign_(self, other):
        return self._composite_(_fm.copysign, other)

    def hypot_(self, other):
        return self._composite_(_fm.hypot, other)

    def heaviside_(self, values):
        return self._composite_(_fm.heaviside, values)

    def sgn_(self):
        return _inplace("sgn", self) if self.dtype._kind == 3 else self.sign_()

    def ldexp(self, other):
        return _fm.ldexp(self, other)

    def ldexp_(self, other):
        return self._composite_(_fm.ldexp, other)

    def sinc(self):
        return _fm.sinc(self)

    def sinc_(self):
        return self._composite_(_fm.sinc)

    def index_copy(self, dim, index, source):
        return _fm.index_copy(self, dim, index, source)

    def index_copy_(self, dim, index, source):
        return self._composite_(_fm.index_copy, dim, index, source)

    def select_scatter(self, src, dim, index):
        return _fm.select_scatter(self, src, dim, index)

    def slice_scatter(self, src, dim=0, start=None, end=None, step=1):
        return _fm.slice_scatter(self, src, dim, start, end, step)

    def diagonal_scatter(self, src, offset=0, dim1=0, dim2=1):
        return _fm.diagonal_scatter(self, src, offset, dim1, dim2)

    def isposinf(self):
        return _fm.isposinf(self)

    def isneginf(self):
        return _fm.isneginf(self)

    def isreal(self):
        return _fm.isreal(self)

    def cov(self, *, correction=1, fweights=None, aweights=None):
        return _fm.cov(self, correction=correction, fweights=fweights, aweights=aweights)

    def corrcoef(self):
        return _fm.corrcoef(self)

    def adjoint(self):
        return _fm.adjoint(self)

    @property
    def mH(self):
        return self.mT

    @property
    def H(self):
        if self.dim() > 2:
            raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.dim()}-D tensor. "
                               "For batches of matrices, consider using tensor.mH")
        return self.T

    def clamp_min_(self, min):
        return self.clamp_(min=min)

    def clamp_max_(self, max):
        return self.clamp_(max=max)

    def conj_physical_(self):
        return _inplace("conj_physical", self) if self.dtype._kind == 3 else self

    def gather(self, dim, index, *, sparse_grad=False):
        if sparse_grad:
            raise NotImplementedError("gather(): sparse_grad=True is not supported (tgrad has no sparse tensors)")
        return _call("gather", self, index, dim=dim)

    def take_along_dim(self, indices, dim=None):
        if dim is None:
            return self.reshape(-1).gather(0, indices.reshape(-1))
        d = _wrap_dim(dim, self.dim())
        if indices.dim() != self.dim():
            raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of "
                               f"dimensions, but got {self.dim()} dimensions for input, and {indices.dim()} "
                               "dimensions for indices")
        s, i = list(self.shape), list(indices.shape)
        s[d] = i[d] = 1
        b = list(broadcast_shapes(tuple(s), tuple(i)))
        bs, bi = list(b), list(b)
        bs[d], bi[d] = self.shape[d], indices.shape[d]
        return self.expand(bs).gather(d, indices.expand(bi))

    _scatter_reduce_warned = False

    def _scatter_src(self, index, src, value, reduce):
        """scatter(reduce='add' | 'multiply') is scatter_reduce('sum' | 'prod', include_self=True) of src (a
        tensor, or the value at every index); PyTorch warns that the tensor form is deprecated."""
        if reduce not in ("add", "multiply"):
            raise RuntimeError("reduce argument must be either add or multiply.")
        if isinstance(src, Tensor):
            if not Tensor._scatter_reduce_warned:     # ATen's TORCH_WARN_ONCE
                Tensor._scatter_reduce_warned = True
                warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in "
                              "a future PyTorch release. Use torch.scatter_reduce instead for more reduction "
                              "options.", UserWarning, stacklevel=3)
            return src, "sum" if reduce == "add" else "prod"
        v = value if src is None else src
        return _creation.full(tuple(index.shape), v, dtype=self.dtype, device=self.device), \
            "sum" if reduce == "add" else "prod"

    def scatter(self, dim, index, src=None, *, value=None, reduce=None):
        if reduce is not None:
            src, red = self._scatter_src(index, src, value, reduce)
            return self.scatter_reduce(dim, index, src, red, include_self=True)
        if isinstance(src, Tensor):
            return _call("scatter", self, index, src, dim=dim)
        return _call("scatter_value", self, index, dim=dim, value=value if src is None else src)

    def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
        if reduce is not None:
            src, red = self._scatter_src(index, src, value, reduce)
            return self.scatter_reduce_(dim, index, src, red, include_self=True)
        if isinstance(src, Tensor):
            return _inplace("scatter", self, index, src, dim=dim)
        return _inplace("scatter_value", self, index, dim=dim, value=value if src is None else src)

    def scatter_add(self, dim, index, src):
        return _call("scatter_add", self, index, src, dim=dim)

    def scatter_add_(self, dim, index, src):
        return _inplace("scatter_add", self, index, src, dim=dim)

    def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
        return _call("scatter_reduce", self, index, src, dim=dim, reduce=reduce, include_self=include_self)

    def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
        return _inplace("scatter_reduce", self, index, src, dim=dim, reduce=reduce, include_self=include_self)

    def index_reduce(self, dim, index, source, reduce, *, include_self=True):
        return _call("index_reduce", self, index, source, dim=dim, reduce=reduce, include_self=include_self)

    def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
        return _inplace("index_reduce", self, index, source, dim=dim, reduce=reduce, include_self=include_self)

    def index_select(self, dim, index):
        return _call("index_select", self, index, dim=dim)

    def index_add(self, dim, index, source, *, alpha=1):
        return _call("index_add", self, index, source, dim=dim, alpha=alpha)

    def index_add_(self, dim, index, source, *, alpha=1):
        return _inplace("index_add", self, index, source, dim=dim, alpha=alpha)

    def masked_fill(self, mask, value):
        if isinstance(value, Tensor):
            return _call("masked_fill_tensor", self, mask, value)
        D.check_fill_value(value, self.dtype)
        return _call("masked_fill", self, mask, value=value)

    def masked_fill_(self, mask, value):
        if isinstance(value, Tensor):
            return _inplace("masked_fill_tensor", self, mask, value)
        D.check_fill_value(value, self.dtype)
        return _inplace("masked_fill", self, mask, value=value)

    def masked_select(self, mask):
        return _call("masked_select", self, mask)

    def index_put(self, indices, values, accumulate=False):
        return _call("index_put", self, values, indices=_ops.index.expand_bool_indices(self, indices),
                     accumulate=accumulate)

    def index_put_(self, indices, values, accumulate=False):
        return _inplace("index_put", self, values, indices=_ops.index.expand_bool_indices(self, indices),
                        accumulate=accumulate)

    def repeat_interleave(self, repeats, dim=None, *, output_size=None):
        """Each slice along ``dim`` repeated ``repeats`` times (an int, or a tensor: one count per slice)."""
        x = self.reshape(-1) if dim is None else self
        d = 0 if dim is None else _wrap_dim(dim, x.dim())
        if isinstance(repeats, Tensor) and repeats.numel() != 1:
            if repeats.is_meta:     # (PyTorch's: the output's length is the values' sum)
                if output_size is None:
                    raise RuntimeError("cannot repeat_interleave a meta tensor without output_size")
                return x.index_select(d, empty((output_size,), D.int64, repeats.device))
            r = repeats._host_copy().reshape(-1)
            if r.size != x.shape[d]:
                raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                                   f"{r.size} and input.size({d}) = {x.shape[d]}")
            if (r < 0).any():
                raise RuntimeError("repeats can not be negative")
            if output_size is not None and int(r.sum()) != output_size:
                raise RuntimeError("allocated size does not match required size")
            idx = from_host(np.repeat(np.arange(r.size), r), D.int64, self.device)
            return x.index_select(d, idx)
        n = int(repeats)
        if n < 0:
            raise RuntimeError("Repeats must be non-negative")
        if output_size is not None and x.shape[d] * n != output_size:
            raise RuntimeError("allocated size does not match required size")
        shape = list(x.shape)
        e = x.unsqueeze(d + 1).expand(*shape[:d + 1], n, *shape[d + 1:])
        shape[d] *= n
        return e.contiguous().view(shape)

    def take(self, index):
        return _call("take", self, index)

    def put(self, index, source, accumulate=False):
        """A copy of self with its elements at the flat (row-major, negative from the end) ``index`` set to
        (or, ``accumulate``, increased by) ``source``'s: an index_put on the flattened tensor."""
        idx, n = index.reshape(-1), self.numel()
        if idx.numel():
            lo, hi = int(idx.min()), int(idx.max())
            bad = hi if hi >= n else lo if lo < -n else None
            if bad is not None:
                raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
        return self.reshape(-1).index_put((idx,), source.reshape(-1), accumulate).view(self.shape)

    def put_(self, index, source, accumulate=False):
        return self.copy_(self.put(index, source, accumulate))

    def index_fill(self, dim, index, value):
        return _call("index_fill", self, index, dim=dim, value=value)

    def index_fill_(self, dim, index, value):
        return _inplace("index_fill", self, index, dim=dim, value=value)

    def masked_scatter(self, mask, source):
        return _call("masked_scatter", self, mask, source)

    def masked_scatter_(self, mask, source):
        return _inplace("masked_scatter", self, mask, source)

    def ravel(self):
        return self.reshape(-1)

    def diagonal(self, offset=0, dim1=0, dim2=1):
        return _call("diagonal", self, offset=offset, dim1=dim1, dim2=dim2)

    def diag_embed(self, offset=0, dim1=-2, dim2=-1):
        return _call("diag_embed", self, offset=offset, dim1=dim1, dim2=dim2)

    def diag(self, diagonal=0):
        if self.dim() == 1:
            return self.diag_embed(diagonal, 0, 1)
        if self.dim() != 2:
            raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {self.dim()}D")
        return self.diagonal(diagonal).clone()

    def nonzero(self, *, as_tuple=False):
        res = _call("nonzero", self)
        if as_tuple:
            return tuple(res[:, k] for k in range(res.shape[1])) if self.dim() else \
                self.reshape(1).nonzero(as_tuple=True)
        return res

    def argwhere(self):
        return self.nonzero()

    def _index(self, indices):
        """Advanced indexing with a tuple of int64 index tensors / None (bool masks already expanded)."""
        return _call("index", self, indices=tuple(indices))

    def __getitem__(self, index):
        return _indexing.getitem(self, index)

    def __setitem__(self, index, value):
        _indexing.setitem(self, index, value)

    # ------------------------------------------------------------ misc
    def equal(self, other):
        _dispatch.check_meta("equal", self, other)
        if tuple(self.shape) != tuple(other.shape):
            return False
        return bool(np.array_equal(self.detach()._host_copy(), other.detach()._host_copy()))


    # ------------------------------------------------------------ internal helpers
    def _alias(self):
        return _call("alias", self)

    def _detached_alias(self):
        t = _new(self._storage, self._offset, self._shape, self._strides, self.dtype, counter=self._version_counter)
        t._inference = self._inference
        if self._is_conj:
            _mark_conj(t)
        return t

    def _view_of(self, shape, strides, offset=None, dtype=None):
        """A view sharing storage and version counter (no autograd); ``dtype``: read as another dtype
        (view_as_real: offset and strides are then in that dtype's elements)."""
        t = _new(self._storage, self._offset if offset is None else offset, tuple(shape), tuple(strides),
                 dtype or self.dtype, counter=self._version_counter)
        t._base = self if self._base is None else self._base
        t._inference = self._inference
        if self._is_conj and t.dtype._kind == 3:    # views of a conjugate view are conjugate views
            _mark_conj(t)
        return t

    def _copy_recorded(self):
        return _call("clone_copy", self)

    def _np_view(self):
        """numpy array viewing this cpu tensor's memory (shares it)."""
        itemsize = self.dtype.itemsize
        if self.numel() == 0:
            return np.empty(self._shape, dtype=self.dtype.np)
        lo = sum((d - 1) * s for d, s in zip(self._shape, self._strides) if s < 0)
        hi = sum((d - 1) * s for d, s in zip(self._shape, self._strides) if s > 0)
        start = self._offset + lo
        base = self._storage.host_array(self.dtype.np, hi - lo + 1, start * itemsize)
        return np.lib.stride_tricks.as_strided(
            base[-lo:] if lo else base, shape=self._shape,
            strides=tuple(s * itemsize for s in self._strides), writeable=True)

    # ------------------------------------------------------------ conversion
    def numpy(self, *, force=False):
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                               "instead.")
        if self._is_conj:
            if not force:
                raise RuntimeError("Can't call numpy() on Tensor that has conjugate bit set. Use "
                                   "tensor.resolve_conj().numpy() instead.")
            return self.detach().resolve_conj().numpy(force=True)
        if self.device.type != "cpu":
            if not force:
                raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() "
                                "to copy the tensor to host memory first.")
            return self.detach().cpu()._np_view()     # force=True: detach().cpu().numpy(), as in PyTorch
        return self._np_view()

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """DLPack export of a cpu tensor: numpy's capsule over this tensor's memory (zero copy)."""
        if self._requires_grad:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        if self._is_conj:
            raise BufferError("Can't export tensors with the conjugate bit set")
        if self.device.type != "cpu":
            raise BufferError(f"tgrad exports DLPack capsules of cpu tensors only (this one is on {self.device})")
        return self._np_view().__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self):
        """(DLPack device type, index): (1, 0) for cpu (kDLCPU), (2, i) for cuda:i (kDLCUDA)."""
        return (1, 0) if self.device.type == "cpu" else (2, self.device.index or 0)

    def __array__(self, dtype=None, copy=None):
        a = self.detach().resolve_conj().cpu()._np_view()
        return a.astype(dtype) if dtype is not None else a

    def tolist(self):
        a = self._host_copy()
        if self.dtype is D.bfloat16 or self.dtype is D.float16:
            a = a.astype(np.float32)
        return a.tolist()

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        if self._storage.device.type == "meta" and not _meta_reads.zeros:
            raise RuntimeError(_NO_ITEM)
        a = self._host_copy().reshape(())
        if self.dtype.is_floating_point:
            return float(a)
        if self.dtype is D.bool_:
            return bool(a)
        if self.dtype._kind == 3:
            return complex(a)
        return int(a)

    def _host_copy(self):
        """A numpy copy of the values (any device)."""
        if self._is_conj:
            return self.detach().resolve_conj()._host_copy()
        if self.device.type == "cpu" and not self.is_contiguous():
            return np.array(self._np_view())
        c = self.contiguous()       # a copy of contiguous bytes costs less than building a strided view
        out = np.empty(c._shape, dtype=c.dtype.np)
        if out.nbytes:
            c._storage.copy_to_host(out.ctypes.data, out.nbytes, c._offset * c.dtype.itemsize)
        return out

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __int__(self):
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return int(self.item())

    def __float__(self):
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        if self.requires_grad and _grad_mode.is_grad_enabled():    # PyTorch 2.13 warns (not item(), int())
            warnings.warn("Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
                          "Consider using tensor.detach() first.", UserWarning, stacklevel=2)
        return float(self.item())

    def __index__(self):
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __hash__(self):
        return id(self)

    def __repr__(self, *, tensor_contents=None):
        suffixes = []
        if self.grad_fn is not None:
            suffixes.append(f"grad_fn=<{type(self.grad_fn).__name__}>")
        elif self.requires_grad:        # also a no-grad view of a leaf that requires grad (w[0] under no_grad)
            suffixes.append("requires_grad=True")
        if self._storage.device.type == "meta":
            return format_meta(self._shape, dtype_name=self.dtype.name, default_dtype_name=D.get_default_dtype().name,
                               suffixes=suffixes)
        dev = None if self.device.type == "cpu" else str(self.device)
        return format_tensor(self._host_copy(), dtype_name=self.dtype.name,
                             default_dtype_name=D.get_default_dtype().name,
                             device_str=dev, suffixes=suffixes)

    __str__ = __repr__

    def __format__(self, spec):
        """A 0-d Tensor formats its Python number (``f"{loss:.3f}"``, ``"{}".format(t)``), as PyTorch's."""
        if self.dim() == 0 and type(self) is Tensor:
            return self.detach().item().__format__(spec)
        return object.__format__(self, spec)

    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._shape[0]))

    def __reduce_ex__(self, proto):
        if self._storage.device.type == "meta":     # no values: the metadata
            return (_serialization._rebuild_meta, ([_serialization._CODES[self.dtype], list(self._shape),
                                                    list(self._strides)], self._requires_grad))
        return (_serialization._rebuild_tensor, (self._host_copy(), str(self.device), self._requires_grad))

    def __deepcopy__(self, memo):
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the "
                               "deepcopy protocol at the moment.")
        with _no_grad():
            t = self.clone()
        t._requires_grad = self._requires_grad
        if type(self) is not Tensor:
            t.__class__ = type(self)
        if self._grad is not None:
            t._grad = self._grad.__deepcopy__(memo)
        memo[id(self)] = t
        return t


def tensor_arg(name, v, arg="other", pos=1):
    """``v`` if it is a Tensor, else PyTorch's TypeError for ops defined on tensors only (``x.maximum(2)``)."""
    if not isinstance(v, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not {type(v).__name__}")
    return v


def _random_inplace(t, fill):
    if t.requires_grad and t.grad_fn is None and _grad_state.grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    fill()
    t._version_counter[0] += 1
    return t


def _clamp_bounds(self, lo, hi):
    """Tensor-bound clamp: a Python-number bound becomes a 0-dim tensor of self's dtype."""
    return [b if b is None or isinstance(b, Tensor) else self._wrap(b) for b in (lo, hi)]


def _size_args(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return tuple(int(s) for s in size)


def _no_grad():
    return _grad_mode.no_grad()


def _wrap_dim(dim, ndim):
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


_NON_LEAF_FLAG_MSG = "you can only change requires_grad flags of leaf variables."
_NON_LEAF_FLAG_HINT = (" If you want to use a computed variable in a subgraph that doesn't require differentiation "
                       "use var_no_grad = var.detach().")


def _empty_pinned(shape, dtype):
    """An uninitialised contiguous cpu tensor in pinned host memory."""
    shape, strides, n = _geometry(tuple(shape))
    t = object.__new__(Tensor)
    _init_from(t, Storage.pinned_host(n * dtype.itemsize), 0, shape, strides, dtype)
    return t


def _init_from(t, storage, offset, shape, strides, dtype, counter=None):
    if counter is None:
        counter = [0]   # the version counter, shared by views and detach()
    t._storage = storage
    t._offset = offset
    t._shape = tuple(shape)
    t._strides = tuple(strides)
    t.dtype = dtype
    t._version_counter = counter
    t._grad_fn_version = counter[0]
    t._inference = _grad_state.inference
    # the other fields start at Tensor's class-level defaults (fewer stores per new tensor: host time per op)


CONJ_ALIVE = [0]    # how many tensors with the conjugate bit are alive: the dispatcher looks for them while any is


def _conj_dead():
    CONJ_ALIVE[0] -= 1


def _mark_conj(t):
    """Give ``t`` the conjugate bit (counted in CONJ_ALIVE until it dies)."""
    t._is_conj = True
    CONJ_ALIVE[0] += 1
    weakref.finalize(t, _conj_dead)


def _new(storage, offset, shape, strides, dtype, counter=None, cls=Tensor):
    t = object.__new__(cls)
    _init_from(t, storage, offset, shape, strides, dtype, counter)
    return t


_GEOMETRY = {}  # shape of ints -> (shape, contiguous strides, numel) of a new tensor


def _geometry(shape):
    shape = tuple(int(s) for s in shape)
    n = 1
    for s in shape:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(shape)}")
        n *= s
    geometry = shape, contiguous_strides(shape), n
    if len(_GEOMETRY) > 4096:
        _GEOMETRY.clear()
    _GEOMETRY[shape] = geometry
    return geometry


# ------------------------------------------------------------------ internal factories
# The forms ops, autograd and optim build tensors with (arguments checked by the caller); ``tgrad._creation``
# keeps PyTorch's public signatures (size parsing, dtype inference, requires_grad=, generator=) on top of them.
def empty(shape, dtype, device):
    """Uninitialised contiguous tensor (internal; ``tgrad.empty`` is the public one)."""
    try:    # a shape of numpy ints (or a Size) finds the entry of its ints: equal and of equal hash
        shape, strides, n = _GEOMETRY[shape]
    except (KeyError, TypeError):   # new, or unhashable (a list)
        shape, strides, n = _geometry(shape)
    if n * dtype.itemsize >= 1 << 63:       # PyTorch's int64 byte count (a size_t would wrap: issue 16)
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}")
    t = object.__new__(Tensor)
    t._storage = Storage(n * dtype.itemsize, device)    # = _init_from(t, ...), written out (host time per op)
    t._offset = 0
    t._shape = shape
    t._strides = strides
    t.dtype = dtype
    t._version_counter = [0]
    t._grad_fn_version = 0
    t._inference = _grad_state.inference
    return t


def empty_like(t, dtype=None, device=None):
    """Uninitialised tensor of ``t``'s shape, with ``t``'s strides when ``t`` is dense (preserve_format)."""
    dtype = dtype or t.dtype
    out = empty(t._shape, dtype, device or t._storage.device)
    strides = preserved_strides(t._shape, t._strides)
    if strides != out._strides:
        out = _new(out._storage, 0, out._shape, strides, dtype)
    return out


def full(shape, value, dtype, device):
    """A new contiguous tensor of ``shape`` filled with the Python number ``value`` (one fill launch)."""
    return KE.fill(empty(shape, dtype, device), value)


def zeros(shape, dtype, device):
    return KE.fill(empty(shape, dtype, device), 0)


def from_host(arr, dtype, device):
    """A new contiguous tensor holding numpy ``arr`` converted to ``dtype`` on ``device``."""
    arr = np.asarray(arr)
    if (arr.dtype is not dtype.np and arr.dtype != dtype.np) or not arr.flags.c_contiguous:
        with np.errstate(over="ignore", invalid="ignore"):      # out of range: inf or wrapped, as in PyTorch
            arr = np.require(arr.astype(dtype.np, copy=False), requirements="C")
    t = empty(arr.shape, dtype, device)
    n = arr.nbytes
    if n:   # a small array's bytes are a cheaper source address than arr.ctypes.data (~1 us)
        st = t._storage     # its n bytes are exactly the destination: no range check
        if arr.ndim == 0:   # a number: on a GPU queued on the current stream, no wait for the device
            st.write_queued(arr.tobytes())
        else:
            st.allocator.backend.memcpy_htod(st.ptr, arr.tobytes() if n <= 4096 else arr.ctypes.data, n)
    return t


def scalar(value, dtype, device):
    """A 0-dim tensor holding the Python number ``value`` (copied from the host: no launch, no device wait)."""
    pack = _SCALAR_PACK.get(dtype)
    if pack is not None and (type(value) is int and -2**53 <= value <= 2**53
                             or type(value) is float and dtype is not D.int64):     # int64 truncates: numpy
        try:        # the bytes numpy's conversion gives (a C cast; float32 overflow raises: numpy's inf below)
            data = pack(value)
        except OverflowError:
            return from_host(np.asarray(value), dtype, device)
        t = empty((), dtype, device)
        t._storage.write_queued(data)
        return t
    return from_host(np.asarray(value), dtype, device)


# dtype -> struct packer of a Python float (or an int up to 2**53) as numpy converts it
_SCALAR_PACK = {D.float32: struct.Struct("=f").pack, D.float64: struct.Struct("=d").pack,
                D.int64: struct.Struct("=q").pack}


# ------------------------------------------------------------------ the one upward edge (DESIGN §2)
# Tensor's methods reach the floors above through these modules: the dispatcher runs every op (ops reach it
# the same way, ``ops.call``), the engine, graph and grad modes serve backward and hooks, and creation,
# indexing and serialization hold PyTorch's public factories, indexing rules and pickling.  Imported
# last, once Tensor and the factories above exist, since each of those modules imports them at its top.
from . import (_creation, _functional_more as _fm, _indexing, fft as _fft, linalg as _linalg,  # noqa: E402
               ops as _ops, serialization as _serialization)
from . import _sparse  # noqa: E402  (its SparseTensor subclasses Tensor)
_SparseTensor = _sparse.SparseTensor
from .autograd import dispatch as _dispatch, engine as _engine, grad_mode as _grad_mode, graph as _graph  # noqa: E402

_call = _dispatch.call  # one cached alias, one lookup less per op call (host time per op, benchmarks/steps.py)
_inplace = _dispatch.call_inplace     # likewise for ``x.op_(...)``
_scalar_op = _dispatch.call_scalar      # ``x * 2.0`` with the number as a kernel argument, when it may be
_inplace_scalar = _dispatch.call_inplace_scalar
