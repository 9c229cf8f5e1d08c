"""Hooks: tensor hooks, post-accumulate hooks, node hooks and pre-hooks, saved_tensors_hooks / save_on_cpu."""
import re

import numpy as np
import pytest

import tgrad


def _np(t):
    return t.detach()._host_copy()


def leaf(values):
    return tgrad.tensor(values, requires_grad=True)


def test_tensor_hook_replaces_gradient_and_handle_removes_it():
    x = leaf([1.0, 2.0])
    y = x * 3
    h = y.register_hook(lambda g: g * 10)
    y.sum().backward(retain_graph=True)
    np.testing.assert_array_equal(_np(x.grad), [30.0, 30.0])
    h.remove()
    y.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), [33.0, 33.0])


def test_tensor_hooks_run_in_order_and_observe():
    x = leaf([1.0, 2.0])
    y = x * 1
    seen = []
    y.register_hook(lambda g: seen.append(_np(g).tolist()))
    y.register_hook(lambda g: g + 1)
    y.register_hook(lambda g: g * 10)
    y.sum().backward()
    assert seen == [[1.0, 1.0]]
    np.testing.assert_array_equal(_np(x.grad), [20.0, 20.0])


def test_hook_on_a_non_leaf_outlives_the_tensor():
    x = leaf([1.0, 2.0])

    def f():
        y = x * 3
        y.register_hook(lambda g: g * 100)
        return y.sum()
    f().backward()
    np.testing.assert_array_equal(_np(x.grad), [300.0, 300.0])


def test_hooks_before_an_inplace_op_see_the_old_gradient():
    x = leaf([1.0, 2.0])
    y = x * 1
    seen = {}
    y.register_hook(lambda g: seen.update(before=_np(g).tolist()))
    y.mul_(2)
    y.register_hook(lambda g: seen.update(after=_np(g).tolist()))
    y.sum().backward()
    assert seen == {"before": [2.0, 2.0], "after": [1.0, 1.0]}


def test_leaf_hook_runs_before_accumulation():
    x = leaf([1.0, 2.0])
    h = x.register_hook(lambda g: g * 0 + 7)
    (x * 3).sum().backward()
    np.testing.assert_array_equal(_np(x.grad), [7.0, 7.0])
    h.remove()
    (x * 3).sum().backward()
    np.testing.assert_array_equal(_np(x.grad), [10.0, 10.0])


def test_autograd_grad_runs_the_hooks_of_the_inputs_asked_about():
    x = leaf([1.0, 2.0, 3.0])
    x.register_hook(lambda g: g * 10)
    (g,) = tgrad.autograd.grad((x * 1).sum(), x)
    np.testing.assert_array_equal(_np(g), [10.0, 10.0, 10.0])
    assert x.grad is None
    calls = []
    y = x * 2                          # a non-leaf input, with retain_grad: hooks, then retain, then capture
    y.register_hook(lambda g: calls.append(1) or g * 3)
    y.retain_grad()
    (g,) = tgrad.autograd.grad((y * 1).sum(), y)
    np.testing.assert_array_equal(_np(g), [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(_np(y.grad), [3.0, 3.0, 3.0])
    assert calls == [1]
    # y's node runs on the way to x: it captures first and runs its hooks once, as PyTorch's engine does
    y = x * 2
    y.register_hook(lambda g: calls.append(2) or g * 3)
    gy, gx = tgrad.autograd.grad((y * 1).sum(), [y, x])
    np.testing.assert_array_equal(_np(gy), [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(_np(gx), [60.0, 60.0, 60.0])
    assert calls == [1, 2]
    # the hooks of a tensor not asked about do not run
    w = leaf([1.0, 1.0, 1.0])
    w.register_hook(lambda g: calls.append(3))
    tgrad.autograd.grad((x * w).sum(), x)
    assert calls == [1, 2]


def test_backward_inputs_runs_the_hooks_of_non_leaf_inputs_once():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.register_hook(lambda g: g * 10)
    (y * 1).sum().backward(inputs=[y])
    np.testing.assert_array_equal(_np(y.grad), [10.0, 10.0])
    assert y.retains_grad and x.grad is None
    y = x * 2
    y.register_hook(lambda g: g * 10)
    y.retain_grad()
    (y * 1).sum().backward(inputs=[y, x])           # retained once, not also added as the captured gradient
    np.testing.assert_array_equal(_np(y.grad), [10.0, 10.0])
    np.testing.assert_array_equal(_np(x.grad), [20.0, 20.0])


def test_hook_changing_the_size_raises():
    x = leaf([1.0, 2.0])
    y = x * 1

    def bad(g):
        return tgrad.ones(3)
    y.register_hook(bad)
    with pytest.raises(RuntimeError, match=re.escape("hook 'bad' has changed the size of value")):
        y.sum().backward()


def test_register_hook_needs_requires_grad():
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        tgrad.ones(2).register_hook(lambda g: g)


def test_post_accumulate_grad_hook():
    x = leaf([1.0, 2.0])
    calls = []
    h = x.register_post_accumulate_grad_hook(lambda t: calls.append(_np(t.grad).tolist()))
    (x * 3).sum().backward()
    (x * 3).sum().backward()
    h.remove()
    (x * 3).sum().backward()
    assert calls == [[3.0, 3.0], [6.0, 6.0]]
    np.testing.assert_array_equal(_np(x.grad), [9.0, 9.0])
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)


def test_node_prehook_and_hook():
    x = leaf([1.0, 2.0])
    n = (x * 2).sum()
    seen = []
    n.grad_fn.register_prehook(lambda go: (go[0] * 5,))
    h = n.grad_fn.register_hook(lambda gi, go: seen.append((_np(gi[0]).tolist(), _np(go[0]).tolist())))
    n.grad_fn.register_hook(lambda gi, go: (gi[0] + 1,))
    n.backward(retain_graph=True)
    assert seen == [([5.0, 5.0], 5.0)]
    np.testing.assert_array_equal(_np(x.grad), [12.0, 12.0])
    h.remove()
    n.backward()
    assert len(seen) == 1
    np.testing.assert_array_equal(_np(x.grad), [24.0, 24.0])


def test_saved_tensors_hooks_pack_and_unpack():
    x = leaf([1.0, 2.0])
    packed = []

    def pack(t):
        packed.append(tuple(t.shape))
        return t * 1

    def unpack(t):
        return t * 2
    with tgrad.autograd.graph.saved_tensors_hooks(pack, unpack):
        z = x.exp()
        w = x * x
    assert packed == [(2,), (2,), (2,)]
    z.sum().backward()
    np.testing.assert_allclose(_np(x.grad), 2 * np.exp([1.0, 2.0]), rtol=1e-6)
    x.grad = None
    w.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), [4.0, 8.0])
    v = x * 3                                # outside the block: saved as usual
    assert v.grad_fn._saved_self is x


def test_save_on_cpu_gives_the_same_gradients():
    x = leaf([0.5, 1.5])
    with tgrad.autograd.graph.save_on_cpu():
        z = (x * x).exp()
    z.sum().backward()
    expected = 2 * np.array([0.5, 1.5]) * np.exp(np.array([0.5, 1.5]) ** 2)
    np.testing.assert_allclose(_np(x.grad), expected, rtol=1e-6)
    assert tgrad.autograd.graph.Node is tgrad.autograd.Node


def test_disable_saved_tensors_hooks():
    graph = tgrad.autograd.graph
    with graph.disable_saved_tensors_hooks("saved tensors hooks are off here"):
        with pytest.raises(RuntimeError, match="saved tensors hooks are off here"):
            with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        pass


def test_ready_leaves_accumulate_before_other_ready_nodes():
    """PyTorch's ready queue runs AccumulateGrad nodes (sequence number 2**64 - 1) before any other ready
    node, whatever their creation order (checked against torch 2.13)."""
    w = tgrad.ones(2, requires_grad=True)
    b = tgrad.ones(2, requires_grad=True)
    z = w * 2       # w's AccumulateGrad exists before b's and before exp's node
    order = []
    w.register_post_accumulate_grad_hook(lambda p: order.append("acc w"))
    b.register_post_accumulate_grad_hook(lambda p: order.append("acc b"))
    d = b.exp()
    d.register_hook(lambda g: order.append("d hook"))
    (w + d).sum().backward()
    assert order == ["acc w", "d hook", "acc b"]
    assert z.grad_fn.next_functions[0][0]._sequence_nr() == 2 ** 64 - 1
    assert d.grad_fn._sequence_nr() > z.grad_fn._sequence_nr()     # other nodes: creation order
    np.testing.assert_allclose(b.grad.cpu().numpy(), np.exp(np.ones(2)))
