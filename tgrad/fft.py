"""``tgrad.fft``: PyTorch's (and numpy's) discrete Fourier transforms.

Every transform is a 1-D pass along one dim made of the two table ops of ``ops/fft.py`` (complex-to-complex
and one-sided complex-to-real): real inputs are read as complex, ``rfft`` keeps the first n // 2 + 1
outputs of the complex transform, ``hfft`` / ``ihfft`` are irfft / rfft of the conjugate with the direction
of ``norm`` swapped (numpy's definitions), n-dimensional forms apply one pass per dim.  ``n`` / ``s`` trim or
zero-pad the input; ``norm``: "backward" (default: 1/n on the inverse), "ortho" (1/sqrt(n) both ways) or
"forward" (1/n on the forward transform).  Autograd flows through the passes (the backward of a DFT is a DFT).
"""
import math

from . import dtypes as D
from ._creation import arange
from .autograd import dispatch as _dispatch
from .tensor import _wrap_dim

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
           "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


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
    """One complex-to-complex pass along ``dim``: length n (None: the dim's size), the first ``size`` outputs."""
    dim = _wrap_dim(dim, x.dim())
    n = _points(x.shape[dim] if n is None else n)
    if x.shape[dim] > n:
        x = x.narrow(dim, 0, n)
    y = _dispatch.call("fft_c2c", x.movedim(dim, -1), length=n, size=n if size is None else size,
                       sign=1 if inverse else -1, scale=_scale(norm, n, inverse))
    return y.movedim(-1, dim)


def _c2r(x, n, dim, norm):
    """The one-sided inverse along ``dim`` to n real points (None: 2 (size - 1))."""
    dim = _wrap_dim(dim, x.dim())
    n = _points(2 * (x.shape[dim] - 1) if n is None else n)
    if x.shape[dim] > n // 2 + 1:
        x = x.narrow(dim, 0, n // 2 + 1)
    y = _dispatch.call("fft_c2r", x.movedim(dim, -1), length=n, scale=_scale(norm, n, True))
    return y.movedim(-1, dim)


# ------------------------------------------------------------------ 1-D
def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """X[k] = sum_j x[j] exp(-2 pi i j k / n) along ``dim``."""
    return _out(_pass(_complex(input), n, dim, norm, False), out)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """x[j] = 1/n sum_k X[k] exp(2 pi i j k / n) along ``dim``."""
    return _out(_pass(_complex(input), n, dim, norm, True), out)


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The first n // 2 + 1 outputs of the fft of a real input."""
    x = _real(input, "rfft")
    d = _wrap_dim(dim, x.dim())
    m = _points(x.shape[d] if n is None else n)
    return _out(_pass(_complex(x), m, d, norm, False, size=m // 2 + 1), out)


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


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    x = _complex(input)
    s, dims = _dims(x, s, dim)
    for n, d in zip(s, dims):
        x = _pass(x, n, d, norm, False)
    return _out(x, out)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    x = _complex(input)
    s, dims = _dims(x, s, dim)
    for n, d in zip(s, dims):
        x = _pass(x, n, d, norm, True)
    return _out(x, out)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """rfft over the last of ``dim``, then fft over the others."""
    x = _real(input, "rfftn")
    s, dims = _dims(x, s, dim)
    if not dims:
        raise RuntimeError("rfftn must transform at least one axis")
    x = rfft(x, s[-1], dims[-1], norm)
    for n, d in zip(s[:-1], dims[:-1]):
        x = _pass(x, n, d, norm, False)
    return _out(x, out)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """ifft over all of ``dim`` but the last, then irfft over the last (default 2 (size - 1) points)."""
    x = _complex(input)
    s, dims = _dims(x, s, dim)
    if not dims:
        raise RuntimeError("irfftn must transform at least one axis")
    for n, d in zip(s[:-1], dims[:-1]):
        x = _pass(x, n, d, norm, True)
    return _out(_c2r(x, s[-1], dims[-1], norm), out)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return fftn(input, s, dim, norm, out=out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return ifftn(input, s, dim, norm, out=out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return rfftn(input, s, dim, norm, out=out)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return irfftn(input, s, dim, norm, out=out)


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
