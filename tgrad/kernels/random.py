"""Random numbers.  cpu: PyTorch's CPU transforms of mt19937 words (``w_ptr``: an int32 tensor of words
drawn by the cpu Generator, read as uint32), bit for bit.  cuda: counter-based Philox4x32-10 via
``tl.rand``/``tl.randn`` (element ``i`` of a draw uses counter ``offset + i`` under key ``seed``).
"""
import ctypes
import ctypes.util
import math
import struct

import numpy as np
import triton
import triton.language as tl

from .runtime import cdiv, dynamic_args, elementwise_block, gpu_blocks, launch, next_pow2
from .runtime.internals import _I
from .runtime.native import aten_ufunc, native_helper, rule_keep_scale
from ._lang import cast_store, compute_type, kptr
from .sort import sort_key, sort_rows


@triton.jit
def rounded(val, ptr):
    """fp32 ``val`` rounded to ``ptr``'s element type (as ``cast_store`` stores it), back in fp32."""
    if ptr.dtype.element_ty == tl.bfloat16:
        bits = val.to(tl.uint32, bitcast=True)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return bits.to(tl.float32, bitcast=True)
    else:
        return val.to(ptr.dtype.element_ty).to(tl.float32)


@triton.jit
def random_kernel(out_ptr, n_elements, seed, offset, lo, hi, DIST: tl.constexpr, BLOCK: tl.constexpr):
    """out[i] = lo + (hi - lo) * U(seed, offset + i) in [lo, hi) (DIST=0) or lo + hi * N(seed, offset + i) (DIST=1).

    DIST=2 draws integers floor(lo + (hi - lo) * U) in [lo, hi); out is contiguous.
    """
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n_elements
    ctr = (offset + idx).to(tl.uint32)
    if DIST == 1:
        r = lo + hi * tl.randn(seed, ctr)
        cast_store(out_ptr + idx, r, mask)
    elif DIST == 0:
        u = tl.rand(seed, ctr)
        # as many random bits as the dtype has digits (PyTorch): float16/bfloat16 values of u stay below 1
        if out_ptr.dtype.element_ty == tl.float16:
            u = tl.floor(u * 2048.0) * (1.0 / 2048.0)
        elif out_ptr.dtype.element_ty == tl.bfloat16:
            u = tl.floor(u * 256.0) * (1.0 / 256.0)
        r = lo + (hi - lo) * u
        # a value that rounds up to hi in the output dtype becomes lo (PyTorch's CUDA rule): [lo, hi)
        r = tl.where(rounded(r, out_ptr) >= rounded(hi + 0.0 * r, out_ptr), lo, r)
        cast_store(out_ptr + idx, r, mask)
    else:
        u = tl.rand(seed, ctr).to(tl.float64)
        v = tl.floor(lo + (hi - lo) * u)
        v = tl.minimum(v, hi - 1.0)
        tl.store(out_ptr + idx, v.to(out_ptr.dtype.element_ty), mask=mask)


dynamic_args(random_kernel, "seed", "offset")   # a new draw replays the same tape


# ------------------------------------------------------------------ PyTorch's CPU transforms of mt19937 words
@triton.jit
def unit24(w):
    """PyTorch's float uniform of one word: (w & (2^24 - 1)) * 2^-24 in [0, 1)."""
    return (w.to(tl.uint32, bitcast=True) & 0xFFFFFF).to(tl.float32) * 5.9604644775390625e-08


@triton.jit
def word53(w_ptr, idx, mask):
    """The 53 random bits (uint64) of element ``idx``: of random64 = words (2 idx) << 32 | (2 idx + 1)."""
    hi = tl.load(w_ptr + 2 * idx, mask=mask, other=0).to(tl.uint32, bitcast=True).to(tl.uint64)
    lo = tl.load(w_ptr + 2 * idx + 1, mask=mask, other=0).to(tl.uint32, bitcast=True).to(tl.uint64)
    return ((hi & 0x1FFFFF) << 32) | lo


@native_helper("keep_scale", rule_keep_scale)
@triton.jit
def keep_scale(hi, lo, q53, scale):
    """scale where the ``word53`` of the word pairs (hi, lo) [BLOCK] is < q53, else 0 (dropout's kept-element
    factor; one native pass on cpu for float32 scale)."""
    w = ((hi.to(tl.uint32, bitcast=True).to(tl.uint64) & 0x1FFFFF) << 32) | lo.to(tl.uint32, bitcast=True).to(tl.uint64)
    return tl.where(w < q53, scale, 0.0)


@triton.jit
def unit53(w_ptr, idx, mask):
    """PyTorch's double uniform of element ``idx``: ``word53`` * 2^-53."""
    return word53(w_ptr, idx, mask).to(tl.float64) * 1.1102230246251565e-16


@triton.jit
def f64_arg(bits):
    """A float64 passed as its int64 bits (kernels' float arguments are fp32)."""
    return bits.to(tl.int64).to(tl.float64, bitcast=True)


@triton.jit
def uniform_words_kernel(w_ptr, out_ptr, n, lo, hi, lo_bits, hi_bits, WIDE: tl.constexpr, BLOCK: tl.constexpr):
    """out[i] = fma(u[i], hi - lo, lo) (PyTorch's uniform_real), a value that rounds to hi becomes lo.

    u: ``unit24`` of word i in fp32 (lo, hi fp32), or WIDE (float64 out) ``unit53`` with float64 lo, hi.
    """
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n
    if WIDE:
        a = f64_arg(lo_bits)
        b = f64_arg(hi_bits)
        r = tl.fma(unit53(w_ptr, idx, mask), b - a, a)
        tl.store(out_ptr + idx, tl.where(r >= b, a, r), mask=mask)
    else:
        r = tl.fma(unit24(tl.load(w_ptr + idx, mask=mask, other=0)), hi - lo, lo)
        r = tl.where(rounded(r, out_ptr) >= rounded(hi + 0.0 * r, out_ptr), lo, r)
        cast_store(out_ptr + idx, r, mask)


@triton.jit
def log_avx(x):
    """avx_mathfun's log256_ps (cephes logf), fp32 operations in its order, fused as PyTorch's AVX2 build
    fuses them (x > 0)."""
    x = tl.maximum(x, 1.1754943508222875e-38)
    bits = x.to(tl.uint32, bitcast=True)
    e = ((bits >> 23).to(tl.int32) - 0x7F).to(tl.float32) + 1.0
    x = ((bits & 0x807FFFFF) | 0x3F000000).to(tl.float32, bitcast=True)
    small = x < 0.707106781186547524
    tmp = tl.where(small, x, 0.0)
    x = x - 1.0
    e = e - tl.where(small, 1.0, 0.0)
    x = x + tmp
    z = x * x
    y = tl.fma(tl.zeros_like(x) + 7.0376836292E-2, x, -1.1514610310E-1)
    y = tl.fma(y, x, 1.1676998740E-1)
    y = tl.fma(y, x, -1.2420140846E-1)
    y = tl.fma(y, x, 1.4249322787E-1)
    y = tl.fma(y, x, -1.6668057665E-1)
    y = tl.fma(y, x, 2.0000714765E-1)
    y = tl.fma(y, x, -2.4999993993E-1)
    y = tl.fma(y, x, 3.3333331174E-1)
    y = y * x
    y = tl.fma(y, z, e * -2.12194440e-4)
    y = tl.fma(-z, 0.5, y)
    x = tl.fma(e, 0.693359375, x + y)
    return x


@triton.jit
def sincos_avx(x):
    """avx_mathfun's sincos256_ps (cephes sinf/cosf, octant reduction) as ``log_avx`` is its log256_ps."""
    sign_sin = x.to(tl.uint32, bitcast=True) & 0x80000000
    x = tl.abs(x)
    j = ((x * 1.27323954473516).to(tl.int32) + 1) & -2
    y = j.to(tl.float32)
    swap_sin = ((j & 4) << 29).to(tl.uint32)
    poly = (j & 2) == 0
    x = tl.fma(y, -0.78515625, x)
    x = tl.fma(y, -2.4187564849853515625e-4, x)
    x = tl.fma(y, -3.77489497744594108e-8, x)
    sign_cos = ((~(j - 2) & 4) << 29).to(tl.uint32)
    sign_sin = sign_sin ^ swap_sin
    z = x * x
    c = tl.fma(tl.zeros_like(z) + 2.443315711809948E-005, z, -1.388731625493765E-003)
    c = tl.fma(c, z, 4.166664568298827E-002)
    c = tl.fma(c * z, z, -(z * 0.5)) + 1.0
    s = tl.fma(tl.zeros_like(z) - 1.9515295891E-4, z, 8.3321608736E-3)
    s = tl.fma(s, z, -1.6666654611E-1)
    s = tl.fma(s * z, x, x)
    sin = tl.where(poly, s, c).to(tl.uint32, bitcast=True) ^ sign_sin
    cos = tl.where(poly, c, s).to(tl.uint32, bitcast=True) ^ sign_cos
    return sin.to(tl.float32, bitcast=True), cos.to(tl.float32, bitcast=True)


@triton.jit
def normal_words_kernel(w_ptr, out_ptr, n, tail_base, pairs, cut, mean, std, BLOCK: tl.constexpr):
    """PyTorch's normal_fill_AVX2 (n >= 16): uniforms u of words 0..n-1 in groups of 16, out[j] =
    r cos t, out[j + 8] = r sin t, r = sqrt(-2 log(1 - u[j])), t = 2 pi u[j + 8] (then * std + mean,
    fused); when n % 16 != 0 the last 16 outputs come from words tail_base..tail_base+15.  One lane per
    (j, j + 8) pair: n // 16 * 8 pairs, 8 more for the tail; whole groups write below ``cut`` (n - 16 with
    a tail: PyTorch recomputes the last 16 after them)."""
    p = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    full = n // 16 * 8
    tail = p >= full
    k = p % 8
    base = tl.where(tail, tail_base, (p // 8) * 16)
    pos = tl.where(tail, n - 16, (p // 8) * 16) + k
    live = p < pairs
    u1 = 1.0 - unit24(tl.load(w_ptr + base + k, mask=live, other=0))
    u2 = unit24(tl.load(w_ptr + base + k + 8, mask=live, other=0))
    radius = tl.sqrt_rn(-2.0 * log_avx(u1))
    sin, cos = sincos_avx(6.2831854820251465 * u2)
    cast_store(out_ptr + pos, tl.fma(radius * cos, std, mean), live & (tail | (pos < cut)))
    cast_store(out_ptr + pos + 8, tl.fma(radius * sin, std, mean), live & (tail | (pos + 8 < cut)))


@triton.jit
def randint_words_kernel(w_ptr, out_ptr, n, span, base, WIDE: tl.constexpr, BLOCK: tl.constexpr):
    """out[i] = base + w % span (PyTorch's random_from_to): w is word i, or WIDE (span >= 2^32) the 64 bits
    of words 2i (high), 2i + 1."""
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n
    if WIDE:
        hi = tl.load(w_ptr + 2 * idx, mask=mask, other=0).to(tl.uint32, bitcast=True).to(tl.uint64)
        lo = tl.load(w_ptr + 2 * idx + 1, mask=mask, other=0).to(tl.uint32, bitcast=True).to(tl.uint64)
        w = (hi << 32) | lo
    else:
        w = tl.load(w_ptr + idx, mask=mask, other=0).to(tl.uint32, bitcast=True).to(tl.uint64)
    v = (w % span.to(tl.uint64)).to(tl.int64) + base
    if out_ptr.dtype.element_ty == tl.bfloat16:
        cast_store(out_ptr + idx, v.to(tl.float32), mask)
    else:
        tl.store(out_ptr + idx, v.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def bernoulli_words_kernel(w_ptr, out_ptr, n, p_bits, BLOCK: tl.constexpr):
    """out[i] = (u[i] < p) (PyTorch's bernoulli_(p) on AMD cpus): u the ``unit53`` of words 2i, 2i + 1."""
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n
    keep = unit53(w_ptr, idx, mask) < f64_arg(p_bits)
    cast_store(out_ptr + idx, keep.to(tl.float32), mask)


def f64_bits(x):
    """The int64 bits of float64 ``x`` (for ``f64_arg``)."""
    return int(np.array(float(x), np.float64).view(np.int64))


def _launch_words(kernel, out, args, constexprs, gpu_block=None):
    """One program per ``BLOCK`` elements of ``out`` (``gpu_block`` on cuda for kernels heavy in fp64 temporaries:
    1024 elements a program spill there)."""
    n = out.numel()
    dev = out._storage.launch_device
    block = gpu_block if gpu_block and gpu_blocks(dev) else elementwise_block(n, dev)
    launch(kernel, (cdiv(n, block),), dev, args, dict(constexprs, BLOCK=block))
    return out


def uniform_words(words, out, lo, hi):
    """Contiguous ``out`` = PyTorch's uniform_(lo, hi) of ``words`` (n words, 2n for float64)."""
    return _launch_words(uniform_words_kernel, out, [kptr(words), kptr(out), out.numel(), float(lo), float(hi),
                         f64_bits(lo), f64_bits(hi)], {"WIDE": out.dtype.name == "float64"})


def normal_words(words, out, mean, std):
    """Contiguous ``out`` (n >= 16; float32, float16, bfloat16) = PyTorch's normal_(mean, std) of ``words``:
    float32 n words and 16 more for the last 16 when n % 16; float16/bfloat16 (computed in float32, rounded)
    the words of whole groups, the last group's for the last 16."""
    n = out.numel()
    tail = n if out.dtype.name == "float32" else n - n % 16
    pairs = n // 16 * 8 + (8 if n % 16 else 0)
    dev = out._storage.launch_device
    block = elementwise_block(pairs, dev)
    launch(normal_words_kernel, (cdiv(pairs, block),), dev,
           [kptr(words), kptr(out), n, tail, pairs, n - 16 if n % 16 else n, float(mean), float(std)],
           {"BLOCK": block})
    return out


def randint_words(words, out, low, high):
    """Contiguous ``out`` = PyTorch's random_(low, high) of ``words`` (n; 2n when high - low >= 2^32)."""
    span = high - low
    return _launch_words(randint_words_kernel, out, [kptr(words), kptr(out), out.numel(), span, low],
                         {"WIDE": span >= 1 << 32})


def bernoulli_words(words, out, p):
    """Contiguous ``out`` = PyTorch's bernoulli_(p) of ``words`` (2n)."""
    return _launch_words(bernoulli_words_kernel, out, [kptr(words), kptr(out), out.numel(), f64_bits(p)], {})


def fill_random(out, seed, offset, dist, lo, hi):
    """Fill contiguous ``out`` with draws; dist 0 uniform [lo, hi), 1 normal(lo, hi), 2 integers [lo, hi)."""
    n = out.numel()
    if n == 0:
        return out
    dev = out._storage.launch_device
    block = elementwise_block(n, dev)
    launch(random_kernel, (cdiv(n, block),), dev,
           [kptr(out), n, int(seed) & 0xFFFFFFFF, int(offset), float(lo), float(hi)],
           {"DIST": dist, "BLOCK": block})
    return out


@triton.jit
def multinomial_kernel(p_ptr, out_ptr, M, K, stride_pm, stride_pk, N, seed, offset, REPLACE: tl.constexpr,
                       COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr,
                       LOG_K: tl.constexpr):
    """out[m, n] ~ Categorical(p[m, :] / sum p[m, :]), p (M, K) strided, out contiguous (M, N) int64.

    REPLACE: out[m, n] = #{k : cdf[m, k] <= U(seed, offset + m N + n) * cdf[m, K-1]} (the last k with
    p > 0 at most); else the N largest of p[m, k] / E[m, k], E = -log(1 - U(seed, offset + m K + k))
    (exponential races: a draw without replacement, in the order drawn).
    """
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    cols = tl.arange(0, BLOCK_K)
    m = rmask[:, None] & (cols[None, :] < K)
    p = tl.load(p_ptr + rows[:, None] * stride_pm + cols[None, :] * stride_pk, mask=m, other=0.0).to(COMPUTE)
    if REPLACE:
        cdf = tl.cumsum(p, axis=1)
        total = tl.max(cdf, axis=1)
        last = tl.max(tl.where(p > 0, cols[None, :], 0), axis=1)
        for n0 in range(0, N, BLOCK_N):
            ns = n0 + tl.arange(0, BLOCK_N)
            u = tl.rand(seed, (offset + rows[:, None] * N + ns[None, :]).to(tl.uint32)).to(COMPUTE)
            x = u * total[:, None]
            below = (cdf[:, None, :] <= x[:, :, None]) & (cols[None, None, :] < K)
            idx = tl.minimum(tl.sum(below.to(tl.int32), axis=2), last[:, None])
            tl.store(out_ptr + rows[:, None] * N + ns[None, :], idx.to(tl.int64),
                     mask=rmask[:, None] & (ns[None, :] < N))
    else:
        u = tl.rand(seed, (offset + rows[:, None] * K + cols[None, :]).to(tl.uint32)).to(COMPUTE)
        e = -tl.log(1.0 - u)
        key = tl.where(m, sort_key(tl.where(p > 0, p / e, 0.0), True), 0x7FFFFFFFFFFFFFFF)
        idx = tl.zeros([ROWS, BLOCK_K], tl.int32) + cols[None, :]
        key, idx = sort_rows(key, idx, ROWS, BLOCK_K, LOG_K)
        tl.store(out_ptr + rows[:, None] * N + cols[None, :], idx.to(tl.int64),
                 mask=rmask[:, None] & (cols[None, :] < N))


dynamic_args(multinomial_kernel, "seed", "offset")


def multinomial(p, strides, M, K, out, n, replacement, seed, offset):
    """out (M, n) int64 contiguous: n draws per row of the non-negative weights p (M, K) with (row, column)
    ``strides``."""
    if M == 0 or n == 0:
        return out
    dev = out._storage.launch_device
    bk = max(2, next_pow2(K))
    budget = 8192 if gpu_blocks(dev) else 65536      # elements of the (ROWS, BLOCK_N, BLOCK_K) compare block
    bn = max(1, min(next_pow2(n), budget // bk)) if replacement else 1
    rows = 1 if gpu_blocks(dev) else max(1, min(next_pow2(M), (budget if replacement else 16384) // (bk * bn)))
    launch(multinomial_kernel, (cdiv(M, rows),), dev,
           [kptr(p), kptr(out), M, K, strides[0], strides[1], n, int(seed) & 0xFFFFFFFF, int(offset)],
           {"REPLACE": bool(replacement), "COMPUTE": compute_type(p.dtype), "ROWS": rows, "BLOCK_K": bk,
            "BLOCK_N": bn, "LOG_K": bk.bit_length() - 1})
    return out


def fma64(a, b, c):
    """float64 a * b + c rounded once (PyTorch's CPU kernels are built with FMA contraction), on the host."""
    a, b, c = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64), np.asarray(c, np.float64))
    return _I._interpreter.fma_fp64(np.ascontiguousarray(a), np.ascontiguousarray(b), np.ascontiguousarray(c))


# ------------------------------------------------------------------ ATen's serial cpu samplers (host)
# poisson, binomial and gamma are rejection samplers: how many draws an element takes depends on the draws, so
# ATen runs them one element after another (cpu_serial_kernel) and so do these, on a ``Generator._serial()``
# stream, in ATen's arithmetic: double maths through glibc (Python's math calls it; lgamma and log1pf by ctypes,
# CPython has its own lgamma), float ``scalar_t`` steps rounded to float32 (``fl``).
_libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
for _name, _t in (("lgamma", ctypes.c_double), ("log1pf", ctypes.c_float), ("log", ctypes.c_double),
                  ("pow", ctypes.c_double), ("sqrt", ctypes.c_double), ("exp", ctypes.c_double),
                  ("log1p", ctypes.c_double), ("sin", ctypes.c_double), ("cos", ctypes.c_double),
                  ("tan", ctypes.c_double)):
    getattr(_libm, _name).restype = _t
    getattr(_libm, _name).argtypes = (_t,) * (2 if _name == "pow" else 1)
_THIRD_F = float(np.float32(1.0) / np.float32(3.0))      # 1.0f / 3.0f
_C0331_F = float(np.float32(0.0331))                     # 0.0331f


def _c_semantics(pyf, cf):
    """Python's math function (glibc's) with C's answers where Python raises (log(0) = -inf, pow(0, -1) = inf)."""
    def f(*a):
        try:
            return pyf(*a)
        except (ValueError, OverflowError):
            return cf(*a)
    return f


_log = _c_semantics(math.log, _libm.log)


def libm(name, x):
    """glibc's float64 ``name`` (log, log1p, exp, sin, cos, tan) of each element of ``x``, as ATen's scalar cpu
    samplers compute it.  Not numpy's float64 ufuncs: on AVX-512 machines they are SIMD code whose last bits
    differ from glibc's.  aten_cpu.c's ``glibc_<name>``, else Python's math (glibc) element by element."""
    x = np.asarray(x, np.float64)
    f = aten_ufunc(f"glibc_{name}")
    if f is not None:
        with np.errstate(all="ignore"):         # C's answers (log(0) = -inf), as ATen's loops
            return f(x)
    g = _c_semantics(getattr(math, name), getattr(_libm, name))
    return np.fromiter(map(g, x.ravel().tolist()), np.float64, count=x.size).reshape(x.shape)
_pow = _c_semantics(math.pow, _libm.pow)
_sqrt = _c_semantics(math.sqrt, _libm.sqrt)
_exp = _c_semantics(math.exp, _libm.exp)


_F32 = struct.Struct("f")


def _f32(x):
    """``x`` rounded to float32 (struct: 2.5x numpy's scalar path; out of range: numpy's inf)."""
    try:
        return _F32.unpack(_F32.pack(x))[0]
    except OverflowError:
        return float(np.float32(x))


def _same(x):
    return x


def _ceil(x):
    return float(math.ceil(x)) if math.isfinite(x) else x


def _floor(x):
    return float(math.floor(x)) if math.isfinite(x) else x


def sample_poisson(lam, s):
    """ATen's ``sample_poisson(double lambda)``: Hoermann's transformed rejection for lambda >= 10, else the
    product of uniforms."""
    if not lam >= 0:
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    if lam >= 10:
        slam = math.sqrt(lam)
        loglam = math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            U = s.uniform() - 0.5
            V = s.uniform()
            us = 0.5 - abs(U)
            kf = _floor((2 * a / us + b) * U + lam + 0.43)
            k = int(kf) if math.isfinite(kf) else -(1 << 63)
            if us >= 0.07 and V <= vr:
                return k
            if k < 0 or (us < 0.013 and V > us):
                continue
            if (_log(V) + math.log(invalpha) - _log(a / (us * us) + b)) <= (-lam + k * loglam - _libm.lgamma(k + 1.0)):
                return k
    if lam == 0:
        return 0
    enlam = math.exp(-lam)
    x = 0
    prod = 1.0
    while True:
        prod *= s.uniform()
        if prod > enlam:
            x += 1
        else:
            return x


def sample_gamma(alpha, s, fl):
    """ATen's ``sample_gamma<scalar_t, double>``: Marsaglia-Tsang, alpha < 1 boosted by (1 - U)^(1/alpha);
    ``fl`` rounds ``scalar_t`` (float) arithmetic."""
    scale = 1.0
    if alpha < 1.0:
        if alpha == 0.0:
            return 0.0
        scale *= _pow(1 - s.uniform(), fl(1.0 / alpha))
        alpha = fl(alpha + 1.0)
    d = fl(alpha - _THIRD_F)
    c = 1.0 / _sqrt(9.0 * d)
    while True:
        while True:
            x = s.normal()
            y = 1.0 + c * x
            if not y <= 0:
                break
        v = y * y * y
        u = 1 - s.uniform()
        xx = x * x
        if u < 1.0 - _C0331_F * xx * xx:
            return scale * d * v
        if _log(u) < 0.5 * xx + d * (1.0 - v + _log(v)):
            return scale * d * v


def _stirling_tail(k):
    if k <= 9:
        return _STIRLING[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


_STIRLING = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509, 0.0166446911898211,
             0.0138761288230707, 0.0118967099458917, 0.0104112652619720, 0.00925546218271273, 0.00833056343336287)


def _binomial_inversion(count, prob, s, fl):
    geom_sum = 0.0
    num_geom = 0.0
    logprob = float(_libm.log1pf(-prob)) if fl is _f32 else math.log1p(-prob)
    while True:
        geom = _ceil(_log(s.uniform()) / logprob)
        geom_sum += geom
        if geom_sum > count:
            return num_geom
        num_geom += 1.0         # (an integer: exact in float32 below 2^24)
        if num_geom > 16777216.0:
            num_geom = fl(num_geom)


def _btrs(count, prob, s, fl):
    """Hoermann's BTRS as ATen writes it (TensorFlow's random_binomial_op)."""
    stddev = fl(math.sqrt(fl(fl(count * prob) * fl(1 - prob))))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = fl(count * prob) + 0.5
    v_r = 0.92 - 4.2 / b
    r = fl(prob / fl(1 - prob))
    alpha = (2.83 + 5.1 / b) * stddev
    count1 = fl(count + 1)
    m = _floor(fl(count1 * prob))
    while True:
        U = s.uniform() - 0.5
        V = s.uniform()
        us = 0.5 - abs(U)
        k = fl(_floor((2 * a / us + b) * U + c))
        if k < 0 or k > count:
            continue
        if us >= 0.07 and V <= v_r:
            return k
        V = _log(V * alpha / (a / (us * us) + b))
        cmk = fl(count - k)
        cmk1 = fl(cmk + 1)
        # ATen's sum, left to right: ((m + 0.5) log(..) + ..) + .. (the m terms are the same every round)
        upper = ((m + 0.5) * _log((m + 1) / (r * (count - m + 1)))
                 + count1 * _log((count - m + 1) / cmk1)
                 + (k + 0.5) * _log(r * cmk1 / fl(k + 1))
                 + _stirling_tail(m) + _stirling_tail(count - m) - _stirling_tail(k) - _stirling_tail(cmk))
        if V <= upper:
            return k


def sample_binomial(count, prob, s, fl):
    """ATen's ``sample_binomial<scalar_t, double>``: BTRS when count * min(p, 1 - p) >= 10, else inversion by
    geometric gaps.  (A NaN count gives NaN: ATen's loop would not end.)"""
    if count != count:
        return count
    if count <= 0.0 or prob <= 0.0:
        return 0.0
    if prob >= 1.0:
        return count
    if prob <= 0.5:
        if fl(count * prob) >= 10.0:
            return _btrs(count, prob, s, fl)
        return _binomial_inversion(count, prob, s, fl)
    if prob > 0.5:
        q = fl(1.0 - prob)
        if fl(count * q) >= 10.0:
            return fl(count - _btrs(count, q, s, fl))
        return fl(count - _binomial_inversion(count, q, s, fl))
    return float("nan")


def serial_sample(kind, inputs, generator, out_dtype):
    """ATen's cpu ``_s_poisson_cpu`` / ``_s_binomial_cpu`` / ``_s_gamma_cpu`` / ``_s_dirichlet_cpu``'s gamma pass
    over host arrays ``inputs`` (broadcast, C order) from cpu ``generator``: a float64 array of the samples
    (``out_dtype``: numpy dtype whose float arithmetic ``scalar_t`` steps use)."""
    fl = _same if out_dtype == np.float64 else _f32
    flat = [a.reshape(-1).tolist() for a in np.broadcast_arrays(*inputs)]
    out = np.empty(len(flat[0]), np.float64)
    tiny = float(np.finfo(out_dtype).tiny)
    with generator._serial() as s:
        if kind == "poisson":
            for i, lam in enumerate(flat[0]):
                out[i] = sample_poisson(lam, s)
        elif kind == "binomial":
            for i, (n, p) in enumerate(zip(*flat)):
                out[i] = sample_binomial(n, p, s, fl)
        else:
            for i, a in enumerate(flat[0]):
                v = fl(sample_gamma(a, s, fl))
                out[i] = v if tiny < v else tiny        # std::max(numeric_limits<scalar_t>::min(), v)
    return out


# ------------------------------------------------------------------ the gamma sampler's implicit gradient
@triton.jit
def digamma_one(x):
    """ATen's ``digamma_one`` in fp64 for x > 0 (Distributions.h): recurrence to x >= 10, asymptotic series."""
    result = tl.zeros_like(x)
    for _ in tl.static_range(10):
        small = x < 10.0
        result = tl.where(small, result - 1.0 / x, result)
        x = tl.where(small, x + 1.0, x)
    z = 1.0 / (x * x)
    p = tl.zeros_like(z) + 8.33333333333333333333E-2
    p = p * z - 2.10927960927960927961E-2
    p = p * z + 7.57575757575757575758E-3
    p = p * z - 4.16666666666666666667E-3
    p = p * z + 3.96825396825396825397E-3
    p = p * z - 8.33333333333333333333E-3
    p = p * z + 8.33333333333333333333E-2
    y = tl.where(x < 1.0e17, z * p, 0.0)
    return tl.where(x == 10.0, result + 2.25175258906672110764, result + tl.log(x) - 0.5 / x - y)


@triton.jit
def standard_gamma_grad_kernel(a_ptr, x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = d x / d alpha = -(dF(x; alpha) / d alpha) / f(x; alpha) for x ~ Gamma(alpha, 1) (ATen's
    ``standard_gamma_grad_one``, fp64): Taylor series for x < 0.8, Rice saddle point for alpha > 8, else a
    bivariate rational fit.  a, x, out contiguous (n,)."""
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n
    alpha = tl.load(a_ptr + idx, mask=mask, other=1.0).to(tl.float64)
    x = tl.load(x_ptr + idx, mask=mask, other=1.0).to(tl.float64)
    # x < 0.8: series of the regularized lower incomplete gamma and of its alpha-derivative
    numer = tl.zeros_like(x) + 1.0
    denom = alpha
    series1 = numer / denom
    series2 = numer / (denom * denom)
    for i in tl.static_range(1, 6):
        numer = numer * (-x / i)
        denom = denom + 1.0
        series1 = series1 + numer / denom
        series2 = series2 + numer / (denom * denom)
    logx = tl.log(x)
    pow_x_alpha = tl.exp(alpha * logx)
    pdf = tl.exp((alpha - 1.0) * logx) * tl.exp(-x)
    cdf_alpha = (logx - digamma_one(alpha)) * (pow_x_alpha * series1) - pow_x_alpha * series2
    taylor = -cdf_alpha / pdf
    taylor = tl.where(taylor != taylor, 0.0, taylor)
    # alpha > 8: saddle point near the mode, else the asymptotic expansion
    numer_1 = 1.0 + 24.0 * alpha * (1.0 + 12.0 * alpha)
    numer_2 = 1440.0 * (alpha * alpha) + 6.0 * x * (53.0 - 120.0 * x) - 65.0 * x * x / alpha + alpha * (107.0 + 3600.0 * x)
    near = numer_1 * numer_2 / (1244160.0 * (alpha * alpha) * (alpha * alpha))
    sq = tl.sqrt(8.0 * alpha)
    term2 = sq / (alpha - x)
    log_ratio = tl.log(x / alpha)
    term3 = tl.exp(-1.5 * tl.log(x - alpha - alpha * log_ratio))
    term23 = tl.where(x < alpha, term2 - term3, term2 + term3)
    term1 = log_ratio * term23 - tl.sqrt(2.0 / alpha) * (alpha + x) / ((alpha - x) * (alpha - x))
    stirling = 1.0 + 1.0 / (12.0 * alpha) * (1.0 + 1.0 / (24.0 * alpha))
    far = -stirling * (x * term1) / sq
    saddle = tl.where((0.8999999761581421 * alpha <= x) & (x <= 1.100000023841858 * alpha), near, far)   # 0.9f, 1.1f
    # otherwise: exp(p(u, v) / q(u, v)), u = log(x / alpha), v = log(alpha)
    u = log_ratio
    v = tl.log(alpha)
    c0 = 0.16009398 + u * (0.53487893 + u * 0.040121004)
    c1 = -0.094634809 + u * (0.1298071 + u * -0.0065914022)
    c2 = 0.025146376 + u * (0.065735949 + u * -0.0026286047)
    c3 = -0.0030648343 + u * (-0.0015649758 + u * -0.0013441777)
    c4 = 1.0 + u * (0.16639465 + u * 0.017050642)
    c5 = 0.32668115 + u * (0.020070113 + u * -0.0021309326)
    c6 = 0.10406089 + u * (-0.0035938915 + u * 0.00085092367)
    c7 = 0.0014179084 + u * (-0.00058392623 + u * -1.5247877e-07)
    p = c0 + v * (c1 + v * (c2 + v * c3))
    q = c4 + v * (c5 + v * (c6 + v * c7))
    rational = tl.exp(p / q)
    r = tl.where(x < 0.800000011920929, taylor, tl.where(alpha > 8.0, saddle, rational))     # 0.8f
    tl.store(out_ptr + idx, r.to(out_ptr.dtype.element_ty), mask=mask)


def standard_gamma_grad(alpha, x, out):
    """Contiguous ``out`` = ``standard_gamma_grad_kernel`` of contiguous ``alpha``, ``x`` (same shape)."""
    return _launch_words(standard_gamma_grad_kernel, out, [kptr(alpha), kptr(x), kptr(out), out.numel()], {},
                         gpu_block=128)


@triton.jit
def _beta_grad_alpha_small(x, alpha, beta):
    """d x / d alpha for x ~ Beta(alpha, beta) near 0: Taylor series (ATen's ``_beta_grad_alpha_small``)."""
    factor = digamma_one(alpha) - digamma_one(alpha + beta) - tl.log(x)
    numer = tl.zeros_like(x) + 1.0
    series = numer / alpha * (factor + 1.0 / alpha)
    for i in tl.static_range(1, 11):
        numer = numer * ((i - beta) * x / i)
        denom = alpha + i
        series = series + numer / denom * (factor + 1.0 / denom)
    r = x * tl.exp(-beta * tl.log(1.0 - x)) * series
    return tl.where(r != r, 0.0, r)


@triton.jit
def _beta_grad_beta_small(x, alpha, beta):
    """d x / d beta for x ~ Beta(alpha, beta) near 0 (ATen's ``_beta_grad_beta_small``)."""
    factor = digamma_one(alpha + beta) - digamma_one(beta)
    numer = tl.zeros_like(x) + 1.0
    betas = tl.zeros_like(x) + 1.0
    dbetas = tl.zeros_like(x)
    series = factor / alpha
    for i in tl.static_range(1, 9):
        numer = numer * (-x / i)
        dbetas = dbetas * (beta - i) + betas
        betas = betas * (beta - i)
        series = series + numer / (alpha + i) * (dbetas + factor * betas)
    r = -tl.exp((1.0 - beta) * tl.log(1.0 - x)) * series
    return tl.where(r != r, 0.0, r)


@triton.jit
def _beta_grad_alpha_mid(x, alpha, beta):
    """d x / d alpha for Beta(alpha, beta) with both large: Rice saddle point (ATen's ``_beta_grad_alpha_mid``)."""
    total = alpha + beta
    mean = alpha / total
    std = tl.sqrt(alpha * beta / (total + 1.0)) / total
    poly = 47.0 * x * (beta * beta) * (beta * beta) + alpha * (
        (43.0 + 20.0 * (16.0 + 27.0 * beta) * x) * (beta * beta) * beta + alpha * (
            3.0 * (59.0 + 180.0 * beta - 90.0 * x) * (beta * beta) + alpha * (
                (453.0 + 1620.0 * beta * (1.0 - x) - 455.0 * x) * beta + alpha * (8.0 * (1.0 - x) * (135.0 * beta - 11.0)))))
    prefactor_num = (1.0 + 12.0 * alpha) * (1.0 + 12.0 * beta) / (total * total)
    prefactor_den = 12960.0 * alpha * alpha * alpha * beta * beta * (1.0 + 12.0 * total)
    near = prefactor_num / (1.0 - x) * poly / prefactor_den
    prefactor = -x / tl.sqrt(2.0 * alpha * beta / total)
    stirling = ((1.0 + 1.0 / (12.0 * alpha) + 1.0 / (288.0 * alpha * alpha))
                * (1.0 + 1.0 / (12.0 * beta) + 1.0 / (288.0 * beta * beta))
                / (1.0 + 1.0 / (12.0 * total) + 1.0 / (288.0 * total * total)))
    term1_num = 2.0 * (alpha * alpha) * (x - 1.0) + alpha * beta * (x - 1.0) - x * (beta * beta)
    axbx = alpha * (x - 1.0) + beta * x
    term1_den = tl.sqrt(2.0 * alpha / beta) * tl.exp(1.5 * tl.log(total)) * axbx * axbx
    term1 = term1_num / term1_den
    term2 = 0.5 * tl.log(alpha / (total * x))
    term3 = tl.sqrt(8.0 * alpha * beta / total) / (beta * x + alpha * (x - 1.0))
    term4_base = beta * tl.log(beta / (total * (1.0 - x))) + alpha * tl.log(alpha / (total * x))
    term4 = tl.exp(-1.5 * tl.log(term4_base))
    term1234 = term1 + term2 * (term3 + tl.where(x < mean, term4, -term4))
    far = stirling * prefactor * term1234
    return tl.where((mean - 0.1 * std <= x) & (x <= mean + 0.1 * std), near, far)


@triton.jit
def _bpoly(b, k0, k1, k2, k3):
    return k0 + b * (k1 + b * (k2 + b * k3))


@triton.jit
def dirichlet_grad_kernel(x_ptr, a_ptr, t_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = -(d/d alpha BetaCDF(x; alpha, total - alpha)) / pdf / (1 - x), the Dirichlet sampler's implicit
    gradient by its Beta marginals (ATen's ``dirichlet_grad_one``, fp64).  x, alpha, total contiguous (n,)."""
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n
    x = tl.load(x_ptr + idx, mask=mask, other=0.5).to(tl.float64)
    alpha = tl.load(a_ptr + idx, mask=mask, other=1.0).to(tl.float64)
    total = tl.load(t_ptr + idx, mask=mask, other=2.0).to(tl.float64)
    beta = total - alpha
    boundary = total * x * (1.0 - x)
    u = tl.log(x)
    a = tl.log(alpha) - u
    b = tl.log(total) - a
    u2 = u * u
    a2 = a * a
    p = (_bpoly(b, 1.003668233, -0.01061107488, -0.0657888334, 0.01201642863)
         + a * _bpoly(b, 0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033)
         + a2 * _bpoly(b, -0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013)
         + u * _bpoly(b, 0.221950385, -0.3187676331, 0.01799915743, 0.01074823814)
         + u * a * _bpoly(b, -0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057)
         + u * a2 * _bpoly(b, 0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05)
         + u2 * _bpoly(b, -0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565)
         + u2 * a * _bpoly(b, 0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181)
         + u2 * a2 * _bpoly(b, 0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05))
    q = (_bpoly(b, 1.0, -0.02924021934, -0.04438342661, 0.007285809825)
         + a * _bpoly(b, 0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521)
         + a2 * _bpoly(b, -0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149)
         + u * _bpoly(b, 0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273)
         + u * a * _bpoly(b, 0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956)
         + u * a2 * _bpoly(b, -0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05)
         + u2 * _bpoly(b, 0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05)
         + u2 * a * _bpoly(b, 0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05)
         + u2 * a2 * _bpoly(b, -0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06))
    rational = p / q * (x * (digamma_one(total) - digamma_one(alpha)) / beta)
    r = tl.where((alpha > 6.0) & (beta > 6.0), _beta_grad_alpha_mid(x, alpha, beta), rational)
    r = tl.where((x >= 0.5) & (boundary < 0.75), -_beta_grad_beta_small(1.0 - x, beta, alpha), r)
    r = tl.where((x <= 0.5) & (boundary < 2.5), _beta_grad_alpha_small(x, alpha, beta), r)
    tl.store(out_ptr + idx, r.to(out_ptr.dtype.element_ty), mask=mask)


def dirichlet_grad(x, alpha, total, out):
    """Contiguous ``out`` = ``dirichlet_grad_kernel`` of contiguous ``x``, ``alpha``, ``total`` (same shape)."""
    return _launch_words(dirichlet_grad_kernel, out, [kptr(x), kptr(alpha), kptr(total), kptr(out), out.numel()], {},
                         gpu_block=128)
