"""Activation math: FN(x, p0, p1, p2) for ``unary_kernel`` and the fused backward FN(g, x, p0, p1) =
g * f'(x) for ``binary_kernel`` (x is the input, or the output for relu/sigmoid/tanh), computed in fp32/fp64."""
import triton
import triton.language as tl

from .runtime.native import elementwise, elementwise2, native_helper
from ._lang import expm1_h, log1p_h, param_h, sigmoid_h, sleef_exp, softplus_h, tanh_epilogue_h, tanh_h


@triton.jit
def tanh_fn(x, p0, p1, p2):
    """tanh(x); float32 rounded from float64, as ATen's cpu tanh (SLEEF's tanhf_u10) nearly always is."""
    if x.dtype == tl.float32:
        return tanh_h(x.to(tl.float64)).to(tl.float32)
    return tanh_h(x)


@triton.jit
def sigmoid_fn(x, p0, p1, p2):
    """1 / (1 + exp(-x)); float32 with ATen's cpu exp (SLEEF's expf_u10: its vectorized body, bit for bit)."""
    if x.dtype == tl.float32:
        return 1.0 / (1.0 + sleef_exp(-x))
    return sigmoid_h(x)


@triton.jit
def relu_fn(x, p0, p1, p2):
    return tl.where(x <= 0, 0, x)


@triton.jit
def hardtanh_fn(x, lo, hi, p2):
    return tl.where(x < lo, lo, tl.where(x > hi, hi, x))


@triton.jit
def softshrink_fn(x, l_hi, l_lo, p2):
    """x - l above l, x + l below -l, x * 0 between: the zero keeps x's sign as in ATen's scalar loop (which
    takes a contiguous tensor's tail past its last full vector: every element under 16 float32 / 8 float64;
    ATen's vector body gives +0)."""
    lam = param_h(l_hi, l_lo, x)
    return tl.where(x > lam, x - lam, tl.where(x < -lam, x + lam, x * 0.0))


@triton.jit
def hardshrink_fn(x, l_hi, l_lo, p2):
    """0 for -l <= x <= l, else x."""
    lam = param_h(l_hi, l_lo, x)
    return tl.where((x >= -lam) & (x <= lam), 0.0, x)


@triton.jit
def leaky_relu_fn(x, s_hi, s_lo, p2):
    return tl.where(x > 0, x, x * param_h(s_hi, s_lo, x))


@triton.jit
def elu_fn(x, alpha, scale, p2):
    """x scale for x > 0, else expm1(x) alpha scale; float32's expm1 rounded from float64 (ATen's SLEEF expm1f_u10
    nearly always is)."""
    if x.dtype == tl.float32:
        e = expm1_h(x.to(tl.float64)).to(tl.float32)
    else:
        e = expm1_h(x)
    return tl.where(x > 0, x * scale, e * (alpha * scale))


@native_helper("gelu_f32", elementwise)
@triton.jit
def gelu_fn(x, p0, p1, p2):
    """x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2))."""
    return 0.5 * x * (1.0 + tl.math.erf(x * 0.70710678118654752440))


@native_helper("gelu_tanh_f32", elementwise)
@triton.jit
def gelu_tanh_fn(x, p0, p1, p2):
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (tanh as exp(-2|u|) ratios: 1 + tanh is what counts,
    within an ulp of 1 of tanh_h's and a quarter of its operations)."""
    return 0.5 * x * (1.0 + tanh_epilogue_h(0.79788456080286535588 * (x + 0.044715 * x * x * x)))


@triton.jit
def silu_fn(x, p0, p1, p2):
    """x sigmoid(x); float32 as ATen's cpu silu, x / (1 + exp(-x)) with SLEEF's expf_u10."""
    if x.dtype == tl.float32:
        return x / (1.0 + sleef_exp(-x))
    return x * sigmoid_h(x)


@triton.jit
def mish_fn(x, p0, p1, p2):
    return x * tanh_h(softplus_h(x))


@triton.jit
def softplus_fn(x, beta, threshold, p2):
    """log(1 + exp(beta x)) / beta, or x where beta x > threshold; float32 as ATen's cpu softplus: SLEEF's
    expf_u10, then log1p (rounded from float64, as SLEEF's log1pf_u10 nearly always is), then / beta."""
    if x.dtype == tl.float32:
        y = log1p_h(sleef_exp(x * beta).to(tl.float64)).to(tl.float32) / beta
    else:
        y = softplus_h(x * beta) / beta
    return tl.where(x * beta > threshold, x, y)


@triton.jit
def _relu6_shift(x):
    """min(max(x + 3, 0), 6), NaN kept (ATen's hardsigmoid / hardswish)."""
    r = x + 3.0
    r = tl.where(r < 0.0, 0.0, r)
    return tl.where(r > 6.0, 6.0, r)


@triton.jit
def hardsigmoid_fn(x, p0, p1, p2):
    """min(max(x + 3, 0), 6) / 6, as ATen's kernel rounds it."""
    return _relu6_shift(x) / 6.0


@triton.jit
def hardswish_fn(x, p0, p1, p2):
    """x * min(max(x + 3, 0), 6) / 6, as ATen's kernel rounds it."""
    return x * _relu6_shift(x) / 6.0


@triton.jit
def logsigmoid_fn(x, p0, p1, p2):
    """log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|))."""
    return tl.minimum(x, 0.0) - log1p_h(tl.exp(-tl.abs(x)))


@triton.jit
def selu_fn(x, p0, p1, p2):
    """scale * elu(x, alpha) with SELU's constants as float64-exact literals; float32's expm1 rounded from float64
    (as elu_fn's)."""
    if x.dtype == tl.float32:
        e = expm1_h(x.to(tl.float64)).to(tl.float32)
    else:
        e = expm1_h(x)
    return tl.where(x > 0, x * 1.0507009873554804934, e * (1.0507009873554804934 * 1.6732632423543772848))


@triton.jit
def relu_backward_fn(g, y, p0, p1):
    return tl.where(y > 0, g, 0.0)


@triton.jit
def hardtanh_backward_fn(g, x, lo, hi):
    return tl.where((x > lo) & (x < hi), g, 0.0)


@triton.jit
def shrink_backward_fn(g, x, l_hi, l_lo):
    """softshrink's and hardshrink's g * f'(x): 0 for -l <= x <= l, else g."""
    lam = param_h(l_hi, l_lo, x)
    return tl.where((x >= -lam) & (x <= lam), 0.0, g)


@triton.jit
def leaky_relu_backward_fn(g, x, s_hi, s_lo):
    return tl.where(x > 0, g, g * param_h(s_hi, s_lo, x))


@triton.jit
def elu_backward_fn(g, x, alpha, scale):
    return tl.where(x > 0, g * scale, g * (alpha * scale) * tl.exp(x))


@triton.jit
def selu_backward_fn(g, x, p0, p1):
    return tl.where(x > 0, g * 1.0507009873554804934, g * (1.0507009873554804934 * 1.6732632423543772848) * tl.exp(x))


@native_helper("gelu_backward_f32", elementwise2)
@triton.jit
def gelu_backward_fn(g, x, p0, p1):
    """g (Phi(x) + x phi(x))."""
    cdf = 0.5 * (1.0 + tl.math.erf(x * 0.70710678118654752440))
    pdf = tl.exp(-0.5 * x * x) * 0.39894228040143267794
    return g * (cdf + x * pdf)


@native_helper("gelu_tanh_backward_f32", elementwise2)
@triton.jit
def gelu_tanh_backward_fn(g, x, p0, p1):
    """g (0.5 (1 + t) + 0.5 x (1 - t^2) u'), t = tanh(u), u = k (x + 0.044715 x^3)."""
    t = tanh_epilogue_h(0.79788456080286535588 * (x + 0.044715 * x * x * x))
    du = 0.79788456080286535588 * (1.0 + 3.0 * 0.044715 * x * x)
    return g * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du)


@triton.jit
def silu_backward_fn(g, x, p0, p1):
    s = sigmoid_h(x)
    return g * s * (1.0 + x * (1.0 - s))


@triton.jit
def mish_backward_fn(g, x, p0, p1):
    t = tanh_h(softplus_h(x))
    return g * (t + x * sigmoid_h(x) * (1.0 - t * t))


@triton.jit
def softplus_backward_fn(g, x, beta, threshold):
    return tl.where(x * beta > threshold, g, g * sigmoid_h(x * beta))


@triton.jit
def hardsigmoid_backward_fn(g, x, p0, p1):
    return tl.where((x > -3.0) & (x < 3.0), g * 0.16666666666666666, 0.0)     # ATen: grad * (1 / 6)


@triton.jit
def hardswish_backward_fn(g, x, p0, p1):
    return tl.where(x < -3.0, 0.0, tl.where(x <= 3.0, g * (x / 3.0 + 0.5), g))


@triton.jit
def logsigmoid_backward_fn(g, x, p0, p1):
    return g * sigmoid_h(-x)


@triton.jit
def sigmoid_backward_fn(g, y, p0, p1):
    return g * (y * (1.0 - y))


@triton.jit
def tanh_backward_fn(g, y, p0, p1):
    return g * (1.0 - y * y)
