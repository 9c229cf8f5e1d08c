"""Autograd: the graph API, calling nodes by hand, the engine, .grad semantics, detach/.data/Variable."""
import gc
import re
import warnings

import numpy as np
import pytest

import tgrad
from tgrad.testing import neutral_repr
from tgrad.autograd import Variable


def _np(t):
    return t.detach()._host_copy()


def leaf(values, dtype=tgrad.float32):
    return tgrad.tensor(values, dtype=dtype, requires_grad=True)


# ------------------------------------------------------------------ graph API
def test_grad_fn_names_and_next_functions():
    x = leaf([1.0, 2.0])
    c = tgrad.tensor([3.0, 4.0])
    y = x * c
    assert type(y.grad_fn).__name__ == "MulBackward0" and y.grad_fn.name() == "MulBackward0"
    acc, nr = y.grad_fn.next_functions[0]
    assert acc.name() == "torch::autograd::AccumulateGrad" and nr == 0
    assert acc.variable is x and acc.next_functions == ()
    assert y.grad_fn.next_functions[1] == (None, 0)
    assert re.fullmatch(r"<AccumulateGrad object at 0x[0-9a-f]+>", repr(acc))
    names = {"add": (x + c, "AddBackward0"), "sub": (x - c, "SubBackward0"), "div": (x / c, "DivBackward0"),
             "pow": (x ** 2, "PowBackward0"), "sum": (x.sum(), "SumBackward0"), "mean": (x.mean(), "MeanBackward0"),
             "exp": (x.exp(), "ExpBackward0"), "view": (x.view(2, 1), "ViewBackward0"),
             "select": (x[0], "SelectBackward0"), "sum_dim": (x.sum(0), "SumBackward1")}
    for key, (t, name) in names.items():
        assert t.grad_fn.name() == name, key
    assert re.fullmatch(r"<AddBackward0 object at 0x[0-9a-f]+>", repr((x + c).grad_fn))
    # the same leaf always reaches the same AccumulateGrad node while the graph holds it
    z = x * x
    assert z.grad_fn.next_functions[0][0] is z.grad_fn.next_functions[1][0]


def test_grad_fn_names_of_scalar_forms_and_overloads():
    # the names PyTorch gives: 1 - x is rsub, 1 / x is reciprocal(x) * 1, zero_ and squeeze(dim) have their own
    xs = np.array([1.0, 2.0, 4.0])
    x = leaf(xs)
    r = 1 - x
    assert r.grad_fn.name() == "RsubBackward1" and r.grad_fn._saved_alpha == 1
    q = 3 / x
    assert q.grad_fn.name() == "MulBackward0" and q.grad_fn.next_functions[0][0].name() == "ReciprocalBackward0"
    np.testing.assert_allclose(_np(r), 1 - xs)
    np.testing.assert_allclose(_np(q), 3 / xs, rtol=1e-6)
    (r * 5 + q).sum().backward()
    np.testing.assert_allclose(_np(x.grad), -5 - 3 / xs ** 2, rtol=1e-6)
    z = (x * 1).zero_()
    assert z.grad_fn.name() == "ZeroBackward0" and _np(z).tolist() == [0.0, 0.0, 0.0]
    x.grad = None
    (z + x).sum().backward()
    np.testing.assert_array_equal(_np(x.grad), [1.0, 1.0, 1.0])
    y = leaf([[1.0, 2.0, 3.0]])
    names = [(y.squeeze(), "SqueezeBackward0"), (y.squeeze(0), "SqueezeBackward1"),
             (y.squeeze((0,)), "SqueezeBackward2"), (y.T, "PermuteBackward0"), (y.t(), "TBackward0")]
    for t, name in names:
        assert t.grad_fn.name() == name


def test_next_functions_input_nr_for_multi_output_node():
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    a, b = x.unbind(0)
    s = a * b
    edges = s.grad_fn.next_functions
    assert edges[0][0] is edges[1][0] and edges[0][0].name() == "UnbindBackward0"
    assert [e[1] for e in edges] == [0, 1]


def test_is_leaf_and_requires_grad_contagion():
    x = leaf([1.0])
    c = tgrad.tensor([2.0])
    assert x.is_leaf and c.is_leaf and not c.requires_grad
    y = x * c
    assert y.requires_grad and not y.is_leaf and y.grad_fn is not None
    assert not (c * c).requires_grad and (c * c).grad_fn is None
    with tgrad.no_grad():
        w = x * c
    assert not w.requires_grad and w.is_leaf


def test_requires_grad_flags():
    x = tgrad.ones(2)
    assert x.requires_grad_() is x and x.requires_grad
    x.requires_grad = False
    assert not x.requires_grad
    y = leaf([1.0, 2.0]) * 2
    assert y.requires_grad_(True) is y  # allowed on a non-leaf
    msg = ("you can only change requires_grad flags of leaf variables. If you want to use a computed variable "
           "in a subgraph that doesn't require differentiation use var_no_grad = var.detach().")
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        y.requires_grad_(False)
    with pytest.raises(RuntimeError, match="^" + re.escape(msg) + "$"):
        y.requires_grad = False
    # setting the flag to True on a non-leaf raises too (only requires_grad_(True) is a no-op there)
    with pytest.raises(RuntimeError, match="^you can only change requires_grad flags of leaf variables.$"):
        y.requires_grad = True
    with pytest.raises(RuntimeError, match="^you can only change requires_grad flags of leaf variables.$"):
        y[:1].requires_grad = True
    assert y.requires_grad and y.grad_fn.name() == "MulBackward0"
    with pytest.raises(RuntimeError, match="^requires_grad must be a bool$"):
        x.requires_grad = 1
    i = tgrad.ones(2, dtype=tgrad.int64)
    i.requires_grad = False
    with tgrad.no_grad():
        w = leaf([1.0]) * 2
    w.requires_grad = True                      # made under no_grad: a leaf
    assert w.requires_grad and w.is_leaf
    # PyTorch's three wordings: requires_grad_(), the attribute, and factories / Parameter / Variable
    with pytest.raises(RuntimeError, match="^only Tensors of floating point dtype can require gradients$"):
        tgrad.ones(2, dtype=tgrad.int64).requires_grad_()
    t = tgrad.tensor([1, 2])
    with pytest.raises(RuntimeError, match="^only Tensors of floating point and complex dtype can require gradients$"):
        t.requires_grad = True
    assert not t.requires_grad
    factory_msg = "^Only Tensors of floating point and complex dtype can require gradients$"
    for make in (lambda: tgrad.tensor([1, 2], requires_grad=True),
                 lambda: tgrad.zeros(2, dtype=tgrad.int64, requires_grad=True),
                 lambda: tgrad.nn.Parameter(tgrad.tensor([1, 2])), lambda: tgrad.nn.Parameter(tgrad.tensor([True])),
                 lambda: tgrad.autograd.Variable(tgrad.tensor([1, 2]), requires_grad=True)):
        with pytest.raises(RuntimeError, match=factory_msg):
            make()
    assert tgrad.nn.Parameter(tgrad.tensor([1, 2]), requires_grad=False).tolist() == [1, 2]


def test_saved_values_exposed():
    x = leaf([1.0, 2.0, 3.0])
    y = x.pow(2)
    assert y.grad_fn._saved_self is x and y.grad_fn._saved_exponent == 2
    e = x.exp()
    r = e.grad_fn._saved_result
    assert r is not e and r.equal(e) and r.data_ptr() == e.data_ptr()
    m = x * tgrad.tensor([4.0, 5.0, 6.0])
    np.testing.assert_array_equal(_np(m.grad_fn._saved_other), [4, 5, 6])
    with pytest.raises(AttributeError, match="'MulBackward0' object has no attribute '_saved_foo'"):
        m.grad_fn._saved_foo


def test_saved_input_geometry_exposed():
    a = tgrad.ones(4, 6, requires_grad=True)[:, ::2]        # sizes (4, 3), strides (6, 2)
    b = tgrad.ones(3, 5, requires_grad=True)
    for t in (a.sum(), a.sum(0), a.mean(), a.mean(1), a.expand(2, 4, 3), a.reshape(12)):
        assert t.grad_fn._saved_self_sym_sizes == tuple(a.shape) == (4, 3), t.grad_fn.name()
    assert a.mean().grad_fn._saved_self_sym_numel == a.numel() == 12
    g = a.mm(b).grad_fn
    assert (g._saved_self_sym_sizes, g._saved_self_sym_strides) == (tuple(a.shape), a.stride()) == ((4, 3), (6, 2))
    assert (g._saved_mat2_sym_sizes, g._saved_mat2_sym_strides) == (tuple(b.shape), b.stride())
    assert tgrad.ones(1, 3, requires_grad=True).squeeze(0).grad_fn._saved_self_sym_sizes == (1, 3)
    with pytest.raises(AttributeError, match="'AddBackward0' object has no attribute '_saved_self_sym_sizes'"):
        (a + 1).grad_fn._saved_self_sym_sizes


# ------------------------------------------------------------------ nodes called by hand (seed 003)
def test_nodes_are_callable_seed003_walk():
    tgrad.manual_seed(6)
    x = tgrad.randn((4, 4), requires_grad=True)
    y = tgrad.randn((4, 4), requires_grad=True)
    l = (x * y).sum()
    back_sum = l.grad_fn
    dz = back_sum(tgrad.tensor(1.))
    assert tuple(dz.shape) == (4, 4) and not dz.requires_grad
    back_mul = back_sum.next_functions[0][0]
    dx, dy = back_mul(dz)
    back_mul.next_functions[0][0](dx)
    back_mul.next_functions[1][0](dy)
    # grad mode is on and dx = dz * y requires grad: AccumulateGrad keeps the graph (CopyBackwards)
    assert x.grad.grad_fn.name() == "CopyBackwards" and repr(x.grad).endswith("grad_fn=<CopyBackwards>)")
    np.testing.assert_array_equal(_np(x.grad), _np(y))
    np.testing.assert_array_equal(_np(y.grad), _np(x))
    x2, y2 = x.detach().requires_grad_(), y.detach().requires_grad_()
    (x2 * y2).sum().backward()
    np.testing.assert_array_equal(_np(x2.grad), _np(x.grad))
    assert x2.grad.grad_fn is None


def test_node_call_returns_tensor_or_tuple():
    x = leaf([1.0, 2.0])
    y = x.exp()
    g = y.grad_fn(tgrad.ones(2))
    np.testing.assert_allclose(_np(g), np.exp([1.0, 2.0]), rtol=1e-6)
    with tgrad.no_grad():
        assert (x * x).grad_fn is None


# ------------------------------------------------------------------ engine
def test_chain_of_5000_ops_is_iterative():
    x = leaf([1.0, 2.0])
    y = x
    for _ in range(5000):
        y = y * 1.0001
    y.sum().backward()
    expected = np.float32(1.0)
    for _ in range(5000):
        expected = np.float32(expected * np.float32(1.0001))
    np.testing.assert_array_equal(_np(x.grad), [expected, expected])


def test_reused_tensor_accumulates():
    x = leaf([2.0, 3.0])
    y = x * x + x * 3 + x        # 2x + 3 + 1
    y.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), [8.0, 10.0])
    a = leaf([1.0])
    b = a * 2
    c = b * b * b                # 8 a^3 -> 24 a^2
    c.backward()
    np.testing.assert_array_equal(_np(a.grad), [24.0])


def test_broadcast_gradient_reduced_to_input_shape():
    x = leaf([[1.0], [2.0], [3.0]])          # (3, 1)
    b = leaf([10.0, 20.0])                   # (2,)
    s = leaf(2.0)                            # ()
    y = (x * b + s) * tgrad.ones(4, 3, 2)
    y.sum().backward()
    assert tuple(x.grad.shape) == (3, 1) and tuple(b.grad.shape) == (2,) and tuple(s.grad.shape) == ()
    np.testing.assert_array_equal(_np(x.grad), [[120.0]] * 3)
    np.testing.assert_array_equal(_np(b.grad), [24.0, 24.0])
    np.testing.assert_array_equal(_np(s.grad), 24.0)


def test_backward_gradient_argument_and_errors():
    x = leaf([[1., 2., 3.], [4., 5., 6.]])
    y = tgrad.add(tgrad.pow(x, 2), x)
    y.backward(tgrad.ones(2, 3))
    np.testing.assert_array_equal(_np(x.grad), [[3, 5, 7], [9, 11, 13]])
    with pytest.raises(RuntimeError, match="^grad can be implicitly created only for scalar outputs$"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match=re.escape(
            "Mismatch in shape: grad_output[0] has a shape of tgrad.Size([3]) and output[0] has a shape of "
            "tgrad.Size([2, 3]).")):
        (x * 2).backward(tgrad.ones(3))
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        tgrad.ones(2).sum().backward()
    x.grad = None
    (x * 2).backward(tgrad.ones(2, 3, dtype=tgrad.float64))   # cast to the output's dtype
    assert x.grad.dtype is tgrad.float32


def test_backward_inputs_argument():
    x, y = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    w = x * 2
    (w * y).sum().backward(inputs=[x])
    np.testing.assert_array_equal(_np(x.grad), [6.0, 8.0])
    assert y.grad is None
    q = x * 2
    (q * q).sum().backward(inputs=[q])      # a non-leaf input gets .grad too
    np.testing.assert_array_equal(_np(q.grad), [4.0, 8.0])
    np.testing.assert_array_equal(_np(x.grad), [6.0, 8.0])
    with pytest.raises(RuntimeError, match=re.escape("`inputs` argument to `backward()` cannot be empty.")):
        (x * 2).sum().backward(inputs=[])


def test_autograd_backward_function():
    x = leaf([1.0, 2.0])
    tgrad.autograd.backward([(x * 2).sum(), (x * 3).sum()])
    np.testing.assert_array_equal(_np(x.grad), [5.0, 5.0])
    tgrad.autograd.backward([x * 2, (x * 3).sum()], [tgrad.tensor([1.0, 10.0]), None])
    np.testing.assert_array_equal(_np(x.grad), [10.0, 28.0])


def test_autograd_grad():
    x, b = leaf(2.0), leaf(1.0)
    y = x ** 3 + b
    gx, gb = tgrad.autograd.grad(y, inputs=[x, b])
    assert gx.item() == 12.0 and gb.item() == 1.0
    assert x.grad is None and b.grad is None
    a = leaf([[2.0, 3.0], [4.0, 5.0]])
    c = leaf([[1.0, 2.0], [3.0, 4.0]])
    z = a ** 2 + a * c + c ** 2
    ga, gc = tgrad.autograd.grad(z, inputs=[a, c], grad_outputs=tgrad.ones_like(z))
    np.testing.assert_array_equal(_np(ga), [[5, 8], [11, 14]])
    np.testing.assert_array_equal(_np(gc), [[4, 7], [10, 13]])


def test_autograd_grad_unused_and_materialize():
    x, u = leaf([1.0, 2.0]), leaf([5.0])
    with pytest.raises(RuntimeError, match=re.escape(
            "The differentiated Tensor at index 1 appears to not have been used in the graph. Set "
            "allow_unused=True if this is the desired behavior.")):
        tgrad.autograd.grad((x * 2).sum(), [x, u])
    gx, gu = tgrad.autograd.grad((x * 2).sum(), [x, u], allow_unused=True)
    assert gu is None and _np(gx).tolist() == [2.0, 2.0]
    gx, gu = tgrad.autograd.grad((x * 2).sum(), [x, u], materialize_grads=True)
    assert _np(gu).tolist() == [0.0]
    with pytest.raises(ValueError, match=re.escape(
            "Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
            "allow_unused=False.")):
        tgrad.autograd.grad((x * 2).sum(), [x], allow_unused=False, materialize_grads=True)
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors does not require grad"):
        tgrad.autograd.grad((x * 2).sum(), [tgrad.ones(2)])


def test_autograd_grad_of_intermediate_stops_there():
    x = leaf([1.0, 2.0])
    h = x * 3
    calls = []
    h.grad_fn.register_prehook(lambda go: calls.append(1))
    y = (h * h).sum()
    (gh,) = tgrad.autograd.grad(y, h)
    np.testing.assert_array_equal(_np(gh), [6.0, 12.0])
    assert calls == [] and x.grad is None
    h.sum().backward()               # the part below h neither ran nor was freed
    np.testing.assert_array_equal(_np(x.grad), [3.0, 3.0])


def test_node_metadata_hooks_and_attributes_are_per_node():
    """Nodes share read-only class defaults until something is set on one of them."""
    x = leaf([1.0, 2.0])
    a, b = x * 2, x * 3
    a.grad_fn.metadata["k"] = 1
    assert a.grad_fn.metadata == {"k": 1} and b.grad_fn.metadata == {}
    calls = []
    a.grad_fn.register_hook(lambda gi, go: calls.append("a"))
    a.grad_fn.register_prehook(lambda go: calls.append("a pre"))
    (a + b).sum().backward()
    assert calls == ["a pre", "a"]
    assert b.grad_fn._hooks == {} and b.grad_fn._pre_hooks == {}
    with pytest.raises(TypeError):
        b.grad_fn._hooks[0] = None       # the shared default cannot be written through
    np.testing.assert_array_equal(_np(x.grad), [5.0, 5.0])


# ------------------------------------------------------------------ retain_graph and memory
FREED = re.escape(
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if "
    "you need to access saved tensors after calling backward.")


def test_second_backward_raises_and_retain_graph_allows_it():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_array_equal(_np(x.grad), [4.0, 8.0])
    with pytest.raises(RuntimeError, match=FREED):
        y.backward()
    e = x.exp()
    e.sum().backward()
    with pytest.raises(RuntimeError, match=FREED):
        e.grad_fn._saved_result


def test_second_backward_through_nodes_that_saved_nothing():
    # only unpacking a freed saved tensor fails (PyTorch): AddBackward0 / SumBackward0 save no tensor
    x = leaf([1.0, 1.0, 1.0])
    z = (x + 2).sum()
    z.backward()
    z.backward()
    np.testing.assert_array_equal(_np(x.grad), [2.0, 2.0, 2.0])
    y = x.exp()
    z = (y + 2).sum()                  # the nodes above exp run again, then exp's saved result is gone
    x.grad = None
    z.backward()
    with pytest.raises(RuntimeError, match=FREED):
        z.backward()
    np.testing.assert_allclose(_np(x.grad), np.exp([1.0, 1.0, 1.0]), rtol=1e-6)


def test_saved_tensors_memory_released_after_backward():
    x = tgrad.randn(64, 64, requires_grad=True)
    w = tgrad.randn(64, 64, requires_grad=True)
    gc.collect()
    base = tgrad.memory_allocated()
    loss = ((x * w).exp() * (x + w)).mean()
    assert tgrad.memory_allocated() - base >= 2 * 64 * 64 * 4   # exp and x + w, saved by the product
    loss.backward()
    grads = x.grad.nbytes + w.grad.nbytes
    assert tgrad.memory_allocated() - base <= grads + 512       # + the 0-dim loss, still alive
    del loss
    assert tgrad.memory_allocated() - base == grads
    x.grad = w.grad = None
    assert tgrad.memory_allocated() == base


def test_retained_graph_keeps_memory_until_released():
    x = tgrad.randn(32, 32, requires_grad=True)
    gc.collect()
    base = tgrad.memory_allocated()
    loss = (x.exp() * x).sum()
    loss.backward(retain_graph=True)
    assert tgrad.memory_allocated() - base >= x.grad.nbytes + 32 * 32 * 4     # .grad and the saved exp
    loss.backward()
    del loss
    assert tgrad.memory_allocated() - base == x.grad.nbytes


# ------------------------------------------------------------------ .grad semantics
def test_grad_accumulates_and_zero():
    x = Variable(tgrad.ones(1, 2), requires_grad=True)
    for k in (1, 2, 3):
        x.sum().backward()
        np.testing.assert_array_equal(_np(x.grad), [[k, k]])
    x.grad.zero_()
    x.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), [[1, 1]])


def test_retain_grad_for_non_leaf():
    x = leaf([1.0, 2.0])
    q = x * 2
    q.retain_grad()
    assert q.retains_grad and not x.retains_grad
    (q * q).sum().backward(retain_graph=True)
    np.testing.assert_array_equal(_np(q.grad), [4.0, 8.0])
    (q * 3).sum().backward()
    np.testing.assert_array_equal(_np(q.grad), [7.0, 11.0])
    x.retain_grad()                       # no-op on a leaf
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        tgrad.ones(2).retain_grad()


def test_retain_grad_follows_in_place():
    x = leaf([1.0, 2.0])
    q = x * 1
    q.retain_grad()
    q.mul_(3)
    (q * q).sum().backward()
    np.testing.assert_array_equal(_np(q.grad), [6.0, 12.0])   # gradient w.r.t. q after the in-place op


NON_LEAF_WARNING = re.escape(
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be "
    "populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf "
    "Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure "
    "you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more information.")


def test_non_leaf_grad_warns():
    x = leaf([1.0])
    y = x * 2
    with pytest.warns(UserWarning, match=NON_LEAF_WARNING):
        assert y.grad is None
    y.retain_grad()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert y.grad is None and x.grad is None


def test_grad_assignment_checks():
    x = leaf([1.0, 2.0])
    x.grad = tgrad.tensor([3.0, 4.0])
    np.testing.assert_array_equal(_np(x.grad), [3.0, 4.0])
    with pytest.raises(RuntimeError, match=re.escape(
            "attempting to assign a gradient of size '[3]' to a tensor of size '[2]'. Please ensure that the "
            "gradient and the tensor are the same size")):
        x.grad = tgrad.ones(3)
    with pytest.raises(RuntimeError, match=re.escape(
            "attempting to assign a gradient with dtype 'double' to a tensor with grad_dtype 'Float'.")):
        x.grad = tgrad.ones(2, dtype=tgrad.float64)
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None but got grad of type int"):
        x.grad = 3
    np.testing.assert_array_equal(_np(x.grad), [3.0, 4.0])     # a rejected assignment changes nothing
    x.grad = None
    assert x.grad is None
    c = tgrad.ones(2)
    c.grad = tgrad.ones(2)              # any tensor may hold a .grad
    del c.grad
    assert c.grad is None


# ------------------------------------------------------------------ detach, .data, Variable
def test_detach_shares_storage_and_version():
    x = leaf([1.0, 2.0])
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    assert d.data_ptr() == y.data_ptr()
    d.add_(1)
    assert y._version_counter is d._version_counter and _np(y).tolist() == [3.0, 5.0]


def test_detach_in_place():
    x = leaf([1.0, 2.0])
    y = x * 2
    assert y.detach_() is y and y.grad_fn is None and not y.requires_grad and y.is_leaf
    v = (x * 2)[0]
    with pytest.raises(RuntimeError, match=re.escape("Can't detach views in-place. Use detach() instead.")):
        v.detach_()


def test_data_read_and_assign_seed001():
    x = Variable(tgrad.ones(1, 2), requires_grad=True)
    d = x.data
    assert not d.requires_grad and d.data_ptr() == x.data_ptr()
    ident = id(x)
    x.data = x.data + 1
    assert id(x) == ident and x.requires_grad and x.is_leaf
    assert neutral_repr(x.sum()) == "tensor(4., grad_fn=<SumBackward0>)"
    x.data = tgrad.zeros(3)
    assert tuple(x.shape) == (3,) and x.requires_grad


def test_data_has_its_own_version_counter():
    # changes through .data are not tracked: the saved sigmoid output is zeroed without an error (PyTorch)
    a = leaf([1.0, 2.0, 3.0])
    out = a.sigmoid()
    d = out.data
    d.zero_()
    assert d._version != out._version
    out.sum().backward()
    np.testing.assert_array_equal(_np(a.grad), [0.0, 0.0, 0.0])   # r * (1 - r) with r = 0
    y = a * a
    a.data.add_(1)                     # the saved a changed, unnoticed: the gradient uses the new values
    y.sum().backward()
    np.testing.assert_array_equal(_np(a.grad), [4.0, 6.0, 8.0])


def test_variable_legacy_alias():
    t = tgrad.ones(2)
    v = Variable(t, requires_grad=True)
    assert v is not t and v.requires_grad and v.is_leaf and not t.requires_grad
    assert v.data_ptr() == t.data_ptr() and isinstance(v, tgrad.Tensor) and isinstance(t, Variable)
    assert not Variable(t).requires_grad
    assert tgrad.autograd.Variable is Variable
    with pytest.raises(TypeError):
        Variable([1.0, 2.0])


def test_integer_and_bool_results_never_require_grad():
    """As in PyTorch: ``x.int()``, ``x.long()``, ``x.bool()`` of a tensor that requires grad are leaves without a
    grad_fn (a cast to a float dtype keeps its ToCopyBackward0)."""
    x = tgrad.tensor([1.5, -2.0, 0.0], requires_grad=True)
    for y in (x.int(), x.long(), x.bool(), x.to(tgrad.int32)):
        assert not y.requires_grad and y.grad_fn is None and y.is_leaf
    d = x.double()
    assert d.requires_grad and type(d.grad_fn).__name__ == "ToCopyBackward0"
    (d * x.int()).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [1.0, -2.0, 0.0])
