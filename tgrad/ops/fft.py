"""Fourier transforms along one dim ``dim`` (``tgrad.fft`` builds every transform from these): complex-to-complex,
real-to-complex (the same pass on a real input: PyTorch's FftR2CBackward0) and the one-sided complex-to-real
inverse.  The kernels work on contiguous rows: the forwards move ``dim`` last (a copy) and return the result
with ``dim`` moved back (a strided view of the new buffer).  Kernel: ``kernels/fft.py``.

Backward (the adjoint of a DFT is the DFT of the opposite sign): c2c(x; L, M, sign, scale) has
grad_x = c2c(grad; L, N, -sign, scale); c2r(X; L, scale) = Re(sum_k w_k X_k e^(2 pi i k n / L)) has
grad_X = w * c2c(grad + 0i; L, N, -1, scale) (w_k = 2 but for k = 0 and k = L / 2), PyTorch's rule.
"""
from ..kernels import complex as KC
from ..kernels import elementwise as KE
from ..kernels import fft as KF
from ..tensor import _new, _wrap_dim, empty, from_host
from . import Op, call as _c
from .complex import _float_view, as_complex, resolve_conj_forward


def _contiguous(x):
    return x if x.is_contiguous() else KE.copy(x, empty(x._shape, x.dtype, x._storage.device))


FOUR_STEP_MIN = 512    # from this length on, a composite length is split in two passes (O(L (n1 + n2)), not O(L^2)),
# a prime one goes through Bluestein's convolution


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
    if n1 is None and L >= FOUR_STEP_MIN:
        return _bluestein(x, L, size, sign, scale)
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


def _last(t, d):
    """``t`` with dim d moved last (a view: no autograd)."""
    order = [k for k in range(t.dim()) if k != d] + [d]
    return t._view_of(tuple(t._shape[k] for k in order), tuple(t._strides[k] for k in order))


def _back(y, d):
    """y (dim d moved last, contiguous) seen with that dim back in place: a strided tensor on y's buffer."""
    n = y.dim()
    if d == n - 1:
        return y
    order = [k for k in range(n - 1)]
    order.insert(d, n - 1)
    return _new(y._storage, y._offset, tuple(y._shape[k] for k in order), tuple(y._strides[k] for k in order),
                y.dtype)


def _bluestein(x, L, size, sign, scale):
    """Bluestein's DFT for a long length with no useful split (a prime): with b_n = exp(sign pi i n^2 / L),
    jk = (j^2 + k^2 - (k - j)^2) / 2 gives X_k = b_k sum_j (x_j b_j) conj(b_(k-j)), a circular convolution of
    length M = 2^m >= N + L - 1 done by M-point DFTs (four steps: O(M log M)).  x: contiguous rows of N <= L."""
    N = x._shape[-1]
    R = x.numel() // N
    dev, dt = x._storage.device, x.dtype
    M = 1 << (N + L - 2).bit_length()
    a = KE.fill(empty((R, M), dt, dev), 0)
    KE.copy(KF.chirp(x, empty((R, N), dt, dev), L, sign), a._view_of((R, N), (M, 1)))
    # h[m] = conj(b_m) for 0 <= m < L and h[M - m] = conj(b_m) for 0 < m < N (the negative lags); the rest unread
    h = KF.chirp(None, empty((1, M), dt, dev), L, -sign)
    if N > 1:
        KE.copy(h._view_of((1, N - 1), (M, 1), 1), h._view_of((1, N - 1), (M, -1), M - 1))
    fa = _dft(a, M, M, -1, 1.0)
    KC.binary(KC.MUL, fa, _dft(h, M, M, -1, 1.0), fa)
    conv = _dft(fa, M, M, 1, 1.0 / M)
    first = KE.copy(conv._view_of((R, size), (M, 1)), empty((R, size), dt, dev))
    return KF.chirp(first, empty(x._shape[:-1] + (size,), dt, dev), L, sign, scale)


def _c2c_pass(x, length, size, sign, scale, d):
    x = _contiguous(_last(x, d))
    if x._shape[-1] < length and _split(length) is not None:       # zero-pad to use the four steps
        p = KE.fill(empty(x._shape[:-1] + (length,), x.dtype, x._storage.device), 0)
        KE.copy(x, p._view_of(x._shape, p._strides))
        x = p
    return _back(_dft(x, length, size, sign, scale), d)


def _rest(rest, ndim):
    return tuple((_wrap_dim(d, ndim), n, size, scale) for d, n, size, scale in rest)


def fft_c2c_forward(self, *, length, size, sign, scale, dim=-1, rest=()):
    """(..., N, ...) complex -> (..., size, ...) complex along ``dim``: the length-``length`` DFT of sign ``sign``
    (-1 forward, +1 inverse) times ``scale``; N < length zero-pads, size < length keeps the first outputs.
    ``rest``: more passes of the same sign, (dim, length, size, scale) each, after the first (fftn as one op).
    A conjugate view is read for its values (the op's ``reads_conj``)."""
    if self._is_conj:
        self = resolve_conj_forward(self)
    y = _c2c_pass(self, length, size, sign, scale, _wrap_dim(dim, self.dim()))
    for d, n, m, sc in _rest(rest, self.dim()):
        y = _c2c_pass(y, n, m, sign, sc, d)
    return y


def _adjoint(ctx, grad, sign, first=None):
    """The adjoint of every pass of an fft_c2c / fft_r2c call (DFTs along different dims commute): one fft_c2c of
    the opposite sign back to the input's sizes."""
    a, shape = ctx.attrs, ctx.input_meta[0].shape
    back = tuple((d, n, shape[d], sc) for d, n, _, sc in _rest(a.get("rest", ()), grad.dim()))
    if first is None:
        d = _wrap_dim(a.get("dim", -1), grad.dim())
        first = (d, a["length"], shape[d], a["scale"])
    d, n, m, sc = first
    return _c("fft_c2c", grad, length=n, size=m, sign=-sign, scale=sc, dim=d, rest=back)


def fft_c2c_backward(ctx, grad):
    return (_adjoint(ctx, grad, ctx.attrs["sign"]),)


def fft_r2c_forward(self, *, length, size, sign, scale, dim=-1, rest=()):
    """fft_c2c of a real (floating) input read as complex; the gradient is the real part of c2c's."""
    return fft_c2c_forward(as_complex(self, self.dtype.to_complex()), length=length, size=size, sign=sign,
                           scale=scale, dim=dim, rest=rest)


def fft_c2r_forward(self, *, length, scale, dim=-1, rest=()):
    """(..., N, ...) complex along ``dim``, N <= length // 2 + 1, the one-sided half of a Hermitian spectrum ->
    (..., length, ...) real: the inverse DFT (sign +1) times ``scale``.  ``rest``: inverse c2c passes
    (dim, length, size, scale) before it (irfftn as one op)."""
    d = _wrap_dim(dim, self.dim())
    x = resolve_conj_forward(self) if self._is_conj else self
    for e, n, m, sc in _rest(rest, self.dim()):
        x = _c2c_pass(x, n, m, 1, sc, e)
    return _back(_c2r_last(_contiguous(_last(x, d)), length, scale), d)


def _c2r_last(x, length, scale):
    out = empty(x._shape[:-1] + (length,), x.dtype.to_real(), x._storage.device)
    if length < FOUR_STEP_MIN:
        return KF.dft(x, out, length, 1, scale, c2r=True)
    # a long length: the full Hermitian spectrum X[L - k] = conj(X[k]) through the four-step c2c, whose
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
    d = _wrap_dim(a.get("dim", -1), grad.dim())
    n = ctx.input_meta[0].shape[d]
    L = a["length"]
    w = from_host([1.0 if k == 0 or 2 * k == L else 2.0 for k in range(n)], grad.dtype, grad.device)
    w = w.reshape((n,) + (1,) * (grad.dim() - 1 - d))
    g = _c("complex", grad, grad.mul(0))
    return (_adjoint(ctx, g, 1, (d, L, n, a["scale"])).mul(w),)


FFT_C2C = Op("fft_c2c", fft_c2c_forward, fft_c2c_backward, "FftC2CBackward0", reads_conj=True)
FFT_R2C = Op("fft_r2c", fft_r2c_forward, fft_c2c_backward, "FftR2CBackward0")
FFT_C2R = Op("fft_c2r", fft_c2r_forward, fft_c2r_backward, "FftC2RBackward0", reads_conj=True)

ENTRIES = [FFT_C2C, FFT_R2C, FFT_C2R]
