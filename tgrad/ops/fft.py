"""Fourier transforms along the last dim (``tgrad.fft`` moves the dim there and builds every transform from
these two): complex-to-complex and the one-sided complex-to-real inverse.  Kernel: ``kernels/fft.py``.

Backward (the adjoint of a DFT is the DFT of the opposite sign): c2c(x; L, M, sign, scale) has
grad_x = c2c(grad; L, N, -sign, scale); c2r(X; L, scale) = Re(sum_k w_k X_k e^(2 pi i k n / L)) has
grad_X = w * c2c(grad + 0i; L, N, -1, scale) (w_k = 2 but for k = 0 and k = L / 2), PyTorch's rule.
"""
from ..kernels import elementwise as KE
from ..kernels import fft as KF
from ..tensor import empty, from_host
from . import Op, call as _c


def _contiguous(x):
    return x if x.is_contiguous() else KE.copy(x, empty(x._shape, x.dtype, x._storage.device))


def fft_c2c_forward(self, *, length, size, sign, scale):
    """(..., N) complex -> (..., size) complex: the length-``length`` DFT of sign ``sign`` (-1 forward, +1
    inverse) times ``scale``; N < length zero-pads, size < length keeps the first outputs."""
    x = _contiguous(self)
    out = empty(x._shape[:-1] + (size,), x.dtype, x._storage.device)
    return KF.dft(x, out, length, sign, scale)


def fft_c2c_backward(ctx, grad):
    a = ctx.attrs
    return (_c("fft_c2c", grad, length=a["length"], size=ctx.input_meta[0].shape[-1], sign=-a["sign"],
               scale=a["scale"]),)


def fft_c2r_forward(self, *, length, scale):
    """(..., N) complex, N <= length // 2 + 1, the one-sided half of a Hermitian spectrum -> (..., length) real:
    the inverse DFT (sign +1) times ``scale``."""
    x = _contiguous(self)
    out = empty(x._shape[:-1] + (length,), x.dtype.to_real(), x._storage.device)
    return KF.dft(x, out, length, 1, scale, c2r=True)


def fft_c2r_backward(ctx, grad):
    a = ctx.attrs
    n = ctx.input_meta[0].shape[-1]
    L = a["length"]
    w = from_host([1.0 if k == 0 or 2 * k == L else 2.0 for k in range(n)], grad.dtype, grad.device)
    g = _c("complex", grad, grad.mul(0))
    return (_c("fft_c2c", g, length=L, size=n, sign=-1, scale=a["scale"]).mul(w),)


FFT_C2C = Op("fft_c2c", fft_c2c_forward, fft_c2c_backward, "FftC2CBackward0")
FFT_C2R = Op("fft_c2r", fft_c2r_forward, fft_c2r_backward, "FftC2RBackward0")

ENTRIES = [FFT_C2C, FFT_C2R]
