"""View ops (no kernel: new shape/strides over the same storage) and their backward rules.

view/reshape, expand, permute/transpose/t, squeeze/unsqueeze, select, slice,
split/unbind (multi-output views; as_strided is in ``as_strided.py``).  Outputs share storage and
version counter with their input.  Then the copying shape ops: cat, stack,
flip, roll, repeat, tril/triu, diag_embed (strided copies, ``kernels.shape``
for tril); diagonal is a view.
The backward of select/slice is itself an op (``select_backward``,
``slice_backward``: zeros with the gradient copied into the region) so that
it can be differentiated again.
"""
from .. import dtypes as D
from ..kernels import _geometry as G
from ..kernels import elementwise as KE
from ..kernels import shape as KS
from ..tensor import _wrap_dim, empty
from . import Op, call


# ------------------------------------------------------------------ view / reshape
def infer_size(shape, numel):
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s}")
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


def compute_stride(oldshape, oldstride, newshape):
    """Strides for viewing (oldshape, oldstride) as newshape without a copy, or None (PyTorch's algorithm)."""
    numel = 1
    for s in oldshape:
        numel *= s
    if len(oldshape) == 0:
        return G.contiguous_strides(newshape)
    if numel == 0:
        return G.contiguous_strides(newshape) if tuple(oldshape) != tuple(newshape) else tuple(oldstride)
    newstride = [0] * len(newshape)
    view_d = len(newshape) - 1
    chunk_base_stride = oldstride[-1] if oldstride else 1
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(oldshape) - 1, -1, -1):
        tensor_numel *= oldshape[tensor_d]
        if tensor_d == 0 or (oldshape[tensor_d - 1] != 1 and
                             oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or newshape[view_d] == 1):
                newstride[view_d] = view_numel * chunk_base_stride
                view_numel *= newshape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = oldstride[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(newstride)


def view_forward(self, *, size):
    shape = infer_size(size, self.numel())
    st = compute_stride(self.shape, self.stride(), shape)
    if st is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                           "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    return self._view_of(shape, st)


def view_backward(ctx, grad):
    return (grad.reshape(ctx.input_meta[0].shape),)


VIEW = Op("view", view_forward, view_backward, "ViewBackward0", view=True, meta=("self_sym_sizes",),
          variants=("method",))


def unsafe_view_forward(self, *, size):
    """reshape of a fresh contiguous copy (the copy was made by the caller)."""
    return view_forward(self, size=size)


UNSAFE_VIEW = Op("unsafe_view", unsafe_view_forward, view_backward, "UnsafeViewBackward0")  # not a view for autograd


# ------------------------------------------------------------------ expand
def expand_forward(self, *, size):
    size = tuple(size)
    if len(size) < self.dim():
        raise RuntimeError(f"expand({self.type()}{{{list(self.shape)}}}, size=[{', '.join(map(str, size))}]): "
                           f"the number of sizes provided ({len(size)}) must be greater or equal to the number of "
                           f"dimensions in the tensor ({self.dim()})")
    lead = len(size) - self.dim()
    shape, strides = [], []
    for i, s in enumerate(size):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a leading, "
                                   "non-existing dimension 0")
            shape.append(s)
            strides.append(0)
            continue
        d, st = self._shape[i - lead], self._strides[i - lead]
        if s == -1:
            s = d
        if d == s:
            shape.append(d)
            strides.append(st)
        elif d == 1:
            shape.append(s)
            strides.append(0)
        else:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({d}) at "
                               f"non-singleton dimension {i}.  Target sizes: {list(size)}.  Tensor sizes: "
                               f"{list(self.shape)}")
    return self._view_of(shape, strides)


def expand_backward(ctx, grad):
    return (grad.sum_to_size(ctx.input_meta[0].shape),)


EXPAND = Op("expand", expand_forward, expand_backward, "ExpandBackward0", view=True, meta=("self_sym_sizes",),
            variants=("method",))


# ------------------------------------------------------------------ permute / transpose
def permute_forward(self, *, dims):
    nd = self.dim()
    dims = tuple(_wrap_dim(d, nd) for d in dims)
    if len(dims) != nd:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match "
                           f"the length of the desired ordering of dimensions i.e. input.dim() = {nd} is not "
                           f"equal to len(dims) = {len(dims)}")
    if len(set(dims)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return self._view_of([self.shape[d] for d in dims], [self.stride()[d] for d in dims])


def permute_backward(ctx, grad):
    dims = [_wrap_dim(d, len(ctx.input_meta[0].shape)) for d in ctx.attrs["dims"]]
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    return (grad.permute(inv),)


PERMUTE = Op("permute", permute_forward, permute_backward, "PermuteBackward0", view=True,
             variants=("method", "function"))


def transpose_forward(self, *, dim0, dim1):
    nd = self.dim()
    d0, d1 = _wrap_dim(dim0, nd), _wrap_dim(dim1, nd)
    if nd == 0:
        return self._view_of((), ())
    shape, st = list(self.shape), list(self.stride())
    shape[d0], shape[d1] = shape[d1], shape[d0]
    st[d0], st[d1] = st[d1], st[d0]
    return self._view_of(shape, st)


def transpose_backward(ctx, grad):
    return (grad.transpose(ctx.attrs["dim0"], ctx.attrs["dim1"]),)


TRANSPOSE = Op("transpose", transpose_forward, transpose_backward, "TransposeBackward0", view=True,
               variants=("method", "function"), inplace=True)
TRANSPOSE_ = Op("transpose_", transpose_forward, transpose_backward, "TransposeBackward1", view=True,
                variants=("method",))


def t_forward(self):
    if self.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
    return transpose_forward(self, dim0=0, dim1=1) if self.dim() == 2 else self._view_of(self.shape, self.stride())


def t_backward(ctx, grad):
    return (grad.t(),)


T = Op("t", t_forward, t_backward, "TBackward0", view=True, variants=("method", "function"), inplace=True)


def t_inplace_forward(self):
    """x.t_(): t()'s geometry (``autograd.dispatch.call_inplace_view`` gives it to x)."""
    if self.dim() > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
    return t_forward(self)


# the in-place view ops (t_ here; transpose_, squeeze_*, unsqueeze_ under their out-of-place rows): the same
# geometry and backward, PyTorch's node names for the in-place forms
T_ = Op("t_", t_inplace_forward, t_backward, "TBackward1", view=True, variants=("method",))


# ------------------------------------------------------------------ squeeze / unsqueeze
def squeeze_forward(self, *, dim=None):
    nd = self.dim()
    if dim is None:
        dims = [i for i, s in enumerate(self.shape) if s == 1]
    else:
        dims = [d for d in _dims_list(dim, nd) if d < nd and self.shape[d] == 1]   # dim 0 / -1 of a 0-d: none
    keep = [i for i in range(nd) if i not in dims]
    return self._view_of([self.shape[i] for i in keep], [self.stride()[i] for i in keep])


def squeeze_backward(ctx, grad):
    return (grad.reshape(ctx.input_meta[0].shape),)


SQUEEZE = Op("squeeze", squeeze_forward, squeeze_backward, "SqueezeBackward0", view=True, meta=("self_sym_sizes",),
             variants=("method", "function"), inplace=True)
SQUEEZE_DIM = Op("squeeze_dim", squeeze_forward, squeeze_backward, "SqueezeBackward1", view=True,
                 meta=("self_sym_sizes",))
SQUEEZE_DIMS = Op("squeeze_dims", squeeze_forward, squeeze_backward, "SqueezeBackward2", view=True,
                  meta=("self_sym_sizes",))
SQUEEZE_ = Op("squeeze_", squeeze_forward, squeeze_backward, "SqueezeBackward3", view=True, meta=("self_sym_sizes",),
              variants=("method",))
SQUEEZE_DIM_ = Op("squeeze_dim_", squeeze_forward, squeeze_backward, "SqueezeBackward4", view=True,
                  meta=("self_sym_sizes",))
SQUEEZE_DIMS_ = Op("squeeze_dims_", squeeze_forward, squeeze_backward, "SqueezeBackward5", view=True,
                   meta=("self_sym_sizes",))


def unsqueeze_forward(self, *, dim):
    nd = self.dim()
    d = _wrap_dim(dim, nd + 1)
    shape, st = list(self.shape), list(self.stride())
    new_st = st[d] * shape[d] if d < nd else 1
    shape.insert(d, 1)
    st.insert(d, new_st)
    return self._view_of(shape, st)


def unsqueeze_backward(ctx, grad):
    return (grad.squeeze(ctx.attrs["dim"]),)


UNSQUEEZE = Op("unsqueeze", unsqueeze_forward, unsqueeze_backward, "UnsqueezeBackward0", view=True,
               variants=("method", "function"), inplace=True)
UNSQUEEZE_ = Op("unsqueeze_", unsqueeze_forward, unsqueeze_backward, "UnsqueezeBackward1", view=True,
                variants=("method",))


# ------------------------------------------------------------------ select / slice
def select_forward(self, *, dim, index):
    nd = self.dim()
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, nd)
    size = self.shape[d]
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of bounds for dimension {d} with size {size}")
    index %= size
    shape, st = list(self.shape), list(self.stride())
    off = self.storage_offset() + index * st[d]
    del shape[d], st[d]
    return self._view_of(shape, st, off)


def select_backward(ctx, grad):
    m = ctx.input_meta[0]
    return (grad_region("select_backward", grad, m.shape, dim=ctx.attrs["dim"], index=ctx.attrs["index"]),)


SELECT = Op("select", select_forward, select_backward, "SelectBackward0", view=True, variants=("method", "function"))


def slice_params(size, start, end, step):
    if step <= 0:
        raise ValueError("step must be greater than zero")
    start = 0 if start is None else start
    end = size if end is None else end
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    return start, end, step


def slice_forward(self, *, dim=0, start=None, end=None, step=1):
    d = _wrap_dim(dim, self.dim())
    start, end, step = slice_params(self.shape[d], start, end, step)
    shape, st = list(self.shape), list(self.stride())
    off = self.storage_offset() + start * st[d]
    shape[d] = (end - start + step - 1) // step
    st[d] = st[d] * step
    return self._view_of(shape, st, off)


def slice_backward(ctx, grad):
    m = ctx.input_meta[0]
    a = ctx.attrs
    return (grad_region("slice_backward", grad, m.shape, dim=a.get("dim", 0), start=a.get("start"),
                        end=a.get("end"), step=a.get("step", 1)),)


SLICE = Op("slice", slice_forward, slice_backward, "SliceBackward0", view=True)


def grad_region(name, grad, input_shape, **kw):
    return call(name, grad, input_shape=tuple(input_shape), **kw)


def _region_forward(view_fn):
    def forward(grad, *, input_shape, **kw):
        z = empty(input_shape, grad.dtype, grad.device)
        KE.fill(z, 0)
        KE.copy(grad, view_fn(z, **kw))
        return z
    return forward


def select_backward_backward(ctx, gg):
    return (gg.select(ctx.attrs["dim"], ctx.attrs["index"]),)


SELECT_BACKWARD = Op("select_backward", _region_forward(select_forward), select_backward_backward,
                     "SelectBackwardBackward0")


def slice_backward_backward(ctx, gg):
    a = ctx.attrs
    return (gg._slice(a["dim"], a["start"], a["end"], a["step"]),)


SLICE_BACKWARD = Op("slice_backward", _region_forward(slice_forward), slice_backward_backward,
                    "SliceBackwardBackward0")


def alias_forward(self):
    return self._view_of(self.shape, self.stride())


def alias_backward(ctx, grad):
    return (grad,)


ALIAS = Op("alias", alias_forward, alias_backward, "AliasBackward0", view=True)


# ------------------------------------------------------------------ split / unbind (multi-output views)
def _split_sizes(size, split_size):
    if split_size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={split_size}")
    if split_size == 0:
        if size:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}")
        return [0]
    n = max(1, -(-size // split_size))
    return [min(split_size, size - i * split_size) for i in range(n)]


def split_forward(self, *, split_size, dim=0):
    """Views of consecutive pieces of ``split_size`` (int) or of the given sizes (list) along ``dim``."""
    if self.dim() == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = _wrap_dim(dim, self.dim())
    size = self.shape[d]
    if isinstance(split_size, (list, tuple)):
        sizes = list(split_size)
        if sum(sizes) != size or any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's "
                               f"size at dimension {d}), but got split_sizes={sizes}")
    else:
        sizes = _split_sizes(size, split_size)
    outs, start = [], 0
    for n in sizes:
        outs.append(slice_forward(self, dim=d, start=start, end=start + n))
        start += n
    return tuple(outs)


def split_backward(ctx, *grads):
    return (call("cat", *grads, dim=ctx.attrs.get("dim", 0)),)


SPLIT = Op("split", split_forward, split_backward, "SplitBackward0", view=True, variants=("method", "function"))
SPLIT_WITH_SIZES = Op("split_with_sizes", split_forward, split_backward, "SplitWithSizesBackward0", view=True,
                      variants=("method",))


def unbind_forward(self, *, dim=0):
    """Views ``self.select(dim, i)`` for every i."""
    if self.dim() == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = _wrap_dim(dim, self.dim())
    return tuple(select_forward(self, dim=d, index=i) for i in range(self.shape[d]))


def unbind_backward(ctx, *grads):
    return (call("stack", *grads, dim=ctx.attrs.get("dim", 0)),)


UNBIND = Op("unbind", unbind_forward, unbind_backward, "UnbindBackward0", view=True, variants=("method", "function"))


# ------------------------------------------------------------------ cat / stack
def _result_dtype(tensors):
    dt = tensors[0].dtype
    for t in tensors[1:]:
        dt = D.promote_types(dt, t.dtype)
    return dt


def cat_forward(*tensors, dim=0):
    """Concatenate along ``dim``; 1-D empty tensors are skipped (PyTorch's legacy rule)."""
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    live = [t for t in tensors if not (t.dim() == 1 and t.shape[0] == 0)]
    live_ids = {id(t) for t in live}
    ref = live[0] if live else tensors[0]
    for i, t in enumerate(tensors):
        if t.dim() == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    d = _wrap_dim(dim, ref.dim())
    for i, t in enumerate(tensors):
        if id(t) not in live_ids:
            continue
        if t.dim() != ref.dim():
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.dim()} and {t.dim()}")
        for k in range(ref.dim()):
            if k != d and t.shape[k] != ref.shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                   f"{ref.shape[k]} but got size {t.shape[k]} for tensor number {i} in the list.")
    shape = list(ref.shape)
    shape[d] = sum(t.shape[d] for t in live) if live else 0
    out = empty(shape, _result_dtype(tensors), ref.device)
    start = 0
    for t in live:
        n = t.shape[d]
        KE.copy(t, slice_forward(out, dim=d, start=start, end=start + n))
        start += n
    return out


def cat_backward(ctx, grad):
    d = ctx.attrs.get("dim", 0)
    res, start = [], 0
    for m in ctx.input_meta:
        if len(m.shape) == 1 and m.shape[0] == 0:     # skipped by forward; its gradient is empty, not None
            res.append(grad.new_zeros(0))
            continue
        n = m.shape[_wrap_dim(d, len(m.shape))]
        res.append(grad.narrow(d, start, n))
        start += n
    return tuple(res)


CAT = Op("cat", cat_forward, cat_backward, "CatBackward0", inputs=("*tensors",), variants=("function",))


def stack_forward(*tensors, dim=0):
    """Join equal-shaped tensors along a new dimension ``dim``."""
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    ref = tensors[0]
    for i, t in enumerate(tensors):
        if tuple(t.shape) != tuple(ref.shape):
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(ref.shape)} at entry 0 "
                               f"and {list(t.shape)} at entry {i}")
    d = _wrap_dim(dim, ref.dim() + 1)
    shape = list(ref.shape)
    shape.insert(d, len(tensors))
    out = empty(shape, _result_dtype(tensors), ref.device)
    for i, t in enumerate(tensors):
        KE.copy(t, select_forward(out, dim=d, index=i))
    return out


def stack_backward(ctx, grad):
    d = ctx.attrs.get("dim", 0)
    return tuple(grad.select(d, i) for i in range(len(ctx.input_meta)))


STACK = Op("stack", stack_forward, stack_backward, "StackBackward0", inputs=("*tensors",), variants=("function",))


# ------------------------------------------------------------------ flip / roll
def _dims_list(dims, nd):
    dims = [_wrap_dim(d, nd) for d in (dims if isinstance(dims, (list, tuple)) else (dims,))]
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"dim {dims[0]} appears multiple times in the list of dims")
    return dims


def flip_forward(self, *, dims):
    """out[..., i, ...] = self[..., n-1-i, ...] on every dim in ``dims`` (a copy through a negative-stride view)."""
    dims = _dims_list(dims, self.dim())
    if self.dim() == 0:
        dims = []                   # dim 0 / -1 of a 0-d tensor: nothing to flip
    out = empty(self.shape, self.dtype, self.device)
    if self.numel() == 0:
        return out
    st, off = list(self.stride()), self.storage_offset()
    for d in dims:
        off += (self.shape[d] - 1) * st[d]
        st[d] = -st[d]
    return KE.copy(self._view_of(self.shape, st, off), out)


def flip_backward(ctx, grad):
    return (grad.flip(ctx.attrs["dims"]),)


FLIP = Op("flip", flip_forward, flip_backward, "FlipBackward0", variants=("method", "function"))


def _roll_dim(src, dst, d, shift):
    n = src.shape[d]
    s = shift % n if n else 0
    KE.copy(slice_forward(src, dim=d, start=n - s, end=n), slice_forward(dst, dim=d, start=0, end=s))
    KE.copy(slice_forward(src, dim=d, start=0, end=n - s), slice_forward(dst, dim=d, start=s, end=n))


def roll_forward(self, *, shifts, dims=()):
    """out[(i + shift) % n] = self[i] along each dim (flattened when ``dims`` is empty)."""
    shifts = list(shifts) if isinstance(shifts, (list, tuple)) else [shifts]
    dims = list(dims) if isinstance(dims, (list, tuple)) else ([] if dims is None else [dims])
    if not dims:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        src = self if self.is_contiguous() else KE.copy(self, empty(self.shape, self.dtype, self.device))
        out = empty(self.shape, self.dtype, self.device)
        if self.numel():
            n = self.numel()
            _roll_dim(src._view_of((n,), (1,)), out._view_of((n,), (1,)), 0, shifts[0])
        return out
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    if self.dim() == 0:
        raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
    src = self
    for s, d in zip(shifts, dims):
        d = _wrap_dim(d, self.dim())
        out = empty(self.shape, self.dtype, self.device)
        if self.numel():
            _roll_dim(src, out, d, s)
        src = out
    return src


def roll_backward(ctx, grad):
    shifts = ctx.attrs["shifts"]
    neg = [-s for s in shifts] if isinstance(shifts, (list, tuple)) else -shifts
    return (grad.roll(neg, ctx.attrs.get("dims", ())),)


ROLL = Op("roll", roll_forward, roll_backward, "RollBackward0", variants=("method", "function"))


# ------------------------------------------------------------------ repeat
def repeat_forward(self, *, repeats):
    """out = self tiled ``repeats[i]`` times along each dim (leading repeats add dims)."""
    reps = list(repeats)
    if len(reps) < self.dim():
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    lead = len(reps) - self.dim()
    shape = [1] * lead + list(self.shape)
    st = [0] * lead + list(self.stride())
    out = empty([r * s for r, s in zip(reps, shape)], self.dtype, self.device)
    inter = [x for r, s in zip(reps, shape) for x in (r, s)]
    src = self._view_of(inter, [x for s in st for x in (0, s)])
    KE.copy(src, out._view_of(inter, G.contiguous_strides(inter)))
    return out


def repeat_backward(ctx, grad):
    reps = list(ctx.attrs["repeats"])
    in_shape = ctx.input_meta[0].shape
    shape = [1] * (len(reps) - len(in_shape)) + list(in_shape)
    inter = [x for r, s in zip(reps, shape) for x in (r, s)]
    g = grad.reshape(inter).sum(dim=tuple(range(0, len(inter), 2)))
    return (g.reshape(in_shape),)


REPEAT = Op("repeat", repeat_forward, repeat_backward, "RepeatBackward0", variants=("method",))


# ------------------------------------------------------------------ tril / triu
def _tri(upper):
    def forward(self, *, diagonal=0, out=None):
        if self.dim() < 2:
            raise RuntimeError(f"{'triu' if upper else 'tril'}: input tensor must have at least 2 dimensions")
        o = out if out is not None else empty(self.shape, self.dtype, self.device)
        return KS.tri(self, o, diagonal, upper)
    return forward


def tril_backward(ctx, grad):
    return (grad.tril(ctx.attrs.get("diagonal", 0)),)


TRIL = Op("tril", _tri(False), tril_backward, "TrilBackward0", variants=("method", "function"), inplace=True)


def triu_backward(ctx, grad):
    return (grad.triu(ctx.attrs.get("diagonal", 0)),)


TRIU = Op("triu", _tri(True), triu_backward, "TriuBackward0", variants=("method", "function"), inplace=True)


# ------------------------------------------------------------------ diagonal / diag_embed
def diagonal_forward(self, *, offset=0, dim1=0, dim2=1):
    """View of the elements (i, i + offset) of dims (dim1, dim2), as a new last dim."""
    nd = self.dim()
    d1, d2 = _wrap_dim(dim1, nd), _wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    s1, s2 = self.shape[d1], self.shape[d2]
    st1, st2 = self.stride()[d1], self.stride()[d2]
    off = self.storage_offset()
    n = max(min(s1, s2 - offset) if offset >= 0 else min(s1 + offset, s2), 0)
    if n:
        off += offset * st2 if offset >= 0 else -offset * st1
    keep = [i for i in range(nd) if i not in (d1, d2)]
    return self._view_of([self.shape[i] for i in keep] + [n], [self.stride()[i] for i in keep] + [st1 + st2], off)


def diagonal_backward(ctx, grad):
    a = ctx.attrs
    return (grad_region("diagonal_backward", grad, ctx.input_meta[0].shape, offset=a.get("offset", 0),
                        dim1=a.get("dim1", 0), dim2=a.get("dim2", 1)),)


DIAGONAL = Op("diagonal", diagonal_forward, diagonal_backward, "DiagonalBackward0", view=True,
              variants=("method", "function"))


def diagonal_backward_backward(ctx, gg):
    a = ctx.attrs
    return (gg.diagonal(a["offset"], a["dim1"], a["dim2"]),)


DIAGONAL_BACKWARD = Op("diagonal_backward", _region_forward(diagonal_forward), diagonal_backward_backward,
                       "DiagonalBackwardBackward0")


def diag_embed_forward(self, *, offset=0, dim1=-2, dim2=-1):
    """Zeros of shape self.shape[:-1] plus two dims of size n + |offset|, with self's last dim on that diagonal."""
    nd = self.dim() + 1
    d1, d2 = _wrap_dim(dim1, nd), _wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = (self.shape[-1] if self.dim() else 1) + abs(offset)
    rest = iter(self.shape[:-1])
    shape = [n if i in (d1, d2) else next(rest) for i in range(nd)]
    return _region_forward(diagonal_forward)(self, input_shape=shape, offset=offset, dim1=d1, dim2=d2)


def diag_embed_backward(ctx, grad):
    a = ctx.attrs
    return (grad.diagonal(a.get("offset", 0), a.get("dim1", -2), a.get("dim2", -1)),)


DIAG_EMBED = Op("diag_embed", diag_embed_forward, diag_embed_backward, "DiagEmbedBackward0",
                variants=("method", "function"))


ENTRIES = [ALIAS, VIEW, UNSAFE_VIEW, EXPAND, PERMUTE, TRANSPOSE, T, SQUEEZE, SQUEEZE_DIM, SQUEEZE_DIMS, UNSQUEEZE, T_,
           TRANSPOSE_, SQUEEZE_, SQUEEZE_DIM_, SQUEEZE_DIMS_, UNSQUEEZE_, SELECT, SLICE, SELECT_BACKWARD,
           SLICE_BACKWARD, SPLIT, SPLIT_WITH_SIZES, UNBIND, CAT, STACK, FLIP, ROLL, REPEAT, TRIL, TRIU, DIAGONAL,
           DIAGONAL_BACKWARD, DIAG_EMBED]
