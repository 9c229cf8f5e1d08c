"""Comparison operators beyond the OpInfo tests: Python operators, None/str operands, hashing."""
import tgrad


def t(v, dtype=None):
    return tgrad.tensor(v, dtype=dtype)


def vals(x):
    return x.detach()._host_copy()


def test_comparison_operators_and_hash():
    a = t([1.0, 2.0, 3.0])
    assert vals(a == 2).tolist() == [False, True, False]
    assert vals(2 == a).tolist() == [False, True, False]
    assert vals(a != t([1.0, 0.0, 3.0])).tolist() == [False, True, False]
    assert vals(1.5 < a).tolist() == [False, True, True]
    assert (a == None) is False and (a != "x") is True  # noqa: E711
    d = {a: 1}
    assert d[a] == 1 and len({a, t([1.0, 2.0, 3.0])}) == 2


def _aten_shift(a, b, bits, left, signed):
    """ATen's lshift / rshift of one pair: out-of-range shifts give 0 (left) or the sign fill (right)."""
    if left:
        return 0 if b < 0 or b >= bits else ((a << b) + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1)) \
            if signed else (a << b) % (1 << bits)
    top = bits - 1 if signed else bits
    return a >> (top if b < 0 or b >= top else b)


def test_bitwise_shifts_match_aten_including_out_of_range_shifts():
    import numpy as np
    import pytest
    a = [1, -8, 5, 3, -128, 127, 0, -1]
    b = [2, 1, 70, -1, 9, 7, 3, 64]
    for dtype, bits, signed in ((tgrad.int64, 64, True), (tgrad.int32, 32, True), (tgrad.int8, 8, True)):
        x, y = t(a, dtype), t(b, dtype)
        assert vals(x << y).tolist() == [_aten_shift(p, q, bits, True, signed) for p, q in zip(a, b)]
        assert vals(x >> y).tolist() == [_aten_shift(p, q, bits, False, signed) for p, q in zip(a, b)]
    u = t([250, 200, 1], tgrad.uint8)
    assert vals(u << 1).tolist() == [244, 144, 2] and vals(u >> t([3, 8, 0], tgrad.uint8)).tolist() == [31, 0, 1]
    assert vals(2 << t([1, 3])).tolist() == [4, 16] and vals(64 >> t([1, 3])).tolist() == [32, 8]
    assert vals(tgrad.bitwise_left_shift(t([True, False]), 1)).tolist() == [2, 0]
    z = t([3, -6])
    z <<= 2
    z >>= t([1, 1])
    assert vals(z).tolist() == [6, -12] and vals(z.bitwise_right_shift_(1)).tolist() == [3, -6]
    with pytest.raises(NotImplementedError, match="\"lshift_cpu\" not implemented for 'Float'"):
        t([1.0]) << 1
    assert np.array_equal(vals(t([5, 6]).bitwise_right_shift(1)), [2, 3])
