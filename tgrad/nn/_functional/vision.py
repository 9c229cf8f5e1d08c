"""Vision functions of ``torch.nn.functional``: padding, interpolation (upsampling) and pixel shuffle,
written as index_selects, products and reshapes of the input (so gradients flow through them)."""
import math
import warnings

import numpy as np

from ... import _creation, _functional
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


def _interp_taps(n, m, scale, align_corners, cubic, f):
    """Source indices and weights (lists of m-arrays, one per tap) of resizing a dim of n to m, in the
    float type f as PyTorch computes them: src = dst * (n - 1) / (m - 1) (align_corners), else
    (dst + 0.5) * s - 0.5 with s = 1 / scale_factor or n / m (clamped at 0 unless cubic).  Linear: the two
    neighbours; cubic: the four around floor(src), clamped to the dim, with Keys' weights (A = -0.75)."""
    if align_corners:
        src = np.arange(m, dtype=f) * (f(n - 1) / f(m - 1) if m > 1 else f(0))
    else:
        s = f(1.0 / scale) if scale else f(n) / f(m)
        src = s * (np.arange(m, dtype=f) + f(0.5)) - f(0.5)
        if not cubic:
            src = np.maximum(src, f(0))
    if not cubic:
        i0 = np.minimum(src.astype(np.int64), n - 1)
        l1 = np.clip(src - i0.astype(f), f(0), f(1))
        return [i0, i0 + (i0 < n - 1)], [f(1) - l1, l1]
    i0 = np.minimum(np.floor(src).astype(np.int64), n - 1)
    t = np.clip(src - i0.astype(f), f(0), f(1))
    a = f(-0.75)

    def near(x):        # |x| <= 1
        return ((a + f(2)) * x - (a + f(3))) * x * x + f(1)

    def far(x):         # 1 < |x| < 2
        return ((a * x - f(5) * a) * x + f(8) * a) * x - f(4) * a
    weights = [far(t + f(1)), near(t), near(f(1) - t), far(f(1) - t + f(1))]
    return [np.clip(i0 - 1 + j, 0, n - 1) for j in range(4)], weights


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """Resize the spatial dims of (N, C, *spatial) input to ``size`` (or floor(in * scale_factor)).

    'nearest' / 'nearest-exact' gather src = floor(dst * s) / floor((dst + 0.5) * s); 'linear' / 'bilinear' /
    'trilinear' blend the two neighbours per dim, last dim first, with PyTorch's source index (scale s = in / out,
    1 / scale_factor, or (in - 1) / (out - 1) with align_corners); 'bicubic' (4-D input) blends the four
    neighbours with cubic convolution weights (A = -0.75), border taps clamped; 'area' is adaptive average pooling.
    Index_selects and products, so gradients flow to the input."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    nd = input.dim() - 2
    if nd not in (1, 2, 3) or mode not in _INTERP_MODES or (mode == "bicubic" and nd != 2):
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
    if antialias:
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
        taps, weights = _interp_taps(n, m, scales[i], align_corners, mode == "bicubic", f)
        shape = [1] * input.dim()
        shape[d] = m
        y = None
        for t, w in zip(taps, weights):     # sum_j x[taps_j] * w_j, left to right as PyTorch's kernel
            t = x.index_select(d, input.new_tensor(t.tolist(), dtype=_int64)) * \
                input.new_tensor(w.tolist()).reshape(shape)
            y = t if y is None else y + t
        x = y
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


def channel_shuffle(input, groups):
    """(N, C, *) -> (N, C, *) with the channels of each of ``groups`` groups interleaved (ShuffleNet):
    view (N, g, C/g, *), swap the two channel dimensions."""
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    n, c, *rest = input.shape
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(input.shape)


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


_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. Please "
                  "specify align_corners=True if the old behavior is desired. See the documentation of grid_sample for "
                  "details.")


def affine_grid(theta, size, align_corners=None):
    """Sampling grid (N, H, W, 2) of the 2-D affine maps theta (N, 2, 3): grid[n, h, w] = theta[n] @ (x_w, y_h, 1)
    with x, y evenly spaced in [-1, 1] (pixel corners, align_corners) or at pixel centres (scaled by
    (steps - 1) / steps).  A bmm of tgrad ops, so theta gets gradients."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) != 4:
        raise NotImplementedError("tgrad: affine_grid of 5-D sizes (3-D affine maps) is not supported yet" if
                                  len(size) == 5 else "affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {tuple(size)}.")
    if theta.dim() != 3 or tuple(theta.shape[-2:]) != (2, 3):
        raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {tuple(size)}. Got "
                         f"{theta.shape}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {tuple(size)}")
    n, _, h, w = size

    def steps(m):
        if m == 1:
            return theta.new_zeros((1,))
        r = _creation.linspace(-1, 1, m, dtype=theta.dtype, device=theta.device)
        return r if align_corners else r * (m - 1) / m
    xs, ys = steps(w), steps(h)
    base = _functional.stack([xs.reshape(1, w).expand(h, w), ys.reshape(h, 1).expand(h, w),
                              theta.new_ones((h, w))], -1)
    return base.reshape(1, h * w, 3).expand(n, h * w, 3).bmm(theta.transpose(1, 2)).reshape(n, h, w, 2)


def _unnormalize(g, size, align_corners):
    """Pixel coordinate of normalized grid values along a dim of ``size``."""
    return (g + 1) * ((size - 1) / 2) if align_corners else (g + 1) * (size / 2) - 0.5


def _pad_coord(x, size, padding_mode, align_corners):
    """Pixel coordinates clipped (border) or reflected and clipped (reflection); 'zeros' leaves them."""
    if padding_mode == "reflection":
        lo, hi = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        if lo == hi:
            return x * 0
        mn, span = lo / 2, (hi - lo) / 2
        a = (x - mn).abs()
        extra = a.fmod(span)
        flips = (a / span).floor()
        x = _functional.where(flips.fmod(2) == 0, extra + mn, span - extra + mn)
    if padding_mode != "zeros":
        x = x.clamp(0, size - 1)
    return x


def _grid_coord(g, size, padding_mode, align_corners):
    """Pixel coordinate of normalized grid values along a dim of ``size``: unnormalized ((g + 1) (size - 1) / 2,
    or (g + 1) size / 2 - 0.5), then clipped (border) or reflected and clipped (reflection)."""
    return _pad_coord(_unnormalize(g, size, align_corners), size, padding_mode, align_corners)


def _cubic_coeffs(t, A=-0.75):
    """The 4 cubic-convolution weights of the taps at -1, 0, 1, 2 for a fraction t (ATen's grid sampler)."""
    def far(x):
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A

    def near(x):
        return ((A + 2) * x - (A + 3)) * x * x + 1
    return far(t + 1), near(t), near(1 - t), far(2 - t)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """out[n, c, h, w] = input[n, c] sampled at grid[n, h, w] = (x, y) in [-1, 1] (left/top to right/bottom):
    'bilinear' blends the four neighbours, 'nearest' takes the nearest pixel (ties to even), 'bicubic' the 4 x 4
    around it (cubic convolution, A = -0.75); outside the input
    'zeros' reads 0, 'border' clamps, 'reflection' mirrors.  Gathers and products of tgrad ops, so input and grid
    both get gradients.  input (N, C, H, W), grid (N, OH, OW, 2)."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if grid.shape[-1] != input.dim() - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.dim() - 2} in last dimension, but got "
                           f"grid with sizes {list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if input.dim() != 4:
        raise NotImplementedError(f"tgrad: grid_sample of {input.dim()}-D input is not supported yet (4-D is)")
    n, c, h, w = input.shape
    oh, ow = grid.shape[1:3]
    if mode == "bicubic":       # taps around the unpadded coordinate, each tap padded (ATen)
        x, y = _unnormalize(grid[..., 0], w, align_corners), _unnormalize(grid[..., 1], h, align_corners)
    else:
        x = _grid_coord(grid[..., 0], w, padding_mode, align_corners)
        y = _grid_coord(grid[..., 1], h, padding_mode, align_corners)
    flat = input.reshape(n, c, h * w)

    def at(ix, iy):
        """input at integer-valued coordinates (N, OH, OW); 0 outside."""
        inside = (ix >= 0) & (ix <= w - 1) & (iy >= 0) & (iy <= h - 1)
        idx = (iy.clamp(0, h - 1) * w + ix.clamp(0, w - 1)).to(_int64).reshape(n, 1, oh * ow).expand(n, c, oh * ow)
        return _functional.where(inside.unsqueeze(1), flat.gather(2, idx).reshape(n, c, oh, ow), 0.0)
    if mode == "nearest":
        return at(x.round(), y.round())
    if mode == "bicubic":
        x0, y0 = x.floor(), y.floor()
        cx, cy = _cubic_coeffs(x - x0), _cubic_coeffs(y - y0)
        taps_x = [_pad_coord(x0 + (i - 1), w, padding_mode, align_corners) for i in range(4)]
        out = None
        for j in range(4):
            ty = _pad_coord(y0 + (j - 1), h, padding_mode, align_corners)
            row = at(taps_x[0], ty) * cx[0].unsqueeze(1)
            for i in range(1, 4):
                row = row + at(taps_x[i], ty) * cx[i].unsqueeze(1)
            out = row * cy[j].unsqueeze(1) if out is None else out + row * cy[j].unsqueeze(1)
        return out
    x0, y0 = x.floor(), y.floor()
    we, sn = x - x0, y - y0              # weights of the east column / south row
    ww, nn_ = 1 - we, 1 - sn
    return (at(x0, y0) * (nn_ * ww).unsqueeze(1) + at(x0 + 1, y0) * (nn_ * we).unsqueeze(1) +
            at(x0, y0 + 1) * (sn * ww).unsqueeze(1) + at(x0 + 1, y0 + 1) * (sn * we).unsqueeze(1))
