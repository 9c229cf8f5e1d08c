"""__getitem__ / __setitem__ and the gather/scatter family: semantics vs numpy, PyTorch's rules and error texts."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tgrad

RNG = np.random.default_rng(0)
XN = RNG.standard_normal((3, 4, 5))


def _x(device, requires_grad=False):
    return tgrad.tensor(XN, device=device, requires_grad=requires_grad)


def _np(t):
    return t.detach()._host_copy()


# keys where numpy's and PyTorch's rules agree
KEYS = [0, -1, (1, 2), (1, -1, 4), slice(1, None), slice(None, None, 2), (slice(0, 3, 2), slice(1, 4, 2)),
        (Ellipsis, 1), (None, 1), (slice(None), None, 2), (Ellipsis, None), (1, Ellipsis, None, 0),
        slice(5, 10), (slice(-2, None), slice(None, -1, 3)),
        [0, 2], [[0, 1], [2, 2]], (slice(None), [1, 3]), ([0, 2], slice(None), [4, 0]), ([0, 1], [1, 2]),
        (slice(None), [[0], [3]], [1, 2]), ([2, -1, 0],), (Ellipsis, [4, 4]), (None, [1, 0]),
        (slice(1, None), [0, 0, 2], None)]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_getitem_matches_numpy(key, device):
    # PyTorch reads a list holding lists as a tuple of indices (numpy 2 reads it as one array index)
    ref = XN[tuple(key)] if isinstance(key, list) and any(isinstance(i, list) for i in key) else XN[key]
    np.testing.assert_array_equal(_np(_x(device)[key]), ref)


def test_getitem_bool_masks(device):
    x = _x(device)
    m = XN > 0
    np.testing.assert_array_equal(_np(x[tgrad.tensor(m, device=device)]), XN[m])
    m2 = XN[0] > 0
    np.testing.assert_array_equal(_np(x[:, tgrad.tensor(m2, device=device)]), XN[:, m2])
    m1 = np.array([True, False, True, True])
    np.testing.assert_array_equal(_np(x[1:, m1.tolist()]), XN[1:, m1])
    assert x[True].shape == (1, 3, 4, 5) and x[False].shape == (0, 3, 4, 5)
    assert x[tgrad.tensor(False)].shape == (0, 3, 4, 5)


def test_getitem_pytorch_rules_differ_from_numpy(device):
    # an int is a select (basic), so advanced indices split by it stay in place, unlike numpy
    x = _x(device)
    y = x[0, :, [1, 2]]
    assert y.shape == (4, 2)
    np.testing.assert_array_equal(_np(y), XN[0][:, [1, 2]])
    # separated advanced indices put the broadcast dims first
    assert x[[0, 1], :, [1, 2]].shape == (2, 4)
    assert x[:, [[0, 1]], None].shape == (3, 1, 2, 1, 5)
    # a 0-dim integer tensor is an int
    assert x[tgrad.tensor(1)].grad_fn is None and x[tgrad.tensor(1)].shape == (4, 5)


def test_getitem_grad_fns(device):
    x = _x(device, requires_grad=True)
    assert x[0].grad_fn.name() == "SelectBackward0"
    assert x[1:].grad_fn.name() == "SliceBackward0"
    assert x[None].grad_fn.name() == "UnsqueezeBackward0"
    assert x[[0, 1]].grad_fn.name() == "IndexBackward0"
    assert x[tgrad.tensor(XN > 0)].grad_fn.name() == "IndexBackward0"


def test_getitem_views_share_storage(device):
    x = _x(device)
    v = x[1, ::2]
    assert v._base is x and v.storage_offset() == 20 and v.stride() == (10, 1)
    a = x[[1]]
    assert a._base is None       # advanced indexing copies


def test_getitem_gradient_accumulates_duplicates(device):
    x = _x(device, requires_grad=True)
    x[[0, 0, 2], 1:3].sum().backward()
    g = np.zeros_like(XN)
    g[0, 1:3] = 2
    g[2, 1:3] = 1
    np.testing.assert_array_equal(_np(x.grad), g)


@pytest.mark.parametrize("key,msg", [
    (3, "index 3 is out of bounds for dimension 0 with size 3"),
    ((slice(None), 0, 7), "index 7 is out of bounds for dimension 2 with size 5"),
    ((0, [5]), "index 5 is out of bounds for dimension 0 with size 4"),
    ((0, -5), "index -5 is out of bounds for dimension 1 with size 4"),
    ([0, 5], "index 5 is out of bounds for dimension 0 with size 3"),
    ((slice(None), [1, -6]), "index -6 is out of bounds for dimension 1 with size 4"),
    ((0, 0, 0, 0), "too many indices for tensor of dimension 3"),
    ([True, False], "The shape of the mask [2] at index 0 does not match the shape of the indexed tensor "
                    "[3, 4, 5] at index 0"),
    ((slice(None), [True] * 3), "The shape of the mask [3] at index 0 does not match the shape of the "
                                "indexed tensor [3, 4, 5] at index 1"),
    (([0, 1], [0, 1, 2]), "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]"),
    ((Ellipsis, Ellipsis), "an index can only have a single ellipsis ('...')"),
])
def test_getitem_errors(key, msg, device):
    with pytest.raises(IndexError) as e:
        _x(device)[key]
    assert str(e.value) == msg


def test_getitem_float_index_error(device):
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool tensors"):
        _x(device)[tgrad.tensor([0.0])]


SET_KEYS = [0, (1, 2), slice(None, None, 2), (Ellipsis, 1), [0, 2], (slice(None), [3, 1]),
            ([0, 2], slice(1, 3), [4, 0]), (1, [0, 3], slice(None, None, 2))]


@pytest.mark.parametrize("key", SET_KEYS, ids=repr)
def test_setitem_matches_numpy(key, device):
    x = _x(device)
    ref = XN.copy()
    ptr, ver = x.data_ptr(), x._version
    x[key] = 7.5
    ref[key] = 7.5
    np.testing.assert_array_equal(_np(x), ref)
    assert x.data_ptr() == ptr and x._version > ver   # in place, version counter bumped
    vals = RNG.standard_normal(np.shape(ref[key])[-1:])  # broadcast along the leading dims
    x[key] = tgrad.tensor(vals, device=device)
    ref[key] = vals
    np.testing.assert_array_equal(_np(x), ref)


def test_setitem_mask_and_scalar_types(device):
    x = _x(device)
    m = XN < 0
    x[tgrad.tensor(m, device=device)] = 0
    ref = np.where(m, 0, XN)
    np.testing.assert_array_equal(_np(x), ref)
    i = tgrad.zeros(4, dtype=tgrad.int64, device=device)
    i[[1, 3]] = 5
    i[0] = 2.9      # cast to the tensor's dtype (truncation)
    assert i.tolist() == [2, 5, 0, 5]
    b = tgrad.zeros(3, dtype=tgrad.bool, device=device)
    b[[2]] = True
    assert b.tolist() == [False, False, True]


def test_setitem_leading_ones_and_views(device):
    x = _x(device)
    x[1] = tgrad.ones(1, 4, 5, device=device, dtype=tgrad.float64)      # leading 1s are dropped
    assert _np(x[1]).tolist() == np.ones((4, 5)).tolist()
    v = x[2]
    v[[0, 1]] = -1.0                                                     # writes through the view into x
    assert (_np(x[2, :2]) == -1).all() and x._version == v._version


def test_setitem_errors_leave_tensor_unchanged(device):
    x = _x(device)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x[[0, 3]] = 1.0
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[3\] cannot be broadcast to "
                                           r"indexing result of shape \[2, 4, 5\]"):
        x[[0, 1]] = tgrad.ones(3, dtype=tgrad.float64, device=device)
    np.testing.assert_array_equal(_np(x), XN)
    assert x._version == 0


def test_setitem_autograd(device):
    x = _x(device, requires_grad=True)
    v = tgrad.tensor([1.0, 2.0], dtype=tgrad.float64, device=device, requires_grad=True)
    y = x.clone()
    y[[0, 2], :, [3, 3]] = v[:, None]
    assert y.grad_fn.name() == "IndexPutBackward0"
    (y * y).sum().backward()
    g = 2 * XN
    g[[0, 2], :, 3] = 0
    np.testing.assert_allclose(_np(x.grad), g)
    np.testing.assert_allclose(_np(v.grad), [8.0, 16.0])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        x[[0]] = 1.0


# ------------------------------------------------------------------ gather / scatter family
def test_gather_scatter_errors_before_launch(device):
    x = tgrad.zeros(3, 4, device=device)
    idx = tgrad.tensor([[0, 5, 1, 0]], device=device)
    with pytest.raises(RuntimeError, match="^index 5 is out of bounds for dimension 0 with size 3$"):
        x.gather(0, idx)
    with pytest.raises(RuntimeError, match="^index -1 is out of bounds for dimension 1 with size 4$"):
        x.gather(1, tgrad.tensor([[-1]], device=device))
    with pytest.raises(RuntimeError, match="^index 5 is out of bounds for dimension 0 with size 3$"):
        x.scatter_(0, idx, tgrad.ones(1, 4, device=device))
    with pytest.raises(RuntimeError, match="^index 5 is out of bounds for dimension 0 with size 3$"):
        x.scatter_add_(0, idx, tgrad.ones(1, 4, device=device))
    with pytest.raises(IndexError, match="^index out of range in self$"):
        x.index_select(0, tgrad.tensor([3], device=device))
    with pytest.raises(IndexError, match="^index out of range in self$"):
        x.index_add_(0, tgrad.tensor([-1], device=device), tgrad.ones(1, 4, device=device))
    assert _np(x).tolist() == np.zeros((3, 4)).tolist() and x._version == 0
    with pytest.raises(RuntimeError, match="Index tensor must have the same number of dimensions as input tensor"):
        x.gather(0, tgrad.tensor([0], device=device))
    with pytest.raises(RuntimeError, match=r"Size does not match at dimension 1 expected index \[1, 5\] to be no "
                                           r"larger than self \[3, 4\] apart from dimension 0"):
        x.gather(0, tgrad.zeros(1, 5, dtype=tgrad.int64, device=device))
    with pytest.raises(RuntimeError, match="gather\\(\\): Expected dtype int32/int64 for index"):
        x.gather(0, tgrad.zeros(1, 4, dtype=tgrad.int16, device=device))
    with pytest.raises(IndexError, match="index_select\\(\\): Index is supposed to be a vector"):
        x.index_select(0, tgrad.zeros(1, 1, dtype=tgrad.int64, device=device))
    with pytest.raises(RuntimeError, match=r"index_add_\(\): Number of indices \(1\) should be equal to "
                                           r"source.size\(dim\): \(2\), for dim: 0"):
        x.index_add(0, tgrad.tensor([0], device=device), tgrad.ones(2, 4, device=device))


def test_masked_errors(device):
    x = tgrad.zeros(3, 4, device=device)
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks, but got mask with dtype "
                                           "long int"):
        x.masked_fill(tgrad.tensor([1, 0, 0, 0], device=device), 1.0)
    with pytest.raises(RuntimeError, match="masked_fill_ only supports a 0-dimensional value tensor"):
        x.masked_fill(tgrad.tensor([True] * 4, device=device), tgrad.ones(2, device=device))
    with pytest.raises(RuntimeError, match="masked_select: expected BoolTensor for mask"):
        x.masked_select(tgrad.tensor([1, 0, 0, 0], device=device))


def test_inplace_forms_bump_version(device):
    x = tgrad.zeros(3, 4, device=device)
    idx = tgrad.tensor([[0, 1, 2, 0]], device=device)
    for f in (lambda: x.scatter_(0, idx, 2.0), lambda: x.scatter_add_(0, idx, tgrad.ones(1, 4, device=device)),
              lambda: x.index_add_(1, tgrad.tensor([3, 3], device=device), tgrad.ones(3, 2, device=device)),
              lambda: x.masked_fill_(tgrad.tensor([True, False, False, True], device=device), -1.0),
              lambda: x.index_put_((tgrad.tensor([1], device=device),), tgrad.tensor(9.0, device=device))):
        v = x._version
        assert f() is x and x._version == v + 1
    assert _np(x).tolist() == [[-1, 0, 0, -1], [9, 9, 9, 9], [-1, 0, 3, -1]]


@pytest.mark.parametrize("dtype", [tgrad.float32, tgrad.float16, tgrad.bfloat16, tgrad.int64, tgrad.int32])
def test_accumulating_ops_with_duplicates(dtype, device):
    idx = np.array([0, 2, 2, 2, 1, 0, 2])
    ref = np.zeros(4)
    np.add.at(ref, idx, 1)
    src = tgrad.ones(7, dtype=dtype, device=device)
    i = tgrad.tensor(idx, device=device)
    for out in (tgrad.zeros(4, dtype=dtype, device=device).scatter_add(0, i, src),
                tgrad.zeros(4, dtype=dtype, device=device).index_add(0, i, src),
                tgrad.zeros(4, dtype=dtype, device=device).index_put((i,), src, accumulate=True)):
        assert out.dtype is dtype
        np.testing.assert_array_equal(_np(out).astype(np.float64), ref)


def test_take_along_dim_broadcasts(device):
    x = tgrad.tensor(XN[0], device=device)
    i = np.array([[0, 3, 1, 2]])                         # (1, 4): broadcast over x's 4 rows
    got = tgrad.take_along_dim(x, tgrad.tensor(i, device=device), dim=1)
    np.testing.assert_array_equal(_np(got), np.take_along_axis(XN[0], np.broadcast_to(i, (4, 4)), 1))
    np.testing.assert_array_equal(_np(tgrad.take_along_dim(x, tgrad.tensor([19, 0], device=device))),
                                  XN[0].reshape(-1)[[19, 0]])


@settings(max_examples=15, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), seed=st.integers(0, 2**16), data=st.data())
def test_gather_scatter_add_random_shapes(shape, seed, data):
    """gather(scatter_add) against numpy on random shapes, dims and (transposed) strides."""
    rng = np.random.default_rng(seed)
    dim = data.draw(st.integers(0, len(shape) - 1))
    x = rng.standard_normal(shape)
    ishape = [rng.integers(1, s + 1) for s in shape]
    ishape[dim] = rng.integers(1, 6)
    idx = rng.integers(0, shape[dim], ishape)
    xt = tgrad.tensor(x)
    if len(shape) > 1 and data.draw(st.booleans()):
        xt = tgrad.tensor(np.ascontiguousarray(np.swapaxes(x, 0, -1))).transpose(0, -1)
    coords = list(np.indices(idx.shape))
    coords[dim] = idx
    np.testing.assert_array_equal(_np(xt.gather(dim, tgrad.tensor(idx))), x[tuple(coords)])
    src = rng.standard_normal(idx.shape)
    ref = x.copy()
    np.add.at(ref, tuple(coords), src)
    np.testing.assert_allclose(_np(xt.scatter_add(dim, tgrad.tensor(idx), tgrad.tensor(src))), ref, rtol=1e-12)


def test_setitem_through_view_autograd(device):
    # an int makes a view first, so this is index_put_ on a view: CopySlices, as in PyTorch
    x = _x(device, requires_grad=True)
    v = tgrad.tensor([1.0, 2.0], dtype=tgrad.float64, device=device, requires_grad=True)
    y = x.clone()
    y[[0, 2], 1, 3] = v
    assert y.grad_fn.name() == "torch::autograd::CopySlices"
    (y * y).sum().backward()
    g = 2 * XN
    g[[0, 2], 1, 3] = 0
    np.testing.assert_allclose(_np(x.grad), g)
    np.testing.assert_allclose(_np(v.grad), [2.0, 4.0])


def test_scatter_src_larger_than_index(device):
    # only the index's extent of src is read; PyTorch's backward rejects this case, and so does ours
    x = tgrad.zeros(3, 4, dtype=tgrad.float64, device=device, requires_grad=True)
    src = tgrad.tensor(np.arange(10.0).reshape(2, 5), device=device, requires_grad=True)
    idx = tgrad.tensor([[2, 0, 1, 2], [0, 1, 2, 1]], device=device)
    for y, add in ((x.scatter(0, idx, src), False), (x.scatter_add(0, idx, src), True)):
        ref = np.zeros((3, 4))
        coords = (np.array([[2, 0, 1, 2], [0, 1, 2, 1]]), np.indices((2, 4))[1])
        ref[coords] = np.arange(10.0).reshape(2, 5)[:, :4]
        np.testing.assert_array_equal(_np(y), ref)
        with pytest.raises(RuntimeError):
            y.sum().backward()


def test_nonzero_argwhere(device):
    x = tgrad.tensor([[0.0, 1.5], [-2.0, 0.0]], device=device)
    assert x.nonzero().tolist() == [[0, 1], [1, 0]] and x.nonzero().dtype is tgrad.int64
    assert [t.tolist() for t in tgrad.nonzero(x, as_tuple=True)] == [[0, 1], [1, 0]]
    assert tgrad.argwhere(x).tolist() == [[0, 1], [1, 0]]
    s = tgrad.tensor(3.0, device=device)
    assert s.nonzero().shape == (1, 0) and [t.tolist() for t in s.nonzero(as_tuple=True)] == [[0]]
    np.testing.assert_array_equal(_np(x[x.nonzero(as_tuple=True)]), [1.5, -2.0])


@st.composite
def _keys(draw):
    """(shape, key): slices with positive steps, None, Ellipsis and either ints or index lists/masks.

    Ints and advanced indices are not mixed: there PyTorch's rule (ints are basic) and numpy's differ.
    """
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    advanced = draw(st.booleans())
    key, d = [], 0
    ellipsis = False
    while d < len(shape) and draw(st.booleans()):
        kind = draw(st.sampled_from(["slice", "none", "item", "ellipsis"]))
        n = shape[d]
        if kind == "none":
            key.append(None)
            continue
        if kind == "ellipsis" and not ellipsis:
            ellipsis = True
            key.append(Ellipsis)
            continue
        if kind == "slice":
            key.append(slice(draw(st.integers(-n - 1, n + 1)), draw(st.none() | st.integers(-n, n + 1)),
                             draw(st.integers(1, 3))))
        elif advanced and draw(st.booleans()):
            key.append(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
        elif advanced:
            key.append(draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=3)))
        else:
            key.append(draw(st.integers(-n, n - 1)))
        d += 1
    return tuple(shape), tuple(key)


@settings(max_examples=25, deadline=None)
@given(sk=_keys(), seed=st.integers(0, 2**16))
def test_getitem_setitem_random_keys(sk, seed):
    shape, key = sk
    xn = np.random.default_rng(seed).standard_normal(shape)
    nkey = tuple(np.asarray(k) if isinstance(k, list) else k for k in key)
    try:
        ref = xn[nkey]
    except IndexError:          # e.g. lists of different lengths that do not broadcast
        with pytest.raises(IndexError):
            tgrad.tensor(xn)[key]
        return
    x = tgrad.tensor(xn)
    np.testing.assert_array_equal(_np(x[key]), ref)
    x[key] = 0.5
    xn = xn.copy()
    xn[nkey] = 0.5
    np.testing.assert_array_equal(_np(x), xn)


def test_take_index_fill_masked_scatter(device):
    x = tgrad.tensor(np.arange(6.0).reshape(2, 3), device=device)
    with pytest.raises(IndexError, match=r"^out of range: tried to access index 6 on a tensor of 6 elements.$"):
        x.take(tgrad.tensor([6], device=device))
    with pytest.raises(IndexError, match="^index 3 is out of bounds for dimension 1 with size 3$"):
        x.index_fill_(1, tgrad.tensor([3], device=device), -1.0)
    with pytest.raises(RuntimeError, match="^Number of elements of source < number of ones in mask$"):
        x.masked_scatter_(tgrad.ones(2, 3, dtype=tgrad.bool, device=device), tgrad.ones(2, device=device,
                                                                                          dtype=tgrad.float64))
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]] and x._version == 0
    assert x.t().take(tgrad.tensor([1, -1], device=device)).tolist() == [3.0, 5.0]    # row-major over the view
    assert x.index_fill_(1, tgrad.tensor([-1], device=device), -1.0) is x and x._version == 1
    m = tgrad.tensor([[True, False, True], [False, True, False]], device=device)
    x.masked_scatter_(m, tgrad.tensor([10.0, 11.0, 12.0, 13.0], dtype=tgrad.float64, device=device))
    assert x.tolist() == [[10, 1, 11], [3, 12, -1]] and x._version == 2


def test_setitem_rejects_sequences(device):
    x = tgrad.zeros(3, device=device)
    with pytest.raises(TypeError, match=r"^can't assign a list to a tgrad\.(cuda\.)?FloatTensor$"):
        x[0:2] = [1.0, 2.0]
    with pytest.raises(TypeError, match=r"^can't assign a numpy\.ndarray to a tgrad\.(cuda\.)?FloatTensor$"):
        x[0:2] = np.ones(2)
