"""DLPack both ways (issue 16): tgrad.from_dlpack, Tensor.__dlpack__/__dlpack_device__, zero copy with numpy."""
import gc

import numpy as np
import pytest

import tgrad
from tgrad.utils.dlpack import from_dlpack, to_dlpack

CPU_ONLY = True     # zero-copy exchange with numpy, which takes cpu memory only (tgrad exports cpu capsules)


def test_numpy_to_tgrad_shares_memory():
    a = np.arange(12.0).reshape(3, 4)[:, 1::2]         # strided
    x = tgrad.from_dlpack(a)
    assert x.dtype is tgrad.float64 and x.shape == (3, 2) and x.stride() == (4, 2)
    x[0, 0] = -7.0
    assert a[0, 0] == -7.0
    a[2, 1] = 99.0
    assert x[2, 1].item() == 99.0
    for dt in (np.float32, np.float16, np.int64, np.int32, np.int16, np.int8, np.uint8, np.bool_):
        v = (np.arange(5) % 2).astype(dt)
        y = from_dlpack(v)
        assert y.dtype.np == dt and y.tolist() == v.tolist()


def test_tgrad_to_numpy_shares_memory_and_keeps_it_alive():
    t = tgrad.arange(6.0).reshape(2, 3)
    assert t.__dlpack_device__() == (1, 0)
    a = np.from_dlpack(t.t())
    assert a.shape == (3, 2) and a.strides == (4, 12) and a[2, 1] == 5.0
    a[0, 1] = -1.0
    assert t[1, 0].item() == -1.0
    assert np.from_dlpack(tgrad.arange(4).flip(0)).tolist() == [3, 2, 1, 0]
    b = np.from_dlpack(tgrad.arange(1000.0) * 2)       # the only reference to the tensor is the capsule's
    gc.collect()
    junk = [tgrad.full((1000,), 7.0) for _ in range(10)]
    assert b[:3].tolist() == [0.0, 2.0, 4.0] and b[-1] == 1998.0
    del junk


def test_capsules_and_errors():
    cap = to_dlpack(tgrad.tensor([1.5, 2.5]))
    assert type(cap).__name__ == "PyCapsule"
    assert tgrad.from_dlpack(cap).tolist() == [1.5, 2.5]
    msg = "from_dlpack received an invalid capsule"
    with pytest.raises(RuntimeError, match=msg):
        tgrad.from_dlpack(cap)                          # consumed once already (PyTorch's wording)
    with pytest.raises(RuntimeError, match=msg):
        tgrad.from_dlpack(1)
    with pytest.raises(BufferError, match=r"^Can't export tensors that require gradient, use tensor.detach\(\)$"):
        tgrad.ones(2, requires_grad=True).__dlpack__()
    t = tgrad.ones(3)
    u = tgrad.from_dlpack(t)
    u[0] = 4.0
    assert t[0].item() == 4.0 and u is not t


def test_round_trip_through_numpy_is_zero_copy():
    t = tgrad.zeros(4, 5)
    back = tgrad.from_dlpack(np.from_dlpack(t))
    assert back.data_ptr() == t.data_ptr()
    back += 1
    assert t.sum().item() == 20.0
