"""tgrad.fft against numpy.fft: every transform, n / s / dim / norm, the helpers; gradients of real functions
through the transforms (gradcheck in float64); float32 accuracy of the DFT kernel."""
import numpy as np
import pytest

import tgrad
from tgrad import fft as F
from tgrad.autograd import gradcheck, gradgradcheck


def vals(x):
    return x.detach().resolve_conj().cpu().numpy()


def cplx(shape, seed=0, dtype=np.complex128):
    r = np.random.default_rng(seed)
    return (r.standard_normal(shape) + 1j * r.standard_normal(shape)).astype(dtype)


NORMS = [None, "backward", "ortho", "forward"]


@pytest.mark.parametrize("norm", NORMS)
def test_one_dim_transforms(norm):
    z = cplx((3, 10))
    x = np.random.default_rng(1).standard_normal((4, 9))
    tz, tx = tgrad.tensor(z), tgrad.tensor(x)
    cases = [(F.fft(tz, norm=norm), np.fft.fft(z, norm=norm)),
             (F.ifft(tz, n=13, norm=norm), np.fft.ifft(z, n=13, norm=norm)),
             (F.fft(tz, n=4, dim=0, norm=norm), np.fft.fft(z, n=4, axis=0, norm=norm)),
             (F.rfft(tx, norm=norm), np.fft.rfft(x, norm=norm)),
             (F.rfft(tx, n=6, dim=0, norm=norm), np.fft.rfft(x, n=6, axis=0, norm=norm)),
             (F.irfft(tz, norm=norm), np.fft.irfft(z, norm=norm)),
             (F.irfft(tz, n=7, norm=norm), np.fft.irfft(z, n=7, norm=norm)),
             (F.irfft(tz, n=30, norm=norm), np.fft.irfft(z, n=30, norm=norm)),
             (F.hfft(tz, norm=norm), np.fft.hfft(z, norm=norm)),
             (F.ihfft(tx, n=11, norm=norm), np.fft.ihfft(x, n=11, norm=norm)),
             (F.fft(tx, norm=norm), np.fft.fft(x, norm=norm))]
    for got, ref in cases:
        assert got.dtype is (tgrad.complex128 if np.iscomplexobj(ref) else tgrad.float64)
        np.testing.assert_allclose(vals(got), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("norm", [None, "ortho"])
def test_n_dim_transforms(norm):
    z = cplx((3, 4, 6), 2)
    x = np.random.default_rng(3).standard_normal((3, 5, 6))
    tz, tx = tgrad.tensor(z), tgrad.tensor(x)
    cases = [(F.fft2(tz, norm=norm), np.fft.fft2(z, norm=norm)),
             (F.ifft2(tz, s=(3, 8), norm=norm), np.fft.ifft2(z, s=(3, 8), norm=norm)),
             (F.fftn(tz, norm=norm), np.fft.fftn(z, norm=norm)),
             (F.ifftn(tz, dim=(0, 2), norm=norm), np.fft.ifftn(z, axes=(0, 2), norm=norm)),
             (F.rfft2(tx, norm=norm), np.fft.rfft2(x, norm=norm)),
             (F.rfftn(tx, s=(4, 7), norm=norm), np.fft.rfftn(x, s=(4, 7), axes=(-2, -1), norm=norm)),
             (F.irfft2(tz, norm=norm), np.fft.irfft2(z, norm=norm)),
             (F.irfftn(tz, s=(2, 3, 9), norm=norm), np.fft.irfftn(z, s=(2, 3, 9), axes=(0, 1, 2), norm=norm))]
    for got, ref in cases:
        np.testing.assert_allclose(vals(got), ref, rtol=1e-12, atol=1e-12)


def test_float32_accuracy_and_lengths():
    """complex64 DFTs to ~1e-6 of the largest output (numpy in float64 as the reference), any length."""
    for n in (1, 2, 7, 16, 33, 100, 256, 1000):
        z = cplx((2, n), n)
        got = vals(F.fft(tgrad.tensor(z.astype(np.complex64))))
        ref = np.fft.fft(z.astype(np.complex64).astype(np.complex128))
        assert got.dtype == np.complex64
        assert np.abs(got - ref).max() <= 2e-6 * np.abs(ref).max(), n
    x = np.random.default_rng(5).standard_normal(500).astype(np.float32)
    np.testing.assert_allclose(vals(F.irfft(F.rfft(tgrad.tensor(x)), n=500)), x, atol=2e-6)


def test_strided_and_batched_inputs():
    z = cplx((6, 5), 7)
    t = tgrad.tensor(z).t()[:, ::2]               # (5, 3), neither dim contiguous
    np.testing.assert_allclose(vals(F.fft(t)), np.fft.fft(z.T[:, ::2]), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(vals(F.fft(t, dim=0)), np.fft.fft(z.T[:, ::2], axis=0), rtol=1e-12, atol=1e-12)


def test_helpers():
    for n, d in [(5, 1.0), (8, 0.1), (1, 2.0)]:
        np.testing.assert_allclose(vals(F.fftfreq(n, d)), np.fft.fftfreq(n, d), rtol=1e-6)
        np.testing.assert_allclose(vals(F.rfftfreq(n, d)), np.fft.rfftfreq(n, d), rtol=1e-6)
    assert F.fftfreq(4, dtype=tgrad.float64).dtype is tgrad.float64
    a = np.arange(30).reshape(5, 6)
    ta = tgrad.tensor(a)
    for dim in (None, 0, (1,), (0, 1)):
        ax = dim if not isinstance(dim, int) else (dim,)
        np.testing.assert_array_equal(vals(F.fftshift(ta, dim)), np.fft.fftshift(a, ax))
        np.testing.assert_array_equal(vals(F.ifftshift(ta, dim)), np.fft.ifftshift(a, ax))


def test_bad_input():
    x = tgrad.ones(4)
    with pytest.raises(RuntimeError, match='Invalid normalization mode: "bad"'):
        F.fft(x, norm="bad")
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\) specified"):
        F.fft(x, n=0)
    with pytest.raises(RuntimeError, match="rfft expects a real input tensor, but got ComplexFloat"):
        F.rfft(x * 1j)
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.fft(x, dim=3)
    with pytest.raises(RuntimeError, match="Got shape with 2 values but input tensor only has 1 dimensions"):
        F.fftn(x, s=(2, 2))


@pytest.mark.parametrize("fn", [
    lambda x: tgrad.view_as_real(F.fft(x, norm="ortho")),
    lambda x: tgrad.view_as_real(F.rfft(x, n=7)),
    lambda x: F.irfft(F.rfft(x) * F.rfft(x.flip(-1)), n=x.shape[-1]),
    lambda x: F.ifft(F.fft2(x) * 1j).abs(),
    lambda x: F.irfftn(F.rfftn(x, norm="forward").exp()),
    lambda x: F.hfft(F.ihfft(x) * F.ihfft(x), n=5),
    lambda x: F.irfft(tgrad.view_as_complex(tgrad.stack([x, x.flip(0)], -1)), n=6, dim=0),
])
def test_gradients(fn):
    x = tgrad.tensor(np.random.default_rng(9).standard_normal((3, 5)), requires_grad=True)
    assert gradcheck(fn, (x,))


def test_second_order():
    x = tgrad.tensor(np.random.default_rng(10).standard_normal((2, 4)), requires_grad=True)
    assert gradgradcheck(lambda x: F.irfft(F.rfft(x) * F.rfft(x), n=4), (x,))


def _np_stft(x, n_fft, hop, window, center, pad_mode, onesided, normalized):
    """numpy's independent stft: pad, frame, window, fft (the definition PyTorch documents)."""
    if center:
        x = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(n_fft // 2, n_fft // 2)],
                   mode={"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}[pad_mode])
    n = 1 + (x.shape[-1] - n_fft) // hop
    frames = np.stack([x[..., t * hop:t * hop + n_fft] * window for t in range(n)], -2)
    f = np.fft.rfft(frames, axis=-1) if onesided else np.fft.fft(frames, axis=-1)
    return np.swapaxes(f / (np.sqrt(n_fft) if normalized else 1), -1, -2)


@pytest.mark.parametrize("kw", [
    dict(n_fft=8, hop_length=2, win_length=None, center=True, pad_mode="reflect", onesided=True, normalized=False),
    dict(n_fft=10, hop_length=3, win_length=6, center=False, pad_mode="reflect", onesided=True, normalized=True),
    dict(n_fft=8, hop_length=4, win_length=8, center=True, pad_mode="constant", onesided=False, normalized=False),
    dict(n_fft=12, hop_length=5, win_length=12, center=True, pad_mode="replicate", onesided=True, normalized=False),
    dict(n_fft=6, hop_length=1, win_length=5, center=True, pad_mode="circular", onesided=True, normalized=False),
])
def test_stft_against_numpy(kw):
    x = np.random.default_rng(11).standard_normal((2, 37))
    wl = kw["win_length"] or kw["n_fft"]
    w = np.hanning(wl + 1)[:-1]
    left = (kw["n_fft"] - wl) // 2
    wfull = np.pad(w, (left, kw["n_fft"] - wl - left))
    got = tgrad.stft(tgrad.tensor(x), window=tgrad.tensor(w), return_complex=True, **kw)
    ref = _np_stft(x, kw["n_fft"], kw["hop_length"], wfull, kw["center"], kw["pad_mode"], kw["onesided"],
                   kw["normalized"])
    np.testing.assert_allclose(vals(got), ref, rtol=1e-12, atol=1e-12)
    one = tgrad.stft(tgrad.tensor(x[1]), window=tgrad.tensor(w), return_complex=True, **kw)
    np.testing.assert_allclose(vals(one), ref[1], rtol=1e-12, atol=1e-12)


def test_istft_inverts_stft():
    x = np.random.default_rng(12).standard_normal((2, 50))
    w = tgrad.tensor(np.hanning(17)[:-1])
    for hop, center, normalized, length in [(4, True, False, 50), (2, True, True, None), (4, False, False, None)]:
        wc = w if center else w + 0.1       # uncentred, a Hann window's zero would be the first sample's only weight
        s = tgrad.stft(tgrad.tensor(x), 16, hop, window=wc, center=center, normalized=normalized, return_complex=True)
        y = tgrad.istft(s, 16, hop, window=wc, center=center, normalized=normalized, length=length)
        n = y.shape[-1]
        assert n == (50 if center else 48)
        np.testing.assert_allclose(vals(y), x[:, :n], atol=1e-12)
    s = tgrad.stft(tgrad.tensor(x[0]), 8, 2, window=tgrad.ones(8, dtype=tgrad.float64), return_complex=True)
    with pytest.warns(UserWarning, match="padded with zeros in the tail"):
        y = tgrad.istft(s, 8, 2, window=tgrad.ones(8, dtype=tgrad.float64), length=55)
    assert y.shape == (55,) and vals(y)[54] == 0     # 50..53: the reflected padding's samples, as in PyTorch
    np.testing.assert_allclose(vals(y)[:50], x[0], atol=1e-12)


def test_stft_arguments():
    x = tgrad.ones(20)
    with pytest.raises(RuntimeError, match="stft requires the return_complex parameter"):
        tgrad.stft(x, 4, window=tgrad.ones(4))
    with pytest.warns(UserWarning, match="A window was not provided"):
        s = tgrad.stft(x, 4, return_complex=True)
    assert s.shape == (3, 21)
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        r = tgrad.stft(x, 4, window=tgrad.ones(4), return_complex=False)
    assert r.shape == (3, 21, 2) and r.dtype is tgrad.float32
    with pytest.raises(RuntimeError, match="expected 0 < n_fft <= 20, but got n_fft=30"):
        tgrad.stft(x, 30, window=tgrad.ones(30), center=False, return_complex=True)
    with pytest.raises(RuntimeError, match="expected hop_length > 0"):
        tgrad.stft(x, 4, 0, window=tgrad.ones(4), return_complex=True)
    with pytest.raises(RuntimeError, match="size equal to win_length=4"):
        tgrad.stft(x, 4, window=tgrad.ones(3), return_complex=True)
    with pytest.raises(RuntimeError, match="istft requires a complex-valued input"):
        tgrad.istft(tgrad.ones(3, 5), 4)
    with pytest.raises(RuntimeError, match="window overlap add min"):
        tgrad.istft(s, 4, 4, window=tgrad.tensor([0.0, 1.0, 1.0, 0.0]), center=False)


def test_stft_gradients():
    x = tgrad.tensor(np.random.default_rng(13).standard_normal(12), requires_grad=True)
    w = tgrad.tensor(np.hanning(7)[:-1], requires_grad=True)
    assert gradcheck(lambda x, w: tgrad.stft(x, 6, 2, window=w, return_complex=True).abs(), (x, w))
    w = w.detach()
    assert gradcheck(lambda x: tgrad.istft(tgrad.stft(x, 6, 2, window=w, onesided=False, return_complex=True).exp(), 6,
                                           2, window=w, onesided=False, return_complex=True).imag, (x,))


def test_four_step_split(monkeypatch):
    """Composite lengths from FOUR_STEP_MIN on run as two passes (n1- and n2-point DFTs with twiddles between):
    lowered here so that small lengths take that path, forward, padded, one-sided, c2r and gradients."""
    from tgrad.ops import fft as opfft
    monkeypatch.setattr(opfft, "FOUR_STEP_MIN", 4)
    assert opfft._split(12) == 3 and opfft._split(7) is None and opfft._split(64) == 8
    z = cplx((2, 12), 14)
    x = np.random.default_rng(15).standard_normal((3, 24))
    tz, tx = tgrad.tensor(z), tgrad.tensor(x)
    for got, ref in [(F.fft(tz), np.fft.fft(z)), (F.ifft(tz, n=18, norm="ortho"), np.fft.ifft(z, n=18, norm="ortho")),
                     (F.rfft(tx), np.fft.rfft(x)), (F.irfft(tz, n=20), np.fft.irfft(z, n=20)),
                     (F.irfft(tz, n=16), np.fft.irfft(z, n=16)), (F.fft2(tx.reshape(3, 4, 6)),
                                                                   np.fft.fft2(x.reshape(3, 4, 6)))]:
        np.testing.assert_allclose(vals(got), ref, rtol=1e-12, atol=1e-12)
    z32 = cplx((2, 4096), 16, np.complex64)
    got = vals(F.fft(tgrad.tensor(z32)))
    ref = np.fft.fft(z32.astype(np.complex128))
    assert np.abs(got - ref).max() <= 2e-6 * np.abs(ref).max()
    xg = tgrad.tensor(x[0, :12], requires_grad=True)
    assert gradcheck(lambda v: F.irfft(F.rfft(v) * F.fft(v)[:7], n=12), (xg,))


def test_hermitian_n_dim():
    """hfftn / ihfftn (and the 2-D forms) by their definitions: irfftn(conj(x)) and conj(rfftn(x)) with the
    norm's direction swapped."""
    x = np.random.default_rng(17).standard_normal((3, 4, 6))
    z = cplx((3, 4, 4), 18)
    tx, tz = tgrad.tensor(x), tgrad.tensor(z)
    np.testing.assert_allclose(vals(F.ihfftn(tx)), np.conj(np.fft.rfftn(x)) / x.size, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(vals(F.ihfft2(tx, s=(3, 5), norm="ortho")),
                               np.conj(np.fft.rfft2(x, s=(3, 5), norm="ortho")), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(vals(F.hfftn(tz)), np.fft.irfftn(np.conj(z)) * 3 * 4 * 6, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(vals(F.hfft2(tz, s=(4, 7), norm="forward")),
                               np.fft.irfft2(np.conj(z), s=(4, 7)), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(vals(F.hfftn(F.ihfftn(tx), s=(3, 4, 6))), x, atol=1e-12)


def test_quarter_turn_twiddles_are_exact():
    """Twiddles at multiples of L/4 are 1, +-i and -1 exactly (the quadrant is taken in integers): fft(arange(4.))
    prints PyTorch's [6+0j, -2+2j, -2+0j, -2-2j], with no 1e-7 imaginary parts from float32 sin(pi)."""
    for dt in (tgrad.float32, tgrad.float64):
        got = vals(F.fft(tgrad.arange(4., dtype=dt)))
        assert got.tolist() == [6 + 0j, -2 + 2j, -2 + 0j, -2 - 2j]
    got = vals(F.ifft(F.fft(tgrad.tensor([1., 0., 0., 0., 0., 0., 0., 0.]))))
    assert got.tolist() == [1 + 0j] + [0j] * 7


def test_tensor_stft_istft_methods():
    """``x.stft(...)`` / ``z.istft(...)`` are ``tgrad.stft(x, ...)`` / ``tgrad.istft(z, ...)`` (PyTorch's methods)."""
    x = tgrad.tensor(np.random.default_rng(3).standard_normal((2, 64)))
    w = tgrad.hann_window(16, dtype=tgrad.float64)
    z = x.stft(16, hop_length=4, window=w, return_complex=True)
    assert vals(z).tobytes() == vals(tgrad.stft(x, 16, hop_length=4, window=w, return_complex=True)).tobytes()
    np.testing.assert_allclose(z.istft(16, hop_length=4, window=w, length=64).cpu().numpy(), x.cpu().numpy(), atol=1e-12)


def test_grad_fn_names_and_any_dim():
    """One node per 1-D transform on any dim, with PyTorch's names: FftR2CBackward0 for a real input (fft,
    rfft), FftC2CBackward0 for a complex one, FftC2RBackward0 for irfft / hfft; gradients of the real-input
    pass along a middle dim against finite differences."""
    x = tgrad.tensor(np.random.default_rng(2).standard_normal((2, 5, 3)), requires_grad=True)
    z = tgrad.tensor(cplx((2, 5, 3)), requires_grad=True)
    for got, name in ((F.fft(x), "FftR2CBackward0"), (F.fft(x, dim=1), "FftR2CBackward0"),
                      (F.rfft(x, n=8, dim=0), "FftR2CBackward0"), (F.fft(z, dim=1), "FftC2CBackward0"),
                      (F.ifft(z, dim=0), "FftC2CBackward0"), (F.fft2(z), "FftC2CBackward0"),
                      (F.irfft(z, dim=1), "FftC2RBackward0"), (F.hfft(z), "FftC2RBackward0"),
                      (F.irfft2(z), "FftC2RBackward0")):
        assert type(got.grad_fn).__name__ == name
        assert got.grad_fn.next_functions[0][0] is not None
    assert F.ihfft(x).is_conj() and not F.ihfft2(x).is_conj()       # PyTorch 2.13's
    np.testing.assert_allclose(vals(F.fft(x, dim=1)), np.fft.fft(vals(x), axis=1), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(vals(F.irfft(z, n=7, dim=1)), np.fft.irfft(vals(z), n=7, axis=1), atol=1e-12)
    assert gradcheck(lambda v: F.fft(v, n=4, dim=1), (x,))
    assert gradcheck(lambda v: F.rfft(v, dim=0, norm="ortho"), (x,))
    assert gradcheck(lambda v: F.irfft(v, n=6, dim=1), (z,))
    assert gradcheck(lambda v: F.ifft(v, dim=0), (z,))


def test_bluestein_prime_lengths(monkeypatch):
    """Long lengths with no split (primes) go through Bluestein's chirp convolution (power-of-2 DFTs), as do the
    prime factors of awkward composites (2 p); accuracy against numpy.fft on a real prime length, then with
    FOUR_STEP_MIN lowered so small primes take the path: padded, one-sided, c2r, complex64, gradients."""
    from tgrad.ops import fft as opfft
    calls = []
    real = opfft._bluestein
    monkeypatch.setattr(opfft, "_bluestein", lambda *a: calls.append(a[1]) or real(*a))
    z = cplx((2, 521), 20)
    for dt, tol in ((np.complex128, 2e-15), (np.complex64, 1e-6)):
        got = vals(F.fft(tgrad.tensor(z.astype(dt))))
        ref = np.fft.fft(z.astype(dt).astype(np.complex128))
        assert np.abs(got - ref).max() <= tol * np.abs(ref).max()
    assert calls == [521, 521]
    monkeypatch.setattr(opfft, "FOUR_STEP_MIN", 4)
    calls.clear()
    z = cplx((3, 13), 21)
    x = np.random.default_rng(22).standard_normal((2, 26))
    tz, tx = tgrad.tensor(z), tgrad.tensor(x)
    for got, ref in [(F.fft(tz), np.fft.fft(z)), (F.ifft(tz[:, :9], n=13, norm="ortho"), np.fft.ifft(z[:, :9], n=13,
                                                                                                  norm="ortho")),
                     (F.rfft(tx[:, :13]), np.fft.rfft(x[:, :13])), (F.irfft(tz[:, :7], n=13), np.fft.irfft(z[:, :7], n=13)),
                     (F.fft(tx), np.fft.fft(x)), (F.fft(tz, dim=0, n=5), np.fft.fft(z, n=5, axis=0))]:
        np.testing.assert_allclose(vals(got), ref, rtol=1e-12, atol=1e-12)
    assert set(calls) == {5, 13}
    zg = tgrad.tensor(z[0, :7], requires_grad=True)
    assert gradcheck(lambda v: F.fft(v), (zg,))
    assert gradcheck(lambda v: F.irfft(v, n=13), (zg,))


def _chain(t, depth=4):
    """grad_fn names from t down its first edges (PyTorch's chain, printed by /work/venv-torch for the test)."""
    names, fn = [], t.grad_fn
    while fn is not None and len(names) < depth:
        names.append(type(fn).__name__)
        nxt = [f for f, _ in fn.next_functions if f is not None]
        fn = nxt[0] if nxt else None
    return names


def test_n_dim_transforms_are_one_op():
    """PyTorch 2.13 records rfftn / irfftn / fftn as one node (FftR2CBackward0 / FftC2RBackward0 /
    FftC2CBackward0 over a ToCopyBackward0 of a real input), its fft kernels read a conjugate view (no
    CloneBackward0 between), hfftn as c2c, conj, c2r and ihfftn as r2c,
    conj_physical, c2c; ifft of a real input is the conjugate view of the r2c transform (ConjBackward0 over
    FftR2CBackward0, -0 imaginary parts where the forward's are +0).  Chains as PyTorch printed them; values
    against numpy; gradients against finite differences."""
    x = tgrad.tensor(np.random.default_rng(4).standard_normal((3, 4, 5)), requires_grad=True)
    z = tgrad.tensor(cplx((3, 4, 5), 5), requires_grad=True)
    acc = "AccumulateGrad"
    for got, chain in ((F.rfft2(x), ["FftR2CBackward0", acc]), (F.rfftn(x, dim=(0, 2)), ["FftR2CBackward0", acc]),
                       (F.irfft2(z), ["FftC2RBackward0", acc]), (F.irfftn(z), ["FftC2RBackward0", acc]),
                       (F.hfft2(z), ["FftC2RBackward0", "ConjBackward0", "FftC2CBackward0", acc]),
                       (F.hfft(z), ["FftC2RBackward0", "ConjBackward0", acc]),
                       (F.fft(z.conj()), ["FftC2CBackward0", "ConjBackward0", acc]),
                       (F.ihfftn(x), ["FftC2CBackward0", "ConjPhysicalBackward0", "FftR2CBackward0", acc]),
                       (F.ifft(x), ["ConjBackward0", "FftR2CBackward0", acc]),
                       (F.fft2(x), ["FftC2CBackward0", "ToCopyBackward0", acc]),
                       (F.ifftn(x), ["FftC2CBackward0", "ToCopyBackward0", acc]),
                       (F.fftn(z), ["FftC2CBackward0", acc])):
        assert _chain(got) == chain
    a, c = vals(x), vals(z)
    y = F.ifft(x)
    assert y.is_conj()
    np.testing.assert_allclose(vals(y), np.fft.ifft(a), rtol=1e-12, atol=1e-12)
    assert np.signbit(vals(y)[..., 0].imag).all()          # PyTorch prints -0.0000j there
    for got, ref in ((F.rfftn(x, s=(2, 6), norm="ortho"), np.fft.rfftn(a, s=(2, 6), axes=(1, 2), norm="ortho")),
                     (F.irfftn(z, s=(5, 3, 7)), np.fft.irfftn(c, s=(5, 3, 7), axes=(0, 1, 2))),
                     (F.hfftn(z, dim=(0, 2), norm="forward"), _np_hfftn(c, (0, 2), "forward")),
                     (F.ihfftn(x, s=(3, 6)), np.conj(np.fft.rfftn(a, s=(3, 6), axes=(1, 2), norm="forward"))),
                     (F.ifft2(x, s=(5, 3)), np.fft.ifft2(a, s=(5, 3)))):
        np.testing.assert_allclose(vals(got), ref, rtol=1e-12, atol=1e-12)
    xs = x.detach()[:2, :3, :4].requires_grad_()
    zs = z.detach()[:2, :3, :3].requires_grad_()
    assert gradcheck(lambda v: F.rfftn(v, s=(2, 5), norm="ortho"), (xs,))
    assert gradcheck(lambda v: F.irfftn(v, s=(3, 4)), (zs,))
    assert gradcheck(lambda v: F.hfft2(v, norm="forward"), (zs,))
    assert gradcheck(lambda v: F.ihfft2(v), (xs,))
    assert gradcheck(lambda v: F.ifft(v, n=5, dim=1), (xs,))
    assert gradcheck(lambda v: F.ifftn(v, dim=(0, 2)), (xs,))
    assert gradgradcheck(lambda v: F.rfft2(v), (xs,))


def _np_hfftn(c, axes, norm):
    """numpy has no hfftn: irfftn of the conjugate with norm's direction swapped (PyTorch's definition)."""
    swap = {"forward": "backward", "backward": "forward", "ortho": "ortho"}[norm]
    return np.fft.irfftn(np.conj(c), axes=axes, norm=swap)


def test_transforms_read_conjugate_views():
    """fft / irfft / hfft of a conjugate view read its values (the op's reads_conj: no resolve_conj node)."""
    z = cplx((3, 5), 7)
    tz = tgrad.tensor(z, requires_grad=True)
    np.testing.assert_allclose(vals(F.fft(tz.conj())), np.fft.fft(np.conj(z)), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(vals(F.irfft(tz.conj(), n=7)), np.fft.irfft(np.conj(z), n=7), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(vals(F.fftn(tz.conj(), s=(4, 6))), np.fft.fftn(np.conj(z), s=(4, 6), axes=(0, 1)),
                               atol=1e-12)
    assert gradcheck(lambda v: F.fft(v.conj(), dim=0), (tz,))
    assert gradcheck(lambda v: F.irfftn(v[:2, :3].conj()), (tz,))
