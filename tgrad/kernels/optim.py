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

Hyper-parameters (lr, betas, bias corrections, all computed on the host) come
in an array ``hp`` read at run time: changing them never recompiles.  It holds
the compute dtype, so float64 parameters see them unrounded (a Python float
kernel argument would be fp32) and the others get them rounded to fp32 on the
host, as the kernels' cast would.  The device copy of a set of values is
kept: steps with the same values copy nothing.  The optimizer (``OP``) and its
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
by ulps.  On cpu an exact fma costs more than a multiply and an add
(``_triton._fma32``): the SGD-with-momentum step of a 784x256 layer takes
~2.6 ms instead of ~0.8 ms.
"""
import struct

import numpy as np
import triton
import triton.language as tl

from ..memory import Storage
from ._triton import Ptr, cdiv, elementwise_block, gpu_blocks, launch, next_pow2
from .elementwise import cast_store, compute_type

SGD, ADAM, RMSPROP, ADAGRAD = range(4)
MAX_TENSORS = 8
STATES = 3          # state pointers per slot (a, b, c)


@triton.jit
def _lerp(a, b, w):
    """ATen's lerp on cpu: fma(w, b - a, a) for w < 0.5, else b - (b - a)(1 - w) as one fma."""
    d = b - a
    return tl.where(w < 0.5, tl.fma(w, d, a), tl.fma(-d, 1.0 - w, b))


@triton.jit
def _sgd(hp_ptr, p_ptr, p, g, a_ptr, mask, COMPUTE: tl.constexpr, HAS_WD: tl.constexpr, MOMENTUM: tl.constexpr,
         FIRST: tl.constexpr, NESTEROV: tl.constexpr):
    """g += wd p; buf (a) = g (FIRST) or momentum buf + (1 - dampening) g;
    p -= lr (g + momentum buf if NESTEROV else buf).  hp: -lr, momentum, 1 - dampening, wd."""
    neg_lr = tl.load(hp_ptr).to(COMPUTE)
    if HAS_WD:                                          # grad.add(param, alpha=weight_decay)
        g = tl.fma(tl.load(hp_ptr + 3).to(COMPUTE), p, g)
    if MOMENTUM:
        momentum = tl.load(hp_ptr + 1).to(COMPUTE)
        if FIRST:
            buf = g
        else:                                           # buf.mul_(momentum).add_(grad, alpha=1 - dampening)
            one_minus_dampening = tl.load(hp_ptr + 2).to(COMPUTE)
            buf = tl.fma(one_minus_dampening, g, tl.load(a_ptr, mask=mask).to(COMPUTE) * momentum)
        cast_store(a_ptr, buf, mask)
        if NESTEROV:
            g = tl.fma(momentum, buf, g)                # grad.add(buf, alpha=momentum)
        else:
            g = buf
    cast_store(p_ptr, tl.fma(neg_lr, g, p), mask)       # param.add_(grad, alpha=-lr)


@triton.jit
def _adam(hp_ptr, p_ptr, p, g, m_ptr, v_ptr, vmax_ptr, mask, COMPUTE: tl.constexpr, HAS_WD: tl.constexpr,
          DECOUPLED: tl.constexpr, AMSGRAD: tl.constexpr):
    """Adam/AdamW: m (a) = lerp(m, g, 1 - beta1); v (b) = beta2 v + (1 - beta2) g^2 (vmax (c) = max(vmax, v));
    p -= step_size m / (sqrt(v) / bc2_sqrt + eps).  Weight decay: g += wd p, or (DECOUPLED) p *= decay.
    hp: step_size = lr / (1 - beta1^t), 1 - beta1, beta2, 1 - beta2, eps, wd, decay = 1 - lr wd,
    bc2_sqrt = sqrt(1 - beta2^t)."""
    step_size = tl.load(hp_ptr).to(COMPUTE)
    w1 = tl.load(hp_ptr + 1).to(COMPUTE)
    beta2 = tl.load(hp_ptr + 2).to(COMPUTE)
    w2 = tl.load(hp_ptr + 3).to(COMPUTE)
    eps = tl.load(hp_ptr + 4).to(COMPUTE)
    bc2_sqrt = tl.load(hp_ptr + 7).to(COMPUTE)
    if HAS_WD:
        if DECOUPLED:
            p = p * tl.load(hp_ptr + 6).to(COMPUTE)          # decay
        else:
            g = tl.fma(tl.load(hp_ptr + 5).to(COMPUTE), p, g)   # weight_decay
    m = _lerp(tl.load(m_ptr, mask=mask).to(COMPUTE), g, w1)
    v = tl.fma(w2 * g, g, tl.load(v_ptr, mask=mask).to(COMPUTE) * beta2)      # v.mul_(beta2).addcmul_(g, g, w2)
    cast_store(m_ptr, m, mask)
    cast_store(v_ptr, v, mask)
    if AMSGRAD:
        v = tl.maximum(tl.load(vmax_ptr, mask=mask).to(COMPUTE), v)
        cast_store(vmax_ptr, v, mask)
    denom = tl.sqrt(v) / bc2_sqrt + eps
    cast_store(p_ptr, p + (-step_size * m) / denom, mask)      # param.addcdiv_(m, denom, value=-step_size)


@triton.jit
def _rmsprop(hp_ptr, p_ptr, p, g, sq_ptr, ga_ptr, buf_ptr, mask, COMPUTE: tl.constexpr, HAS_WD: tl.constexpr,
             CENTERED: tl.constexpr, MOMENTUM: tl.constexpr):
    """sq (a) = alpha sq + (1 - alpha) g^2; avg = sqrt(sq - ga^2 if CENTERED (ga (b) = lerp(ga, g, 1 - alpha))
    else sq) + eps; buf (c) = momentum buf + g / avg, p -= lr buf (or p -= lr g / avg).
    hp: lr, alpha, 1 - alpha, eps, wd, momentum."""
    lr = tl.load(hp_ptr).to(COMPUTE)
    alpha = tl.load(hp_ptr + 1).to(COMPUTE)
    w = tl.load(hp_ptr + 2).to(COMPUTE)
    eps = tl.load(hp_ptr + 3).to(COMPUTE)
    if HAS_WD:
        g = tl.fma(tl.load(hp_ptr + 4).to(COMPUTE), p, g)
    sq = tl.fma(w * g, g, tl.load(sq_ptr, mask=mask).to(COMPUTE) * alpha)
    cast_store(sq_ptr, sq, mask)
    if CENTERED:
        ga = _lerp(tl.load(ga_ptr, mask=mask).to(COMPUTE), g, w)
        cast_store(ga_ptr, ga, mask)
        avg = tl.sqrt(tl.fma(-ga, ga, sq)) + eps                 # sq.addcmul(ga, ga, value=-1).sqrt_().add_(eps)
    else:
        avg = tl.sqrt(sq) + eps
    if MOMENTUM:
        momentum = tl.load(hp_ptr + 5).to(COMPUTE)
        buf = tl.load(buf_ptr, mask=mask).to(COMPUTE) * momentum + g / avg    # buf.mul_(momentum).addcdiv_(g, avg)
        cast_store(buf_ptr, buf, mask)
        cast_store(p_ptr, tl.fma(-lr, buf, p), mask)
    else:
        cast_store(p_ptr, p + (-lr * g) / avg, mask)


@triton.jit
def _adagrad(hp_ptr, p_ptr, p, g, s_ptr, mask, COMPUTE: tl.constexpr, HAS_WD: tl.constexpr):
    """sum (a) += g^2; p -= clr g / (sqrt(sum) + eps), clr = lr / (1 + (step - 1) lr_decay).  hp: clr, eps, wd."""
    clr = tl.load(hp_ptr).to(COMPUTE)
    eps = tl.load(hp_ptr + 1).to(COMPUTE)
    if HAS_WD:
        g = tl.fma(tl.load(hp_ptr + 2).to(COMPUTE), p, g)
    s = tl.fma(g, g, tl.load(s_ptr, mask=mask).to(COMPUTE))
    cast_store(s_ptr, s, mask)
    cast_store(p_ptr, p + (-clr * g) / (tl.sqrt(s) + eps), mask)


@triton.jit
def _update(hp_ptr, p_ptr, g_ptr, a_ptr, b_ptr, c_ptr, n, i, OP: tl.constexpr, COMPUTE: tl.constexpr,
            MAXIMIZE: tl.constexpr, HAS_WD: tl.constexpr, MOMENTUM: tl.constexpr, FIRST: tl.constexpr,
            NESTEROV: tl.constexpr, DECOUPLED: tl.constexpr, AMSGRAD: tl.constexpr, CENTERED: tl.constexpr,
            BLOCK: tl.constexpr):
    """Block i (elements [i BLOCK, (i + 1) BLOCK) of n) of one tensor: the OP update."""
    offs = i.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask).to(COMPUTE)
    g = tl.load(g_ptr + offs, mask=mask).to(COMPUTE)
    if MAXIMIZE:
        g = -g
    if OP == 0:
        _sgd(hp_ptr, p_ptr + offs, p, g, a_ptr + offs, mask, COMPUTE, HAS_WD, MOMENTUM, FIRST, NESTEROV)
    elif OP == 1:
        _adam(hp_ptr, p_ptr + offs, p, g, a_ptr + offs, b_ptr + offs, c_ptr + offs, mask, COMPUTE, HAS_WD,
              DECOUPLED, AMSGRAD)
    elif OP == 2:
        _rmsprop(hp_ptr, p_ptr + offs, p, g, a_ptr + offs, b_ptr + offs, c_ptr + offs, mask, COMPUTE, HAS_WD,
                 CENTERED, MOMENTUM)
    else:
        _adagrad(hp_ptr, p_ptr + offs, p, g, a_ptr + offs, mask, COMPUTE, HAS_WD)


@triton.jit
def multi_tensor_kernel(hp_ptr,
                        p0, g0, a0, b0, c0, n0, p1, g1, a1, b1, c1, n1,
                        p2, g2, a2, b2, c2, n2, p3, g3, a3, b3, c3, n3,
                        p4, g4, a4, b4, c4, n4, p5, g5, a5, b5, c5, n5,
                        p6, g6, a6, b6, c6, n6, p7, g7, a7, b7, c7, n7,
                        OP: tl.constexpr, COMPUTE: tl.constexpr, MAXIMIZE: tl.constexpr, HAS_WD: tl.constexpr,
                        MOMENTUM: tl.constexpr, FIRST: tl.constexpr, NESTEROV: tl.constexpr,
                        DECOUPLED: tl.constexpr, AMSGRAD: tl.constexpr, CENTERED: tl.constexpr,
                        B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr, B3: tl.constexpr,
                        B4: tl.constexpr, B5: tl.constexpr, B6: tl.constexpr, B7: tl.constexpr):
    """The OP update of up to 8 tensors (slot t: param p_t, grad g_t, states a_t, b_t, c_t, n_t elements,
    blocks of B_t); program i runs the block of the slot its index falls in."""
    i = tl.program_id(0)
    e0 = tl.cdiv(n0, B0)
    e1 = e0 + tl.cdiv(n1, B1)
    e2 = e1 + tl.cdiv(n2, B2)
    e3 = e2 + tl.cdiv(n3, B3)
    e4 = e3 + tl.cdiv(n4, B4)
    e5 = e4 + tl.cdiv(n5, B5)
    e6 = e5 + tl.cdiv(n6, B6)
    if i < e0:
        _update(hp_ptr, p0, g0, a0, b0, c0, n0, i, OP, COMPUTE, MAXIMIZE, HAS_WD, MOMENTUM, FIRST, NESTEROV,
                DECOUPLED, AMSGRAD, CENTERED, B0)
    elif i < e1:
        _update(hp_ptr, p1, g1, a1, b1, c1, n1, i - e0, OP, COMPUTE, MAXIMIZE, HAS_WD, MOMENTUM, FIRST, NESTEROV,
                DECOUPLED, AMSGRAD, CENTERED, B1)
    elif i < e2:
        _update(hp_ptr, p2, g2, a2, b2, c2, n2, i - e1, OP, COMPUTE, MAXIMIZE, HAS_WD, MOMENTUM, FIRST, NESTEROV,
                DECOUPLED, AMSGRAD, CENTERED, B2)
    elif i < e3:
        _update(hp_ptr, p3, g3, a3, b3, c3, n3, i - e2, OP, COMPUTE, MAXIMIZE, HAS_WD, MOMENTUM, FIRST, NESTEROV,
                DECOUPLED, AMSGRAD, CENTERED, B3)
    elif i < e4:
        _update(hp_ptr, p4, g4, a4, b4, c4, n4, i - e3, OP, COMPUTE, MAXIMIZE, HAS_WD, MOMENTUM, FIRST, NESTEROV,
                DECOUPLED, AMSGRAD, CENTERED, B4)
    elif i < e5:
        _update(hp_ptr, p5, g5, a5, b5, c5, n5, i - e4, OP, COMPUTE, MAXIMIZE, HAS_WD, MOMENTUM, FIRST, NESTEROV,
                DECOUPLED, AMSGRAD, CENTERED, B5)
    elif i < e6:
        _update(hp_ptr, p6, g6, a6, b6, c6, n6, i - e5, OP, COMPUTE, MAXIMIZE, HAS_WD, MOMENTUM, FIRST, NESTEROV,
                DECOUPLED, AMSGRAD, CENTERED, B6)
    else:
        _update(hp_ptr, p7, g7, a7, b7, c7, n7, i - e6, OP, COMPUTE, MAXIMIZE, HAS_WD, MOMENTUM, FIRST, NESTEROV,
                DECOUPLED, AMSGRAD, CENTERED, B7)


# ------------------------------------------------------------------ launcher
_FLAGS = dict(MAXIMIZE=False, HAS_WD=False, MOMENTUM=False, FIRST=False, NESTEROV=False, DECOUPLED=False,
              AMSGRAD=False, CENTERED=False)
_BLOCK_NAMES = tuple(f"B{t}" for t in range(MAX_TENSORS))
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_HYPER = {}         # (device, compute dtype, float64 bytes of the hyper-parameters) -> (Ptr, Storage)
_MAX_HYPER = 64


def _hyper(hyper, device, np_dtype):
    """(Ptr, Storage) of ``hyper`` rounded to the kernels' compute dtype (as their ``.to(COMPUTE)`` would)
    on ``device``.  Kept by value (the kernels only read it): a step whose values match an earlier one's,
    bit for bit (-0.0 is not 0.0), copies nothing."""
    raw = struct.pack(f"{len(hyper)}d", *hyper)
    key = (device, np_dtype, raw)
    e = _HYPER.get(key)
    if e is None:
        hp = np.frombuffer(raw, dtype=np.float64).astype(np_dtype)
        st = Storage(hp.nbytes, device)
        st.copy_from_host(hp.ctypes.data, hp.nbytes, 0)
        if len(_HYPER) >= _MAX_HYPER:       # e.g. an lr schedule: new values every step
            _HYPER.clear()
        e = _HYPER[key] = (Ptr(st.ptr, np_dtype), st)
    return e


_PLANS = {}         # (op, flags, dtype, device type, gpu blocks?, element counts) -> (constexprs, grid)


def _plan(op, flags, dtype, dev, sizes):
    """Constexprs and grid of a launch over tensors of ``sizes`` elements (``flags``: the op's constexpr
    items).  On cpu a tensor smaller than elementwise_block's minimum gets its own power of two (no masked
    lanes)."""
    gpu = gpu_blocks(dev)
    key = (op, flags, dtype, dev, gpu, sizes)
    e = _PLANS.get(key)
    if e is None:
        blocks = [elementwise_block(n, dev) if gpu else min(elementwise_block(n, dev), next_pow2(n))
                  for n in sizes]
        blocks += [elementwise_block(0, dev)] * (MAX_TENSORS - len(sizes))
        cexpr = dict(_FLAGS, **dict(flags), OP=op, COMPUTE=compute_type(dtype), **dict(zip(_BLOCK_NAMES, blocks)))
        if len(_PLANS) >= 4096:
            _PLANS.clear()
        e = _PLANS[key] = (cexpr, sum(cdiv(n, b) for n, b in zip(sizes, blocks)))
    return e


def multi_tensor_step(op, columns, hyper, constexprs):
    """Run optimizer ``op`` (SGD, ADAM, RMSPROP, ADAGRAD) over ``columns``: one list [param, grad, *state]
    per tensor, MAX_TENSORS tensors per launch.

    All tensors share one device and dtype and are contiguous; ``None`` state
    entries (unused by the op's constexprs) become null addresses.
    ``hyper``: the op's hyper-parameters in the order its docstring lists them.
    """
    p0 = columns[0][0]
    device = p0.device
    dev = device.type
    hp = _hyper(hyper, device, _F64 if p0.dtype.name == "float64" else _F32)   # held until launched
    flags = tuple(constexprs.items())
    null = Ptr(0, p0.dtype.np)
    unused = [null] * (2 + STATES) + [0]       # an unused slot: no tensors, 0 elements
    for start in range(0, len(columns), MAX_TENSORS):
        chunk = columns[start:start + MAX_TENSORS]
        args, sizes = [hp[0]], []
        for col in chunk:
            n = col[0].numel()
            args += [null if x is None else Ptr(x.data_ptr(), x.dtype.np) for x in col]
            args += unused[len(col):]
            args[-1] = n
            sizes.append(n)
        args += unused * (MAX_TENSORS - len(chunk))
        cexpr, grid = _plan(op, flags, p0.dtype, dev, tuple(sizes))
        launch(multi_tensor_kernel, (grid,), dev, args, cexpr)
