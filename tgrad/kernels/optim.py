"""Fused optimizer steps: one launch updates many parameters (multi-tensor kernel).

A launch covers up to ``MAX_TENSORS`` tensors (PyTorch's multi_tensor_apply
passes its tensor lists the same way): slot t gets the addresses of
parameter t, its gradient and up to three state tensors as kernel arguments
(``p_t, g_t, a_t, b_t, c_t``; all contiguous, one dtype), its element count
``n_t`` and a block size ``B_t`` (constexpr).  Program i updates block
i - start_t of the slot t whose programs [start_t, start_t + cdiv(n_t, B_t))
hold i, so the grid is the sum of the slots' block counts.  On cpu each slot's
block is its own elementwise size, a tensor's own power of two below 16
elements (no masked lanes beyond the last block) and, the addresses being
arguments, the trace executor lowers every load and store to a numpy view; on
cuda all blocks are 1024.

Hyper-parameters (lr, betas, bias corrections, all computed on the host) are
kernel arguments, replayed as values: changing them never recompiles or
re-records.  For fp32 maths each is an fp32 argument (rounded on the host, as
the kernels' cast would); float64 parameters see them unrounded, passed as the
double's bits in two int32-range arguments (a float argument would be fp32).
Nothing is kept on the device between steps.  The optimizer (``OP``) and its
structural choices (momentum on/off, nesterov, amsgrad ...) are constexprs.  Values are computed in fp32
(fp64 for float64) and cast on store.

The updates follow PyTorch's default cpu path (the single-tensor loop of
``torch/optim/*.py``) operation by operation, with ATen's cpu rounding:
``x.add(y, alpha=a)`` and ``x.addcmul(t1, t2, value=v)`` are one fma each
(``fma(a, y, x)``, ``fma(v t1, t2, x)``), ``lerp`` is an fma on either side of
w = 0.5, ``x.addcdiv(t1, t2, value=v)`` is ``x + (v t1) / t2``.  In fp32 on cpu
this gives PyTorch's bits except where a square root is taken: PyTorch's cpu
sqrt (MKL's) is not correctly rounded (1 ulp off for ~1 in 6 values), the
interpreter's (numpy's) is.  On cuda, Triton's division and sqrt may differ
by ulps.  On cpu the tapes' fma is ``runtime.native``'s ufunc (the CPU's FMA
instruction, ~0.3 ns an element); without a C compiler, the exact numpy emulation
``runtime.tape_ops._fma32`` (~2.3 ns an element).
"""
import struct

import numpy as np

import triton
import triton.language as tl

from .runtime import Launch, Ptr, Sites, cdiv, dynamic_args, elementwise_block, gpu_blocks, next_pow2
from .runtime import launcher as T
from .runtime.native import aten_ufunc, fma_ufunc
from .runtime.tape_ops import _Views
from ._lang import cast_store, compute_type
from .elementwise import sqrt_h
from .runtime.native import native_helper, rule_adam_m, rule_adam_p, rule_adam_v, rule_sgd_buf, rule_sgd_p


SGD, ADAM, RMSPROP, ADAGRAD, ADADELTA = range(5)
MAX_TENSORS = 8
STATES = 3          # state pointers per slot (a, b, c)


@triton.jit
def _lerp(a, b, w, LOW: tl.constexpr):
    """ATen's lerp on cpu: fma(w, b - a, a) for w < 0.5 (LOW, decided on the host), else b - (b - a)(1 - w)
    as one fma."""
    d = b - a
    if LOW:
        return tl.fma(w, d, a)
    else:
        return tl.fma(-d, 1.0 - w, b)


@native_helper("sgd_buf", rule_sgd_buf)
@triton.jit
def _sgd_buf(buf, g, p, momentum, damp, wd, HAS_WD: tl.constexpr, MOMENTUM: tl.constexpr, FIRST: tl.constexpr):
    """The new momentum buffer: g' (FIRST) or momentum buf + (1 - dampening) g', g' = g + wd p (HAS_WD)."""
    if HAS_WD:                                          # grad.add(param, alpha=weight_decay)
        g = tl.fma(wd, p, g)
    if FIRST:
        r = g
    elif MOMENTUM == 1:                                 # fma(1, g, x) is g + x: a plain add costs less on cpu
        r = buf * momentum + g
    else:                                               # buf.mul_(momentum).add_(grad, alpha=1 - dampening)
        r = tl.fma(damp, g, buf * momentum)
    return r


@native_helper("sgd_p", rule_sgd_p)
@triton.jit
def _sgd_p(p, g, buf, neg_lr, momentum, wd, HAS_WD: tl.constexpr, MOMENTUM: tl.constexpr, NESTEROV: tl.constexpr):
    """The new parameter: p - lr u, u = g' (no MOMENTUM), buf, or g' + momentum buf (NESTEROV)."""
    if HAS_WD:
        g = tl.fma(wd, p, g)
    if MOMENTUM:
        if NESTEROV:
            g = tl.fma(momentum, buf, g)                # grad.add(buf, alpha=momentum)
        else:
            g = buf
    return tl.fma(neg_lr, g, p)                         # param.add_(grad, alpha=-lr)


@triton.jit
def _sgd(h0, h1, h2, h3, p_ptr, p, g, a_ptr, mask, COMPUTE: tl.constexpr, HAS_WD: tl.constexpr, MOMENTUM: tl.constexpr,
         FIRST: tl.constexpr, NESTEROV: tl.constexpr):
    """g += wd p; buf (a) = g (FIRST) or momentum buf + (1 - dampening) g;
    p -= lr (g + momentum buf if NESTEROV else buf).  h0-h3: -lr, momentum, 1 - dampening, wd.
    MOMENTUM: 0 none, 1 without dampening, 2 with.  (_sgd_buf, _sgd_p: one native call each on cpu.)"""
    buf = g
    if MOMENTUM:
        if not FIRST:
            buf = tl.load(a_ptr, mask=mask).to(COMPUTE)
        buf = _sgd_buf(buf, g, p, h1, h2, h3, HAS_WD, MOMENTUM, FIRST)
        cast_store(a_ptr, buf, mask)
    cast_store(p_ptr, _sgd_p(p, g, buf, h0, h1, h3, HAS_WD, MOMENTUM, NESTEROV), mask)


@native_helper("adam_m", rule_adam_m)
@triton.jit
def _adam_m(m, g, p, w1, wd, HAS_WD: tl.constexpr, DECOUPLED: tl.constexpr, LERP_LOW: tl.constexpr):
    """The new first moment lerp(m, g', 1 - beta1), g' = g + wd p (coupled weight decay)."""
    if HAS_WD:
        if not DECOUPLED:
            g = tl.fma(wd, p, g)                        # grad.add(param, alpha=weight_decay)
    return _lerp(m, g, w1, LERP_LOW)


@native_helper("adam_v", rule_adam_v)
@triton.jit
def _adam_v(v, g, p, beta2, w2, wd, HAS_WD: tl.constexpr, DECOUPLED: tl.constexpr):
    """The new second moment beta2 v + (1 - beta2) g'^2 (v.mul_(beta2).addcmul_(g, g, w2))."""
    if HAS_WD:
        if not DECOUPLED:
            g = tl.fma(wd, p, g)
    return tl.fma(w2 * g, g, v * beta2)


@native_helper("adam_p", rule_adam_p)
@triton.jit
def _adam_p(p, m, v, step_size, bc2_sqrt, eps, decay, HAS_WD: tl.constexpr, DECOUPLED: tl.constexpr):
    """The new parameter p' - step_size m / (sqrt(v) / bc2_sqrt + eps), p' = p decay (decoupled weight decay)."""
    if HAS_WD:
        if DECOUPLED:
            p = p * decay
    denom = tl.sqrt(v) / bc2_sqrt + eps
    return p + (-step_size * m) / denom                 # param.addcdiv_(m, denom, value=-step_size)


@triton.jit
def _adam(h0, h1, h2, h3, h4, h5, h6, h7, p_ptr, p, g, m_ptr, v_ptr, vmax_ptr, mask, COMPUTE: tl.constexpr,
          HAS_WD: tl.constexpr, DECOUPLED: tl.constexpr, AMSGRAD: tl.constexpr, LERP_LOW: tl.constexpr):
    """Adam/AdamW: m (a) = lerp(m, g, 1 - beta1); v (b) = beta2 v + (1 - beta2) g^2 (vmax (c) = max(vmax, v));
    p -= step_size m / (sqrt(v) / bc2_sqrt + eps).  Weight decay: g += wd p, or (DECOUPLED) p *= decay.
    h0-h7: step_size = lr / (1 - beta1^t), 1 - beta1, beta2, 1 - beta2, eps, wd, decay = 1 - lr wd,
    bc2_sqrt = sqrt(1 - beta2^t).  (_adam_m, _adam_v, _adam_p: one native call each on cpu.)"""
    m = _adam_m(tl.load(m_ptr, mask=mask).to(COMPUTE), g, p, h1, h5, HAS_WD, DECOUPLED, LERP_LOW)
    v = _adam_v(tl.load(v_ptr, mask=mask).to(COMPUTE), g, p, h2, h3, h5, HAS_WD, DECOUPLED)
    cast_store(m_ptr, m, mask)
    cast_store(v_ptr, v, mask)
    if AMSGRAD:
        v = tl.maximum(tl.load(vmax_ptr, mask=mask).to(COMPUTE), v)
        cast_store(vmax_ptr, v, mask)
    cast_store(p_ptr, _adam_p(p, m, v, h0, h7, h4, h6, HAS_WD, DECOUPLED), mask)


@triton.jit
def _rmsprop(h0, h1, h2, h3, h4, h5, p_ptr, p, g, sq_ptr, ga_ptr, buf_ptr, mask, COMPUTE: tl.constexpr,
             HAS_WD: tl.constexpr, CENTERED: tl.constexpr, MOMENTUM: tl.constexpr, LERP_LOW: tl.constexpr):
    """sq (a) = alpha sq + (1 - alpha) g^2; avg = sqrt(sq - ga^2 if CENTERED (ga (b) = lerp(ga, g, 1 - alpha))
    else sq) + eps; buf (c) = momentum buf + g / avg, p -= lr buf (or p -= lr g / avg).
    h0-h5: lr, alpha, 1 - alpha, eps, wd, momentum."""
    lr, alpha, w, eps = h0, h1, h2, h3
    if HAS_WD:
        g = tl.fma(h4, p, g)
    sq = tl.fma(w * g, g, tl.load(sq_ptr, mask=mask).to(COMPUTE) * alpha)
    cast_store(sq_ptr, sq, mask)
    if CENTERED:
        ga = _lerp(tl.load(ga_ptr, mask=mask).to(COMPUTE), g, w, LERP_LOW)
        cast_store(ga_ptr, ga, mask)
        avg = tl.sqrt(tl.fma(-ga, ga, sq)) + eps                 # sq.addcmul(ga, ga, value=-1).sqrt_().add_(eps)
    else:
        avg = tl.sqrt(sq) + eps
    if MOMENTUM:
        momentum = h5
        buf = tl.load(buf_ptr, mask=mask).to(COMPUTE) * momentum + g / avg    # buf.mul_(momentum).addcdiv_(g, avg)
        cast_store(buf_ptr, buf, mask)
        cast_store(p_ptr, tl.fma(-lr, buf, p), mask)
    else:
        cast_store(p_ptr, p + (-lr * g) / avg, mask)


@triton.jit
def _adagrad(h0, h1, h2, p_ptr, p, g, s_ptr, mask, COMPUTE: tl.constexpr, HAS_WD: tl.constexpr):
    """sum (a) += g^2; p -= clr g / (sqrt(sum) + eps), clr = lr / (1 + (step - 1) lr_decay).  h0-h2: clr, eps, wd."""
    clr, eps = h0, h1
    if HAS_WD:
        g = tl.fma(h2, p, g)
    s = tl.fma(g, g, tl.load(s_ptr, mask=mask).to(COMPUTE))
    cast_store(s_ptr, s, mask)
    cast_store(p_ptr, p + (-clr * g) / (tl.sqrt(s) + eps), mask)


@triton.jit
def _adadelta(h0, h1, h2, h3, h4, p_ptr, p, g, sq_ptr, acc_ptr, mask, COMPUTE: tl.constexpr, HAS_WD: tl.constexpr):
    """sq (a) = rho sq + (1 - rho) g^2;  d = sqrt(acc + eps) / sqrt(sq + eps) g;  acc (b) = rho acc + (1 - rho) d^2;
    p -= lr d (correctly rounded square roots, as the unfused ops).  h0-h4: lr, rho, 1 - rho, eps, wd."""
    lr, rho, w, eps = h0, h1, h2, h3
    if HAS_WD:
        g = tl.fma(h4, p, g)                                            # grad.add(param, alpha=weight_decay)
    sq = tl.fma(w * g, g, tl.load(sq_ptr, mask=mask).to(COMPUTE) * rho)   # sq.mul_(rho).addcmul_(g, g, 1 - rho)
    cast_store(sq_ptr, sq, mask)
    acc = tl.load(acc_ptr, mask=mask).to(COMPUTE)
    d = sqrt_h(acc + eps) / sqrt_h(sq + eps) * g                        # acc.add(eps).sqrt_().div_(std).mul_(g)
    cast_store(acc_ptr, tl.fma(w * d, d, acc * rho), mask)              # acc.mul_(rho).addcmul_(d, d, 1 - rho)
    cast_store(p_ptr, tl.fma(-lr, d, p), mask)                          # param.add_(d, alpha=-lr)


@triton.jit
def _hyper_value(x, y, COMPUTE: tl.constexpr):
    """A hyper-parameter (a scalar) from its two kernel arguments (see _hyper): fp32 ``x``, or a double's
    bits."""
    if COMPUTE == tl.float64:
        bits = (tl.cast(x, tl.int64) << 32) + (tl.cast(y, tl.int64) + 2147483648)
        return bits.to(tl.float64, bitcast=True)
    else:
        return tl.cast(x, COMPUTE)


@triton.jit
def _update(h0, h1, h2, h3, h4, h5, h6, h7, p_ptr, g_ptr, a_ptr, b_ptr, c_ptr, n, i, OP: tl.constexpr,
            COMPUTE: tl.constexpr, MAXIMIZE: tl.constexpr, HAS_WD: tl.constexpr, MOMENTUM: tl.constexpr,
            FIRST: tl.constexpr, NESTEROV: tl.constexpr, DECOUPLED: tl.constexpr, AMSGRAD: tl.constexpr,
            CENTERED: tl.constexpr, LERP_LOW: tl.constexpr, BLOCK: tl.constexpr):
    """Block i (elements [i BLOCK, (i + 1) BLOCK) of n) of one tensor: the OP update."""
    offs = i.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask).to(COMPUTE)
    g = tl.load(g_ptr + offs, mask=mask).to(COMPUTE)
    if MAXIMIZE:
        g = -g
    if OP == 0:
        _sgd(h0, h1, h2, h3, p_ptr + offs, p, g, a_ptr + offs, mask, COMPUTE, HAS_WD, MOMENTUM, FIRST, NESTEROV)
    elif OP == 1:
        _adam(h0, h1, h2, h3, h4, h5, h6, h7, p_ptr + offs, p, g, a_ptr + offs, b_ptr + offs, c_ptr + offs, mask,
              COMPUTE, HAS_WD, DECOUPLED, AMSGRAD, LERP_LOW)
    elif OP == 2:
        _rmsprop(h0, h1, h2, h3, h4, h5, p_ptr + offs, p, g, a_ptr + offs, b_ptr + offs, c_ptr + offs, mask,
                 COMPUTE, HAS_WD, CENTERED, MOMENTUM, LERP_LOW)
    elif OP == 3:
        _adagrad(h0, h1, h2, p_ptr + offs, p, g, a_ptr + offs, mask, COMPUTE, HAS_WD)
    else:
        _adadelta(h0, h1, h2, h3, h4, p_ptr + offs, p, g, a_ptr + offs, b_ptr + offs, mask, COMPUTE, HAS_WD)


@triton.jit
def multi_tensor_kernel(x0, y0, x1, y1, x2, y2, x3, y3, x4, y4, x5, y5, x6, y6, x7, y7,
                        p0, g0, a0, b0, c0, n0, p1, g1, a1, b1, c1, n1,
                        p2, g2, a2, b2, c2, n2, p3, g3, a3, b3, c3, n3,
                        p4, g4, a4, b4, c4, n4, p5, g5, a5, b5, c5, n5,
                        p6, g6, a6, b6, c6, n6, p7, g7, a7, b7, c7, n7,
                        OP: tl.constexpr, COMPUTE: tl.constexpr, MAXIMIZE: tl.constexpr, HAS_WD: tl.constexpr,
                        MOMENTUM: tl.constexpr, FIRST: tl.constexpr, NESTEROV: tl.constexpr,
                        DECOUPLED: tl.constexpr, AMSGRAD: tl.constexpr, CENTERED: tl.constexpr,
                        LERP_LOW: tl.constexpr, B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr, B3: tl.constexpr,
                        B4: tl.constexpr, B5: tl.constexpr, B6: tl.constexpr, B7: tl.constexpr):
    """The OP update of up to 8 tensors (slot t: param p_t, grad g_t, states a_t, b_t, c_t, n_t elements,
    blocks of B_t); program i runs the block of the slot its index falls in.  Hyper-parameter k is
    (x_k, y_k), see _hyper."""
    h0 = _hyper_value(x0, y0, COMPUTE)
    h1 = _hyper_value(x1, y1, COMPUTE)
    h2 = _hyper_value(x2, y2, COMPUTE)
    h3 = _hyper_value(x3, y3, COMPUTE)
    h4 = _hyper_value(x4, y4, COMPUTE)
    h5 = _hyper_value(x5, y5, COMPUTE)
    h6 = _hyper_value(x6, y6, COMPUTE)
    h7 = _hyper_value(x7, y7, COMPUTE)
    i = tl.program_id(0)
    e0 = tl.cdiv(n0, B0)
    e1 = e0 + tl.cdiv(n1, B1)
    e2 = e1 + tl.cdiv(n2, B2)
    e3 = e2 + tl.cdiv(n3, B3)
    e4 = e3 + tl.cdiv(n4, B4)
    e5 = e4 + tl.cdiv(n5, B5)
    e6 = e5 + tl.cdiv(n6, B6)
    if i < e0:
        _update(h0, h1, h2, h3, h4, h5, h6, h7, p0, g0, a0, b0, c0, n0, i, OP, COMPUTE, MAXIMIZE,
                HAS_WD, MOMENTUM, FIRST, NESTEROV, DECOUPLED, AMSGRAD, CENTERED, LERP_LOW, B0)
    elif i < e1:
        _update(h0, h1, h2, h3, h4, h5, h6, h7, p1, g1, a1, b1, c1, n1, i - e0, OP, COMPUTE, MAXIMIZE,
                HAS_WD, MOMENTUM, FIRST, NESTEROV, DECOUPLED, AMSGRAD, CENTERED, LERP_LOW, B1)
    elif i < e2:
        _update(h0, h1, h2, h3, h4, h5, h6, h7, p2, g2, a2, b2, c2, n2, i - e1, OP, COMPUTE, MAXIMIZE,
                HAS_WD, MOMENTUM, FIRST, NESTEROV, DECOUPLED, AMSGRAD, CENTERED, LERP_LOW, B2)
    elif i < e3:
        _update(h0, h1, h2, h3, h4, h5, h6, h7, p3, g3, a3, b3, c3, n3, i - e2, OP, COMPUTE, MAXIMIZE,
                HAS_WD, MOMENTUM, FIRST, NESTEROV, DECOUPLED, AMSGRAD, CENTERED, LERP_LOW, B3)
    elif i < e4:
        _update(h0, h1, h2, h3, h4, h5, h6, h7, p4, g4, a4, b4, c4, n4, i - e3, OP, COMPUTE, MAXIMIZE,
                HAS_WD, MOMENTUM, FIRST, NESTEROV, DECOUPLED, AMSGRAD, CENTERED, LERP_LOW, B4)
    elif i < e5:
        _update(h0, h1, h2, h3, h4, h5, h6, h7, p5, g5, a5, b5, c5, n5, i - e4, OP, COMPUTE, MAXIMIZE,
                HAS_WD, MOMENTUM, FIRST, NESTEROV, DECOUPLED, AMSGRAD, CENTERED, LERP_LOW, B5)
    elif i < e6:
        _update(h0, h1, h2, h3, h4, h5, h6, h7, p6, g6, a6, b6, c6, n6, i - e5, OP, COMPUTE, MAXIMIZE,
                HAS_WD, MOMENTUM, FIRST, NESTEROV, DECOUPLED, AMSGRAD, CENTERED, LERP_LOW, B6)
    else:
        _update(h0, h1, h2, h3, h4, h5, h6, h7, p7, g7, a7, b7, c7, n7, i - e6, OP, COMPUTE, MAXIMIZE,
                HAS_WD, MOMENTUM, FIRST, NESTEROV, DECOUPLED, AMSGRAD, CENTERED, LERP_LOW, B7)


# ------------------------------------------------------------------ launcher
_FLAGS = dict(MAXIMIZE=False, HAS_WD=False, MOMENTUM=False, FIRST=False, NESTEROV=False, DECOUPLED=False,
              AMSGRAD=False, CENTERED=False, LERP_LOW=False)
_LERP_WEIGHT = {ADAM: 1, RMSPROP: 2}     # the hyper-parameter that is a lerp weight
_BLOCK_NAMES = tuple(f"B{t}" for t in range(MAX_TENSORS))
HYPER = 8           # hyper-parameter slots (Adam uses all of them)
_HYPER_NAMES = tuple(f"{c}{k}" for k in range(HYPER) for c in "xy")
dynamic_args(multi_tensor_kernel, *_HYPER_NAMES)       # new values replay the same tape
_UNPACK = struct.Struct("<q")
_PACK = struct.Struct("<d")
_F32 = struct.Struct("<f")


def _hyper(values, float64):
    """The kernel arguments (x_k, y_k) of hyper-parameters ``values`` (see _hyper_value): an fp32 kernel
    argument x_k (fp32 maths: as rounded by the kernel's own cast) or, for float64 maths, the double's bits
    as two int32-range ints (x_k: the high word, y_k: the low word - 2^31); unused slots are 0."""
    out = []
    for v in values:
        if float64:
            bits = _UNPACK.unpack(_PACK.pack(v))[0]
            out += (bits >> 32, (bits & 0xFFFFFFFF) - 2**31)
        else:
            out += (float(v), 0)
    out += (0.0 if not float64 else 0, 0) * (HYPER - len(values))
    return out


_SITES = Sites()    # (op, flags, dtype, device type, gpu blocks?, element counts) -> Launch


def multi_tensor_step(op, columns, hyper, constexprs):
    """Run optimizer ``op`` (SGD, ADAM, RMSPROP, ADAGRAD, ADADELTA) over ``columns``: one list [param, grad, *state]
    per tensor, MAX_TENSORS tensors per launch.

    All tensors share one device and dtype and are contiguous; ``None`` state
    entries (unused by the op's constexprs) become null addresses.
    ``hyper``: the op's hyper-parameters in the order its docstring lists them.
    """
    p0 = columns[0][0]
    dtype = p0.dtype
    dev = p0._storage.launch_device
    float64 = dtype.name == "float64"
    hp = _hyper(hyper, float64)
    if op in _LERP_WEIGHT:      # ATen's lerp branch (one fma, not both and a select): w < 0.5 on w as the
        w = hyper[_LERP_WEIGHT[op]]     # kernel sees it (rounded to fp32 unless float64 maths)
        constexprs = dict(constexprs, LERP_LOW=(w if float64 else _F32.unpack(_F32.pack(w))[0]) < 0.5)
    flags = tuple(constexprs.items())
    gpu = gpu_blocks(dev)
    for start in range(0, len(columns), MAX_TENSORS):
        chunk = columns[start:start + MAX_TENSORS]
        sizes = tuple([col[0].numel() for col in chunk])
        key = (op, flags, dtype, dev, gpu, sizes)
        site = _SITES.get(key) or _SITES.add(key, _site(op, flags, dtype, dev, sizes, hp))
        dyn = list(hp)
        for col in chunk:
            dyn += [0 if x is None else x.data_ptr() for x in col]
            dyn += _NULLS[len(col):]
        site(*dyn)


_NULLS = [0] * (2 + STATES)


def _site(op, flags, dtype, dev, sizes, hp):
    """The Launch of one chunk: hyper-parameters, then per slot 2 + STATES addresses and an element count.
    On cpu a tensor smaller than elementwise_block's minimum gets its own power of two (no masked lanes)."""
    null = Ptr(0, dtype.np)
    args = list(hp)
    for n in sizes:
        args += [null] * (2 + STATES) + [n]
    args += ([null] * (2 + STATES) + [0]) * (MAX_TENSORS - len(sizes))
    gpu = gpu_blocks(dev)
    blocks = [elementwise_block(n, dev) if gpu else min(elementwise_block(n, dev), next_pow2(n)) for n in sizes]
    blocks += [elementwise_block(0, dev)] * (MAX_TENSORS - len(sizes))
    cexpr = dict(_FLAGS, **dict(flags), OP=op, COMPUTE=compute_type(dtype), **dict(zip(_BLOCK_NAMES, blocks)))
    return Launch(multi_tensor_kernel, (sum(cdiv(n, b) for n, b in zip(sizes, blocks)),), dev, args, cexpr)


_F32_NP = np.dtype(np.float32)


def sgd_ufuncs(w, mo, nest, first=False):
    """optim_cpu.c's ufuncs for ``_sgd_buf`` and ``_sgd_p`` of float32 tensors (w: weight decay, mo: MOMENTUM,
    nest: nesterov, first: the buffer's first step): ``(fb, fs, fp, plain)``, fb the buffer's (None without
    momentum, or on a first step without weight decay: the buffer is g itself), fs both in one pass (None without
    momentum or on a first step), fp the parameter's (the exact fma where ``_sgd_p`` is one: ``plain``); None
    where one is not built."""
    fma = fma_ufunc()
    need_b = mo and (w or not first)
    fb = aten_ufunc(f"sgd_buf_{w}{mo}{int(first)}") if need_b else None
    fs = aten_ufunc(f"sgd_step_{w}{mo}{nest}") if mo and not first else None
    fp = aten_ufunc(f"sgd_p_{w}{mo}{nest}") if mo and nest or w else fma
    if fma is None or fp is None or need_b and fb is None:
        return None
    return fb, fs, fp, fp is fma


def sgd_update(fb, fs, fp, plain, P, G, U, x):
    """One float32 tensor's SGD update in place with ``sgd_ufuncs``' ufuncs: P the parameter, G its gradient, U its
    momentum buffer (G itself without momentum), x = (-lr, momentum, 1 - dampening, wd) as 1-element float32
    arrays (rounded as the kernel's arguments are)."""
    if fs is not None:
        fs(P, G, U, *x, out=(U, P))
        return
    if fb is not None:
        fb(U, G, P, x[1], x[2], x[3], out=U)
    elif U is not G:
        np.copyto(U, G)                 # (the first step's buffer: g itself)
    if plain:
        fp(x[0], U, P, out=P)
    else:
        fp(P, G, U, x[0], x[1], x[3], out=P)


def _sgd_twin(args, cx, grid):
    """The cpu twin of an SGD launch of ``multi_tensor_kernel`` (float32, not maximize): per tensor, ``sgd_update``
    over the whole tensor, in place, as the compiled replay's SGD update; else None (the tape runs)."""
    if cx["OP"] != SGD or cx["COMPUTE"] is not tl.float32 or cx["MAXIMIZE"]:
        return None
    mo = int(cx["MOMENTUM"])
    fns = sgd_ufuncs(int(bool(cx["HAS_WD"])), mo, int(bool(cx["NESTEROV"])), bool(cx["FIRST"]))
    if fns is None:
        return None
    slots = []
    for i in range(MAX_TENSORS):
        p, g, a = args[2 * HYPER + 6 * i:2 * HYPER + 6 * i + 3]
        n = args[2 * HYPER + 6 * i + 5]
        if n and (p.dtype != _F32_NP or g.dtype != _F32_NP or mo and a.dtype != _F32_NP):
            return None
        if n:
            slots.append((2 * HYPER + 5 * i, _Views((n,), (4,), _F32_NP)))
    return T.CpuTwin(_sgd_run, (fns, mo, tuple(slots)))


def _sgd_run(spec, *dyn):
    """``_sgd_twin``'s update over the launch's dynamic arguments (hyper-parameters x_k, y_k, then five addresses
    a slot): h0-h3 = -lr, momentum, 1 - dampening, wd rounded to float32 as the kernel's arguments are."""
    fns, mo, slots = spec
    h = np.array(dyn[0:8:2], _F32_NP)
    x = (h[0:1], h[1:2], h[2:3], h[3:4])
    for i, views in slots:
        G = views[dyn[i + 1]]
        sgd_update(*fns, views[dyn[i]], G, views[dyn[i + 2]] if mo else G, x)


T.cpu_twin(multi_tensor_kernel, _sgd_twin)
