"""Layer-norm and batch-norm kernels (forward and fused backward).

Layer norm: x is a contiguous (M, K) matrix, one row per normalized group.
Batch norm: x is a contiguous (N, C, L) tensor, one program per channel
walking its N * L elements.
"""
import struct

import numpy as np
import triton
import triton.language as tl

from .runtime import cdiv, gpu_blocks, launch, next_pow2
from .runtime import launcher as T
from .runtime.native import cnn_twins, native_helper
from ._lang import cast_store, compute_type, fma_rows, kptr, lanes_add, lanes_fold, row_tiles, split64


@triton.jit
def _row_stats(x_ptr, rows, rmask, K, eps, COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK_K: tl.constexpr):
    """(mean, rstd) of each row of a contiguous (M, K) matrix; two passes for a stable variance."""
    acc = tl.zeros([ROWS], COMPUTE)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        acc += tl.sum(tl.load(x_ptr + rows[:, None] * K + cols[None, :], mask=m, other=0.0).to(COMPUTE), axis=1)
    mean = acc / K
    acc = tl.zeros([ROWS], COMPUTE)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        x = tl.load(x_ptr + rows[:, None] * K + cols[None, :], mask=m, other=0.0).to(COMPUTE)
        d = tl.where(m, x - mean[:, None], 0.0)
        acc += tl.sum(d * d, axis=1)
    return mean, 1.0 / tl.sqrt(acc / K + eps)


# ------------------------------------------------------------------ ATen's cpu float32 row moments
@triton.jit
def _moments_add(na, m1a, m2a, nb, m1b, m2b):
    """AddMomentsVec: moments (count na, mean m1a, m2 m2a) merged into (nb, m1b, m2b); float32 counts."""
    n = nb + na
    c = na / tl.where(n == 0, 1.0, n)
    delta = m1a - m1b
    return n, m1b + c * delta, tl.fma(delta, delta * c * nb, m2b + m2a)


@triton.jit
def _pairs(v, A: tl.constexpr, T: tl.constexpr, W: tl.constexpr):
    """v[:, 0::2], v[:, 1::2] of v [A, T, W]."""
    return tl.split(tl.permute(tl.reshape(v, [A, T // 2, 2, W]), [0, 1, 3, 2]))


@triton.jit
def _first_half(v, A: tl.constexpr, T: tl.constexpr, W: tl.constexpr):
    """[A, T, W]: v [A, T / 2, W] then zeros."""
    return tl.reshape(tl.permute(tl.join(v, tl.zeros_like(v)), [0, 3, 1, 2]), [A, T, W])


@triton.jit
def _lanes8(v, R: tl.constexpr):
    """The 8 columns [R] of v [R, 8]."""
    a, b = _pairs(tl.reshape(v, [R, 8, 1]), R, 8, 1)         # columns 0, 2, 4, 6 and 1, 3, 5, 7
    a0, a1 = _pairs(tl.reshape(a, [R, 4, 1]), R, 4, 1)
    b0, b1 = _pairs(tl.reshape(b, [R, 4, 1]), R, 4, 1)
    c0, c4 = tl.split(tl.reshape(a0, [R, 2]))
    c2, c6 = tl.split(tl.reshape(a1, [R, 2]))
    c1, c5 = tl.split(tl.reshape(b0, [R, 2]))
    c3, c7 = tl.split(tl.reshape(b1, [R, 2]))
    return c0, c1, c2, c3, c4, c5, c6, c7


@triton.jit
def _row_block(x_ptr, rows, rmask, K: tl.constexpr, KP: tl.constexpr):
    """x[rows, 0:KP] of a contiguous (M, K) matrix, 0 past K and in masked rows."""
    cols = tl.arange(0, KP)
    return tl.load(x_ptr + rows[:, None] * K + cols[None, :], mask=rmask[:, None] & (cols[None, :] < K), other=0.0)


@triton.jit
def _int32_full(v: tl.constexpr):
    return tl.full([1], v, tl.int32)


@triton.jit
def _halves(t):
    return tl.split(t)


def _rule_row_moments(x_ptr, rows, rmask, K, NV, NC, DEPTH, BG, LEVELS, ROWS):
    """native_helper rule of ``_aten_row_moments`` (float32 x): the rows loaded as one block, aten_cpu.c's
    ``row_moments`` of it, split into (mean, var)."""
    k = getattr(K, "value", K)
    if x_ptr.dtype.element_ty != tl.float32:
        return None
    blk = _row_block(x_ptr, rows, rmask, k, next_pow2(k))
    return (blk, _int32_full(k)), [getattr(ROWS, "value", ROWS), 2], "row_moments", _halves


@native_helper("row_moments", _rule_row_moments)
@triton.jit
def _aten_row_moments(x_ptr, rows, rmask, K: tl.constexpr, NV: tl.constexpr, NC: tl.constexpr, DEPTH: tl.constexpr,
                      BG: tl.constexpr, LEVELS: tl.constexpr, ROWS: tl.constexpr):
    """(mean, biased var) [ROWS] of contiguous float32 rows of K elements in ATen's cpu order (RowwiseMoments,
    tgrad/testing/aten_moments.py): NV 8-lane vectors, Welford over NC chunks of 16, the chunks merged by a
    binary cascade of DEPTH levels (BG = 2^LEVELS >= NC chunks a block), the scalar tail, then the 8 lanes."""
    R: tl.constexpr = ROWS
    g = tl.arange(0, BG)[None, :, None]
    ln = tl.arange(0, 8)[None, None, :]
    base = rows[:, None, None] * K
    m1 = tl.zeros([R, BG, 8], tl.float32)
    m2 = tl.zeros([R, BG, 8], tl.float32)
    one = tl.full([1, 1, 1], 1.0, tl.float32)
    for j in tl.static_range(16):                      # Welford inside the chunks, all chunks at once
        if j < NV:
            v = g * 16 + j
            if (BG - 1) * 16 + j < NV:
                x = tl.load(x_ptr + base + v * 8 + ln, mask=rmask[:, None, None], other=0.0).to(tl.float32)
            else:
                x = tl.load(x_ptr + base + v * 8 + ln, mask=rmask[:, None, None] & (v < NV), other=0.0)
                x = x.to(tl.float32)
            d = x - m1
            n1 = tl.fma(d, one / (j + 1), m1)
            n2 = tl.fma(d, x - n1, m2)
            if j < NV - (NC - 1) * 16:                 # a step of every chunk (padding chunks stay 0)
                m1 = n1
                m2 = n2
            else:                                      # past the last chunk's end
                ok = v < NV
                m1 = tl.where(ok, n1, m1)
                m2 = tl.where(ok, n2, m2)
    cnt = tl.minimum(tl.maximum(NV - g * 16, 0), 16).to(tl.float32)          # [1, BG, 1]
    an = tl.zeros([1, 1], tl.float32)                 # the cascade's result
    a1 = tl.zeros([R, 8], tl.float32)
    a2 = tl.zeros([R, 8], tl.float32)
    for lv in tl.static_range(LEVELS + 1):            # level lv: node t = chunks t 2^lv .. (t + 1) 2^lv - 1
        t = -1                                        # the node joining the result at this level
        if DEPTH == 1:
            if lv == NC - 1:
                t = 0
        elif lv == 0:
            if NC % 2 == 1:
                t = NC - 1
        elif lv < DEPTH - 1:
            if (NC >> lv) % 2 == 1:
                t = (NC >> lv) - 1
        elif lv == DEPTH - 1:
            if NC < (1 << DEPTH):
                t = 0
        elif lv == DEPTH:
            if NC == (1 << DEPTH):
                t = 0
        if t >= 0:
            sel = g == t
            an, a1, a2 = _moments_add(tl.sum(tl.where(sel, cnt, 0.0), axis=1), tl.sum(tl.where(sel, m1, 0.0), axis=1),
                                      tl.sum(tl.where(sel, m2, 0.0), axis=1), an, a1, a2)
        if lv < LEVELS:                               # pairs: the right node merged into the left
            cl, cr = _pairs(cnt, 1, BG, 1)
            l1, r1 = _pairs(m1, R, BG, 8)
            l2, r2 = _pairs(m2, R, BG, 8)
            cn, n1, n2 = _moments_add(cr, r1, r2, cl, l1, l2)
            cnt = _first_half(cn, 1, BG, 1)
            m1 = _first_half(n1, R, BG, 8)
            m2 = _first_half(n2, R, BG, 8)
    s1 = tl.zeros([R], tl.float32)                    # the scalar tail: plain Welford steps
    s2 = tl.zeros([R], tl.float32)
    for i in tl.static_range(K - NV * 8):
        x = tl.load(x_ptr + rows * K + NV * 8 + i, mask=rmask, other=0.0).to(tl.float32)
        d = x - s1
        s1 = s1 + d / (i + 1.0)
        s2 = s2 + d * (x - s1)
    b1 = _lanes8(a1, R)
    b2 = _lanes8(a2, R)
    for i in tl.static_range(8):                      # AddMoments of each lane into the tail's moments
        delta = b1[i] - s1
        c = NV / (K - NV * 8 + (i + 1) * NV)          # exact: float32 counts < 2^24, a correctly rounded quotient
        s1 = tl.fma(delta, c, s1)
        s2 = s2 + tl.fma(delta * delta * c, (K - NV * 8 + i * NV) * 1.0, b2[i])
    return s1, s2 / K


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, K, eps_hi, eps_lo,
                      HAS_W: tl.constexpr, HAS_B: tl.constexpr, COMPUTE: tl.constexpr, ROWS: tl.constexpr,
                      BLOCK_K: tl.constexpr, ATEN: tl.constexpr = False, KC: tl.constexpr = 0, NV: tl.constexpr = 0,
                      NC: tl.constexpr = 0, DEPTH: tl.constexpr = 0, BG: tl.constexpr = 1, LEVELS: tl.constexpr = 0):
    """y[m, k] = (x[m, k] - mean[m]) * rstd[m] * w[k] + b[k]; x, y contiguous (M, K).  ATEN (float32, K = KC):
    mean and variance in ATen's cpu order (``_aten_row_moments``), the affine step one fma."""
    eps = tl.cast(eps_hi, COMPUTE) + tl.cast(eps_lo, COMPUTE)
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    if ATEN:
        mean, var = _aten_row_moments(x_ptr, rows, rmask, KC, NV, NC, DEPTH, BG, LEVELS, ROWS)
        rstd = 1.0 / tl.sqrt(var + eps)
    else:
        mean, rstd = _row_stats(x_ptr, rows, rmask, K, eps, COMPUTE, ROWS, BLOCK_K)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        x = tl.load(x_ptr + rows[:, None] * K + cols[None, :], mask=m, other=0.0).to(COMPUTE)
        y = (x - mean[:, None]) * rstd[:, None]
        if ATEN and HAS_W and HAS_B:
            y = tl.fma(y, tl.load(w_ptr + cols, mask=cols < K, other=0.0).to(COMPUTE)[None, :],
                       tl.load(b_ptr + cols, mask=cols < K, other=0.0).to(COMPUTE)[None, :])
        elif ATEN and HAS_B:                           # ATen's scalar loop: (x - mean) rstd 1 + b, one fma
            y = tl.fma(x - mean[:, None], rstd[:, None],
                       tl.load(b_ptr + cols, mask=cols < K, other=0.0).to(COMPUTE)[None, :])
        else:
            if HAS_W:
                y = y * tl.load(w_ptr + cols, mask=cols < K, other=0.0).to(COMPUTE)[None, :]
            if HAS_B:
                y = y + tl.load(b_ptr + cols, mask=cols < K, other=0.0).to(COMPUTE)[None, :]
        cast_store(y_ptr + rows[:, None] * K + cols[None, :], y, m)


@triton.jit
def layer_norm_backward_kernel(dy_ptr, x_ptr, w_ptr, dx_ptr, M, K, eps_hi, eps_lo,
                               HAS_W: tl.constexpr, COMPUTE: tl.constexpr, ROWS: tl.constexpr,
                               BLOCK_K: tl.constexpr, ATEN: tl.constexpr = False, KC: tl.constexpr = 0,
                               NV: tl.constexpr = 0, NC: tl.constexpr = 0, DEPTH: tl.constexpr = 0,
                               BG: tl.constexpr = 1, LEVELS: tl.constexpr = 0, VB: tl.constexpr = 1):
    """dx = rstd * (h - mean(h) - xhat * mean(h * xhat)), h = dy * w; mean/rstd recomputed from x.  ATEN (float32,
    K = KC): ATen's cpu order (LayerNormBackwardKernelImplInternal): the forward's moments, ds = sum dy x w,
    db = sum dy w (``_aten_vec_sums``), b = (db mean - ds) rstd^3 / K, c = -b mean - db rstd / K,
    dx = rstd dy w + b x + c, with the fmas PyTorch 2.13's AVX2 build runs."""
    eps = tl.cast(eps_hi, COMPUTE) + tl.cast(eps_lo, COMPUTE)
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    if ATEN:
        mean, var = _aten_row_moments(x_ptr, rows, rmask, KC, NV, NC, DEPTH, BG, LEVELS, ROWS)
        a = 1.0 / tl.sqrt(var + eps)
        db, ds = _aten_vec_sums(dy_ptr, x_ptr, w_ptr, rows * K, rmask, tl.zeros([ROWS], tl.float32), K, HAS_W,
                                ROWS, VB)
        scale = 1.0 / K
        b = tl.fma(db, mean, -ds) * a * a * a * scale
        c = tl.fma(-b, mean, -(db * a * scale))
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + tl.arange(0, BLOCK_K)
            m = rmask[:, None] & (cols[None, :] < K)
            x = tl.load(x_ptr + rows[:, None] * K + cols[None, :], mask=m, other=0.0).to(tl.float32)
            h = a[:, None] * tl.load(dy_ptr + rows[:, None] * K + cols[None, :], mask=m, other=0.0).to(tl.float32)
            if HAS_W:
                h = h * tl.load(w_ptr + cols, mask=cols < K, other=0.0).to(tl.float32)[None, :]
            cast_store(dx_ptr + rows[:, None] * K + cols[None, :], tl.fma(b[:, None], x, h) + c[:, None], m)
    else:
        mean, rstd = _row_stats(x_ptr, rows, rmask, K, eps, COMPUTE, ROWS, BLOCK_K)
        sh = tl.zeros([ROWS], COMPUTE)
        shx = tl.zeros([ROWS], COMPUTE)
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + tl.arange(0, BLOCK_K)
            m = rmask[:, None] & (cols[None, :] < K)
            x = tl.load(x_ptr + rows[:, None] * K + cols[None, :], mask=m, other=0.0).to(COMPUTE)
            h = tl.load(dy_ptr + rows[:, None] * K + cols[None, :], mask=m, other=0.0).to(COMPUTE)
            if HAS_W:
                h = h * tl.load(w_ptr + cols, mask=cols < K, other=0.0).to(COMPUTE)[None, :]
            sh += tl.sum(h, axis=1)
            shx += tl.sum(tl.where(m, h * (x - mean[:, None]) * rstd[:, None], 0.0), axis=1)
        a = sh / K
        b = shx / K
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + tl.arange(0, BLOCK_K)
            m = rmask[:, None] & (cols[None, :] < K)
            x = tl.load(x_ptr + rows[:, None] * K + cols[None, :], mask=m, other=0.0).to(COMPUTE)
            h = tl.load(dy_ptr + rows[:, None] * K + cols[None, :], mask=m, other=0.0).to(COMPUTE)
            if HAS_W:
                h = h * tl.load(w_ptr + cols, mask=cols < K, other=0.0).to(COMPUTE)[None, :]
            xh = (x - mean[:, None]) * rstd[:, None]
            cast_store(dx_ptr + rows[:, None] * K + cols[None, :],
                       rstd[:, None] * (h - a[:, None] - xh * b[:, None]), m)


def aten_moments_plan(K, device):
    """Constexprs of ``_aten_row_moments`` for rows of K float32 elements, None past 2^17 elements (2^13 on a GPU):
    KC = K, NV vectors, NC chunks, the cascade's DEPTH (ATen's CeilLog2), BG = 2^LEVELS >= NC."""
    if K == 0 or K > (8192 if gpu_blocks(device) else 131072):
        return None
    nv = K // 8
    nc = cdiv(nv, 16)
    bg = next_pow2(max(nc, 1))
    return {"KC": K, "NV": nv, "NC": nc, "DEPTH": 1 if nc <= 2 else (nc - 1).bit_length(), "BG": bg,
            "LEVELS": bg.bit_length() - 1}


def layer_norm(x, w, b, y, M, K, eps):
    """y = layer_norm of the contiguous (M, K) x (w, b: (K,) or None); float32 rows in ATen's cpu order."""
    if M == 0:
        return y
    dev = y._storage.launch_device
    rows, bk = row_tiles(M, K, dev)
    plan = aten_moments_plan(K, dev) if y.dtype.name == "float32" else None
    if plan is not None:
        rows = min(rows, max(1, 65536 // (plan["BG"] * 8 * 4)))
    launch(layer_norm_kernel, (cdiv(M, rows),), dev,
           [kptr(x), kptr(w if w is not None else x), kptr(b if b is not None else x), kptr(y), M, K,
            *split64(eps)],
           {"HAS_W": w is not None, "HAS_B": b is not None, "COMPUTE": compute_type(y.dtype), "ROWS": rows,
            "BLOCK_K": bk, **({"ATEN": True, **plan} if plan is not None else {})})
    return y


def layer_norm_backward(dy, x, w, dx, M, K, eps):
    """dx of layer_norm for contiguous (M, K) dy and x."""
    if M == 0:
        return dx
    dev = dx._storage.launch_device
    rows, bk = row_tiles(M, K, dev)
    plan = aten_moments_plan(K, dev) if dx.dtype.name == "float32" else None
    if plan is not None:
        rows = min(rows, max(1, 65536 // (plan["BG"] * 8 * 4)))
        vb = max(1, min(next_pow2(max(K // 8, 1)), VEC_BUDGET // rows))
        plan = {"ATEN": True, "VB": vb, **plan}
    launch(layer_norm_backward_kernel, (cdiv(M, rows),), dev,
           [kptr(dy), kptr(x), kptr(w if w is not None else x), kptr(dx), M, K, *split64(eps)],
           {"HAS_W": w is not None, "COMPUTE": compute_type(dx.dtype), "ROWS": rows, "BLOCK_K": bk,
            **(plan or {})})
    return dx


@triton.jit
def layer_norm_stats_kernel(x_ptr, mean_ptr, rstd_ptr, M, K, eps_hi, eps_lo, COMPUTE: tl.constexpr,
                            ROWS: tl.constexpr, BLOCK_K: tl.constexpr, ATEN: tl.constexpr = False,
                            KC: tl.constexpr = 0, NV: tl.constexpr = 0, NC: tl.constexpr = 0, DEPTH: tl.constexpr = 0,
                            BG: tl.constexpr = 1, LEVELS: tl.constexpr = 0, RSTD64: tl.constexpr = False):
    """mean [M], rstd = 1 / sqrt(var + eps) [M] of the rows of a contiguous (M, K) x (ATEN: ATen's float32 cpu
    order, the forward's ``_aten_row_moments``; RSTD64: rstd in double, as group_norm's)."""
    eps = tl.cast(eps_hi, COMPUTE) + tl.cast(eps_lo, COMPUTE)
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    if ATEN:
        mean, var = _aten_row_moments(x_ptr, rows, rmask, KC, NV, NC, DEPTH, BG, LEVELS, ROWS)
        if RSTD64:
            eps64 = tl.cast(eps_hi, tl.float64) + tl.cast(eps_lo, tl.float64)
            rstd = (1.0 / tl.sqrt(var.to(tl.float64) + eps64)).to(tl.float32)
        else:
            rstd = 1.0 / tl.sqrt(var + eps)
    else:
        mean, rstd = _row_stats(x_ptr, rows, rmask, K, eps, COMPUTE, ROWS, BLOCK_K)
    tl.store(mean_ptr + rows, mean, mask=rmask)
    tl.store(rstd_ptr + rows, rstd, mask=rmask)


@triton.jit
def layer_norm_param_backward_kernel(dy_ptr, x_ptr, mean_ptr, rstd_ptr, dw_ptr, db_ptr, M, K, CH,
                                     HAS_W: tl.constexpr, HAS_B: tl.constexpr, COMPUTE: tl.constexpr,
                                     ROUND: tl.constexpr, THREADS: tl.constexpr, BLOCK_R: tl.constexpr,
                                     BLOCK_N: tl.constexpr):
    """dw = sum_i dy_i xhat_i, db = sum_i dy_i over the rows of contiguous (M, K) dy, x in ATen's cpu order
    (LayerNormBackwardKernelImplInternal): THREADS buffers of CH rows each, row after row
    dw_t = fma(dy_i, fma(rstd_i, x_i, -rstd_i mean_i), dw_t), db_t = db_t + dy_i (buffers of x's dtype: ROUND,
    bf16 / fp16, rounds them after each row); then dw = 0 + dw_0 + dw_1 ... in COMPUTE."""
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    cm = cols < K
    dw = tl.zeros([BLOCK_N], COMPUTE)
    db = tl.zeros([BLOCK_N], COMPUTE)
    ones = tl.full([BLOCK_R, BLOCK_N], 1.0, COMPUTE)
    for t in tl.static_range(THREADS):
        bw = tl.zeros([BLOCK_N], COMPUTE)
        bb = tl.zeros([BLOCK_N], COMPUTE)
        r1 = tl.minimum(M, (t + 1) * CH)
        for i0 in range(t * CH, r1, BLOCK_R):
            rows = i0 + tl.arange(0, BLOCK_R)
            rm = rows < r1
            m = rm[:, None] & cm[None, :]
            off = rows.to(tl.int64)[:, None] * K + cols[None, :]
            dy = tl.load(dy_ptr + off, mask=m, other=0.0).to(COMPUTE)
            if HAS_W:
                a = tl.load(rstd_ptr + rows, mask=rm, other=0.0).to(COMPUTE)
                b = -a * tl.load(mean_ptr + rows, mask=rm, other=0.0).to(COMPUTE)
                x = tl.load(x_ptr + off, mask=m, other=0.0).to(COMPUTE)
                bw = fma_rows(bw, dy, tl.where(m, tl.fma(a[:, None], x, b[:, None]), 0.0), BLOCK_R, BLOCK_N, ROUND)
            if HAS_B:
                bb = fma_rows(bb, dy, ones, BLOCK_R, BLOCK_N, ROUND)
        dw = dw + bw
        db = db + bb
    if HAS_W:
        cast_store(dw_ptr + cols, dw, cm)
    if HAS_B:
        cast_store(db_ptr + cols, db, cm)


def _row_stats_launch(x, mean, rstd, M, K, eps, dev, ct, aten, rstd64):
    rows, bk = row_tiles(M, K, dev)
    plan = aten_moments_plan(K, dev) if aten else None
    if plan is not None:
        rows = min(rows, max(1, 65536 // (plan["BG"] * 8 * 4)))
    launch(layer_norm_stats_kernel, (cdiv(M, rows),), dev, [kptr(x), kptr(mean), kptr(rstd), M, K, *split64(eps)],
           {"COMPUTE": ct, "ROWS": rows, "BLOCK_K": bk,
            **({"ATEN": True, "RSTD64": rstd64, **plan} if plan is not None else {})})


def layer_norm_param_backward(dy, x, mean, rstd, dw, db, M, K, eps, threads=1):
    """(dw, db) of layer_norm for contiguous (M, K) dy and x (dw or db None: not computed); mean, rstd: (M,)
    buffers of the compute dtype, filled here; M, K > 0.  ``threads``: the cpu threads whose row split ATen's sums
    follow.  dw, db may be float32 for a bf16 / fp16 x (a float32 weight: ATen's mixed type)."""
    out = dw if dw is not None else db
    dev = out._storage.launch_device
    ct = compute_type(x.dtype)
    rnd = {"bfloat16": tl.bfloat16, "float16": tl.float16}.get(x.dtype.name)
    if dw is not None:
        _row_stats_launch(x, mean, rstd, M, K, eps, dev, ct, x.dtype.name == "float32", False)
    nt = max(1, min(threads, M))
    ch = cdiv(M, nt)
    if gpu_blocks(dev):
        bn, br = max(16, min(next_pow2(K), 128)), 8
    else:
        bn = max(16, min(next_pow2(K), 4096))
        br = max(1, min(next_pow2(ch), 65536 // bn, 8 if ct == tl.float64 or rnd is not None else 65536))
    launch(layer_norm_param_backward_kernel, (cdiv(K, bn),), dev,
           [kptr(dy), kptr(x), kptr(mean), kptr(rstd), kptr(dw if dw is not None else out),
            kptr(db if db is not None else out), M, K, ch],
           {"HAS_W": dw is not None, "HAS_B": db is not None, "COMPUTE": ct, "ROUND": rnd, "THREADS": nt,
            "BLOCK_R": br, "BLOCK_N": bn})
    return dw, db


@triton.jit
def _channel_offsets(j, c, C, L):
    """Offsets (BLOCK_C, BLOCK) of elements j (over N * L) of channels c in a contiguous (N, C, L) tensor."""
    return ((j // L) * C * L + (j % L))[None, :] + (c * L)[:, None]


@triton.jit
def _channel_stats(x_ptr, c, cmask, C, L, n, COMPUTE: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK: tl.constexpr):
    """(mean, biased variance) (BLOCK_C,) of channels c over their n = N * L elements (two passes)."""
    acc = tl.zeros([BLOCK_C, BLOCK], COMPUTE)
    for j0 in range(0, n, BLOCK):
        j = j0 + tl.arange(0, BLOCK).to(tl.int64)
        m = cmask[:, None] & (j < n)[None, :]
        acc += tl.load(x_ptr + _channel_offsets(j, c, C, L), mask=m, other=0.0).to(COMPUTE)
    mean = tl.sum(acc, axis=1) / n
    acc = tl.zeros([BLOCK_C, BLOCK], COMPUTE)
    for j0 in range(0, n, BLOCK):
        j = j0 + tl.arange(0, BLOCK).to(tl.int64)
        m = cmask[:, None] & (j < n)[None, :]
        x = tl.load(x_ptr + _channel_offsets(j, c, C, L), mask=m, other=0.0).to(COMPUTE)
        d = tl.where(m, x - mean[:, None], 0.0)
        acc += d * d
    return mean, tl.sum(acc, axis=1) / n


@triton.jit
def _aten_channel_stats(x_ptr, c, cmask, C, L, n, N, CH, NT: tl.constexpr, THREADS: tl.constexpr, CHB: tl.constexpr,
                        BLOCK_C: tl.constexpr, BLOCK: tl.constexpr):
    """(mean, var_sum) float32 (BLOCK_C,) of channels c as ATen's cpu batch_norm_cpu_collect_stats: L > 1 sums
    in double (the float (x - mean)^2 added); L == 1 (rows of an (N, C) matrix) THREADS float partial sums over
    CH rows each (NT of them, THREADS >= NT a power of 2), left to right (the squares by fma), added in double."""
    if L > 1:
        acc = tl.zeros([BLOCK_C, BLOCK], tl.float64)
        for j0 in range(0, n, BLOCK):
            j = j0 + tl.arange(0, BLOCK).to(tl.int64)
            m = cmask[:, None] & (j < n)[None, :]
            acc += tl.load(x_ptr + _channel_offsets(j, c, C, L), mask=m, other=0.0).to(tl.float64)
        mean = (tl.sum(acc, axis=1) / n).to(tl.float32)
        acc = tl.zeros([BLOCK_C, BLOCK], tl.float64)
        for j0 in range(0, n, BLOCK):
            j = j0 + tl.arange(0, BLOCK).to(tl.int64)
            m = cmask[:, None] & (j < n)[None, :]
            d = tl.load(x_ptr + _channel_offsets(j, c, C, L), mask=m, other=0.0).to(tl.float32) - mean[:, None]
            acc += tl.where(m, d * d, 0.0).to(tl.float64)
        var_sum = tl.sum(acc, axis=1).to(tl.float32)
    else:
        t = tl.arange(0, THREADS).to(tl.int64)[:, None]
        m0 = cmask[None, :]
        buf = tl.zeros([THREADS, BLOCK_C], tl.float32)
        i = tl.arange(0, CHB)[None, :, None]
        for k0 in range(0, CH, CHB):                   # sums left to right: the cpu executor's cumsum is sequential
            r = t[:, :, None] * CH + k0 + i
            v = tl.load(x_ptr + r * C + c[None, None, :], mask=m0[:, None, :] & (r < N) & (k0 + i < CH), other=0.0)
            v = tl.where(i == 0, v.to(tl.float32) + buf[:, None, :], v.to(tl.float32))
            buf = tl.sum(tl.where(i == CHB - 1, tl.cumsum(v, axis=1), 0.0), axis=1)
        mean = (_fold_threads(buf, THREADS, BLOCK_C) / N).to(tl.float32)
        buf = tl.zeros([THREADS, BLOCK_C], tl.float32)
        base = x_ptr + t * CH * C + c[None, :]
        tmask = t < NT
        full = tl.maximum(N - (NT - 1) * CH, 0)        # rows every thread has
        for i in range(0, full):
            d = tl.load(base + i * C, mask=m0 & tmask, other=0.0).to(tl.float32) - mean[None, :]
            v = tl.fma(d, d, buf)
            if THREADS != NT:                          # unused threads' sums stay 0
                v = tl.where(tmask, v, buf)
            buf = v
        for i in range(full, CH):
            ok = t * CH + i < N
            d = tl.load(base + i * C, mask=m0 & ok, other=0.0).to(tl.float32) - mean[None, :]
            buf = tl.where(ok, tl.fma(d, d, buf), buf)
        var_sum = _fold_threads(buf, THREADS, BLOCK_C).to(tl.float32)
    return mean, var_sum


@triton.jit
def _fold_threads(buf, THREADS: tl.constexpr, BLOCK_C: tl.constexpr):
    """0 + buf[0] + buf[1] + ... in float64, left to right: buf [THREADS, BLOCK_C]."""
    acc = tl.zeros([BLOCK_C], tl.float64)
    t = tl.arange(0, THREADS)[:, None]
    for i in tl.static_range(THREADS):
        acc += tl.sum(tl.where(t == i, buf, 0.0), axis=0).to(tl.float64)
    return acc


@triton.jit
def batch_norm_kernel(x_ptr, w_ptr, b_ptr, rm_ptr, rv_ptr, y_ptr, C, L, n, mom_hi, mom_lo, eps_hi, eps_lo,
                      TRAINING: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr, HAS_RUN: tl.constexpr,
                      COMPUTE: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK: tl.constexpr, ATEN: tl.constexpr = False,
                      NT: tl.constexpr = 1, THREADS: tl.constexpr = 1, CHB: tl.constexpr = 1):
    """y = (x - mean_c) * rstd_c * w_c + b_c for channels c = program id * BLOCK_C + (0 .. BLOCK_C); x, y
    contiguous (N, C, L).

    TRAINING: batch statistics, and running stats (if any) <- (1 - momentum) * running + momentum * batch
    (unbiased variance); else the running statistics.  ATEN (float32): ATen's cpu order (``_aten_channel_stats``,
    the inverse std and the running variance in double, y = fma(x, alpha, fma(-mean, alpha, b)), alpha = rstd w).
    """
    eps = tl.cast(eps_hi, COMPUTE) + tl.cast(eps_lo, COMPUTE)
    c = tl.program_id(0).to(tl.int64) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = c < C
    if ATEN:
        if TRAINING:
            N = n // L
            mean, var_sum = _aten_channel_stats(x_ptr, c, cmask, C, L, n, N, (N + NT - 1) // NT, NT, THREADS, CHB,
                                                BLOCK_C, BLOCK)
            rstd = (1.0 / tl.sqrt((var_sum / n).to(tl.float64) + (tl.cast(eps_hi, tl.float64) + eps_lo))).to(
                tl.float32)
            if HAS_RUN:
                momentum = tl.cast(mom_hi, COMPUTE) + tl.cast(mom_lo, COMPUTE)
                rm = tl.load(rm_ptr + c, mask=cmask, other=0.0).to(COMPUTE)
                rv = tl.load(rv_ptr + c, mask=cmask, other=0.0).to(COMPUTE)
                tl.store(rm_ptr + c, (momentum * mean + (1.0 - momentum) * rm).to(rm_ptr.dtype.element_ty), mask=cmask)
                unbiased = (var_sum / tl.maximum(n - 1, 1)).to(tl.float64)
                rv = momentum.to(tl.float64) * unbiased + ((1.0 - momentum) * rv).to(tl.float64)
                tl.store(rv_ptr + c, rv.to(rv_ptr.dtype.element_ty), mask=cmask)
        else:
            mean = tl.load(rm_ptr + c, mask=cmask, other=0.0).to(COMPUTE)
            rstd = 1.0 / tl.sqrt(tl.load(rv_ptr + c, mask=cmask, other=1.0).to(COMPUTE) + eps)
        alpha = rstd
        if HAS_W:
            alpha = alpha * tl.load(w_ptr + c, mask=cmask, other=0.0).to(COMPUTE)
        beta = tl.zeros([BLOCK_C], COMPUTE)
        if HAS_B:
            beta = tl.load(b_ptr + c, mask=cmask, other=0.0).to(COMPUTE)
        beta = tl.fma(-mean, alpha, beta)
        for j0 in range(0, n, BLOCK):
            j = j0 + tl.arange(0, BLOCK).to(tl.int64)
            off = _channel_offsets(j, c, C, L)
            m = cmask[:, None] & (j < n)[None, :]
            x = tl.load(x_ptr + off, mask=m, other=0.0).to(COMPUTE)
            cast_store(y_ptr + off, tl.fma(x, alpha[:, None], beta[:, None]), m)
    else:
        if TRAINING:
            mean, var = _channel_stats(x_ptr, c, cmask, C, L, n, COMPUTE, BLOCK_C, BLOCK)
            if HAS_RUN:
                momentum = tl.cast(mom_hi, COMPUTE) + tl.cast(mom_lo, COMPUTE)
                rm = tl.load(rm_ptr + c, mask=cmask, other=0.0).to(COMPUTE)
                rv = tl.load(rv_ptr + c, mask=cmask, other=0.0).to(COMPUTE)
                tl.store(rm_ptr + c, ((1.0 - momentum) * rm + momentum * mean).to(rm_ptr.dtype.element_ty), mask=cmask)
                unbiased = var * n / tl.maximum(n - 1, 1)
                tl.store(rv_ptr + c, ((1.0 - momentum) * rv + momentum * unbiased).to(rv_ptr.dtype.element_ty),
                         mask=cmask)
        else:
            mean = tl.load(rm_ptr + c, mask=cmask, other=0.0).to(COMPUTE)
            var = tl.load(rv_ptr + c, mask=cmask, other=1.0).to(COMPUTE)
        rstd = 1.0 / tl.sqrt(var + eps)
        scale = rstd
        shift = -mean * rstd
        if HAS_W:
            wc = tl.load(w_ptr + c, mask=cmask, other=0.0).to(COMPUTE)
            scale = scale * wc
            shift = shift * wc
        if HAS_B:
            shift = shift + tl.load(b_ptr + c, mask=cmask, other=0.0).to(COMPUTE)
        for j0 in range(0, n, BLOCK):
            j = j0 + tl.arange(0, BLOCK).to(tl.int64)
            off = _channel_offsets(j, c, C, L)
            m = cmask[:, None] & (j < n)[None, :]
            x = tl.load(x_ptr + off, mask=m, other=0.0).to(COMPUTE)
            cast_store(y_ptr + off, x * scale[:, None] + shift[:, None], m)


@triton.jit
def _tree8(v, R: tl.constexpr):
    """vec_reduce_all(+) of the 8 lanes of v [R, 8] (AVX2's shuffle tree): lanes i + 4, then i + 2, then i + 1."""
    c = _lanes8(v, R)
    return ((c[0] + c[4]) + (c[2] + c[6])) + ((c[1] + c[5]) + (c[3] + c[7]))


@triton.jit
def _aten_vec_sums(dy_ptr, x_ptr, w_ptr, base, rmask, sub, L, HAS_W: tl.constexpr, R: tl.constexpr,
                   VB: tl.constexpr):
    """(sum dy w, sum (x - sub) dy w) float32 [R] over rows of L contiguous elements at base [R] (sub [R]; w [L]
    or none) as ATen's AVX2 vec::reduce_all / map*_reduce_all: the L // 8 vectors' products (rounded) added
    lane-wise left to right (``lanes_add``: 0 + the first, -0 sums made +0 as the cumsum-and-pick it replaced),
    the tail vector's last product fused into its lanes' sums (fma), the lanes' shuffle tree; under 8 elements
    the products added left to right.  VB vectors a step."""
    NV = L // 8
    e = tl.arange(0, VB * 8)[None, :]                  # [R, VB vectors of 8 lanes] in memory order
    sa = tl.zeros([R, 8], tl.float32)
    pa = tl.zeros([R, 8], tl.float32)
    for v0 in range(0, NV, VB):                       # the vectors: sequential lane sums carried across steps
        m = rmask[:, None] & (v0 * 8 + e < NV * 8)
        g = tl.load(dy_ptr + base[:, None] + v0 * 8 + e, mask=m, other=0.0).to(tl.float32)
        p = (tl.load(x_ptr + base[:, None] + v0 * 8 + e, mask=m, other=0.0).to(tl.float32) - sub[:, None]) * g
        if HAS_W:
            wv = tl.load(w_ptr + v0 * 8 + e, mask=v0 * 8 + e < NV * 8, other=0.0).to(tl.float32)
            g = g * wv
            p = p * wv
        sa = lanes_add(sa, g, R, VB * 8, 8)           # masked vectors add 0; one native pass on cpu
        pa = lanes_add(pa, p, R, VB * 8, 8)
    lt = tl.arange(0, 8)[None, :]
    tm = rmask[:, None] & (lt < L - NV * 8)
    g = tl.load(dy_ptr + base[:, None] + NV * 8 + lt, mask=tm, other=0.0).to(tl.float32)
    xm = tl.where(tm, tl.load(x_ptr + base[:, None] + NV * 8 + lt, mask=tm, other=0.0).to(tl.float32)
                  - sub[:, None], 0.0)
    wt = tl.full([1, 8], 1.0, tl.float32)
    if HAS_W:
        wt = tl.load(w_ptr + NV * 8 + lt, mask=lt < L - NV * 8, other=0.0).to(tl.float32)
    if L < 8:                                         # one partial vector: its lanes left to right
        s = tl.sum(tl.where(lt == 7, tl.cumsum(g * wt, axis=1), 0.0), axis=1)
        d = tl.sum(tl.where(lt == 7, tl.cumsum(xm * g * wt, axis=1), 0.0), axis=1)
    else:
        if HAS_W:
            s = _tree8(tl.where(tm, tl.fma(g, wt, sa), sa), R)
            d = _tree8(tl.where(tm, tl.fma(xm * g, wt, pa), pa), R)
        else:
            s = _tree8(tl.where(tm, sa + g, sa), R)
            d = _tree8(tl.where(tm, tl.fma(xm, g, pa), pa), R)
    return s, d


@triton.jit
def _aten_plane_sums(dy_ptr, x_ptr, mean, c, cmask, n0, N, C, L, BLOCK_C: tl.constexpr, NB: tl.constexpr,
                     VB: tl.constexpr):
    """(sum dy, sum (x - mean) dy) float32 [BLOCK_C, NB] of the planes (n0 + (0 .. NB), c) of contiguous
    (N, C, L > 1) tensors in ATen's order (``_aten_vec_sums``)."""
    R: tl.constexpr = BLOCK_C * NB
    r = tl.arange(0, R)
    cr = tl.reshape(tl.broadcast_to(c[:, None], [BLOCK_C, NB]), [R])
    nr = n0 + r % NB
    rmask = tl.reshape(tl.broadcast_to(cmask[:, None], [BLOCK_C, NB]), [R]) & (nr < N)
    mr = tl.reshape(tl.broadcast_to(mean[:, None], [BLOCK_C, NB]), [R])
    s, d = _aten_vec_sums(dy_ptr, x_ptr, dy_ptr, (nr * C + cr) * L, rmask, mr, L, False, R, VB)
    return tl.reshape(s, [BLOCK_C, NB]), tl.reshape(d, [BLOCK_C, NB])


@triton.jit
def _aten_bn_grad_sums(dy_ptr, x_ptr, mean, c, cmask, C, L, N, NT: tl.constexpr, THREADS: tl.constexpr,
                       BLOCK_C: tl.constexpr, NB: tl.constexpr, VB: tl.constexpr):
    """(sum dy, sum (x - mean) dy) float64 [BLOCK_C] per channel in ATen's cpu order: (N, C, L > 1) the planes'
    float sums (``_aten_plane_sums``) added in double in n order; (N, C) NT threads' float sums over
    ceil(N / NT) rows each (the products by fma), added in double."""
    if L > 1:
        s = tl.zeros([BLOCK_C], tl.float64)
        d = tl.zeros([BLOCK_C], tl.float64)
        j = tl.arange(0, NB)[None, :]
        for n0 in range(0, N, NB):
            ps, pd = _aten_plane_sums(dy_ptr, x_ptr, mean, c, cmask, n0, N, C, L, BLOCK_C, NB, VB)
            last = tl.minimum(N - n0, NB) - 1
            ps = tl.where(j == 0, ps.to(tl.float64) + s[:, None], ps.to(tl.float64))
            pd = tl.where(j == 0, pd.to(tl.float64) + d[:, None], pd.to(tl.float64))
            s = tl.sum(tl.where(j == last, tl.cumsum(ps, axis=1), 0.0), axis=1)
            d = tl.sum(tl.where(j == last, tl.cumsum(pd, axis=1), 0.0), axis=1)
    else:
        CH = (N + NT - 1) // NT
        t = tl.arange(0, THREADS).to(tl.int64)[:, None]
        sb = tl.zeros([THREADS, BLOCK_C], tl.float32)
        pb = tl.zeros([THREADS, BLOCK_C], tl.float32)
        for i in range(0, CH):
            ok = (t < NT) & (t * CH + i < N)
            off = (t * CH + i) * C + c[None, :]
            g = tl.load(dy_ptr + off, mask=cmask[None, :] & ok, other=0.0).to(tl.float32)
            x = tl.load(x_ptr + off, mask=cmask[None, :] & ok, other=0.0).to(tl.float32)
            sb = tl.where(ok, sb + g, sb)
            pb = tl.where(ok, tl.fma(x - mean[None, :], g, pb), pb)
        s = _fold_threads(sb, THREADS, BLOCK_C).to(tl.float32).to(tl.float64)
        d = _fold_threads(pb, THREADS, BLOCK_C).to(tl.float32).to(tl.float64)
    return s, d


@triton.jit
def batch_norm_backward_kernel(dy_ptr, x_ptr, w_ptr, rm_ptr, rv_ptr, dx_ptr, dw_ptr, db_ptr, C, L, n,
                               eps_hi, eps_lo, TRAINING: tl.constexpr, HAS_W: tl.constexpr,
                               COMPUTE: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK: tl.constexpr,
                               ATEN: tl.constexpr = False, NT: tl.constexpr = 1, THREADS: tl.constexpr = 1,
                               CHB: tl.constexpr = 1, NB: tl.constexpr = 1, VB: tl.constexpr = 1):
    """Channels c (BLOCK_C per program): db = sum dy, dw = sum dy * xhat, dx = w * rstd * (dy - db/n - xhat * dw/n)
    (TRAINING) or dx = w * rstd * dy (running statistics).  ATEN (float32 on cpu): ATen's order (the forward's
    statistics, ``_aten_bn_grad_sums``, k = dotp rstd^2 / n, dx = fma(-(x - mean), k, dy - sum / n) rstd w, with
    no fma in an (N, C) input's columns past C - C % 8; eval rstd from the running variance in double)."""
    eps = tl.cast(eps_hi, COMPUTE) + tl.cast(eps_lo, COMPUTE)
    c = tl.program_id(0).to(tl.int64) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = c < C
    if ATEN:
        N = n // L
        if TRAINING:
            mean, var_sum = _aten_channel_stats(x_ptr, c, cmask, C, L, n, N, (N + NT - 1) // NT, NT, THREADS, CHB,
                                                BLOCK_C, BLOCK)
            var = (var_sum / n).to(tl.float64)
        else:
            mean = tl.load(rm_ptr + c, mask=cmask, other=0.0).to(tl.float32)
            var = tl.load(rv_ptr + c, mask=cmask, other=1.0).to(tl.float64)
        rstd = (1.0 / tl.sqrt(var + (tl.cast(eps_hi, tl.float64) + eps_lo))).to(tl.float32)
        s, d = _aten_bn_grad_sums(dy_ptr, x_ptr, mean, c, cmask, C, L, N, NT, THREADS, BLOCK_C, NB, VB)
        dw = (d * rstd.to(tl.float64)).to(tl.float32)
        db = s.to(tl.float32)
        k = d.to(tl.float32) * rstd * rstd / n
        gm = (s / n).to(tl.float32)
        wc = tl.full([BLOCK_C], 1.0, tl.float32)
        if HAS_W:
            wc = tl.load(w_ptr + c, mask=cmask, other=0.0).to(tl.float32)
        fused = (L > 1) | (c < C - C % 8)
        for j0 in range(0, n, BLOCK):
            j = j0 + tl.arange(0, BLOCK).to(tl.int64)
            off = _channel_offsets(j, c, C, L)
            m = cmask[:, None] & (j < n)[None, :]
            g = tl.load(dy_ptr + off, mask=m, other=0.0).to(tl.float32)
            if TRAINING:
                xm = tl.load(x_ptr + off, mask=m, other=0.0).to(tl.float32) - mean[:, None]
                r = g - gm[:, None]
                g = tl.where(fused[:, None], tl.fma(-xm, k[:, None], r), r - xm * k[:, None])
            cast_store(dx_ptr + off, g * rstd[:, None] * wc[:, None], m)
    else:
        if TRAINING:
            mean, var = _channel_stats(x_ptr, c, cmask, C, L, n, COMPUTE, BLOCK_C, BLOCK)
        else:
            mean = tl.load(rm_ptr + c, mask=cmask, other=0.0).to(COMPUTE)
            var = tl.load(rv_ptr + c, mask=cmask, other=1.0).to(COMPUTE)
        rstd = 1.0 / tl.sqrt(var + eps)
        sg = tl.zeros([BLOCK_C, BLOCK], COMPUTE)
        sgx = tl.zeros([BLOCK_C, BLOCK], COMPUTE)
        for j0 in range(0, n, BLOCK):
            j = j0 + tl.arange(0, BLOCK).to(tl.int64)
            off = _channel_offsets(j, c, C, L)
            m = cmask[:, None] & (j < n)[None, :]
            g = tl.load(dy_ptr + off, mask=m, other=0.0).to(COMPUTE)
            x = tl.load(x_ptr + off, mask=m, other=0.0).to(COMPUTE)
            sg += g
            sgx += tl.where(m, g * (x - mean[:, None]) * rstd[:, None], 0.0)
        db = tl.sum(sg, axis=1)
        dw = tl.sum(sgx, axis=1)
        k = rstd
        if HAS_W:
            k = k * tl.load(w_ptr + c, mask=cmask, other=0.0).to(COMPUTE)
        for j0 in range(0, n, BLOCK):
            j = j0 + tl.arange(0, BLOCK).to(tl.int64)
            off = _channel_offsets(j, c, C, L)
            m = cmask[:, None] & (j < n)[None, :]
            g = tl.load(dy_ptr + off, mask=m, other=0.0).to(COMPUTE)
            if TRAINING:
                x = tl.load(x_ptr + off, mask=m, other=0.0).to(COMPUTE)
                dx = k[:, None] * (g - (db / n)[:, None] - (x - mean[:, None]) * rstd[:, None] * (dw / n)[:, None])
            else:
                dx = k[:, None] * g
            cast_store(dx_ptr + off, dx, m)
    tl.store(dw_ptr + c, dw.to(dw_ptr.dtype.element_ty), mask=cmask)
    tl.store(db_ptr + c, db.to(db_ptr.dtype.element_ty), mask=cmask)


def _bn_twin(args, cx, grid, backward=False):
    """cnn_cpu.c's twin of a cpu launch of ``batch_norm_kernel`` (``backward``: ``batch_norm_backward_kernel``)
    bound to its fixed arguments, or None where the kernel's tape runs: ATen's order (float32) on planes of L > 1
    elements (an (N, C) input's thread-chunked sums keep the tape); a launch with a non-finite input runs the tape."""
    m = cnn_twins()
    nptr = 8 if backward else 6
    C, L, n = args[nptr:nptr + 3]
    if backward:        # dy, x, w, rm, rv, dx, dw, db
        read = (True, True, cx["HAS_W"], not cx["TRAINING"], not cx["TRAINING"], True, True, True)
    else:               # x, w, b, rm, rv, y
        run = cx["HAS_RUN"] or not cx["TRAINING"]
        read = (True, cx["HAS_W"], cx["HAS_B"], run, run, True)
    f32 = np.dtype(np.float32)
    used = [a for a, r in zip(args, read) if r]
    if (m is None or not cx.get("ATEN") or L <= 1 or n < 1 or cx["COMPUTE"] is not tl.float32
            or any(a.dtype != f32 for a in used)):
        return None
    kernel = batch_norm_backward_kernel if backward else batch_norm_kernel
    fallback = T.tape_fallback(kernel, grid, args, cx)
    flags = (0, 0, cx["VB"]) if backward else (cx["HAS_B"], cx["HAS_RUN"], 0)
    params = struct.pack("10q", C, L, n, cx["TRAINING"], cx["HAS_W"], *flags[:2], cx["BLOCK"], flags[2], 0)
    return T.CpuTwin(m.batch_norm_backward_f32 if backward else m.batch_norm_f32, params, fallback)


T.cpu_twin(batch_norm_kernel, _bn_twin)
T.cpu_twin(batch_norm_backward_kernel, lambda args, cx, grid: _bn_twin(args, cx, grid, backward=True))


VEC_BUDGET = 8192     # 8-lane vectors a tile of the ATen-order backward sums (cpu)


def _channel_block(C, n, device):
    """(BLOCK_C, BLOCK): one channel per program on cuda; on cpu every channel in one program (the interpreter
    pays per program), up to 2^17 elements a tile."""
    if gpu_blocks(device):
        return 1, 1024
    block = max(16, min(next_pow2(n), 65536))
    return min(next_pow2(C), max(1, 2 ** 17 // block)), block


def _aten_bn_blocks(n, threads, bc):
    """ATen-order constexprs: NT threads' row chunks, THREADS >= NT a power of 2, CHB rows a block."""
    nt = max(1, min(threads, n))
    tp = next_pow2(nt)
    return {"ATEN": True, "NT": nt, "THREADS": tp, "CHB": max(1, min(next_pow2(cdiv(n, nt)), 65536 // (tp * bc)))}


def _aten_bn(y, rm, dev):
    """Whether a batch_norm launch follows ATen's cpu order: float32 on cpu (float32 running statistics)."""
    return y.dtype.name == "float32" and not gpu_blocks(dev) and (rm is None or rm.dtype.name == "float32")


def batch_norm(x, w, b, rm, rv, y, C, L, training, momentum, eps, threads=1):
    """y = batch_norm of the contiguous (N, C, L) x; updates rm / rv in place when training.  float32 on cpu: in
    ATen's cpu order, its (N, C) statistics summed as on ``threads`` threads."""
    n = x.numel() // C if C else 0
    if C == 0 or n == 0:
        return y
    dev = y._storage.launch_device
    bc, block = _channel_block(C, n, dev)
    aten = _aten_bn(y, rm, dev)
    launch(batch_norm_kernel, (cdiv(C, bc),), dev,
           [kptr(x), kptr(w if w is not None else x), kptr(b if b is not None else x),
            kptr(rm if rm is not None else x), kptr(rv if rv is not None else x), kptr(y), C, L, n,
            *split64(momentum), *split64(eps)],
           {"TRAINING": training, "HAS_W": w is not None, "HAS_B": b is not None, "HAS_RUN": rm is not None,
            "COMPUTE": compute_type(y.dtype), "BLOCK_C": bc, "BLOCK": block,
            **(_aten_bn_blocks(n, threads, bc) if aten else {})})
    return y


def batch_norm_backward(dy, x, w, rm, rv, dx, dw, db, C, L, training, eps, threads=1):
    """dx (like x), dw and db (C,) in one launch; dy, x contiguous (N, C, L).  float32 on cpu: in ATen's cpu order
    (the statistics and (N, C) sums as on ``threads`` threads, as the forward)."""
    n = x.numel() // C if C else 0
    if C == 0:
        return dx, dw, db
    dev = dx._storage.launch_device
    bc, block = _channel_block(C, n, dev)
    extra = {}
    if _aten_bn(dx, rm, dev) and n:
        extra = _aten_bn_blocks(n, threads, bc)
        vb = max(1, min(next_pow2(L // 8), VEC_BUDGET // bc))
        extra.update(NB=max(1, min(next_pow2(n // L), VEC_BUDGET // (bc * vb))), VB=vb)
    launch(batch_norm_backward_kernel, (cdiv(C, bc),), dev,
           [kptr(dy), kptr(x), kptr(w if w is not None else x), kptr(rm if rm is not None else x),
            kptr(rv if rv is not None else x), kptr(dx), kptr(dw), kptr(db), C, L, n, *split64(eps)],
           {"TRAINING": training, "HAS_W": w is not None, "COMPUTE": compute_type(dx.dtype),
            "BLOCK_C": bc, "BLOCK": block, **extra})
    return dx, dw, db


@triton.jit
def group_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, K, G, HW, eps_hi, eps_lo,
                      HAS_W: tl.constexpr, HAS_B: tl.constexpr, COMPUTE: tl.constexpr, ROWS: tl.constexpr,
                      BLOCK_K: tl.constexpr, ATEN: tl.constexpr = False, KC: tl.constexpr = 0, NV: tl.constexpr = 0,
                      NC: tl.constexpr = 0, DEPTH: tl.constexpr = 0, BG: tl.constexpr = 1, LEVELS: tl.constexpr = 0):
    """y = (x - mean[m]) * rstd[m] * w[c] + b[c] over rows m = (n, group) of the contiguous (N * G, K = C/G * HW)
    view of x, channel c = (m % G) * (C / G) + k // HW.  ATEN (float32, K = KC): ATen's cpu order
    (GroupNormKernelImplInternal): the rows' moments as layer_norm's, rstd = 1 / sqrt(var + eps) in double,
    affine: s = rstd w, y = fma(x, s, fma(-s, mean, b)); else y = (x - mean) rstd."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    if ATEN:
        mean, var = _aten_row_moments(x_ptr, rows, rmask, KC, NV, NC, DEPTH, BG, LEVELS, ROWS)
        eps64 = tl.cast(eps_hi, tl.float64) + tl.cast(eps_lo, tl.float64)
        rstd = (1.0 / tl.sqrt(var.to(tl.float64) + eps64)).to(tl.float32)
    else:
        eps = tl.cast(eps_hi, COMPUTE) + tl.cast(eps_lo, COMPUTE)
        mean, rstd = _row_stats(x_ptr, rows, rmask, K, eps, COMPUTE, ROWS, BLOCK_K)
    c0 = (rows % G) * (K // HW)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        x = tl.load(x_ptr + rows[:, None] * K + cols[None, :], mask=m, other=0.0).to(COMPUTE)
        ch = c0[:, None] + cols[None, :] // HW
        if ATEN and (HAS_W or HAS_B):
            sc = tl.broadcast_to(rstd[:, None], [ROWS, BLOCK_K])
            if HAS_W:
                sc = sc * tl.load(w_ptr + ch, mask=m, other=0.0).to(COMPUTE)
            bias = tl.zeros([ROWS, BLOCK_K], COMPUTE)
            if HAS_B:
                bias = tl.load(b_ptr + ch, mask=m, other=0.0).to(COMPUTE)
            y = tl.fma(x, sc, tl.fma(-sc, mean[:, None], bias))
        else:
            y = (x - mean[:, None]) * rstd[:, None]
            if HAS_W:
                y = y * tl.load(w_ptr + ch, mask=m, other=0.0).to(COMPUTE)
            if HAS_B:
                y = y + tl.load(b_ptr + ch, mask=m, other=0.0).to(COMPUTE)
        cast_store(y_ptr + rows[:, None] * K + cols[None, :], y, m)


def group_norm(x, w, b, y, N, G, K, HW, eps):
    """y = group_norm of the contiguous x seen as (N * G, K) rows (w, b: (C,) or None); float32 in ATen's cpu
    order."""
    M = N * G
    if M == 0 or K == 0:
        return y
    dev = y._storage.launch_device
    rows, bk = row_tiles(M, K, dev)
    plan = aten_moments_plan(K, dev) if y.dtype.name == "float32" else None
    if plan is not None:
        rows = min(rows, max(1, 65536 // (plan["BG"] * 8 * 4)))
    launch(group_norm_kernel, (cdiv(M, rows),), dev,
           [kptr(x), kptr(w if w is not None else x), kptr(b if b is not None else x), kptr(y), M, K, G, HW,
            *split64(eps)],
           {"HAS_W": w is not None, "HAS_B": b is not None, "COMPUTE": compute_type(y.dtype), "ROWS": rows,
            "BLOCK_K": bk, **({"ATEN": True, **plan} if plan is not None else {})})
    return y


@triton.jit
def group_norm_param_backward_kernel(dy_ptr, x_ptr, mean_ptr, rstd_ptr, dw_ptr, db_ptr, N, C, HW, D,
                                     COMPUTE: tl.constexpr, LANES: tl.constexpr, BLOCK_C: tl.constexpr,
                                     BLOCK_HW: tl.constexpr):
    """dw[c] = sum_n (ds - db mean) rstd, db[c] = sum_n db over contiguous (N, C, HW) dy, x, with ds, db the
    (n, c) plane sums of dy x and dy; ATen's cpu order (GroupNormBackwardKernelImplInternal): each plane
    reduce_all'd (LANES = 8: 8-lane vectors in turn then AVX2's tree; LANES = 1, HW < 8: left to right), then
    over n in turn dw = fma(fma(-db, mean, ds), rstd, dw), db_c = db_c + db; mean, rstd [N * C / D]."""
    c = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    cm = c < C
    dw = tl.zeros([BLOCK_C], COMPUTE)
    db = tl.zeros([BLOCK_C], COMPUTE)
    for n in range(N):
        base = (n * C + c).to(tl.int64) * HW
        aw = tl.zeros([BLOCK_C, LANES], COMPUTE)
        ab = tl.zeros([BLOCK_C, LANES], COMPUTE)
        for h0 in range(0, HW, BLOCK_HW):
            hw = h0 + tl.arange(0, BLOCK_HW)
            m = cm[:, None] & (hw < HW)[None, :]
            dy = tl.load(dy_ptr + base[:, None] + hw[None, :], mask=m, other=0.0).to(COMPUTE)
            x = tl.load(x_ptr + base[:, None] + hw[None, :], mask=m, other=0.0).to(COMPUTE)
            aw = lanes_add(aw, dy * x, BLOCK_C, BLOCK_HW, LANES)
            ab = lanes_add(ab, dy, BLOCK_C, BLOCK_HW, LANES)
        ds = lanes_fold(aw, BLOCK_C, LANES)
        dbp = lanes_fold(ab, BLOCK_C, LANES)
        g = n * (C // D) + c // D
        mu = tl.load(mean_ptr + g, mask=cm, other=0.0).to(COMPUTE)
        r = tl.load(rstd_ptr + g, mask=cm, other=0.0).to(COMPUTE)
        dw = tl.fma(tl.fma(-dbp, mu, ds), r, dw)
        db = db + dbp
    cast_store(dw_ptr + c, dw, cm)
    cast_store(db_ptr + c, db, cm)


def group_norm_param_backward(dy, x, mean, rstd, dw, db, N, C, G, HW, eps):
    """(dw, db) of group_norm for contiguous (N, C, HW) dy, x; mean, rstd: (N * G,) buffers of the compute
    dtype, filled here; N, C, HW > 0."""
    dev = dw._storage.launch_device
    ct = compute_type(dw.dtype)
    _row_stats_launch(x, mean, rstd, N * G, C // G * HW, eps, dev, ct, dw.dtype.name == "float32", True)
    bh = max(16, min(next_pow2(HW), 1024 if gpu_blocks(dev) else 8192))
    bc = max(1, min(next_pow2(C), (4096 if gpu_blocks(dev) else 65536) // bh))
    launch(group_norm_param_backward_kernel, (cdiv(C, bc),), dev,
           [kptr(dy), kptr(x), kptr(mean), kptr(rstd), kptr(dw), kptr(db), N, C, HW, C // G],
           {"COMPUTE": ct, "LANES": 8 if HW >= 8 else 1, "BLOCK_C": bc, "BLOCK_HW": bh})
    return dw, db
