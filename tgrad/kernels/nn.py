"""Small NN kernels: dropout (mt19937 words on cpu, Philox on cuda), embedding gather / scatter-add, embedding_bag
(bag search, scatter-add / max per bag and their gradients), one_hot."""
import math

import numpy as np
import triton
import triton.language as tl

from .runtime import cdiv, dynamic_args, elementwise_block, gpu_blocks, launch, next_pow2
from .runtime import launcher as T
from .runtime.native import aten_twin
from .reduce import _aten_norm2_rows
from ._lang import cast_store, compute_type, kptr, row_tiles
from .random import f64_arg, f64_bits, keep_scale


@triton.jit
def dropout_kernel(x_ptr, y_ptr, mask_ptr, w_ptr, n_elements, p, q53, scale_bits, seed, offset,
                   WORDS: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    """y[i] = x[i] * (keep[i] ? scale : 0); x, y, mask contiguous.  keep[i] = U(seed, offset + i) >= p (Philox),
    or WORDS: the double uniform of words 2i, 2i + 1 < q = 1 - p (PyTorch's cpu ``bernoulli_(1 - p)``), as the
    integer compare word53 < q53 = ceil(q 2^53) (the uniform is word53 2^-53, exact: the same outcome)."""
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = idx < n_elements
    scale = f64_arg(scale_bits).to(COMPUTE)
    if WORDS:
        f = keep_scale(tl.load(w_ptr + 2 * idx, mask=m, other=0), tl.load(w_ptr + 2 * idx + 1, mask=m, other=0), q53,
                       scale)
        keep = f != 0.0                                 # (scale = 1 / (1 - p) >= 1)
    else:
        keep = tl.rand(seed, (offset + idx).to(tl.uint32)) >= p
        f = tl.where(keep, scale, 0.0)
    x = tl.load(x_ptr + idx, mask=m, other=0.0).to(COMPUTE)
    cast_store(y_ptr + idx, x * f, m)
    tl.store(mask_ptr + idx, keep, mask=m)


dynamic_args(dropout_kernel, "seed", "offset")   # a new draw replays the same tape


def _dropout_twin(args, cx, grid):
    """aten_cpu.c's one-pass twin of a cpu launch of ``dropout_kernel`` on mt19937 words (float32 x and y, bool
    mask), or None where the kernel's tape runs."""
    f = aten_twin("dropout_words_f32")
    x, y, mask, w, n, _, q53, scale_bits = args[:8]
    if (f is None or not cx["WORDS"] or cx["COMPUTE"] is not tl.float32 or x.dtype != np.float32
            or y.dtype != np.float32 or mask.dtype != np.bool_ or w.dtype not in (np.int32, np.uint32)
            or not 0 <= q53 < 2**63):
        return None
    return T.CpuTwin(f, n, q53, scale_bits)


T.cpu_twin(dropout_kernel, _dropout_twin)



@triton.jit
def embedding_kernel(w_ptr, idx_ptr, out_ptr, n, D, stride_wv, stride_wd, ROWS: tl.constexpr,
                     BLOCK_D: tl.constexpr):
    """out[i, :] = w[idx[i], :]; out contiguous (n, D), idx contiguous (n,)."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < n
    src = tl.load(idx_ptr + rows, mask=rmask, other=0).to(tl.int64)
    for d0 in range(0, D, BLOCK_D):
        cols = d0 + tl.arange(0, BLOCK_D)
        m = rmask[:, None] & (cols[None, :] < D)
        v = tl.load(w_ptr + src[:, None] * stride_wv + cols[None, :] * stride_wd, mask=m)
        tl.store(out_ptr + rows[:, None] * D + cols[None, :], v, mask=m)


@triton.jit
def embedding_backward_kernel(g_ptr, idx_ptr, acc_ptr, n, D, padding_idx, ROWS: tl.constexpr,
                              BLOCK_D: tl.constexpr):
    """acc[idx[i], :] += g[i, :] (atomic) for idx[i] != padding_idx; g contiguous (n, D), acc zeroed."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    src = tl.load(idx_ptr + rows, mask=rows < n, other=padding_idx).to(tl.int64)
    rmask = (rows < n) & (src != padding_idx)
    for d0 in range(0, D, BLOCK_D):
        cols = d0 + tl.arange(0, BLOCK_D)
        m = rmask[:, None] & (cols[None, :] < D)
        g = tl.load(g_ptr + rows[:, None] * D + cols[None, :], mask=m, other=0.0)
        tl.atomic_add(acc_ptr + src[:, None] * D + cols[None, :], g.to(acc_ptr.dtype.element_ty), mask=m)


def _embedding_backward_twin(args, cx, grid):
    """aten_cpu.c's twin of a cpu launch of ``embedding_backward_kernel`` (its atomic adds in the interpreter's
    order: rows in turn), or None where the kernel's tape runs: g and acc both float32 or both float64, int32 or
    int64 indices."""
    f = aten_twin("embedding_backward")
    g, idx, acc, n, D, pad = args
    if f is None or g.dtype != acc.dtype or acc.dtype not in (np.float32, np.float64) \
            or idx.dtype not in (np.int32, np.int64) or not -2**63 <= pad < 2**63:
        return None
    return T.CpuTwin(f, n, D, pad, int(idx.dtype == np.int64), int(acc.dtype == np.float64))


T.cpu_twin(embedding_backward_kernel, _embedding_backward_twin)


@triton.jit
def offset2bag_kernel(off_ptr, bag_ptr, n, nb, steps, BLOCK: tl.constexpr):
    """bag[i] = the last b < nb with off[b] <= i (binary search, ``steps`` = ceil(log2(nb)) halvings); off
    sorted, off[0] = 0; bag, off int64 contiguous (n,), (nb,)."""
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    lo = tl.zeros((BLOCK,), tl.int64)
    hi = tl.zeros((BLOCK,), tl.int64) + nb
    for _ in range(steps):
        mid = (lo + hi) // 2
        ok = tl.load(off_ptr + mid, mask=m & (mid < nb), other=n) <= i
        lo = tl.where(ok, mid, lo)
        hi = tl.where(ok, hi, mid)
    tl.store(bag_ptr + i, lo, mask=m)


@triton.jit
def embedding_bag_kernel(w_ptr, idx_ptr, bag_ptr, psw_ptr, acc_ptr, cnt_ptr, n, D, stride_wv, stride_wd,
                         padding_idx, nb, PSW: tl.constexpr, MAX: tl.constexpr, ROWS: tl.constexpr,
                         BLOCK_D: tl.constexpr):
    """acc[bag[i], :] += w[idx[i], :] (* psw[i]), or MAX: acc[bag[i], :] = max(acc[...], w[idx[i], :]), atomic,
    over i < n with idx[i] != padding_idx and bag[i] < nb; cnt[bag[i]] += 1 for those i.  acc (nb, D)
    contiguous fp32/fp64, zeroed (MAX: -inf); idx, bag, psw contiguous (n,)."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    src = tl.load(idx_ptr + rows, mask=rows < n, other=padding_idx).to(tl.int64)
    bag = tl.load(bag_ptr + rows, mask=rows < n, other=nb)
    rmask = (rows < n) & (src != padding_idx) & (bag < nb)
    tl.atomic_add(cnt_ptr + bag, tl.full((ROWS,), 1, tl.int64), mask=rmask)
    if PSW:
        scale = tl.load(psw_ptr + rows, mask=rmask, other=0.0).to(acc_ptr.dtype.element_ty)
    for d0 in range(0, D, BLOCK_D):
        cols = d0 + tl.arange(0, BLOCK_D)
        m = rmask[:, None] & (cols[None, :] < D)
        v = tl.load(w_ptr + src[:, None] * stride_wv + cols[None, :] * stride_wd, mask=m, other=0.0)
        v = v.to(acc_ptr.dtype.element_ty)
        if MAX:
            tl.atomic_max(acc_ptr + bag[:, None] * D + cols[None, :], v, mask=m)
        else:
            if PSW:
                v = v * scale[:, None]
            tl.atomic_add(acc_ptr + bag[:, None] * D + cols[None, :], v, mask=m)


@triton.jit
def embedding_bag_argmax_kernel(w_ptr, idx_ptr, bag_ptr, acc_ptr, pos_ptr, n, D, stride_wv, stride_wd,
                                padding_idx, nb, ROWS: tl.constexpr, BLOCK_D: tl.constexpr):
    """pos[bag[i], d] = min(pos[...], i) where w[idx[i], d] equals the bag's max acc[bag[i], d] (the first
    index of the maximum, as ATen's sequential ``>``); pos (nb, D) int64 contiguous, filled with n."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    src = tl.load(idx_ptr + rows, mask=rows < n, other=padding_idx).to(tl.int64)
    bag = tl.load(bag_ptr + rows, mask=rows < n, other=nb)
    rmask = (rows < n) & (src != padding_idx) & (bag < nb)
    for d0 in range(0, D, BLOCK_D):
        cols = d0 + tl.arange(0, BLOCK_D)
        m = rmask[:, None] & (cols[None, :] < D)
        v = tl.load(w_ptr + src[:, None] * stride_wv + cols[None, :] * stride_wd, mask=m, other=0.0)
        best = tl.load(acc_ptr + bag[:, None] * D + cols[None, :], mask=m, other=0.0)
        hit = m & (v.to(acc_ptr.dtype.element_ty) == best)
        tl.atomic_min(pos_ptr + bag[:, None] * D + cols[None, :], rows[:, None] + tl.zeros_like(cols)[None, :],
                      mask=hit)


@triton.jit
def embedding_bag_finish_kernel(acc_ptr, cnt_ptr, pos_ptr, idx_ptr, out_ptr, mi_ptr, nb, D, MODE: tl.constexpr,
                                ROWS: tl.constexpr, BLOCK_D: tl.constexpr):
    """out[b, :] = acc[b, :] (MODE 0, sum), acc[b, :] / max(cnt[b], 1) (1, mean), or (2, max) acc[b, :] for a
    bag that has rows, else 0, with mi[b, :] = idx[pos[b, :]] (-1 for an empty bag); (nb, D) contiguous."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < nb
    cnt = tl.load(cnt_ptr + rows, mask=rmask, other=0)
    for d0 in range(0, D, BLOCK_D):
        cols = d0 + tl.arange(0, BLOCK_D)
        m = rmask[:, None] & (cols[None, :] < D)
        a = tl.load(acc_ptr + rows[:, None] * D + cols[None, :], mask=m, other=0.0)
        if MODE == 1:
            a = a / tl.maximum(cnt, 1).to(a.dtype)[:, None]
        if MODE == 2:
            full = (cnt > 0)[:, None] & m
            a = tl.where(full, a, 0.0)
            pos = tl.load(pos_ptr + rows[:, None] * D + cols[None, :], mask=full, other=0)
            mi = tl.load(idx_ptr + pos, mask=full, other=-1).to(tl.int64)
            tl.store(mi_ptr + rows[:, None] * D + cols[None, :], mi, mask=m)
        cast_store(out_ptr + rows[:, None] * D + cols[None, :], a, m)


@triton.jit
def embedding_bag_backward_kernel(g_ptr, idx_ptr, bag_ptr, psw_ptr, cnt_ptr, acc_ptr, n, D, padding_idx, nb,
                                  PSW: tl.constexpr, MEAN: tl.constexpr, ROWS: tl.constexpr,
                                  BLOCK_D: tl.constexpr):
    """acc[idx[i], :] += g[bag[i], :] * psw[i] (MEAN: * 1 / cnt[bag[i]]), atomic, for idx[i] != padding_idx,
    bag[i] < nb; g contiguous (nb, D), acc zeroed (V, D) fp32/fp64."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    src = tl.load(idx_ptr + rows, mask=rows < n, other=padding_idx).to(tl.int64)
    bag = tl.load(bag_ptr + rows, mask=rows < n, other=nb)
    rmask = (rows < n) & (src != padding_idx) & (bag < nb)
    if PSW:
        scale = tl.load(psw_ptr + rows, mask=rmask, other=0.0).to(acc_ptr.dtype.element_ty)
    if MEAN:
        c = tl.load(cnt_ptr + bag, mask=rmask, other=1).to(acc_ptr.dtype.element_ty)
        scale = 1.0 / tl.maximum(c, 1.0)
    for d0 in range(0, D, BLOCK_D):
        cols = d0 + tl.arange(0, BLOCK_D)
        m = rmask[:, None] & (cols[None, :] < D)
        g = tl.load(g_ptr + bag[:, None] * D + cols[None, :], mask=m, other=0.0).to(acc_ptr.dtype.element_ty)
        if PSW or MEAN:
            g = g * scale[:, None]
        tl.atomic_add(acc_ptr + src[:, None] * D + cols[None, :], g, mask=m)


@triton.jit
def embedding_bag_max_backward_kernel(g_ptr, pos_ptr, acc_ptr, nb, D, ROWS: tl.constexpr, BLOCK_D: tl.constexpr):
    """acc[pos[b, d], d] += g[b, d] for pos[b, d] >= 0 (the argmax rows of max mode); g, pos contiguous
    (nb, D), acc zeroed (V, D) fp32/fp64."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    for d0 in range(0, D, BLOCK_D):
        cols = d0 + tl.arange(0, BLOCK_D)
        m = (rows < nb)[:, None] & (cols[None, :] < D)
        src = tl.load(pos_ptr + rows[:, None] * D + cols[None, :], mask=m, other=-1)
        m = m & (src >= 0)
        g = tl.load(g_ptr + rows[:, None] * D + cols[None, :], mask=m, other=0.0).to(acc_ptr.dtype.element_ty)
        tl.atomic_add(acc_ptr + src * D + cols[None, :], g, mask=m)


@triton.jit
def one_hot_kernel(x_ptr, out_ptr, n_elements, C, BLOCK: tl.constexpr):
    """out[i, c] = (x[i] == c) for the contiguous (n, C) int64 out."""
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = idx < n_elements
    x = tl.load(x_ptr + idx // C, mask=m, other=-1)
    tl.store(out_ptr + idx, (x == idx % C).to(tl.int64), mask=m)


def dropout(x, y, mask, p, scale, seed, offset, words=None):
    """``words``: 2n mt19937 words (cpu generator), else the Philox ``seed`` and ``offset``."""
    n = y.numel()
    if n == 0:
        return y, mask
    dev = y._storage.launch_device
    block = elementwise_block(n, dev)
    launch(dropout_kernel, (cdiv(n, block),), dev,
           [kptr(x), kptr(y), kptr(mask), kptr(words if words is not None else x), n, float(p),
            math.ceil((1.0 - p) * 2.0 ** 53), f64_bits(scale), int(seed or 0), int(offset or 0)],
           {"WORDS": words is not None, "COMPUTE": compute_type(y.dtype), "BLOCK": block})
    return y, mask


def _row_launch(kernel, n, D, out, args, **constexprs):
    """Launch a row kernel over ``n`` rows of width ``D`` (ROWS / BLOCK_D tiles per device); returns ``out``."""
    if n == 0 or D == 0:
        return out
    dev = out._storage.launch_device
    rows, bd = row_tiles(n, D, dev)
    launch(kernel, (cdiv(n, rows),), dev, args, dict(constexprs, ROWS=rows, BLOCK_D=bd))
    return out


def embedding(w, idx, out, n, D):
    return _row_launch(embedding_kernel, n, D, out, [kptr(w), kptr(idx), kptr(out), n, D, w.stride()[0],
                                                     w.stride()[1]])


def embedding_backward(g, idx, acc, n, D, padding_idx):
    """acc (zeroed, contiguous (V, D), fp32/fp64) += rows of g scattered by idx."""
    return _row_launch(embedding_backward_kernel, n, D, acc, [kptr(g), kptr(idx), kptr(acc), n, D, int(padding_idx)])


def offset2bag(offsets, bag, n, nb):
    """bag (n,) int64: the bag of each index, from the nb sorted bag starts ``offsets`` (int64, contiguous)."""
    if n == 0:
        return bag
    dev = bag._storage.launch_device
    block = elementwise_block(n, dev)
    launch(offset2bag_kernel, (cdiv(n, block),), dev, [kptr(offsets), kptr(bag), n, nb, max(nb - 1, 0).bit_length()],
           {"BLOCK": block})
    return bag


def embedding_bag(w, idx, bag, psw, acc, cnt, n, nb, padding_idx, mode_max):
    """acc (nb, D) += the rows of each bag (scaled by psw), or their max (acc filled with -inf); cnt (nb,)
    += the rows counted (also for D = 0)."""
    D = w.shape[1]
    return _row_launch(embedding_bag_kernel, n, max(D, 1), acc,
                       [kptr(w), kptr(idx), kptr(bag), kptr(psw if psw is not None else idx), kptr(acc), kptr(cnt), n,
                        D, w.stride()[0], w.stride()[1], int(padding_idx), nb], PSW=psw is not None, MAX=bool(mode_max))


def embedding_bag_argmax(w, idx, bag, acc, pos, n, nb, padding_idx):
    """pos (nb, D), filled with n: the first position i of each bag's maximum per column."""
    D = w.shape[1]
    return _row_launch(embedding_bag_argmax_kernel, n, D, pos,
                       [kptr(w), kptr(idx), kptr(bag), kptr(acc), kptr(pos), n, D, w.stride()[0], w.stride()[1],
                        int(padding_idx), nb])


def embedding_bag_finish(acc, cnt, pos, idx, out, mi, nb, mode):
    """out (nb, D) from the bags' sums / maxima ``acc``: mode 0 sum, 1 mean, 2 max (also mi, the max rows)."""
    D = out.shape[1]
    return _row_launch(embedding_bag_finish_kernel, nb, D, out,
                       [kptr(acc), kptr(cnt), kptr(pos if pos is not None else cnt), kptr(idx), kptr(out),
                        kptr(mi if mi is not None else cnt), nb, D], MODE=int(mode))


def embedding_bag_backward(g, idx, bag, psw, cnt, acc, n, nb, padding_idx, mean):
    """acc (V, D), zeroed, += each bag's gradient row at its indices (scaled by psw, or 1 / cnt for mean)."""
    D = acc.shape[1]
    return _row_launch(embedding_bag_backward_kernel, n, D, acc,
                       [kptr(g), kptr(idx), kptr(bag), kptr(psw if psw is not None else idx), kptr(cnt), kptr(acc), n,
                        D, int(padding_idx), nb], PSW=psw is not None, MEAN=bool(mean))


def embedding_bag_max_backward(g, pos, acc, nb):
    """acc (V, D), zeroed, += g[b, d] at row pos[b, d] (the max rows; pos < 0: an empty bag)."""
    D = acc.shape[1]
    return _row_launch(embedding_bag_max_backward_kernel, nb, D, acc, [kptr(g), kptr(pos), kptr(acc), nb, D])


def one_hot(x, out, C):
    n = out.numel()
    if n == 0:
        return out
    dev = out._storage.launch_device
    block = elementwise_block(n, dev)
    launch(one_hot_kernel, (cdiv(n, block),), dev, [kptr(x), kptr(out), n, C], {"BLOCK": block})
    return out


@triton.jit
def _abs_pow(a, p, P: tl.constexpr):
    """|a|^p for P = 1, 2 or 0 (a general p > 0)."""
    if P == 1:
        return tl.abs(a)
    elif P == 2:
        return a * a
    else:
        return tl.where(a == 0, 0.0, tl.exp2(p * tl.log2(tl.abs(a)))).to(a.dtype)


@triton.jit
def normalize_kernel(x_ptr, y_ptr, M, K, INNER, sx_o, sx_k, sx_i, sy_o, sy_k, sy_i, p, eps,
                     P: tl.constexpr, COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK_K: tl.constexpr,
                     ATEN: tl.constexpr = False, VB: tl.constexpr = 1):
    """y[m, k] = x[m, k] / max(||x[m, :]||_p, eps) over (OUTER, K, INNER) views (P = -1: p = inf).  ATEN (P = 2,
    float32 contiguous rows of up to 2^16 on cpu): the norm in ATen's cpu order (reduce.py's ``_aten_norm2_rows``)."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    xrow = (rows // INNER) * sx_o + (rows % INNER) * sx_i
    yrow = (rows // INNER) * sy_o + (rows % INNER) * sy_i
    acc = tl.zeros([ROWS], COMPUTE)
    if not ATEN:
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + tl.arange(0, BLOCK_K)
            m = rmask[:, None] & (cols[None, :] < K)
            x = tl.load(x_ptr + xrow[:, None] + cols[None, :] * sx_k, mask=m, other=0.0).to(COMPUTE)
            if P == -1:
                acc = tl.maximum(acc, tl.max(tl.abs(x), axis=1))
            else:
                acc += tl.sum(_abs_pow(x, p, P), axis=1)
    if ATEN:
        n = tl.sqrt(_aten_norm2_rows(x_ptr, xrow, rmask, K, ROWS, VB))
    elif P == 1 or P == -1:
        n = acc
    elif P == 2:
        n = tl.sqrt(acc)
    else:
        n = tl.where(acc == 0, 0.0, tl.exp2(tl.log2(acc) / p)).to(COMPUTE)
    d = tl.maximum(n, eps)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        x = tl.load(x_ptr + xrow[:, None] + cols[None, :] * sx_k, mask=m, other=0.0).to(COMPUTE)
        cast_store(y_ptr + yrow[:, None] + cols[None, :] * sy_k, x / d[:, None], m)


@triton.jit
def cosine_similarity_kernel(a_ptr, b_ptr, out_ptr, M, K, INNER, sa_o, sa_k, sa_i, sb_o, sb_k, sb_i, eps,
                             COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK_K: tl.constexpr):
    """out[m] = sum_k a b / (max(||a||, eps) * max(||b||, eps)) over (OUTER, K, INNER) views; out contiguous."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    arow = (rows // INNER) * sa_o + (rows % INNER) * sa_i
    brow = (rows // INNER) * sb_o + (rows % INNER) * sb_i
    sab = tl.zeros([ROWS], COMPUTE)
    saa = tl.zeros([ROWS], COMPUTE)
    sbb = tl.zeros([ROWS], COMPUTE)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        a = tl.load(a_ptr + arow[:, None] + cols[None, :] * sa_k, mask=m, other=0.0).to(COMPUTE)
        b = tl.load(b_ptr + brow[:, None] + cols[None, :] * sb_k, mask=m, other=0.0).to(COMPUTE)
        sab += tl.sum(a * b, axis=1)
        saa += tl.sum(a * a, axis=1)
        sbb += tl.sum(b * b, axis=1)
    d = tl.maximum(tl.sqrt(saa), eps) * tl.maximum(tl.sqrt(sbb), eps)
    cast_store(out_ptr + rows, sab / d, rmask)


def normalize(x, y, geom, p, eps):
    """y = x / max(||x||_p, eps) along K of the (OUTER, K, INNER) geometry (M, K, INNER, x strides, y strides)."""
    M, K, inner, sx, sy = geom
    if M == 0 or K == 0:
        return y
    dev = y._storage.launch_device
    rows, bk = row_tiles(M, K, dev)
    P = -1 if p == float("inf") else (int(p) if p in (1, 2) else 0)
    aten = {}
    if (P == 2 and inner == 1 and sx[1] == 1 and (M == 1 or sx[0] == K) and K <= 65536
            and y.dtype.name == x.dtype.name == "float32" and not gpu_blocks(dev)):
        aten = {"ATEN": True, "VB": max(1, min(next_pow2(K // 8), 8192 // rows))}
    launch(normalize_kernel, (cdiv(M, rows),), dev,
           [kptr(x), kptr(y), M, K, inner, *sx, *sy, float(p) if P == 0 else 1.0, float(eps)],
           {"P": P, "COMPUTE": compute_type(y.dtype), "ROWS": rows, "BLOCK_K": bk, **aten})
    return y


def cosine_similarity(a, b, out, geom, eps):
    """out (M contiguous) = cosine similarity of rows; geom = (M, K, INNER, a strides, b strides)."""
    M, K, inner, sa, sb = geom
    if M == 0:
        return out
    dev = out._storage.launch_device
    rows, bk = row_tiles(M, max(K, 1), dev)
    launch(cosine_similarity_kernel, (cdiv(M, rows),), dev,
           [kptr(a), kptr(b), kptr(out), M, K, inner, *sa, *sb, float(eps)],
           {"COMPUTE": compute_type(out.dtype), "ROWS": rows, "BLOCK_K": bk})
    return out
