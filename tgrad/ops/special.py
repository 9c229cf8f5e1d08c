"""Special functions and float-bit ops: i0 / special_i0e / special_i1 / special_i1e (modified Bessel functions of
the first kind), igamma / igammac (regularized incomplete gamma), frexp, nextafter (FNs in tgrad/kernels/special.py
on kernels/elementwise.py's map kernels).  Backward rules are derivatives.yaml's, written with tgrad ops."""
from .. import dtypes as D
from ..kernels import elementwise as K
from ..kernels import special as KS
from ..kernels._lang import compute_type, split64
from . import Op, call as _c
from ._pointwise import _broadcast_out, _full, _launch_unary, _mask, _out, _unary_float, _zeros


def _eps_safe(x):
    """(|x| > eps, x with eps where it is not): derivatives.yaml's i1_backward guard at 0."""
    eps = D.finfo(x.dtype).eps
    big = _c("gt", _c("abs", x), _full(eps, x))
    return big, _c("where", big, x, _full(eps, x))


def i0_backward(ctx, g):
    return (g.mul(_c("special_i1", ctx.saved["self"])),)


def i0e_backward(ctx, g):
    x = ctx.saved["self"]
    return (g.mul(_c("special_i1e", x).sub(_c("sign", x).mul(ctx.saved["result"]))),)


def i1_backward(ctx, g):
    """I1'(x) = I0(x) - I1(x) / x, 1/2 at 0."""
    big, x = _eps_safe(ctx.saved["self"])
    d = _c("i0", x).sub(ctx.saved["result"].div(x))
    return (g.mul(_c("where", big, d, _full(0.5, d))),)


def i1e_backward(ctx, g):
    """(e^-|x| I1)' = i0e(x) - i1e(x) (sgn x + 1/x), 1/2 at 0."""
    big, x = _eps_safe(ctx.saved["self"])
    d = _c("special_i0e", x).sub(ctx.saved["result"].mul(_c("sign", x).add(_c("reciprocal", x))))
    return (g.mul(_c("where", big, d, _full(0.5, d))),)


def _igamma(fn, name):
    def forward(self, other, *, out=None):
        dt = D.result_type(self, other)
        if not dt.is_floating_point:
            raise NotImplementedError(f"\"{name}_{self.device.type}\" not implemented for '{dt.legacy_name}'")
        o = _broadcast_out(out, dt, name, self, other)
        return K.binary(fn, self, other, o, compute=compute_type(dt))
    return forward


def _igamma_backward(sign, name):
    """d/dx P(a, x) = x^(a-1) e^-x / Gamma(a) (-that for Q); the derivative in a is not implemented (PyTorch)."""
    def backward(ctx, g):
        if ctx.needs_input_grad[0]:
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        a, x = ctx.saved["self"], ctx.saved["other"]
        d = a.sub(1).mul(_c("log", x)).sub(x).sub(_c("lgamma", a)).exp()
        return None, g.mul(d).mul(sign)
    return backward


def frexp_forward(self):
    if not self.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    m = _launch_unary(KS.frexp_mantissa_fn, self, None, self.dtype)
    e = K.unary(KS.frexp_exponent_fn, self, _out(None, self.shape, D.int32, self.device, "frexp"),
                compute=compute_type(self.dtype))
    return m, e


def frexp_backward(ctx, g, ge=None):
    """d mantissa / dx = 2^-exponent."""
    return (g.div(_c("exp2", ctx.saved["result1"].to(g.dtype))),)


def nextafter_forward(self, other, *, out=None):
    dt = D.result_type(self, other)
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"nextafter_{self.device.type}\" not implemented for '{dt.legacy_name}'")
    o = _broadcast_out(out, dt, "nextafter", self, other)
    if dt is D.float16:
        return K.binary(KS.nextafter_half_fn, self, other, o, compute=compute_type(dt))
    # bfloat16 is float32's upper half: one bfloat16 step is 2^16 float32 steps
    return K.binary(KS.nextafter_fn, self, other, o, 65536.0 if dt is D.bfloat16 else 1.0,
                    compute=compute_type(dt))


def nextafter_backward(ctx, g):
    x, y = ctx.saved["self"], ctx.saved["other"]
    return _mask(_c("ne", x, y), g), _zeros(g)


def kaiser_window_values_forward(self, *, beta):
    """I0(beta sqrt|1 - ((n - a) / a)^2|), a = (N - 1) / 2, for self = arange(N) in the window's dtype."""
    n = self.shape[0]
    return _launch_unary(KS.kaiser_fn, self, None, self.dtype, float((n - 1) / 2.0), *split64(float(beta)))


I0 = Op("i0", _unary_float(KS.i0_fn), i0_backward, "I0Backward0", save=("self",),
        variants=("method", "function"), inplace=True)
I0E = Op("special_i0e", _unary_float(KS.i0e_fn), i0e_backward, "SpecialI0EBackward0", save=("self", "result"))
I1 = Op("special_i1", _unary_float(KS.i1_fn), i1_backward, "SpecialI1Backward0", save=("self", "result"))
I1E = Op("special_i1e", _unary_float(KS.i1e_fn), i1e_backward, "SpecialI1EBackward0", save=("self", "result"))
IGAMMA = Op("igamma", _igamma(KS.igamma_fn, "igamma"), _igamma_backward(1.0, "igamma"), "IgammaBackward0",
            inputs=("self", "other"), save=("self", "other"), variants=("method", "function"), inplace=True)
IGAMMAC = Op("igammac", _igamma(KS.igammac_fn, "igammac"), _igamma_backward(-1.0, "igammac"), "IgammacBackward0",
             inputs=("self", "other"), save=("self", "other"), variants=("method", "function"), inplace=True)
FREXP = Op("frexp", frexp_forward, frexp_backward, "FrexpBackward0", save=("result1",), outputs=2,
           nondiff_outputs=(1,), variants=("method", "function"))
NEXTAFTER = Op("nextafter", nextafter_forward, nextafter_backward, "NextafterBackward0", inputs=("self", "other"),
               save=("self", "other"), variants=("method", "function"), inplace=True)

KAISER_WINDOW_VALUES = Op("kaiser_window_values", kaiser_window_values_forward)

ENTRIES = [I0, I0E, I1, I1E, IGAMMA, IGAMMAC, FREXP, NEXTAFTER, KAISER_WINDOW_VALUES]
