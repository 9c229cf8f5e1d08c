"""Unary math: exp, exp2, logs, sqrt/rsqrt, reciprocal, trig and inverse trig, hyperbolic, erf/erfc, abs, sign,
rounding, frac, isnan/isinf/isfinite, nan_to_num, the gamma family (lgamma, digamma, polygamma) and erfinv (FNs in tgrad/kernels/unary.py on kernels/elementwise.py's ``unary_kernel``).

Floating ops promote integer inputs to the default float dtype; backward rules are written with tgrad ops.
"""
import math

from .. import dtypes as D
from ..kernels import elementwise as K
from ..kernels import unary as KU
from ..kernels import complex as KC
from ..kernels import compare as KCMP
from ..kernels._lang import compute_type, split64
from ..tensor import empty
from . import Op, call as _c
from . import complex as _complex
from ._pointwise import _float_result, _launch_unary, _mask, _out, _unary_float, _zeros


def exp_forward(self, *, out=None):
    if self.dtype._kind == 3:
        return _complex.unary(KC.EXP, self, out, "exp")
    dt = _float_result(self.dtype)
    o = _out(out, self.shape, dt, self.device, "exp")
    return K.unary(KU.exp_fn, self, o, compute=compute_type(dt))


def exp_backward(ctx, grad):
    r = ctx.saved["result"]
    return (grad.mul(r.conj() if r.dtype._kind == 3 else r),)


EXP = Op("exp", exp_forward, exp_backward, "ExpBackward0", save=("result",),
         variants=("method", "function"), inplace=True)


def abs_forward(self, *, out=None):
    if self.dtype._kind == 3:
        return _complex.abs_forward(self, out)
    return _launch_unary(KU.abs_fn, self, out, self.dtype)


def sign_forward(self, *, out=None):
    if self.dtype is D.bool_:
        return K.copy(self, _out(out, self.shape, self.dtype, self.device, "sign"))
    return _launch_unary(KU.sign_fn, self, out, self.dtype)


def _rounding(fn):
    """floor/ceil/round/trunc: integers are returned unchanged (as a copy), like PyTorch."""
    def forward(self, *, out=None):
        if not self.dtype.is_floating_point:
            return K.copy(self, _out(out, self.shape, self.dtype, self.device, ""))
        return _launch_unary(fn, self, out, self.dtype)
    return forward


def round_decimals_forward(self, *, decimals, out=None):
    if not self.dtype.is_floating_point:
        raise NotImplementedError(f"\"round_cpu\" not implemented for '{self.dtype.legacy_name}'")
    return _launch_unary(KU.round_decimals_fn, self, out, self.dtype, float(10.0 ** abs(decimals)),
                         int(decimals < 0))


def frac_forward(self, *, out=None):
    if not self.dtype.is_floating_point:
        raise NotImplementedError(f"\"frac_cpu\" not implemented for '{self.dtype.legacy_name}'")
    return _launch_unary(KU.frac_fn, self, out, self.dtype)


def _predicate(fn, both=False):
    """isnan/isinf/isfinite: bool result; integers are computed as fp32 (never NaN or inf); a complex input:
    either part (``both``: both parts, isfinite)."""
    def forward(self, *, out=None):
        o = _out(out, self.shape, D.bool_, self.device, "")
        if self.dtype._kind == 3:
            ct = compute_type(self.dtype.to_real())
            K.unary(fn, K.FloatView(self, 0), o, compute=ct)
            t = K.unary(fn, K.FloatView(self, 1), empty(self.shape, D.bool_, self.device), compute=ct)
            return K.binary(KCMP.logical_and_fn if both else KCMP.logical_or_fn, o, t, o)
        return K.unary(fn, self, o, compute=compute_type(self.dtype if self.dtype.is_floating_point
                                                            else D.float32))
    return forward


def nan_to_num_forward(self, *, nan=0.0, posinf=None, neginf=None, out=None):
    if not self.dtype.is_floating_point:
        return K.copy(self, _out(out, self.shape, self.dtype, self.device, "nan_to_num"))
    big = _FMAX[self.dtype.name] if self.dtype is not D.float64 else float("nan")  # nan: the kernel's fp64 max
    return _launch_unary(KU.nan_to_num_fn, self, out, self.dtype, float(nan),
                         big if posinf is None else float(posinf), -big if neginf is None else float(neginf))


_FMAX = {"float32": 3.4028234663852886e38, "float16": 65504.0,
         "bfloat16": 3.3895313892515355e38}
_LN2 = 0.6931471805599453
_LN10 = 2.302585092994046
_TWO_OVER_SQRT_PI = 1.1283791670955126
_INV_SQRT_2PI = 0.3989422804014327
_SQRT_PI_OVER_2 = 0.886226925452758


def abs_backward(ctx, g):
    x = ctx.saved["self"]
    return (g.mul(_c("sgn" if x.dtype._kind == 3 else "sign", x)),)


def zero_backward(ctx, g):
    return (_zeros(g),)


def frac_backward(ctx, g):
    return (g,)


def exp2_backward(ctx, g):
    return (g.mul(ctx.saved["result"]).mul(_LN2),)


def log_backward(ctx, g):
    return (g.div(ctx.saved["self"]),)


def log2_backward(ctx, g):
    return (g.div(ctx.saved["self"].mul(_LN2)),)


def log10_backward(ctx, g):
    return (g.div(ctx.saved["self"].mul(_LN10)),)


def log1p_backward(ctx, g):
    return (g.div(ctx.saved["self"].add(1)),)


def expm1_backward(ctx, g):
    return (g.mul(ctx.saved["result"].add(1)),)


def sqrt_backward(ctx, g):
    return (g.div(ctx.saved["result"].mul(2)),)


def rsqrt_backward(ctx, g):
    r = ctx.saved["result"]
    return (g.mul(r.mul(r).mul(r)).mul(-0.5),)


def reciprocal_backward(ctx, g):
    r = ctx.saved["result"]
    return (g.mul(r.mul(r)).neg(),)


def sin_backward(ctx, g):
    return (g.mul(_c("cos", ctx.saved["self"])),)


def cos_backward(ctx, g):
    return (g.mul(_c("sin", ctx.saved["self"])).neg(),)


def tan_backward(ctx, g):
    r = ctx.saved["result"]
    return (g.mul(r.mul(r).add(1)),)


def erf_backward(ctx, g):
    x = ctx.saved["self"]
    return (g.mul(x.mul(x).neg().exp().mul(_TWO_OVER_SQRT_PI)),)


def asin_backward(ctx, g):
    x = ctx.saved["self"]
    return (g.mul(x.mul(x).neg().add(1).rsqrt()),)


def acos_backward(ctx, g):
    x = ctx.saved["self"]
    return (g.mul(x.mul(x).neg().add(1).rsqrt()).neg(),)


def atan_backward(ctx, g):
    x = ctx.saved["self"]
    return (g.div(x.mul(x).add(1)),)


def sinh_backward(ctx, g):
    return (g.mul(_c("cosh", ctx.saved["self"])),)


def cosh_backward(ctx, g):
    return (g.mul(_c("sinh", ctx.saved["self"])),)


def asinh_backward(ctx, g):
    x = ctx.saved["self"]
    return (g.mul(x.mul(x).add(1).rsqrt()),)


def acosh_backward(ctx, g):
    """g / sqrt(x^2 - 1); complex: g conj(1 / (sqrt(z + 1) sqrt(z - 1))), the branch acosh itself takes."""
    x = ctx.saved["self"]
    if x.dtype._kind == 3:
        return (g.mul(x.add(1).rsqrt().mul(x.sub(1).rsqrt())),)
    return (g.mul(x.mul(x).sub(1).rsqrt()),)


def atanh_backward(ctx, g):
    x = ctx.saved["self"]
    return (g.div(x.mul(x).neg().add(1)),)


def erfc_backward(ctx, g):
    x = ctx.saved["self"]
    return (g.mul(x.mul(x).neg().exp().mul(-_TWO_OVER_SQRT_PI)),)


def polygamma_forward(self, *, n, out=None):
    """digamma (n = 0), trigamma (n = 1), else (-1)^(n+1) n! zeta(n + 1, x) (ATen's calc_polygamma)."""
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    dt = _float_result(self.dtype)
    if n <= 1:
        return _launch_unary(KU.trigamma_fn if n else KU.digamma_fn, self, out, dt)
    fact = (-1.0 if n % 2 == 0 else 1.0) * math.exp(math.lgamma(n + 1.0))
    return _launch_unary(KU.polygamma_fn, self, out, dt, float(n + 1), *split64(fact))


def lgamma_backward(ctx, g):
    return (g.mul(_c("digamma", ctx.saved["self"])),)


def digamma_backward(ctx, g):
    return (g.mul(_c("polygamma", ctx.saved["self"], n=1)),)


def polygamma_backward(ctx, g):
    return (g.mul(_c("polygamma", ctx.saved["self"], n=ctx.attrs["n"] + 1)),)


def erfinv_backward(ctx, g):
    r = ctx.saved["result"]
    return (g.mul(r.mul(r).exp().mul(_SQRT_PI_OVER_2)),)


def nan_to_num_backward(ctx, g):
    return (_mask(_c("isfinite", ctx.saved["self"]), g),)


ABS = Op("abs", abs_forward, abs_backward, "AbsBackward0", save=("self",),
         variants=("method", "function"), inplace=True)
SIGN = Op("sign", sign_forward, zero_backward, "SignBackward0", variants=("method", "function"), inplace=True)
EXP2 = Op("exp2", _unary_float(KU.exp2_fn), exp2_backward, "Exp2Backward0", save=("result",),
          variants=("method", "function"), inplace=True)
LOG = Op("log", _complex.math("log", _unary_float(KU.log_fn)), _complex.holomorphic(log_backward), "LogBackward0", save=("self",),
         variants=("method", "function"), inplace=True)
LOG2 = Op("log2", _complex.math("log2", _unary_float(KU.log2_fn)), _complex.holomorphic(log2_backward), "Log2Backward0", save=("self",),
          variants=("method", "function"), inplace=True)
LOG10 = Op("log10", _complex.math("log10", _unary_float(KU.log10_fn)), _complex.holomorphic(log10_backward), "Log10Backward0", save=("self",),
           variants=("method", "function"), inplace=True)
LOG1P = Op("log1p", _complex.math("log1p", _unary_float(KU.log1p_fn)), _complex.holomorphic(log1p_backward), "Log1PBackward0", save=("self",),
           variants=("method", "function"), inplace=True)
EXPM1 = Op("expm1", _complex.math("expm1", _unary_float(KU.expm1_fn)), _complex.holomorphic(expm1_backward), "Expm1Backward0", save=("result",),
           variants=("method", "function"), inplace=True)
SQRT = Op("sqrt", _complex.math("sqrt", _unary_float(K.sqrt_fn)), _complex.holomorphic(sqrt_backward), "SqrtBackward0", save=("result",),
          variants=("method", "function"), inplace=True)
RSQRT = Op("rsqrt", _complex.math("rsqrt", _unary_float(KU.rsqrt_fn)), _complex.holomorphic(rsqrt_backward), "RsqrtBackward0", save=("result",),
           variants=("method", "function"), inplace=True)
RECIPROCAL = Op(
    "reciprocal", _complex.math("reciprocal", _unary_float(KU.reciprocal_fn)), _complex.holomorphic(reciprocal_backward), "ReciprocalBackward0", save=("result",),
    variants=("method", "function"), inplace=True)
SIN = Op("sin", _complex.math("sin", _unary_float(KU.sin_fn)), _complex.holomorphic(sin_backward), "SinBackward0", save=("self",),
         variants=("method", "function"), inplace=True)
COS = Op("cos", _complex.math("cos", _unary_float(KU.cos_fn)), _complex.holomorphic(cos_backward), "CosBackward0", save=("self",),
         variants=("method", "function"), inplace=True)
TAN = Op("tan", _complex.math("tan", _unary_float(KU.tan_fn)), _complex.holomorphic(tan_backward), "TanBackward0", save=("result",),
         variants=("method", "function"), inplace=True)
ERF = Op("erf", _unary_float(KU.erf_fn), erf_backward, "ErfBackward0", save=("self",),
         variants=("method", "function"), inplace=True)
ASIN = Op("asin", _complex.math("asin", _unary_float(KU.asin_fn)), _complex.holomorphic(asin_backward), "AsinBackward0", save=("self",),
         variants=("method", "function"), inplace=True)
ACOS = Op("acos", _complex.math("acos", _unary_float(KU.acos_fn)), _complex.holomorphic(acos_backward), "AcosBackward0", save=("self",),
         variants=("method", "function"), inplace=True)
ATAN = Op("atan", _complex.math("atan", _unary_float(KU.atan_fn)), _complex.holomorphic(atan_backward), "AtanBackward0", save=("self",),
         variants=("method", "function"), inplace=True)
SINH = Op("sinh", _complex.math("sinh", _unary_float(KU.sinh_fn)), _complex.holomorphic(sinh_backward), "SinhBackward0", save=("self",),
         variants=("method", "function"), inplace=True)
COSH = Op("cosh", _complex.math("cosh", _unary_float(KU.cosh_fn)), _complex.holomorphic(cosh_backward), "CoshBackward0", save=("self",),
         variants=("method", "function"), inplace=True)
ASINH = Op("asinh", _complex.math("asinh", _unary_float(KU.asinh_fn)), _complex.holomorphic(asinh_backward), "AsinhBackward0", save=("self",),
         variants=("method", "function"), inplace=True)
ACOSH = Op("acosh", _complex.math("acosh", _unary_float(KU.acosh_fn)), _complex.holomorphic(acosh_backward), "AcoshBackward0", save=("self",),
         variants=("method", "function"), inplace=True)
ATANH = Op("atanh", _complex.math("atanh", _unary_float(KU.atanh_fn)), _complex.holomorphic(atanh_backward), "AtanhBackward0", save=("self",),
         variants=("method", "function"), inplace=True)
ERFC = Op("erfc", _unary_float(KU.erfc_fn), erfc_backward, "ErfcBackward0", save=("self",),
         variants=("method", "function"), inplace=True)
LGAMMA = Op("lgamma", _unary_float(KU.lgamma_fn), lgamma_backward, "LgammaBackward0", save=("self",),
            variants=("method", "function"), inplace=True)
DIGAMMA = Op("digamma", _unary_float(KU.digamma_fn), digamma_backward, "DigammaBackward0", save=("self",),
             variants=("method", "function"), inplace=True)
POLYGAMMA = Op("polygamma", polygamma_forward, polygamma_backward, "PolygammaBackward0", save=("self",),
               variants=("method", "function"), inplace=True)
ERFINV = Op("erfinv", _unary_float(KU.erfinv_fn), erfinv_backward, "ErfinvBackward0", save=("result",),
            variants=("method", "function"), inplace=True)
FLOOR = Op("floor", _rounding(KU.floor_fn), zero_backward, "FloorBackward0",
           variants=("method", "function"), inplace=True)
CEIL = Op("ceil", _rounding(KU.ceil_fn), zero_backward, "CeilBackward0", variants=("method", "function"), inplace=True)
ROUND = Op("round", _rounding(KU.round_fn), zero_backward, "RoundBackward0",
           variants=("method", "function"), inplace=True)
ROUND_DECIMALS = Op("round_decimals", round_decimals_forward, zero_backward, "RoundBackward1")
TRUNC = Op("trunc", _rounding(KU.trunc_fn), zero_backward, "TruncBackward0",
           variants=("method", "function"), inplace=True)
FRAC = Op("frac", frac_forward, frac_backward, "FracBackward0", variants=("method", "function"), inplace=True)
ISNAN = Op("isnan", _predicate(KU.isnan_fn), variants=("method", "function"))
ISINF = Op("isinf", _predicate(KU.isinf_fn), variants=("method", "function"))
ISFINITE = Op("isfinite", _predicate(KU.isfinite_fn, both=True), variants=("method", "function"))
NAN_TO_NUM = Op("nan_to_num", nan_to_num_forward, nan_to_num_backward, "NanToNumBackward0", save=("self",),
                variants=("method", "function"), inplace=True)


ENTRIES = [EXP, ABS, SIGN, EXP2, LOG, LOG2, LOG10, LOG1P, EXPM1, SQRT, RSQRT, RECIPROCAL, SIN, COS, TAN, ERF,
           ASIN, ACOS, ATAN, SINH, COSH, ASINH, ACOSH, ATANH, ERFC, LGAMMA,
           DIGAMMA, POLYGAMMA, ERFINV, FLOOR, CEIL, ROUND, ROUND_DECIMALS, TRUNC,
           FRAC, ISNAN, ISINF, ISFINITE, NAN_TO_NUM]
