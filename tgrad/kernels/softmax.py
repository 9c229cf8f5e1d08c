"""Softmax / log-softmax row kernels and their fused backward kernels.

Every tensor is addressed as a strided 3-D view (OUTER, K, INNER): the
softmax runs over K, and row ``m`` of the ``M = OUTER * INNER`` rows sits at
``(m // INNER) * stride_o + (m % INNER) * stride_i``.  So a softmax over any
dim needs no transpose.  Each program handles ROWS rows (many on cpu) and
loops over K in BLOCK_K chunks (online max/sum).
"""
import numpy as np
import triton
import triton.language as tl

from .runtime import launcher as T
from .runtime import Launch, Sites, blas, cdiv, gpu_blocks, next_pow2
from .runtime.native import aten_twin
from ._lang import cast_store, compute_type, kptr, lanes_add, lanes_fold, row_offsets, row_tiles, sleef_exp, sleef_log


@triton.jit
def _aten_softmax_inner(x_ptr, y_ptr, rows, rmask, xrow, yrow, M, K, INNER, sx_k, sy_k, LOG: tl.constexpr,
                        ROWS: tl.constexpr, BLOCK_K: tl.constexpr, NT: tl.constexpr):
    """(log_)softmax over K of float32 rows m = outer INNER + inner (INNER > 1) in ATen's cpu order
    (SoftMaxKernel.cpp): the max, s = sum_k e[m, k] left to right, y = e / s (LOG: (x - max) - log s, SLEEF's
    log).  e = SLEEF's exp, except the scalar tail: the rows the walk over the NT threads' chunks of the M rows
    leaves out of its 8-row vectors (runs of fewer than 8 inside a chunk and an inner row) take the correctly
    rounded exp (glibc's expf; here the float64 exp rounded).  tgrad/testing/aten_softmax_dim.py is the model."""
    mx = tl.full([ROWS], float("-inf"), tl.float32)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        mx = tl.maximum(mx, tl.max(tl.load(x_ptr + xrow[:, None] + cols[None, :] * sx_k, mask=m,
                                           other=float("-inf")).to(tl.float32), axis=1))
    CH = (M + NT - 1) // NT                           # at::parallel_for's chunk of the M rows
    b = (rows // CH) * CH
    r0 = rows - rows % INNER
    rs = tl.maximum(b, r0)
    re = tl.minimum(tl.minimum(b + CH, M), r0 + INNER)
    vec = rows < rs + ((re - rs) // 8) * 8
    s = tl.zeros([ROWS], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        d = tl.load(x_ptr + xrow[:, None] + cols[None, :] * sx_k, mask=m, other=0.0).to(tl.float32) - mx[:, None]
        e = tl.where(vec[:, None], sleef_exp(d), tl.exp(d.to(tl.float64)).to(tl.float32))
        if not LOG:
            cast_store(y_ptr + yrow[:, None] + cols[None, :] * sy_k, e, m)
        e = tl.where(m, e, 0.0)
        e = tl.where(cols[None, :] == k0, e + s[:, None], e)                # the sum so far enters column k0
        s = tl.sum(tl.where(cols[None, :] == k0 + BLOCK_K - 1, tl.cumsum(e, axis=1), 0.0), axis=1)
    if LOG:
        log_s = sleef_log(s)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        if LOG:
            y = (tl.load(x_ptr + xrow[:, None] + cols[None, :] * sx_k, mask=m, other=0.0).to(tl.float32)
                 - mx[:, None]) - log_s[:, None]
        else:
            y = tl.load(y_ptr + yrow[:, None] + cols[None, :] * sy_k, mask=m, other=1.0) / s[:, None]
        cast_store(y_ptr + yrow[:, None] + cols[None, :] * sy_k, y, m)


@triton.jit
def softmax_kernel(x_ptr, y_ptr, M, K, INNER, sx_o, sx_k, sx_i, sy_o, sy_k, sy_i,
                   LOG: tl.constexpr, COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK_K: tl.constexpr,
                   LANES: tl.constexpr, NT: tl.constexpr = 0):
    """y[m, k] = exp(x[m, k] - mx[m]) / s[m] (LOG: x[m, k] - mx[m] - log s[m]); s[m] = sum_k exp(x[m, k] - mx[m]).

    LANES (8 or 1; 0: an online max in one pass, tl.exp): ATen's cpu float32 lastdim order, the max first, then
    s in LANES lanes (lanes_add / lanes_fold) with SLEEF's exp and log, y = e * (1 / s) for softmax.  NT > 0
    (float32 over a non-last dim on cpu, at NT threads): ATen's order there (``_aten_softmax_inner``)."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    xrow = row_offsets(rows, INNER, sx_o, sx_i)
    yrow = row_offsets(rows, INNER, sy_o, sy_i)
    if NT > 0:
        _aten_softmax_inner(x_ptr, y_ptr, rows, rmask, xrow, yrow, M, K, INNER, sx_k, sy_k, LOG, ROWS, BLOCK_K, NT)
        return
    mx, s = row_max_sum_exp(x_ptr, xrow, rmask, K, sx_k, y_ptr, yrow, sy_k, COMPUTE, ROWS, BLOCK_K, LANES,
                            LANES > 0 and not LOG)
    if LANES == 0:
        mx = tl.where(mx == float("-inf"), 0.0, mx)
        log_s = tl.log(s)
    elif LOG:
        log_s = sleef_log(s)
    else:
        s = 1.0 / s
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        if LANES > 0 and not LOG:                   # y holds the exps already
            y = tl.load(y_ptr + yrow[:, None] + cols[None, :] * sy_k, mask=m, other=0.0).to(COMPUTE) * s[:, None]
        else:
            x = tl.load(x_ptr + xrow[:, None] + cols[None, :] * sx_k, mask=m, other=0.0).to(COMPUTE)
            if LOG:
                y = (x - mx[:, None]) - log_s[:, None]   # not x - lse: keeps precision for large x
            else:
                y = tl.exp(x - mx[:, None]) / s[:, None]
        cast_store(y_ptr + yrow[:, None] + cols[None, :] * sy_k, y, m)


@triton.jit
def row_max_sum_exp(x_ptr, xrow, rmask, K, sx_k, e_ptr, erow, se_k, COMPUTE: tl.constexpr, ROWS: tl.constexpr,
                    BLOCK_K: tl.constexpr, LANES: tl.constexpr, STORE_E: tl.constexpr):
    """(mx, s): mx[m] = max_k x[m, k], s[m] = sum_k exp(x[m, k] - mx[m]) for a block of rows.

    LANES 0: one pass with an online max (s rescaled); 8 or 1: ATen's cpu float32 order (the max, then
    the sum of SLEEF exps in LANES lanes; STORE_E: the exps also stored at e_ptr + erow + k se_k)."""
    mx = tl.full([ROWS], float("-inf"), COMPUTE)
    if LANES == 0:
        s = tl.zeros([ROWS], COMPUTE)
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + tl.arange(0, BLOCK_K)
            m = rmask[:, None] & (cols[None, :] < K)
            x = tl.load(x_ptr + xrow[:, None] + cols[None, :] * sx_k, mask=m, other=float("-inf")).to(COMPUTE)
            new = tl.maximum(mx, tl.max(x, axis=1))
            safe = tl.where(new == float("-inf"), 0.0, new)
            s = s * tl.exp(mx - safe) + tl.sum(tl.exp(x - safe[:, None]), axis=1)
            mx = new
    else:
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + tl.arange(0, BLOCK_K)
            m = rmask[:, None] & (cols[None, :] < K)
            x = tl.load(x_ptr + xrow[:, None] + cols[None, :] * sx_k, mask=m, other=float("-inf")).to(COMPUTE)
            mx = tl.maximum(mx, tl.max(x, axis=1))
        acc = tl.zeros([ROWS, LANES], COMPUTE)
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + tl.arange(0, BLOCK_K)
            m = rmask[:, None] & (cols[None, :] < K)
            x = tl.load(x_ptr + xrow[:, None] + cols[None, :] * sx_k, mask=m, other=0.0).to(COMPUTE)
            e = tl.where(m, sleef_exp(x - mx[:, None]), 0.0)
            if STORE_E:
                cast_store(e_ptr + erow[:, None] + cols[None, :] * se_k, e, m)
            acc = lanes_add(acc, e, ROWS, BLOCK_K, LANES)
        s = lanes_fold(acc, ROWS, LANES)
    return mx, s


@triton.jit
def softmax_backward_kernel(dy_ptr, y_ptr, dx_ptr, M, K, INNER,
                            sd_o, sd_k, sd_i, sy_o, sy_k, sy_i, so_o, so_k, so_i,
                            LOG: tl.constexpr, COMPUTE: tl.constexpr, ROWS: tl.constexpr,
                            BLOCK_K: tl.constexpr, LANES: tl.constexpr):
    """dx = y * (dy - sum_k dy*y) (softmax) or dx = dy - exp(y) * sum_k dy (LOG; y = log_softmax).

    LANES (8 or 1): ATen's cpu float32 lastdim order (the sums in LANES lanes, SLEEF's exp, LOG's
    dy - exp(y) sum one fma as the compiler contracts it); 0: tl.sum and tl.exp."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    drow = row_offsets(rows, INNER, sd_o, sd_i)
    yrow = row_offsets(rows, INNER, sy_o, sy_i)
    orow = row_offsets(rows, INNER, so_o, so_i)
    acc = tl.zeros([ROWS], COMPUTE)
    if LANES > 0:
        lanes = tl.zeros([ROWS, LANES], COMPUTE)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        dy = tl.load(dy_ptr + drow[:, None] + cols[None, :] * sd_k, mask=m, other=0.0).to(COMPUTE)
        if not LOG:
            y = tl.load(y_ptr + yrow[:, None] + cols[None, :] * sy_k, mask=m, other=0.0).to(COMPUTE)
            dy = dy * y
        if LANES > 0:
            lanes = lanes_add(lanes, dy, ROWS, BLOCK_K, LANES)
        else:
            acc += tl.sum(dy, axis=1)
    if LANES > 0:
        acc = lanes_fold(lanes, ROWS, LANES)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        dy = tl.load(dy_ptr + drow[:, None] + cols[None, :] * sd_k, mask=m, other=0.0).to(COMPUTE)
        y = tl.load(y_ptr + yrow[:, None] + cols[None, :] * sy_k, mask=m, other=0.0).to(COMPUTE)
        if LOG and LANES > 0:
            dx = tl.fma(-sleef_exp(y), acc[:, None], dy)
        elif LOG:
            dx = dy - tl.exp(y) * acc[:, None]
        elif LANES > 0:
            dx = (dy - acc[:, None]) * y
        else:
            dx = y * (dy - acc[:, None])
        cast_store(dx_ptr + orow[:, None] + cols[None, :] * so_k, dx, m)


def _softmax_twin(args, cx, grid, backward=False):
    """aten_cpu.c's twin of a cpu launch of ``softmax_kernel`` (``backward``: ``softmax_backward_kernel``, not LOG) in
    ATen's float32 lastdim order (LANES > 0, NT 0), a row at a time; None where the kernel's tape runs.  Where two
    NaNs meet in a binary op the tape's numpy loops give the first operand's over (ROWS > 1, BLOCK_K) blocks of a
    whole number of 16-lane vectors, the twin's rule; one-row blocks are 1-D loops that give the second's."""
    f = aten_twin("softmax_backward_f32" if backward else "softmax_f32")
    ptrs = args[:3] if backward else args[:2]
    if (f is None or not cx["LANES"] or cx.get("NT", 0) or cx["COMPUTE"] is not tl.float32 or backward and cx["LOG"]
            or cx["ROWS"] < 2 or cx["ROWS"] * cx["BLOCK_K"] % 16
            or any(p.dtype != np.float32 for p in ptrs)):
        return None
    ints = args[len(ptrs):]
    return T.CpuTwin(f, *ints, cx["BLOCK_K"], cx["LANES"], int(bool(cx["LOG"])))


T.cpu_twin(softmax_kernel, _softmax_twin)
T.cpu_twin(softmax_backward_kernel, lambda args, cx, grid: _softmax_twin(args, cx, grid, backward=True))

_SITES = Sites()


def aten_lanes(xdt, ydt, K, inner):
    """The LANES constexpr: ATen's cpu float32 lastdim order (8 lanes, 1 for rows shorter than a vector), or 0
    (other dtypes and dims: one online pass)."""
    if inner != 1 or xdt.name != "float32" or ydt.name != "float32":
        return 0
    return 8 if K >= 8 else 1


def softmax(x, y, geom, log):
    """y = (log_)softmax of x over K; geom = (M, K, INNER, x strides (o, k, i), y strides)."""
    M, K, inner, sx, sy = geom
    if M == 0 or K == 0:
        return y
    dev = y._storage.launch_device
    nt = 0                      # float32 over a non-last dim on cpu: ATen's order, its row split over the threads
    if inner > 1 and x.dtype.name == y.dtype.name == "float32" and not gpu_blocks(dev):
        nt = max(1, min(blas.threads(), M))
    key = ("fwd", M, K, inner, tuple(sx), tuple(sy), x.dtype, y.dtype, log, dev, T.FORCE_GPU_BLOCKS, nt)
    site = _SITES.get(key)
    if site is None:
        rows, bk = row_tiles(M, K, dev)
        site = _SITES.add(key, Launch(softmax_kernel, (cdiv(M, rows),), dev, [kptr(x), kptr(y), M, K, inner, *sx, *sy],
                                      {"LOG": log, "COMPUTE": compute_type(y.dtype), "ROWS": rows, "BLOCK_K": bk,
                                       "LANES": aten_lanes(x.dtype, y.dtype, K, inner), "NT": nt}))
    site(x.data_ptr(), y.data_ptr())
    return y


def softmax_backward(dy, y, dx, geom, log):
    """dx from dy and the forward output y; geom = (M, K, INNER, dy strides, y strides, dx strides)."""
    M, K, inner, sd, sy, so = geom
    if M == 0 or K == 0:
        return dx
    dev = dx._storage.launch_device
    key = ("bwd", M, K, inner, tuple(sd), tuple(sy), tuple(so), dy.dtype, y.dtype, dx.dtype, log, dev,
           T.FORCE_GPU_BLOCKS)
    site = _SITES.get(key)
    if site is None:
        rows, bk = row_tiles(M, K, dev)
        site = _SITES.add(key, Launch(softmax_backward_kernel, (cdiv(M, rows),), dev,
                                      [kptr(dy), kptr(y), kptr(dx), M, K, inner, *sd, *sy, *so],
                                      {"LOG": log, "COMPUTE": compute_type(dx.dtype), "ROWS": rows, "BLOCK_K": bk,
                                       "LANES": aten_lanes(dy.dtype, dx.dtype, K, inner)}))
    site(dy.data_ptr(), y.data_ptr(), dx.data_ptr())
    return dx
