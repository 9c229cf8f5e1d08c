"""In-place ops under autograd: identity, version counters, saved-tensor checks, rebased grad_fn, CopySlices."""
import re

import numpy as np
import pytest

import tgrad
from tgrad.testing import neutral_repr
from tgrad.autograd import Variable


FLOAT_T = tgrad.ones(1).type()    # "tgrad.FloatTensor" or "tgrad.cuda.FloatTensor" (--device)


def _np(t):
    return t.detach()._host_copy()


def leaf(values, dtype=tgrad.float32):
    return tgrad.tensor(values, dtype=dtype, requires_grad=True)


def _numeric_grad(f, x0, eps=1e-6):
    """d sum(f(x) * weights) / dx by central differences in float64 numpy (f maps numpy -> numpy)."""
    g = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        p, m = x0.copy(), x0.copy()
        p[i] += eps
        m[i] -= eps
        g[i] = (f(p) - f(m)) / (2 * eps)
    return g


# ------------------------------------------------------------------ identity, versions, leaf checks
def test_inplace_keeps_identity_seed001_cell1():
    x = Variable(tgrad.ones(1, 2), requires_grad=True)
    ident, ptr = id(x), x.data_ptr()
    with tgrad.no_grad():
        x += 1
    assert id(x) == ident and x.data_ptr() == ptr
    assert neutral_repr(x) == "tensor([[2., 2.]], requires_grad=True)" and x.is_leaf and x._version == 1


LEAF_MSG = re.escape("a leaf Variable that requires grad is being used in an in-place operation.")


def test_inplace_on_leaf_requiring_grad_raises_and_changes_nothing():
    x = leaf([1.0, 2.0])
    for fn in (lambda: x.add_(1), lambda: x.mul_(2), lambda: x.zero_(), lambda: x.fill_(3.0),
               lambda: x.copy_(tgrad.ones(2)), lambda: x.__iadd__(1), lambda: x.__setitem__(0, 5.0)):
        with pytest.raises(RuntimeError):
            fn()
    with pytest.raises(RuntimeError, match=LEAF_MSG):
        x.add_(1)
    with pytest.raises(RuntimeError, match=re.escape(
            "a view of a leaf Variable that requires grad is being used in an in-place operation.")):
        x[0].mul_(2)
    assert _np(x).tolist() == [1.0, 2.0] and x._version == 0
    with tgrad.no_grad():
        x[0] = 5.0
    assert neutral_repr(x) == "tensor([5., 2.], requires_grad=True)"


def test_versions_shared_by_views_and_bumped_by_every_inplace_op():
    x = tgrad.zeros(2, 3)
    v, t = x[0], x.t()
    assert v._version_counter is x._version_counter is t._version_counter
    x.add_(1)
    v.mul_(2)
    t[0].fill_(7.0)
    x[1] = 4.0
    assert type(x._version) is int and x._version == v._version == t._version == x.detach()._version == 4
    assert (x * 1)._version == 0       # a new tensor starts at version 0
    np.testing.assert_array_equal(_np(x), [[7, 2, 2], [4, 4, 4]])


def test_version_error_message_seed001_cell9():
    x = Variable(tgrad.ones(1, 10), requires_grad=True)
    y1 = x ** 2
    with tgrad.no_grad():
        x += 1
        y2 = x ** 2
    z = y1 ** 2 + y2 ** 2
    x.requires_grad_(True)
    msg = ("one of the variables needed for gradient computation has been modified by an inplace operation: "
           f"[{FLOAT_T} [1, 10]] is at version 1; expected version 0 instead. Hint: enable anomaly "
           "detection to find the operation that failed to compute its gradient, with "
           "tgrad.autograd.set_detect_anomaly(True).")
    with pytest.raises(RuntimeError, match="^" + re.escape(msg) + "$"):
        z.sum().backward()


def test_version_error_names_the_producer_of_a_saved_output():
    x = leaf([1.0, 1.0, 1.0])
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError, match=re.escape(
            f"[{FLOAT_T} [3]], which is output 0 of Exp, is at version 1; expected version 0 instead.")):
        y.sum().backward()
    y = x * 1
    z = y * y
    y[:2].mul_(2)                     # y's producer is now CopySlices (PyTorch: torch::autograd::CopySlices)
    with pytest.raises(RuntimeError, match=re.escape(
            f"[{FLOAT_T} [3]], which is output 0 of torch::autograd::CopySlices, is at version 1; expected "
            "version 0 instead.")):
        z.sum().backward()
    with tgrad.autograd.set_detect_anomaly(True):
        y = x.exp()
        y[0] = 3.0
        with pytest.warns(UserWarning, match="Error detected in ExpBackward0"):
            with pytest.raises(RuntimeError, match=re.escape(
                    "Hint: the backtrace further above shows the operation that failed to compute its gradient. "
                    "The variable in question was changed in there or anywhere later. Good luck!")):
                y.sum().backward()


def test_no_grad_inplace_then_backward_uses_new_values_seed001_cell8():
    x = Variable(tgrad.ones(1, 10), requires_grad=True)
    with tgrad.no_grad():
        x += 1
        y2 = x ** 2
    y1 = x ** 2
    z = y1 ** 2 + y2 ** 2
    z.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), [[32.0] * 10])
    np.testing.assert_array_equal(_np(z), [[32.0] * 10])


def test_internal_overlap_and_inference_inplace_errors():
    y = leaf([[1.0, 2.0, 3.0]]) * 1
    with pytest.raises(RuntimeError, match=re.escape(
            "unsupported operation: more than one element of the written-to tensor refers to a single memory "
            "location. Please clone() the tensor before performing the operation.")):
        y.expand(3, 3).mul_(2)
    with tgrad.inference_mode():
        it = tgrad.ones(2)
    with pytest.raises(RuntimeError, match=re.escape(
            "Inplace update to inference tensor outside InferenceMode is not allowed.")):
        it.add_(1)


# ------------------------------------------------------------------ rebased grad_fn, values of every in-place op
def test_inplace_records_and_rebases():
    x = leaf([1.0, 2.0])
    y = x * 1
    old = y.grad_fn
    y.mul_(3)
    assert y.grad_fn.name() == "MulBackward0" and y.grad_fn is not old
    assert y.grad_fn.next_functions[0] == (old, 0) and y._version == 1
    y.exp_()
    assert y.grad_fn.name() == "ExpBackward0"
    y.sum().backward()
    np.testing.assert_allclose(_np(x.grad), 3 * np.exp(3 * np.array([1.0, 2.0])), rtol=1e-6)


def test_inplace_on_leaf_without_grad_takes_history():
    w = leaf([2.0, 3.0])
    a = tgrad.ones(2)
    a.mul_(w)
    a.add_(w)
    assert a.grad_fn.name() == "AddBackward0" and not a.is_leaf and a.requires_grad
    (a * a).sum().backward()      # a = 2w -> d/dw sum(4 w^2) = 8 w
    np.testing.assert_array_equal(_np(w.grad), [16.0, 24.0])


INPLACE = [
    ("add_", lambda t, o: t.add_(o, alpha=2), lambda x, o: x + 2 * o),
    ("sub_", lambda t, o: t.sub_(o), lambda x, o: x - o),
    ("mul_", lambda t, o: t.mul_(o), lambda x, o: x * o),
    ("div_", lambda t, o: t.div_(o), lambda x, o: x / o),
    ("pow_", lambda t, o: t.pow_(3), lambda x, o: x ** 3),
    ("iadd", lambda t, o: t.__iadd__(o), lambda x, o: x + o),
    ("isub", lambda t, o: t.__isub__(o), lambda x, o: x - o),
    ("imul", lambda t, o: t.__imul__(o), lambda x, o: x * o),
    ("itruediv", lambda t, o: t.__itruediv__(o), lambda x, o: x / o),
    ("ipow", lambda t, o: t.__ipow__(2), lambda x, o: x ** 2),
    ("exp_", lambda t, o: t.exp_(), lambda x, o: np.exp(x)),
    ("zero_", lambda t, o: t.zero_(), lambda x, o: 0 * x),
    ("fill_", lambda t, o: t.fill_(1.5), lambda x, o: 0 * x + 1.5),
    ("copy_", lambda t, o: t.copy_(o), lambda x, o: 0 * x + o),
    ("setitem", lambda t, o: t.__setitem__(slice(0, 2), o[:2]),
     lambda x, o: np.concatenate([o[:2], x[2:]])),
]


@pytest.mark.parametrize("name,op,ref", INPLACE, ids=[i[0] for i in INPLACE])
def test_inplace_gradients_match_finite_differences(name, op, ref):
    x0 = np.array([0.5, 1.5, -0.7])
    o0 = np.array([1.2, -0.4, 2.0])
    w = np.array([1.0, -2.0, 3.0])
    x = leaf(x0, tgrad.float64)
    o = leaf(o0, tgrad.float64)
    y = x * 1                                # a non-leaf to modify
    res = op(y, o)
    assert res is y or name in ("iadd", "isub", "imul", "itruediv", "ipow", "setitem")
    np.testing.assert_allclose(_np(y), ref(x0, o0), rtol=1e-12)
    (y * tgrad.tensor(w, dtype=tgrad.float64)).sum().backward()
    gx = _numeric_grad(lambda a: (ref(a, o0) * w).sum(), x0)
    go = _numeric_grad(lambda b: (ref(x0, b) * w).sum(), o0)
    np.testing.assert_allclose(_np(x.grad), gx, atol=1e-7)
    np.testing.assert_allclose(_np(o.grad) if o.grad is not None else np.zeros(3), go, atol=1e-7)


def test_clamp_inplace_gradient():
    x = leaf([-2.0, 0.5, 3.0])
    y = x * 1
    y.clamp_(-1.0, 1.0)
    y.sum().backward()
    np.testing.assert_array_equal(_np(y), [-1.0, 0.5, 1.0])
    np.testing.assert_array_equal(_np(x.grad), [0.0, 1.0, 0.0])


# ------------------------------------------------------------------ in-place on views (CopySlices)
def test_copyslices_graph_and_values():
    x = leaf([1., 2., 3., 4.])
    y = x * 2
    v = y[1:3]
    assert v.grad_fn.name() == "SliceBackward0" and v._base is y
    mul_node = y.grad_fn
    v.mul_(3)
    assert y.grad_fn.name() == "torch::autograd::CopySlices" and v.grad_fn.name() == "AsStridedBackward0"
    assert re.fullmatch(r"<CopySlices object at 0x[0-9a-f]+>", repr(y.grad_fn))
    assert y.grad_fn.next_functions == ((mul_node, 0), (None, 0))
    assert v.grad_fn.next_functions == ((y.grad_fn, 0),)
    assert neutral_repr(y) == "tensor([ 2., 12., 18.,  8.], grad_fn=<CopySlices>)"
    assert neutral_repr(v) == "tensor([12., 18.], grad_fn=<AsStridedBackward0>)"
    assert v.grad_fn._saved_size == (2,) and v.grad_fn._saved_stride == (1,)
    assert v.grad_fn._saved_storage_offset == 1
    y.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), [2., 6., 6., 2.])


def test_setitem_on_non_leaf_with_value_requiring_grad():
    x = leaf([1., 2., 3., 4.])
    y = x * 1
    w = leaf(5.0)
    y[0] = w * 2
    assert neutral_repr(y) == "tensor([10.,  2.,  3.,  4.], grad_fn=<CopySlices>)"
    e0, e1 = y.grad_fn.next_functions
    assert e0[0].name() == "MulBackward0" and e1[0].name() == "MulBackward0"
    (y * tgrad.tensor([1., 2., 3., 4.])).sum().backward()
    np.testing.assert_array_equal(_np(x.grad), [0., 2., 3., 4.])
    assert w.grad.item() == 2.0


def test_setitem_into_a_tensor_that_did_not_require_grad():
    out = tgrad.zeros(2, 2)
    row = out[0]
    w = leaf([1.0, 2.0])
    out[1] = w * 3
    assert out.grad_fn.name() == "torch::autograd::CopySlices" and out.requires_grad and not out.is_leaf
    assert row.grad_fn.name() == "AsStridedBackward0" and row.requires_grad   # regenerated lazily
    (out * tgrad.tensor([[1.0, 1.0], [2.0, 5.0]])).sum().backward()
    np.testing.assert_array_equal(_np(w.grad), [6.0, 15.0])


def test_views_after_base_modified_get_new_history():
    x = leaf([1.0, 1.0, 1.0])
    y = x * 1
    v = y[:2]
    y.mul_(3)
    assert v.grad_fn.name() == "AsStridedBackward0" and v.grad_fn.next_functions[0][0] is y.grad_fn
    v.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), [3.0, 3.0, 0.0])
    # in no_grad the base keeps its history, the view is still regenerated
    y = x * 1
    v = y[:2]
    with tgrad.no_grad():
        v.mul_(2)
    assert v.grad_fn.name() == "AsStridedBackward0" and y.grad_fn.name() == "MulBackward0"
    # a view of a leaf modified under no_grad (an optimizer step)
    p = leaf([1.0, 2.0])
    pv = p[:1]
    with tgrad.no_grad():
        p.mul_(2)
    assert pv.grad_fn.name() == "AsStridedBackward0" and pv.grad_fn.next_functions[0][0].variable is p


def test_inplace_through_chained_and_transposed_views():
    x = leaf(np.arange(6.0).reshape(2, 3) + 1)
    y = x * 1
    r = y[0]
    r2 = r[1:]
    r2.mul_(5)
    assert (y.grad_fn.name(), r.grad_fn.name(), r2.grad_fn.name()) == (
        "torch::autograd::CopySlices", "AsStridedBackward0", "AsStridedBackward0")
    np.testing.assert_array_equal(_np(y), [[1, 10, 15], [4, 5, 6]])
    (y * tgrad.arange(6.).view(2, 3)).sum().backward()
    np.testing.assert_array_equal(_np(x.grad), [[0, 5, 10], [3, 4, 5]])
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    y = x * 1
    y.t()[0].mul_(10)                 # column 0 of y
    y.sum().backward()
    np.testing.assert_array_equal(_np(y), [[10, 2], [30, 4]])
    np.testing.assert_array_equal(_np(x.grad), [[10, 1], [10, 1]])


@pytest.mark.parametrize("case", ["slice_mul", "select_copy", "transpose_add", "view_div", "setitem_tensor"])
def test_inplace_on_view_gradcheck(case):
    def f(x, o):
        y = x * 1.5
        if case == "slice_mul":
            y[:, 1:].mul_(o[:, 1:])
        elif case == "select_copy":
            y.select(1, 0).copy_(o[:, 0] * o[:, 1])
        elif case == "transpose_add":
            y.t()[1:].add_(o.t()[1:] ** 2)
        elif case == "view_div":
            y.view(-1)[2:5].div_(o.view(-1)[:3] + 3)
        else:
            y[1] = o[0].exp()
        return y * y
    rng = np.random.default_rng(0)
    x = tgrad.tensor(rng.uniform(-1, 1, (2, 3)), requires_grad=True)
    o = tgrad.tensor(rng.uniform(-1, 1, (2, 3)), requires_grad=True)
    assert tgrad.autograd.gradcheck(f, (x, o))
    assert tgrad.autograd.gradgradcheck(f, (x, o))


def test_view_created_in_no_grad_cannot_be_modified_with_grad():
    msg = re.escape("A view was created in no_grad mode and is being modified inplace with grad mode enabled.")
    x = leaf([1.0, 2.0, 3.0])
    y = x * 1
    with tgrad.no_grad():
        vn = y[:2]
    assert vn.requires_grad and vn.grad_fn is None
    with pytest.raises(RuntimeError, match=msg):
        vn.mul_(2)
    with tgrad.no_grad():
        vl = x[:2]
    with pytest.raises(RuntimeError, match=msg):
        vl.mul_(2)
    with tgrad.no_grad():
        vn.mul_(2)                      # both in no_grad: fine
    np.testing.assert_array_equal(_np(y), [2.0, 4.0, 3.0])


def test_as_strided_backward_sums_overlapping_elements():
    a = tgrad.arange(4.).requires_grad_()
    b = a.as_strided((3, 2), (1, 1))
    b.sum().backward()
    np.testing.assert_array_equal(_np(a.grad), [1., 2., 2., 1.])
    assert b.grad_fn.name() == "AsStridedBackward0"


def test_saved_self_identity_and_saved_result_copy_seed001():
    x = tgrad.randn(5, requires_grad=True)
    y = x.pow(2)
    assert x.equal(y.grad_fn._saved_self) and x is y.grad_fn._saved_self
    y = x.exp()
    assert y.equal(y.grad_fn._saved_result) and y is not y.grad_fn._saved_result


def test_outputs_of_multi_view_ops_cannot_be_modified_in_place():
    y = leaf([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]) * 1
    a, b = y.unbind(0)[:2]
    with pytest.raises(RuntimeError, match=re.escape(
            "Output 1 of Unbind is a view and is being modified inplace. This view is the output of a function "
            "that returns multiple views. Such functions do not allow the output views to be modified inplace. "
            "You should replace the inplace operation by an out-of-place one.")):
        b.mul_(2)
    p, q = y.split(2)
    with pytest.raises(RuntimeError, match=re.escape("Output 1 of Split is a view")):
        q.mul_(2)
    with tgrad.no_grad():
        q.mul_(2)
    np.testing.assert_array_equal(_np(y), [[1, 2], [3, 4], [10, 12], [14, 16]])


# ------------------------------------------------------------------ in-place view ops: t_, transpose_, squeeze_, ...
VIEW_INPLACE = [   # (method call, numpy reference, PyTorch 2.13's grad_fn name)
    (lambda y: y.t_(), lambda a: a.T, "TBackward1"),
    (lambda y: y.transpose_(0, -1), lambda a: np.swapaxes(a, 0, -1), "TransposeBackward1"),
    (lambda y: y.swapdims_(1, 0), lambda a: np.swapaxes(a, 0, 1), "TransposeBackward1"),
    (lambda y: y.swapaxes_(0, 1), lambda a: np.swapaxes(a, 0, 1), "TransposeBackward1"),
    (lambda y: y.unsqueeze_(1), lambda a: a[:, None], "UnsqueezeBackward1"),
    (lambda y: y.unsqueeze_(0).squeeze_(), lambda a: a, "SqueezeBackward3"),
    (lambda y: y.unsqueeze_(-1).squeeze_(2), lambda a: a, "SqueezeBackward4"),
    (lambda y: y.unsqueeze_(0).squeeze_((0, 1)), lambda a: a, "SqueezeBackward5"),
    (lambda y: y.as_strided_((3, 2), (1, 3)), lambda a: a.T, "AsStridedBackward1"),
]


@pytest.mark.parametrize("fn,ref,name", VIEW_INPLACE, ids=[n for _, _, n in VIEW_INPLACE])
def test_inplace_view_ops_change_geometry_version_and_grad_fn(fn, ref, name):
    a0 = np.arange(6.0).reshape(2, 3)
    x = leaf(a0)
    y = x * 2
    out = fn(y)
    assert out is y and y._version == (2 if name.startswith("Squeeze") else 1)
    np.testing.assert_array_equal(_np(y), ref(a0 * 2))
    assert type(y.grad_fn).__name__ == name
    w = np.arange(y.numel(), dtype=np.float64).reshape(y.shape) + 1
    (gx,) = tgrad.autograd.grad((y * tgrad.tensor(w, dtype=tgrad.float32)).sum(), x)
    w_in = np.zeros_like(a0)      # d sum(ref(2a) * w) / da, a linear map: by unit vectors
    for i in np.ndindex(a0.shape):
        e = np.zeros_like(a0)
        e[i] = 1
        w_in[i] = (ref(2 * e) * w).sum()
    np.testing.assert_array_equal(_np(gx), w_in)


def test_inplace_view_ops_without_grad_keep_storage_and_bump_version():
    x = tgrad.arange(6.0).reshape(2, 3)
    x.as_strided_((2,), (2,), 1)
    assert (x.shape, x.stride(), x.storage_offset(), x._version) == ((2,), (2,), 1, 1)
    assert _np(x).tolist() == [1.0, 3.0]
    base = tgrad.zeros(2, 3)
    v = base[1]
    v.unsqueeze_(0).mul_(2.0).add_(1.0)         # still a view of base
    assert v.shape == (1, 3) and _np(base).tolist() == [[0.0] * 3, [1.0] * 3]
    e = tgrad.zeros(3).expand(2, 3).t_()        # nothing is written: an expanded tensor is fine
    assert e.shape == (3, 2) and e.stride() == (1, 0)
    assert tgrad.zeros(3).t_().shape == (3,) and tgrad.zeros(()).t_().shape == ()


def test_inplace_view_op_on_a_view_keeps_its_history():
    x = leaf(np.arange(6.0).reshape(2, 3))
    y = x * 1
    v = y[1]
    v.unsqueeze_(0)
    assert type(v.grad_fn).__name__ == "UnsqueezeBackward1"
    assert [type(n).__name__ for n, _ in v.grad_fn.next_functions] == ["SelectBackward0"]
    assert y._version == 1 and v._base is y
    v.mul_(3.0)                                 # then an in-place write through it: CopySlices on y
    (gx,) = tgrad.autograd.grad(y.sum(), x)
    assert _np(gx).tolist() == [[1.0] * 3, [3.0] * 3]


@pytest.mark.parametrize("fn,msg", [
    (lambda x: x.t_(), "a leaf Variable that requires grad is being used in an in-place operation."),
    (lambda x: x.unsqueeze_(0), "a leaf Variable that requires grad is being used in an in-place operation."),
    (lambda x: x[0].squeeze_(), "a view of a leaf Variable that requires grad is being used in an in-place "
                                "operation."),
    (lambda x: x.split(1)[0].transpose_(0, 1), "Output 0 of Split is a view and is being modified inplace. This "
     "view is the output of a function that returns multiple views. Such functions do not allow the output views "
     "to be modified inplace. You should replace the inplace operation by an out-of-place one."),
    (lambda x: tgrad.zeros(2, 2, 2).t_(), "t_() expects a tensor with <= 2 dimensions, but self is 3D"),
])
def test_inplace_view_op_errors_change_nothing(fn, msg):
    x = leaf(np.arange(6.0).reshape(2, 3))
    with pytest.raises(RuntimeError) as e:
        fn(x)
    assert str(e.value) == msg
    assert x.shape == (2, 3) and x._version == 0 and x.grad_fn is None
    with tgrad.no_grad():
        assert x.t_() is x and x.shape == (3, 2) and x.is_leaf and x.requires_grad


@pytest.mark.parametrize("fn,msg", [
    (lambda x: x.transpose_(0, 2), "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda x: x.unsqueeze_(3), "Dimension out of range (expected to be in range of [-3, 2], but got 3)"),
    (lambda x: x.squeeze_(2), "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
])
def test_inplace_view_op_bad_dims(fn, msg):
    x = tgrad.zeros(2, 3)
    with pytest.raises(IndexError) as e:
        fn(x)
    assert str(e.value) == msg and x.shape == (2, 3) and x._version == 0


def test_saved_tensor_reshaped_in_place_is_a_version_error():
    x = leaf(np.arange(6.0).reshape(2, 3))
    y = x * 1
    z = y * y
    y.t_()
    with pytest.raises(RuntimeError, match=re.escape(f"[{FLOAT_T} [3, 2]], which is output 0 of T1, is at "
                                                     "version 1; expected version 0 instead.")):
        z.sum().backward()


def test_retain_grad_and_hooks_registered_before_stay_with_the_old_shape():
    """As in PyTorch: the tensor's hooks and retain_grad stay on its node from before t_()."""
    x = leaf(np.arange(12.0).reshape(4, 3))
    shapes = []
    y = x * 1
    y.retain_grad()
    y.register_hook(lambda g: shapes.append(tuple(g.shape)))
    y.t_()
    y.register_hook(lambda g: shapes.append(tuple(g.shape)))
    (y * tgrad.arange(12.0).reshape(3, 4)).sum().backward()
    assert y.grad.shape == (4, 3) and _np(y.grad).tolist() == np.arange(12.0).reshape(3, 4).T.tolist()
    assert shapes == [(4, 3), (4, 3)]
    y = x * 1
    y.t_()
    y.retain_grad()
    y.register_hook(lambda g: shapes.append(tuple(g.shape)))
    y.sum().backward()
    assert y.grad.shape == (3, 4) and shapes[2:] == [(3, 4)]
