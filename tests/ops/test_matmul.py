"""Linear algebra beyond the OpInfos: PyTorch's errors, grad_fn structure of matmul, the fused linear
(values per activation, one forward launch, two backward launches, fused bias gradient), strided operands
without copies, the tf32 switch, and random shapes/transposes against numpy."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import dispatch
from tgrad.kernels.runtime import launcher as T

r = tgrad.randn


def _d(*s):
    return tgrad.randn(*s, dtype=tgrad.float64)


ERRORS = [
    (lambda: tgrad.mm(r(2, 3), r(4, 5)), "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    (lambda: r(2, 3) @ r(4, 5), "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    (lambda: r(4) @ r(3, 5), "mat1 and mat2 shapes cannot be multiplied (1x4 and 3x5)"),
    (lambda: r(()) @ r(2, 2), "both arguments to matmul need to be at least 1D, but they are 0D and 2D"),
    (lambda: r(2, 2) @ r(()), "both arguments to matmul need to be at least 1D, but they are 2D and 0D"),
    (lambda: tgrad.mm(r(2, 3), _d(3, 5)), "expected m1 and m2 to have the same dtype, but got: float != double"),
    (lambda: r(5, 2, 3) @ _d(3, 5), "expected m1 and m2 to have the same dtype, but got: float != double"),
    (lambda: r(5, 2, 3) @ _d(5, 3, 5), "expected scalar type Float but found Double"),
    (lambda: tgrad.mm(r(2, 3).half(), r(3, 5)),
     "expected m1 and m2 to have the same dtype, but got: c10::Half != float"),
    (lambda: tgrad.dot(r(3), r(4)), "inconsistent tensor size, expected tensor [3] and src [4] to have the same "
                                    "number of elements, but got 3 and 4 elements respectively"),
    (lambda: r(3) @ r(4), "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of "
                          "elements, but got 3 and 4 elements respectively"),
    (lambda: tgrad.dot(r(2, 3), r(3)), "1D tensors expected, but got 2D and 1D tensors"),
    (lambda: tgrad.dot(r(3), _d(3)), "dot : expected both vectors to have same dtype, but found Float and Double"),
    (lambda: tgrad.mv(r(2, 3), r(4)), "size mismatch, got input (2), mat (2x3), vec (4)"),
    (lambda: r(2, 4) @ r(3), "size mismatch, got input (2), mat (2x4), vec (3)"),
    (lambda: r(2, 2, 4) @ r(3), "size mismatch, got input (4), mat (4x4), vec (3)"),
    (lambda: tgrad.mv(r(2, 3, 3), r(3)), "vector + matrix @ vector expected, got 1, 3, 1"),
    (lambda: tgrad.mm(r(2, 3), r(3)), "mat2 must be a matrix"),
    (lambda: tgrad.bmm(r(2, 2, 3), r(3, 5)), "batch2 must be a 3D tensor"),
    (lambda: tgrad.bmm(r(2, 3), r(3, 5)), "batch1 must be a 3D tensor"),
    (lambda: tgrad.bmm(r(2, 2, 3), r(2, 4, 5)),
     "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4]."),
    (lambda: r(5, 2, 3) @ r(5, 4, 5),
     "Expected size for first two dimensions of batch2 tensor to be: [5, 3] but got: [5, 4]."),
    (lambda: r(4) @ r(2, 3, 5), "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 3]."),
    (lambda: r(5, 2, 3) @ r(4, 3, 5),
     "The size of tensor a (5) must match the size of tensor b (4) at non-singleton dimension 0"),
    (lambda: tgrad.addmm(r(5, 5), r(2, 3), r(3, 5)), "The expanded size of the tensor (2) must match the existing "
     "size (5) at non-singleton dimension 0.  Target sizes: [2, 5].  Tensor sizes: [5, 5]"),
    (lambda: tgrad.addmm(_d(5), r(2, 3), r(3, 5)), "self and mat2 must have the same dtype, but got Double and Float"),
    (lambda: tgrad.baddbmm(r(3, 2, 5), r(2, 2, 3), r(2, 3, 5)), "The expanded size of the tensor (2) must match the "
     "existing size (3) at non-singleton dimension 0.  Target sizes: [2, 2, 5].  Tensor sizes: [3, 2, 5]"),
    (lambda: tgrad.baddbmm(_d(2, 2, 5), r(2, 2, 3), r(2, 3, 5)),
     "Input dtypes must be the same, got: input double, batch1: float, batch2: float"),
    (lambda: tgrad.outer(r(2, 3), r(3)), "outer: Expected 1-D argument self, but got 2-D"),
    (lambda: F.linear(r(2, 3), r(4, 5)), "mat1 and mat2 shapes cannot be multiplied (2x3 and 5x4)"),
    (lambda: F.linear(r(2, 3), r(4, 3), r(5)), "The expanded size of the tensor (4) must match the existing size (5) "
     "at non-singleton dimension 1.  Target sizes: [2, 4].  Tensor sizes: [5]"),
    (lambda: F.linear(r(2, 3), _d(4, 3)), "expected m1 and m2 to have the same dtype, but got: float != double"),
    (lambda: F.linear(r(2, 3), r(4, 3), _d(4)), "self and mat2 must have the same dtype, but got Double and Float"),
    (lambda: F.linear(r(()), r(4, 3)), "both arguments to linear need to be at least 1D, but they are 0D and 2D"),
    (lambda: F.linear(r(2, 3), r(2, 4, 3)), "t() expects a tensor with <= 2 dimensions, but self is 3D"),
]


@pytest.mark.parametrize("fn,msg", ERRORS, ids=[m[:40] for _, m in ERRORS])
def test_errors_use_pytorch_wording(fn, msg):
    with pytest.raises(RuntimeError) as e:
        fn()
    assert str(e.value) == msg


INT_DTYPES = [tgrad.int64, tgrad.int32, tgrad.int16, tgrad.int8, tgrad.uint8]


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
def test_integer_products_wrap_like_numpy(dtype):
    """Integer products are exact and wrap to the dtype (PyTorch cpu: int8 @ int8 -> int8); numpy does the same."""
    rng = np.random.default_rng(0)
    info = np.iinfo(dtype.np)
    a = rng.integers(info.min, info.max, (2, 3, 37), endpoint=True).astype(dtype.np)
    b = rng.integers(info.min, info.max, (37, 5), endpoint=True).astype(dtype.np)
    c = rng.integers(info.min, info.max, (5,), endpoint=True).astype(dtype.np)
    ta, tb, tc = (tgrad.tensor(x, dtype=dtype) for x in (a, b, c))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal((ta @ tb)._host_copy(), np.matmul(a, b))
        np.testing.assert_array_equal(tgrad.mm(ta[1], tb)._host_copy(), np.matmul(a[1], b))
        np.testing.assert_array_equal(tgrad.bmm(ta, tb.expand(2, 37, 5))._host_copy(), np.matmul(a, b))
        np.testing.assert_array_equal(tgrad.mv(ta[0], tb[:, 1])._host_copy(), np.matmul(a[0], b[:, 1]))
        np.testing.assert_array_equal(tgrad.dot(ta[0, 0], tb[:, 0])._host_copy(), np.dot(a[0, 0], b[:, 0]))
        np.testing.assert_array_equal(F.linear(ta, tb.t(), tc)._host_copy(), np.matmul(a, b) + c)
        i64 = [x.astype(np.int64) for x in (a[0], b, c)]
        np.testing.assert_array_equal(tgrad.addmm(tc, ta[0], tb, beta=3, alpha=-2)._host_copy(),
                                      (3 * i64[2] - 2 * (i64[0] @ i64[1])).astype(dtype.np))
    assert (ta @ tb).dtype is dtype and not (ta @ tb).requires_grad


def test_integer_alpha_beta_truncate_like_pytorch():
    a = tgrad.tensor([[1, 2], [3, 4]])
    b = tgrad.tensor([[2, 5], [7, 9]])
    assert tgrad.addmm(a, a, b, beta=0.5).tolist() == [[16, 23], [34, 51]]     # beta -> 0: self ignored
    assert tgrad.addmm(a, a, b, alpha=0.5).tolist() == [[1, 2], [3, 4]]       # alpha -> 0
    assert tgrad.addmm(a, a, b, alpha=2.0, beta=True).tolist() == [[33, 48], [71, 106]]
    assert tgrad.baddbmm(a[None], a[None], b[None], beta=2.7).tolist() == [[[18, 27], [40, 59]]]


@pytest.mark.parametrize("fn,msg", [
    (lambda x: x @ x, "\"addmm_impl_cpu_\" not implemented for 'Bool'"),
    (lambda x: F.linear(x, x), "\"addmm_impl_cpu_\" not implemented for 'Bool'"),
    (lambda x: tgrad.bmm(x[None], x[None]), "\"bmm\" not implemented for 'Bool'"),
    (lambda x: x.expand(2, 2, 2) @ x.expand(2, 2, 2), "\"bmm\" not implemented for 'Bool'"),
    (lambda x: tgrad.baddbmm(x[None], x[None], x[None]), "\"baddbmm\" not implemented for 'Bool'"),
    (lambda x: tgrad.mv(x, x[0]), "\"addmv_impl_cpu\" not implemented for 'Bool'"),
    (lambda x: x[0] @ x[1], "\"dot\" not implemented for 'Bool'"),
])
def test_bool_products_are_refused_before_launch(fn, msg, device):
    if device == "cuda":        # PyTorch 2.13 names its cuda kernels
        msg = msg.replace("addmm_impl_cpu_", "addmm_cuda").replace("addmv_impl_cpu", "addmv_impl_cuda")
        msg = msg.replace('"bmm"', '"bmm_cuda"').replace('"baddbmm"', '"baddbmm_cuda"')
    x = tgrad.ones(2, 2, dtype=tgrad.bool)
    T.COUNTER.enabled, T.COUNTER.counts = True, type(T.COUNTER.counts)()
    try:
        with pytest.raises(NotImplementedError) as e:
            fn(x)
        assert str(e.value) == msg
        assert T.COUNTER.counts["matmul_kernel"] == 0
    finally:
        T.COUNTER.enabled = False
    assert tgrad.outer(x[0], x[1]).tolist() == [[True, True], [True, True]]


def test_integer_operands_of_different_dtypes_are_refused():
    a = tgrad.ones(2, 2, dtype=tgrad.int64)
    with pytest.raises(RuntimeError, match="^expected m1 and m2 to have the same dtype, but got: long int != int$"):
        a @ a.int()
    with pytest.raises(RuntimeError, match="^expected m1 and m2 to have the same dtype, but got: bool != long int$"):
        a.bool() @ a


def _names(t):
    """grad_fn name, then the first non-leaf input's, down the chain."""
    out, f = [], t.grad_fn
    while f is not None:
        out.append(type(f).__name__)
        nxt = [n for n, _ in f.next_functions if n is not None and type(n).__name__ != "AccumulateGrad"]
        f = nxt[0] if nxt else None
    return out


@pytest.mark.parametrize("sa,sb,names", [
    ((3,), (3,), ["DotBackward0"]),
    ((2, 3), (3,), ["MvBackward0"]),
    ((2, 3), (3, 4), ["MmBackward0"]),
    ((5, 2, 3), (3, 4), ["UnsafeViewBackward0", "MmBackward0", "ViewBackward0"]),
    ((5, 2, 3), (3,), ["UnsafeViewBackward0", "MvBackward0", "ViewBackward0"]),
    ((5, 2, 3), (1, 3, 4), ["UnsafeViewBackward0", "BmmBackward0", "ViewBackward0", "ExpandBackward0"]),
    ((3,), (5, 3, 4), ["UnsafeViewBackward0", "MvBackward0"]),
    ((2, 3), (5, 3, 4), ["CloneBackward0", "TransposeBackward0", "UnsafeViewBackward0", "MmBackward0",
                         "TBackward0"]),
    ((5, 2, 3), (5, 3, 4), ["UnsafeViewBackward0", "BmmBackward0", "ViewBackward0", "ExpandBackward0"]),
    ((4, 5, 2, 3), (4, 5, 3, 4), ["UnsafeViewBackward0", "BmmBackward0", "ViewBackward0", "ExpandBackward0"]),
])
def test_matmul_grad_fn_chain_as_pytorch(sa, sb, names):
    a = tgrad.randn(*sa, requires_grad=True)
    assert _names(a @ tgrad.randn(*sb)) == names


def test_grad_fn_saved_tensors():
    a, b = tgrad.randn(2, 3, requires_grad=True), tgrad.randn(3, 4)
    fn = a.mm(b).grad_fn
    assert fn._saved_self is a and fn._saved_mat2 is b
    fn = tgrad.addmm(tgrad.randn(4), a, b, beta=0.5, alpha=2).grad_fn
    assert type(fn).__name__ == "AddmmBackward0" and fn._saved_mat1 is a and fn._saved_alpha == 2


ACTS = {None: lambda z: z, "relu": lambda z: np.maximum(z, 0), "tanh": np.tanh,
        "sigmoid": lambda z: 1 / (1 + np.exp(-z)),
        "gelu": lambda z: 0.5 * z * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))}
DACTS = {None: lambda z: np.ones_like(z), "relu": lambda z: (z > 0) * 1.0, "tanh": lambda z: 1 - np.tanh(z) ** 2,
         "sigmoid": lambda z: ACTS["sigmoid"](z) * (1 - ACTS["sigmoid"](z)),
         "gelu": lambda z: 0.5 * (1 + np.vectorize(math.erf)(z / math.sqrt(2))) + z * np.exp(-z * z / 2)
         / math.sqrt(2 * math.pi)}


@pytest.fixture
def launches():
    T.COUNTER.enabled, T.COUNTER.counts = True, type(T.COUNTER.counts)()
    yield T.COUNTER.counts
    T.COUNTER.enabled = False


@pytest.mark.parametrize("act", list(ACTS))
@pytest.mark.parametrize("dtype", [tgrad.float32, tgrad.float64])
def test_linear_activation_values_grads_and_launches(act, dtype, launches):
    rng = np.random.default_rng(1)
    xn, wn, bn = rng.uniform(-1, 1, (2, 7, 33)), rng.uniform(-1, 1, (5, 33)), rng.uniform(-1, 1, 5)
    x, w, b = (tgrad.tensor(a, dtype=dtype, requires_grad=True) for a in (xn, wn, bn))
    gn = rng.uniform(-1, 1, (2, 7, 5))
    launches.clear()
    y = dispatch.call("linear", x, w, b, activation=act)
    assert sum(launches.values()) == 1 and launches["matmul_kernel"] == 1
    assert type(y.grad_fn).__name__ == "AddmmBackward0"
    z = xn @ wn.T + bn
    tol = dict(rtol=1e-5, atol=1e-5) if dtype is tgrad.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y.detach().cpu().numpy(), ACTS[act](z), **tol)
    launches.clear()
    y.backward(tgrad.tensor(gn, dtype=dtype))
    # dX and dW (+ db fused): two launches, act' applied inside them (no element-wise launch); gelu recomputes z.
    # (Other launches here are the engine's gradient accumulation into the leaves' .grad.)
    assert launches["matmul_kernel"] == (3 if act == "gelu" else 2)
    assert launches["binary_kernel"] == 0 and launches["accumulate_rows_kernel"] == 0
    gz = gn * DACTS[act](z)
    np.testing.assert_allclose(x.grad.cpu().numpy(), gz @ wn, **tol)
    np.testing.assert_allclose(w.grad.cpu().numpy(), gz.reshape(-1, 5).T @ xn.reshape(-1, 33), **tol)
    np.testing.assert_allclose(b.grad.cpu().numpy(), gz.sum(axis=(0, 1)), **tol)


def test_linear_without_bias_and_module_call():
    x, w = tgrad.randn(4, 3, requires_grad=True), tgrad.randn(2, 3, requires_grad=True)
    y = F.linear(x, w)
    np.testing.assert_allclose(y.detach().cpu().numpy(), x.detach().cpu().numpy() @ w.detach().cpu().numpy().T, rtol=1e-6, atol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(w.grad.cpu().numpy(), np.ones((4, 2)).T @ x.detach().cpu().numpy(), rtol=1e-6, atol=1e-6)


def test_transposed_operands_need_no_copy(launches):
    a, b = tgrad.randn(33, 7), tgrad.randn(5, 33)
    launches.clear()
    out = a.t() @ b.t()
    assert dict(launches) == {"matmul_kernel": 1}
    np.testing.assert_allclose(out.cpu().numpy(), a.cpu().numpy().T @ b.cpu().numpy().T, rtol=1e-5, atol=1e-5)


def test_broadcast_batch_by_stride_zero(launches):
    a, b = tgrad.randn(4, 3, 5), tgrad.randn(1, 5, 2)
    launches.clear()
    out = tgrad.bmm(a, b.expand(4, 5, 2))
    assert dict(launches) == {"matmul_kernel": 1}
    np.testing.assert_allclose(out.cpu().numpy(), a.cpu().numpy() @ b.cpu().numpy(), rtol=1e-5, atol=1e-5)


def test_addmm_beta_zero_ignores_nan_input():
    out = tgrad.addmm(tgrad.full((5,), float("nan")), tgrad.ones(2, 3), tgrad.ones(3, 5), beta=0)
    np.testing.assert_array_equal(out.cpu().numpy(), np.full((2, 5), 3.0))


def test_zero_size_k_gives_zeros_and_beta_input():
    out = tgrad.addmm(tgrad.ones(2, 3), tgrad.randn(2, 0), tgrad.randn(0, 3), beta=2)
    np.testing.assert_array_equal(out.cpu().numpy(), np.full((2, 3), 2.0))


def test_allow_tf32_switch_reaches_the_kernel():
    T.RECORD = rec = T.SpecRecord()
    try:
        a = tgrad.randn(4, 4)
        a @ a
        tgrad.backends.cuda.matmul.allow_tf32 = True
        a @ a
        a.double() @ a.double()
    finally:
        T.RECORD = None
        tgrad.backends.cuda.matmul.allow_tf32 = False
    precs = [c["PRECISION"] for k, _, c, _ in rec if k.__name__ == "matmul_kernel"]
    assert precs == ["ieee", "tf32", "ieee"]


@settings(max_examples=20, deadline=None)
@given(m=st.integers(1, 40), k=st.integers(1, 40), n=st.integers(1, 40), batch=st.sampled_from([(), (1,), (3,), (2, 1)]),
       ta=st.booleans(), tb=st.booleans(), seed=st.integers(0, 2**16))
def test_random_shapes_and_transposes_match_numpy(m, k, n, batch, ta, tb, seed):
    rng = np.random.default_rng(seed)
    an = rng.uniform(-1, 1, batch + ((k, m) if ta else (m, k)))
    bn = rng.uniform(-1, 1, ((n, k) if tb else (k, n)))
    a, b = tgrad.tensor(an), tgrad.tensor(bn)
    a = a.transpose(-1, -2) if ta else a
    b = b.t() if tb else b
    an = np.swapaxes(an, -1, -2) if ta else an
    bn = bn.T if tb else bn
    np.testing.assert_allclose((a @ b).cpu().numpy(), an @ bn, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("act", list(ACTS))
@pytest.mark.parametrize("dtype,tol", [(tgrad.float16, 2e-3), (tgrad.bfloat16, 1e-2)])
def test_linear_half_precision_grads(act, dtype, tol):
    """fp16/bf16 backward: dY' = dY * act'(y) rounded to the dtype, products accumulated in fp32."""
    rng = np.random.default_rng(2)
    xn, wn, bn, gn = (rng.uniform(-1, 1, s) for s in ((8, 33), (5, 33), (5,), (8, 5)))
    x, w, b = (tgrad.tensor(a, dtype=dtype, requires_grad=True) for a in (xn, wn, bn))
    dispatch.call("linear", x, w, b, activation=act).backward(tgrad.tensor(gn, dtype=dtype))
    rd = [a.astype(dtype.np).astype(np.float64) for a in (xn, wn, bn, gn)]
    gz = rd[3] * DACTS[act](rd[0] @ rd[1].T + rd[2])
    for got, ref in ((x.grad, gz @ rd[1]), (w.grad, gz.T @ rd[0]), (b.grad, gz.sum(0))):
        np.testing.assert_allclose(got.double().cpu().numpy(), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("act", ["tanh", "gelu"])
def test_batched_kernel_with_every_fusion(act):
    """The launcher's batched tiles (several batch entries per cpu program) with c, act, act'(v) and row sums."""
    from tgrad.kernels import matmul as KM
    rng = np.random.default_rng(3)
    an, bn, cn, vn = (rng.uniform(-1, 1, s) for s in ((5, 7, 33), (5, 33, 9), (9,), (5, 7, 33)))
    a, b, c, v = (tgrad.tensor(x) for x in (an, bn, cn, vn))
    out, rs = tgrad.empty(5, 7, 9, dtype=tgrad.float64), tgrad.empty(5, 7, dtype=tgrad.float64)
    KM.matmul(a, b, out, c=c, alpha=0.5, beta=2.0, act=act, v=v, dact=act, rowsum=rs)
    dv = DACTS[act](vn) if act == "gelu" else 1 - vn * vn      # v is z for gelu, y for tanh
    ap = an * dv
    np.testing.assert_allclose(out.cpu().numpy(), ACTS[act](0.5 * ap @ bn + 2.0 * cn), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(rs.cpu().numpy(), ap.sum(-1), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("sa,sb", [((0, 2, 3), (3, 4)), ((2, 2, 0), (2, 0, 4)), ((3, 0), (0,)), ((0,), (0,)),
                                   ((2, 3, 0), (0, 5)), ((4, 0, 2, 3), (3, 4))])
def test_matmul_zero_size(sa, sb):
    a, b = tgrad.randn(*sa, requires_grad=True), tgrad.randn(*sb, requires_grad=True)
    out = a @ b
    np.testing.assert_array_equal(out.detach().cpu().numpy(), np.zeros(np.matmul(np.zeros(sa), np.zeros(sb)).shape))
    out.sum().backward()
    assert tuple(a.grad.shape) == sa and tuple(b.grad.shape) == sb
    assert not a.grad.cpu().numpy().any() and not b.grad.cpu().numpy().any()


def test_linear_empty_batch_gives_zero_weight_grads():
    x = tgrad.randn(0, 3, requires_grad=True)
    w, b = tgrad.randn(4, 3, requires_grad=True), tgrad.randn(4, requires_grad=True)
    y = dispatch.call("linear", x, w, b, activation="relu")
    assert tuple(y.shape) == (0, 4)
    y.sum().backward()
    np.testing.assert_array_equal(w.grad.cpu().numpy(), np.zeros((4, 3)))
    np.testing.assert_array_equal(b.grad.cpu().numpy(), np.zeros(4))


def test_bfloat16_dot_with_the_gpu_tiles_multiplies_values_not_bits(device):
    """The GPU's tiles feed bfloat16 straight into tl.dot (no upcast): the cpu executors, which also run the
    fake driver's cuda launches, multiply the values (Triton's interpreter multiplied the uint16 bits)."""
    rng = np.random.default_rng(5)
    an, bn = rng.uniform(-1, 1, (8, 33)), rng.uniform(-1, 1, (33, 5))
    a, b = (tgrad.tensor(x, dtype=tgrad.bfloat16) for x in (an, bn))
    old, T.FORCE_GPU_BLOCKS = T.FORCE_GPU_BLOCKS, True
    try:
        got = (a @ b).double().cpu().numpy()
    finally:
        T.FORCE_GPU_BLOCKS = old
    want = a.double().cpu().numpy() @ b.double().cpu().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)
