"""dtypes: the pointer type each dtype reaches Triton as, casts, PyTorch's promotion, the default dtype.

Expected promotions were taken from PyTorch 2.13 (torch.promote_types / torch.result_type).
"""
import re

import ml_dtypes
import numpy as np
import pytest
from triton.runtime.jit import mangle_type

import tgrad
from tgrad import dtypes as D
from tgrad.kernels.runtime import Ptr
from tgrad.kernels._lang import kptr

ORDER = [D.bool_, D.uint8, D.int8, D.int16, D.int32, D.int64, D.float16, D.bfloat16, D.float32, D.float64]
SHORT = {"b": D.bool_, "u8": D.uint8, "i8": D.int8, "i16": D.int16, "i32": D.int32, "i64": D.int64,
         "f16": D.float16, "bf16": D.bfloat16, "f32": D.float32, "f64": D.float64}

POINTER = {"bool": "*u1", "uint8": "*u8", "int8": "*i8", "int16": "*i16", "int32": "*i32", "int64": "*i64",
           "float16": "*fp16", "bfloat16": "*bf16", "float32": "*fp32", "float64": "*fp64"}

# torch.promote_types(row, column), columns in ORDER
PROMOTE = """
   b   u8   i8  i16  i32  i64  f16 bf16  f32  f64
  u8   u8  i16  i16  i32  i64  f16 bf16  f32  f64
  i8  i16   i8  i16  i32  i64  f16 bf16  f32  f64
 i16  i16  i16  i16  i32  i64  f16 bf16  f32  f64
 i32  i32  i32  i32  i32  i64  f16 bf16  f32  f64
 i64  i64  i64  i64  i64  i64  f16 bf16  f32  f64
 f16  f16  f16  f16  f16  f16  f16  f32  f32  f64
bf16 bf16 bf16 bf16 bf16 bf16  f32 bf16  f32  f64
 f32  f32  f32  f32  f32  f32  f32  f32  f32  f64
 f64  f64  f64  f64  f64  f64  f64  f64  f64  f64
"""

# torch.result_type(tensor of dtype `row` with dims, other): other = True, 2, 2.5, then 0-dim tensors of
# bool, uint8, int32, int64, float16, float64
RESULT = """
   b  i64  f32    b   u8  i32  i64  f16  f64
  u8   u8  f32   u8   u8   u8   u8  f16  f64
  i8   i8  f32   i8   i8   i8   i8  f16  f64
 i16  i16  f32  i16  i16  i16  i16  f16  f64
 i32  i32  f32  i32  i32  i32  i32  f16  f64
 i64  i64  f32  i64  i64  i64  i64  f16  f64
 f16  f16  f16  f16  f16  f16  f16  f16  f16
bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16
 f32  f32  f32  f32  f32  f32  f32  f32  f32
 f64  f64  f64  f64  f64  f64  f64  f64  f64
"""


def table(text):
    return [[SHORT[c] for c in line.split()] for line in text.strip().splitlines()]


@pytest.fixture
def restore_default_dtype():
    prev = tgrad.get_default_dtype()
    yield
    tgrad.set_default_dtype(prev)


@pytest.mark.parametrize("dt", ORDER, ids=lambda d: d.name)
def test_pointer_type_reaching_triton(dt, device):
    assert mangle_type(Ptr(0, dt.np)) == POINTER[dt.name]
    t = tgrad.zeros(3, dtype=dt, device=device)
    p = kptr(t)
    assert p.data_ptr() == t.data_ptr() and mangle_type(p) == POINTER[dt.name]


def _values(src, dst):
    v = np.array([0, 1, 2.75, 3, 100, 0.5, 127, 1 / 3, -2.5, -1])
    if not (src.is_signed and dst.is_signed):
        v = np.abs(v)       # negative -> uint8 is undefined behaviour (in C and in PyTorch)
    if not src.is_floating_point:
        v = np.trunc(v)
    return v.astype(src.np)


@pytest.mark.parametrize("src", ORDER, ids=lambda d: d.name)
def test_cast_kernel_every_dtype_pair(src, device):
    """The copy kernel loads through src's pointer type and stores through dst's: values must match numpy."""
    for dst in ORDER:
        a = _values(src, dst)
        x = tgrad.tensor(a, dtype=src, device=device)
        assert x.dtype is src
        expect = a.astype(dst.np)
        got = x.to(dst)
        assert got.dtype is dst and got.cpu().numpy().dtype == dst.np
        np.testing.assert_array_equal(got.cpu().numpy(), expect, err_msg=f"{src.name} -> {dst.name}")
        # strided source and destination (a transposed view)
        xs = tgrad.tensor(np.stack([a, a[::-1]]), dtype=src, device=device).t()
        np.testing.assert_array_equal(xs.to(dst).cpu().numpy(), np.stack([a, a[::-1]]).astype(dst.np).T,
                                      err_msg=f"strided {src.name} -> {dst.name}")


def test_bfloat16_rounds_to_nearest_even(device):
    a = np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -9, -(1 + 3 * 2 ** -8), 3.14159], dtype=np.float32)
    got = tgrad.tensor(a, device=device).to(tgrad.bfloat16).cpu().numpy()
    np.testing.assert_array_equal(got, a.astype(ml_dtypes.bfloat16))


def test_promote_types_table():
    expected = table(PROMOTE)
    for i, a in enumerate(ORDER):
        for j, b in enumerate(ORDER):
            assert tgrad.promote_types(a, b) is expected[i][j], (a, b)


def test_result_type_with_scalars_and_zero_dim_tensors(device):
    expected = table(RESULT)
    zero_dim = [D.bool_, D.uint8, D.int32, D.int64, D.float16, D.float64]
    for i, a in enumerate(ORDER):
        t = tgrad.ones(2, dtype=a, device=device)
        others = [True, 2, 2.5] + [tgrad.ones((), dtype=z, device=device) for z in zero_dim]
        for other, want in zip(others, expected[i]):
            assert D.result_type(t, other) is want, (a, other)


def test_numpy_scalars_promote_as_python_numbers(device):
    """np.float64(2) is a number, not a float64 tensor (PyTorch: float32 ** np.float64(2) stays float32)."""
    f = tgrad.tensor([1.0, 2.0], device=device)
    i = tgrad.tensor([1, 2], device=device)
    for e in (np.float64(2), np.float32(2.0), np.int64(2), np.bool_(True)):
        assert D.result_type(f, e) is D.float32, e
    assert D.result_type(i, np.float64(2)) is D.float32
    assert D.result_type(i, np.int64(2)) is D.int64
    assert D.result_type(i, np.bool_(True)) is D.int64
    assert (f ** np.float64(2)).tolist() == [1.0, 4.0] and (f ** np.float64(2)).dtype is tgrad.float32
    assert (i ** np.int64(3)).tolist() == [1, 8] and (i * np.float64(2)).dtype is tgrad.float32


def test_result_type_zero_dim_only(device):
    def z(dt):
        return tgrad.ones((), dtype=dt, device=device)
    assert D.result_type(z(D.int32), 2.5) is D.float32
    assert D.result_type(z(D.float16), z(D.float64)) is D.float64
    assert D.result_type(z(D.int8), z(D.uint8)) is D.int16
    assert D.result_type(z(D.bool_), 3) is D.int64
    assert D.result_type(z(D.int32), 3) is D.int32


def test_ops_follow_promotion(device):
    i32 = tgrad.ones(2, dtype=tgrad.int32, device=device)
    assert (i32 + 2.5).dtype is tgrad.float32
    assert (i32 + 2).dtype is tgrad.int32
    assert (i32 + tgrad.ones((), dtype=tgrad.int64, device=device)).dtype is tgrad.int32
    assert (i32 * tgrad.ones(2, dtype=tgrad.uint8, device=device)).dtype is tgrad.int32
    assert (tgrad.ones(2, dtype=tgrad.int8, device=device) - tgrad.ones(2, dtype=tgrad.uint8, device=device)).dtype \
        is tgrad.int16
    assert (tgrad.ones(2, dtype=tgrad.int64, device=device) / tgrad.ones(2, dtype=tgrad.int64, device=device)).dtype \
        is tgrad.float32
    h = tgrad.ones(2, dtype=tgrad.float16, device=device) + tgrad.ones(2, dtype=tgrad.bfloat16, device=device)
    assert h.dtype is tgrad.float32 and h.tolist() == [2.0, 2.0]


def test_default_dtype(restore_default_dtype, device):
    assert tgrad.get_default_dtype() is tgrad.float32
    assert tgrad.ones(2, device=device).dtype is tgrad.float32 and tgrad.tensor([1.5]).dtype is tgrad.float32
    tgrad.set_default_dtype(tgrad.float64)
    assert tgrad.get_default_dtype() is tgrad.float64
    assert tgrad.ones(2, device=device).dtype is tgrad.float64
    assert tgrad.tensor([1.5]).dtype is tgrad.float64 and tgrad.tensor(2.5).dtype is tgrad.float64
    assert D.result_type(tgrad.ones(2, dtype=tgrad.int32, device=device), 2.5) is tgrad.float64
    assert D.result_type(tgrad.ones(2, dtype=tgrad.float16, device=device), 2.5) is tgrad.float16
    tgrad.set_default_dtype(tgrad.float16)
    assert tgrad.rand(3, device=device).dtype is tgrad.float16
    with pytest.raises(TypeError, match="only floating-point types are supported as the default type"):
        tgrad.set_default_dtype(tgrad.int64)
    assert tgrad.get_default_dtype() is tgrad.float16


def test_dtype_attributes_and_aliases():
    sizes = {"bool": 1, "uint8": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "float16": 2, "bfloat16": 2,
             "float32": 4, "float64": 8}
    for dt in ORDER:
        assert dt.itemsize == sizes[dt.name] == tgrad.zeros(1, dtype=dt).element_size()
        assert dt.is_floating_point == dt.name.startswith(("float", "bfloat"))
    assert [dt.is_signed for dt in (tgrad.int8, tgrad.uint8, tgrad.bool, tgrad.float32)] == [True, False, False, True]
    assert (tgrad.float, tgrad.double, tgrad.half, tgrad.long, tgrad.int, tgrad.short) == \
        (tgrad.float32, tgrad.float64, tgrad.float16, tgrad.int64, tgrad.int32, tgrad.int16)
    assert tgrad.bool is D.bool_ and tgrad.bfloat16.np == np.dtype(ml_dtypes.bfloat16)


def test_dtype_arguments_must_be_dtypes():
    # PyTorch takes a dtype or Python's float / int / bool; names and numpy dtypes are TypeErrors
    bads = (("float32", "str"), (np.float32, "type"), (np.dtype("float32"), "numpy.dtypes.Float32DType"),
            (object(), "object"))
    for make, fn in ((tgrad.zeros, "zeros"), (tgrad.ones, "ones"), (tgrad.empty, "empty"), (tgrad.rand, "rand")):
        for bad, name in bads:
            with pytest.raises(TypeError, match=re.escape(f"{fn}(): argument 'dtype' must be torch.dtype, not {name}")):
                make(2, dtype=bad)
    calls = {"tensor": lambda dt: tgrad.tensor([1], dtype=dt), "full": lambda dt: tgrad.full((2,), 1, dtype=dt),
             "zeros_like": lambda dt: tgrad.zeros_like(tgrad.ones(2), dtype=dt),
             "arange": lambda dt: tgrad.arange(3, dtype=dt), "sum": lambda dt: tgrad.ones(2).sum(dtype=dt),
             "softmax": lambda dt: tgrad.nn.functional.softmax(tgrad.ones(2), 0, dtype=dt),
             "to": lambda dt: tgrad.ones(2).to(dtype=dt)}
    for fn, call in calls.items():
        with pytest.raises(TypeError, match=re.escape(f"{fn}(): argument 'dtype' must be torch.dtype, not str")):
            call("float32")
    assert tgrad.zeros(2, dtype=float).dtype is tgrad.float64       # Python float is float64 in PyTorch
    assert tgrad.zeros(2, dtype=int).dtype is tgrad.int64 and tgrad.zeros(2, dtype=bool).dtype is tgrad.bool
    assert tgrad.ones(2).to(float).dtype is tgrad.float64
    with pytest.raises(TypeError, match="can.t convert np.ndarray of type numpy"):
        tgrad.tensor(np.array([1j], dtype=np.clongdouble))
    with pytest.raises(TypeError, match="^invalid dtype object: only floating-point types are supported"):
        tgrad.set_default_dtype("float32")
