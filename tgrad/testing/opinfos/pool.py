"""OpInfos for the pooling family: max (with indices) / average / adaptive, 1-D and 2-D."""
import math

import numpy as np

from tgrad import dtypes as D
from tgrad.autograd import dispatch

from ..opinfo import OpInfo, SampleInput

FLOATS = (D.float32, D.float64, D.float16, D.bfloat16)


def _as2d(x):
    return (x[:, :, None], True) if x.ndim == 3 else (x, False)


def _pairs(v, one, fill=1):
    return (fill,) + tuple(v) if one else tuple(v)


def _out(i, k, p, s, d, ceil_mode):
    o = (i + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    return o - 1 if ceil_mode and (o - 1) * s >= i + p else o


def max_pool_ref(x, kernel_size, stride, padding, dilation, ceil_mode=False):
    """(max, argmax ih * W + iw) over each window; the first maximum wins, padding never does."""
    x, one = _as2d(x)
    (KH, KW), (sh, sw), (dh, dw) = [_pairs(v, one) for v in (kernel_size, stride, dilation)]
    ph, pw = _pairs(padding, one, 0)
    N, C, H, W = x.shape
    OH, OW = _out(H, KH, ph, sh, dh, ceil_mode), _out(W, KW, pw, sw, dw, ceil_mode)
    y, idx = np.full((N, C, OH, OW), -np.inf), np.zeros((N, C, OH, OW), np.int64)
    for oh in range(OH):
        for ow in range(OW):
            best = None
            for kh in range(KH):
                for kw in range(KW):
                    ih, iw = oh * sh - ph + kh * dh, ow * sw - pw + kw * dw
                    if 0 <= ih < H and 0 <= iw < W:
                        v = x[:, :, ih, iw]
                        take = v > y[:, :, oh, ow] if best is not None else np.ones(v.shape, bool)
                        best = True
                        y[:, :, oh, ow] = np.where(take, v, y[:, :, oh, ow])
                        idx[:, :, oh, ow] = np.where(take, ih * W + iw, idx[:, :, oh, ow])
    return (y[:, :, 0], idx[:, :, 0]) if one else (y, idx)


def avg_pool_ref(x, kernel_size, stride, padding, ceil_mode=False, count_include_pad=True, divisor_override=None):
    x, one = _as2d(x)
    (KH, KW), (sh, sw) = [_pairs(v, one) for v in (kernel_size, stride)]
    ph, pw = _pairs(padding, one, 0)
    N, C, H, W = x.shape
    OH, OW = _out(H, KH, ph, sh, 1, ceil_mode), _out(W, KW, pw, sw, 1, ceil_mode)
    y = np.zeros((N, C, OH, OW))
    for oh in range(OH):
        for ow in range(OW):
            hs, ws = oh * sh - ph, ow * sw - pw
            he, we = min(hs + KH, H + ph), min(ws + KW, W + pw)
            size = (he - hs) * (we - ws)
            hs, ws, he, we = max(hs, 0), max(ws, 0), min(he, H), min(we, W)
            s = x[:, :, hs:he, ws:we].sum((2, 3))
            div = divisor_override or (size if count_include_pad else max((he - hs) * (we - ws), 1))
            y[:, :, oh, ow] = s / div
    return y[:, :, 0] if one else y


def adaptive_ref(x, output_size, max_=False):
    x, one = _as2d(x)
    OH, OW = _pairs(output_size, one)
    N, C, H, W = x.shape
    y, idx = np.zeros((N, C, OH, OW)), np.zeros((N, C, OH, OW), np.int64)
    for oh in range(OH):
        for ow in range(OW):
            hs, he = oh * H // OH, math.ceil((oh + 1) * H / OH)
            ws, we = ow * W // OW, math.ceil((ow + 1) * W / OW)
            win = x[:, :, hs:he, ws:we]
            if max_:
                flat = win.reshape(N, C, -1)
                a = flat.argmax(-1)
                y[:, :, oh, ow] = flat.max(-1)
                idx[:, :, oh, ow] = (hs + a // (we - ws)) * W + ws + a % (we - ws)
            else:
                y[:, :, oh, ow] = win.mean((2, 3))
    y, idx = (y[:, :, 0], idx[:, :, 0]) if one else (y, idx)
    return (y, idx) if max_ else y


def _max_samples(rng):
    n = rng.normal
    return [SampleInput(n(size=(2, 3, 4, 4)), kernel_size=(2, 2), stride=(2, 2), padding=(0, 0), dilation=(1, 1)),
            SampleInput(n(size=(1, 2, 5, 6)), kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), dilation=(1, 1)),
            SampleInput(n(size=(2, 2, 7)), kernel_size=(3,), stride=(2,), padding=(1,), dilation=(2,),
                        ceil_mode=True),
            SampleInput(n(size=(1, 2, 7, 5)), kernel_size=(3, 2), stride=(2, 3), padding=(1, 1), dilation=(2, 1),
                        ceil_mode=True),
            SampleInput(n(size=(4, 8, 33, 20)), kernel_size=(2, 2), stride=(2, 2), padding=(0, 0), dilation=(1, 1),
                        grad=False),
            SampleInput(n(size=(0, 3, 4, 4)), kernel_size=(2, 2), stride=(2, 2), padding=(0, 0), dilation=(1, 1),
                        grad=False)]


def _avg_samples(rng):
    n = rng.normal
    return [SampleInput(n(size=(2, 3, 4, 4)), kernel_size=(2, 2), stride=(2, 2), padding=(0, 0)),
            SampleInput(n(size=(1, 2, 5, 6)), kernel_size=(3, 3), stride=(2, 2), padding=(1, 1),
                        count_include_pad=False, ceil_mode=True),
            SampleInput(n(size=(2, 2, 7)), kernel_size=(3,), stride=(2,), padding=(1,), ceil_mode=True),
            SampleInput(n(size=(1, 2, 7, 5)), kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), divisor_override=4),
            SampleInput(n(size=(4, 8, 33, 20)), kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), grad=False),
            SampleInput(n(size=(0, 3, 4, 4)), kernel_size=(2, 2), stride=(2, 2), padding=(0, 0), grad=False)]


def _adaptive_samples(rng):
    n = rng.normal
    return [SampleInput(n(size=(2, 3, 5, 4)), output_size=(2, 3)), SampleInput(n(size=(1, 2, 4, 6)), output_size=(1, 1)),
            SampleInput(n(size=(2, 2, 7)), output_size=(3,)), SampleInput(n(size=(1, 2, 3, 3)), output_size=(5, 4)),
            SampleInput(n(size=(4, 8, 33, 20)), output_size=(7, 7), grad=False)]


def _c(name):
    return lambda *a, **k: dispatch.call(name, *a, **k)


LOW = {"float16": (2e-3, 2e-3), "bfloat16": (2e-2, 1.6e-2)}
OPS = [
    OpInfo("max_pool2d", _c("max_pool2d"), max_pool_ref, _max_samples, dtypes=FLOATS, tol=LOW,
           covers=("max_pool2d_backward",)),
    OpInfo("adaptive_max_pool2d", _c("adaptive_max_pool2d"), lambda x, **k: adaptive_ref(x, max_=True, **k),
           _adaptive_samples, dtypes=FLOATS, tol=LOW, covers=("max_pool2d_backward",)),
    OpInfo("avg_pool2d", _c("avg_pool2d"), avg_pool_ref, _avg_samples, dtypes=FLOATS, tol=LOW,
           covers=("avg_pool2d_backward",)),
    OpInfo("adaptive_avg_pool2d", _c("adaptive_avg_pool2d"), adaptive_ref, _adaptive_samples, dtypes=FLOATS,
           tol=LOW, covers=("adaptive_avg_pool2d_backward",)),
]
