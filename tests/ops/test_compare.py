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
