"""Loss kernels: fused cross-entropy / NLL (forward and backward), and point-wise losses.

Cross-entropy: input is a strided (OUTER, K, INNER) view (K = classes, see
softmax.py), one row per (batch, spatial) position.  The forward computes
log-softmax, the per-row loss and, for reduction 'sum'/'mean', the reduction
in the same launch (one program then walks all rows: a reduction in one
launch without atomics).  The backward writes ``dx = s * (softmax * A - a)``
in one launch, where ``a`` is the row's target weight vector and A its sum;
the reducing forward can write the same dx for s = 1 (the gradient an
implicit ``loss.backward()`` needs) in its own launch.

Point-wise losses (mse, l1, smooth_l1, huber, bce, bce-with-logits, kl_div):
one strided map computes ``f(x, y)`` (ORDER 0), ``f'`` (ORDER 1) or ``f''``
(ORDER 2) times weight, incoming gradient and a scale.
"""
import numpy as np
import triton
import triton.language as tl

from . import _geometry as G
from .runtime import launcher as T
from .runtime import Launch, Sites, cdiv, elementwise_block, gpu_blocks, next_pow2
from .runtime.native import cross_entropy_f32 as native_cross_entropy
from .runtime.native import native_helper, rule_cascade
from ._lang import (cast_store, compute_type, kptr, row_offsets, row_tiles, sleef_exp, sleef_log, split64,
                    strided_offset)
from .softmax import aten_lanes, row_max_sum_exp


NONE, SUM, MEAN = 0, 1, 2
REDUCTIONS = {"none": NONE, "sum": SUM, "mean": MEAN}


@triton.jit
def _lse_rows(x_ptr, xrow, rmask, K, sx_k, LOGITS: tl.constexpr, COMPUTE: tl.constexpr, ROWS: tl.constexpr,
              BLOCK_K: tl.constexpr, LANES: tl.constexpr):
    """(mx, log_s) with log sum_k exp(x[row, k]) = mx + log_s, for a block of rows (LANES: see softmax_kernel);
    zeros when not LOGITS."""
    if not LOGITS:
        mx = tl.zeros([ROWS], COMPUTE)
        log_s = tl.zeros([ROWS], COMPUTE)
    else:
        mx, s = row_max_sum_exp(x_ptr, xrow, rmask, K, sx_k, x_ptr, xrow, sx_k, COMPUTE, ROWS, BLOCK_K, LANES,
                                False)
        if LANES == 0:
            mx = tl.where(mx == float("-inf"), 0.0, mx)
            log_s = tl.log(s)
        else:
            log_s = sleef_log(s)
    return mx, log_s


@triton.jit
def _ce_rows(x_ptr, t_ptr, w_ptr, rows, M, K, INNER, sx_o, sx_k, sx_i, st_o, st_k, st_i, ignore_index, eps,
             LOGITS: tl.constexpr, PROB: tl.constexpr, HAS_W: tl.constexpr, SMOOTH: tl.constexpr,
             COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK_K: tl.constexpr, LANES: tl.constexpr):
    """(loss, weight, mx, log_s) of a block of rows: loss = sum_c a_c * (lse - x_c), weight = the row's mean
    divisor, lse = mx + log_s (0 when not LOGITS)."""
    rmask = rows < M
    xrow = row_offsets(rows, INNER, sx_o, sx_i)
    mx, log_s = _lse_rows(x_ptr, xrow, rmask, K, sx_k, LOGITS, COMPUTE, ROWS, BLOCK_K, LANES)
    loss = tl.zeros([ROWS], COMPUTE)
    if PROB:
        trow = row_offsets(rows, INNER, st_o, st_i)
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + tl.arange(0, BLOCK_K)
            m = rmask[:, None] & (cols[None, :] < K)
            x = tl.load(x_ptr + xrow[:, None] + cols[None, :] * sx_k, mask=m, other=0.0).to(COMPUTE)
            y = tl.load(t_ptr + trow[:, None] + cols[None, :] * st_k, mask=m, other=0.0).to(COMPUTE)
            a = y * (1.0 - eps) + eps / K
            if HAS_W:
                a = a * tl.load(w_ptr + cols, mask=cols < K, other=0.0).to(COMPUTE)[None, :]
            loss += tl.sum(tl.where(m, a * ((mx[:, None] - x) + log_s[:, None]), 0.0), axis=1)
        wrow = rmask.to(COMPUTE)
    else:
        t = tl.load(t_ptr + rows, mask=rmask, other=ignore_index)
        valid = rmask & (t != ignore_index)
        tc = tl.where(valid, t, 0)
        if HAS_W:
            wrow = tl.load(w_ptr + tc, mask=valid, other=0.0).to(COMPUTE)
        else:
            wrow = valid.to(COMPUTE)
        xt = tl.load(x_ptr + xrow + tc * sx_k, mask=valid, other=0.0).to(COMPUTE)
        loss = tl.where(valid, wrow * ((mx - xt) + log_s), 0.0)
        if SMOOTH:
            sm = tl.zeros([ROWS], COMPUTE)
            for k0 in range(0, K, BLOCK_K):
                cols = k0 + tl.arange(0, BLOCK_K)
                m = valid[:, None] & (cols[None, :] < K)
                x = tl.load(x_ptr + xrow[:, None] + cols[None, :] * sx_k, mask=m, other=0.0).to(COMPUTE)
                v = (mx[:, None] - x) + log_s[:, None]
                if HAS_W:
                    v = v * tl.load(w_ptr + cols, mask=cols < K, other=0.0).to(COMPUTE)[None, :]
                sm += tl.sum(tl.where(m, v, 0.0), axis=1)
            loss = (1.0 - eps) * loss + (eps / K) * sm
    return loss, wrow, mx, log_s


@triton.jit
def _mean_scale(s, t_ptr, w_ptr, M, ignore_index, REDUCE: tl.constexpr, PROB: tl.constexpr,
                HAS_W: tl.constexpr, COMPUTE: tl.constexpr, DEN_BLOCK: tl.constexpr):
    """s, divided for 'mean' (REDUCE 2) by the total row weight, summed from the targets in DEN_BLOCK chunks."""
    if REDUCE == 2:
        if PROB:
            s = s / M
        else:
            den = tl.zeros([DEN_BLOCK], COMPUTE)
            for r0 in range(0, M, DEN_BLOCK):
                rr = r0 + tl.arange(0, DEN_BLOCK).to(tl.int64)
                t = tl.load(t_ptr + rr, mask=rr < M, other=ignore_index)
                ok = (rr < M) & (t != ignore_index)
                if HAS_W:
                    den += tl.load(w_ptr + tl.where(ok, t, 0), mask=ok, other=0.0).to(COMPUTE)
                else:
                    den += ok.to(COMPUTE)
            s = s / tl.sum(den, axis=0)
    return s


@triton.jit
def _ce_grad_rows(s, mx, log_s, x_ptr, t_ptr, w_ptr, dx_ptr, rows, M, K, INNER, sx_o, sx_k, sx_i, st_o, st_k,
                  st_i, ignore_index, eps, LOGITS: tl.constexpr, PROB: tl.constexpr, HAS_W: tl.constexpr,
                  SMOOTH: tl.constexpr, COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK_K: tl.constexpr,
                  LANES: tl.constexpr):
    """dx[m, c] = s_m * (p_c * A_m - a_c) for a block of rows (dx contiguous (OUTER, K, INNER); p from the
    rows' mx, log_s); returns A."""
    rmask = rows < M
    xrow = row_offsets(rows, INNER, sx_o, sx_i)
    orow = row_offsets(rows, INNER, K * INNER, 1)
    if PROB:
        trow = row_offsets(rows, INNER, st_o, st_i)
        A = tl.zeros([ROWS], COMPUTE)
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + tl.arange(0, BLOCK_K)
            m = rmask[:, None] & (cols[None, :] < K)
            y = tl.load(t_ptr + trow[:, None] + cols[None, :] * st_k, mask=m, other=0.0).to(COMPUTE)
            a = y * (1.0 - eps) + eps / K
            if HAS_W:
                a = a * tl.load(w_ptr + cols, mask=cols < K, other=0.0).to(COMPUTE)[None, :]
            A += tl.sum(tl.where(m, a, 0.0), axis=1)
    else:
        t = tl.load(t_ptr + rows, mask=rmask, other=ignore_index)
        valid = rmask & (t != ignore_index)
        tc = tl.where(valid, t, 0)
        if HAS_W:
            wt = tl.load(w_ptr + tc, mask=valid, other=0.0).to(COMPUTE)
        else:
            wt = valid.to(COMPUTE)
        A = wt
        if SMOOTH:
            wsum = tl.zeros([ROWS], COMPUTE)
            for k0 in range(0, K, BLOCK_K):
                cols = k0 + tl.arange(0, BLOCK_K)
                if HAS_W:
                    wc = tl.load(w_ptr + cols, mask=cols < K, other=0.0).to(COMPUTE)
                else:
                    wc = (cols < K).to(COMPUTE)
                wsum += tl.sum(wc, axis=0)
            A = (1.0 - eps) * wt + tl.where(valid, (eps / K) * wsum, 0.0)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        if PROB:
            y = tl.load(t_ptr + trow[:, None] + cols[None, :] * st_k, mask=m, other=0.0).to(COMPUTE)
            a = y * (1.0 - eps) + eps / K
            if HAS_W:
                a = a * tl.load(w_ptr + cols, mask=cols < K, other=0.0).to(COMPUTE)[None, :]
        else:
            a = tl.where(cols[None, :] == tc[:, None], wt[:, None], 0.0)
            if SMOOTH:
                if HAS_W:
                    wc = tl.load(w_ptr + cols, mask=cols < K, other=0.0).to(COMPUTE)
                else:
                    wc = tl.zeros([BLOCK_K], COMPUTE) + 1.0
                a = (1.0 - eps) * a + tl.where(valid[:, None], (eps / K) * wc[None, :], 0.0)
        if LOGITS and LANES > 0 and not PROB and not SMOOTH:
            # ATen's cpu order: nll_loss_backward puts -w s at the target, log_softmax_backward subtracts
            # exp(log_softmax) times that row sum (one fma: the compiler contracts ATen's x - y.exp() * sum)
            x = tl.load(x_ptr + xrow[:, None] + cols[None, :] * sx_k, mask=m, other=0.0).to(COMPUTE)
            ws = (wt * s)[:, None]
            dx = tl.fma(sleef_exp((x - mx[:, None]) - log_s[:, None]), ws,
                        -tl.where(cols[None, :] == tc[:, None], ws, 0.0))
        elif LOGITS:
            x = tl.load(x_ptr + xrow[:, None] + cols[None, :] * sx_k, mask=m, other=0.0).to(COMPUTE)
            dx = s[:, None] * (tl.exp((x - mx[:, None]) - log_s[:, None]) * A[:, None] - a)
        else:
            dx = s[:, None] * -a
        cast_store(dx_ptr + orow[:, None] + cols[None, :] * INNER, dx, m)
    return A


@triton.jit
def cross_entropy_kernel(x_ptr, t_ptr, w_ptr, out_ptr, dx_ptr, r_ptr, M, K, INNER, sx_o, sx_k, sx_i, st_o, st_k, st_i,
                         ignore_index, eps_hi, eps_lo,
                         LOGITS: tl.constexpr, PROB: tl.constexpr, HAS_W: tl.constexpr, SMOOTH: tl.constexpr,
                         REDUCE: tl.constexpr, COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK_K: tl.constexpr,
                         GRAD: tl.constexpr, DEN_BLOCK: tl.constexpr, LANES: tl.constexpr,
                         NB: tl.constexpr, LEVELS: tl.constexpr):
    """Per-row loss -sum_c a_c log_softmax(x)_c (LOGITS; else x is already log-probabilities).

    REDUCE 0: out[m] = loss[m]; 1: out = sum; 2: out = sum / sum of row weights (grid must be (1,)).
    GRAD (REDUCE 1, 2): also dx = d out / d x, exactly as cross_entropy_backward_kernel writes it for g = 1.
    LANES: see softmax_kernel.  LEVELS > 0: the sum in ATen's cpu order (_nll_cascade; r_ptr: (M,) scratch).
    """
    eps = tl.cast(eps_hi, COMPUTE) + tl.cast(eps_lo, COMPUTE)
    if REDUCE == 0:
        rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
        loss, wrow, mx, log_s = _ce_rows(x_ptr, t_ptr, w_ptr, rows, M, K, INNER, sx_o, sx_k, sx_i, st_o, st_k,
                                         st_i, ignore_index, eps, LOGITS, PROB, HAS_W, SMOOTH, COMPUTE, ROWS,
                                         BLOCK_K, LANES)
        cast_store(out_ptr + rows, loss, rows < M)
    else:
        if GRAD:
            s = _mean_scale(tl.zeros([ROWS], COMPUTE) + 1.0, t_ptr, w_ptr, M, ignore_index, REDUCE, PROB, HAS_W,
                            COMPUTE, DEN_BLOCK)
        tot = tl.zeros([ROWS], COMPUTE)
        den = tl.zeros([ROWS], COMPUTE)
        for r0 in range(0, M, ROWS):
            rows = r0 + tl.arange(0, ROWS).to(tl.int64)
            loss, wrow, mx, log_s = _ce_rows(x_ptr, t_ptr, w_ptr, rows, M, K, INNER, sx_o, sx_k, sx_i, st_o,
                                             st_k, st_i, ignore_index, eps, LOGITS, PROB, HAS_W, SMOOTH, COMPUTE,
                                             ROWS, BLOCK_K, LANES)
            if LEVELS > 0:
                cast_store(r_ptr + rows, loss, rows < M)
            else:
                tot += loss
                den += wrow
            if GRAD:
                _ce_grad_rows(s, mx, log_s, x_ptr, t_ptr, w_ptr, dx_ptr, rows, M, K, INNER, sx_o, sx_k, sx_i,
                              st_o, st_k, st_i, ignore_index, eps, LOGITS, PROB, HAS_W, SMOOTH, COMPUTE, ROWS,
                              BLOCK_K, LANES)
        if LEVELS > 0:
            tl.debug_barrier()
            res = _nll_cascade(r_ptr, t_ptr, w_ptr, M, ignore_index, HAS_W, REDUCE == 2, COMPUTE, NB, LEVELS)
        else:
            res = tl.sum(tot, axis=0)
            if REDUCE == 2:
                res = res / tl.sum(den, axis=0)
        one = tl.arange(0, 1)
        cast_store(out_ptr + one, tl.zeros([1], COMPUTE) + res, one < 1)


@triton.jit
def cross_entropy_backward_kernel(g_ptr, x_ptr, t_ptr, w_ptr, dx_ptr, rs_ptr, M, K, INNER,
                                  sg_o, sg_i, sx_o, sx_k, sx_i, st_o, st_k, st_i, ignore_index, eps_hi, eps_lo,
                                  LOGITS: tl.constexpr, PROB: tl.constexpr, HAS_W: tl.constexpr,
                                  SMOOTH: tl.constexpr, REDUCE: tl.constexpr, COMPUTE: tl.constexpr,
                                  ROWS: tl.constexpr, BLOCK_K: tl.constexpr, DEN_BLOCK: tl.constexpr,
                                  LANES: tl.constexpr):
    """dx[m, c] = s_m * (p_c * A_m - a_c); rs[m] = s_m * A_m (for double backward).

    p = softmax(x) (0 when not LOGITS), a = the row's target weights, A = sum_c a_c, s_m the incoming
    gradient (divided by the total row weight for 'mean', recomputed by every program from the targets in
    DEN_BLOCK chunks, so the backward is one launch).
    dx is a contiguous (OUTER, K, INNER) tensor.
    """
    eps = tl.cast(eps_hi, COMPUTE) + tl.cast(eps_lo, COMPUTE)
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    if REDUCE == 0:
        s = tl.load(g_ptr + row_offsets(rows, INNER, sg_o, sg_i), mask=rmask, other=0.0).to(COMPUTE)
    else:
        s = _mean_scale(tl.zeros([ROWS], COMPUTE) + tl.load(g_ptr).to(COMPUTE), t_ptr, w_ptr, M, ignore_index,
                        REDUCE, PROB, HAS_W, COMPUTE, DEN_BLOCK)
    mx, log_s = _lse_rows(x_ptr, row_offsets(rows, INNER, sx_o, sx_i), rmask, K, sx_k, LOGITS, COMPUTE, ROWS,
                          BLOCK_K, LANES)
    A = _ce_grad_rows(s, mx, log_s, x_ptr, t_ptr, w_ptr, dx_ptr, rows, M, K, INNER, sx_o, sx_k, sx_i, st_o, st_k,
                      st_i, ignore_index, eps, LOGITS, PROB, HAS_W, SMOOTH, COMPUTE, ROWS, BLOCK_K, LANES)
    cast_store(rs_ptr + rows, s * A, rmask)


@triton.jit
def _cascade_level(v, n, B: tl.constexpr):
    """One level of nll_loss's cascade over v [B] (n leading values, zeros after): (the sums of its whole groups
    of 16, each left to right, zeros after: the next level's values [B / 16], their count, the sum of the last
    group's values left)."""
    c = tl.cumsum(tl.reshape(v, [B // 16, 16]), axis=1)
    sums = tl.sum(tl.where(tl.arange(0, 16)[None, :] == 15, c, 0.0), axis=1)
    g = tl.arange(0, B // 16)
    G = n // 16
    return tl.where(g < G, sums, 0.0), G, tl.sum(tl.where(g == G, sums, 0.0), axis=0)


@native_helper("nll_cascade", rule_cascade)
@triton.jit
def _cascade(v, n, NB: tl.constexpr, LEVELS: tl.constexpr):
    """sum of v [NB] (n leading values) as nll_loss_out_frame adds rows 1, 2, ...: 16 at a time into a level
    that passes each 16 sums up (LEVELS <= 5 levels), the partial levels then added bottom up.  (cpu launches:
    one call of its C twin, runtime/aten_cpu.c, for float32 v.)"""
    v1, n1, tot = _cascade_level(v, n, NB)
    if LEVELS > 1:
        v2, n2, p = _cascade_level(v1, n1, NB // 16)
        tot = tot + p
        if LEVELS > 2:
            v3, n3, p = _cascade_level(v2, n2, NB // 256)
            tot = tot + p
            if LEVELS > 3:
                v4, n4, p = _cascade_level(v3, n3, NB // 4096)
                tot = tot + p
                if LEVELS > 4:
                    v5, n5, p = _cascade_level(v4, n4, NB // 65536)
                    tot = tot + p
    return tot


@triton.jit
def _nll_cascade(r_ptr, t_ptr, w_ptr, M, ignore_index, HAS_W: tl.constexpr, MEAN: tl.constexpr,
                 COMPUTE: tl.constexpr, NB: tl.constexpr, LEVELS: tl.constexpr):
    """sum_m r[m] (MEAN: / the total weight) in ATen's cpu order (nll_loss_out_frame): rows 1 .. M - 1 in the
    cascade (_cascade), then row 0, which ATen's first step carries to the top level; the total weight likewise
    (w[t[m]], HAS_W), else the count of rows not ignored.  (A row ignored where ATen would pass a level up
    delays that step in ATen, not here.)"""
    i = tl.arange(0, NB).to(tl.int64) + 1
    im = i < M
    tot = _cascade(tl.load(r_ptr + i, mask=im, other=0.0).to(COMPUTE), M - 1, NB, LEVELS)
    tot = tot + tl.load(r_ptr).to(COMPUTE)
    if MEAN:
        t = tl.load(t_ptr + i, mask=im, other=ignore_index)
        ok = im & (t != ignore_index)
        t0 = tl.load(t_ptr)
        if HAS_W:
            wv = tl.load(w_ptr + tl.where(ok, t, 0), mask=ok, other=0.0).to(COMPUTE)
            den = _cascade(wv, M - 1, NB, LEVELS)
            w0 = tl.load(w_ptr + tl.where(t0 != ignore_index, t0, 0)).to(COMPUTE)
            den = den + tl.where(t0 != ignore_index, w0, 0.0)
        else:
            den = (tl.sum(ok.to(tl.int32), axis=0) + (t0 != ignore_index).to(tl.int32)).to(COMPUTE)
        tot = tot / den
    return tot


def _ce_twin(args, cx, grid, backward=False):
    """aten_cpu.c's twin of a cpu launch of ``cross_entropy_kernel`` (``backward``: of
    ``cross_entropy_backward_kernel``) bound to its fixed arguments, or None where the kernel's tape runs: float32
    rows (LOGITS: in ATen's order, LANES > 0), int64 class-index targets, no label smoothing, a reducing forward
    adding in ATen's order (``_nll_cascade``)."""
    fs = native_cross_entropy()
    if backward:
        g, x, t, w, dx, out = args[:6]
        M, K, inner, sgo, _, sxo, sxk, _ = args[6:14]
        ii, grad, levels, ptrs = args[17], True, 0, (g, out, dx)
    else:
        x, t, w, out, dx, r = args[:6]
        M, K, inner, sxo, sxk = args[6:11]
        ii, grad, levels, sgo, ptrs = args[15], cx["GRAD"], cx["LEVELS"], 0, (out, dx, r)
    red, has_w, logits = cx["REDUCE"], cx["HAS_W"], cx["LOGITS"]
    f32 = np.dtype(np.float32)
    if (fs is None or cx["PROB"] or cx["SMOOTH"] or cx["COMPUTE"] is not tl.float32 or logits and not cx["LANES"]
            or inner != 1 or M < 1 or K < 1 or not -2**63 <= ii < 2**63 or x.dtype != f32
            or t.dtype != np.dtype(np.int64) or has_w and w.dtype != f32 or any(a.dtype != f32 for a in ptrs)
            or red != NONE and not backward and not levels):
        return None
    params = np.array([M, K, sxo, sxk, ii, has_w, logits, red, grad, levels, sgo, cx["DEN_BLOCK"], cx["BLOCK_K"]],
                      np.int64).tobytes()
    return T.CpuTwin(fs[1] if backward else fs[0], params)


T.cpu_twin(cross_entropy_kernel, _ce_twin)
T.cpu_twin(cross_entropy_backward_kernel, lambda args, cx, grid: _ce_twin(args, cx, grid, backward=True))


def aten_cascade(x, geom, reduce, prob, eps, dev):
    """Whether a reducing nll_loss / cross_entropy adds its rows in ATen's cpu order (_nll_cascade):
    float32 / float64 class-index targets, no label smoothing, 1-D / 2-D input, fewer than 16^5 rows (on a
    GPU 4,096: one program adds them)."""
    M, K, inner, _ = geom
    return (x.dtype.name in ("float32", "float64") and inner == 1 and not prob and eps == 0 and reduce != NONE
            and M < (4097 if gpu_blocks(dev) else 16 ** 5))


def _ce_consts(x, prob, has_w, eps, reduce, logits, rows, bk, K, inner):
    return {"LOGITS": logits, "PROB": prob, "HAS_W": has_w, "SMOOTH": eps > 0, "REDUCE": reduce,
            "COMPUTE": compute_type(x.dtype), "ROWS": rows, "BLOCK_K": bk,
            "LANES": aten_lanes(x.dtype, x.dtype, K, inner) if logits else 0}


def _den_block(M, dev):
    return max(16, min(next_pow2(M), 1024 if gpu_blocks(dev) else 65536))


_SITES = Sites()


def _dtype(t):
    return None if t is None else t.dtype


def cross_entropy(x, t, w, out, geom, tstrides, ignore_index, eps, reduce, logits, prob, dx=None, rows_buf=None):
    """One launch: out = per-row losses (reduce NONE) or their sum / weighted mean (a 1-element tensor).

    geom = (M, K, INNER, x strides (o, k, i)); tstrides: the target's (o, k, i) strides for
    probability targets (class-index targets are a contiguous (M,) int64 tensor).
    ``dx`` (reduce SUM / MEAN only; contiguous, x's shape): also gets d out / d x, bit for bit what
    ``cross_entropy_backward`` writes for an incoming gradient of 1.
    ``rows_buf`` ((M,), x's dtype; when ``aten_cascade``): scratch for the rows' losses, added in ATen's order.
    """
    M, K, inner, sx = geom
    dev = out._storage.launch_device
    grad = dx is not None and reduce != NONE
    dx = dx if grad else x
    key = ("fwd", M, K, inner, tuple(sx), tuple(tstrides), x.dtype, t.dtype, _dtype(w), out.dtype,
           dx.dtype if grad else None, int(ignore_index), eps > 0, reduce, logits, prob, dev, T.FORCE_GPU_BLOCKS,
           rows_buf is not None)
    site = _SITES.get(key)
    if site is None:
        rows, bk = row_tiles(M, K, dev)
        if reduce != NONE:      # one program walks all rows: give it a full tile of rows on the GPU too
            rows = max(rows, min(next_pow2(M), 8192 // bk))
        grid = (cdiv(M, rows),) if reduce == NONE else (1,)
        levels = 0
        if rows_buf is not None:
            levels = 1
            while 16 ** levels < M:
                levels += 1
        site = _SITES.add(key, Launch(
            cross_entropy_kernel, grid, dev,
            [kptr(x), kptr(t), kptr(w if w is not None else x), kptr(out), kptr(dx),
             kptr(rows_buf if rows_buf is not None else x), M, K, inner, *sx, *tstrides, int(ignore_index),
             *split64(eps)],
            {**_ce_consts(x, prob, w is not None, eps, reduce, logits, rows, bk, K, inner), "GRAD": grad,
             "DEN_BLOCK": _den_block(M, dev) if grad else 16, "NB": 16 ** levels, "LEVELS": levels}))
    xp = x.data_ptr()
    site(xp, t.data_ptr(), w.data_ptr() if w is not None else xp, out.data_ptr(), dx.data_ptr(),
         rows_buf.data_ptr() if rows_buf is not None else xp, *split64(eps))
    return out


def cross_entropy_backward(g, gstrides, x, t, w, dx, rs, geom, tstrides, ignore_index, eps, reduce, logits,
                           prob):
    """One launch: dx (contiguous, x's shape) and the row scales rs (M,) from the incoming gradient g."""
    M, K, inner, sx = geom
    dev = dx._storage.launch_device
    key = ("bwd", M, K, inner, tuple(gstrides), tuple(sx), tuple(tstrides), g.dtype, x.dtype, t.dtype, _dtype(w),
           dx.dtype, rs.dtype, int(ignore_index), eps > 0, reduce, logits, prob, dev, T.FORCE_GPU_BLOCKS)
    site = _SITES.get(key)
    if site is None:
        rows, bk = row_tiles(M, K, dev)
        site = _SITES.add(key, Launch(
            cross_entropy_backward_kernel, (cdiv(M, rows),), dev,
            [kptr(g), kptr(x), kptr(t), kptr(w if w is not None else x), kptr(dx), kptr(rs), M, K, inner,
             *gstrides, *sx, *tstrides, int(ignore_index), *split64(eps)],
            {**_ce_consts(x, prob, w is not None, eps, reduce, logits, rows, bk, K, inner),
             "DEN_BLOCK": _den_block(M, dev)}))
    xp = x.data_ptr()
    site(g.data_ptr(), xp, t.data_ptr(), w.data_ptr() if w is not None else xp, dx.data_ptr(), rs.data_ptr(),
         *split64(eps))
    return dx, rs


# ------------------------------------------------------------------ point-wise losses
MSE, L1, SMOOTH_L1, HUBER, BCE, BCE_LOGITS, KL, KL_LOG = range(8)


@triton.jit
def _sign(d):
    return tl.where(d > 0, 1.0, tl.where(d < 0, -1.0, 0.0)).to(d.dtype)


@triton.jit
def _log1p(x):
    u = 1.0 + x
    d = u - 1.0
    return tl.where(d == 0.0, x, tl.log(u) * (x / d))


@triton.jit
def loss_fn(x, y, pw, p, LOSS: tl.constexpr, ORDER: tl.constexpr):
    """ORDER-th derivative in x of the point-wise loss LOSS(x, y) (p: beta / delta; pw: pos_weight)."""
    d = x - y
    ad = tl.abs(d)
    zero = tl.zeros_like(x)
    if LOSS == 0:      # mse: d^2
        if ORDER == 0:
            r = d * d
        elif ORDER == 1:
            r = 2.0 * d
        else:
            r = zero + 2.0
    elif LOSS == 1:    # l1: |d|
        if ORDER == 0:
            r = ad
        elif ORDER == 1:
            r = _sign(d)
        else:
            r = zero
    elif LOSS == 2:    # smooth_l1: 0.5 d^2 / beta if |d| < beta else |d| - 0.5 beta
        if ORDER == 0:
            r = tl.where(ad < p, 0.5 * d * d / p, ad - 0.5 * p)
        elif ORDER == 1:
            r = tl.where(ad < p, d / p, _sign(d))
        else:
            r = tl.where(ad < p, 1.0 / p, 0.0)
    elif LOSS == 3:    # huber: 0.5 d^2 if |d| < delta else delta (|d| - 0.5 delta)
        if ORDER == 0:
            r = tl.where(ad < p, 0.5 * d * d, p * (ad - 0.5 * p))
        elif ORDER == 1:
            r = tl.where(ad < p, d, p * _sign(d))
        else:
            r = tl.where(ad < p, 1.0, 0.0)
    elif LOSS == 4:    # bce: -(y log x + (1-y) log(1-x)), logs clamped at -100
        if ORDER == 0:
            r = -(y * tl.maximum(tl.log(x), -100.0) + (1.0 - y) * tl.maximum(tl.log(1.0 - x), -100.0))
        elif ORDER == 1:
            r = d / tl.maximum(x * (1.0 - x), 1e-12)
        else:
            q = x * (1.0 - x)
            r = (q - d * (1.0 - 2.0 * x)) / (q * q)
    elif LOSS == 5:    # bce with logits: (1-y) x + L softplus(-x), L = 1 + (pw - 1) y
        lw = 1.0 + (pw - 1.0) * y
        if ORDER == 0:
            r = (1.0 - y) * x + lw * (tl.maximum(-x, 0.0) + _log1p(tl.exp(-tl.abs(x))))
        else:
            e = tl.exp(-tl.abs(x))
            sig = tl.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
            if ORDER == 1:
                r = (1.0 - y) - lw * (1.0 - sig)
            else:
                r = lw * sig * (1.0 - sig)
    elif LOSS == 6:    # kl_div: xlogy(y, y) - y x (ATen's ops; xlogy's log is the scalar, correctly rounded one)
        if ORDER == 0:
            r = tl.where(y == 0, 0.0, y * tl.log(y.to(tl.float64)).to(y.dtype)) - y * x
        elif ORDER == 1:
            r = -y
        else:
            r = zero
    else:              # kl_div, log_target: exp(y) (y - x), exp rounded from float64 as ATen's exp (MKL)
        if ORDER == 0:
            r = tl.exp(y.to(tl.float64)).to(y.dtype) * (y - x)
        elif ORDER == 1:
            r = -tl.exp(y.to(tl.float64)).to(y.dtype)
        else:
            r = zero
    return r.to(x.dtype)


@triton.jit
def loss_map_kernel(x_ptr, y_ptr, w_ptr, pw_ptr, g_ptr, out_ptr, dx_ptr, n_elements, p_hi, p_lo, scale_hi, scale_lo,
                    d1, d2, d3, d4, d5,
                    sx0, sx1, sx2, sx3, sx4, sx5, sy0, sy1, sy2, sy3, sy4, sy5,
                    sw0, sw1, sw2, sw3, sw4, sw5, sp0, sp1, sp2, sp3, sp4, sp5,
                    sg0, sg1, sg2, sg3, sg4, sg5, so0, so1, so2, so3, so4, so5,
                    LOSS: tl.constexpr, ORDER: tl.constexpr, HAS_W: tl.constexpr, HAS_PW: tl.constexpr,
                    HAS_G: tl.constexpr, X_ND: tl.constexpr, Y_ND: tl.constexpr, W_ND: tl.constexpr,
                    P_ND: tl.constexpr, G_ND: tl.constexpr, O_ND: tl.constexpr,
                    HAS_DX: tl.constexpr, SCALE_OUT: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    """out[i] = loss_fn(x[i], y[i], pw[i]) * w[i] * g[i] * scale (without SCALE_OUT: unscaled) over broadcast
    strided operands; HAS_DX (forward only): also dx[i] = loss_fn'(x[i], y[i], pw[i]) * w[i] * scale, the
    gradient for g = 1 (dx is contiguous like out)."""
    p = tl.cast(p_hi, COMPUTE) + tl.cast(p_lo, COMPUTE)
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n_elements
    x = tl.load(x_ptr + strided_offset(idx, d1, d2, d3, d4, d5, sx0, sx1, sx2, sx3, sx4, sx5, X_ND),
                mask=mask, other=0.5).to(COMPUTE)
    y = tl.load(y_ptr + strided_offset(idx, d1, d2, d3, d4, d5, sy0, sy1, sy2, sy3, sy4, sy5, Y_ND),
                mask=mask, other=0.5).to(COMPUTE)
    if HAS_PW:
        pw = tl.load(pw_ptr + strided_offset(idx, d1, d2, d3, d4, d5, sp0, sp1, sp2, sp3, sp4, sp5, P_ND),
                     mask=mask, other=1.0).to(COMPUTE)
    else:
        pw = tl.zeros_like(x) + 1.0
    r = loss_fn(x, y, pw, p, LOSS, ORDER)
    scale = tl.cast(scale_hi, COMPUTE) + tl.cast(scale_lo, COMPUTE)
    if HAS_DX:
        r1 = loss_fn(x, y, pw, p, LOSS, 1)
    if HAS_W:
        w = tl.load(w_ptr + strided_offset(idx, d1, d2, d3, d4, d5, sw0, sw1, sw2, sw3, sw4, sw5, W_ND),
                    mask=mask, other=0.0).to(COMPUTE)
        r = r * w
        if HAS_DX:
            r1 = r1 * w
    if HAS_G:
        r = r * tl.load(g_ptr + strided_offset(idx, d1, d2, d3, d4, d5, sg0, sg1, sg2, sg3, sg4, sg5, G_ND),
                        mask=mask, other=0.0).to(COMPUTE)
    oo = strided_offset(idx, d1, d2, d3, d4, d5, so0, so1, so2, so3, so4, so5, O_ND)
    if SCALE_OUT:
        r = r * scale
    cast_store(out_ptr + oo, r, mask)
    if HAS_DX:
        cast_store(dx_ptr + oo, r1 * scale, mask)


def loss_map(loss, order, x, y, w, pw, g, out, p=0.0, scale=1.0, dx=None, scale_out=True):
    """out = f^(order)(x, y) * w * g * scale (w, pw, g may be None; ``scale_out=False``: not times scale);
    operands broadcast to out.shape.  ``dx`` (order 0, out's strides): also f'(x, y) * w * scale, the gradient
    for g = 1, in the same launch."""
    dev = out._storage.launch_device
    ops = (x, y, w if w is not None else x, pw if pw is not None else x, g if g is not None else x)
    d = dx if dx is not None else out
    key = ["map", loss, order, w is not None, pw is not None, g is not None, dx is not None, bool(scale_out), dev,
           T.FORCE_GPU_BLOCKS, out._shape, out._strides, out.dtype, d._strides, d.dtype]
    for t in ops:
        key += t._shape, t._strides, t.dtype
    key = tuple(key)
    site = _SITES.get(key)
    if site is None:
        site = _SITES.add(key, _loss_map_site(loss, order, ops, w, pw, g, out, d, dx is not None, bool(scale_out),
                                              dev))
    ptrs = [t._storage.ptr + t._offset * t.dtype.itemsize for t in ops + (out, d)]    # data_ptr(), inlined
    site(*ptrs, *split64(p), *split64(scale))
    return out


def _loss_map_site(loss, order, ops, w, pw, g, out, d, has_dx, scale_out, dev):
    n = out.numel()
    if n == 0:
        return _no_launch
    strides = [G.expand_strides(t.shape, t.stride(), out.shape) for t in ops] + [list(out.stride())]
    sizes, per = G.launch_geometry(out.shape, strides)
    args = [kptr(t) for t in ops] + [kptr(out), kptr(d), n, 0.0, 0.0, 0.0, 0.0] + sizes
    for st, _ in per:
        args += st
    nds = [nd for _, nd in per]
    block = elementwise_block(n, dev)
    return Launch(loss_map_kernel, (cdiv(n, block),), dev, args,
                  {"LOSS": loss, "ORDER": order, "HAS_W": w is not None, "HAS_PW": pw is not None,
                   "HAS_G": g is not None, "X_ND": nds[0], "Y_ND": nds[1], "W_ND": nds[2], "P_ND": nds[3],
                   "G_ND": nds[4], "O_ND": nds[5], "HAS_DX": has_dx, "SCALE_OUT": scale_out,
                   "COMPUTE": compute_type(out.dtype),
                   "BLOCK": block})


def _no_launch(*dyn):
    pass
