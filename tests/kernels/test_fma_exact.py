"""The cpu executor's fma (``runtime.native.fma_ufunc()``, fma.c, and the numpy ``tape_ops._fma32``) against
an exact reference: x y + z in ``fractions.Fraction`` rounded once to nearest-even, with IEEE's overflow to
inf, gradual underflow (subnormals), signed zeros and NaN/inf rules.  Random triples in every regime
(hypothesis, and a vectorized sweep biased to ties and near-ties of the result's grid) for float32, and for
float64 where the ufunc has a loop."""
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tgrad.kernels.runtime.native import fma_ufunc
from tgrad.kernels.runtime.tape_ops import _fma32

CPU_ONLY = True
FMT = {np.float32: (24, -149, 128), np.float64: (53, -1074, 1024)}    # precision, least exponent, overflow
NATIVE = fma_ufunc()
IMPLS32 = [pytest.param(_fma32, id="numpy")] + ([pytest.param(NATIVE, id="native")] if NATIVE else [])


def _round(t, dtype):
    """The exact rational ``t`` (nonzero) rounded to nearest-even in ``dtype``; +-inf past the overflow point."""
    prec, qmin, emax = FMT[dtype]
    a = abs(t)
    e = a.numerator.bit_length() - a.denominator.bit_length()      # 2^e <= a < 2^(e+2)
    if Fraction(2) ** e > a:
        e -= 1
    if Fraction(2) ** (e + 1) <= a:
        e += 1
    q = max(e - prec + 1, qmin)
    n = round(a / Fraction(2) ** q)                                 # Fraction's round: half to even
    v = Fraction(n) * Fraction(2) ** q
    r = math.inf if v >= Fraction(2) ** emax else float(v)
    return dtype(r if t > 0 else -r)


def _ref(x, y, z, dtype):
    """fma(x, y, z) per IEEE 754 in round-to-nearest."""
    x, y, z = float(x), float(y), float(z)
    if math.isnan(x) or math.isnan(y) or math.isnan(z):
        return dtype(math.nan)
    if math.isinf(x) or math.isinf(y):
        if x == 0 or y == 0:
            return dtype(math.nan)                                  # inf * 0
        s = math.copysign(1.0, x) * math.copysign(1.0, y)
        if math.isinf(z) and math.copysign(1.0, z) != s:
            return dtype(math.nan)                                  # inf - inf
        return dtype(s * math.inf)
    if math.isinf(z):
        return dtype(z)
    t = Fraction(x) * Fraction(y) + Fraction(z)
    if t == 0:              # exact zero: -0 only when the product's zero and z are both -0, else +0
        neg = (x == 0 or y == 0) and z == 0 and math.copysign(1.0, x) * math.copysign(1.0, y) < 0 \
            and math.copysign(1.0, z) < 0
        return dtype(-0.0 if neg else 0.0)
    return _round(t, dtype)


def _check(f, x, y, z, dtype):
    x, y, z = (np.asarray(v, dtype) for v in (x, y, z))
    with np.errstate(all="ignore"):
        got = np.asarray(f(x, y, z))
    assert got.dtype == dtype
    ui = np.uint32 if dtype == np.float32 else np.uint64
    xb, yb, zb = np.broadcast_arrays(x, y, z)
    want = np.array([_ref(*t, dtype) for t in zip(xb.ravel(), yb.ravel(), zb.ravel())], dtype).reshape(got.shape)
    same = (want.view(ui) == got.view(ui)) | (np.isnan(want) & np.isnan(got))
    bad = np.flatnonzero(~same)
    assert bad.size == 0, [(xb.flat[i], yb.flat[i], zb.flat[i], want.flat[i], got.flat[i]) for i in bad[:5]]
    return want


def _sweep(rng, n, dtype):
    """Random triples: random bit patterns (NaN, inf, subnormals, signed zeros), cancellation (z = -x y
    rounded, and its neighbours), products half an ulp of z away (ties and near-ties), subnormal results,
    results at the overflow threshold."""
    ui, bits = (np.uint32, 32) if dtype == np.float32 else (np.uint64, 64)
    prec = FMT[dtype][0]
    k = n // 5
    raw = [rng.integers(0, 2 ** bits, (3, k), dtype=np.uint64).astype(ui).view(dtype)]
    x, y = (rng.standard_normal((2, k)) * np.exp2(rng.integers(-20, 20, (2, k)))).astype(dtype)
    with np.errstate(all="ignore"):
        p = x * y
    raw.append(np.stack([x, y, -np.nextafter(p, rng.choice([-np.inf, np.inf], k).astype(dtype))]))
    # y an odd integer (a product with low bits), scaled so x y sits near half an ulp of z
    z = (rng.uniform(1, 2, k) * rng.choice([-1, 1], k)).astype(dtype) * dtype(2.0 ** 10)
    ulp = np.spacing(np.abs(z))
    m = rng.integers(1, 64, k) * 2 + 1
    y = m.astype(dtype)
    x = (ulp.astype(np.float64) / 2 / m * rng.choice([1 - 2.0 ** -(prec - 2), 1, 1 + 2.0 ** -(prec - 2)], k)
         ).astype(dtype) * rng.choice([-1, 1], k).astype(dtype)
    raw.append(np.stack([x, y, z]))
    tiny = (rng.standard_normal((3, k)) * np.exp2(rng.integers(-140, -110, (3, k)) * (prec / 24))).astype(dtype)
    raw.append(tiny)                                        # results across the subnormal range
    big = np.finfo(dtype).max
    top_ulp = big - np.nextafter(big, dtype(0))
    raw.append(np.stack([rng.choice([dtype(1), dtype(-1)], k) * big,
                         (1 + rng.integers(-4, 5, k) * np.finfo(dtype).eps / 4).astype(dtype),
                         (rng.choice([-1, 1], k) * rng.uniform(0, 1, k)).astype(dtype) * top_ulp]))
    return np.concatenate(raw, axis=1)


@pytest.mark.parametrize("f", IMPLS32)
def test_float32_sweep_exact(f):
    x, y, z = _sweep(np.random.default_rng(0), 6000, np.float32)
    want = _check(f, x, y, z, np.float32)
    with np.errstate(all="ignore"):
        naive = (x.astype(np.float64) * y + z).astype(np.float32)
    assert (naive.view(np.uint32) != want.view(np.uint32)).sum() > 20     # double rounding is hit


@pytest.mark.skipif(NATIVE is None, reason="no C compiler: no native fma")
def test_float64_sweep_exact():
    x, y, z = _sweep(np.random.default_rng(1), 6000, np.float64)
    _check(NATIVE, x, y, z, np.float64)


def test_reference_itself():
    """The reference's rules on hand-made cases (a wrong reference would make the tests above idle)."""
    f32 = np.float32
    assert _ref(f32(2.0 ** 12 + 1), f32(2.0 ** 12 - 1), f32(-2.0 ** 24), f32) == f32(-1)   # exact where x y rounds
    assert math.copysign(1, _ref(f32(-0.0), f32(1), f32(-0.0), f32)) < 0
    assert math.copysign(1, _ref(f32(1), f32(1), f32(-1), f32)) > 0
    assert _ref(f32(3.4e38), f32(2), f32(0), f32) == np.inf
    assert _ref(f32(2.0 ** -75), f32(2.0 ** -75), f32(0), f32) == 0                          # 2^-150: a tie to 0
    assert _ref(f32(2.0 ** -75), f32(1.5 * 2.0 ** -75), f32(0), f32) == f32(2.0 ** -149)
    assert np.isnan(_ref(f32(np.inf), f32(0), f32(1), f32))


_f32 = st.floats(width=32)


@st.composite
def _triples(draw):
    x, y = draw(_f32), draw(_f32)
    with np.errstate(all="ignore"):
        p = np.float32(x) * np.float32(y)
    z = draw(st.one_of(_f32, st.just(-p), st.just(np.nextafter(-p, np.float32(draw(_f32)))),
                       st.just(np.float32(draw(st.floats(-1, 1, width=32)) * (2.0 ** draw(st.integers(-30, 30)))))))
    return x, y, float(z)


@pytest.mark.parametrize("f", IMPLS32)
@settings(max_examples=150, deadline=None)
@given(st.lists(_triples(), min_size=1, max_size=30), st.booleans())
def test_hypothesis_float32_exact(f, triples, big):
    a = np.array(triples, np.float32).T
    if big:                         # past _fma32's small-array path (the interpreter's C loop)
        a = np.tile(a, 300 // a.shape[1] + 1)
    _check(f, *a, np.float32)


@pytest.mark.skipif(NATIVE is None, reason="no C compiler: no native fma")
def test_native_broadcasts_and_scalars():
    rng = np.random.default_rng(4)
    g, p = rng.standard_normal((2, 1000)).astype(np.float32)
    _check(NATIVE, np.float32(-0.01), g, p, np.float32)
    got = NATIVE(np.float32([[-0.01], [0.5]]), g, p)        # strided / broadcast loop
    assert got.shape == (2, 1000)
    for r, h in zip(got, (-0.01, 0.5)):
        assert (r.view(np.uint32) == NATIVE(np.full_like(g, h), g, p).view(np.uint32)).all()


@pytest.mark.parametrize("native", [True, False])
def test_tapes_use_either_fma(native, monkeypatch):
    """A replayed tape's tl.fma (``tgrad.add(x, y, alpha=a)`` is fma(y, a, x)) with the native ufunc and with
    the numpy fallback (what a machine without a C compiler runs): exact both ways."""
    import tgrad
    from tgrad.kernels.runtime import native as N, tape
    calls = []

    def counted(*a):
        calls.append(1)
        return _fma32(*a)
    monkeypatch.setattr(tape, "_fma32", counted)
    if not native:
        monkeypatch.setitem(N._built, "tgrad_fma", None)
    elif N.fma_ufunc() is None:
        pytest.skip("no C compiler: no native fma")
    n = 3000 if native else 3005            # a shape of its own: its tapes are built under this setting
    x, y = _sweep(np.random.default_rng(5), n, np.float32)[:2, :n]
    for _ in range(3):                      # run, trace, replay
        got = tgrad.add(tgrad.tensor(x), tgrad.tensor(y), alpha=0.1).numpy()
    want = _check(lambda a, b, c: got, y, np.float32(0.1), x, np.float32)
    assert want.shape == (n,) and bool(calls) != native
