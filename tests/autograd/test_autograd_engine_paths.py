"""Engine paths reshaped for host cost (issue #6, backward): values and semantics stay PyTorch's."""
import numpy as np
import pytest

import tgrad
from tgrad.ops import host_full


def _np(t):
    return t.detach().cpu().numpy()


def test_host_full_broadcast_reads_one_element_and_keeps_the_sign_of_zero():
    t = host_full((4, 3), 0.25, tgrad.float32, tgrad.device("cpu"), broadcast=True)
    assert tuple(t.shape) == (4, 3) and t.stride() == (0, 0)
    np.testing.assert_array_equal(_np(t), np.full((4, 3), 0.25, np.float32))
    neg = host_full((2,), -0.0, tgrad.float64, tgrad.device("cpu"))
    pos = host_full((2,), 0.0, tgrad.float64, tgrad.device("cpu"))
    assert list(np.signbit(_np(neg))) == [True, True] and list(np.signbit(_np(pos))) == [False, False]


def test_a_saved_input_modified_in_place_still_fails_backward():
    a = tgrad.tensor([1.0, 2.0], requires_grad=True)
    x = tgrad.tensor([3.0, 4.0])
    y = a * x
    x.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_saved_tensors_hooks_still_unpack_saved_inputs():
    seen = []
    a = tgrad.tensor([1.0, 2.0], requires_grad=True)
    with tgrad.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: seen.append(1) or t):
        y = a * a
    y.sum().backward()
    assert len(seen) == 2
    np.testing.assert_array_equal(_np(a.grad), [2.0, 4.0])


def test_rule_results_are_dropped_summed_back_and_cast_per_input():
    a = tgrad.tensor([[1.0], [2.0]], dtype=tgrad.float64, requires_grad=True)    # broadcast, float64
    b = tgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)                         # float32
    c = tgrad.tensor([5.0, 6.0, 7.0])                                              # no grad
    out = (a + b) * c
    out.sum().backward()
    assert a.grad.dtype is tgrad.float64 and tuple(a.grad.shape) == (2, 1)
    np.testing.assert_array_equal(_np(a.grad), [[18.0], [18.0]])
    assert b.grad.dtype is tgrad.float32
    np.testing.assert_array_equal(_np(b.grad), [10.0, 12.0, 14.0])
    assert c.grad is None
    ga, = tgrad.autograd.grad((a * 2).sum(), a)
    np.testing.assert_array_equal(_np(ga), [[2.0], [2.0]])


def test_a_root_reached_from_another_root_waits_for_it():
    a = tgrad.tensor([1.0, 2.0], requires_grad=True)
    y = a * 3
    z = (y * y).sum()
    tgrad.autograd.backward([z, y], [None, tgrad.ones(2)])
    np.testing.assert_array_equal(_np(a.grad), 2 * 9 * _np(a) + 3)


def test_zero_grad_sets_grads_to_none_or_zero():
    p = tgrad.tensor([1.0, 2.0], requires_grad=True)
    opt = tgrad.optim.SGD([p], lr=0.1)
    (p * p).sum().backward()
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(_np(p.grad), [0.0, 0.0])
    opt.zero_grad()
    assert p.grad is None
