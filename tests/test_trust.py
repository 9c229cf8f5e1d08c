"""Regression tests for issue 16 (trust and everyday use): each numbered item's failure, as found."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tgrad
from tgrad.memory import BackendOutOfMemory, HostBackend

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _python(code, timeout=120):
    env = dict(os.environ, PYTHONPATH=ROOT, OPENBLAS_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_1_huge_sizes_raise_instead_of_crashing():
    """2**62 float32 elements are 2**64 bytes, which wrapped to 0 in a size_t: a segfault.  Run in a child."""
    r = _python("""
        import tgrad
        for shape in [(2**62,), (2**61,), (2**31, 2**31, 2**31), (2**64,)]:
            try:
                tgrad.zeros(*shape)
            except RuntimeError as e:
                print(type(e).__name__, e)
        print(tgrad.zeros(3).tolist())
    """)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "RuntimeError Storage size calculation overflowed with sizes=[4611686018427387904]"
    assert lines[1] == "RuntimeError Storage size calculation overflowed with sizes=[2305843009213693952]"
    assert lines[2] == ("RuntimeError Storage size calculation overflowed with sizes=[2147483648, 2147483648, "
                        "2147483648]")
    assert lines[3].startswith("RuntimeError Storage size calculation overflowed") and lines[4] == "[0.0, 0.0, 0.0]"


def test_1_host_backend_refuses_sizes_beyond_size_t():
    b = HostBackend()
    for n in (2**63, 2**64, 2**64 + 512):
        with pytest.raises(BackendOutOfMemory, match="more than host memory can address"):
            b.malloc(n)
    assert b.num_mallocs == 0 and b._in_use == 0


def test_1_large_but_addressable_size_is_a_clean_oom():
    with pytest.raises(tgrad.OutOfMemoryError, match="Tried to allocate"):
        tgrad.empty(2**50)
    assert tgrad.zeros(2).tolist() == [0.0, 0.0]


def test_5_nested_list_index_is_a_tuple():
    x = tgrad.arange(12.0).reshape(4, 3)
    assert x[[[0, 1], [2, 2]]].tolist() == [2.0, 5.0]          # PyTorch 2.13: tensor([2., 5.])
    assert x[[[0, 1], [2, 0]]].tolist() == [2.0, 3.0]
    assert x[[0, [1, 2]]].tolist() == [1.0, 2.0]
    assert x[[slice(0, 2), 1]].tolist() == [1.0, 4.0]
    assert x[[None, 0]].shape == (1, 3) and x[[Ellipsis, 0]].tolist() == [0.0, 3.0, 6.0, 9.0]
    assert x[[0, 1]].shape == (2, 3)                             # a flat list stays one index
    assert x[np.array([[0, 1], [2, 2]])].shape == (2, 2, 3)      # an array stays one index
    y = x.clone()
    y[[[0, 1], [2, 2]]] = -1.0
    assert y[:, 2].tolist() == [-1.0, -1.0, 8.0, 11.0]


def test_7_cat_of_empty_1d_gets_an_empty_grad():
    a, b = tgrad.tensor([], requires_grad=True), tgrad.ones(2, requires_grad=True)
    tgrad.cat([a, b]).sum().backward()
    assert a.grad is not None and a.grad.shape == (0,) and a.grad.dtype is a.dtype
    assert b.grad.tolist() == [1.0, 1.0]


def test_8_expand_with_too_few_sizes():
    with pytest.raises(RuntimeError, match=r"^expand\(tgrad.FloatTensor\{\[2, 3\]\}, size=\[3\]\): the number of sizes "
                                           r"provided \(1\) must be greater or equal to the number of dimensions in "
                                           r"the tensor \(2\)$"):
        tgrad.ones(2, 3).expand(3)


def test_8_gather_and_scatter_accept_int32_index():
    x = tgrad.arange(12.0).reshape(4, 3).requires_grad_()
    i32 = tgrad.tensor([[0], [1], [2], [0]], dtype=tgrad.int32)
    g = tgrad.gather(x, 1, i32)
    assert g.tolist() == [[0.0], [4.0], [8.0], [9.0]]          # PyTorch 2.13
    g.sum().backward()
    assert x.grad.tolist() == tgrad.gather(x.detach(), 1, i32.long()).new_zeros(4, 3).scatter(
        1, i32.long(), 1.0).tolist()
    z = tgrad.zeros(4, 3)
    assert z.scatter(1, i32, 2.0).tolist() == z.scatter(1, i32.long(), 2.0).tolist()
    assert z.scatter_add(1, i32, tgrad.ones(4, 1)).tolist() == z.scatter_add(1, i32.long(), tgrad.ones(4, 1)).tolist()
    with pytest.raises(RuntimeError, match=r"gather\(\): Expected dtype int32/int64 for index"):
        tgrad.gather(x, 1, i32.short())


def test_10_format_of_a_0d_tensor_is_its_number():
    t = tgrad.tensor(63.2)
    assert "{}".format(t) == "63.20000076293945" and f"{t:.2f}" == "63.20"       # PyTorch 2.13
    assert f"{tgrad.tensor(3):>5}" == "    3" and f"{tgrad.tensor(True)}" == "True"
    assert f"{tgrad.tensor(2.5, requires_grad=True) * 2:.1f}" == "5.0"
    assert "{}".format(tgrad.tensor([63.2])) == "tensor([63.2000])"
    with pytest.raises(TypeError, match=r"^unsupported format string passed to Tensor.__format__$"):
        "{:.2f}".format(tgrad.tensor([63.2]))
