"""tgrad.utils.checkpoint: recomputed activations give the plain run's gradients (dropout included)."""
import warnings

import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
from tgrad.utils.checkpoint import checkpoint, checkpoint_sequential


def _net():
    tgrad.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Dropout(0.3), nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 3))


def _grads(net, x, run):
    tgrad.manual_seed(5)
    out = run(net, x)
    (out * out).sum().backward()
    return [p.grad.cpu().numpy() for p in net.parameters()] + [x.grad.cpu().numpy()], out.detach().cpu().numpy()


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_gives_the_plain_gradients_and_recomputes_once(reentrant):
    calls = []
    inner = _net()

    def fn(x):
        calls.append(1)
        return inner(x)

    x = tgrad.randn(4, 6, requires_grad=True)
    want, want_out = _grads(inner, x, lambda n, x: n(x))
    inner.zero_grad(); x.grad = None
    got, got_out = _grads(inner, x, lambda n, x: checkpoint(fn, x, use_reentrant=reentrant))
    assert len(calls) == 2                                 # forward, then once more in backward
    np.testing.assert_array_equal(got_out, want_out)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_non_reentrant_keeps_no_intermediates():
    net = _net()
    x = tgrad.randn(4, 6, requires_grad=True)
    packed = []
    with tgrad.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        checkpoint(net, x, use_reentrant=False)
    assert packed == []                                    # the checkpoint's own hooks were innermost


def test_checkpoint_sequential_matches_the_plain_run():
    net = _net()
    x = tgrad.randn(4, 6, requires_grad=True)
    want, _ = _grads(net, x, lambda n, x: n(x))
    net.zero_grad(); x.grad = None
    got, _ = _grads(net, x, lambda n, x: checkpoint_sequential(n, 3, x, use_reentrant=False))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_argument_errors_and_warning():
    net = _net()
    x = tgrad.randn(2, 6, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(net, x)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
        checkpoint(net, x, use_reentrant=True, foo=1)
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(net, x, use_reentrant=True, debug=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        checkpoint(net, x, use_reentrant=False)
