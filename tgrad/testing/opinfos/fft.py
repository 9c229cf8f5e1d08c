"""OpInfos for the Fourier transforms (ops/fft.py) through tgrad.fft, against numpy.fft: complex inputs are
given as real and imaginary parts, complex outputs compared as view_as_real pairs."""
import numpy as np

from ..opinfo import OpInfo, SampleInput
from ... import fft as F
from ..._functional_more import complex as cx, view_as_real


def _r(z):
    return np.stack([z.real, z.imag], -1)


def _samples(rng):
    out = []
    for s, kw in [((8,), {}), ((2, 5), {"n": 7, "norm": "ortho"}), ((3, 6), {"dim": 0, "norm": "forward"}),
                  ((4,), {"n": 3}), ((2, 33), {}), ((1,), {})]:
        out.append(SampleInput(rng.standard_normal(s), rng.standard_normal(s), grad=int(np.prod(s)) <= 12, **kw))
    # from ops.fft.FOUR_STEP_MIN points on: two passes with twiddles between (twiddle_kernel)
    out.insert(-1, SampleInput(rng.standard_normal((2, 512)), rng.standard_normal((2, 512)), grad=False, n=520))
    return out


def _real_samples(rng):
    return [SampleInput(rng.standard_normal(s), grad=int(np.prod(s)) <= 12, **kw)
            for s, kw in [((8,), {}), ((2, 5), {"n": 7, "norm": "ortho"}), ((3, 6), {"dim": 0}),
                          ((2, 9), {"n": 6, "norm": "forward"}), ((5,), {"n": 1})]]


# float32: a sum of n terms is exact to ~1e-6 of the largest output (|X| ~ sqrt(n) ~ 25 at n = 520), not of each
SUMS = {"float32": (5e-5, 1e-5)}

OPS = [
    OpInfo("fft_c2c", lambda a, b, **k: view_as_real(F.fft(cx(a, b), **k) + F.ifft(cx(b, a), **k)),
           lambda a, b, **k: _r(np.fft.fft(a + 1j * b, **_np(k)) + np.fft.ifft(b + 1j * a, **_np(k))), _samples,
           tol=SUMS),
    OpInfo("fft_c2r", lambda a, b, **k: F.irfft(cx(a, b), **k) + F.hfft(cx(b, a), **k),
           lambda a, b, **k: np.fft.irfft(a + 1j * b, **_np(k)) + np.fft.hfft(b + 1j * a, **_np(k)),
           lambda rng: _samples(rng)[:-1]),
    OpInfo("rfft", lambda x, **k: view_as_real(F.rfft(x, **k)) + view_as_real(F.ihfft(x, **k).resolve_conj()).sum(),
           lambda x, **k: _r(np.fft.rfft(x, **_np(k))) + _r(np.fft.ihfft(x, **_np(k))).sum(), _real_samples),
]


def _np(k):
    """numpy.fft's names: axis for dim."""
    k = dict(k)
    if "dim" in k:
        k["axis"] = k.pop("dim")
    return k
