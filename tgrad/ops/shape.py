"""View ops (no kernel: new shape/strides over the same storage) and their backward rules.

view/reshape, expand, permute/transpose/t, squeeze/unsqueeze, select, slice,
as_strided.  Outputs share storage and version counter with their input.
The backward of select/slice is itself an op (``select_backward``,
``slice_backward``: zeros with the gradient copied into the region) so that
it can be differentiated again.
"""
from ..kernels import _geometry as G
from ..kernels import elementwise as KE
from ..tensor import _wrap_dim, empty
from . import Op


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


def unsafe_view_forward(self, *, size):
    """reshape of a fresh contiguous copy (the copy was made by the caller)."""
    return view_forward(self, size=size)


# ------------------------------------------------------------------ expand
def expand_forward(self, *, size):
    size = tuple(size)
    if len(size) < self.dim():
        raise RuntimeError(f"expand({self.type()}{{{list(self.shape)}}}, size=[{', '.join(map(str, size))}]): "
                           "the number of sizes provided ({}) must be greater or equal to the number of "
                           "dimensions in the tensor ({})".format(len(size), self.dim()))
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
        d, st = self.shape[i - lead], self.stride()[i - lead]
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
    return (grad.permute(*inv),)


def transpose_forward(self, *, dim0, dim1):
    nd = self.dim()
    if nd == 0:
        return self._view_of((), ())
    d0, d1 = _wrap_dim(dim0, nd), _wrap_dim(dim1, nd)
    shape, st = list(self.shape), list(self.stride())
    shape[d0], shape[d1] = shape[d1], shape[d0]
    st[d0], st[d1] = st[d1], st[d0]
    return self._view_of(shape, st)


def transpose_backward(ctx, grad):
    return (grad.transpose(ctx.attrs["dim0"], ctx.attrs["dim1"]),)


def t_forward(self):
    if self.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
    return transpose_forward(self, dim0=0, dim1=1) if self.dim() == 2 else self._view_of(self.shape, self.stride())


def t_backward(ctx, grad):
    return (grad.t(),)


# ------------------------------------------------------------------ squeeze / unsqueeze
def squeeze_forward(self, *, dim=None):
    nd = self.dim()
    if dim is None:
        dims = [i for i, s in enumerate(self.shape) if s == 1]
    else:
        ds = dim if isinstance(dim, (tuple, list)) else (dim,)
        dims = [_wrap_dim(d, nd) for d in ds]
        dims = [d for d in dims if self.shape[d] == 1]
    keep = [i for i in range(nd) if i not in dims]
    return self._view_of([self.shape[i] for i in keep], [self.stride()[i] for i in keep])


def squeeze_backward(ctx, grad):
    return (grad.reshape(ctx.input_meta[0].shape),)


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


def grad_region(name, grad, input_shape, **kw):
    from ..autograd import dispatch
    return dispatch.call(name, grad, input_shape=tuple(input_shape), **kw)


def _region_forward(view_fn):
    def forward(grad, *, input_shape, **kw):
        z = empty(input_shape, grad.dtype, grad.device)
        KE.fill(z, 0)
        KE.copy(grad, view_fn(z, **kw))
        return z
    return forward


def select_backward_backward(ctx, gg):
    return (gg.select(ctx.attrs["dim"], ctx.attrs["index"]),)


def slice_backward_backward(ctx, gg):
    a = ctx.attrs
    return (gg._slice(a["dim"], a["start"], a["end"], a["step"]),)


# ------------------------------------------------------------------ as_strided
def as_strided_forward(self, *, size, stride, storage_offset=None):
    off = self.storage_offset() if storage_offset is None else storage_offset
    return self._view_of(tuple(size), tuple(stride), off)


def as_strided_backward(ctx, grad):
    raise RuntimeError("as_strided backward is not implemented")


def alias_forward(self):
    return self._view_of(self.shape, self.stride())


def alias_backward(ctx, grad):
    return (grad,)


ENTRIES = [
    Op("alias", alias_forward, alias_backward, "AliasBackward0", view=True),
    Op("view", view_forward, view_backward, "ViewBackward0", view=True),
    Op("unsafe_view", unsafe_view_forward, view_backward, "UnsafeViewBackward0", view=True),
    Op("expand", expand_forward, expand_backward, "ExpandBackward0", view=True),
    Op("permute", permute_forward, permute_backward, "PermuteBackward0", view=True),
    Op("transpose", transpose_forward, transpose_backward, "TransposeBackward0", view=True),
    Op("t", t_forward, t_backward, "TBackward0", view=True),
    Op("squeeze", squeeze_forward, squeeze_backward, "SqueezeBackward0", view=True),
    Op("unsqueeze", unsqueeze_forward, unsqueeze_backward, "UnsqueezeBackward0", view=True),
    Op("select", select_forward, select_backward, "SelectBackward0", view=True),
    Op("slice", slice_forward, slice_backward, "SliceBackward0", view=True),
    Op("as_strided", as_strided_forward, as_strided_backward, "AsStridedBackward0", view=True),
    Op("select_backward", _region_forward(select_forward), select_backward_backward,
       "SelectBackwardBackward0"),
    Op("slice_backward", _region_forward(slice_forward), slice_backward_backward, "SliceBackwardBackward0"),
]
