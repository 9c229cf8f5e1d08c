"""Element-wise ops beyond the generic OpInfo tests: PyTorch's errors, edge values, promotion,
float64 precision of the portable tanh/expm1/log1p/atan2, in-place forms, grad_fn names, launch counts."""
import math

import numpy as np
import pytest

import tgrad
from tgrad.autograd import dispatch


def t(v, dtype=None):
    return tgrad.tensor(v, dtype=dtype)


def vals(x):
    return x.detach()._host_copy()


# ------------------------------------------------------------------ errors (PyTorch's wording)
@pytest.mark.parametrize("fn,exc,msg", [
    (lambda: tgrad.where(t([1.0, 2.0]), t([1.0, 2.0]), 0.0), RuntimeError,
     "where expected condition to be a boolean tensor, but got a tensor with dtype Float"),
    (lambda: t([1.0]) & t([1.0]), NotImplementedError, "\"bitwise_and_cpu\" not implemented for 'Float'"),
    (lambda: ~t([1.0]), TypeError, "~ (operator.invert) is only implemented on integer and Boolean-type tensors"),
    (lambda: t([1.0]).clamp(), RuntimeError, "torch.clamp: At least one of 'min' or 'max' must not be None"),
    (lambda: tgrad.lerp(t([1.0]), t([1.0], tgrad.float64), 0.5), RuntimeError,
     "expected dtype tgrad.float32 for `end` but got dtype tgrad.float64"),
    (lambda: t([1, 2]).div(t([1, 2]), rounding_mode="bad"), RuntimeError,
     "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'bad'"),
    (lambda: t([1, 2]) // t([0, 1]), RuntimeError, "ZeroDivisionError"),
    (lambda: t([1, 2]) % 0, RuntimeError, "ZeroDivisionError"),
    (lambda: tgrad.fmod(t([1, 2]), 0), RuntimeError, "ZeroDivisionError"),
    (lambda: t([1, 2]).sqrt_(), RuntimeError, "result type Float can't be cast to the desired output type Long"),
    (lambda: dispatch.call("gelu", t([1.0]), approximate="x"), RuntimeError,
     "approximate argument must be either none or tanh."),
    (lambda: t([1, 2]).frac(), NotImplementedError, "\"frac_cpu\" not implemented for 'Long'"),
    (lambda: t([1.0, 2.0]) < t([1.0, 2.0, 3.0]), RuntimeError,
     "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"),
    (lambda: tgrad.addcdiv(t([1]), t([1]), t([1])), RuntimeError, "Integer division with addcdiv"),
    (lambda: t([True]) - t([True]), RuntimeError, "with two bool tensors is not supported. Use the `^` or"),
    (lambda: t([True]) - t([1.0]), RuntimeError, "Subtraction, the `-` operator, with a bool tensor is not "
                                                 "supported. If you are trying to invert a mask, use the `~`"),
    (lambda: t([1]) - t([False]), RuntimeError, "with a bool tensor is not supported"),
    (lambda: 1 - t([True]), RuntimeError, "with a bool tensor is not supported"),
    (lambda: tgrad.maximum(t([1.0]), 2), TypeError, "maximum(): argument 'other' (position 2) must be Tensor, not int"),
    (lambda: tgrad.minimum(2.0, t([1.0])), TypeError,
     "minimum(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: tgrad.atan2(t([1.0]), 2.0), TypeError, "atan2(): argument 'other' (position 2) must be Tensor, not float"),
    (lambda: tgrad.arctan2(t([1.0]), 2), TypeError, "arctan2(): argument 'other' (position 2) must be Tensor, not int"),
    (lambda: tgrad.logical_and(t([1.0]), True), TypeError,
     "logical_and(): argument 'other' (position 2) must be Tensor, not bool"),
    (lambda: tgrad.lerp(t([1, 2]), t([3, 4]), 0.5), NotImplementedError,
     "\"lerp_kernel_scalar\" not implemented for 'Long'"),
    (lambda: tgrad.lerp(t([1, 2]), t([3, 4]), t([1, 0])), NotImplementedError,
     "\"lerp_kernel_tensor\" not implemented for 'Long'"),
])
def test_errors(fn, exc, msg):
    with pytest.raises(exc) as e:
        fn()
    assert msg in str(e.value)


@pytest.mark.parametrize("name", ["maximum", "minimum", "atan2", "arctan2", "logical_and", "logical_or",
                                  "logical_xor", "atan2_", "arctan2_", "logical_and_", "logical_or_", "logical_xor_"])
@pytest.mark.parametrize("other", [2, 2.5, True, None, [1.0]], ids=repr)
def test_tensor_only_methods_refuse_numbers(name, other):
    """PyTorch defines these on two tensors only: the method's TypeError names 'other' at position 1."""
    x = t([1.0, 0.0])
    with pytest.raises(TypeError) as e:
        getattr(x, name)(other)
    assert str(e.value) == f"{name}(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}"
    assert vals(x).tolist() == [1.0, 0.0] and x._version == 0
    assert vals(getattr(x.clone(), name)(t(0.5))).tolist() == vals(getattr(tgrad, name.rstrip("_"))(x, t(0.5))).tolist()


def test_bad_input_changes_nothing():
    x = t([1, 2, 3])
    with pytest.raises(RuntimeError):
        x.sqrt_()
    with pytest.raises(RuntimeError):
        x.remainder_(t([1, 0, 1]))
    assert vals(x).tolist() == [1, 2, 3] and x._version == 0


# ------------------------------------------------------------------ edge values (PyTorch's results)


def test_division_modes():
    assert vals(t(1.0) // 0.1).item() == 9.0                      # PyTorch's fmod-based floor division
    np.testing.assert_array_equal(vals(t([-7.5, 7.5]) // t([2.0, -2.0])), [-4.0, -4.0])
    np.testing.assert_array_equal(vals(t([-7.5, 7.5]) % t([2.0, -2.0])), [0.5, -0.5])
    np.testing.assert_array_equal(vals(tgrad.fmod(t([-7.5, 7.5]), 2.0)), [-1.5, 1.5])
    np.testing.assert_array_equal(vals(t([1.0, -1.0]).div(t([0.0, 0.0]), rounding_mode="trunc")), [np.inf, -np.inf])
    assert vals(t([7, -7, 7, -7]) // t([2, 2, -2, -2])).tolist() == [3, -4, -4, 3]
    assert vals(t([7, -7]).div(t([2, 2]), rounding_mode="trunc")).tolist() == [3, -3]
    assert vals(t([7, -7, 7, -7]) % t([3, 3, -3, -3])).tolist() == [1, 2, -2, -1]
    assert vals(tgrad.fmod(t([7, -7]), 3)).tolist() == [1, -1]
    assert vals(5 // t([2, 3])).tolist() == [2, 1] and vals(7 % t([4, 5])).tolist() == [3, 2]


def test_pow_forms():
    assert vals(2 ** t([1, 2, 10])).tolist() == [2, 4, 1024]
    assert (2 ** t([1, 2])).dtype is tgrad.int64 and (2.0 ** t([1, 2])).dtype is tgrad.float32
    np.testing.assert_allclose(vals(2.5 ** t([0.5, -1.0], tgrad.float64)), [2.5 ** 0.5, 0.4], rtol=1e-14)
    np.testing.assert_array_equal(vals((-2.0) ** t([2.0, 3.0, 0.5])), [4.0, -8.0, np.nan])
    np.testing.assert_array_equal(vals(0.0 ** t([2.0, 0.0, -1.0])), [0.0, 1.0, np.inf])
    assert vals(t([3, 1, -1, 2]) ** t([-1, -3, -3, 10])).tolist() == [0, 1, -1, 1024]
    np.testing.assert_array_equal(vals(t([-2.0, 0.0, 0.0, 4.0]) ** t([3.0, 0.0, -2.0, 0.5])), [-8.0, 1.0, np.inf, 2.0])


SPECIAL = [float("nan"), math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.25, -0.25, 3.0, -3.0, 2.5, -2.5,
           1e40, -1e40, 1e300, 2.0 ** 31 + 1]


def _same(got, ref, rtol=0.0):
    """Equal values (to rtol), NaNs and infinities in the same places, and zeros of the same sign."""
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=0)
    np.testing.assert_array_equal(np.signbit(got[got == 0]), np.signbit(ref[ref == 0]))


@pytest.mark.parametrize("dtype", [tgrad.float32, tgrad.float64])
def test_pow_special_values_are_c99(dtype):
    """Every pairing of special values, in all three forms, as C99 pow (numpy's elementwise np.power).

    float64 non-integral powers go through exp2(y log2|x|) in float64: ~|y log2 x| ulp, hence rtol there."""
    rtol = 1e-13 if dtype is tgrad.float64 else 0.0
    x, y = np.meshgrid(np.array(SPECIAL), np.array(SPECIAL), indexing="ij")
    with np.errstate(all="ignore"):
        x, y = x.astype(dtype.np).astype(np.float64), y.astype(dtype.np).astype(np.float64)   # 1e40: inf in fp32
        ref = np.power(x, y).astype(dtype.np)
    _same(vals(t(x, dtype) ** t(y, dtype)), ref, rtol)
    for j, p in enumerate(SPECIAL):
        with np.errstate(all="ignore"):
            r = np.power(x[:, 0], np.full(len(SPECIAL), p)).astype(dtype.np)
        _same(vals(t(x[:, 0], dtype) ** p), r, rtol)
        with np.errstate(all="ignore"):
            r = np.power(np.full(len(SPECIAL), p).astype(dtype.np).astype(np.float64), x[:, 0]).astype(dtype.np)
        _same(vals(p ** t(x[:, 0], dtype)), r, rtol)               # a scalar base is cast to the dtype, as PyTorch


def test_pow_issue_cases_and_sqrt_exponents():
    inf, nan = math.inf, math.nan
    _same(vals(t([1.0, 2.0]) ** inf), [1.0, inf])
    _same(vals(t([1.0, 2.0]) ** nan), [1.0, nan])
    _same(vals(t([1.0, 2.0]) ** 1e40), [1.0, inf])
    _same(vals(t([1.0, 1.0, -1.0]) ** t([inf, nan, inf])), [1.0, 1.0, 1.0])
    _same(vals(1.0 ** t([inf, nan])), [1.0, 1.0])
    _same(vals(inf ** t([0.0, 2.0])), [1.0, inf])
    _same(vals(nan ** t([0.0])), [1.0])
    x = t([0.0, -0.0, -2.0, -inf, inf, 4.0])
    _same(vals(x ** 0.5), [0.0, -0.0, nan, nan, inf, 2.0])          # PyTorch's sqrt, not C99's pow
    _same(vals(x ** -0.5), [inf, -inf, nan, nan, 0.0, 0.5])


@pytest.mark.parametrize("form", ["tensor", "scalar", "int", "base"])
def test_pow_float32_is_correctly_rounded(form):
    """fp32 pow within 1 ulp of float64 numpy over outputs spanning 1e-30 .. 1e30 (was ~90 ulp via fp32 exp2/log2)."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0.1, 10, 20000).astype(np.float32)
    y = rng.uniform(-30, 30, 20000).astype(np.float32)
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    got, ref = {"tensor": (lambda: t(x) ** t(y), lambda: xd ** yd), "scalar": (lambda: t(x) ** 7.3, lambda: xd ** 7.3),
                "int": (lambda: t(x) ** 29, lambda: xd ** 29),
                "base": (lambda: 9.7 ** t(y), lambda: float(np.float32(9.7)) ** yd)}[form]
    got, ref = vals(got()).astype(np.float64), ref()
    ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got - ref) / ulp) <= 1.0


def test_pow_gradients_at_special_values():
    """PyTorch's formulas: p x^(p-1) (zeros for p == 0), y x^(y-1) and x^y log x with their zero cases."""
    inf, nan = math.inf, math.nan
    x = t([0.0, -0.0, -2.0, nan, inf, -1.0]).requires_grad_()
    (x ** 0).sum().backward()
    _same(vals(x.grad), [0.0] * 6)
    x = t([0.0, -2.0, 1.0, inf], tgrad.float64).requires_grad_()
    (x ** inf).sum().backward()
    _same(vals(x.grad), [nan, inf, inf, inf])
    x = t([0.0, 0.0, 0.0, 2.0, 1.0]).requires_grad_()
    e = t([0.0, 1.0, -1.0, inf, nan]).requires_grad_()
    (x ** e).sum().backward()
    _same(vals(x.grad), [0.0, 1.0, -inf, inf, nan])
    _same(vals(e.grad), [0.0, 0.0, -inf, inf, 0.0])
    e = t([0.0, 1.0, -1.0, inf, nan, -inf]).requires_grad_()
    (0.0 ** e).sum().backward()
    _same(vals(e.grad), [0.0, 0.0, -inf, 0.0, nan, -inf])


@pytest.mark.parametrize("dtype", [tgrad.float32, tgrad.float64])
def test_atan2_special_values_are_c99(dtype):
    """+-0, +-inf (atan2(+-inf, +-inf) = +-pi/4, +-3pi/4), NaN and extremes paired every way, as numpy."""
    v = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-30, 1e30, -3e-30])
    y, x = (a.ravel().astype(dtype.np) for a in np.meshgrid(v, v, indexing="ij"))
    ref = np.arctan2(y.astype(np.float64), x.astype(np.float64)).astype(dtype.np)
    _same(vals(tgrad.atan2(t(y, dtype), t(x, dtype))), ref, 2.4e-7 if dtype is tgrad.float32 else 4.5e-16)


def test_nan_propagation_and_special_values():
    nan = float("nan")
    np.testing.assert_array_equal(vals(t([nan, 1.0]).clamp(0, 0.5)), [nan, 0.5])
    np.testing.assert_array_equal(vals(tgrad.maximum(t([nan, 1.0]), t([0.0, nan]))), [nan, nan])
    np.testing.assert_array_equal(vals(tgrad.minimum(t([nan, 1.0]), t([0.0, nan]))), [nan, nan])
    np.testing.assert_array_equal(vals(t([nan, -1.0]).relu()), [nan, 0.0])
    np.testing.assert_array_equal(vals(t([1.0, 5.0]).clamp(2, 1)), [1.0, 1.0])          # min > max gives max
    y = t([0.0, -0.0, 0.0, 1.0, -1.0], tgrad.float64)
    x = t([-0.0, -0.0, 0.0, 0.0, -0.0], tgrad.float64)
    np.testing.assert_array_equal(vals(tgrad.atan2(y, x)), np.arctan2(vals(y), vals(x)))
    x = t([nan, np.inf, -np.inf, 2.0, 0.0], tgrad.float32)
    assert vals(x.isnan()).tolist() == [True, False, False, False, False]
    assert vals(x.isinf()).tolist() == [False, True, True, False, False]
    assert vals(x.isfinite()).tolist() == [False, False, False, True, True]
    assert vals(t([1, 2]).isfinite()).tolist() == [True, True]
    h = t([nan, np.inf, -np.inf]).half().nan_to_num()
    assert vals(h).astype(np.float64).tolist() == [0.0, 65504.0, -65504.0]


# ------------------------------------------------------------------ float64 precision of the portable math


def test_atan2_float64_all_quadrants():
    rng = np.random.default_rng(1)
    y, x = rng.uniform(-5, 5, 400), rng.uniform(-5, 5, 400)
    y[:4], x[:4] = [1.0, -1.0, 3.0, -2.0], [1.0, 1.0, 1e-9, -1e-12]
    got = vals(tgrad.atan2(t(y, tgrad.float64), t(x, tgrad.float64)))
    np.testing.assert_allclose(got, np.arctan2(y, x), rtol=2e-15, atol=1e-15)


# ------------------------------------------------------------------ promotion and scalars
@pytest.mark.parametrize("dt", [tgrad.float16, tgrad.bfloat16])
def test_half_tensor_and_python_number_mul_div_in_float32(dt):
    # PyTorch takes the number in float32 ("opmath"): ones(1, dtype=float16) / 0.3 is 3.333984375, not the
    # 3.33203125 that 1 / float16(0.3) gives; 1e5 is no float16 but x / 1e5 is fine
    xs = np.random.default_rng(0).standard_normal(500) * 50
    x = t(xs, dt)
    x32 = vals(x).astype(np.float32)
    for s in (0.3, 0.1, 7.77, -2.2, 3001, 1e5, 1 / 3):
        f = np.float32(s)
        for got, want in ((x * s, x32 * f), (s * x, x32 * f), (x / s, x32 / f), (x.mul(s), x32 * f),
                          (x.div(s), x32 / f), (x.clone().mul_(s), x32 * f), (x.clone().div_(s), x32 / f)):
            assert got.dtype is dt
            with np.errstate(over="ignore"):             # x * 1e5 overflows float16, to inf in both
                np.testing.assert_array_equal(vals(got).astype(np.float32), want.astype(dt.np).astype(np.float32))
    one = tgrad.ones(1, dtype=tgrad.float16) / 0.3
    assert one.item() == float(np.float16(np.float32(1) / np.float32(0.3))) == 3.333984375
    assert (x[0] * 0.3).dtype is dt                                   # a 0-dim self keeps its dtype too


def test_type_promotion():
    i = t([1, 2, 3])
    assert i.sqrt().dtype is tgrad.float32 and i.sigmoid().dtype is tgrad.float32
    assert (i == 2.5).dtype is tgrad.bool and vals(i < 2.5).tolist() == [True, True, False]
    assert i.clamp(2.5).dtype is tgrad.float32 and vals(i.clamp(2.5)).tolist() == [2.5, 2.5, 3.0]
    assert i.clamp(0, 2).dtype is tgrad.int64
    assert tgrad.where(i > 1, 1.0, 0).dtype is tgrad.float32
    assert tgrad.where(i > 1, i, 0).dtype is tgrad.int64
    assert tgrad.maximum(i, t([1.5])).dtype is tgrad.float32
    assert (t([True, False]) & t([True, True])).dtype is tgrad.bool
    assert vals(t([5], tgrad.uint8).bitwise_not()).tolist() == [250]
    assert vals(~t([True, False])).tolist() == [False, True]
    assert vals(t([12], tgrad.int32) ^ 10).tolist() == [6]
    h = t([1.0, 2.0]).half()
    assert tgrad.atan2(h, h).dtype is tgrad.float16 and h.exp2().dtype is tgrad.float16


# ------------------------------------------------------------------ in-place forms
def test_inplace_forms():
    x = t([-2.0, 0.5, 3.0])
    v = x._version
    assert x.clamp_(-1, 1) is x and vals(x).tolist() == [-1.0, 0.5, 1.0] and x._version == v + 1
    x.eq_(t([-1.0, 0.0, 1.0]))
    assert x.dtype is tgrad.float32 and vals(x).tolist() == [1.0, 0.0, 1.0]
    y = t([1.0, 2.0])
    y.addcmul_(t([2.0, 3.0]), t([4.0, 5.0]), value=0.5).addcdiv_(t([1.0, 1.0]), t([2.0, 4.0]), value=2)
    assert vals(y).tolist() == [6.0, 10.0]
    y.lerp_(t([0.0, 0.0]), 0.5)
    assert vals(y).tolist() == [3.0, 5.0]
    z = t([-1.0, 2.0])
    dispatch.call_inplace("relu", z)
    assert vals(z).tolist() == [0.0, 2.0]
    b = t([True, False])
    b |= t([False, False])
    b ^= t([True, True])
    assert vals(b).tolist() == [False, True]
    k = t([7, 8])
    k //= 3
    k %= 2
    assert vals(k).tolist() == [0, 0]


# ------------------------------------------------------------------ autograd names, fused backward launches
@pytest.mark.parametrize("fn,name", [
    (lambda x: x.relu(), "ReluBackward0"), (lambda x: x.tanh(), "TanhBackward0"),
    (lambda x: x.sigmoid(), "SigmoidBackward0"), (lambda x: dispatch.call("gelu", x), "GeluBackward0"),
    (lambda x: dispatch.call("relu6", x), "HardtanhBackward0"), (lambda x: tgrad.selu(x), "EluBackward0"),
    (lambda x: x.clamp(0, 1), "ClampBackward1"), (lambda x: x.clamp(x * 0), "ClampBackward0"),
    (lambda x: x ** x, "PowBackward1"), (lambda x: 2 ** x, "PowBackward2"), (lambda x: x.square(), "PowBackward0"),
    (lambda x: tgrad.where(x > 0, x, 0.0), "WhereBackward0"), (lambda x: x // 2, "DivBackward2"),
    (lambda x: x.lerp(x * 2, 0.5), "LerpBackward0"), (lambda x: x.log1p(), "Log1PBackward0"),
    (lambda x: x % 2, "RemainderBackward0"), (lambda x: x % x, "RemainderBackward1"),
    (lambda x: x.fmod(2), "FmodBackward0"), (lambda x: x.fmod(x), "FmodBackward1"),
])
def test_grad_fn_names(fn, name):
    x = tgrad.tensor([0.5, 1.5], requires_grad=True)
    assert fn(x).grad_fn.name() == name


def test_float64_parameters_are_not_rounded_to_fp32():
    """Float kernel arguments are fp32; float64 parameters must still be exact (hi + lo split or literals)."""
    a = np.array([1.0, -0.5, 3.0])
    x = t(a, tgrad.float64)
    for got, ref in [(x.add(x, alpha=0.1), a + 0.1 * a), (x.sub(x, alpha=0.1), a - 0.1 * a),
                     (x.lerp(x * 0, 0.1), a - 0.1 * a), (x.addcmul(x, x, value=0.1), a + 0.1 * a * a),
                     (x.clamp(0.1, 0.3), np.clip(a, 0.1, 0.3)), (x.abs() ** 0.1, np.abs(a) ** 0.1),
                     (0.1 ** x, 0.1 ** a),
                     (dispatch.call("leaky_relu", x, negative_slope=0.1), np.where(a > 0, a, 0.1 * a)),
                     (tgrad.selu(x), 1.0507009873554804934 * np.where(a > 0, a, 1.6732632423543772848 * np.expm1(a)))]:
        np.testing.assert_allclose(vals(got), ref, rtol=1e-14, atol=0)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "bool"])
def test_alpha_one_add_sub_match_the_alpha_kernels_bitwise(dtype):
    """alpha == 1 launches add_noalpha_fn / sub_noalpha_fn; they equal add_fn / sub_fn with alpha 1 bit for bit."""
    from tgrad.kernels import elementwise as KE
    dt = getattr(tgrad, dtype)
    if dtype == "bool":
        a, b = t([True, False, True, False]), t([True, True, False, False])
    elif dtype == "int64":
        a, b = t([2 ** 40 + 1, -7, 0, 5], dt), t([3, 2 ** 62, -1, 0], dt)
    else:
        a = t([1.5, -0.0, np.inf, np.nan, 3e38, 1e-40, 0.1, -2.0], dt)
        b = t([-1.5, -0.0, -np.inf, 1.0, 3e38, -1e-40, 0.2, np.nan], dt)
    b2 = b.reshape(-1, 1)                                   # broadcast too
    pairs = [("add", KE.add_fn, KE.add_noalpha_fn)]
    if dtype != "bool":
        pairs.append(("sub", KE.sub_fn, KE.sub_noalpha_fn))
    for name, fn, noalpha in pairs:
        for x, y in [(a, b), (a, b2)]:
            for alpha in (1, 1.0, True) if dtype == "bool" else (1, 1.0):
                for _ in range(3):                          # direct, record, replay
                    got = getattr(x, name)(y, alpha=alpha)
                ref = tgrad.empty(got.shape, dtype=got.dtype)
                a1 = (1, 0) if not got.dtype.is_floating_point else KE.split64(1.0)
                KE.binary(fn, x, y, ref, *a1)
                assert vals(got).tobytes() == vals(ref).tobytes(), (name, alpha, y.shape)
                nf = tgrad.empty(got.shape, dtype=got.dtype)
                KE.binary(noalpha, x, y, nf, *a1)
                assert vals(nf).tobytes() == vals(ref).tobytes()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64"])
def test_square_kernels_match_pow_int_bitwise(dtype):
    """x ** 2 launches square_fn and its backward pow2_grad_fn; they equal pow_int_fn(x, 2) and
    pow_grad_fn(g, x, 2.0, 1) bit for bit (subnormal, huge, NaN, inf, -0 included)."""
    from tgrad.kernels import elementwise as KE
    dt = getattr(tgrad, dtype)
    rng = np.random.default_rng(0)
    if dtype == "int64":
        x = t(rng.integers(-2 ** 40, 2 ** 40, 64).tolist() + [2 ** 33, -1, 0], dt)
        g = None
    else:
        v = np.concatenate([rng.standard_normal(64) * 10.0 ** rng.integers(-45, 39, 64),
                            [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -3e-39, 1.8e19, 3e38, 1e308, 1e-310]])
        with np.errstate(over="ignore"):
            x = t(v, dt)
        g = t(rng.standard_normal(v.size) * 10.0 ** rng.integers(-30, 30, v.size), dt)
    cases = [(KE.unary, KE.square_fn, KE.pow_int_fn, (x,), (0.0,), (2, 0))]
    if g is not None:
        cases.append((KE.binary, KE.pow2_grad_fn, KE.pow_grad_fn, (g, x), (2.0, 1), (2.0, 1)))
    for launch, fn, ref_fn, ins, p_new, p_ref in cases:
        for _ in range(3):                                  # direct, record, replay
            got = launch(fn, *ins, tgrad.empty(x.shape, dtype=dt), *p_new, compute=KE.compute_type(dt))
            ref = launch(ref_fn, *ins, tgrad.empty(x.shape, dtype=dt), *p_ref, compute=KE.compute_type(dt))
            assert vals(got).tobytes() == vals(ref).tobytes(), fn
    if g is not None:
        xr = x.detach().requires_grad_()
        (xr ** 2).backward(g)
        for _ in range(3):
            y = x ** 2
        ref = KE.unary(KE.pow_int_fn, x, tgrad.empty(x.shape, dtype=dt), 2, 0, compute=KE.compute_type(dt))
        assert vals(y).tobytes() == vals(ref).tobytes()
        gref = KE.binary(KE.pow_grad_fn, g, x, tgrad.empty(x.shape, dtype=dt), 2.0, 1, compute=KE.compute_type(dt))
        assert vals(xr.grad).tobytes() == vals(gref).tobytes()


def test_integer_add_stays_exact():
    big = 2 ** 40 + 1
    assert vals(t([big]).add(t([1]), alpha=2)).tolist() == [big + 2]
    assert vals(t([big]) - t([1])).tolist() == [big - 1]


# ------------------------------------------------------------------ device checks (no GPU needed)
class _OnDevice:
    """What check_devices reads of a tensor, .device (a real tgrad.device) and .dim(), for devices absent here."""
    def __init__(self, dev, ndim):
        self.device, self._ndim = tgrad.device(dev), ndim

    def dim(self):
        return self._ndim


@pytest.mark.parametrize("devs,msg", [
    ([("cpu", 1), ("cuda:0", 1)], "cpu and cuda:0"),
    ([("cuda:0", 1), ("cpu", 1)], "cuda:0 and cpu"),
    ([("cuda:0", 0), ("cpu", 1)], "cuda:0 and cpu"),          # a 0-d cuda tensor is no cpu scalar
    ([("cpu", 0), ("cuda:0", 2), ("cuda:1", 1)], "cuda:0 and cuda:1"),
    ([("cuda:0", 1), ("cpu", 0), ("cpu", 1)], "cuda:0 and cpu"),
])
def test_check_devices_rejects_two_devices(devs, msg):
    with pytest.raises(RuntimeError) as e:
        dispatch.check_devices("add", [_OnDevice(d, n) for d, n in devs])
    assert str(e.value) == (f"Expected all tensors to be on the same device, but found at least two devices, "
                            f"{msg}! (when checking arguments for add)")


@pytest.mark.parametrize("devs", [
    [("cpu", 0), ("cuda:0", 1)],                                # a 0-d cpu tensor joins cuda in either order
    [("cuda:0", 1), ("cpu", 0)],
    [("cpu", 0), ("cuda:0", 0), ("cpu", 0)],
    [("cpu", 0), ("cpu", 1)],
])
def test_check_devices_allows_cpu_scalars_anywhere(devs):
    dispatch.check_devices("add", [_OnDevice(d, n) for d, n in devs])


def test_cpu_scalar_tensor_mixes_on_cpu():
    np.testing.assert_array_equal(vals(t(1.5) + t([1.0, 2.0])), [2.5, 3.5])
    np.testing.assert_array_equal(vals(t([1.0, 2.0]) * t(2.0)), [2.0, 4.0])


def test_fill_grad_fn_names_as_pytorch():
    a = tgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (a * 1).fill_(2.0)            # a Python number: FillBackward2, no value input
    assert type(y.grad_fn).__name__ == "FillBackward2" and len(y.grad_fn.next_functions) == 1
    assert vals(y).tolist() == [2.0] * 3
    v = tgrad.tensor(2.0, requires_grad=True)
    y = (a * 1).fill_(v)              # a 0-dim tensor: FillBackward3, the gradient reaches it
    assert type(y.grad_fn).__name__ == "FillBackward3"
    assert [type(n).__name__ for n, _ in y.grad_fn.next_functions] == ["MulBackward0", "AccumulateGrad"]
    ga, gv = tgrad.autograd.grad((y * tgrad.tensor([1.0, 2.0, 4.0])).sum(), (a, v))
    assert vals(ga).tolist() == [0.0] * 3 and vals(gv).tolist() == 7.0


@pytest.mark.parametrize("dtype", [tgrad.float32, tgrad.int64, tgrad.uint8, tgrad.bool])
def test_subtracting_a_python_bool_raises_like_pytorch(dtype):
    x = t([1, 0]).to(dtype)
    msg = ("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` "
           "operator instead." if dtype is tgrad.bool else
           "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, "
           "use the `~` or `logical_not()` operator instead.")
    for fn in (lambda: x - True, lambda: True - x, lambda: x.sub(False), lambda: x.sub_(True)):
        with pytest.raises(RuntimeError) as e:
            fn()
        assert str(e.value) == msg
    assert x.tolist() == t([1, 0]).to(dtype).tolist() and x._version == 0
    assert (x + True).tolist() == ([True, True] if dtype is tgrad.bool else [2, 1])


def test_boolean_alpha_only_for_boolean_results():
    for fn in (lambda: t([1.0]).add(1, alpha=True), lambda: t([1, 2]).sub(t([1, 2]), alpha=False)):
        with pytest.raises(RuntimeError, match="^Boolean alpha only supported for Boolean results.$"):
            fn()
    assert t([True, False]).add(t([False, False]), alpha=True).tolist() == [True, False]


def test_pow_3_and_minus_2_are_atens_products_on_every_device(device):
    # ATen's pow kernel: x ** 3 = x * x * x, x ** -2 = 1 / (x * x), each step rounded (float32 bits)
    x = np.random.default_rng(3).uniform(1, 3, 300).astype(np.float32)
    t = tgrad.tensor(x, device=device)
    assert t.pow(3).cpu().numpy().view(np.int32).tolist() == (x * x * x).view(np.int32).tolist()
    assert (t ** -2).cpu().numpy().view(np.int32).tolist() == (np.float32(1) / (x * x)).view(np.int32).tolist()
