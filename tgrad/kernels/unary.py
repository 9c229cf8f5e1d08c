"""Unary math: FN(x, p0, p1, p2) for kernels/elementwise.py's ``unary_kernel`` (exp, logs, roots, trig and
their inverses, hyperbolic, erf/erfc, rounding, predicates, nan_to_num), computed in fp32/fp64 and accurate to
a few ulp in float64.  No libdevice (it fails in the interpreter): the inverses are built on ``atan01_h``."""
import triton
import triton.language as tl

from ._lang import expm1_h, log1p_h, param_h
from .elementwise import _TWO_REDUCTIONS, atan01_h, sqrt_h, trunc_h


@triton.jit
def exp_fn(x, p0, p1, p2):
    """exp(x); float32 rounded from float64, as ATen's cpu exp (MKL's vsExp) nearly always is."""
    if x.dtype == tl.float32:
        return tl.exp(x.to(tl.float64)).to(tl.float32)
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
    """log2(x); float32 rounded from float64, as ATen's cpu log2 (SLEEF's log2f_u10) nearly always is."""
    if x.dtype == tl.float32:
        return tl.log2(x.to(tl.float64)).to(tl.float32)
    return tl.log2(x)


@triton.jit
def log10_fn(x, p0, p1, p2):
    """log10(x); float32 rounded from float64, as ATen's cpu log10 (SLEEF's log10f_u10) nearly always is."""
    if x.dtype == tl.float32:
        return (tl.log(x.to(tl.float64)) * 0.43429448190325182765).to(tl.float32)
    return tl.log(x) * 0.43429448190325182765


@triton.jit
def log1p_fn(x, p0, p1, p2):
    """log1p(x); float32 rounded from float64, as ATen's cpu log1p (SLEEF's log1pf_u10) nearly always is."""
    if x.dtype == tl.float32:
        return log1p_h(x.to(tl.float64)).to(tl.float32)
    return log1p_h(x)


@triton.jit
def expm1_fn(x, p0, p1, p2):
    """expm1(x); float32 rounded from float64, as ATen's cpu expm1 (SLEEF's expm1f_u10) nearly always is."""
    if x.dtype == tl.float32:
        return expm1_h(x.to(tl.float64)).to(tl.float32)
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
def _sinh_h(x):
    """sinh|x| = (u + u / (u + 1)) / 2 with u = expm1|x| (exact for small x); odd."""
    u = expm1_h(tl.abs(x))
    s = tl.where(u == float("inf"), u, 0.5 * u + 0.5 * (u / (u + 1.0)))
    return odd_h(x, s)


@triton.jit
def sinh_fn(x, p0, p1, p2):
    """sinh(x); float32 rounded from float64, as ATen's cpu sinh (SLEEF's sinhf_u10) nearly always is."""
    if x.dtype == tl.float32:
        return _sinh_h(x.to(tl.float64)).to(tl.float32)
    return _sinh_h(x)


@triton.jit
def cosh_fn(x, p0, p1, p2):
    """cosh(x) = (e + 1/e) / 2, e = exp|x|; float32 rounded from float64 (as ATen's SLEEF coshf_u10 nearly
    always is)."""
    xw = tl.abs(x.to(tl.float64)) if x.dtype == tl.float32 else tl.abs(x)
    e = tl.exp(xw)
    return (0.5 * e + 0.5 / e).to(x.dtype)


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


# ------------------------------------------------------------------ gamma family and erfinv
# PyTorch's own algorithms (ATen/native/Math.h) so that the printed numbers agree: digamma (asymptotic series
# after pushing x to 10), trigamma (six shifts), polygamma n >= 2 as (-1)^(n+1) n! zeta(n + 1, x) with Cephes'
# Hurwitz zeta, erfinv (rational guess + two Newton steps).  lgamma is Cephes' lgam (glibc's is not portable).
@triton.jit
def polevl_h(x, C0, C1, C2, C3, C4, C5, C6):
    """C0 x^6 + C1 x^5 + ... + C6 (Horner)."""
    return (((((C0 * x + C1) * x + C2) * x + C3) * x + C4) * x + C5) * x + C6


@triton.jit
def lgamma_pos_h(x):
    """log|Gamma(x)| for x > 0 in fp64 (Cephes lgam): Stirling from 13, else shift into [2, 3) and a 5/6 rational."""
    big = x >= 13.0
    xb = tl.where(big, x, 13.0)
    p = 1.0 / (xb * xb)
    corr = ((((8.11614167470508450300E-4 * p - 5.95061904284301438324E-4) * p + 7.93650340457716943945E-4) * p
             - 2.77777777730099687205E-3) * p + 8.33333333333331927722E-2) / xb
    stirling = (xb - 0.5) * tl.log(xb) - xb + 0.91893853320467274178 + corr
    stirling = tl.where(xb == float("inf"), xb, stirling)
    xs = tl.where(big, 2.5, x)
    z = tl.full(x.shape, 1.0, x.dtype)
    q = tl.zeros(x.shape, x.dtype)
    u = xs
    for _ in tl.static_range(10):                   # u >= 3: z *= u - 1
        down = u >= 3.0
        q = tl.where(down, q - 1.0, q)
        u = xs + q
        z = tl.where(down, z * u, z)
    for _ in tl.static_range(2):                    # u < 2: z /= u
        up = u < 2.0
        z = tl.where(up, z / u, z)
        q = tl.where(up, q + 1.0, q)
        u = xs + q
    t = u - 2.0
    num = t * (((((-1.37825152569120859100E3 * t - 3.88016315134637840924E4) * t - 3.31612992738871184744E5) * t
                - 1.16237097492762307383E6) * t - 1.72173700820839662146E6) * t - 8.53555664245765465627E5)
    den = (((((t - 3.51815701436523470549E2) * t - 1.70642106651881159223E4) * t - 2.20528590553854454839E5) * t
            - 1.13933444367982507207E6) * t - 2.53252307177582951285E6) * t - 2.01889141433532773231E6
    small = tl.log(z) + tl.where(u == 2.0, 0.0, num / den)
    tiny = -tl.log(x) - 0.57721566490153286061 * x     # z = 1/x would overflow for subnormal x
    return tl.where(big, stirling, tl.where(x < 1e-12, tiny, small))


@triton.jit
def lgamma_fn(x, p0, p1, p2):
    """log|Gamma(x)| in fp64; x < 0 by reflection: log pi - log|x sin(pi x)| - lgamma(-x); inf at 0, -n, +-inf."""
    a = x.to(tl.float64)
    q = tl.abs(a)
    w = lgamma_pos_h(tl.where(q == 0.0, 1.0, q))
    f = tl.floor(q)
    z = q - f
    z = tl.where(z > 0.5, f + 1.0 - q, z)
    s = q * tl.sin(3.14159265358979323846 * z)
    neg = 1.14472988584940017414 - tl.log(tl.where(s == 0.0, 1.0, s)) - w
    r = tl.where(a < 0, tl.where((f == q) | (q == float("inf")), float("inf"), neg), w)
    return tl.where(a == 0.0, float("inf"), r).to(x.dtype)


@triton.jit
def tan_pi4_h(x):
    """tan(x) for |x| <= pi/4 (Cephes tan's rational core, fp64)."""
    z = x * x
    p = (-1.30936939181383777646E4 * z + 1.15351664838587416140E6) * z - 1.79565251976484877988E7
    q = (((z + 1.36812963470692954678E4) * z - 1.32089234440210967447E6) * z + 2.50083801823357915839E7) * z \
        - 5.38695755929454629881E7
    return x + x * (z * p / q)


@triton.jit
def pi_cot_pi_h(t):
    """pi / tan(pi t) for 0 < t < 1 in fp64 without sin/cos (their argument reductions spill registers):
    cot(pi t) = -cot(pi (1 - t)), and tan(pi (1/2 - t)) = cot(pi t) between 1/4 and 1/2."""
    flip = t > 0.5
    u = tl.where(flip, 1.0 - t, t)
    near = u <= 0.25
    c = tl.where(near, 1.0 / tan_pi4_h(3.14159265358979323846 * u), tan_pi4_h(3.14159265358979323846 * (0.5 - u)))
    return 3.14159265358979323846 * tl.where(flip, -c, c)


@triton.jit
def digamma_fn(x, p0, p1, p2):
    """PyTorch's calc_digamma: psi(x) = psi(1 - x) - pi / tan(pi frac(x)) for x < 0; x + 10 by the recurrence,
    then log x - 1/(2x) - sum B_2k / (2k x^2k); +-inf at +-0, NaN at negative integers."""
    neg = x < 0
    y = tl.where(neg, 1.0 - x, x)
    r = tl.zeros(x.shape, x.dtype)
    for _ in tl.static_range(10):
        m = y < 10.0
        r = tl.where(m, r - 1.0 / y, r)
        y = tl.where(m, y + 1.0, y)
    yb = tl.where(y < 1.0e17, y, 1.0)
    zz = 1.0 / (yb * yb)
    ser = zz * polevl_h(zz, 8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
                        -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
                        8.33333333333333333333E-2)
    ser = tl.where(y < 1.0e17, ser, 0.0)
    r = tl.where(y == 10.0, r + 2.25175258906672110764, r + tl.log(y) - 0.5 / y - ser)
    refl = -pi_cot_pi_h((trunc_h(x) - x).to(tl.float64)).to(x.dtype)     # cot is odd; 0 < -frac(x) < 1
    r = tl.where(neg, tl.where(x == trunc_h(x), float("nan"), r - refl), r)
    return tl.where(x == 0, tl.where(1.0 / x < 0, float("inf"), float("-inf")), r)


@triton.jit
def trigamma_h(x):
    """PyTorch's calc_trigamma: reflection below 1/2, six recurrence steps, then an asymptotic series."""
    neg = x < 0.5
    s = tl.sin(3.14159265358979323846 * x)
    r = tl.where(neg, -(3.14159265358979323846 * 3.14159265358979323846) / (s * s), 0.0)
    y = tl.where(neg, 1.0 - x, x)
    for _ in tl.static_range(6):
        r += 1.0 / (y * y)
        y += 1.0
    ixx = 1.0 / (y * y)
    r += (1.0 + 1.0 / (2.0 * y) + ixx * (1.0 / 6.0 - ixx * (1.0 / 30.0 - ixx * (1.0 / 42.0)))) / y
    return tl.where(neg, -r, r)


@triton.jit
def powneg_h(a, s):
    """a ** -s for an integer s (a may be negative)."""
    m = tl.exp(-s * tl.log(tl.abs(a)))
    odd = (s - 2.0 * tl.floor(s * 0.5)) == 1.0
    return tl.where((a < 0) & odd, -m, m)


@triton.jit
def zeta_em_h(tot, done, aa, b, s, w, k, A):
    """One Euler-Maclaurin term of ``zeta_h`` (aa: the rising factorial of s; A: the Bernoulli divisor); lanes
    already converged keep their sum."""
    aa = aa * (s + k)
    b = b / w
    t = aa * b / A
    act = done == 0
    tot = tl.where(act, tot + t, tot)
    done = done | (act & (tl.abs(t / tot) < 1.11022302462515654042E-16))
    return tot, done, aa * (s + k + 1.0), b / w


@triton.jit
def zeta_h(s, q):
    """Hurwitz zeta(s, q) for an integer s > 1 in fp64 (Cephes zeta, as ATen): direct sum until q + i > 9 (and
    at least 9 terms), then Euler-Maclaurin with 12 Bernoulli terms; each stops where a term is below eps.
    inf at q = 0, -1, ...; q below -4096 (ATen loops |q| times there) gives NaN."""
    tot = powneg_h(q, s)
    a = q
    b = tl.zeros(q.shape, q.dtype)
    pole = (q <= 0) & (q == tl.floor(q))
    done = pole | (q != q) | (q < -4096.0)
    i = 0
    act = ((i < 9) | (a <= 9.0)) & (done == 0)
    while tl.max(act.to(tl.int32), 0) > 0:          # q < 0 needs more than 9 steps: a data-dependent loop
        a = tl.where(act, a + 1.0, a)
        b = tl.where(act, powneg_h(a, s), b)
        tot = tl.where(act, tot + b, tot)
        done = done | (act & (-1.11022302462515654042E-16 * tot < b) & (b < 1.11022302462515654042E-16 * tot))
        i += 1
        act = ((i < 9) | (a <= 9.0)) & (done == 0)
    w = a
    tot = tl.where(done, tot, tot + b * w / (s - 1.0) - 0.5 * b)
    aa = tl.full(q.shape, 1.0, q.dtype)
    tot, done, aa, b = zeta_em_h(tot, done, aa, b, s, w, 0.0, 12.0)
    tot, done, aa, b = zeta_em_h(tot, done, aa, b, s, w, 2.0, -720.0)
    tot, done, aa, b = zeta_em_h(tot, done, aa, b, s, w, 4.0, 30240.0)
    tot, done, aa, b = zeta_em_h(tot, done, aa, b, s, w, 6.0, -1209600.0)
    tot, done, aa, b = zeta_em_h(tot, done, aa, b, s, w, 8.0, 47900160.0)
    tot, done, aa, b = zeta_em_h(tot, done, aa, b, s, w, 10.0, -1.8924375803183791606e9)
    tot, done, aa, b = zeta_em_h(tot, done, aa, b, s, w, 12.0, 7.47242496e10)
    tot, done, aa, b = zeta_em_h(tot, done, aa, b, s, w, 14.0, -2.950130727918164224e12)
    tot, done, aa, b = zeta_em_h(tot, done, aa, b, s, w, 16.0, 1.1646782814350067249e14)
    tot, done, aa, b = zeta_em_h(tot, done, aa, b, s, w, 18.0, -4.5979787224074726105e15)
    tot, done, aa, b = zeta_em_h(tot, done, aa, b, s, w, 20.0, 1.8152105401943546773e17)
    tot, done, aa, b = zeta_em_h(tot, done, aa, b, s, w, 22.0, -7.1661652561756670113e18)
    tot = tl.where(q < -4096.0, float("nan"), tot)
    return tl.where(pole, float("inf"), tot)


@triton.jit
def trigamma_fn(x, p0, p1, p2):
    return trigamma_h(x)


@triton.jit
def polygamma_fn(x, s, fact_hi, fact_lo):
    """polygamma(n, x) for n >= 2: (-1)^(n+1) n! zeta(n + 1, x), zeta in fp64; s = n + 1, fact = (-1)^(n+1) n!."""
    xw = x.to(tl.float64)
    return (param_h(fact_hi, fact_lo, xw) * zeta_h(tl.full(xw.shape, s, tl.float64), xw)).to(x.dtype)


@triton.jit
def erfinv_fn(x, p0, p1, p2):
    """PyTorch's calc_erfinv: a rational first guess (|x| <= 0.7, else in sqrt(-log((1 - |x|) / 2))), two Newton
    steps on erf; +-inf at +-1, NaN outside [-1, 1]."""
    ax = tl.abs(x)
    z = x * x
    num = ((-0.140543331 * z + 0.914624893) * z - 1.645349621) * z + 0.886226899
    dem = (((0.012229801 * z - 0.329097515) * z + 1.442710462) * z - 2.118377725) * z + 1.0
    central = x * num / dem
    zt = sqrt_h(-tl.log((1.0 - tl.where(ax < 1.0, ax, 0.0)) / 2.0))
    num = ((1.641345311 * zt + 3.429567803) * zt - 1.624906493) * zt - 1.970840454
    dem = (1.637067800 * zt + 3.543889200) * zt + 1.0
    tail = tl.where(x < 0, -num, num) / dem
    r = tl.where(ax <= 0.7, central, tail)
    for _ in tl.static_range(2):
        r = r - (tl.math.erf(r) - x) / (1.1283791670955126 * tl.exp(-r * r))
    r = tl.where(ax == 1.0, tl.where(x < 0, float("-inf"), float("inf")), r)
    return tl.where(ax > 1.0, float("nan"), r)
