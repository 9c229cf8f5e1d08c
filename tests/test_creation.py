"""Tensor creation: ranges, fills, tensor/as_tensor/from_numpy, *_like, random numbers, layout queries."""
import re
import warnings

import numpy as np
import pytest

import tgrad


def _np(t):
    return t.detach()._host_copy()


# ------------------------------------------------------------------ ranges
def test_arange_against_numpy(device):
    for args in ((5,), (0, 1, 0.25), (5, 0, -1.5), (1, 2.5, 0.5), (-1.0, 1.0, 0.3), (10, 0, -3), (0.5,), (3, 3),
                 (0, 1000), (1.5, 4)):
        t = tgrad.arange(*args, device=device)
        want = np.arange(*args)
        assert t.dtype is (tgrad.float32 if want.dtype.kind == "f" else tgrad.int64), args
        np.testing.assert_allclose(_np(t), want, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(_np(tgrad.arange(1.5, 4, dtype=tgrad.int64, device=device)), [1, 2, 3])
    np.testing.assert_array_equal(_np(tgrad.arange(0, 1, 0.1, dtype=tgrad.float64, device=device)),
                                  np.arange(0, 1, 0.1))
    np.testing.assert_array_equal(_np(tgrad.arange(tgrad.tensor(3), device=device)), [0, 1, 2])
    with pytest.raises(RuntimeError, match="^upper bound and lower bound inconsistent with step sign$"):
        tgrad.arange(0, 5, -1)
    with pytest.raises(RuntimeError, match="^step must be nonzero$"):
        tgrad.arange(0, 5, 0)
    with pytest.raises(RuntimeError, match="^unsupported range: 0 -> inf$"):
        tgrad.arange(0, float("inf"))
    with pytest.raises(NotImplementedError, match=f"^\"arange_{device}\" not implemented for 'Bool'$"):
        tgrad.arange(3, dtype=tgrad.bool, device=device)


def test_linspace_against_numpy(device):
    for start, end, steps in ((-1, 2, 1), (3, 2, 1), (0, 1, 5), (-2.5, 7, 33), (1, -1, 2), (0, 1, 0)):
        t = tgrad.linspace(start, end, steps, device=device)
        assert t.dtype is tgrad.float32 and tuple(t.shape) == (steps,)
        np.testing.assert_allclose(_np(t), np.linspace(start, end, steps, dtype=np.float32), rtol=1e-6,
                                   atol=1e-6)
    np.testing.assert_array_equal(_np(tgrad.linspace(-1, 2, 1, dtype=tgrad.float64, device=device)), [-1.0])


# ------------------------------------------------------------------ fills
@pytest.mark.parametrize("make, ref", [(tgrad.zeros, np.zeros), (tgrad.ones, np.ones), (tgrad.empty, np.empty)])
def test_fills_and_shape_forms(make, ref, device):
    for shape in ((), (1,), (7,), (2, 3), (33, 0, 2)):
        forms = [make(shape, device=device), make(list(shape), device=device), make(*shape, device=device),
                 make(size=shape, device=device), make(tgrad.Size(shape), device=device)]
        for t in forms:
            assert tuple(t.shape) == shape and t.dtype is tgrad.float32 and t.is_contiguous()
            if make is not tgrad.empty:
                np.testing.assert_array_equal(_np(t), ref(shape, dtype=np.float32))
    t = make(2, 3, dtype=tgrad.int16, device=device)
    assert t.dtype is tgrad.int16 and t.device.type == device
    with pytest.raises(TypeError, match="got multiple values for argument 'size'"):
        make(2, size=(2,))


def test_full_eye_and_dtype_of_the_fill(device):
    for value, dt in ((7, tgrad.int64), (1.5, tgrad.float32), (True, tgrad.bool)):
        t = tgrad.full((2, 3), value, device=device)
        assert t.dtype is dt
        np.testing.assert_array_equal(_np(t), np.full((2, 3), value))
    np.testing.assert_array_equal(_np(tgrad.full((4,), 3, dtype=tgrad.float16, device=device)),
                                  np.full(4, 3, np.float16))
    for n, m in ((3, None), (2, 3), (4, 2), (0, None), (1, 1), (33, 7)):
        t = tgrad.eye(n, m, device=device)
        np.testing.assert_array_equal(_np(t), np.eye(n, m, dtype=np.float32))
    np.testing.assert_array_equal(_np(tgrad.eye(3, dtype=tgrad.int32, device=device)), np.eye(3, dtype=np.int32))
    with pytest.raises(RuntimeError, match="^n must be greater or equal to 0, got -1$"):
        tgrad.eye(-1)
    with pytest.raises(RuntimeError, match="^m must be greater or equal to 0, got -2$"):
        tgrad.eye(2, -2)


# ------------------------------------------------------------------ tensor / as_tensor / from_numpy
def test_tensor_dtype_inference(device):
    f32, f64, i64 = tgrad.float32, tgrad.float64, tgrad.int64
    i32 = tgrad.tensor([1], dtype=tgrad.int32, device=device)[0]
    cases = [([1, 2], i64), ([1, 2.5], f32), ([True, False], tgrad.bool), ([True, 2], i64), (3, i64),
             (2.5, f32), ([], f32), ([[], []], f32), ([[1, 2], [3.5, 4]], f32),
             # numpy values and tensors keep their dtype and promote with the rest of the sequence
             (np.float64(2.5), f64), ([np.float64(1), 2], f64), ([1.0, np.float64(2)], f64),
             ([np.float32(1), 2.5], f32), ([np.float16(1), 2], tgrad.float16), ([np.float16(1), 2.5], f32),
             ([np.int32(1), np.int8(2)], tgrad.int32), ([np.uint8(1), np.int8(1)], tgrad.int16),
             ([i32, i32], tgrad.int32), ([i32, 2], i64), (np.array([1, 2], dtype=np.int16), tgrad.int16),
             (np.array([True]), tgrad.bool), (np.array([1.5]), f64)]
    for data, dt in cases:
        t = tgrad.tensor(data, device=device)
        assert t.dtype is dt, data
        if not (isinstance(data, list) and any(isinstance(x, tgrad.Tensor) for x in data)):
            np.testing.assert_array_equal(_np(t), np.array(data).astype(dt.np))
    np.testing.assert_array_equal(_np(tgrad.tensor([i32, i32], device=device)), [1, 1])
    with pytest.raises(RuntimeError, match="^Could not infer dtype of NoneType$"):
        tgrad.tensor([1, None])
    with pytest.raises(TypeError, match=r"^new\(\): invalid data type 'str'$"):
        tgrad.tensor("a")


def test_tensor_bad_data_raises_like_pytorch():
    with pytest.raises(ValueError, match="^Overflow when unpacking long long$"):
        tgrad.tensor(2 ** 63)
    for data in (-2 ** 63 - 1, [1, 2 ** 63], [[True], [2 ** 64]]):
        with pytest.raises(ValueError, match="^Overflow when unpacking long long$"):
            tgrad.tensor(data)
    with pytest.raises(ValueError, match="^Overflow when unpacking long long$"):
        tgrad.tensor([2 ** 63], dtype=tgrad.uint8)
    for data, dt in (([300], tgrad.uint8), ([-256], tgrad.uint8), ([1e10], tgrad.int32), ([float("nan")], tgrad.int64),
                     ([255.9], tgrad.uint8), ([-0.5], tgrad.uint8), ([128], tgrad.int8),
                     (np.int64(2 ** 40), tgrad.int16)):
        with pytest.raises(RuntimeError, match=f"^value cannot be converted to type {dt.name} without overflow$"):
            tgrad.tensor(data, dtype=dt)
    ragged = {"expected sequence of length 2 at dim 1 (got 1)": [[1, 2], [3]],
              "expected sequence of length 2 at dim 1 (got 3)": [[1, 2], [3, 4, 5]],
              "expected sequence of length 1 at dim 2 (got 2)": [[[1], [2]], [[3], [4, 5]]],
              "expected sequence of length 2 at dim 1 (got 0)": [[1, 2], []]}
    for msg, data in ragged.items():
        with pytest.raises(ValueError, match="^" + re.escape(msg) + "$"):
            tgrad.tensor(data)
    with pytest.raises(ValueError, match=re.escape("expected sequence of length 2 at dim 1 (got 1)")):
        tgrad.tensor([[1, 2], np.array([3])])
    with pytest.raises(TypeError, match="^not a sequence$"):
        tgrad.tensor([[1, 2], 3])
    with pytest.raises(TypeError, match="^'list' object cannot be interpreted as an integer$"):
        tgrad.tensor([1, [2, 3]])
    with pytest.raises(TypeError, match="^must be real number, not list$"):
        tgrad.tensor([[1, 2], [3, [4]]], dtype=tgrad.float32)


def test_tensor_values_at_the_edges_of_the_range():
    # what PyTorch accepts: the int64 limits, big ints as floats, uint8 wrapping small negative ints
    np.testing.assert_array_equal(_np(tgrad.tensor([2 ** 63 - 1, -2 ** 63])), np.array([2 ** 63 - 1, -2 ** 63]))
    t = tgrad.tensor([2 ** 70, 1.0])
    assert t.dtype is tgrad.float32
    np.testing.assert_array_equal(_np(t), np.array([2.0 ** 70, 1.0], np.float32))
    assert tgrad.tensor(2 ** 64, dtype=tgrad.float64).item() == 2.0 ** 64
    assert tgrad.tensor(-2 ** 63 - 1, dtype=tgrad.bool).item() is True
    np.testing.assert_array_equal(_np(tgrad.tensor([-1, 255], dtype=tgrad.uint8)), [255, 255])
    np.testing.assert_array_equal(_np(tgrad.tensor(np.array([300]), dtype=tgrad.uint8)),
                                  np.array([300]).astype(np.uint8))       # numpy data: numpy's cast
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tgrad.tensor([1e300], dtype=tgrad.float32).item() == float("inf")
    assert tuple(tgrad.tensor([[], [1]]).shape) == (2, 0)                 # sizes from the first items


def test_tensor_copies_and_as_tensor_from_numpy_share(device):
    a = np.arange(6.0).reshape(2, 3)
    t = tgrad.tensor(a, device=device)
    a[0, 0] = 100.0
    assert t.dtype is tgrad.float64 and _np(t)[0, 0] == 0.0             # tensor() copies
    t = tgrad.tensor(a, dtype=tgrad.float32, device=device)
    np.testing.assert_array_equal(_np(t), a.astype(np.float32))
    if device != "cpu":
        return
    f = tgrad.from_numpy(a)
    s = tgrad.as_tensor(a)
    assert f.dtype is s.dtype is tgrad.float64 and f.stride() == s.stride() == (3, 1)
    a[1, 2] = -7.0
    assert f[1, 2].item() == s[1, 2].item() == -7.0                    # the tensor sees numpy's writes
    f[0, 1] = 42.0
    assert a[0, 1] == 42.0 and s[0, 1].item() == 42.0                  # and numpy sees the tensor's
    c = tgrad.as_tensor(a, dtype=tgrad.float32)                       # a conversion copies
    a[0, 0] = -1.0
    assert c[0, 0].item() == 100.0
    # strided and negative-stride arrays keep their layout and share memory
    b = np.arange(12.0).reshape(3, 4)
    v = tgrad.from_numpy(b[:, ::2])
    assert v.stride() == (4, 2) and not v.is_contiguous()
    b[2, 2] = 99.0
    np.testing.assert_array_equal(_np(v), b[:, ::2])
    np.testing.assert_array_equal(_np(tgrad.from_numpy(b.T)), b.T)
    np.testing.assert_array_equal(_np(tgrad.from_numpy(b[::-1, 1:])), b[::-1, 1:])
    for nd in (np.float16, np.int32, np.uint8, np.bool_, np.int64):
        z = np.ones(3, nd)
        assert tgrad.from_numpy(z).dtype.np == np.dtype(nd)
    assert tuple(tgrad.from_numpy(np.array(3.0)).shape) == () and tgrad.from_numpy(np.array(3.0)).item() == 3.0
    with pytest.raises(TypeError, match=r"^expected np.ndarray \(got list\)$"):
        tgrad.from_numpy([1, 2])
    t = tgrad.ones(2)
    assert tgrad.as_tensor(t) is t


def test_like_forms(device):
    x = tgrad.ones(2, 3, dtype=tgrad.int32, device=device)
    for make, value in ((tgrad.zeros_like, 0), (tgrad.ones_like, 1), (tgrad.empty_like, None)):
        t = make(x)
        assert tuple(t.shape) == (2, 3) and t.dtype is tgrad.int32 and t.device == x.device
        if value is not None:
            np.testing.assert_array_equal(_np(t), np.full((2, 3), value, np.int32))
        t = make(x, dtype=tgrad.float64, requires_grad=True)
        assert t.dtype is tgrad.float64 and t.requires_grad and t.is_leaf
    np.testing.assert_array_equal(_np(tgrad.full_like(x, 4)), np.full((2, 3), 4, np.int32))
    np.testing.assert_array_equal(_np(tgrad.full_like(x, 2.7)), np.full((2, 3), 2, np.int32))   # truncated
    np.testing.assert_array_equal(_np(tgrad.full_like(x, 2.5, dtype=tgrad.float32)), np.full((2, 3), 2.5))
    f = tgrad.ones(4, 5, dtype=tgrad.float64, device=device)
    r = tgrad.rand_like(f)
    assert r.dtype is tgrad.float64 and tuple(r.shape) == (4, 5) and 0 <= _np(r).min() and _np(r).max() < 1
    assert tgrad.randn_like(f).dtype is tgrad.float64
    ri = tgrad.randint_like(f, 3)
    assert ri.dtype is tgrad.float64 and set(_np(ri).ravel().tolist()) <= {0.0, 1.0, 2.0}
    ri = tgrad.randint_like(x, 3, 5)
    assert ri.dtype is tgrad.int32 and set(_np(ri).ravel().tolist()) <= {3, 4}


# ------------------------------------------------------------------ random
@pytest.mark.parametrize("make", [tgrad.rand, tgrad.randn])
def test_rand_shape_forms(make, device):
    for shape in ((), (7,), (2, 3)):
        for t in (make(shape, device=device), make(*shape, device=device), make(size=shape, device=device)):
            assert tuple(t.shape) == shape and t.dtype is tgrad.float32


def test_randint_forms(device):
    tgrad.manual_seed(3)
    a = tgrad.randint(5, (1000,), device=device)
    tgrad.manual_seed(3)
    b = tgrad.randint(0, 5, (1000,), device=device)
    tgrad.manual_seed(3)
    c = tgrad.randint(high=5, size=(1000,), device=device)
    assert a.dtype is tgrad.int64 and tuple(a.shape) == (1000,)
    np.testing.assert_array_equal(_np(a), _np(b))
    np.testing.assert_array_equal(_np(a), _np(c))
    assert set(_np(a).tolist()) == {0, 1, 2, 3, 4}
    assert tuple(tgrad.randint(5, [2, 3], device=device).shape) == (2, 3)
    assert tgrad.randint(5, (3,), dtype=tgrad.int32, device=device).dtype is tgrad.int32
    with pytest.raises(TypeError, match=r"^randint\(\): argument 'size' \(position 2\) must be tuple of ints, "
                                        r"not int$"):
        tgrad.randint(0, 5)


@pytest.mark.parametrize("dt", [tgrad.float16, tgrad.bfloat16, tgrad.float32, tgrad.float64])
def test_rand_and_uniform_stay_below_the_upper_bound(dt, device):
    # float16/bfloat16 used to round draws just below 1 (or hi) up to it
    tgrad.manual_seed(0)
    a = _np(tgrad.rand(100_000, dtype=dt, device=device)).astype(np.float64)
    assert a.min() >= 0.0 and a.max() < 1.0
    assert abs(a.mean() - 0.5) < 0.01 and abs(a.var() - 1 / 12) < 0.005
    t = tgrad.empty(100_000, dtype=dt, device=device).uniform_(1.0, 2.0)
    b = _np(t).astype(np.float64)
    assert b.min() >= 1.0 and b.max() < 2.0 and abs(b.mean() - 1.5) < 0.01


def test_random_fill_errors_change_nothing(device):
    for make in (lambda: tgrad.rand(2, dtype=tgrad.int64, device=device),
                 lambda: tgrad.ones(2, dtype=tgrad.int64, device=device).uniform_()):
        with pytest.raises(NotImplementedError, match="^\"check_uniform_bounds\" not implemented for 'Long'$"):
            make()
    with pytest.raises(NotImplementedError, match=f"^\"normal_kernel_{device}\" not implemented for 'Int'$"):
        tgrad.randn(2, dtype=tgrad.int32, device=device)
    b = tgrad.ones(2, dtype=tgrad.bool, device=device)
    with pytest.raises(NotImplementedError, match=f"^\"normal_kernel_{device}\" not implemented for 'Bool'$"):
        b.normal_()
    t = tgrad.ones(3, device=device)
    with pytest.raises(RuntimeError, match=r"^uniform_ expects to return a \[from, to\) range, but found "
                                           r"from=2.5 > to=1.5$"):
        t.uniform_(2.5, 1.5)
    with pytest.raises(RuntimeError, match="^normal expects std >= 0.0, but found std -1.5$"):
        t.normal_(0.0, -1.5)
    with pytest.raises(RuntimeError, match="^to is out of bounds for c10::Half$"):
        tgrad.ones(2, dtype=tgrad.float16, device=device).uniform_(0, 1e6)
    with pytest.raises(RuntimeError, match="^from is out of bounds for float$"):
        t.uniform_(float("-inf"), 0)
    assert _np(t).tolist() == [1.0, 1.0, 1.0] and _np(b).tolist() == [True, True] and t._version == 0
    np.testing.assert_array_equal(_np(t.uniform_(2.0, 2.0)), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(_np(t.normal_(-1.0, 0.0)), [-1.0, -1.0, -1.0])


# ------------------------------------------------------------------ layout queries
@pytest.mark.parametrize("dt", [tgrad.bool, tgrad.uint8, tgrad.int16, tgrad.int32, tgrad.int64, tgrad.float16,
                                tgrad.bfloat16, tgrad.float32, tgrad.float64])
def test_element_size_stride_nbytes(dt, device):
    x = tgrad.zeros(2, 3, 4, dtype=dt, device=device)
    ref = np.zeros((2, 3, 4), dtype=dt.np)
    assert x.element_size() == x.itemsize == ref.itemsize
    assert x.nbytes == ref.nbytes and x[:, 1].nbytes == ref[:, 1].nbytes
    assert x.stride() == tuple(s // ref.itemsize for s in ref.strides) == (12, 4, 1)
    assert (x.stride(1), x.stride(-1)) == (4, 1)
    t = x.transpose(0, 2)
    assert t.stride() == tuple(s // ref.itemsize for s in ref.transpose(2, 1, 0).strides)


def test_is_contiguous(device):
    x = tgrad.ones(2, 3, 4, device=device)
    assert x.is_contiguous() and x[1].is_contiguous() and x[:, :, :1].is_contiguous() is False
    assert not x.transpose(0, 1).is_contiguous() and not x[:, :1].is_contiguous()
    assert x.transpose(0, 1).contiguous().is_contiguous()
    # size-1 dims have any stride; a tensor without elements is contiguous (PyTorch)
    assert tgrad.ones(1, 3, device=device).t().is_contiguous() and tgrad.ones(3, 1, device=device).t().is_contiguous()
    assert tgrad.ones(2, 0, device=device).t().is_contiguous()
    assert tgrad.ones(0, 3, device=device)[:, ::2].is_contiguous()


def test_rand_randn_randint_statistics(device):
    tgrad.manual_seed(1)
    n = 200_000
    u = _np(tgrad.rand(n, dtype=tgrad.float64, device=device))
    assert 0 <= u.min() and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002
    hist = np.histogram(u, bins=10, range=(0, 1))[0]
    assert np.all(np.abs(hist - n / 10) < 5 * np.sqrt(n / 10))
    g = _np(tgrad.randn(n, device=device)).astype(np.float64)
    assert abs(g.mean()) < 0.01 and abs(g.std() - 1) < 0.01
    assert abs((np.abs(g) < 1).mean() - 0.6827) < 0.005 and abs((np.abs(g) < 2).mean() - 0.9545) < 0.003
    r = _np(tgrad.randint(-3, 4, (n,), device=device))
    counts = np.bincount(r + 3, minlength=7)
    assert r.min() == -3 and r.max() == 3 and np.all(np.abs(counts - n / 7) < 5 * np.sqrt(n / 7))
    for dt in (tgrad.uint8, tgrad.int16, tgrad.int32):
        t = tgrad.randint(250, 256, (1000,), dtype=dt, device=device) if dt is tgrad.uint8 else \
            tgrad.randint(-5, 5, (1000,), dtype=dt, device=device)
        v = _np(t)
        assert t.dtype is dt and set(v.tolist()) == (set(range(250, 256)) if dt is tgrad.uint8 else set(range(-5, 5)))


def test_randperm(device):
    tgrad.manual_seed(2)
    for n in (0, 1, 7, 1000):
        p = tgrad.randperm(n, device=device)
        assert p.dtype is tgrad.int64 and tuple(p.shape) == (n,)
        np.testing.assert_array_equal(np.sort(_np(p)), np.arange(n))
    p = _np(tgrad.randperm(1000, device=device))
    assert (p != np.arange(1000)).sum() > 900
    assert tgrad.randperm(5, dtype=tgrad.float32, device=device).dtype is tgrad.float32
    # each position is uniform over the values
    first = [tgrad.randperm(4, device=device)[0].item() for _ in range(400)]
    assert np.all(np.abs(np.bincount(first, minlength=4) - 100) < 40)


def test_uniform_and_normal_on_strided_views(device):
    tgrad.manual_seed(4)
    base = tgrad.zeros(400, 300, device=device)
    v = base[::2, 1::3]                     # 200 x 100, strides (600, 3)
    assert not v.is_contiguous()
    assert v.uniform_(-2.0, 3.0) is v
    got = _np(base)
    inside = np.zeros((400, 300), bool)
    inside[::2, 1::3] = True
    assert np.all(got[~inside] == 0)
    w = got[inside]
    assert -2.0 <= w.min() and w.max() < 3.0 and abs(w.mean() - 0.5) < 0.05
    assert abs(w.var() - 25 / 12) < 0.05
    t = tgrad.zeros(300, 400, device=device).t()[:, 50:]
    t.normal_(1.0, 2.0)
    g = _np(t).astype(np.float64)
    assert abs(g.mean() - 1.0) < 0.03 and abs(g.std() - 2.0) < 0.03
    full = _np(t._base if t._base is not None else t)
    assert np.all(full[:50] == 0)


def test_manual_seed_reproducibility_and_counters(device):
    def draw():
        return [_np(tgrad.rand(1000, device=device)), _np(tgrad.randn(33, device=device)),
                _np(tgrad.randint(0, 10, (7,), device=device)), _np(tgrad.randperm(20, device=device))]
    tgrad.manual_seed(123)
    a = draw()
    tgrad.manual_seed(123)
    b = draw()
    tgrad.manual_seed(124)
    c = draw()
    for x, y, z in zip(a, b, c):
        np.testing.assert_array_equal(x, y)
        assert not np.array_equal(x, z)
    assert not np.array_equal(a[0][:33], a[1])                         # each draw advances the counter
    # a draw's numbers depend on its counters only: a short draw is the start of a long one
    tgrad.manual_seed(9)
    long = _np(tgrad.rand(100_000, device=device))
    tgrad.manual_seed(9)
    np.testing.assert_array_equal(_np(tgrad.rand(10, device=device)), long[:10])
    gen = tgrad.Generator(device).manual_seed(5)
    tgrad.manual_seed(5)
    np.testing.assert_array_equal(_np(tgrad.rand(50, generator=gen, device=device)), _np(tgrad.rand(50, device=device)))


def test_random_numbers_do_not_depend_on_block_size(monkeypatch, device):
    from tgrad.kernels.runtime import launcher

    def draw():
        tgrad.manual_seed(77)
        out = [tgrad.rand(5000, dtype=dt, device=device) for dt in (tgrad.float16, tgrad.bfloat16, tgrad.float32,
                                                                    tgrad.float64)]
        out += [tgrad.randn(3000, device=device), tgrad.randint(-4, 9, (3000,), device=device),
                tgrad.empty(3000, dtype=tgrad.float16, device=device).uniform_(-1, 3),
                tgrad.zeros(60, 70, device=device).t().normal_(2, 3), tgrad.randperm(100, device=device)]
        return [_np(t) for t in out]
    monkeypatch.setattr(launcher, "FORCE_GPU_BLOCKS", False)
    small = draw()
    monkeypatch.setattr(launcher, "FORCE_GPU_BLOCKS", True)       # cuda's block sizes, run on this device
    big = draw()
    for x, y in zip(small, big):
        np.testing.assert_array_equal(x, y)


def test_clone_and_like_forms_preserve_the_layout(device):
    base = tgrad.arange(24.0, device=device).reshape(2, 3, 4)
    dense = [base, base.permute(2, 0, 1), base.transpose(0, 2), base[:1], tgrad.ones(3, 1, device=device).t()]
    for x in dense:                     # non-overlapping and dense: the very strides
        for t in (x.clone(), tgrad.empty_like(x), tgrad.zeros_like(x), tgrad.ones_like(x), tgrad.full_like(x, 2),
                  tgrad.rand_like(x), tgrad.randn_like(x), tgrad.randint_like(x, 5)):
            assert tuple(t.shape) == tuple(x.shape) and t.stride() == x.stride() and t._base is None
        np.testing.assert_array_equal(_np(x.clone()), _np(x))
        np.testing.assert_array_equal(_np(tgrad.zeros_like(x)), np.zeros(tuple(x.shape)))
        c = x.clone(memory_format=tgrad.contiguous_format)
        assert c.is_contiguous() and tgrad.empty_like(x, memory_format=tgrad.contiguous_format).is_contiguous()
        np.testing.assert_array_equal(_np(c), _np(x))
    t = base.transpose(0, 2)            # gaps or broadcasting: dense, in the order of the input's strides
    cases = ((base[:, :, ::2], tgrad.ones(2, 3, 2)), (t[::2], tgrad.ones(2, 3, 2).permute(2, 1, 0)),
             (base[0].expand(5, 3, 4), tgrad.ones(5, 3, 4)))
    for x, like in cases:
        assert tuple(like.shape) == tuple(x.shape)
        c = x.clone()
        assert c.stride() == tgrad.empty_like(x).stride() == tgrad.rand_like(x).stride() == like.stride()
        np.testing.assert_array_equal(_np(c), _np(x))
    assert t.contiguous().is_contiguous() and t.clone().stride() == t.stride()
    w = tgrad.ones(3, 2, requires_grad=True).t()
    assert w.clone().grad_fn.name() == w.contiguous().grad_fn.name() == "CloneBackward0"
    assert repr(tgrad.preserve_format) == "tgrad.preserve_format"


@pytest.mark.parametrize("dtype,value,cname", [
    (tgrad.int32, 2 ** 40, "int"), (tgrad.int32, 2 ** 31, "int"), (tgrad.int32, float("nan"), "int"),
    (tgrad.int16, 70000.0, "int16_t"), (tgrad.int8, 300, "int8_t"), (tgrad.int8, 127.9, "int8_t"),
    (tgrad.int8, -129, "int8_t"), (tgrad.uint8, -256, "uint8_t"), (tgrad.uint8, -0.5, "uint8_t"),
    (tgrad.uint8, 256.0, "uint8_t"), (tgrad.int64, 2 ** 63, "int64_t"), (tgrad.int64, float("inf"), "int64_t"),
    (tgrad.float16, 65505.0, "c10::Half"), (tgrad.float16, 2 ** 31, "c10::Half"),
    (tgrad.bfloat16, 3.4e38, "c10::BFloat16"), (tgrad.float32, 1e40, "float"),
])
def test_fill_values_that_overflow_the_dtype_raise_like_pytorch(dtype, value, cname):
    msg = f"^value cannot be converted to type {cname} without overflow$"
    x = tgrad.zeros(2, dtype=dtype)
    for fn in (lambda: tgrad.full((2,), value, dtype=dtype), lambda: tgrad.full_like(x, value),
               lambda: x.new_full((2,), value), lambda: x.fill_(value),
               lambda: x.masked_fill(tgrad.tensor([True, False]), value)):
        with pytest.raises(RuntimeError, match=msg):
            fn()
    assert x.tolist() == [0, 0] and x._version == 0


@pytest.mark.parametrize("dtype,value,expect", [
    (tgrad.uint8, -1, [255, 255]), (tgrad.uint8, -255, [1, 1]), (tgrad.int8, -128, [-128, -128]),
    (tgrad.int32, 2.9, [2, 2]), (tgrad.int8, True, [1, 1]), (tgrad.float16, 65504.0, [65504.0, 65504.0]),
    (tgrad.float16, float("inf"), [float("inf")] * 2), (tgrad.bfloat16, 70000.0, [70144.0, 70144.0]),
    (tgrad.bool, float("nan"), [True, True]), (tgrad.bool, 1e40, [True, True]), (tgrad.bool, 0.0, [False, False]),
    (tgrad.float64, 0.1, [0.1, 0.1]),
])
def test_fill_values_in_range_as_pytorch(dtype, value, expect):
    assert tgrad.full((2,), value, dtype=dtype).tolist() == expect
    assert tgrad.zeros(2, dtype=dtype).fill_(value).tolist() == expect
    assert tgrad.full((2,), 2 ** 40).tolist() == [2 ** 40] * 2


def test_cuda_manual_seed_leaves_the_cpu_generator_alone():
    """PyTorch: torch.cuda.manual_seed seeds only cuda generators; torch.manual_seed seeds all devices."""
    from tgrad import random as R
    tgrad.manual_seed(5)
    a = tgrad.rand(4, device="cpu").tolist()
    tgrad.manual_seed(5)
    tgrad.cuda.manual_seed(123)
    tgrad.cuda.manual_seed_all(7)
    assert tgrad.rand(4, device="cpu").tolist() == a
    g = R.default_generator_for(tgrad.device("cuda", 0))
    assert g is not R.default_generator and g.initial_seed() == 7
    tgrad.manual_seed(9)
    assert g.initial_seed() == 9 and R.default_generator_for(tgrad.device("cuda", 1)).initial_seed() == 9
