"""Small PyTorch functions real programs reach for: finfo/iinfo, the global switches, isclose/allclose,
splits, rot90, nan-reductions and the composite element-wise functions (values from numpy or, where said,
printed by PyTorch 2.13)."""
import math
import warnings

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck


def _np(t):
    return t.detach().cpu().numpy()


def test_finfo_iinfo_match_pytorch():
    f = tgrad.finfo(tgrad.float32)
    assert (f.eps, f.max, f.tiny, f.resolution, f.bits, f.dtype) == (
        2.0 ** -23, float(np.finfo(np.float32).max), 2.0 ** -126, 1e-06, 32, "float32")
    assert tgrad.finfo().dtype == "float32" and tgrad.finfo(tgrad.float16).eps == 0.0009765625
    assert tgrad.finfo(tgrad.bfloat16).eps == 0.0078125
    # PyTorch 2.13's repr
    assert repr(tgrad.finfo(tgrad.float16)) == ("finfo(resolution=0.001, min=-65504, max=65504, eps=0.000976562, "
                                               "smallest_normal=6.10352e-05, tiny=6.10352e-05, dtype=float16)")
    i = tgrad.iinfo(tgrad.int64)
    assert (i.min, i.max, i.bits, tgrad.iinfo(tgrad.uint8).max) == (-2 ** 63, 2 ** 63 - 1, 64, 255)
    with pytest.raises(TypeError, match="requires a floating point input type"):
        tgrad.finfo(tgrad.int32)
    with pytest.raises(TypeError, match="requires an integer input type"):
        tgrad.iinfo(tgrad.float32)


def test_constants():
    assert (tgrad.pi, tgrad.e, tgrad.inf, tgrad.newaxis) == (math.pi, math.e, math.inf, None)
    assert math.isnan(tgrad.nan)


def test_matmul_precision_and_deterministic_switches():
    try:
        assert tgrad.get_float32_matmul_precision() == "highest"
        tgrad.set_float32_matmul_precision("medium")
        assert tgrad.get_float32_matmul_precision() == "medium" and tgrad.backends.cuda.matmul.allow_tf32
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            tgrad.set_float32_matmul_precision("low")
        assert "is not one of 'highest', 'high', or 'medium'" in str(w[0].message)
        assert tgrad.get_float32_matmul_precision() == "medium"
        tgrad.backends.cuda.matmul.allow_tf32 = False
        assert tgrad.get_float32_matmul_precision() == "highest"
    finally:
        tgrad.set_float32_matmul_precision("highest")
    try:
        assert not tgrad.are_deterministic_algorithms_enabled() and tgrad.get_deterministic_debug_mode() == 0
        tgrad.use_deterministic_algorithms(True, warn_only=True)
        assert tgrad.are_deterministic_algorithms_enabled() and tgrad.is_deterministic_algorithms_warn_only_enabled()
        assert tgrad.get_deterministic_debug_mode() == 1
        tgrad.set_deterministic_debug_mode("error")
        assert tgrad.get_deterministic_debug_mode() == 2
        with pytest.raises(TypeError, match="must be bool"):
            tgrad.use_deterministic_algorithms(1)
    finally:
        tgrad.use_deterministic_algorithms(False)


def test_isclose_allclose():
    a = tgrad.tensor([1.0, math.nan, math.inf, 1e-9, -math.inf, 2.0])
    b = tgrad.tensor([1.00001, math.nan, math.inf, 0.0, math.inf, 2.0 + 1e-6])
    assert _np(tgrad.isclose(a, b)).tolist() == [False, False, True, True, False, True]   # PyTorch 2.13
    assert _np(a.isclose(b, equal_nan=True)).tolist() == [False, True, True, True, False, True]
    assert _np(a.isclose(b, rtol=1e-4)).tolist()[0]
    assert tgrad.allclose(tgrad.tensor([1.0, 2.0]), tgrad.tensor([1.0, 2.000001]))
    assert not tgrad.tensor([1.0, math.nan]).allclose(tgrad.tensor([1.0, math.nan]))
    assert tgrad.tensor([3, 4]).isclose(tgrad.tensor([3, 5]), atol=1, rtol=0).all()
    with pytest.raises(RuntimeError, match="Float did not match Long"):
        tgrad.isclose(tgrad.tensor([1.0]), tgrad.tensor([1]))


def test_splits_and_rot90():
    x = tgrad.arange(7)
    assert [_np(p).tolist() for p in tgrad.tensor_split(x, 3)] == [[0, 1, 2], [3, 4], [5, 6]]
    assert [_np(p).tolist() for p in x.tensor_split([1, 5])] == [[0], [1, 2, 3, 4], [5, 6]]
    assert [_np(p).tolist() for p in x.tensor_split([-2, 9])] == [[0, 1, 2, 3, 4], [5, 6], []]
    m = np.arange(24).reshape(2, 3, 4)
    t = tgrad.tensor(m)
    for got, ref in [(tgrad.hsplit(t, 3), np.hsplit(m, 3)), (tgrad.vsplit(t, [1]), np.vsplit(m, [1])),
                     (tgrad.dsplit(t, 2), np.dsplit(m, 2))]:
        assert len(got) == len(ref) and all((_np(g) == r).all() for g, r in zip(got, ref))
    with pytest.raises(RuntimeError, match="is not divisible by the split_size"):
        tgrad.dsplit(t, 3)
    for k in (-1, 0, 1, 2, 3, 5):
        for dims in [(0, 1), (1, 2), (2, 0)]:
            assert (_np(tgrad.rot90(t, k, dims)) == np.rot90(m, k, dims)).all()
    with pytest.raises(RuntimeError, match="expected rotation dims to be different"):
        t.rot90(1, (1, 1))


def test_nan_reductions_and_counts():
    v = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, 2.0]], np.float32)
    t = tgrad.tensor(v)
    np.testing.assert_allclose(_np(tgrad.nansum(t)), np.nansum(v))
    np.testing.assert_allclose(_np(t.nansum(1)), np.nansum(v, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # numpy: "Mean of empty slice" (NaN, as tgrad)
        np.testing.assert_allclose(_np(tgrad.nanmean(t, 0)), np.nanmean(v, 0))
    assert (_np(tgrad.count_nonzero(tgrad.tensor([[0, 1], [2, 0]]), dim=0)) == [1, 1]).all()
    assert tgrad.count_nonzero(t).item() == 6
    with pytest.raises(RuntimeError, match="expected input to have floating point dtype"):
        tgrad.nanmean(tgrad.tensor([1, 2]))


def test_elementwise_composites_against_numpy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(50).astype(np.float32) * 5
    b = rng.standard_normal(50).astype(np.float32) * 5
    b[:3] = [np.nan, np.inf, -0.0]
    a[3:6] = [np.nan, 0.0, -np.inf]
    ta, tb = tgrad.tensor(a), tgrad.tensor(b)
    with np.errstate(all="ignore"):
        cases = [(tgrad.logaddexp, np.logaddexp), (tgrad.logaddexp2, np.logaddexp2), (tgrad.hypot, np.hypot),
                 (tgrad.fmax, np.fmax), (tgrad.fmin, np.fmin), (tgrad.copysign, np.copysign)]
        for f, ref in cases:
            np.testing.assert_allclose(_np(f(ta, tb)), ref(a, b), rtol=2e-6, atol=1e-6, err_msg=f.__name__)
        for f, ref in [(tgrad.deg2rad, np.deg2rad), (tgrad.rad2deg, np.rad2deg), (tgrad.signbit, np.signbit)]:
            np.testing.assert_allclose(_np(f(ta)), ref(a), rtol=2e-6, err_msg=f.__name__)
        np.testing.assert_array_equal(_np(tgrad.heaviside(ta, tgrad.tensor([0.5]))), np.heaviside(a, 0.5))
    big = tgrad.tensor([3e30, 3e-30, math.inf], dtype=tgrad.float32)
    np.testing.assert_allclose(_np(tgrad.hypot(big, big * 0 + 4e30)), [5e30, 4e30, math.inf], rtol=1e-6)
    np.testing.assert_allclose(_np(tgrad.logaddexp(tgrad.tensor([1.0, -1e30, math.inf]),
                                                   tgrad.tensor([2.0, -1e30, math.inf]))),
                               [2.3132617, -1e30, math.inf], rtol=1e-6)


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2", "hypot", "fmax", "copysign"])
def test_composite_gradcheck(name):
    x = tgrad.tensor(np.array([0.3, -1.2, 2.5, 0.7]), dtype=tgrad.float64, requires_grad=True)
    y = tgrad.tensor(np.array([1.1, 0.4, -0.6, -2.0]), dtype=tgrad.float64, requires_grad=True)
    assert gradcheck(getattr(tgrad, name), (x, y))


def test_broadcast_and_small_predicates():
    assert tgrad.broadcast_shapes((2, 1), (3,), 1) == tgrad.Size([2, 3])
    xs = tgrad.broadcast_tensors(tgrad.ones(2, 1), tgrad.zeros(3))
    assert [tuple(t.shape) for t in xs] == [(2, 3), (2, 3)]
    with pytest.raises(RuntimeError, match=r"Attempting to broadcast a dimension of length 3 at -1! Mismatching "
                                           r"argument at index 1 had \(3,\); but expected shape should be "
                                           r"broadcastable to \[2\]"):      # PyTorch 2.13's words
        tgrad.broadcast_shapes((2,), (3,))
    assert tgrad.tensor([2.0]).is_nonzero() and not tgrad.is_nonzero(tgrad.tensor(0))
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        tgrad.tensor([1, 2]).is_nonzero()
    assert tgrad.is_same_size(tgrad.ones(2, 3), tgrad.zeros(2, 3)) and not tgrad.ones(2).is_same_size(tgrad.ones(3))
    assert tgrad.ones(1).is_signed() and not tgrad.ones(1, dtype=tgrad.uint8).is_signed()
    x = tgrad.ones(2, requires_grad=True)
    assert tgrad.conj(x) is x and not tgrad.is_complex(x) and not x.is_conj() and tgrad.positive(x) is x
    assert not tgrad.detach(x).requires_grad
    assert tgrad.result_type(tgrad.ones(2, dtype=tgrad.int32), 1.0) is tgrad.float32
    assert tgrad.sgn(tgrad.tensor([-2.0, 0.0, 3.0])).tolist() == [-1.0, 0.0, 1.0]


def test_testing_assert_close_messages_match_pytorch():
    # messages printed by PyTorch 2.13 for the same calls
    cases = [
        ((tgrad.tensor([1.0, 2.0, 3.0]), tgrad.tensor([1.0, 2.1, 3.0])),
         "Tensor-likes are not close!\n\nMismatched elements: 1 / 3 (33.3%)\nGreatest absolute difference: "
         "0.09999990463256836 at index (1,) (up to 1e-05 allowed)\nGreatest relative difference: "
         "0.04761900380253792 at index (1,) (up to 1.3e-06 allowed)"),
        ((tgrad.tensor([1, 2]), tgrad.tensor([1, 3])),
         "Tensor-likes are not equal!\n\nMismatched elements: 1 / 2 (50.0%)\nGreatest absolute difference: 1 at "
         "index (1,)\nGreatest relative difference: 0.3333333432674408 at index (1,)"),
        ((1.0, 1.1), "Scalars are not close!\n\nExpected 1.1 but got 1.0.\nAbsolute difference: "
                     "0.10000000000000009 (up to 1e-07 allowed)\nRelative difference: 0.09090909090909098 (up to "
                     "1e-07 allowed)"),
        (({"a": tgrad.ones(1)}, {"a": tgrad.zeros(1)}),
         "Tensor-likes are not close!\n\nMismatched elements: 1 / 1 (100.0%)\nGreatest absolute difference: 1.0 "
         "at index (0,) (up to 1e-05 allowed)\nGreatest relative difference: inf at index (0,) (up to 1.3e-06 "
         "allowed)\n\nThe failure occurred for item ['a']"),
    ]
    for (a, b), text in cases:
        with pytest.raises(AssertionError) as e:
            tgrad.testing.assert_close(a, b)
        assert str(e.value) == text
    with pytest.raises(AssertionError, match="attribute 'dtype' do not match"):
        tgrad.testing.assert_close(tgrad.ones(2), tgrad.ones(2, dtype=tgrad.float64))
    with pytest.raises(AssertionError, match="attribute 'shape' do not match"):
        tgrad.testing.assert_close(tgrad.ones(2), tgrad.ones(3))
    tgrad.testing.assert_close(tgrad.tensor([1.0, math.nan]), tgrad.tensor([1.0, math.nan]), equal_nan=True)
    tgrad.testing.assert_close(tgrad.ones(2), tgrad.ones(2, dtype=tgrad.float64), check_dtype=False)
    tgrad.testing.assert_close([tgrad.ones(1), 2], [tgrad.ones(1) + 1e-7, 2])
