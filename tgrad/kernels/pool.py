"""Pooling kernels: max / average over windows (fixed or adaptive), forward and backward, no atomics.

Tensors are strided (N, C, H, W) views (1-D pooling: H = 1); outputs are contiguous.  Lanes are the flat
(N * C, H, W) pixels, ROWS of them per program (``_lang.row_block``: on cpu whole planes or whole plane rows, so
every window tap is a strided view for the trace compiler; ROWS = BLOCK on cuda).  A window is either
fixed (start = o * s - pad, taps k * d, k < K) or adaptive (start = floor(o H / OH), end = ceil((o + 1) H / OH),
taps k < K = the longest window).  The backward kernels gather: each input element loops over the outputs
whose window can hold it (fixed: the taps k with (i + pad - k d) / s exact; adaptive: the outputs
floor(i OH / H) .. ceil((i + 1) OH / H)), so no two programs write one element.
"""
import struct

import numpy as np
import triton
import triton.language as tl

from .runtime import Launch, Ptr, Sites, cdiv, gpu_blocks, next_pow2
from .runtime import launcher as T
from .runtime.native import cnn_twins
from ._lang import cast_store, compute_type, row_block


@triton.jit
def _window(o, size, osize, s, p, ADAPTIVE: tl.constexpr):
    """(start, end) of output o's window along one dim (fixed windows: start only, end unused)."""
    if ADAPTIVE:
        return (o * size) // osize, ((o + 1) * size + osize - 1) // osize
    return o * s - p, o * 0


@triton.jit
def _avg_divisor(oh, ow, H, W, KH, KW, sh, sw, ph, pw, divisor,
                 ADAPTIVE: tl.constexpr, COUNT_PAD: tl.constexpr, HAS_DIV: tl.constexpr, OH, OW):
    """PyTorch's avg_pool divisor of output (oh, ow): the override, the window clipped to the padded input
    (count_include_pad) or to the input."""
    if ADAPTIVE:
        hs, he = _window(oh, H, OH, sh, ph, True)
        ws, we = _window(ow, W, OW, sw, pw, True)
        d = (he - hs) * (we - ws)
    else:
        hs = oh * sh - ph
        ws = ow * sw - pw
        he = tl.minimum(hs + KH, H + ph)
        we = tl.minimum(ws + KW, W + pw)
        d = (he - hs) * (we - ws)
        if not COUNT_PAD:   # (at least 1: a ceil_mode window wholly in the padding sums nothing)
            d = tl.maximum((tl.minimum(he, H) - tl.maximum(hs, 0)) * (tl.minimum(we, W) - tl.maximum(ws, 0)), 1)
        if HAS_DIV:
            d = d * 0 + divisor
    return d


@triton.jit
def pool_forward_kernel(x_ptr, y_ptr, i_ptr, NC, C, H, W, OH, OW, ROWS, KH, KW, sh, sw, ph, pw, dh, dw, divisor,
                        s_xn, s_xc, s_xh, s_xw,
                        MAX: tl.constexpr, ADAPTIVE: tl.constexpr, COUNT_PAD: tl.constexpr, HAS_DIV: tl.constexpr,
                        INSIDE: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    """y[n, c, oh, ow] = max (MAX; i = argmax as ih * W + iw, NaN wins) or sum / divisor of x over the window;
    y, i contiguous (N, C, OH, OW); ROWS outputs per program.  INSIDE (fixed windows, every tap of every output
    in the input): loads masked by the lanes alone, and a max starts from tap 0 (what the general loop takes
    there) and compares the other taps (KH * KW - 1 of them) without the validity terms."""
    lane = tl.arange(0, BLOCK)
    offs = tl.program_id(0).to(tl.int64) * ROWS + lane
    ow = offs % OW
    oh = (offs // OW) % OH
    nc = offs // (OW * OH)
    mask = (nc < NC) & (lane < ROWS)
    out = nc * (OH * OW) + oh * OW + ow
    base = x_ptr + (nc // C) * s_xn + (nc % C) * s_xc
    hs, he = _window(oh, H, OH, sh, ph, ADAPTIVE)
    ws, we = _window(ow, W, OW, sw, pw, ADAPTIVE)
    if MAX and INSIDE:
        best = tl.load(base + hs * s_xh + ws * s_xw, mask=mask, other=0).to(COMPUTE)
        bidx = hs * W + ws
        for t in range(1, KH * KW):
            ih = hs + (t // KW) * dh
            iw = ws + (t % KW) * dw
            v = tl.load(base + ih * s_xh + iw * s_xw, mask=mask, other=0).to(COMPUTE)
            take = (v > best) | (v != v)
            best = tl.where(take, v, best)
            bidx = tl.where(take, ih * W + iw, bidx)
        cast_store(y_ptr + out, best, mask)
        tl.store(i_ptr + out, bidx, mask=mask)
        return
    best = tl.full([BLOCK], float("-inf"), COMPUTE)
    bidx = tl.full([BLOCK], -1, tl.int64)
    acc = tl.zeros([BLOCK], COMPUTE)
    for kh in range(KH):
        if ADAPTIVE:
            ih = hs + kh
            vh = ih < he
        else:
            ih = hs + kh * dh
            vh = (ih >= 0) & (ih < H)
        for kw in range(KW):
            if ADAPTIVE:
                iw = ws + kw
                valid = mask & vh & (iw < we)
            else:
                iw = ws + kw * dw
                valid = mask & vh & (iw >= 0) & (iw < W)
                if INSIDE:
                    valid = mask
            v = tl.load(base + ih * s_xh + iw * s_xw, mask=valid, other=0).to(COMPUTE)
            if MAX:
                take = valid & ((v > best) | (v != v) | (bidx < 0))
                best = tl.where(take, v, best)
                bidx = tl.where(take, ih * W + iw, bidx)
            else:
                acc += v
    if MAX:
        cast_store(y_ptr + out, best, mask)
        tl.store(i_ptr + out, bidx, mask=mask)
    else:
        d = _avg_divisor(oh, ow, H, W, KH, KW, sh, sw, ph, pw, divisor, ADAPTIVE, COUNT_PAD, HAS_DIV, OH, OW)
        cast_store(y_ptr + out, acc / d.to(COMPUTE), mask)


@triton.jit
def pool_backward_kernel(dy_ptr, i_ptr, dx_ptr, NC, C, H, W, OH, OW, ROWS, KH, KW, sh, sw, ph, pw, dh, dw, divisor,
                         s_gn, s_gc, s_gh, s_gw, s_in, s_ic, s_ih, s_iw,
                         MAX: tl.constexpr, ADAPTIVE: tl.constexpr, COUNT_PAD: tl.constexpr, HAS_DIV: tl.constexpr,
                         DISJOINT: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    """dx[n, c, ih, iw] = sum over the outputs o whose window holds (ih, iw) of dy[o] * [i[o] == ih * W + iw]
    (MAX) or dy[o] / divisor(o); dx contiguous (N, C, H, W).  KH / KW: taps (fixed) or outputs per input
    (adaptive) to visit.  DISJOINT (fixed windows with stride >= their extent): the one window that can hold
    an input is o = (i + pad) // s, a tap when (i + pad) % s is a multiple of d below the extent.  ROWS inputs
    per program."""
    lane = tl.arange(0, BLOCK)
    offs = tl.program_id(0).to(tl.int64) * ROWS + lane
    iw = offs % W
    ih = (offs // W) % H
    nc = offs // (W * H)
    mask = (nc < NC) & (lane < ROWS)
    n = nc // C
    c = nc % C
    g_base = dy_ptr + n * s_gn + c * s_gc
    i_base = i_ptr + n * s_in + c * s_ic
    acc = tl.zeros([BLOCK], COMPUTE)
    for kh in range(1 if DISJOINT else KH):
        if DISJOINT:
            oh = (ih + ph) // sh
            rh = ih + ph - oh * sh
            vh = (rh % dh == 0) & (rh <= (KH - 1) * dh) & (oh < OH)
        elif ADAPTIVE:
            oh = (ih * OH) // H + kh
            vh = oh < ((ih + 1) * OH + H - 1) // H
        else:
            th = ih + ph - kh * dh
            oh = th // sh
            vh = (th >= 0) & (oh * sh == th) & (oh < OH)
        for kw in range(1 if DISJOINT else KW):
            if DISJOINT:
                ow = (iw + pw) // sw
                rw = iw + pw - ow * sw
                valid = mask & vh & (rw % dw == 0) & (rw <= (KW - 1) * dw) & (ow < OW)
            elif ADAPTIVE:
                ow = (iw * OW) // W + kw
                valid = mask & vh & (ow < ((iw + 1) * OW + W - 1) // W)
            else:
                tw = iw + pw - kw * dw
                ow = tw // sw
                valid = mask & vh & (tw >= 0) & (ow * sw == tw) & (ow < OW)
            g = tl.load(g_base + oh * s_gh + ow * s_gw, mask=valid, other=0).to(COMPUTE)
            if MAX:
                hit = tl.load(i_base + oh * s_ih + ow * s_iw, mask=valid, other=-1) == ih * W + iw
                acc += tl.where(hit, g, 0.0)
            else:
                d = _avg_divisor(oh, ow, H, W, KH, KW, sh, sw, ph, pw, divisor, ADAPTIVE, COUNT_PAD, HAS_DIV,
                                 OH, OW)
                acc += tl.where(valid, g / d.to(COMPUTE), 0.0)
    cast_store(dx_ptr + nc * (H * W) + ih * W + iw, acc, mask)


def _pool_twin(args, cx, grid, backward=False):
    """cnn_cpu.c's twin of a cpu launch of ``pool_forward_kernel`` (``backward``: ``pool_backward_kernel``) bound
    to its fixed arguments, or None where the kernel's tape runs: max over fixed windows, float32 values (a backward
    of overlapping windows with a non-finite gradient runs the tape)."""
    m = cnn_twins()
    f32 = np.dtype(np.float32)
    vals = (args[0], args[2]) if backward else args[:2]
    idx = args[1] if backward else args[2]
    if (m is None or not cx["MAX"] or cx["ADAPTIVE"] or cx["COMPUTE"] is not tl.float32
            or any(a.dtype != f32 for a in vals) or idx.dtype != np.dtype(np.int64)):
        return None
    geo = args[3:9] + args[10:18]               # NC, C, H, W, OH, OW; KH, KW, sh, sw, ph, pw, dh, dw
    strides = args[19:27] if backward else args[19:23] + [0] * 4
    params = struct.pack("23q", *geo, *strides, cx["DISJOINT"] if backward else cx["INSIDE"])
    fallback = T.tape_fallback(pool_backward_kernel if backward else pool_forward_kernel, grid, args, cx)
    return T.CpuTwin(m.max_pool_backward_f32 if backward else m.max_pool_f32, params, fallback)


def _geom4(t):
    if t.dim() == 3:
        n, c, l = t.shape
        sn, sc, sl = t.stride()
        return (n, c, 1, l), (sn, sc, 0, sl)
    return tuple(t.shape), tuple(t.stride())


T.cpu_twin(pool_forward_kernel, _pool_twin)
T.cpu_twin(pool_backward_kernel, lambda args, cx, grid: _pool_twin(args, cx, grid, backward=True))


def _grid(NC, H, W, dev):
    """(BLOCK, ROWS) of a launch over NC planes of H x W lanes: 256-lane blocks on cuda; on cpu up to 65536
    lanes a block (``row_block``)."""
    if gpu_blocks(dev):
        return 256, 256
    return row_block(NC, H, W, max(16, min(next_pow2(NC * H * W), 65536)), dev)


_SITES = Sites()


def _cexpr(kind, dtype, block):
    return {"MAX": kind["max"], "ADAPTIVE": kind["adaptive"], "COUNT_PAD": kind.get("count_include_pad", True),
            "HAS_DIV": kind.get("divisor") is not None, "COMPUTE": compute_type(dtype), "BLOCK": block}


def _win(kind):
    """(KH, KW, sh, sw, ph, pw, dh, dw, divisor) ints of a window description."""
    return (*kind["taps"], *kind["stride"], *kind["padding"], *kind["dilation"], int(kind.get("divisor") or 1))


def pool_forward(x, y, idx, kind):
    """y (and idx, int64, for max) = pool of x over the windows ``kind`` describes: a dict with max,
    adaptive, taps (KH, KW), stride, padding, dilation (pairs), count_include_pad, divisor."""
    total = y.numel()
    if total == 0:
        return y, idx
    dev = y._storage.launch_device
    (N, C, H, W), sx = _geom4(x)
    (_, _, OH, OW), _ = _geom4(y)
    key = ("f", x._shape, x._strides, x.dtype, y._shape, tuple(sorted(kind.items())), dev)
    site = _SITES.get(key)
    if site is None:
        bm, rows = _grid(N * C, OH, OW, dev)
        args = [Ptr(0, x.dtype.np), Ptr(0, y.dtype.np), Ptr(0, (idx if idx is not None else y).dtype.np),
                N * C, C, H, W, OH, OW, rows, *_win(kind), *sx]
        cx = _cexpr(kind, y.dtype, bm)
        KH, KW, sh, sw, ph, pw, dh, dw = _win(kind)[:8]
        cx["INSIDE"] = not kind["adaptive"] and ph == pw == 0 and (OH - 1) * sh + (KH - 1) * dh < H \
            and (OW - 1) * sw + (KW - 1) * dw < W
        site = _SITES.add(key, Launch(pool_forward_kernel, (cdiv(N * C * OH * OW, rows),), dev, args, cx))
    site(x.data_ptr(), y.data_ptr(), (idx if idx is not None else y).data_ptr())
    return y, idx


def pool_backward(dy, idx, dx, kind):
    """dx (contiguous, the input's shape) of pool_forward from dy (and its idx for max)."""
    total = dx.numel()
    if total == 0:
        return dx
    dev = dx._storage.launch_device
    (N, C, H, W), _ = _geom4(dx)
    (_, _, OH, OW), sg = _geom4(dy)
    si = _geom4(idx)[1] if idx is not None else sg
    key = ("b", dy._shape, dy._strides, dy.dtype, idx._strides if idx is not None else None, dx._shape,
           tuple(sorted(kind.items())), dev)
    site = _SITES.get(key)
    if site is None:
        bm, rows = _grid(N * C, H, W, dev)
        args = [Ptr(0, dy.dtype.np), Ptr(0, (idx if idx is not None else dy).dtype.np), Ptr(0, dx.dtype.np),
                N * C, C, H, W, OH, OW, rows, *_win(kind), *sg, *si]
        cx = _cexpr(kind, dx.dtype, bm)
        cx["DISJOINT"] = not kind["adaptive"] and all(s >= (k - 1) * d + 1 for s, k, d in
                                                      zip(kind["stride"], kind["taps"], kind["dilation"]))
        site = _SITES.add(key, Launch(pool_backward_kernel, (cdiv(N * C * H * W, rows),), dev, args, cx))
    site(dy.data_ptr(), (idx if idx is not None else dy).data_ptr(), dx.data_ptr())
    return dx
