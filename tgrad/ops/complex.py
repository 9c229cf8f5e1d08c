"""Complex numbers: the float views of a complex tensor (view_as_real, view_as_complex, real, imag), making
complex tensors (complex, polar), conj, angle, sgn; and the complex forms of the arithmetic the other families
route here (mul, div, exp, neg, abs, add/sub on the float pairs).

Gradients follow PyTorch's convention ("Autograd for Complex Numbers"): for a real loss L of z = x + iy the
gradient is dL/dx + i dL/dy, the conjugate Wirtinger derivative times 2, so a holomorphic f backpropagates
grad * conj(f'(z)) (mul: grad * conj(other); exp: grad * conj(exp(z))); a real input receives the real part
(the engine's cast).  Kernels: ``kernels/complex.py`` (pairs of floats, no complex type in Triton).
"""
from .. import dtypes as D
from ..kernels import complex as KC
from ..kernels import elementwise as K
from ..kernels import _geometry as G
from ..kernels._lang import compute_type
from ..tensor import _mark_conj, empty, scalar, zeros
from . import Op, call as _c
from ._pointwise import _out


def _float_view(t, part):
    """The (..., 2) floats of complex ``t`` (part None), or its real (0) / imaginary (1) parts: views."""
    strides = tuple(2 * s for s in t._strides)
    if part is None:
        return t._view_of(t._shape + (2,), strides + (1,), 2 * t._offset, t.dtype.to_real())
    return t._view_of(t._shape, strides, 2 * t._offset + part, t.dtype.to_real())


def as_complex(t, dt):
    """``t`` as a tensor of complex dtype ``dt`` (itself when it is one already; a copy of a real tensor)."""
    if t.dtype.is_complex:
        return t        # the kernels load either width and compute in the output's
    return K.copy(t, empty(t._shape, dt, t._storage.device))


# ------------------------------------------------------------------ views
def view_as_real_forward(self):
    if not self.dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    if self._is_conj:
        raise RuntimeError("view_as_real doesn't work on unresolved conjugated tensors.  To resolve the conjugate "
                           "tensor so you can view it as real, use self.resolve_conj(); however, be warned that "
                           "the resulting tensor will NOT alias the original.")
    return _float_view(self, None)


def view_as_real_backward(ctx, grad):
    return (_c("view_as_complex", grad.contiguous()),)


def view_as_complex_forward(self):
    if self.dtype not in (D.float32, D.float64):
        raise RuntimeError("view_as_complex is only supported for float and double tensors, but got a tensor of "
                           f"scalar type: {self.dtype.legacy_name}")
    if not self._shape or self._shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if self._strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in self._strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if self._offset % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return self._view_of(self._shape[:-1], tuple(s // 2 for s in self._strides[:-1]), self._offset // 2,
                         self.dtype.to_complex())


def view_as_complex_backward(ctx, grad):
    return (_c("view_as_real", grad),)


def real_forward(self):
    return _float_view(self, 0)


def real_backward(ctx, grad):
    return (_c("complex", grad, zeros(grad._shape, grad.dtype, grad._storage.device)),)


def imag_forward(self):
    if not self.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    if self._is_conj:       # -Im of the stored values (PyTorch: a negative view; here new memory)
        im = _float_view(self, 1)
        return K.unary(K.neg_fn, im, empty(self._shape, im.dtype, self.device), compute=compute_type(im.dtype))
    return _float_view(self, 1)


def imag_backward(ctx, grad):
    return (_c("complex", zeros(grad._shape, grad.dtype, grad._storage.device), grad),)


# ------------------------------------------------------------------ making complex tensors
def _make_check(a, b, name):
    if a.dtype is not b.dtype or a.dtype not in (D.float16, D.float32, D.float64):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{a.dtype.legacy_name} and {b.dtype.legacy_name}")
    shape = G.broadcast_shapes(a._shape, b._shape)
    return empty(shape, a.dtype.to_complex(), a._storage.device)


def complex_forward(real, imag):
    """real + imag i, broadcast; (float32, float32) -> complex64, (float64, float64) -> complex128."""
    return KC.make(KC.COMPLEX, real, imag, _make_check(real, imag, "complex"))


def complex_backward(ctx, grad):
    return _c("real", grad), _c("imag", grad)


def polar_forward(abs, angle):
    """abs * (cos(angle) + i sin(angle))."""
    return KC.make(KC.POLAR, abs, angle, _make_check(abs, angle, "polar"))


def polar_backward(ctx, grad):
    """dL/dabs = Re(grad conj(e^(i angle))), dL/dangle = Im(grad conj(result))."""
    angle, result = ctx.saved["angle"], ctx.saved["result"]
    need_a, need_t = ctx.needs_input_grad
    ga = gt = None
    if need_a:
        cis = _c("polar", angle.mul(0).add(1), angle)
        ga = _c("real", grad.mul(_c("conj_physical", cis)))
    if need_t:
        gt = _c("imag", grad.mul(_c("conj_physical", result)))
    return ga, gt


# ------------------------------------------------------------------ conj, angle, sgn
def conj_forward(self):
    """The lazy conjugate: a view of the same memory with the conjugate bit flipped (no launch)."""
    v = self._view_of(self._shape, self._strides)
    if self._is_conj:
        v._is_conj = False
    else:
        _mark_conj(v)
    return v


def conj_backward(ctx, grad):
    return (_c("conj_physical", grad),)


def _raw(t):
    """``t`` without its conjugate bit: the stored values (a view, no autograd)."""
    r = t._view_of(t._shape, t._strides)
    r._is_conj = False
    return r


def resolve_conj_forward(self):
    """A conjugate view's values in new memory: the stored values conjugated (the dispatcher's materialization
    of a conjugate view read by any other op)."""
    return KC.unary(KC.CONJ, _raw(self), empty(self._shape, self.dtype, self.device))


def resolve_conj_backward(ctx, grad):
    return (grad,)


def conj_physical_forward(self, *, out=None):
    if not self.dtype.is_complex:
        return K.copy(self, _out(out, self._shape, self.dtype, self.device, "conj_physical"))
    return KC.unary(KC.CONJ, self, _out(out, self._shape, self.dtype, self.device, "conj_physical"))


def conj_physical_backward(ctx, grad):
    return (_c("conj_physical", grad),)


def angle_forward(self, *, out=None):
    """atan2(imag, real); a real tensor: pi where negative, else 0 (nan stays nan), float32 for integers."""
    if not self.dtype.is_complex:
        dt = self.dtype if self.dtype.is_floating_point else D.get_default_dtype()
        o = _out(out, self._shape, dt, self.device, "angle")
        x = self if self.dtype is dt else K.copy(self, empty(self._shape, dt, self.device))
        return K.binary(K.atan2_fn, x.mul(0), x, o)       # atan2(0, x): pi for x < 0, nan for nan
    return KC.to_real(KC.ANGLE, self, _out(out, self._shape, self.dtype.to_real(), self.device, "angle"))


def angle_backward(ctx, grad):
    """grad * i z / |z|^2 (0 at z = 0; a real input: 0)."""
    z = ctx.saved["self"]
    if not z.dtype.is_complex:
        return (grad.mul(0),)
    a2 = _c("abs", z).square()
    iz = _c("complex", _c("imag", z).neg(), _c("real", z))
    return (iz.div(a2.add(a2.eq(0).to(a2.dtype))).mul(grad),)


def sgn_forward(self, *, out=None):
    """z / |z| (0 at 0); the sign of a real tensor."""
    if not self.dtype.is_complex:
        return _c("sign", self) if out is None else self.sign(out=out)
    return KC.unary(KC.SGN, self, _out(out, self._shape, self.dtype, self.device, "sgn"))


def sgn_backward(ctx, grad):
    """(grad - Re(grad conj(s)) s) / |z| with s = sgn(z); 0 at z = 0."""
    z, s = ctx.saved["self"], ctx.saved["result"]
    if not z.dtype.is_complex:
        return (grad.mul(0),)
    a = _c("abs", z)
    nz = a.ne(0).to(a.dtype)
    g = grad.sub(_c("real", grad.mul(s.conj())).mul(s))
    return (g.div(a.add(1).sub(nz)).mul(nz),)


# ------------------------------------------------------------------ arithmetic routed from the other families
def binary(op, self, other, out, name):
    """self * other / self / other when either is complex (the result dtype's complex type)."""
    dt = D.result_type(self, other)
    shape = G.broadcast_shapes(self._shape, other._shape)
    o = _out(out, shape, dt, self._storage.device, name)
    return KC.binary(op, as_complex(self, dt), as_complex(other, dt), o)


def pairs(fn, self, other, alpha, out, name):
    """add / sub of complex operands: the real kernel ``fn`` over the float pairs (alpha real)."""
    if isinstance(alpha, complex):
        raise NotImplementedError(f"{name}: a complex alpha is not supported")
    dt = D.result_type(self, other)
    shape = G.broadcast_shapes(self._shape, other._shape)
    o = _out(out, shape, dt, self._storage.device, name)
    a, b = as_complex(self, dt), as_complex(other, dt)
    K.binary(fn, K.FloatView(a), K.FloatView(b), K.FloatView(o), *K.split64(float(alpha)))
    return o


def unary(op, self, out, name):
    return KC.unary(op, self, _out(out, self._shape, self.dtype, self.device, name))


def math(name, real_forward):
    """Forward of unary op ``name`` that routes a complex input to the complex kernel (``KC.UNARY[name]``)."""
    code = KC.UNARY[name]

    def forward(self, *, out=None, **attrs):
        if self.dtype._kind == 3:
            return unary(code, self, out, name)
        return real_forward(self, out=out, **attrs)
    forward.__name__ = f"{name}_forward"
    forward.__doc__ = real_forward.__doc__
    return forward


def holomorphic(rule):
    """Backward rule ``rule`` (grad times f'(self or result)) made complex-aware: for an f with real Taylor
    coefficients f'(conj z) = conj f'(z), so running the rule on conjugated saved tensors gives PyTorch's
    grad * conj(f'(z))."""
    def backward(ctx, *grads):
        saved = ctx.saved
        if any(getattr(v, "dtype", None) is not None and v.dtype._kind == 3 for v in saved.values()):
            saved = {k: (_c("conj_physical", v) if getattr(v, "dtype", None) is not None and v.dtype._kind == 3
                         else v) for k, v in saved.items()}
            ctx = type(ctx)(saved, ctx.attrs, ctx.needs_input_grad, ctx.input_meta)
        return rule(ctx, *grads)
    backward.__name__ = rule.__name__
    backward.__doc__ = rule.__doc__
    return backward


# x ** p for a Python number p: ATen's special exponents, else exp(p log x)
_POW_CODES = {2: KC.SQUARE, 3: KC.CUBE, 0.5: KC.SQRT, -0.5: KC.RSQRT, -1: KC.RECIPROCAL, -2: KC.RSQUARE}


def pow_scalar(x, p, out):
    """out = x ** p of complex x: 1 for p == 0, ATen's kernels for p in (2, 3, 0.5, -0.5, -1, -2), else
    exp(p log x) (p complex or real)."""
    if p == 0:
        return K.copy(scalar(1, out.dtype, out.device), out)
    code = _POW_CODES.get(p) if not isinstance(p, complex) else None
    if code is not None:
        return KC.unary(code, x, out)
    return KC.binary(KC.POW, x, scalar(p, out.dtype, out.device), out)


def pow_tensor_backward(g, x, y, r, need_x, need_y):
    """x ** y complex: d/dx = grad conj(y x^(y-1)) (0 where y == 0), d/dy = grad conj(x^y log x) (0 where
    x == 0 and Re y >= 0), PyTorch's pow_backward_self / pow_backward_exponent."""
    gx = gy = None
    if need_x:
        d = y.mul(_c("pow_tensor", x, y.sub(1))).conj()
        gx = _c("where", _c("eq", y, scalar(0, y.dtype, y.device)), scalar(0, g.dtype, g.device), g.mul(d))
    if need_y:
        yr = _c("real", y) if y.dtype._kind == 3 else y
        zero = _c("logical_and", _c("eq", x, scalar(0, x.dtype, x.device)), _c("ge", yr, scalar(0, yr.dtype, yr.device)))
        gy = _c("where", zero, scalar(0, g.dtype, g.device), g.mul(r.mul(_c("log", x)).conj()))
    return gx, gy


def _pair_view(t, nd, dt):
    """``t`` over float pairs, (nd + 1)-dim (leading dims of 1): a complex t's (..., 2) floats (a real t of a
    complex result made complex first), a bool t (a mask) with a trailing dim of 1."""
    if t.dtype is D.bool_:
        v = t._view_of(t._shape + (1,), t._strides + (0,))
    else:
        v = K.FloatView(as_complex(t, dt))
    pad = nd + 1 - len(v._shape)
    if pad:
        v._shape, v._strides = (1,) * pad + v._shape, (0,) * pad + v._strides
    return v


def ternary(fn, a, b, c, out):
    """out = fn(a, b, c) of kernels/elementwise.py's ternary map over the float pairs of complex ``out``
    (where, masked_fill: bool operands broadcast over both parts)."""
    nd = len(out._shape)
    args = [_pair_view(t, nd, out.dtype) for t in (a, b, c)]
    K.ternary(fn, *args, K.FloatView(out), compute=compute_type(out.dtype.to_real()))
    return out


def abs_forward(self, out):
    return KC.to_real(KC.ABS, self, _out(out, self._shape, self.dtype.to_real(), self.device, "abs"))


def reduce_sum(reduce, op, x, dims, keepdim, out_dtype, shape):
    """sum / mean of a complex tensor: the real and imaginary parts reduced apart (``reduce``: reduce._reduce)."""
    re = reduce(op, _float_view(x, 0), dims, keepdim, out_dtype.to_real(), shape=shape)
    im = reduce(op, _float_view(x, 1), dims, keepdim, out_dtype.to_real(), shape=shape)
    return KC.make(KC.COMPLEX, re, im, empty(re._shape, out_dtype, x._storage.device))


VIEW_AS_REAL = Op("view_as_real", view_as_real_forward, view_as_real_backward, "ViewAsRealBackward0", view=True,
                  variants=("function",))
VIEW_AS_COMPLEX = Op("view_as_complex", view_as_complex_forward, view_as_complex_backward,
                     "ViewAsComplexBackward0", view=True, variants=("function",))
REAL = Op("real", real_forward, real_backward, "RealBackward0", view=True, variants=("method", "function"))
IMAG = Op("imag", imag_forward, imag_backward, "ImagBackward0", view=True, variants=("method", "function"))
COMPLEX = Op("complex", complex_forward, complex_backward, "ComplexBackward0", inputs=("real", "imag"),
             variants=("function",))
POLAR = Op("polar", polar_forward, polar_backward, "PolarBackward0", inputs=("abs", "angle"),
           save=("angle", "result"), variants=("function",))
CONJ = Op("conj", conj_forward, conj_backward, "ConjBackward0", view=True, variants=("method", "function"))
# PyTorch's resolve_conj is a clone of the conjugate view (the conj applied while copying): CloneBackward0
RESOLVE_CONJ = Op("resolve_conj", resolve_conj_forward, resolve_conj_backward, "CloneBackward0",
                  variants=("method", "function"))
CONJ_PHYSICAL = Op("conj_physical", conj_physical_forward, conj_physical_backward, "ConjPhysicalBackward0",
                   variants=("method", "function"), inplace=True)
ANGLE = Op("angle", angle_forward, angle_backward, "AngleBackward0", save=("self",),
           variants=("method", "function"))
SGN = Op("sgn", sgn_forward, sgn_backward, "SgnBackward0", save=("self", "result"),
         variants=("method", "function"), inplace=True)

ENTRIES = [VIEW_AS_REAL, VIEW_AS_COMPLEX, REAL, IMAG, COMPLEX, POLAR, CONJ, RESOLVE_CONJ, CONJ_PHYSICAL, ANGLE, SGN]
