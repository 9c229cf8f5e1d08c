"""Unary math: FN(x, p0, p1, p2) for kernels/elementwise.py's ``unary_kernel`` (exp, logs, roots, trig, erf,
rounding, predicates, nan_to_num), computed in fp32/fp64 and accurate to a few ulp in float64."""
import triton
import triton.language as tl

from ._lang import expm1_h, log1p_h
from .elementwise import _TWO_REDUCTIONS, sqrt_h, trunc_h


@triton.jit
def exp_fn(x, p0, p1, p2):
    return tl.exp(x)


@triton.jit
def abs_fn(x, p0, p1, p2):
    return tl.abs(x)


@triton.jit
def sign_fn(x, p0, p1, p2):
    return (x > 0).to(x.dtype) - (x < 0).to(x.dtype)


@triton.jit
def exp2_fn(x, p0, p1, p2):
    return tl.exp2(x)


@triton.jit
def log_fn(x, p0, p1, p2):
    return tl.log(x)


@triton.jit
def log2_fn(x, p0, p1, p2):
    return tl.log2(x)


@triton.jit
def log10_fn(x, p0, p1, p2):
    return tl.log(x) * 0.43429448190325182765


@triton.jit
def log1p_fn(x, p0, p1, p2):
    return log1p_h(x)


@triton.jit
def expm1_fn(x, p0, p1, p2):
    return expm1_h(x)


@triton.jit
def rsqrt_fn(x, p0, p1, p2):
    return 1.0 / sqrt_h(x)


@triton.jit
def reciprocal_fn(x, p0, p1, p2):
    return 1.0 / x


@triton.jit
def sin_fn(x, p0, p1, p2):
    return tl.sin(x)


@triton.jit
def cos_fn(x, p0, p1, p2):
    return tl.cos(x)


@triton.jit
def tan_fn(x, p0, p1, p2):
    return tl.sin(x) / tl.cos(x)


@triton.jit
def erf_fn(x, p0, p1, p2):
    return tl.math.erf(x)


@triton.jit
def floor_fn(x, p0, p1, p2):
    return tl.floor(x)


@triton.jit
def ceil_fn(x, p0, p1, p2):
    return tl.ceil(x)


@triton.jit
def round_fn(x, p0, p1, p2):
    return round_half_even_h(x)


@triton.jit
def round_decimals_fn(x, ten_pow, neg, p2):
    """round(x * 10^d) / 10^d (d >= 0, neg == 0) or round(x / 10^-d) * 10^-d (neg == 1), as PyTorch."""
    if neg == 0:
        r = round_half_even_h(x * ten_pow) / ten_pow
    else:
        r = round_half_even_h(x / ten_pow) * ten_pow
    return r


@triton.jit
def trunc_fn(x, p0, p1, p2):
    return trunc_h(x)


@triton.jit
def frac_fn(x, p0, p1, p2):
    return x - trunc_h(x)


@triton.jit
def isnan_fn(x, p0, p1, p2):
    return x != x


@triton.jit
def isinf_fn(x, p0, p1, p2):
    return tl.abs(x) == float("inf")


@triton.jit
def isfinite_fn(x, p0, p1, p2):
    return (x == x) & (tl.abs(x) != float("inf"))


@triton.jit
def nan_to_num_fn(x, nan, posinf, neginf):
    """NaN -> nan, +-inf -> posinf/neginf; a NaN posinf/neginf means the float64 maximum (not an fp32 arg)."""
    if x.dtype == tl.float64:
        big = tl.full(x.shape, 1.7976931348623157e308, tl.float64)
        hi = tl.where(posinf != posinf, big, big * 0.0 + posinf)
        lo = tl.where(neginf != neginf, -big, big * 0.0 + neginf)
    else:
        hi = posinf
        lo = neginf
    return tl.where(x != x, nan, tl.where(x == float("inf"), hi, tl.where(x == float("-inf"), lo, x)))


@triton.jit
def round_half_even_h(x):
    """Round to nearest, ties to even (x - floor(x) is exact)."""
    f = tl.floor(x)
    d = x - f
    odd = (f - 2.0 * tl.floor(f * 0.5)) == 1.0
    r = tl.where(d > 0.5, f + 1.0, tl.where(d < 0.5, f, tl.where(odd, f + 1.0, f)))
    return tl.where(r == 0.0, x * 0.0, r)    # keeps the sign of zero: round(-0.5) = -0.0


_TWO_REDUCTIONS.add(tan_fn)
