"""Reductions and scans: errors, empty tensors, dtypes, ties/NaN, return types, long rows (chunk carries)."""
import numpy as np
import pytest

import tgrad
from tgrad.ops.reduce import rows_geom

from device_neutral import neutral_repr


def T(a, dtype=None, requires_grad=False, device="cpu"):
    return tgrad.tensor(np.asarray(a), dtype=dtype, device=device, requires_grad=requires_grad)


def _raises(exc, msg, fn):
    with pytest.raises(exc) as e:
        fn()
    assert str(e.value) == msg


# ------------------------------------------------------------------ errors (PyTorch's wording)
def test_dim_out_of_range(device):
    x = tgrad.zeros(2, 3, device=device)
    msg = "Dimension out of range (expected to be in range of [-2, 1], but got 2)"
    for fn in (lambda: x.sum(2), lambda: x.max(2), lambda: x.amax((0, 2)), lambda: x.cumsum(2),
               lambda: x.var(2), lambda: x.logsumexp(2), lambda: x.norm(dim=2), lambda: x.all(2),
               lambda: x.argmax(2), lambda: x.prod(-3)):
        with pytest.raises(IndexError) as e:
            fn()
        assert msg in str(e.value) or "but got -3" in str(e.value)
    _raises(IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got 1)",
            lambda: tgrad.tensor(3.0, device=device).max(1))


def test_empty_errors(device):
    e = tgrad.zeros(2, 0, device=device)
    _raises(RuntimeError, "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
            "reduction dim with the 'dim' argument.", lambda: e.max())
    _raises(RuntimeError, "amax(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
            "reduction dim with the 'dim' argument.", lambda: e.amax())
    _raises(IndexError, "argmax(): Expected reduction dim to be specified for input.numel() == 0.",
            lambda: e.argmax())
    _raises(IndexError, "max(): Expected reduction dim 1 to have non-zero size.", lambda: e.max(1))
    _raises(IndexError, "amin(): Expected reduction dim 1 to have non-zero size.", lambda: e.amin(1))
    _raises(IndexError, "argmin(): Expected reduction dim 1 to have non-zero size.", lambda: e.argmin(1))
    v, i = e.max(0)
    assert v.shape == (0,) and i.shape == (0,) and i.dtype == tgrad.int64
    # amax/amin name the dim as given; max/argmax the wrapped one
    _raises(IndexError, "amax(): Expected reduction dim -1 to have non-zero size.", lambda: e.amax(-1))
    _raises(IndexError, "amin(): Expected reduction dim -1 to have non-zero size.", lambda: e.amin((0, -1)))
    _raises(IndexError, "max(): Expected reduction dim 1 to have non-zero size.", lambda: e.max(-1))
    # the +-inf norm has no identity; other norms of nothing are 0
    post = "because this dimension is empty and the operation does not have an identity"
    _raises(RuntimeError, "linalg.vector_norm cannot compute the inf norm on the dimension -1" + post,
            lambda: e.norm(float("inf"), -1))
    _raises(RuntimeError, "linalg.vector_norm cannot compute the -inf norm on the dimension 1" + post,
            lambda: e.norm(float("-inf"), (0, 1)))
    _raises(RuntimeError, "linalg.vector_norm cannot compute the inf norm on an empty tensor because the "
            "operation does not have an identity", lambda: e.norm(float("inf")))
    assert e.norm(float("inf"), 0).shape == (0,)
    _raises(TypeError, "logsumexp(): argument 'dim' must be tuple of ints, not NoneType",
            lambda: e.logsumexp(None))
    s = T(2.5, device=device)         # a scalar has no empty dim: dim 0 / -1 reduce nothing
    assert s.amax(0).item() == 2.5 and s.amin(-1).item() == 2.5 and s.norm(float("inf"), 0).item() == 2.5


def test_dtype_errors(device):
    i = tgrad.arange(6, device=device).reshape(2, 3)
    _raises(RuntimeError, "std and var only support floating point and complex dtypes", lambda: i.var())
    _raises(RuntimeError, "std and var only support floating point and complex dtypes", lambda: i.std(1))
    _raises(RuntimeError, "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long",
            lambda: i.norm())
    _raises(RuntimeError, "mean(): could not infer output dtype. Input dtype must be either a floating point or "
            "complex dtype. Got: Long", lambda: i.mean())
    _raises(RuntimeError, "dim 0 appears multiple times in the list of dims", lambda: i.float().sum((0, -2)))
    _raises(RuntimeError, "argmax(): does not support bool input", lambda: (i > 2).argmax())
    _raises(RuntimeError, "argmin(): does not support bool input", lambda: (i > 2).argmin(0))


# ------------------------------------------------------------------ empty tensors
def test_empty_reductions(device):
    e = tgrad.zeros(2, 0, device=device)
    assert e.sum().item() == 0 and e.prod().item() == 1
    np.testing.assert_array_equal(e.sum(1).cpu().numpy(), [0, 0])
    np.testing.assert_array_equal(e.prod(1).cpu().numpy(), [1, 1])
    assert e.all().item() is True and e.any().item() is False
    np.testing.assert_array_equal(e.logsumexp(1).cpu().numpy(), [-np.inf, -np.inf])
    assert e.norm().item() == 0
    assert np.isnan(e.mean().item()) and np.isnan(e.var().item())
    assert e.cumsum(1).shape == (2, 0) and e.cumprod(0).shape == (2, 0)
    assert e.sum(0).shape == (0,)


def test_empty_reduction_gradients(device):
    """Backward of a reduction of a 0-size tensor: an empty gradient of the input's shape (PyTorch's too)."""
    for fn in (lambda t: t.sum(0), lambda t: t.prod(0), lambda t: t.mean(1), lambda t: t.amax(1),
               lambda t: t.norm(dim=0), lambda t: t.logsumexp(0), lambda t: t.cumprod(0), lambda t: t.var(0),
               lambda t: t.sum(), lambda t: t.max(1).values, lambda t: t.norm(float("inf"), 1)):
        x = tgrad.zeros((0, 3), dtype=tgrad.float64, device=device, requires_grad=True)
        g, = tgrad.autograd.grad(fn(x).sum(), x)
        assert g.shape == (0, 3)


# ------------------------------------------------------------------ dtypes
def test_result_dtypes(device):
    i32 = tgrad.tensor([[1, 2, 3], [4, 5, 6]], dtype=tgrad.int32, device=device)
    assert i32.sum().dtype == tgrad.int64 and i32.sum().item() == 21
    assert i32.prod().dtype == tgrad.int64 and i32.prod().item() == 720
    assert i32.cumsum(1).dtype == tgrad.int64 and i32.cumprod(0).dtype == tgrad.int64
    assert i32.max().dtype == tgrad.int32 and i32.max().item() == 6
    assert i32.amin(1).dtype == tgrad.int32
    assert i32.logsumexp(1).dtype == tgrad.float32
    assert i32.argmax().item() == 5
    b = tgrad.tensor([True, False, True], device=device)
    assert b.sum().dtype == tgrad.int64 and b.sum().item() == 2
    assert b.all().dtype == tgrad.bool and b.any().item() is True and b.all().item() is False
    u8 = tgrad.tensor([1, 2, 0], dtype=tgrad.uint8, device=device)
    assert u8.all().dtype == tgrad.uint8 and u8.all().item() == 0 and u8.any().item() == 1
    x = tgrad.tensor([[1.5, 2.5]], device=device)
    assert x.sum(dtype=tgrad.float64).dtype == tgrad.float64
    assert i32.cumsum(0, dtype=tgrad.float32).dtype == tgrad.float32
    assert i32.mean(dtype=tgrad.float32).item() == 3.5
    big = tgrad.tensor([2 ** 40, 2 ** 40 + 1], dtype=tgrad.int64, device=device)
    assert big.sum().item() == 2 ** 41 + 1 and big.max().item() == 2 ** 40 + 1   # exact int64 maths


def test_half_accumulates_in_fp32(device):
    x = tgrad.full((4096,), 1.0, dtype=tgrad.float16, device=device)
    assert x.sum().item() == 4096.0                        # fp16 accumulation would stop at 2048
    assert x.bfloat16().mean().item() == 1.0
    np.testing.assert_allclose(x.var().item(), 0.0)


# ------------------------------------------------------------------ var/std arguments
def test_var_std_arguments(device):
    a = np.random.default_rng(0).uniform(-2, 2, (3, 4))
    x = T(a, device=device)
    np.testing.assert_allclose(x.var().item(), a.var(ddof=1), rtol=1e-6)
    np.testing.assert_allclose(x.var(False).item(), a.var(), rtol=1e-6)             # legacy var(unbiased)
    np.testing.assert_allclose(x.var(1, False).cpu().numpy(), a.var(1), rtol=1e-6)       # var(dim, unbiased)
    np.testing.assert_allclose(x.var(0, True, True).cpu().numpy(), a.var(0, ddof=1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(x.std(1, correction=0).cpu().numpy(), a.std(1), rtol=1e-6)
    np.testing.assert_allclose(x.std(unbiased=False).item(), a.std(), rtol=1e-6)
    np.testing.assert_allclose(tgrad.var(x, (0, 1), correction=3).item(), ((a - a.mean()) ** 2).sum() / 9,
                               rtol=1e-6)
    assert x[:1, :1].var(correction=2).item() == np.inf or np.isnan(x[:1, :1].var(correction=2).item())


def test_var_is_two_pass(device):
    # a large offset: one-pass sum(x^2) - sum(x)^2 would lose every digit in fp32
    a = 1e4 + np.random.default_rng(1).uniform(-1, 1, 1000)
    np.testing.assert_allclose(T(a, dtype=tgrad.float32, device=device).var().item(),
                               a.astype(np.float32).astype(np.float64).var(ddof=1), rtol=1e-3)


# ------------------------------------------------------------------ max/min: return types, ties, NaN
def test_max_return_type(device):
    x = T([[1.0, 5.0, 2.0], [7.0, 0.0, 7.0]], dtype=tgrad.float32, device=device)
    r = x.max(1)
    assert isinstance(r, tgrad.return_types.max) and isinstance(r, tuple)
    values, indices = r
    np.testing.assert_array_equal(values.cpu().numpy(), [5.0, 7.0])
    np.testing.assert_array_equal(r.indices.cpu().numpy(), [1, 0])                     # first of a tie
    assert r.values is r[0] and r.indices is r[1]
    assert neutral_repr(r).startswith("tgrad.return_types.max(\nvalues=tensor([5., 7.]),\nindices=tensor([1, 0]))")
    m = tgrad.min(x, 0, keepdim=True)
    assert type(m).__name__ == "min" and m.values.shape == (1, 3)
    np.testing.assert_array_equal(m.indices.cpu().numpy(), [[0, 1, 0]])
    s = tgrad.tensor(3.0, device=device).max(0)
    assert s.values.item() == 3.0 and s.indices.item() == 0 and s.indices.shape == ()


def test_nan_propagates(device):
    x = T([[1.0, np.nan, 3.0, np.nan], [1.0, 2.0, 3.0, 0.0]], device=device)
    v, i = x.max(1)
    assert np.isnan(v.cpu().numpy()[0]) and i.cpu().numpy()[0] == 1 and v.cpu().numpy()[1] == 3.0
    v, i = x.min(1)
    assert np.isnan(v.cpu().numpy()[0]) and i.cpu().numpy()[0] == 1 and i.cpu().numpy()[1] == 3
    assert np.isnan(x.max().item()) and np.isnan(x.amin().item()) and x.argmax().item() == 1
    y = T([[1.0, np.nan, 2.0], [3.0, 1.0, 3.0]], dtype=tgrad.float64, requires_grad=True, device=device)
    y.amax(1).sum().backward()         # PyTorch: (x == amax) matches nothing in a NaN row -> 0/0
    np.testing.assert_array_equal(y.grad.cpu().numpy(), [[np.nan] * 3, [0.5, 0, 0.5]])
    y.grad = None
    y.max().backward()                 # max(): the NaN itself gets the gradient
    np.testing.assert_array_equal(y.grad.cpu().numpy(), [[0, 1, 0], [0, 0, 0]])


def test_tie_gradients(device):
    x = T([[1.0, 3.0, 3.0], [2.0, 0.0, 3.0]], dtype=tgrad.float64, requires_grad=True, device=device)
    x.max().backward()                 # all-reduce: ties share evenly
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [[0, 1 / 3, 1 / 3], [0, 0, 1 / 3]])
    x.grad = None
    x.amax(1).sum().backward()         # amax: evenly per row
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [[0, 0.5, 0.5], [0, 0, 1]])
    x.grad = None
    x.max(1).values.sum().backward()   # max(dim): to the selected index only
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [[0, 1, 0], [0, 0, 1]])
    x.grad = None
    x.min(0)[0].sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [[1, 0, 1], [0, 1, 0]])
    y = T([3.0, -3.0, 1.0], dtype=tgrad.float64, requires_grad=True, device=device)
    y.norm(float("inf")).backward()    # |x| ties, signed
    np.testing.assert_array_equal(y.grad.cpu().numpy(), [0.5, -0.5, 0])


def test_zero_norm_and_std_gradients(device):
    x = tgrad.zeros(2, 3, dtype=tgrad.float64, device=device, requires_grad=True)
    for f in (lambda x: x.norm(dim=1), lambda x: x.std(1), lambda x: x.norm(3.0, dim=1), lambda x: x.norm()):
        gx, = tgrad.autograd.grad(f(x).sum(), (x,))
        np.testing.assert_array_equal(gx.cpu().numpy(), np.zeros((2, 3)))     # PyTorch masks 0/0 to 0


def test_grad_fn_names(device):
    x = tgrad.randn(3, 4, dtype=tgrad.float64, device=device, requires_grad=True)
    names = {"ProdBackward0": x.prod(), "ProdBackward1": x.prod(1), "VarBackward0": x.var(1),
             "StdBackward0": x.std(), "MaxBackward1": x.max(), "MaxBackward0": x.max(1).values,
             "MinBackward1": x.min(), "MinBackward0": x.min(0).values, "AmaxBackward0": x.amax(1),
             "AminBackward0": x.amin(), "LogsumexpBackward0": x.logsumexp(1),
             "LinalgVectorNormBackward0": x.norm(1, dim=1), "CumsumBackward0": x.cumsum(0),
             "CumprodBackward0": x.cumprod(1), "SumBackward0": x.sum(), "MeanBackward1": x.mean(1)}
    for name, t in names.items():
        assert type(t.grad_fn).__name__ == name
    assert not x.argmax().requires_grad and not x.all().requires_grad and not x.max(1).indices.requires_grad


def test_zeros_in_prod_and_cumprod(device):
    a = np.array([[1.5, 0.0, 2.0, -1.0], [0.0, 2.0, 0.0, 3.0], [1.0, 2.0, 3.0, 4.0]])
    x = T(a, dtype=tgrad.float64, requires_grad=True, device=device)
    x.prod(1).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), [[0, -3, 0, 0], [0, 0, 0, 0], [24, 12, 8, 6]])
    x.grad = None
    g = np.array([[0.3, -0.7, 1.1, 0.4], [1.0, 2.0, 3.0, 4.0], [0.5, 0.5, 0.5, 0.5]])
    x.cumprod(1).backward(T(g, dtype=tgrad.float64, device=device))
    expect = np.zeros_like(a)          # d/dx_k sum_i g_i prod_{j<=i} x_j, by brute force
    for r in range(3):
        for k in range(4):
            expect[r, k] = sum(g[r, i] * np.prod([a[r, j] for j in range(i + 1) if j != k]) for i in range(k, 4))
    np.testing.assert_allclose(x.grad.cpu().numpy(), expect)
    gx, = tgrad.autograd.grad(x.prod(), (x,), create_graph=False)
    assert np.all(gx.cpu().numpy() == 0)     # two or more zeros: every partial product contains one
    # create_graph: the same first derivatives through ops, and second derivatives through zeros
    gx, = tgrad.autograd.grad(x.cumprod(1), (x,), T(g, dtype=tgrad.float64, device=device), create_graph=True)
    np.testing.assert_allclose(gx.detach().cpu().numpy(), expect)
    gx, = tgrad.autograd.grad(x.prod(1).sum(), (x,), create_graph=True)
    np.testing.assert_allclose(gx.detach().cpu().numpy(), [[0, -3, 0, 0], [0, 0, 0, 0], [24, 12, 8, 6]])
    h, = tgrad.autograd.grad(gx[1, 0], (x,))           # d^2 / dx_10 dx_1k = prod_{j != 0, k} x_1j
    np.testing.assert_allclose(h.cpu().numpy(), [[0, 0, 0, 0], [0, 0, 6, 0], [0, 0, 0, 0]])


# ------------------------------------------------------------------ long rows: carries across chunks
def test_long_rows_carry(device):
    n = 70000                          # more than one BLOCK_K chunk on every device
    a = np.random.default_rng(2).uniform(-1, 1, (2, n))
    a[1, 50000] = 5.0
    x = T(a, device=device)
    np.testing.assert_allclose(x.cumsum(1).cpu().numpy(), np.cumsum(a.astype(np.float32), 1), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(x.sum(1).cpu().numpy(), a.sum(1), rtol=1e-4, atol=1e-3)
    v, i = x.max(1)
    assert i.cpu().numpy()[1] == 50000 and i.cpu().numpy()[0] == np.argmax(a[0].astype(np.float32))
    p = T(np.full(n, 1.00001), dtype=tgrad.float64, device=device)
    np.testing.assert_allclose(p.cumprod(0).cpu().numpy()[-1], 1.00001 ** n, rtol=1e-9)
    q = T(np.zeros(n), dtype=tgrad.float64, requires_grad=True, device=device)
    q.cumsum(0).sum().backward()       # the reversed scan walks the chunks from the end
    np.testing.assert_array_equal(q.grad.cpu().numpy(), np.arange(n, 0, -1))


# ------------------------------------------------------------------ geometry: no copies when strides allow
def test_rows_geometry_avoids_copies(device):
    x = tgrad.zeros(2, 3, 4, 5, device=device)
    for dims in [(1,), (2,), (1, 2), (0,), (3,), (0, 1, 2, 3), (2, 3)]:
        buf, _ = rows_geom(x, dims)
        assert buf is x, dims
    buf, _ = rows_geom(x, (0, 2))       # non-adjacent reduced dims: one contiguous copy
    assert buf is not x
    t = x.transpose(0, 1)
    assert rows_geom(t, (0,))[0] is t   # a transposed view: strided rows, no copy
    a = np.random.default_rng(3).uniform(-1, 1, (2, 3, 4, 5))
    xt = T(a, device=device).transpose(1, 3)
    np.testing.assert_allclose(xt.sum(1).cpu().numpy(), a.transpose(0, 3, 2, 1).sum(1), rtol=1e-5)
    np.testing.assert_allclose(xt.amax((0, 2)).cpu().numpy(), a.transpose(0, 3, 2, 1).max((0, 2)), rtol=1e-6)
    np.testing.assert_allclose(xt.cumsum(2).cpu().numpy(), a.transpose(0, 3, 2, 1).cumsum(2), rtol=1e-5, atol=1e-6)


def test_keepdim_without_dim(device):
    x = tgrad.ones(2, 3, device=device, requires_grad=True)
    for t in (x.sum(None, True), x.mean(None, keepdim=True), x.var(None, keepdim=True), x.amax((), True),
              x.all(None, True), x.norm(keepdim=True)):
        assert t.shape == (1, 1)
    assert type(x.sum(None, True).grad_fn).__name__ == "SumBackward1"


def test_one_launch_each(device):
    """var/std/logsumexp/max(dim) are single launches; no copy for one dim of a contiguous tensor."""
    from tgrad.kernels.runtime import launcher
    x = tgrad.ones(2, 3, 4, device=device)
    c = launcher.COUNTER
    for f in (lambda: x.var(1), lambda: x.std((1, 2)), lambda: x.logsumexp(1), lambda: x.max(1),
              lambda: x.sum(0), lambda: x.amax(-1), lambda: x.norm(dim=1), lambda: x.cumsum(1), lambda: x.prod(2)):
        saved = c.enabled, c.counts
        c.enabled, c.counts = True, type(c.counts)()
        try:
            f()
            assert sum(c.counts.values()) == 1, dict(c.counts)
        finally:
            c.enabled, c.counts = saved


def test_module_functions(device):
    x = T([[1.0, -2.0], [3.0, 0.5]], device=device)
    assert tgrad.max(x).item() == 3.0 and tgrad.argmin(x).item() == 1
    assert tgrad.all(x).item() is True and tgrad.any(x - x).item() is False
    np.testing.assert_allclose(tgrad.norm(x, 1).item(), 6.5)
    np.testing.assert_allclose(tgrad.cumprod(x, 1).cpu().numpy(), [[1.0, -2.0], [3.0, 1.5]])
    np.testing.assert_allclose(tgrad.amin(x, 1).cpu().numpy(), [-2.0, 0.5])
    np.testing.assert_allclose(tgrad.linalg.vector_norm(x, 1, dim=1).cpu().numpy(), [3.0, 3.5])
    np.testing.assert_allclose(tgrad.linalg.vector_norm(x).item(), np.sqrt(1 + 4 + 9 + 0.25), rtol=1e-6)
    np.testing.assert_allclose(tgrad.linalg.vector_norm(x, float("-inf")).item(), 0.5)
