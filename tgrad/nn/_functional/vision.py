"""Vision functions of ``torch.nn.functional``: padding, interpolation (upsampling) and pixel shuffle,
written as index_selects, products and reshapes of the input (so gradients flow through them)."""
import math
import warnings

import numpy as np

from ..._nn_functional import _op
from ...dtypes import int64 as _int64
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d


def pad(input, pad, mode="constant", value=None):
    """Padding of ``pad`` = (left, right) for the last dim, then the one before, ...; negative crops.
    mode 'constant' (``value``), or 'reflect' / 'replicate' / 'circular' over the last 1-3 dims, as an
    index_select per padded dim (its backward sums the repeated elements' gradients)."""
    if mode == "constant":
        return _op("pad", input, pad=tuple(pad), mode=mode, value=value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    pad = [int(p) for p in pad]
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    k = len(pad) // 2
    if k not in (1, 2, 3) or input.dim() not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.dim()}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    out = input
    for i in range(k):
        d = input.dim() - 1 - i
        out = out.index_select(d, input.new_tensor(_pad_index(input, d, pad[2 * i], pad[2 * i + 1], mode, i),
                                                   dtype=_int64))
    return out


def _pad_index(input, d, lo, hi, mode, i):
    """Source indices along dim d of a non-constant pad (lo, hi), PyTorch's semantics: reflect / replicate
    index the original dim, circular wraps around what is left after negative pads crop."""
    n = input.shape[d]
    if mode == "reflect" and (lo >= n or hi >= n):
        raise RuntimeError(f"Argument #{4 + 2 * i}: Padding size should be less than the corresponding input "
                           f"dimension, but got: padding ({lo}, {hi}) at dimension {d} of input "
                           f"[{', '.join(str(x) for x in input.shape)}]")
    if mode == "circular" and (lo > n or hi > n):
        raise RuntimeError("Padding value causes wrapping around more than once.")
    if n == 0 or n + lo + hi < 0:
        raise RuntimeError(f"{mode} padding: dim {d} of size {n} cannot be padded by ({lo}, {hi})")
    if mode == "circular":
        start, m = max(-lo, 0), n - max(-lo, 0) - max(-hi, 0)
        return [start + j % m for j in range(-max(lo, 0), m + max(hi, 0))] if m > 0 else []
    idx = range(-lo, n + hi)
    if mode == "replicate":
        return [min(max(j, 0), n - 1) for j in idx]
    return [2 * (n - 1) - abs(j) if abs(j) > n - 1 else abs(j) for j in idx]


_INTERP_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")
_LINEAR_NDIM = {"linear": 1, "bilinear": 2, "trilinear": 3}


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """Resize the spatial dims of (N, C, *spatial) input to ``size`` (or floor(in * scale_factor)).

    'nearest' / 'nearest-exact' gather src = floor(dst * s) / floor((dst + 0.5) * s); 'linear' / 'bilinear' /
    'trilinear' blend the two neighbours per dim, last dim first, with PyTorch's source index (scale s = in / out,
    1 / scale_factor, or (in - 1) / (out - 1) with align_corners); 'area' is adaptive average pooling.
    Index_selects and products, so gradients flow to the input."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    nd = input.dim() - 2
    if nd not in (1, 2, 3) or mode not in _INTERP_MODES:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                                  "the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
                                  f"nearest-exact (got {mode})")
    spatial = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        out = list(size) if isinstance(size, (list, tuple)) else [size] * nd
        if len(out) != nd:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with "
                             f"spatial dimensions of {spatial} and output size of {size}. Please provide input tensor "
                             "in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
        scales = [None] * nd
    elif scale_factor is not None:
        sf = list(scale_factor) if isinstance(scale_factor, (list, tuple)) else [scale_factor] * nd
        if len(sf) != nd:
            raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {spatial} and scale_factor of shape {scale_factor}. Please "
                             "provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in "
                             "(s1, s2, ...,sK) format.")
        out = [math.floor(float(n) * s) for n, s in zip(spatial, sf)]
        scales = [None] * nd if recompute_scale_factor else [float(s) for s in sf]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if mode in _LINEAR_NDIM and _LINEAR_NDIM[mode] != nd:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {_LINEAR_NDIM[mode] + 2}D input")
    if antialias or mode == "bicubic":
        raise NotImplementedError(f"tgrad: interpolate(mode={mode!r}, antialias={antialias}) is not supported yet")
    if mode == "area":
        if nd == 3:
            raise NotImplementedError("tgrad: interpolate(mode='area') of 5-D input is not supported yet")
        return (adaptive_avg_pool1d if nd == 1 else adaptive_avg_pool2d)(input, out)
    f = np.float64 if input.dtype.is_floating_point and input.element_size() == 8 else np.float32
    x = input
    for i in reversed(range(nd)):          # the last dim first, as PyTorch's separable kernel blends
        d, n, m = i + 2, spatial[i], out[i]
        if mode.startswith("nearest"):
            s = f(1.0 / scales[i]) if scales[i] else f(n) / f(m)
            dst = np.arange(m, dtype=f) + (f(0.5) if mode == "nearest-exact" else f(0))
            src = np.minimum(np.floor(dst * s).astype(np.int64), n - 1)
            x = x.index_select(d, input.new_tensor(src.tolist(), dtype=_int64))
            continue
        if align_corners:
            s = f(n - 1) / f(m - 1) if m > 1 else f(0)
            src = np.arange(m, dtype=f) * s
        else:
            s = f(1.0 / scales[i]) if scales[i] else f(n) / f(m)
            src = np.maximum(s * (np.arange(m, dtype=f) + f(0.5)) - f(0.5), f(0))
        i0 = np.minimum(src.astype(np.int64), n - 1)
        i1 = i0 + (i0 < n - 1)
        l1 = np.clip(src - i0.astype(f), f(0), f(1))
        l0 = f(1) - l1
        shape = [1] * input.dim()
        shape[d] = m
        w0, w1 = (input.new_tensor(w.tolist()).reshape(shape) for w in (l0, l1))
        x = x.index_select(d, input.new_tensor(i0.tolist(), dtype=_int64)) * w0 + \
            x.index_select(d, input.new_tensor(i1.tolist(), dtype=_int64)) * w1
    return x


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of interpolate."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: interpolate(mode='nearest')."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: interpolate(mode='bilinear', align_corners=True)."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def pixel_shuffle(input, upscale_factor):
    """(*, C r^2, H, W) -> (*, C, H r, W r): out[..., c, h r + i, w r + j] = in[..., c r^2 + i r + j, h, w]."""
    r = int(upscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *b, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    nb = len(b)
    x = input.reshape(*b, c // (r * r), r, r, h, w)
    x = x.permute(*range(nb), nb, nb + 3, nb + 1, nb + 4, nb + 2)
    return x.reshape(*b, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H r, W r) -> (*, C r^2, H, W), the inverse of pixel_shuffle."""
    r = int(downscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *b, c, h, w = input.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but "
                           f"input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but "
                           f"input.size(-1)={w} is not divisible by {r}")
    nb = len(b)
    x = input.reshape(*b, c, h // r, r, w // r, r)
    x = x.permute(*range(nb), nb, nb + 2, nb + 4, nb + 1, nb + 3)
    return x.reshape(*b, c * r * r, h // r, w // r)
