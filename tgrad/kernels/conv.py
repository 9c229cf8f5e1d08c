"""Convolution kernels: implicit GEMM, no unfolded buffer (forward, input gradient, weight gradient).

Every tensor is addressed as a strided (N, C, H, W) view (a 1-D convolution is H = 1 with stride 0), the
weight as (O, C / groups, KH, KW).  Each kernel walks the KH x KW filter taps in a loop and, per tap, does
one GEMM over channels: the per-row index maths (which input pixel a tap reads, whether it is padding) is
computed on row vectors once per tap, and the tile loads are strided gathers of those rows.  Rows (pixels)
are the flat (N, H, W) pixels, ``ROWS`` of them per program in ``BLOCK_M`` lanes (``_row_block``): on cpu a
program holds whole images or whole image rows (a divisor of H), so every tap's tile is a strided view of the
input with no pow2 padding of H or W (padding and the lanes past ROWS masked); on cuda ROWS = BLOCK_M.

- ``conv_forward_kernel``: y[n, o, p] = b[o] + sum_{c, k} x[n, c, p * s - pad + k * d] w[o, c, k]
  (rows: N * OH * OW output pixels, columns: the group's output channels, reduction: its input channels);
- ``conv_input_grad_kernel``: dx[n, c, i] = b[c] + sum_{o, k: i = p * s - pad + k * d} dy[n, o, p] w[o, c, k]
  (also the transposed convolution's forward, with its bias);
- ``conv_weight_grad_kernel``: dw[o, c, k] = sum_{n, p} dy[n, o, p] x[n, c, p * s - pad + k * d]
  (one tap per program along program_id(1), reduction over N * OH * OW).
"""
import struct

import numpy as np
import triton
import triton.language as tl

from .runtime import launcher as T
from .runtime.native import cnn_twins
from .runtime import Launch, Ptr, Sites, cdiv, gpu_blocks, next_pow2
from ._lang import cast_store, row_block


@triton.jit
def _dot(a, b, acc, ACC: tl.constexpr, UPCAST: tl.constexpr):
    if UPCAST:
        a = a.to(ACC)
        b = b.to(ACC)
    return tl.dot(a, b, acc, input_precision="ieee", out_dtype=ACC)


@triton.jit
def _rows(r0, NB, OH, OW, ROWS, BLOCK: tl.constexpr):
    """(n, oh, ow, live) of the pixels r0 + [0, BLOCK) of the flat (NB, OH, OW) grid, live below r0 + ROWS."""
    i = tl.arange(0, BLOCK).to(tl.int64)
    r = r0 + i
    ow = r % OW
    t = r // OW
    oh = t % OH
    n = t // OH
    return n, oh, ow, (i < ROWS) & (n < NB)


@triton.jit
def conv_forward_kernel(x_ptr, w_ptr, b_ptr, y_ptr, NB, H, W, OH, OW, ROWS, KH, KW, CG, OG,
                        sh, sw, ph, pw, dh, dw,
                        s_xn, s_xc, s_xh, s_xw, s_wo, s_wc, s_wh, s_ww, s_yn, s_yc, s_yh, s_yw, s_b,
                        HAS_B: tl.constexpr, ACC: tl.constexpr, UPCAST: tl.constexpr,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """y[n, o, oh, ow] = b[o] + sum_{c, kh, kw} x[n, c, oh*sh - ph + kh*dh, ow*sw - pw + kw*dw] w[o, c, kh, kw].

    x (NB, G*CG, H, W), w (G*OG, CG, KH, KW), y (NB, G*OG, OH, OW); group g = program_id(1); ROWS output
    pixels per program.
    """
    pid = tl.program_id(0)
    g = tl.program_id(1).to(tl.int64)
    n_tiles = tl.cdiv(OG, BLOCK_N)
    ro = (pid % n_tiles).to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    n, oh, ow, rmask = _rows((pid // n_tiles).to(tl.int64) * ROWS, NB, OH, OW, ROWS, BLOCK_M)
    omask = ro < OG
    oc = g * OG + ro
    x_rows = x_ptr + n * s_xn + g * CG * s_xc
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC)
    for kh in range(KH):
        ih = oh * sh - ph + kh * dh
        for kw in range(KW):
            iw = ow * sw - pw + kw * dw
            valid = rmask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            a_rows = x_rows + ih * s_xh + iw * s_xw
            w_tap = w_ptr + oc * s_wo + kh * s_wh + kw * s_ww
            for c0 in range(0, CG, BLOCK_K):
                cc = c0 + rk
                a = tl.load(a_rows[:, None] + cc[None, :] * s_xc, mask=valid[:, None] & (cc[None, :] < CG), other=0)
                b = tl.load(w_tap[None, :] + cc[:, None] * s_wc, mask=(cc[:, None] < CG) & omask[None, :], other=0)
                acc = _dot(a, b, acc, ACC, UPCAST)
    if HAS_B:
        acc += tl.load(b_ptr + oc * s_b, mask=omask, other=0).to(ACC)[None, :]
    y_rows = n * s_yn + oh * s_yh + ow * s_yw
    cast_store(y_ptr + y_rows[:, None] + oc[None, :] * s_yc, acc, rmask[:, None] & omask[None, :])


@triton.jit
def conv_input_grad_kernel(dy_ptr, w_ptr, b_ptr, dx_ptr, NB, H, W, OH, OW, ROWS, KH, KW, CG, OG,
                           sh, sw, ph, pw, dh, dw,
                           s_gn, s_gc, s_gh, s_gw, s_wo, s_wc, s_wh, s_ww, s_xn, s_xc, s_xh, s_xw, s_b,
                           HAS_B: tl.constexpr, ACC: tl.constexpr, UPCAST: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """dx[n, c, ih, iw] = b[c] + sum_{o, kh, kw} dy[n, o, (ih + ph - kh*dh) / sh, (iw + pw - kw*dw) / sw] w[o, c, kh, kw]
    over the taps whose quotients are exact and in range.  dy (NB, G*OG, OH, OW), dx (NB, G*CG, H, W); ROWS dx
    pixels per program."""
    pid = tl.program_id(0)
    g = tl.program_id(1).to(tl.int64)
    n_tiles = tl.cdiv(CG, BLOCK_N)
    rc = (pid % n_tiles).to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    n, ih, iw, rmask = _rows((pid // n_tiles).to(tl.int64) * ROWS, NB, H, W, ROWS, BLOCK_M)
    cmask = rc < CG
    g_rows = dy_ptr + n * s_gn + g * OG * s_gc
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC)
    for kh in range(KH):
        th = ih + ph - kh * dh
        oh = th // sh
        vh = (th >= 0) & (oh * sh == th) & (oh < OH)
        for kw in range(KW):
            tw = iw + pw - kw * dw
            ow = tw // sw
            valid = rmask & vh & (tw >= 0) & (ow * sw == tw) & (ow < OW)
            a_rows = g_rows + oh * s_gh + ow * s_gw
            w_tap = w_ptr + g * OG * s_wo + rc * s_wc + kh * s_wh + kw * s_ww
            for o0 in range(0, OG, BLOCK_K):
                oo = o0 + rk
                a = tl.load(a_rows[:, None] + oo[None, :] * s_gc, mask=valid[:, None] & (oo[None, :] < OG), other=0)
                b = tl.load(w_tap[None, :] + oo[:, None] * s_wo, mask=(oo[:, None] < OG) & cmask[None, :], other=0)
                acc = _dot(a, b, acc, ACC, UPCAST)
    cg = g * CG + rc
    if HAS_B:
        acc += tl.load(b_ptr + cg * s_b, mask=cmask, other=0).to(ACC)[None, :]
    x_rows = n * s_xn + ih * s_xh + iw * s_xw
    cast_store(dx_ptr + x_rows[:, None] + cg[None, :] * s_xc, acc, rmask[:, None] & cmask[None, :])


@triton.jit
def conv_weight_grad_kernel(dy_ptr, x_ptr, dw_ptr, NB, H, W, OH, OW, ROWS, KH, KW, CG, OG,
                            sh, sw, ph, pw, dh, dw,
                            s_gn, s_gc, s_gh, s_gw, s_xn, s_xc, s_xh, s_xw, s_wo, s_wc, s_wh, s_ww,
                            ACC: tl.constexpr, UPCAST: tl.constexpr, KHB: tl.constexpr, KWB: tl.constexpr,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """dw[o, c, kh, kw] = sum_{n, oh, ow} dy[n, o, oh, ow] x[n, c, oh*sh - ph + kh*dh, ow*sw - pw + kw*dw].

    Columns: (BLOCK_N / (KHB*KWB) channels) x (KHB x KWB taps from tap group program_id(1)), so one dy tile
    serves KHB*KWB taps; group program_id(2); dw (G*OG, CG, KH, KW); the reduction runs over the dy pixels,
    ROWS per step.
    """
    pid = tl.program_id(0)
    tap = tl.program_id(1)
    g = tl.program_id(2).to(tl.int64)
    n_kw = tl.cdiv(KW, KWB)
    BLOCK_C: tl.constexpr = BLOCK_N // (KHB * KWB)
    n_tiles = tl.cdiv(CG, BLOCK_C)
    rn = tl.arange(0, BLOCK_N)
    kh = (tap // n_kw) * KHB + rn // KWB % KHB
    kw = (tap % n_kw) * KWB + rn % KWB
    ro = (pid // n_tiles).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    rc = (pid % n_tiles).to(tl.int64) * BLOCK_C + rn // (KHB * KWB)
    omask = ro < OG
    nmask = (rc < CG) & (kh < KH) & (kw < KW)
    R = NB * OH * OW
    g_cols = dy_ptr + (g * OG + ro) * s_gc
    x_cols = x_ptr + (g * CG + rc) * s_xc
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC)
    for r0 in range(0, R, ROWS):
        n, oh, ow, rmask = _rows(r0, NB, OH, OW, ROWS, BLOCK_K)
        ih = oh[:, None] * sh - ph + kh[None, :] * dh
        iw = ow[:, None] * sw - pw + kw[None, :] * dw
        valid = rmask[:, None] & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W) & nmask[None, :]
        a = tl.load(g_cols[:, None] + (n * s_gn + oh * s_gh + ow * s_gw)[None, :],
                    mask=omask[:, None] & rmask[None, :], other=0)
        b = tl.load(x_cols[None, :] + (n * s_xn)[:, None] + ih * s_xh + iw * s_xw, mask=valid, other=0)
        acc = _dot(a, b, acc, ACC, UPCAST)
    out = dw_ptr + (g * OG + ro)[:, None] * s_wo + (rc * s_wc + kh * s_wh + kw * s_ww)[None, :]
    cast_store(out, acc, omask[:, None] & nmask[None, :])


# ------------------------------------------------------------------ launchers
def _acc(dtype):
    return tl.float64 if dtype.name == "float64" else tl.float32


def _cexpr(dtype, dev, bm, bn, bk):
    return {"ACC": _acc(dtype), "UPCAST": not gpu_blocks(dev) or dtype.name == "float64",
            "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk}



def _tap_groups(OG, CG, KH, KW, padding, dev):
    """(KHB, KWB): the filter taps one weight-gradient program covers along h and w (its columns are channels x
    taps, so one dy tile load serves them all).  cpu only, and only along an unpadded axis (its x tile then
    reads no padding and stays a strided view): of (1, 1), (1, KW) and (KH, KW) rounded up to powers of 2 with
    at most 256 columns, the fewest elements loaded per row ((OG + columns) x tap groups), then the fewest
    programs.  cuda: one tap a program."""
    if gpu_blocks(dev):
        return 1, 1
    opts = [(1, 1)]
    if padding[1] == 0:
        opts.append((1, next_pow2(KW)))
        if padding[0] == 0:
            opts.append((next_pow2(KH), next_pow2(KW)))
    cost = {(a, b): ((OG + next_pow2(CG) * a * b) * cdiv(KH, a) * cdiv(KW, b), cdiv(KH, a) * cdiv(KW, b))
            for a, b in opts if next_pow2(CG) * a * b <= 256 or (a, b) == (1, 1)}
    return min(cost, key=cost.get)


def _gemm_tiles(M, N, K, dev, dtype):
    """(BLOCK_M, BLOCK_N, BLOCK_K): GPU tiles as the matmul's (K >= 16 for fp16/bf16 dots); on cpu a
    whole problem in few programs (the interpreter pays per program): N and K up to 256, M up to 2^17 / K."""
    if gpu_blocks(dev):
        # 32-row tiles: the per-row gather pointers of a 64-row tile spill on sm_80/sm_90 (255 registers)
        bm, bn, bk = {"float64": (32, 32, 16), "float32": (32, 64, 16)}.get(dtype.name, (32, 64, 32))
        return bm, min(bn, max(16, next_pow2(N))), bk
    bn = min(next_pow2(N), 256)     # (the interpreter's tl.dot takes any power of 2; the GPU's needs 16)
    bk = min(next_pow2(K), 256)
    return min(next_pow2(M), 2 ** 17 // max(bk, bn)), bn, bk



def _geom4(t):
    """(N, C, H, W) sizes and strides of a 3-D (H = 1) or 4-D tensor."""
    if t.dim() == 3:
        n, c, l = t.shape
        sn, sc, sl = t.stride()
        return (n, c, 1, l), (sn, sc, 0, sl)
    return tuple(t.shape), tuple(t.stride())


def _layout(t):
    return (t._shape, t._strides, t.dtype) if t is not None else None


_SITES = Sites()


def _conv1_twin(a, cx, grid):
    """cnn_cpu.c's ``conv1_f32`` as the tape of a cpu launch of ``conv_forward_kernel`` where it applies, else None:
    one input channel a group (each tap's dot an outer product), float32 (NaN or inf inputs: the kernel's tape)."""
    m = cnn_twins()
    f32 = np.dtype(np.float32)
    if m is None or a[12] != 1 or cx["ACC"] is not tl.float32 or any(p.dtype != f32 for p in a[:4]):
        return None
    NB, H, W, OH, OW, _, KH, KW, _, OG = a[4:14]
    params = struct.pack("29q", NB, H, W, OH, OW, KH, KW, OG, grid[1], *a[14:33], cx["HAS_B"])
    return T.CpuTwin(m.conv1_f32, params, T.tape_fallback(conv_forward_kernel, grid, a, cx))


T.cpu_twin(conv_forward_kernel, _conv1_twin)


def _site(kind, key, make):
    key = (kind,) + key + (T.FORCE_GPU_BLOCKS,)
    return _SITES.get(key) or _SITES.add(key, make())


def conv_forward(x, w, b, y, stride, padding, dilation, groups):
    """y = conv(x, w) + b; x (N, C, [H,] W), w (O, C / groups, [KH,] KW), y allocated by the caller.
    stride / padding / dilation: (h, w) pairs (h ignored for 1-D)."""
    if y.numel() == 0:
        return y
    dev = y._storage.launch_device
    (NB, C, H, W), sx = _geom4(x)
    (O, CG, KH, KW), sw_ = _geom4(w)
    (_, _, OH, OW), sy = _geom4(y)
    OG = O // groups

    def make():
        bm, bn, bk = _gemm_tiles(NB * OH * OW, OG, CG, dev, y.dtype)
        bm, rows = row_block(NB, OH, OW, bm, dev)
        args = [Ptr(0, x.dtype.np), Ptr(0, w.dtype.np), Ptr(0, (b if b is not None else w).dtype.np),
                Ptr(0, y.dtype.np), NB, H, W, OH, OW, rows, KH, KW, CG, OG, *stride, *padding, *dilation,
                *sx, *sw_, *sy, b.stride(0) if b is not None else 0]
        return Launch(conv_forward_kernel, (cdiv(NB * OH * OW, rows) * cdiv(OG, bn), groups), dev, args,
                      dict(_cexpr(y.dtype, dev, bm, bn, bk), HAS_B=b is not None))
    site = _site("fwd", (_layout(x), _layout(w), _layout(b), _layout(y), stride, padding, dilation, groups, dev),
                 make)
    site(x.data_ptr(), w.data_ptr(), (b if b is not None else w).data_ptr(), y.data_ptr())
    return y


def conv_input_grad(dy, w, b, dx, stride, padding, dilation, groups):
    """dx = d conv / dx applied to dy (= the transposed convolution of dy, plus b per dx channel);
    dy (N, O, [OH,] OW), w (O, C / groups, [KH,] KW), dx (N, C, [H,] W) allocated by the caller."""
    if dx.numel() == 0:
        return dx
    dev = dx._storage.launch_device
    (NB, C, H, W), sx = _geom4(dx)
    (O, CG, KH, KW), sw_ = _geom4(w)
    (_, _, OH, OW), sg = _geom4(dy)
    OG = O // groups

    def make():
        bm, bn, bk = _gemm_tiles(NB * H * W, CG, OG, dev, dx.dtype)
        bm, rows = row_block(NB, H, W, bm, dev)
        args = [Ptr(0, dy.dtype.np), Ptr(0, w.dtype.np), Ptr(0, (b if b is not None else w).dtype.np),
                Ptr(0, dx.dtype.np), NB, H, W, OH, OW, rows, KH, KW, CG, OG, *stride, *padding, *dilation,
                *sg, *sw_, *sx, b.stride(0) if b is not None else 0]
        return Launch(conv_input_grad_kernel, (cdiv(NB * H * W, rows) * cdiv(CG, bn), groups), dev, args,
                      dict(_cexpr(dx.dtype, dev, bm, bn, bk), HAS_B=b is not None))
    site = _site("dx", (_layout(dy), _layout(w), _layout(b), _layout(dx), stride, padding, dilation, groups, dev),
                 make)
    site(dy.data_ptr(), w.data_ptr(), (b if b is not None else w).data_ptr(), dx.data_ptr())
    return dx


def conv_weight_grad(dy, x, dw, stride, padding, dilation, groups):
    """dw = d conv / dw applied to dy; dy (N, O, [OH,] OW), x (N, C, [H,] W), dw (O, C / groups, [KH,] KW)."""
    if dw.numel() == 0:
        return dw
    dev = dw._storage.launch_device
    (NB, C, H, W), sx = _geom4(x)
    (O, CG, KH, KW), sw_ = _geom4(dw)
    (_, _, OH, OW), sg = _geom4(dy)
    OG = O // groups

    def make():
        R = NB * OH * OW
        khb, kwb = _tap_groups(OG, CG, KH, KW, padding, dev)
        bm, bn, bk = _gemm_tiles(OG, CG * khb * kwb, R, dev, dw.dtype)
        if not gpu_blocks(dev):     # the reduction is the long dim: up to 2^18 elements per operand tile
            bm = min(next_pow2(OG), 256)
            bn = next_pow2(CG) * khb * kwb if next_pow2(CG) * khb * kwb <= 256 else bn
            bk = min(next_pow2(R), 2 ** 18 // max(bm, bn))
        bk, rows = row_block(NB, OH, OW, bk, dev)
        args = [Ptr(0, dy.dtype.np), Ptr(0, x.dtype.np), Ptr(0, dw.dtype.np), NB, H, W, OH, OW, rows, KH, KW, CG,
                OG, *stride, *padding, *dilation, *sg, *sx, *sw_]
        grid = (cdiv(OG, bm) * cdiv(CG, bn // (khb * kwb)), cdiv(KH, khb) * cdiv(KW, kwb), groups)
        return Launch(conv_weight_grad_kernel, grid, dev, args, dict(_cexpr(dw.dtype, dev, bm, bn, bk), KHB=khb,
                                                                     KWB=kwb))
    site = _site("dw", (_layout(dy), _layout(x), _layout(dw), stride, padding, dilation, groups, dev), make)
    site(dy.data_ptr(), x.data_ptr(), dw.data_ptr())
    return dw
