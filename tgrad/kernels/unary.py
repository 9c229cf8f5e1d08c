"""Unary math: FN(x, p0, p1, p2) for kernels/elementwise.py's ``unary_kernel`` (exp, logs, roots, trig and
their inverses, hyperbolic, erf/erfc, rounding, predicates, nan_to_num), computed in fp32/fp64 and accurate to
a few ulp in float64.  No libdevice (it fails in the interpreter): the inverses are built on ``atan01_h``."""
import triton
import triton.language as tl

from ._lang import expm1_h, log1p_h
from .elementwise import _TWO_REDUCTIONS, atan01_h, sqrt_h, trunc_h


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
def odd_h(x, r):
    """r carrying x's sign: f(-x) = -f(x), and f(+-0) = +-0."""
    return tl.where(x == 0, x, tl.where(x < 0, -r, r))


@triton.jit
def atan_h(x):
    """atan(x) = atan01(|x|), or pi/2 - atan01(1/|x|) above 1; odd."""
    ax = tl.abs(x)
    inv = ax > 1.0
    a = atan01_h(tl.where(inv, 1.0 / ax, ax))
    return odd_h(x, tl.where(inv, 1.57079632679489661923 - a, a))


@triton.jit
def atan_fn(x, p0, p1, p2):
    return atan_h(x)


@triton.jit
def asin_fn(x, p0, p1, p2):
    """asin(x) = atan(x / sqrt((1 - x)(1 + x))): +-pi/2 at +-1, NaN outside [-1, 1]."""
    return atan_h(x / sqrt_h((1.0 - x) * (1.0 + x)))


@triton.jit
def acos_fn(x, p0, p1, p2):
    """acos(x) = 2 atan(sqrt((1 - x) / (1 + x))): no cancellation near 1, pi at -1."""
    return 2.0 * atan_h(sqrt_h((1.0 - x) / (1.0 + x)))


@triton.jit
def sinh_fn(x, p0, p1, p2):
    """sinh|x| = (u + u / (u + 1)) / 2 with u = expm1|x| (exact for small x); odd."""
    u = expm1_h(tl.abs(x))
    s = tl.where(u == float("inf"), u, 0.5 * u + 0.5 * (u / (u + 1.0)))
    return odd_h(x, s)


@triton.jit
def cosh_fn(x, p0, p1, p2):
    """cosh(x) = (e + 1/e) / 2, e = exp|x|."""
    e = tl.exp(tl.abs(x))
    return 0.5 * e + 0.5 / e


@triton.jit
def asinh_fn(x, p0, p1, p2):
    """asinh|x| = log1p(|x| + x^2 / (1 + sqrt(1 + x^2))), log|x| + log 2 above 2^28 (x^2 would overflow); odd."""
    ax = tl.abs(x)
    big = ax > 268435456.0
    a = tl.where(big, 1.0, ax)
    r = tl.where(big, tl.log(ax) + 0.69314718055994530942, log1p_h(a + a * a / (1.0 + sqrt_h(1.0 + a * a))))
    return odd_h(x, r)


@triton.jit
def acosh_fn(x, p0, p1, p2):
    """acosh(x) = log1p(t + sqrt(2t + t^2)), t = x - 1; log x + log 2 above 2^28; NaN below 1."""
    big = x > 268435456.0
    t = tl.where(big, 0.0, x - 1.0)
    r = tl.where(big, tl.log(x) + 0.69314718055994530942, log1p_h(t + sqrt_h(2.0 * t + t * t)))
    return tl.where(x < 1.0, float("nan"), r)


@triton.jit
def atanh_fn(x, p0, p1, p2):
    """atanh|x| = log1p(2|x| / (1 - |x|)) / 2: inf at 1, NaN above; odd."""
    ax = tl.abs(x)
    return odd_h(x, 0.5 * log1p_h(2.0 * ax / (1.0 - ax)))


@triton.jit
def erfc_fn(x, p0, p1, p2):
    """erfc(x) in fp64 (Cephes ndtr.c): 1 - erf(x) below |x| = 1, else exp(-x^2) P(|x|)/Q(|x|) (two rational
    fits, below and above 8), reflected as 2 - erfc|x| for x < 0; no cancellation in the tail."""
    a = x.to(tl.float64)
    z = tl.abs(a)
    e = tl.exp(-a * a)
    p = ((((((((2.46196981473530512524E-10 * z + 5.64189564831068821977E-1) * z + 7.46321056442269912687E0) * z
               + 4.86371970985681366614E1) * z + 1.96520832956077098242E2) * z + 5.26445194995477358631E2) * z
            + 9.34528527171957607540E2) * z + 1.02755188689515710272E3) * z + 5.57535335369399327526E2)
    q = ((((((((z + 1.32281951154744992508E1) * z + 8.67072140885989742329E1) * z + 3.54937778887819891062E2) * z
              + 9.75708501743205489753E2) * z + 1.82390916687909736289E3) * z + 2.24633760818710981792E3) * z
           + 1.65666309194161350182E3) * z + 5.57535340817727675546E2)
    r = (((((5.64189583547755073984E-1 * z + 1.27536670759978104416E0) * z + 5.01905042251180477414E0) * z
           + 6.16021097993053585195E0) * z + 7.40974269950448939160E0) * z + 2.97886665372100240670E0)
    s = ((((((z + 2.26052863220117276590E0) * z + 9.39603524938001434673E0) * z + 1.20489539808096656605E1) * z
            + 1.70814450747565897222E1) * z + 9.60896809063285878198E0) * z + 3.36907645100081516050E0)
    y = e * tl.where(z < 8.0, p / q, r / s)
    y = tl.where(z == float("inf"), 0.0, y)
    y = tl.where(a < 0, 2.0 - y, y)
    return tl.where(z < 1.0, 1.0 - tl.math.erf(a), y).to(x.dtype)


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
