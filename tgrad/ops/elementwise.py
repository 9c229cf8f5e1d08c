"""Element-wise ops: copies/casts, fill, arithmetic, pow forms, binary math (div modes, fmod, remainder,
maximum/minimum, atan2), where, clamp, lerp, addcmul/addcdiv.  Unary math is in ``unary.py``, activations in
``activation.py``, comparisons and logical/bitwise ops in ``compare.py`` (all on kernels/elementwise.py's
strided kernels, with their ``FN`` math in the kernels module of the same name).

Forward functions take tensors (scalars were wrapped into 0-dim tensors by
the caller), pick the result dtype by PyTorch's promotion, allocate the output
(or write into ``out`` for in-place forms) and launch one kernel.  Backward
rules are written with tgrad ops so they can be differentiated again.
"""
import cmath
import math

import numpy as np

from .. import dtypes as D
from ..kernels import _geometry as G
from ..kernels import elementwise as K
from ..kernels import unary as KU
from ..kernels import complex as KC
from ..kernels._lang import compute_type, split64
from .._state import state as _grad_state
from ..tensor import _empty_pinned, _new, empty, scalar
from . import Op, call as _c
from . import complex as _complex
from . import reduce as _reduce
from ._pointwise import _broadcast_out, _float_result, _full, _launch_unary, _mask, _out, _zeros


# ------------------------------------------------------------------ copies
def copy_forward(self, *, dtype=None, out=None):
    """A contiguous copy of ``self`` (optionally cast to ``dtype``)."""
    out = _out(out, self.shape, dtype or self.dtype, self.device, "copy")
    return K.copy(self, out)


def copy_backward(ctx, grad):
    return (grad,)


def clone_forward(self, *, out=None):
    """A copy of ``self`` keeping its layout (``memory_format=preserve_format``; ``contiguous`` is the
    entry for contiguous copies)."""
    if out is None:
        out = empty(self.shape, self.dtype, self.device)
        strides = G.preserved_strides(tuple(self.shape), self.stride())
        if strides != out.stride():
            out = _new(out._storage, 0, out.shape, strides, out.dtype)
    return K.copy(self, out)


def to_copy_forward(self, *, dtype=None, out=None):
    return copy_forward(self, dtype=dtype, out=out)


def to_copy_backward(ctx, grad):
    dt = ctx.input_meta[0].dtype
    if grad.dtype._kind == 3 and dt._kind != 3:        # a real input of a complex copy: the real part
        grad = _c("real", grad)
    return (grad.to(dt),)


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


def _cross_device_copy(dst, src, non_blocking=False):
    """Device <-> host copies go through the memory backend on contiguous same-dtype buffers."""
    s = src
    if s.dtype is not dst.dtype or not s.is_contiguous() or tuple(s.shape) != tuple(dst.shape):
        tmp = empty(dst.shape, dst.dtype, src.device)
        K.copy(s, tmp)
        s = tmp
    if dst.is_contiguous():
        dst._storage.copy_(dst._offset * dst.dtype.itemsize, s._storage, s._offset * s.dtype.itemsize, s.nbytes,
                           non_blocking)
        return dst
    tmp = empty(dst.shape, dst.dtype, dst.device)
    tmp._storage.copy_(0, s._storage, s._offset * s.dtype.itemsize, s.nbytes)
    return K.copy(tmp, dst)


def copy_inplace_backward(ctx, grad):
    """src's gradient goes back to src's device (copy_ may cross devices)."""
    return (grad.mul(0), grad.to(ctx.input_meta[1].device))


def fill_forward(self, value, *, out=None):
    """``self.fill_(value)``; value is a 0-dim tensor."""
    dst = out if out is not None else self
    if value.dim() != 0:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                           f"{value.dim()} dimensions.")
    return K.copy(value, dst)


def fill_backward(ctx, grad):
    return (grad.mul(0), grad.sum())


def fill_scalar_forward(self, *, value, out=None):
    """``self.fill_(value)`` for a Python number (PyTorch's FillBackward2: no value input)."""
    dst = out if out is not None else self
    return K.copy(scalar(value, dst.dtype, dst.device), dst)


def zero_forward(self, *, out=None):
    """``self.zero_()`` (its own entry: PyTorch's grad_fn is ZeroBackward0, with no value input)."""
    return K.fill(out if out is not None else self, 0)


def zero_backward(ctx, grad):
    return (_zeros(grad),)


# ------------------------------------------------------------------ arithmetic
_ALPHA_ONE = split64(1.0)
_BROADCAST = {}     # (shape, shape) -> their broadcast shape


def _broadcast2(a, b):
    """G.broadcast_shapes(a, b) of two shape tuples, remembered per pair (errors are not)."""
    if a == b:
        return a
    s = _BROADCAST.get((a, b))
    if s is None:
        s = G.broadcast_shapes(a, b)
        if len(_BROADCAST) >= 4096:
            _BROADCAST.clear()
        _BROADCAST[(a, b)] = s
    return s


def _binary(fn, self, other, alpha, out):
    """out = fn(self, other, alpha) in the promoted dtype over the broadcast shape."""
    if self.dtype._kind == 3 or other.dtype._kind == 3:
        if fn is K.mul_fn:
            return _complex.binary(KC.MUL, self, other, out, "mul")
        return _complex.pairs(fn, self, other, alpha, out, "add" if fn in (K.add_fn, K.add_noalpha_fn) else "sub")
    dt = self.dtype if self.dtype is other.dtype else D.result_type(self, other)
    shape = _broadcast2(self._shape, other._shape)
    o = empty(shape, dt, self._storage.device) if out is None else _out(out, shape, dt, None, "")
    if not o.dtype.is_floating_point:
        a = (int(alpha), 0)
    else:
        a = _ALPHA_ONE if type(alpha) is int and alpha == 1 else split64(float(alpha))
    return K.binary(fn, self, other, o, *a)


def _alpha_check(self, other, alpha):
    if isinstance(alpha, (bool, np.bool_)) and D.result_type(self, other) is not D.bool_:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if alpha != 1 and not D.result_type(self, other).is_floating_point and isinstance(alpha, float):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")


def add_forward(self, other, *, alpha=1, out=None):
    if type(alpha) is not int or alpha != 1:    # the default alpha passes every check
        _alpha_check(self, other, alpha)
    return _binary(K.add_noalpha_fn if alpha == 1 else K.add_fn, self, other, alpha, out)


def add_backward(ctx, grad):
    a = ctx.attrs.get("alpha", 1)
    return grad, (None if not ctx.needs_input_grad[1] else grad if a == 1 else grad.mul(a))


def sub_forward(self, other, *, alpha=1, out=None):
    if self.dtype is D.bool_ and other.dtype is D.bool_:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
                           "`^` or `logical_xor()` operator instead.")
    if self.dtype is D.bool_ or other.dtype is D.bool_:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
                           "to invert a mask, use the `~` or `logical_not()` operator instead.")
    if type(alpha) is not int or alpha != 1:
        _alpha_check(self, other, alpha)
    return _binary(K.sub_noalpha_fn if alpha == 1 else K.sub_fn, self, other, alpha, out)


def sub_backward(ctx, grad):
    a = ctx.attrs.get("alpha", 1)
    return grad, (None if not ctx.needs_input_grad[1] else grad.neg() if a == 1 else grad.mul(-a))


def rsub_forward(self, other, *, alpha=1, out=None):
    """``other - alpha * self``: ``1 - x`` with a Python number (PyTorch's rsub, RsubBackward1)."""
    return sub_forward(other, self, alpha=alpha, out=out)


def rsub_backward(ctx, grad):
    a = ctx.attrs.get("alpha", 1)
    return (grad.neg() if a == 1 else grad.mul(-a)), (grad if ctx.needs_input_grad[1] else None)


_SCALAR_FNS = {"add": K.add_scalar_fn, "sub": K.sub_scalar_fn, "rsub": K.rsub_scalar_fn, "mul": K.mul_scalar_fn,
               "div": K.div_scalar_fn}


def scalar_forward(name, self, value, out=None):
    """``self <name> value`` (rsub: ``value - self``) of a float32 tensor and a float ``value`` that fp32 holds, as
    one launch taking ``value`` as an fp32 argument: the bits of ``name``'s forward with ``value`` wrapped as a
    0-dim float32 operand, without allocating and filling that operand (the caller checked the conditions)."""
    o = empty(self._shape, self.dtype, self._storage.device) if out is None else out
    return K.unary(_SCALAR_FNS[name], self, o, value)


def mul_forward(self, other, *, alpha=1, out=None):
    return _binary(K.mul_fn, self, other, alpha, out)


def mul_backward(ctx, grad):
    s, o = ctx.saved.get("self"), ctx.saved.get("other")
    need_s, need_o = ctx.needs_input_grad
    meta = ctx.input_meta
    return (_mul_grad(grad, o, meta[0]) if need_s else None), (_mul_grad(grad, s, meta[1]) if need_o else None)


def _mul_grad(grad, other, meta):
    """grad * other (complex: grad * conj(other)); when the input was broadcast and no graph is recorded, already
    summed to its shape in one launch (the engine's sum_to_size would be a second one, issue #6)."""
    if other.dtype._kind == 3:
        return _c("mul", grad, _c("conj_physical", other))
    if meta.shape != grad._shape and not _grad_state.grad:
        g = _reduce.mul_sum_to_size(grad, other, meta.shape)
        if g is not None:
            return g
    return _c("mul", grad, other)


def div_forward(self, other, *, out=None):
    if self.dtype._kind == 3 or other.dtype._kind == 3:
        return _complex.binary(KC.DIV, self, other, out, "div")
    dt = _float_result(D.result_type(self, other))
    shape = G.broadcast_shapes(self.shape, other.shape)
    o = _out(out, shape, dt, self.device, "div")
    return K.binary(K.div_fn, self, other, o, 1.0, compute=compute_type(dt))


def div_backward(ctx, grad):
    s, o = ctx.saved.get("self"), ctx.saved.get("other")
    need_s, need_o = ctx.needs_input_grad
    if s.dtype._kind == 3 or o.dtype._kind == 3:       # grad / conj(o), -grad conj(s / o^2)
        return (grad.div(o.conj()) if need_s else None,
                grad.neg().mul(s.div(o).div(o).conj()) if need_o else None)
    gs = grad.div(o) if need_s else None
    go = grad.neg().mul(s.div(o).div(o)) if need_o else None
    return gs, go


def neg_forward(self, *, out=None):
    if self.dtype is D.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                           "to invert a mask, use the `~` or `logical_not()` operator instead.")
    if self.dtype._kind == 3:
        return _complex.unary(KC.NEG, self, out, "neg")
    o = _out(out, self.shape, self.dtype, self.device, "neg")
    return K.unary(K.neg_fn, self, o)


def neg_backward(ctx, grad):
    return (grad.neg(),)


CLONE = Op("clone", clone_forward, copy_backward, "CloneBackward0", variants=("method", "function"))
CONTIGUOUS = Op("contiguous", copy_forward, copy_backward, "CloneBackward0", variants=("method",))
CLONE_COPY = Op("clone_copy", copy_forward, copy_backward, "CopyBackwards")
TO_COPY = Op("to_copy", to_copy_forward, to_copy_backward, "ToCopyBackward0")
COPY_ = Op("copy_", copy_inplace_forward, copy_inplace_backward, "CopyBackwards", inputs=("self", "src"),
           variants=("method",))
FILL_ = Op("fill_", fill_forward, fill_backward, "FillBackward3", inputs=("self", "value"), variants=("method", "function"))
FILL_SCALAR = Op("fill_scalar", fill_scalar_forward, zero_backward, "FillBackward2")
ZERO_ = Op("zero_", zero_forward, zero_backward, "ZeroBackward0", variants=("method", "function"))
ADD = Op("add", add_forward, add_backward, "AddBackward0", inputs=("self", "other"),
         variants=("method", "function"), inplace=True)
SUB = Op("sub", sub_forward, sub_backward, "SubBackward0", inputs=("self", "other"),
         variants=("method", "function"), inplace=True)
RSUB = Op("rsub", rsub_forward, rsub_backward, "RsubBackward1", inputs=("self", "other"), variants=("function",))
RSUB_TENSOR = Op("rsub_tensor", rsub_forward, rsub_backward, "RsubBackward0", inputs=("self", "other"))
MUL = Op("mul", mul_forward, mul_backward, "MulBackward0", inputs=("self", "other"), save=("self", "other"),
         variants=("method", "function"), inplace=True)
DIV = Op("div", div_forward, div_backward, "DivBackward0", inputs=("self", "other"), save=("self", "other"),
         variants=("method", "function"), inplace=True)
NEG = Op("neg", neg_forward, neg_backward, "NegBackward0", variants=("method", "function"), inplace=True)


# ------------------------------------------------------------------ pow / exp
def pow_forward(self, *, exponent, out=None):
    """self ** exponent for a Python number exponent (C99 pow special values, as numpy and PyTorch)."""
    # a Python int or float leaves a floating tensor's dtype as it is
    dt = self.dtype if self.dtype.is_floating_point and type(exponent) in (int, float) else \
        D.result_type(self, exponent)
    o = empty(self._shape, dt, self._storage.device) if out is None else _out(out, self._shape, dt, None, "pow")
    if dt._kind == 3:
        return _complex.pow_scalar(_complex.as_complex(self, dt), exponent, o)
    if _int_exponent(exponent):
        if not dt.is_floating_point and exponent < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        if exponent == 2:
            return K.unary(K.square_fn, self, o, compute=compute_type(dt))
        if exponent in (3, -2) and dt in (D.float32, D.float64):    # ATen's pow: x * x * x, 1 / (x * x)
            return K.unary(K.cube_fn if exponent == 3 else K.inv_square_fn, self, o, compute=compute_type(dt))
        return K.unary(K.pow_int_fn, self, o, int(exponent), 0, compute=compute_type(dt))
    if exponent in (0.5, -0.5):     # PyTorch's sqrt / rsqrt: (-0) ** 0.5 = -0, (-inf) ** 0.5 = NaN
        return K.unary(K.sqrt_fn if exponent > 0 else KU.rsqrt_fn, self, o, compute=compute_type(dt))
    # |p| >= 1e30 only matters through its sign (every such float is an even integer): keep it in fp32 range
    p = max(-1e30, min(1e30, float(exponent))) if math.isfinite(exponent) else float(exponent)
    return K.unary(K.pow_float_fn, self, o, *split64(p), compute=compute_type(dt))


def _int_exponent(p):
    if type(p) is int:      # (the usual x ** 2)
        return -2**31 < p < 2**31
    return math.isfinite(p) and float(p) == int(p) and abs(p) < 2**31


def pow_backward(ctx, grad):
    """p * self ** (p - 1) * grad; zeros for p == 0 (as PyTorch, even where grad or self is not finite)."""
    p = ctx.attrs["exponent"]
    s = ctx.saved["self"]
    if p == 0:
        return (_zeros(grad),)
    if s.dtype._kind == 3 or isinstance(p, complex):   # grad * conj(p z^(p - 1))
        return (grad.mul(s.pow(p - 1).mul(p).conj()),)
    if _int_exponent(p) and s.dtype.is_floating_point:
        return (_c("pow_backward", grad, s, exponent=int(p)),)
    return (grad.mul(s.pow(p - 1).mul(p)),)


def pow_backward_forward(grad, self, *, exponent):
    """grad * (p * self ** (p - 1)) for an integer p: one launch instead of pow, mul, mul."""
    dt = D.result_type(grad, self)
    o = empty(_broadcast2(grad._shape, self._shape), dt, self._storage.device)
    fn = K.pow2_grad_fn if exponent == 2 else K.pow_grad_fn
    return K.binary(fn, grad, self, o, float(exponent), int(exponent) - 1, compute=compute_type(dt))


def pow_backward_backward(ctx, gg):
    """d/dgrad = p self^(p-1); d/dself = grad p (p-1) self^(p-2) (none for p = 1)."""
    g, s = ctx.saved["grad"], ctx.saved["self"]
    p = ctx.attrs["exponent"]
    need_g, need_s = ctx.needs_input_grad
    dg = _c("pow_backward", gg, s, exponent=p) if need_g else None
    ds = _c("pow_backward", gg.mul(g).mul(p), s, exponent=p - 1) if need_s and p != 1 else None
    return dg, ds


def to_device_forward(self, *, device, non_blocking=False):
    """``non_blocking``: from pinned memory, or to cpu (into pinned memory, as PyTorch does), the copy is
    queued on the GPU's current stream."""
    if non_blocking and device.type == "cpu" and self.device.type != "cpu":
        out = _empty_pinned(self.shape, self.dtype)
    else:
        out = empty(self.shape, self.dtype, device)
    return _cross_device_copy(out, self, non_blocking)


def to_device_backward(ctx, grad):
    return (grad.to(ctx.input_meta[0].device),)


POW = Op("pow", pow_forward, pow_backward, "PowBackward0", save=("self",),
         variants=("method", "function"), inplace=True)
# the gradient of x ** p shows MulBackward0 under create_graph, as PyTorch's formula ends in a product
POW_BACKWARD = Op("pow_backward", pow_backward_forward, pow_backward_backward, "MulBackward0", inputs=("grad", "self"),
                  save=("grad", "self"))
TO_DEVICE = Op("to_device", to_device_forward, to_device_backward, "ToCopyBackward0")


def _int_zero_check(other):
    if (not other.dtype.is_floating_point and other.dtype is not D.bool_ and not other.is_meta    # (no values)
            and (other._host_copy() == 0).any()):
        raise RuntimeError("ZeroDivisionError")


# ------------------------------------------------------------------ binary ops


def div_mode_forward(self, other, *, rounding_mode, out=None):
    """x / y rounded toward zero ('trunc') or down ('floor'); integers stay integers."""
    if rounding_mode not in ("trunc", "floor"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                           f"'{rounding_mode}'")
    dt = D.result_type(self, other)
    if dt.is_floating_point:
        fn = K.div_trunc_fn if rounding_mode == "trunc" else K.div_floor_fn
    else:
        _int_zero_check(other)
        fn = K.int_div_trunc_fn if rounding_mode == "trunc" else K.int_div_floor_fn
    o = _broadcast_out(out, dt, "div", self, other)
    return K.binary(fn, self, other, o, compute=compute_type(dt))


def zero2_backward(ctx, g):
    return _zeros(g), _zeros(g)


def _int_safe(fn):
    """fmod / remainder: integer division by zero raises ZeroDivisionError before the launch."""
    def forward(self, other, *, out=None):
        dt = D.result_type(self, other)
        if not dt.is_floating_point:
            _int_zero_check(other)
        o = _broadcast_out(out, dt, "", self, other)
        return K.binary(fn, self, other, o, compute=compute_type(dt))
    return forward


def fmod_backward(ctx, g):
    s, o = ctx.saved["self"], ctx.saved["other"]
    go = g.mul(_c("div_mode", s, o, rounding_mode="trunc")).neg() if ctx.needs_input_grad[1] else None
    return g, go


def remainder_backward(ctx, g):
    s, o = ctx.saved["self"], ctx.saved["other"]
    go = g.mul(_c("div_mode", s, o, rounding_mode="floor")).neg() if ctx.needs_input_grad[1] else None
    return g, go


def pow_tensor_forward(self, exponent, *, out=None):
    """self ** exponent elementwise (broadcast)."""
    dt = D.result_type(self, exponent)
    o = _broadcast_out(out, dt, "pow", self, exponent)
    if dt._kind == 3:
        return KC.binary(KC.POW, _complex.as_complex(self, dt), _complex.as_complex(exponent, dt), o)
    fn = K.pow_tensor_fn if dt.is_floating_point else K.int_pow_tensor_fn
    return K.binary(fn, self, exponent, o, compute=compute_type(dt))


def pow_tensor_backward(ctx, g):
    """d/dx = y x^(y-1) (0 where y == 0); d/dy = x^y log x (0 where x == 0 and y >= 0)."""
    x, y, r = ctx.saved["self"], ctx.saved["exponent"], ctx.saved["result"]
    need_x, need_y = ctx.needs_input_grad
    if r.dtype._kind == 3:
        return _complex.pow_tensor_backward(g, x, y, r, need_x, need_y)
    gx = gy = None
    if need_x:
        d = y.mul(_c("pow_tensor", x, y.sub(1)))
        gx = _c("where", _c("eq", y, _full(0, y)), _full(0, g), g.mul(d))
    if need_y:
        zero = _c("logical_and", _c("eq", x, _full(0, x)), _c("ge", y, _full(0, y)))
        gy = _c("where", zero, _full(0, g), g.mul(r.mul(_c("log", x))))
    return gx, gy


def pow_scalar_base_forward(self, *, base, out=None):
    """base ** self for a Python number base (the base in self's result dtype, as PyTorch)."""
    dt = D.result_type(base, self)
    b = scalar(base, dt, self.device)
    o = _out(out, self.shape, dt, self.device, "pow")
    if dt._kind == 3:
        return KC.binary(KC.POW, b, _complex.as_complex(self, dt), o)
    fn = K.pow_tensor_fn if dt.is_floating_point else K.int_pow_tensor_fn
    return K.binary(fn, b, self, o, compute=compute_type(dt))


def pow_scalar_base_backward(ctx, g):
    """d/dx base^x = base^x log(base) (0 where base == 0 and x >= 0)."""
    base, r = ctx.attrs["base"], ctx.saved["result"]
    if r.dtype._kind == 3 and base != 0:     # grad * conj(base^z log(base))
        return (g.mul(r.conj()).mul(cmath.log(base).conjugate()),)
    if base == 0:
        return (_c("where", _c("ge", ctx.saved["self"], _full(0, g)), _full(0, g), g.mul(r).mul(float("-inf"))),)
    return (g.mul(r).mul(math.log(base) if base > 0 else float("nan")),)


def atan2_forward(self, other, *, out=None):
    dt = _float_result(D.result_type(self, other))
    o = _broadcast_out(out, dt, "atan2", self, other)
    return K.binary(K.atan2_fn, self, other, o, compute=compute_type(dt))


def atan2_backward(ctx, g):
    """d/dy atan2(y, x) = x / (x^2 + y^2); d/dx = -y / (x^2 + y^2)."""
    y, x = ctx.saved["self"], ctx.saved["other"]
    r = g.div(x.mul(x).add(y.mul(y)))
    return (r.mul(x) if ctx.needs_input_grad[0] else None), (r.mul(y).neg() if ctx.needs_input_grad[1] else None)

DIV_MODE = Op("div_mode", div_mode_forward, zero2_backward, "DivBackward2", inputs=("self", "other"))
POW_TENSOR = Op("pow_tensor", pow_tensor_forward, pow_tensor_backward, "PowBackward1", inputs=("self", "exponent"),
                save=("self", "exponent", "result"))
POW_SCALAR_BASE = Op("pow_scalar_base", pow_scalar_base_forward, pow_scalar_base_backward, "PowBackward2",
                     save=("self", "result"))
FMOD = Op("fmod", _int_safe(K.fmod_fn), fmod_backward, "FmodBackward1", inputs=("self", "other"),
          save=("self", "other"), variants=("method", "function"), inplace=True)
REMAINDER = Op(
    "remainder", _int_safe(K.remainder_fn), remainder_backward, "RemainderBackward1", inputs=("self", "other"),
    save=("self", "other"), variants=("method", "function"), inplace=True)
# the Scalar overloads (other is a wrapped Python number): PyTorch's node names, gradient to self only
FMOD_SCALAR = Op(
    "fmod_scalar", _int_safe(K.fmod_fn), lambda ctx, g: (g, None), "FmodBackward0", inputs=("self", "other"))
REMAINDER_SCALAR = Op("remainder_scalar", _int_safe(K.remainder_fn), lambda ctx, g: (g, None), "RemainderBackward0",
                      inputs=("self", "other"))
ATAN2 = Op("atan2", atan2_forward, atan2_backward, "Atan2Backward0", inputs=("self", "other"), save=("self", "other"),
           variants=("method", "function"), inplace=True)

# ------------------------------------------------------------------ where / clamp / lerp / addcmul / addcdiv
def where_forward(condition, self, other, *, out=None):
    """condition ? self : other, broadcast over all three."""
    if condition.dtype is not D.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{condition.dtype.legacy_name}")
    dt = D.result_type(self, other)
    o = _broadcast_out(out, dt, "where", condition, self, other)
    if dt._kind == 3:
        return _complex.ternary(K.where_fn, condition, self, other, o)
    return K.ternary(K.where_fn, condition, self, other, o, compute=compute_type(dt))


def where_backward(ctx, g):
    c = ctx.saved["condition"]
    zero = _full(0, g)
    _, need_s, need_o = ctx.needs_input_grad
    return (None, _c("where", c, g, zero) if need_s else None, _c("where", c, zero, g) if need_o else None)


def _bounds(dt, lo, hi):
    if dt.is_floating_point:
        return (float("-inf") if lo is None else float(lo)), (float("inf") if hi is None else float(hi))
    return (-2**63 if lo is None else int(lo)), (2**63 - 1 if hi is None else int(hi))


def clamp_forward(self, *, min=None, max=None, out=None):
    """min(max(self, min), max) for Python-number bounds (either may be None)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    dt = D.result_type(self, *[v for v in (min, max) if v is not None])
    lo, hi = _bounds(dt, min, max)
    if dt is D.float64:   # float kernel args are fp32: exact float64 bounds travel as 0-dim tensors
        o = _out(out, self.shape, dt, self.device, "clamp")
        return K.ternary(K.clamp_tensor_fn, self, _full(lo, o), _full(hi, o), o, compute=compute_type(dt))
    return _launch_unary(K.clamp_fn, self, out, dt, lo, hi, name="clamp")


def clamp_backward(ctx, g):
    return (_c("clamp_backward", g, ctx.saved["self"], min=ctx.attrs.get("min"), max=ctx.attrs.get("max")),)


def clamp_backward_forward(grad_output, self, *, min=None, max=None, out=None):
    """grad_output where min <= self <= max, else 0 (one launch)."""
    dt = grad_output.dtype
    lo, hi = _bounds(D.float64, min, max)
    o = _broadcast_out(out, dt, "clamp_backward", grad_output, self)
    return K.binary(K.clamp_backward_fn, grad_output, self, o, lo, hi, compute=compute_type(dt))


def clamp_backward_backward(ctx, gg):
    need_g = ctx.needs_input_grad[0]
    return (_c("clamp_backward", gg, ctx.saved["self"], **ctx.attrs) if need_g else None), None


def clamp_tensor_forward(self, min=None, max=None, *, out=None):
    """Clamp with tensor bounds (either may be None), broadcast."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    ts = [t for t in (self, min, max) if t is not None]
    dt = D.result_type(*ts)
    lo_v, hi_v = _bounds(dt, None, None)
    lo = min if min is not None else scalar(lo_v, dt, self.device)
    hi = max if max is not None else scalar(hi_v, dt, self.device)
    o = _broadcast_out(out, dt, "clamp", *ts)
    return K.ternary(K.clamp_tensor_fn, self, lo, hi, o, compute=compute_type(dt))


def clamp_tensor_backward(ctx, g):
    x, lo, hi = ctx.saved["self"], ctx.saved.get("min"), ctx.saved.get("max")
    need_x, need_lo, need_hi = ctx.needs_input_grad
    inside = None
    if lo is not None:
        inside = _c("ge", x, lo)
    if hi is not None:
        le = _c("le", x, hi)
        inside = le if inside is None else _c("logical_and", inside, le)
    gx = _mask(inside, g) if need_x else None
    glo = _mask(_c("lt", x, lo), g) if need_lo else None
    ghi = _mask(_c("gt", x, hi), g) if need_hi else None
    return gx, glo, ghi


def _same_dtype(self, other, name):
    if other.dtype is not self.dtype:
        raise RuntimeError(f"expected dtype {self.dtype} for `{name}` but got dtype {other.dtype}")


def _float_only(x, kernel):
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{x.dtype.legacy_name}'")


def lerp_forward(self, end, *, weight, out=None):
    """self + weight (end - self) for a Python-number weight."""
    _same_dtype(self, end, "end")
    _float_only(self, "lerp_kernel_scalar")
    o = _broadcast_out(out, self.dtype, "lerp", self, end)
    return K.binary(K.lerp_fn, self, end, o, *split64(weight), compute=compute_type(self.dtype))


def lerp_backward(ctx, g):
    w = ctx.attrs["weight"]
    return g.mul(1.0 - w), g.mul(w)


def lerp_tensor_forward(self, end, weight, *, out=None):
    _same_dtype(self, end, "end")
    _same_dtype(self, weight, "weight")
    _float_only(self, "lerp_kernel_tensor")
    o = _broadcast_out(out, self.dtype, "lerp", self, end, weight)
    return K.ternary(K.lerp_tensor_fn, self, end, weight, o, compute=compute_type(self.dtype))


def lerp_tensor_backward(ctx, g):
    x, e, w = ctx.saved["self"], ctx.saved["end"], ctx.saved["weight"]
    ns, ne, nw = ctx.needs_input_grad
    gw = g.mul(w)
    return (g.sub(gw) if ns else None), (gw if ne else None), (g.mul(e.sub(x)) if nw else None)


def _addc(fn, name):
    def forward(self, tensor1, tensor2, *, value=1, out=None):
        dt = D.result_type(self, tensor1, tensor2)
        if name == "addcdiv" and not D.result_type(tensor1, tensor2).is_floating_point:
            raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future  release "
                               "addcdiv will perform a true division of tensor1 and tensor2. The historic "
                               "addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / "
                               "tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
                               "tensor2) for float inputs. The future addcdiv behavior is just the latter "
                               "implementation: (input + value * tensor1 / tensor2), for all dtypes.")
        o = _broadcast_out(out, dt, name, self, tensor1, tensor2)
        return K.ternary(fn, self, tensor1, tensor2, o, *split64(value), compute=compute_type(dt))
    return forward


def addcmul_backward(ctx, g):
    t1, t2, v = ctx.saved["tensor1"], ctx.saved["tensor2"], ctx.attrs.get("value", 1)
    _, n1, n2 = ctx.needs_input_grad
    gv = g if v == 1 else g.mul(v)
    return g, (gv.mul(t2) if n1 else None), (gv.mul(t1) if n2 else None)


def addcdiv_backward(ctx, g):
    t1, t2, v = ctx.saved["tensor1"], ctx.saved["tensor2"], ctx.attrs.get("value", 1)
    _, n1, n2 = ctx.needs_input_grad
    gv = g.div(t2) if v == 1 else g.mul(v).div(t2)
    return g, (gv if n1 else None), (gv.mul(t1).div(t2).neg() if n2 else None)


WHERE = Op("where", where_forward, where_backward, "WhereBackward0", inputs=("condition", "self", "other"),
           save=("condition",), variants=("method", "function"))
CLAMP = Op("clamp", clamp_forward, clamp_backward, "ClampBackward1", save=("self",),
           variants=("method", "function"), inplace=True)
CLAMP_BACKWARD = Op("clamp_backward", clamp_backward_forward, clamp_backward_backward, "ClampBackwardBackward0",
                    inputs=("grad_output", "self"), save=("self",))
CLAMP_TENSOR = Op(
    "clamp_tensor", clamp_tensor_forward, clamp_tensor_backward, "ClampBackward0", inputs=("self", "min", "max"),
    save=("self", "min", "max"))
LERP = Op("lerp", lerp_forward, lerp_backward, "LerpBackward0", inputs=("self", "end"),
          variants=("method", "function"), inplace=True)
LERP_TENSOR = Op(
    "lerp_tensor", lerp_tensor_forward, lerp_tensor_backward, "LerpBackward1", inputs=("self", "end", "weight"),
    save=("self", "end", "weight"))
ADDCMUL = Op("addcmul", _addc(K.addcmul_fn, "addcmul"), addcmul_backward, "AddcmulBackward0",
             inputs=("self", "tensor1", "tensor2"), save=("tensor1", "tensor2"),
             variants=("method", "function"), inplace=True)
ADDCDIV = Op("addcdiv", _addc(K.addcdiv_fn, "addcdiv"), addcdiv_backward, "AddcdivBackward0",
             inputs=("self", "tensor1", "tensor2"), save=("tensor1", "tensor2"),
             variants=("method", "function"), inplace=True)


ENTRIES = [CLONE, CONTIGUOUS, CLONE_COPY, TO_COPY, COPY_, FILL_, FILL_SCALAR, ZERO_, ADD, SUB, RSUB, RSUB_TENSOR,
           MUL, DIV, NEG, POW, POW_BACKWARD, TO_DEVICE, DIV_MODE, POW_TENSOR, POW_SCALAR_BASE, FMOD, REMAINDER,
           FMOD_SCALAR, REMAINDER_SCALAR, ATAN2, WHERE, CLAMP, CLAMP_BACKWARD, CLAMP_TENSOR, LERP, LERP_TENSOR,
           ADDCMUL, ADDCDIV]
