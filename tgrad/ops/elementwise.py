"""Element-wise ops: copies/casts, fill, add/sub/mul/div/neg, pow, exp.

Forward functions take tensors (scalars were wrapped into 0-dim tensors by
the caller), pick the result dtype by PyTorch's promotion, allocate the output
(or write into ``out`` for in-place forms) and launch one kernel.  Backward
rules are written with tgrad ops so they can be differentiated again.
"""
from .. import dtypes as D
from ..kernels import _geometry as G
from ..kernels import elementwise as K
from ..tensor import empty
from . import Op


def _out(out, shape, dtype, device, name):
    if out is None:
        return empty(shape, dtype, device)
    if tuple(out.shape) != tuple(shape):
        raise RuntimeError(f"output with shape {list(out.shape)} doesn't match the broadcast shape "
                           f"{list(shape)}")
    if not _can_cast(dtype, out.dtype):
        raise RuntimeError(f"result type {_legacy(dtype)} can't be cast to the desired output type "
                           f"{_legacy(out.dtype)}")
    return out


def _can_cast(frm, to):
    """PyTorch's canCast: no float -> integral, no non-bool -> bool."""
    if frm.is_floating_point and not to.is_floating_point:
        return False
    if frm is not D.bool_ and to is D.bool_:
        return False
    return True


def _legacy(dt):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
            "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool"}[dt.name]


def _float_result(dt):
    return dt if dt.is_floating_point else D.get_default_dtype()


# ------------------------------------------------------------------ copies
def copy_forward(self, *, dtype=None, out=None):
    """A contiguous copy of ``self`` (optionally cast to ``dtype``)."""
    out = _out(out, self.shape, dtype or self.dtype, self.device, "copy")
    return K.copy(self, out)


def copy_backward(ctx, grad):
    return (grad,)


def to_copy_forward(self, *, dtype=None, out=None):
    return copy_forward(self, dtype=dtype, out=out)


def to_copy_backward(ctx, grad):
    return (grad.to(ctx.input_meta[0].dtype),)


def copy_inplace_forward(self, src, *, out=None):
    """``self.copy_(src)``: src broadcast to self's shape, cast to self's dtype (same device)."""
    dst = out if out is not None else self
    G.broadcast_shapes(dst.shape, src.shape)
    if src.device != dst.device:
        return _cross_device_copy(dst, src)
    if src.dim() > dst.dim() or any(s != 1 and s != d for s, d in
                                     zip(reversed(src.shape), reversed(dst.shape))):
        raise RuntimeError(f"output with shape {list(dst.shape)} doesn't match the broadcast shape "
                           f"{list(G.broadcast_shapes(dst.shape, src.shape))}")
    if _overlaps(dst, src):
        src = copy_forward(src)
    return K.copy(src, dst)


def _overlaps(a, b):
    """Same storage but a different view: copying element by element could read what it just wrote."""
    return a._storage is b._storage and (a.data_ptr(), a.stride(), tuple(a.shape)) != (
        b.data_ptr(), b.stride(), tuple(b.shape))


def _cross_device_copy(dst, src):
    """Device <-> host copies go through the memory backend on contiguous same-dtype buffers."""
    from ..tensor import empty as _e
    s = src
    if s.dtype is not dst.dtype or not s.is_contiguous() or tuple(s.shape) != tuple(dst.shape):
        tmp = _e(dst.shape, dst.dtype, src.device)
        K.copy(s, tmp)
        s = tmp
    if dst.is_contiguous():
        dst._storage.copy_(dst._offset * dst.dtype.itemsize, s._storage, s._offset * s.dtype.itemsize, s.nbytes)
        return dst
    tmp = _e(dst.shape, dst.dtype, dst.device)
    tmp._storage.copy_(0, s._storage, s._offset * s.dtype.itemsize, s.nbytes)
    return K.copy(tmp, dst)


def copy_inplace_backward(ctx, grad):
    return (grad.mul(0), grad)


def fill_forward(self, value, *, out=None):
    """``self.fill_(value)``; value is a 0-dim tensor."""
    dst = out if out is not None else self
    if value.dim() != 0:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                           f"{value.dim()} dimensions.")
    return K.copy(value, dst)


def fill_backward(ctx, grad):
    return (grad.mul(0), grad.sum())


# ------------------------------------------------------------------ arithmetic
def _binary(fn):
    def forward(self, other, *, alpha=1, out=None):
        dt = D.result_type(self, other)
        shape = G.broadcast_shapes(self.shape, other.shape)
        o = _out(out, shape, dt, self.device, "")
        return K.binary(fn, self, other, o, alpha)
    return forward


def _alpha_check(self, other, alpha):
    if alpha != 1 and not D.result_type(self, other).is_floating_point and isinstance(alpha, float):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")


def add_forward(self, other, *, alpha=1, out=None):
    _alpha_check(self, other, alpha)
    return _binary(K.add_fn)(self, other, alpha=alpha, out=out)


def add_backward(ctx, grad):
    a = ctx.attrs.get("alpha", 1)
    return grad, (grad if a == 1 else grad.mul(a))


def sub_forward(self, other, *, alpha=1, out=None):
    if self.dtype is D.bool_ and other.dtype is D.bool_:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
                           "`^` or `logical_xor()` operator instead.")
    _alpha_check(self, other, alpha)
    return _binary(K.sub_fn)(self, other, alpha=alpha, out=out)


def sub_backward(ctx, grad):
    a = ctx.attrs.get("alpha", 1)
    return grad, (grad.neg() if a == 1 else grad.mul(-a))


mul_forward = _binary(K.mul_fn)


def mul_backward(ctx, grad):
    s, o = ctx.saved.get("self"), ctx.saved.get("other")
    need_s, need_o = ctx.needs_input_grad
    return (grad.mul(o) if need_s else None), (grad.mul(s) if need_o else None)


def div_forward(self, other, *, out=None):
    dt = _float_result(D.result_type(self, other))
    shape = G.broadcast_shapes(self.shape, other.shape)
    o = _out(out, shape, dt, self.device, "div")
    return K.binary(K.div_fn, self, other, o, 1.0, compute=K.compute_type(dt))


def div_backward(ctx, grad):
    s, o = ctx.saved.get("self"), ctx.saved.get("other")
    need_s, need_o = ctx.needs_input_grad
    gs = grad.div(o) if need_s else None
    go = grad.neg().mul(s.div(o).div(o)) if need_o else None
    return gs, go


def neg_forward(self, *, out=None):
    if self.dtype is D.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                           "to invert a mask, use the `~` or `logical_not()` operator instead.")
    o = _out(out, self.shape, self.dtype, self.device, "neg")
    return K.unary(K.neg_fn, self, o)


def neg_backward(ctx, grad):
    return (grad.neg(),)


ENTRIES = [
    Op("clone", copy_forward, copy_backward, "CloneBackward0"),
    Op("clone_copy", copy_forward, copy_backward, "CopyBackwards"),
    Op("to_copy", to_copy_forward, to_copy_backward, "ToCopyBackward0"),
    Op("copy_", copy_inplace_forward, copy_inplace_backward, "CopyBackwards", inputs=("self", "src")),
    Op("fill_", fill_forward, fill_backward, "FillBackward1", inputs=("self", "value")),
    Op("add", add_forward, add_backward, "AddBackward0", inputs=("self", "other")),
    Op("sub", sub_forward, sub_backward, "SubBackward0", inputs=("self", "other")),
    Op("mul", mul_forward, mul_backward, "MulBackward0", inputs=("self", "other"), save=("self", "other")),
    Op("div", div_forward, div_backward, "DivBackward0", inputs=("self", "other"), save=("self", "other")),
    Op("neg", neg_forward, neg_backward, "NegBackward0"),
]


# ------------------------------------------------------------------ pow / exp
def pow_forward(self, *, exponent, out=None):
    """self ** exponent for a Python number exponent."""
    dt = D.result_type(self, exponent)
    o = _out(out, self.shape, dt, self.device, "pow")
    if float(exponent) == int(exponent) and abs(exponent) < 2**31:
        if not dt.is_floating_point and exponent < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        return K.unary(K.pow_int_fn, self, o, int(exponent), 0, compute=K.compute_type(dt))
    return K.unary(K.pow_float_fn, self, o, float(exponent), 0.0, compute=K.compute_type(dt))


def pow_backward(ctx, grad):
    p = ctx.attrs["exponent"]
    s = ctx.saved["self"]
    if p == 0:
        return (grad.mul(0),)
    return (grad.mul(s.pow(p - 1).mul(p)),)


def exp_forward(self, *, out=None):
    dt = _float_result(self.dtype)
    o = _out(out, self.shape, dt, self.device, "exp")
    return K.unary(K.exp_fn, self, o, compute=K.compute_type(dt))


def exp_backward(ctx, grad):
    return (grad.mul(ctx.saved["result"]),)


def to_device_forward(self, *, device):
    out = empty(self.shape, self.dtype, device)
    return _cross_device_copy(out, self)


def to_device_backward(ctx, grad):
    return (grad.to(ctx.input_meta[0].device),)


ENTRIES += [
    Op("pow", pow_forward, pow_backward, "PowBackward0", save=("self",)),
    Op("exp", exp_forward, exp_backward, "ExpBackward0", save=("result",)),
    Op("to_device", to_device_forward, to_device_backward, "ToCopyBackward0"),
]
