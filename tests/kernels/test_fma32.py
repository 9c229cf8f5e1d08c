"""The trace executor's fp32 ``tl.fma``s, ``runtime.native.fma_ufunc()`` (fma.c) and its numpy fallback
``runtime.tape_ops._fma32``, against the interpreter's C ``fma_fp32``,
bit for bit, on inputs built to hit every double-rounding case of a float64 sum: float32 midpoints just
missed on either side, in the normal range, on the subnormal grid and at its top (2^-126 - 2^-150), at the
overflow threshold; random bit patterns (NaN, inf, subnormals, signed zeros); broadcasts; small arrays.

A product X Y = 2^47 (1 - 2^-46) (X = 2^24 - 2, Y = 2^23 + 1) scaled to half a float32 ulp h of z puts
z +- h (1 - 2^-46) within 2^-46 h of a midpoint: float64 rounds it onto the midpoint, float32 then rounds
to even, and only an exact fma sees which side it was on.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from triton._C.libtriton import interpreter as I

from tgrad.kernels.runtime.native import fma_ufunc
from tgrad.kernels.runtime.tape_ops import _fma32

CPU_ONLY = True
F = np.float32
X_NEAR, Y_NEAR = F(2.0 ** 24 - 2), F(2.0 ** 23 + 1)        # X Y = 2^47 - 2


IMPLS = [_fma32] + ([fma_ufunc()] if fma_ufunc() is not None else [])


def _check(x, y, z):
    with np.errstate(all="ignore"):                         # as launches run
        want = I.fma_fp32(*np.broadcast_arrays(x, y, z))
        for f in IMPLS:
            got = f(x, y, z)
            assert got.dtype == np.float32 and got.shape == want.shape
            same = (want.view(np.uint32) == got.view(np.uint32)) | (np.isnan(want) & np.isnan(got))
            bad = np.flatnonzero(~same)
            assert bad.size == 0, [(f, np.broadcast_to(x, want.shape).flat[i], np.broadcast_to(y, want.shape).flat[i],
                                    np.broadcast_to(z, want.shape).flat[i], want.flat[i], got.flat[i]) for i in bad[:5]]
    return want


def _near_midpoints(z):
    """(x, y, z) with x y = +-h (1 - 2^-46), h half of z's float32 ulp (2^-150 on the subnormal grid)."""
    e = np.maximum(np.frexp(np.abs(z).astype(np.float64))[1] - 1, -126)       # z's float32 exponent
    k = (e - 24) - 47                                       # 2^k X Y = h (1 - 2^-46)
    i = k // 2
    x = (X_NEAR * np.exp2(i.astype(np.float64))).astype(F)
    y = (Y_NEAR * np.exp2((k - i).astype(np.float64))).astype(F)
    sign = np.where(np.arange(z.size) % 2 == 0, F(1), F(-1))
    assert np.all(x.astype(np.float64) * y == np.ldexp(float(2 ** 47 - 2), k))   # no rounding in x, y
    return x * sign, y, z


@pytest.mark.parametrize("lo,hi", [(-30, 30), (-126, -100), (100, 127)])
def test_near_midpoints_normal_range(lo, hi):
    rng = np.random.default_rng(hi - lo)
    n = 4000
    z = (rng.uniform(1, 2, n) * np.exp2(rng.integers(lo, hi, n))).astype(F) * rng.choice([F(1), F(-1)], n)
    x, y, z = _near_midpoints(z)
    want = _check(x, y, z)
    naive = (x.astype(np.float64) * y + z).astype(F)
    assert (naive != want).mean() > 0.3         # the inputs do hit double rounding (else the test is idle)


def test_near_midpoints_subnormal_grid_and_its_top():
    rng = np.random.default_rng(1)
    bits = np.concatenate([rng.integers(1, 0x00800000, 3000), np.arange(0x007FFF00, 0x00800001), [1, 2, 3]])
    z = bits.astype(np.uint32).view(F) * rng.choice([F(1), F(-1)], bits.size)
    x, y, z = _near_midpoints(z)
    want = _check(x, y, z)
    # the top one: 2^-126 - 2^-149 + 2^-150 (1 - 2^-46) is below the last midpoint, so fma gives 0x007FFFFF
    top = _check(X_NEAR * F(2.0 ** -100), Y_NEAR * F(2.0 ** -97), np.full(300, 0x007FFFFF, np.uint32).view(F))
    assert (top.view(np.uint32) == 0x007FFFFF).all()
    assert ((x.astype(np.float64) * y + z).astype(F) != want).mean() > 0.3


def test_overflow_threshold_and_specials():
    big = np.full(400, np.finfo(F).max, F)
    _check(*_near_midpoints(big))                           # FLT_MAX + h (1 - 2^-46) stays finite
    _check(*_near_midpoints(-big))
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.2e-38, 3.4e38, -1.0, 2.0 ** -75], F)
    grid = np.array(np.meshgrid(special, special, special)).reshape(3, -1)
    _check(*np.repeat(grid, 3, axis=1))                     # > 256 elements: the numpy path
    _check(*grid[:, :200])                                  # <= 256: the C loop


def test_random_bit_patterns_and_cancellation():
    rng = np.random.default_rng(2)
    n = 50000
    x, y, z = (rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32).view(F) for _ in range(3))
    _check(x, y, z)
    with np.errstate(all="ignore"):
        p = x * y
    _check(x, y, -p)                                        # the product's rounding error, exactly
    _check(x, y, np.nextafter(-p, F(0)))
    small = (rng.standard_normal((3, n)) * np.exp2(rng.integers(-80, -60, (3, n)))).astype(F)
    _check(*small)                                          # results across the subnormal range


def test_broadcast_scalars_and_masked_zeros():
    rng = np.random.default_rng(3)
    g, p = (rng.standard_normal((2, 70000)) * [[1e-3], [5e-2]]).astype(F)
    p[65536 - 4096:] = 0.0                                  # masked-off lanes: exact zeros, no fix needed
    g[65536 - 4096:] = 0.0
    _check(np.array([F(-0.01)]), g, p)
    _check(np.full_like(g, -0.01), g, p)
    _check(F(0.9) * g, g, p.reshape(70000))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(width=32), st.floats(width=32), st.floats(width=32)), min_size=1,
                max_size=40),
       st.integers(0, 3))
def test_hypothesis_against_fma_fp32(triples, reps):
    a = np.array(triples, F).T
    _check(*np.tile(a, 1 + reps * 100))          # reps > 0: past the small-array path
