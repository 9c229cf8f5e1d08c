"""Fourier transforms along the last dim (``tgrad.fft`` moves the dim there and builds every transform from
these two): complex-to-complex and the one-sided complex-to-real inverse.  Kernel: ``kernels/fft.py``.

Backward (the adjoint of a DFT is the DFT of the opposite sign): c2c(x; L, M, sign, scale) has
grad_x = c2c(grad; L, N, -sign, scale); c2r(X; L, scale) = Re(sum_k w_k X_k e^(2 pi i k n / L)) has
grad_X = w * c2c(grad + 0i; L, N, -1, scale) (w_k = 2 but for k = 0 and k = L / 2), PyTorch's rule.
"""
from ..kernels import complex as KC
from ..kernels import elementwise as KE
from ..kernels import fft as KF
from ..tensor import empty, from_host
from . import Op, call as _c
from .complex import _float_view


def _contiguous(x):
    return x if x.is_contiguous() else KE.copy(x, empty(x._shape, x.dtype, x._storage.device))


FOUR_STEP_MIN = 512    # from this length on, a composite length is split in two passes (O(L (n1 + n2)), not O(L^2))


def _split(L):
    """The divisor of L nearest below sqrt(L) (None for a prime or a short L)."""
    if L < FOUR_STEP_MIN:
        return None
    for n1 in range(int(L ** 0.5), 1, -1):
        if L % n1 == 0:
            return n1
    return None


def _dft(x, L, size, sign, scale):
    """The DFT of contiguous complex x's rows (see fft_c2c_forward); a composite L >= FOUR_STEP_MIN by four steps:
    x[n2 j1 + j2] -> n1-point DFTs over j1 -> twiddles W_L^(j2 k1), transposed -> n2-point DFTs over j2 -> the
    output X[k1 + n1 k2] read back in k order."""
    N = x._shape[-1]
    n1 = _split(L) if N == L else None
    if n1 is None:
        out = empty(x._shape[:-1] + (size,), x.dtype, x._storage.device)
        return KF.dft(x, out, L, sign, scale)
    n2, R = L // n1, x.numel() // L
    t = KE.copy(x._view_of((R, n2, n1), (L, 1, n2)), empty((R, n2, n1), x.dtype, x._storage.device))
    y = _dft(t, n1, n1, sign, 1.0)                                                # (R, n2, n1): [j2, k1]
    z = KF.twiddle(y, empty((R, n1, n2), x.dtype, x._storage.device), n1, n2, sign)
    w = _dft(z, n2, n2, sign, scale)                                              # (R, n1, n2): [k1, k2]
    out = empty(x._shape[:-1] + (size,), x.dtype, x._storage.device)
    if size == L:
        KE.copy(w._view_of((R, n2, n1), (L, 1, n2)), out._view_of((R, n2, n1), (L, n1, 1)))
    else:           # the first ``size`` outputs k = k1 + n1 k2 (one-sided)
        full = KE.copy(w._view_of((R, n2, n1), (L, 1, n2)), empty((R, n2, n1), x.dtype, x._storage.device))
        KE.copy(full._view_of((R, size), (L, 1)), out._view_of((R, size), (size, 1)))
    return out


def fft_c2c_forward(self, *, length, size, sign, scale):
    """(..., N) complex -> (..., size) complex: the length-``length`` DFT of sign ``sign`` (-1 forward, +1
    inverse) times ``scale``; N < length zero-pads, size < length keeps the first outputs."""
    x = _contiguous(self)
    if x._shape[-1] < length and _split(length) is not None:       # zero-pad to use the four steps
        p = KE.fill(empty(x._shape[:-1] + (length,), x.dtype, x._storage.device), 0)
        KE.copy(x, p._view_of(x._shape, p._strides))
        x = p
    return _dft(x, length, size, sign, scale)


def fft_c2c_backward(ctx, grad):
    a = ctx.attrs
    return (_c("fft_c2c", grad, length=a["length"], size=ctx.input_meta[0].shape[-1], sign=-a["sign"],
               scale=a["scale"]),)


def fft_c2r_forward(self, *, length, scale):
    """(..., N) complex, N <= length // 2 + 1, the one-sided half of a Hermitian spectrum -> (..., length) real:
    the inverse DFT (sign +1) times ``scale``."""
    x = _contiguous(self)
    out = empty(x._shape[:-1] + (length,), x.dtype.to_real(), x._storage.device)
    if _split(length) is None:
        return KF.dft(x, out, length, 1, scale, c2r=True)
    # a long composite length: the full Hermitian spectrum X[L - k] = conj(X[k]) through the four-step c2c, whose
    # real part is the result (the imaginary parts of X[0] and X[L / 2] only reach the dropped imaginary part)
    L, N = length, x._shape[-1]
    R = x.numel() // N
    full = KE.fill(empty((R, L), x.dtype, x._storage.device), 0)
    KE.copy(x._view_of((R, N), (N, 1)), full._view_of((R, N), (L, 1)))
    K = min(N, (L + 1) // 2)
    if K > 1:
        KC.unary(KC.CONJ, x._view_of((R, K - 1), (N, 1), x._offset + 1), full._view_of((R, K - 1), (L, -1), L - 1))
    return _real_into(_dft(full, L, L, 1, scale), out, R, L)


def _real_into(z, out, R, L):
    KE.copy(_float_view(z, 0), out._view_of((R, L), (L, 1)))        # the real part
    return out


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
