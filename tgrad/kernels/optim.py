"""Fused optimizer steps: one launch updates many parameters (multi-tensor kernels).

A launch gets an int64 address table of shape (ROWS, T), column t describing
tensor t: row 0 its element count, then the addresses of the parameter, its
gradient and its state tensors (all contiguous, all of element type ELEM).
Program (i, t) updates elements [i * BLOCK, (i + 1) * BLOCK) of tensor t, so
the grid is (cdiv(max numel, BLOCK), T).  Hyper-parameters (lr, betas, bias
corrections, all computed on the host) come in a float64 array ``hp`` read at
run time: changing them never recompiles, and float64 parameters see them
unrounded (a Python float kernel argument would be fp32).  Structural choices
(momentum on/off, nesterov, amsgrad ...) are constexprs.  Values are computed
in fp32 (fp64 for float64) and cast on store.

On cpu the interpreter pays per element of a block, masked or not, so the
launcher groups tensors by block size (next power of two of their numel); on
cuda all tensors of one dtype go in one launch.
"""
import numpy as np
import triton
import triton.language as tl

from ..memory import Storage
from ._triton import Ptr, elementwise_block, gpu_blocks, launch
from .elementwise import cast_store, compute_type


@triton.jit
def _column(table_ptr, T, t, row, ELEM: tl.constexpr):
    """Pointer (element type ELEM) stored at table[row, t]."""
    return tl.load(table_ptr + row * T + t).to(tl.pointer_type(ELEM))


@triton.jit
def _tensor_block(table_ptr, T, ELEM: tl.constexpr, COMPUTE: tl.constexpr, MAXIMIZE: tl.constexpr,
                  BLOCK: tl.constexpr):
    """This program's block of tensor t = program_id(1): (t, offsets, mask, param pointers, param, ±grad)."""
    t = tl.program_id(1)
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < tl.load(table_ptr + t)
    p_ptr = _column(table_ptr, T, t, 1, ELEM) + offs
    p = tl.load(p_ptr, mask=mask).to(COMPUTE)
    g = tl.load(_column(table_ptr, T, t, 2, ELEM) + offs, mask=mask).to(COMPUTE)
    if MAXIMIZE:
        g = -g
    return t, offs, mask, p_ptr, p, g


@triton.jit
def _lerp(a, b, w):
    """PyTorch's lerp: a + w (b - a) for w < 0.5, else b - (b - a)(1 - w)."""
    return tl.where(w < 0.5, a + w * (b - a), b - (b - a) * (1.0 - w))


@triton.jit
def sgd_kernel(hp_ptr, table_ptr, T, ELEM: tl.constexpr, COMPUTE: tl.constexpr, MAXIMIZE: tl.constexpr,
               HAS_WD: tl.constexpr, MOMENTUM: tl.constexpr, FIRST: tl.constexpr, NESTEROV: tl.constexpr,
               BLOCK: tl.constexpr):
    """g = ±grad + wd p; buf = g (FIRST) or momentum buf + (1 - dampening) g;
    p -= lr (g + momentum buf if NESTEROV else buf).  hp: lr, momentum, 1 - dampening, wd.
    Table rows: n, p, grad, buf."""
    lr = tl.load(hp_ptr).to(COMPUTE)
    momentum = tl.load(hp_ptr + 1).to(COMPUTE)
    one_minus_dampening = tl.load(hp_ptr + 2).to(COMPUTE)
    weight_decay = tl.load(hp_ptr + 3).to(COMPUTE)
    t, offs, mask, p_ptr, p, g = _tensor_block(table_ptr, T, ELEM, COMPUTE, MAXIMIZE, BLOCK)
    if HAS_WD:
        g = g + weight_decay * p
    if MOMENTUM:
        buf_ptr = _column(table_ptr, T, t, 3, ELEM) + offs
        if FIRST:
            buf = g
        else:
            buf = tl.load(buf_ptr, mask=mask).to(COMPUTE) * momentum + one_minus_dampening * g
        cast_store(buf_ptr, buf, mask)
        if NESTEROV:
            g = g + momentum * buf
        else:
            g = buf
    cast_store(p_ptr, p - lr * g, mask)


@triton.jit
def adam_kernel(hp_ptr, table_ptr, T, ELEM: tl.constexpr, COMPUTE: tl.constexpr, MAXIMIZE: tl.constexpr,
                HAS_WD: tl.constexpr, DECOUPLED: tl.constexpr, AMSGRAD: tl.constexpr, BLOCK: tl.constexpr):
    """Adam/AdamW: m = lerp(m, g, 1 - beta1); v = beta2 v + (1 - beta2) g^2 (vmax = max(vmax, v));
    p -= step_size m / (sqrt(v) / bc2_sqrt + eps).  Weight decay: g += wd p, or (DECOUPLED) p *= decay.
    hp: step_size = lr / (1 - beta1^t), 1 - beta1, beta2, 1 - beta2, eps, wd, decay = 1 - lr wd,
    bc2_sqrt = sqrt(1 - beta2^t).  Table rows: n, p, grad, exp_avg, exp_avg_sq, max_exp_avg_sq."""
    step_size = tl.load(hp_ptr).to(COMPUTE)
    w1 = tl.load(hp_ptr + 1).to(COMPUTE)
    beta2 = tl.load(hp_ptr + 2).to(COMPUTE)
    w2 = tl.load(hp_ptr + 3).to(COMPUTE)
    eps = tl.load(hp_ptr + 4).to(COMPUTE)
    weight_decay = tl.load(hp_ptr + 5).to(COMPUTE)
    decay = tl.load(hp_ptr + 6).to(COMPUTE)
    bc2_sqrt = tl.load(hp_ptr + 7).to(COMPUTE)
    t, offs, mask, p_ptr, p, g = _tensor_block(table_ptr, T, ELEM, COMPUTE, MAXIMIZE, BLOCK)
    m_ptr = _column(table_ptr, T, t, 3, ELEM) + offs
    v_ptr = _column(table_ptr, T, t, 4, ELEM) + offs
    if HAS_WD:
        if DECOUPLED:
            p = p * decay
        else:
            g = g + weight_decay * p
    m = _lerp(tl.load(m_ptr, mask=mask).to(COMPUTE), g, w1)
    v = tl.load(v_ptr, mask=mask).to(COMPUTE) * beta2 + w2 * (g * g)
    cast_store(m_ptr, m, mask)
    cast_store(v_ptr, v, mask)
    if AMSGRAD:
        vmax_ptr = _column(table_ptr, T, t, 5, ELEM) + offs
        v = tl.maximum(tl.load(vmax_ptr, mask=mask).to(COMPUTE), v)
        cast_store(vmax_ptr, v, mask)
    denom = tl.sqrt(v) / bc2_sqrt + eps
    cast_store(p_ptr, p - step_size * (m / denom), mask)


@triton.jit
def rmsprop_kernel(hp_ptr, table_ptr, T, ELEM: tl.constexpr, COMPUTE: tl.constexpr, MAXIMIZE: tl.constexpr,
                   HAS_WD: tl.constexpr, CENTERED: tl.constexpr, MOMENTUM: tl.constexpr, BLOCK: tl.constexpr):
    """sq = alpha sq + (1 - alpha) g^2; avg = sqrt(sq - ga^2 if CENTERED (ga = lerp(ga, g, 1 - alpha))
    else sq) + eps; buf = momentum buf + g / avg, p -= lr buf (or p -= lr g / avg).
    hp: lr, alpha, 1 - alpha, eps, wd, momentum.
    Table rows: n, p, grad, square_avg, grad_avg, momentum_buffer."""
    lr = tl.load(hp_ptr).to(COMPUTE)
    alpha = tl.load(hp_ptr + 1).to(COMPUTE)
    w = tl.load(hp_ptr + 2).to(COMPUTE)
    eps = tl.load(hp_ptr + 3).to(COMPUTE)
    weight_decay = tl.load(hp_ptr + 4).to(COMPUTE)
    momentum = tl.load(hp_ptr + 5).to(COMPUTE)
    t, offs, mask, p_ptr, p, g = _tensor_block(table_ptr, T, ELEM, COMPUTE, MAXIMIZE, BLOCK)
    sq_ptr = _column(table_ptr, T, t, 3, ELEM) + offs
    if HAS_WD:
        g = g + weight_decay * p
    sq = tl.load(sq_ptr, mask=mask).to(COMPUTE) * alpha + w * (g * g)
    cast_store(sq_ptr, sq, mask)
    if CENTERED:
        ga_ptr = _column(table_ptr, T, t, 4, ELEM) + offs
        ga = _lerp(tl.load(ga_ptr, mask=mask).to(COMPUTE), g, w)
        cast_store(ga_ptr, ga, mask)
        avg = tl.sqrt(sq - ga * ga) + eps
    else:
        avg = tl.sqrt(sq) + eps
    if MOMENTUM:
        buf_ptr = _column(table_ptr, T, t, 5, ELEM) + offs
        buf = tl.load(buf_ptr, mask=mask).to(COMPUTE) * momentum + g / avg
        cast_store(buf_ptr, buf, mask)
        cast_store(p_ptr, p - lr * buf, mask)
    else:
        cast_store(p_ptr, p - lr * (g / avg), mask)


@triton.jit
def adagrad_kernel(hp_ptr, table_ptr, T, ELEM: tl.constexpr, COMPUTE: tl.constexpr, MAXIMIZE: tl.constexpr,
                   HAS_WD: tl.constexpr, BLOCK: tl.constexpr):
    """sum += g^2; p -= clr g / (sqrt(sum) + eps), clr = lr / (1 + (step - 1) lr_decay).
    hp: clr, eps, wd.  Table rows: n, p, grad, sum."""
    clr = tl.load(hp_ptr).to(COMPUTE)
    eps = tl.load(hp_ptr + 1).to(COMPUTE)
    weight_decay = tl.load(hp_ptr + 2).to(COMPUTE)
    t, offs, mask, p_ptr, p, g = _tensor_block(table_ptr, T, ELEM, COMPUTE, MAXIMIZE, BLOCK)
    s_ptr = _column(table_ptr, T, t, 3, ELEM) + offs
    if HAS_WD:
        g = g + weight_decay * p
    s = tl.load(s_ptr, mask=mask).to(COMPUTE) + g * g
    cast_store(s_ptr, s, mask)
    cast_store(p_ptr, p - clr * (g / (tl.sqrt(s) + eps)), mask)


# ------------------------------------------------------------------ launchers
_ELEM = {"float32": tl.float32, "float64": tl.float64, "float16": tl.float16, "bfloat16": tl.bfloat16}


def multi_tensor_step(kernel, columns, hyper, constexprs):
    """Launch ``kernel`` over tensors given as ``columns``: one list [param, grad, *state] per tensor.

    All tensors share one device and dtype and are contiguous; ``None`` state
    entries (unused by the kernel's constexprs) become null addresses.
    ``hyper``: the kernel's hyper-parameters in the order its docstring lists them.
    """
    p0 = columns[0][0]
    dev = p0.device.type
    rows = 1 + max(len(c) for c in columns)
    groups = {}
    for col in columns:
        groups.setdefault(elementwise_block(col[0].numel(), dev), []).append(col)
    if gpu_blocks(dev):
        groups = {elementwise_block(1, dev): list(columns)}
    hp = np.asarray(hyper, dtype=np.float64)
    cexpr = dict(constexprs, ELEM=_ELEM[p0.dtype.name], COMPUTE=compute_type(p0.dtype))
    for block, cols in groups.items():
        T = len(cols)
        table = np.zeros((rows, T), dtype=np.int64)
        for t, col in enumerate(cols):
            table[0, t] = col[0].numel()
            for r, x in enumerate(col, start=1):
                table[r, t] = 0 if x is None else x.data_ptr()
        buf = hp.tobytes() + table.tobytes()
        st = Storage(len(buf), p0.device)       # hyper-parameters then the table, one host -> device copy
        st.copy_from_host(np.frombuffer(buf, np.uint8).ctypes.data, len(buf), 0)
        max_n = max(c[0].numel() for c in cols)
        launch(kernel, (triton.cdiv(max_n, block), T), dev,
               [Ptr(st.ptr, np.dtype(np.float64)), Ptr(st.ptr + hp.nbytes, np.dtype(np.int64)), T],
               dict(cexpr, BLOCK=block))
