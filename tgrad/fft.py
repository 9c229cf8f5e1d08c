"""``tgrad.fft``: PyTorch's (and numpy's) discrete Fourier transforms.

Every transform is a 1-D pass along one dim made of the two table ops of ``ops/fft.py`` (complex-to-complex
and one-sided complex-to-real): real inputs are read as complex, ``rfft`` keeps the first n // 2 + 1
outputs of the complex transform, ``hfft`` / ``ihfft`` are irfft / rfft of the conjugate with the direction
of ``norm`` swapped (numpy's definitions), n-dimensional forms apply one pass per dim.  ``n`` / ``s`` trim or
zero-pad the input; ``norm``: "backward" (default: 1/n on the inverse), "ortho" (1/sqrt(n) both ways) or
"forward" (1/n on the forward transform).  Autograd flows through the passes (the backward of a DFT is a DFT).
"""
import math
import warnings

import numpy as np

from . import dtypes as D
from ._creation import arange, ones, tensor
from ._functional import cat
from ._functional_more import complex as complex_, view_as_real
from .autograd import dispatch as _dispatch
from .tensor import _wrap_dim

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _scale(norm, n, inverse):
    if norm is None or norm == "backward":
        return 1.0 / n if inverse else 1.0
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    if norm == "forward":
        return 1.0 if inverse else 1.0 / n
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


_SWAP = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def _swap(norm):
    _scale(norm, 1, False)      # checks the name
    return _SWAP[norm]


def _complex(x):
    """x as a complex tensor (integers through the default float dtype), differentiably."""
    if x.dtype.is_complex:
        return x
    return x.to(x.dtype.to_complex() if x.dtype.is_floating_point else D.get_default_dtype().to_complex())


def _real(x, name):
    if x.dtype.is_complex:
        raise RuntimeError(f"{name} expects a real input tensor, but got {x.dtype.legacy_name}")
    return x if x.dtype.is_floating_point else x.to(D.get_default_dtype())


def _points(n):
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return n


def _pass(x, n, dim, norm, inverse, size=None):
    """One pass along ``dim`` (complex-to-complex, or real-to-complex for a real x): length n (None: the dim's
    size), the first ``size`` outputs."""
    dim = _wrap_dim(dim, x.dim())
    n = _points(x.shape[dim] if n is None else n)
    if x.shape[dim] > n:
        x = x.narrow(dim, 0, n)
    return _dispatch.call("fft_c2c" if x.dtype.is_complex else "fft_r2c", x, length=n,
                          size=n if size is None else size, sign=1 if inverse else -1,
                          scale=_scale(norm, n, inverse), dim=dim)


def _c2r(x, n, dim, norm):
    """The one-sided inverse along ``dim`` to n real points (None: 2 (size - 1))."""
    dim = _wrap_dim(dim, x.dim())
    n = _points(2 * (x.shape[dim] - 1) if n is None else n)
    if x.shape[dim] > n // 2 + 1:
        x = x.narrow(dim, 0, n // 2 + 1)
    return _dispatch.call("fft_c2r", x, length=n, scale=_scale(norm, n, True), dim=dim)


def _input(x):
    """x as the transforms read it: complex or floating (integers through the default float dtype)."""
    return x if x.dtype.is_complex or x.dtype.is_floating_point else x.to(D.get_default_dtype())


# ------------------------------------------------------------------ 1-D
def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """X[k] = sum_j x[j] exp(-2 pi i j k / n) along ``dim``."""
    return _out(_pass(_input(input), n, dim, norm, False), out)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """x[j] = 1/n sum_k X[k] exp(2 pi i j k / n) along ``dim``; of a real x, as PyTorch: the conjugate (a
    conjugate view) of the forward transform with the inverse's scale."""
    x = _input(input)
    if x.dtype.is_complex:
        return _out(_pass(x, n, dim, norm, True), out)
    d = _wrap_dim(dim, x.dim())
    m = _points(x.shape[d] if n is None else n)
    if x.shape[d] > m:
        x = x.narrow(d, 0, m)
    y = _dispatch.call("fft_r2c", x, length=m, size=m, sign=-1, scale=_scale(norm, m, True), dim=d)
    return _out(y.conj(), out)


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The first n // 2 + 1 outputs of the fft of a real input."""
    x = _real(input, "rfft")
    d = _wrap_dim(dim, x.dim())
    m = _points(x.shape[d] if n is None else n)
    return _out(_pass(x, m, d, norm, False, size=m // 2 + 1), out)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The real inverse of rfft: n (default 2 (size - 1)) real points from the one-sided half."""
    return _out(_c2r(_complex(input), n, dim, norm), out)


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The fft of a Hermitian-symmetric signal given by its first half: irfft(conj(x)) with norm's direction
    swapped (real output of n = 2 (size - 1) points by default)."""
    return _out(_c2r(_complex(input).conj(), n, dim, _swap(norm)), out)


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of hfft: conj(rfft(x)) with norm's direction swapped."""
    return _out(rfft(input, n, dim, _swap(norm)).conj(), out)


# ------------------------------------------------------------------ n-D
def _dims(x, s, dim):
    """PyTorch's (s, dim) pairing: dim defaults to the last len(s) dims (or all), s to None per dim."""
    if dim is None:
        if s is None:
            dims = list(range(x.dim()))
        else:
            if len(s) > x.dim():
                raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {x.dim()} "
                                   "dimensions.")
            dims = list(range(x.dim() - len(s), x.dim()))
    else:
        dims = [_wrap_dim(d, x.dim()) for d in ((dim,) if isinstance(dim, int) else dim)]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is None:
        s = [None] * len(dims)
    elif len(s) != len(dims):
        raise RuntimeError("When given, dim and shape arguments must have the same length")
    return [None if n == -1 else n for n in s], dims


def _trim(x, s, dims):
    """x narrowed to s[i] along dims[i] where longer; the lengths (None: the dim's size)."""
    ns = []
    for n, d in zip(s, dims):
        n = _points(x.shape[d] if n is None else n)
        if x.shape[d] > n:
            x = x.narrow(d, 0, n)
        ns.append(n)
    return x, ns


def _c2c(x, ns, dims, norm, inverse, scale_inverse=None):
    """One fft_c2c op (FftC2CBackward0) over all of ``dims`` (lengths ns, x already trimmed)."""
    si = inverse if scale_inverse is None else scale_inverse
    passes = [(d, n, n, _scale(norm, n, si)) for n, d in zip(ns, dims)]
    d, n, _, sc = passes[0]
    return _dispatch.call("fft_c2c", x, length=n, size=n, sign=1 if inverse else -1, scale=sc, dim=d,
                          rest=tuple(passes[1:]))


def _c2c_n(input, s, dim, norm, out, inverse):
    """fftn, ifftn: a real input made complex first (ToCopyBackward0), then one fft_c2c over all of ``dim``."""
    x = _complex(input)
    s, dims = _dims(x, s, dim)
    if not dims:
        return _out(x, out)
    x, ns = _trim(x, s, dims)
    return _out(_c2c(x, ns, dims, norm, inverse), out)


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    return _c2c_n(input, s, dim, norm, out, False)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    return _c2c_n(input, s, dim, norm, out, True)


def _r2c_n(x, s, dims, norm):
    """rfftn's one fft_r2c op (FftR2CBackward0): rfft over the last of ``dims``, then fft over the others."""
    x, ns = _trim(x, s, dims)
    rest = tuple((d, n, n, _scale(norm, n, False)) for n, d in zip(ns[:-1], dims[:-1]))
    n = ns[-1]
    return _dispatch.call("fft_r2c", x, length=n, size=n // 2 + 1, sign=-1, scale=_scale(norm, n, False),
                          dim=dims[-1], rest=rest)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """rfft over the last of ``dim``, then fft over the others: one op, as PyTorch's."""
    x = _real(input, "rfftn")
    s, dims = _dims(x, s, dim)
    if not dims:
        raise RuntimeError("rfftn must transform at least one axis")
    return _out(_r2c_n(x, s, dims, norm), out)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """ifft over all of ``dim`` but the last, then irfft over the last (default 2 (size - 1) points): one op,
    as PyTorch's."""
    x = _complex(input)
    s, dims = _dims(x, s, dim)
    if not dims:
        raise RuntimeError("irfftn must transform at least one axis")
    x, ns = _trim(x, s[:-1], dims[:-1])
    rest = tuple((d, n, n, _scale(norm, n, True)) for n, d in zip(ns, dims[:-1]))
    d = dims[-1]
    n = _points(2 * (x.shape[d] - 1) if s[-1] is None else s[-1])
    if x.shape[d] > n // 2 + 1:
        x = x.narrow(d, 0, n // 2 + 1)
    return _out(_dispatch.call("fft_c2r", x, length=n, scale=_scale(norm, n, True), dim=d, rest=rest), out)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return fftn(input, s, dim, norm, out=out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return ifftn(input, s, dim, norm, out=out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return rfftn(input, s, dim, norm, out=out)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return irfftn(input, s, dim, norm, out=out)


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-dimensional fft of a Hermitian-symmetric signal given by its last-dim half: irfftn(conj(x)) with
    norm's direction swapped (real output), computed as PyTorch's: fft over all of ``dim`` but the last, conj,
    irfft over the last."""
    x = _complex(input)
    s, dims = _dims(x, s, dim)
    if len(dims) > 1:
        x, ns = _trim(x, s[:-1], dims[:-1])
        x = _c2c(x, ns, dims[:-1], norm, False)
    return _out(_c2r(x.conj(), s[-1] if dims else None, dims[-1] if dims else -1, _swap(norm)), out)


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of hfftn: conj(rfftn(x)) with norm's direction swapped, as PyTorch's: rfft over the last of
    ``dim``, conj (a conjugate view for one dim, else a plain tensor), then the inverse fft over the others."""
    x = _real(input, "ihfftn")
    s, dims = _dims(x, s, dim)
    if not dims:
        raise RuntimeError("ihfftn must transform at least one axis")
    y = _r2c_n(x, s[-1:], dims[-1:], _swap(norm))
    if len(dims) == 1:
        return _out(y.conj(), out)
    y, ns = _trim(y.conj_physical(), s[:-1], dims[:-1])
    return _out(_c2c(y, ns, dims[:-1], norm, True), out)


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return hfftn(input, s, dim, norm, out=out)


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return ihfftn(input, s, dim, norm, out=out)


def _out(r, out):
    if out is None:
        return r
    if out.shape != r.shape:
        out.resize_(r.shape)
    return out.copy_(r)


# ------------------------------------------------------------------ helpers
def fftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False):
    """Sample frequencies [0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d n)."""
    f = arange(n, dtype=dtype or D.get_default_dtype(), device=device)
    f = (f - (f >= (n + 1) // 2).to(f.dtype) * n) / (d * n)
    return f.requires_grad_(requires_grad) if requires_grad else f


def rfftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False):
    """Sample frequencies [0, 1, ..., n // 2] / (d n) of rfft."""
    f = arange(n // 2 + 1, dtype=dtype or D.get_default_dtype(), device=device) / (d * n)
    return f.requires_grad_(requires_grad) if requires_grad else f


def _shift(x, dim, sign):
    dims = list(range(x.dim())) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    if not dims:
        return x
    return x.roll([sign * (x.shape[d] // 2) for d in dims], dims)


def fftshift(input, dim=None):
    """Roll the zero frequency to the centre: by n // 2 along each of ``dim`` (default all)."""
    return _shift(input, dim, 1)


def ifftshift(input, dim=None):
    """The inverse of fftshift: roll by -(n // 2)."""
    return _shift(input, dim, -1)


# ------------------------------------------------------------------ short-time transforms (tgrad.stft / istft)
def _pad_last(x, p, mode):
    """x (..., L) padded by p on both sides of the last dim: reflect / replicate / circular (a gather) or constant."""
    if p == 0:
        return x
    L = x.shape[-1]
    if mode == "constant":
        z = x.new_zeros(x.shape[:-1] + (p,))
        return _cat([z, x, z])
    i = np.arange(-p, L + p)
    if mode == "reflect":
        if p >= L:
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({p}, {p}) at dimension {x.dim() - 1} of input {list(x.shape)}")
        i = np.abs(i)
        i = np.where(i >= L, 2 * (L - 1) - i, i)
    elif mode == "replicate":
        i = np.clip(i, 0, L - 1)
    elif mode == "circular":
        i = i % L
    else:
        raise NotImplementedError(f"stft: pad_mode '{mode}' is not supported (constant, reflect, replicate, "
                                  "circular)")
    return x.index_select(-1, tensor(i, device=x.device))


def _cat(ts):
    return cat(ts, -1)


def _window(window, win_length, n_fft, like, name):
    """The window (default: ones) centred in n_fft points with zeros, as PyTorch pads a shorter one."""
    if window is None:
        w = ones(win_length, dtype=like.dtype.to_real() if like.dtype.is_complex else like.dtype, device=like.device)
    else:
        if window.dim() != 1 or window.shape[0] != win_length:
            raise RuntimeError(f"{name}: expected a 1D window tensor of size equal to win_length={win_length}, "
                               f"but got window with size {list(window.shape)}")
        w = window
    left = (n_fft - win_length) // 2
    if left or n_fft - win_length - left:
        w = _cat([w.new_zeros((left,)), w, w.new_zeros((n_fft - win_length - left,))])
    return w


def _lengths(n_fft, hop_length, win_length, name):
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if hop <= 0:
        raise RuntimeError(f"{name}: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{name}: expected 0 < win_length <= n_fft, but got win_length={win}")
    return hop, win


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None):
    """Short-time Fourier transform: (L) or (B, L) -> (n_fft // 2 + 1 (onesided) or n_fft, frames) per signal.

    Frame t is input[t hop : t hop + n_fft] (after padding n_fft // 2 each side with ``pad_mode`` if ``center``)
    times the window (ones by default, a shorter one centred with zeros); then its fft (rfft when onesided,
    the default for real input and window), scaled by n_fft^-1/2 if ``normalized``."""
    real_in = not input.dtype.is_complex and (window is None or not window.dtype.is_complex)
    if return_complex is None:
        if real_in:
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will "
                               "further require that return_complex=True in a future PyTorch release.")
        return_complex = True
    if not return_complex:
        if not real_in:
            raise RuntimeError("stft requires the return_complex parameter be given for complex inputs")
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch release, stft will return "
                      "complex tensors for all inputs, and return_complex=False will raise an error.\nNote: you can "
                      "still call torch.view_as_real on the complex output to recover the old return format.",
                      UserWarning, stacklevel=2)
    if input.dim() not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.dim()}D tensor")
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied,which is known to cause "
                      "spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are "
                      "recommended to reduce spectral leakage.To suppress this warning and use a rectangular "
                      "window, explicitly set `window=torch.ones(n_fft, device=<device>)`.", UserWarning,
                      stacklevel=2)
    hop, win = _lengths(n_fft, hop_length, win_length, "stft")
    x = input if input.dim() == 2 else input.unsqueeze(0)
    if not x.dtype.is_floating_point and not x.dtype.is_complex:
        x = x.to(D.get_default_dtype())
    if center:
        x = _pad_last(x, n_fft // 2, pad_mode)
    if not 0 < n_fft <= x.shape[-1]:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {x.shape[-1]}, but got n_fft={n_fft}")
    frames = x.unfold(-1, n_fft, hop) * _window(window, win, n_fft, x, "stft")        # (B, frames, n_fft)
    if onesided is None:
        onesided = real_in
    elif onesided and not real_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    spec = (rfft(frames, dim=-1, norm=norm) if onesided else fft(frames, dim=-1, norm=norm)).transpose(-1, -2)
    if input.dim() == 1:
        spec = spec.squeeze(0)
    return spec if return_complex else view_as_real(spec)


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """The inverse of stft by overlap-add: frames = irfft (onesided) or ifft of each column, times the window,
    summed at their offsets and divided by the summed squared window (which must not vanish)."""
    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    if input.dim() not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex dtype, but got "
                           f"{input.dim()}D")
    hop, win = _lengths(n_fft, hop_length, win_length, "istft")
    x = input if input.dim() == 3 else input.unsqueeze(0)
    B, n_freq, n_frames = x.shape
    if onesided is None:
        onesided = n_freq != n_fft
    if onesided and n_freq != n_fft // 2 + 1:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the input tensor to match "
                           f"n_fft / 2 + 1 when onesided=True, but got {n_freq}")
    if not onesided and n_freq != n_fft:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the input tensor to match "
                           f"n_fft when onesided=False, but got {n_freq}")
    if onesided and return_complex:
        raise RuntimeError("cannot have onesided output if window or input is complex")
    w = _window(window, win, n_fft, x, "istft")
    norm = "ortho" if normalized else "backward"
    cols = x.transpose(1, 2)                                                  # (B, frames, n_freq)
    frames = irfft(cols, n=n_fft, dim=-1, norm=norm) if onesided else ifft(cols, dim=-1, norm=norm)
    if not return_complex and frames.dtype.is_complex:
        frames = frames.real
    frames = frames * w
    total = n_fft + hop * (n_frames - 1)
    idx = tensor((np.arange(n_frames)[:, None] * hop + np.arange(n_fft)[None, :]).reshape(-1), device=x.device)
    y = _overlap_add(frames.reshape(B, -1), idx, total)
    env = _overlap_add((w * w).expand(n_frames, n_fft).reshape(1, -1), idx, total)
    start = n_fft // 2 if center else 0
    end = total - n_fft // 2 if center else total
    if length is not None:
        end = start + length
    y, env = y[:, start:min(end, total)], env[:, start:min(end, total)]
    lo = env.abs().min().item() if env.numel() else 1.0
    if lo < 1e-11:
        raise RuntimeError(f"istft: window overlap add min: {lo:g} (the summed squared window vanishes somewhere: "
                           "nothing to divide by)")
    y = y / env
    if end > total:
        warnings.warn("The length of signal is shorter than the length parameter. Result is being padded with zeros "
                      "in the tail. Please check your center and hop_length settings.", UserWarning, stacklevel=2)
        y = _cat([y, y.new_zeros((B, end - total))])
    return y.squeeze(0) if input.dim() == 2 else y


def _overlap_add(v, idx, total):
    """out[b, idx[j]] += v[b, j] over (B, total) zeros (complex: the parts apart)."""
    if v.dtype.is_complex:
        return complex_(_overlap_add(v.real, idx, total), _overlap_add(v.imag, idx, total))
    return v.new_zeros((v.shape[0], total)).index_add(1, idx, v)
