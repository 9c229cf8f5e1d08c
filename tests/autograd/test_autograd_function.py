"""Custom autograd.Function: forward/backward/apply, ctx API, validation of returned gradients."""
import re

import numpy as np
import pytest

import tgrad
from tgrad.testing import neutral_repr
from tgrad.autograd import Function
from tgrad.autograd.function import once_differentiable  # noqa: F401  (import path PyTorch users write)


FLOAT_T = tgrad.ones(1).type()    # "tgrad.FloatTensor" or "tgrad.cuda.FloatTensor" (--device)


def _np(t):
    return t.detach()._host_copy()


class Exp(Function):
    """Seed 002's example."""

    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        result, = ctx.saved_tensors
        return grad_output * result


def test_exp_function_seed002():
    x = tgrad.tensor([0.5, 1.0], requires_grad=True)
    y = Exp.apply(x)
    assert type(y.grad_fn).__name__ == "ExpBackward" and y.grad_fn.name() == "ExpBackward"
    assert neutral_repr(y) == "tensor([1.6487, 2.7183], grad_fn=<ExpBackward>)"
    assert y.grad_fn.next_functions[0][0].variable is x
    y.sum().backward()
    np.testing.assert_allclose(_np(x.grad), np.exp([0.5, 1.0]), rtol=1e-6)
    # the saved output carries this node as grad_fn: double backward goes through it again
    xd = tgrad.tensor([0.5, 1.0], dtype=tgrad.float64, requires_grad=True)
    (g,) = tgrad.autograd.grad(Exp.apply(xd).sum(), xd, create_graph=True)
    (gg,) = tgrad.autograd.grad(g.sum(), xd)
    np.testing.assert_allclose(_np(gg), np.exp([0.5, 1.0]), rtol=1e-12)
    assert tgrad.autograd.gradcheck(Exp.apply, (xd,)) and tgrad.autograd.gradgradcheck(Exp.apply, (xd,))


def test_forward_runs_without_recording_and_no_grad_gives_plain_tensors():
    class Probe(Function):
        @staticmethod
        def forward(ctx, i):
            assert not tgrad.is_grad_enabled()
            out = i * 2
            assert out.grad_fn is None
            return out

        @staticmethod
        def backward(ctx, g):
            return g * 2
    x = tgrad.ones(2, requires_grad=True)
    assert Probe.apply(x).grad_fn.name() == "ProbeBackward"
    with tgrad.no_grad():
        o = Probe.apply(x)
    assert not o.requires_grad and o.grad_fn is None
    assert Probe.apply(tgrad.ones(2)).grad_fn is None


def test_needs_input_grad_and_non_tensor_arguments():
    class Scale(Function):
        @staticmethod
        def forward(ctx, k, i, j):
            ctx.k = k
            ctx.needs = ctx.needs_input_grad
            return i * k + j

        @staticmethod
        def backward(ctx, g):
            return None, g * ctx.k, g
    x = tgrad.ones(2, requires_grad=True)
    y = Scale.apply(3, x, tgrad.ones(2))
    assert y.grad_fn.needs == (False, True, False)
    assert len(y.grad_fn.next_functions) == 2 and y.grad_fn.next_functions[1] == (None, 0)
    y.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), [3.0, 3.0])


def test_setup_context_style():
    class Mul(Function):
        @staticmethod
        def forward(i, k):
            return i * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            i, k = inputs
            ctx.k = k
            ctx.save_for_backward(i)

        @staticmethod
        def backward(ctx, g):
            i, = ctx.saved_tensors
            return g * ctx.k * i, None
    x = tgrad.tensor([1.0, 2.0], requires_grad=True)
    Mul.apply(x, 5).sum().backward()
    np.testing.assert_array_equal(_np(x.grad), [5.0, 10.0])


def test_saved_tensors_are_version_checked_and_freed():
    class Keep(Function):
        @staticmethod
        def forward(ctx, i):
            ctx.save_for_backward(i, None)
            return i * 2

        @staticmethod
        def backward(ctx, g):
            i, nothing = ctx.saved_tensors
            assert nothing is None
            return g * 2
    x = tgrad.ones(2, requires_grad=True)
    y = x * 1
    o = Keep.apply(y)
    assert o.grad_fn.saved_tensors[0] is y
    y.add_(1)
    with pytest.raises(RuntimeError, match=re.escape(
            f"[{FLOAT_T} [2]], which is output 0 of Add, is at version 1; expected version 0 instead.")):
        o.sum().backward()
    o = Keep.apply(x * 1)
    o.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        o.grad_fn.saved_tensors
    with pytest.raises(TypeError, match="save_for_backward can only save variables"):
        Keep._backward_cls().save_for_backward(3)


def test_second_backward_fails_only_when_saved_tensors_are_unpacked():
    class Double(Function):
        @staticmethod
        def forward(ctx, i):
            ctx.save_for_backward(i)
            return i * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2
    x = tgrad.ones(3, requires_grad=True)
    z = Double.apply(x).sum()
    z.backward()
    z.backward()                       # saved, never unpacked: runs again (PyTorch)
    np.testing.assert_array_equal(_np(x.grad), [4.0, 4.0, 4.0])
    z = Exp.apply(x).sum()             # unpacks its saved result
    z.backward()
    with pytest.raises(RuntimeError, match="^Trying to backward through the graph a second time"):
        z.backward()


def test_mark_dirty():
    class Double_(Function):
        @staticmethod
        def forward(ctx, i):
            i.mul_(2)
            ctx.mark_dirty(i)
            return i

        @staticmethod
        def backward(ctx, g):
            return g * 2
    x = tgrad.ones(2, requires_grad=True)
    y = x * 3
    z = Double_.apply(y)
    assert z is y and y.grad_fn.name() == "Double_Backward" and y._version == 1
    assert y.grad_fn.next_functions[0][0].name() == "MulBackward0"
    z.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), [6.0, 6.0])
    np.testing.assert_array_equal(_np(y), [6.0, 6.0])
    with pytest.raises(RuntimeError, match=re.escape(
            "a leaf Variable that requires grad has been used in an in-place operation.")):
        Double_.apply(x)


def test_mark_non_differentiable_and_materialize_grads():
    class Split(Function):
        @staticmethod
        def forward(ctx, i):
            a, b = i * 2, i * 3
            ctx.mark_non_differentiable(b)
            return a, b

        @staticmethod
        def backward(ctx, ga, gb):
            ctx.seen = gb
            return ga * 2
    x = tgrad.ones(2, requires_grad=True)
    a, b = Split.apply(x)
    assert a.requires_grad and not b.requires_grad and b.grad_fn is None
    a.sum().backward()
    assert _np(a.grad_fn.seen).tolist() == [0.0, 0.0]      # zeros for the output without gradient

    class Lazy(Function):
        @staticmethod
        def forward(ctx, i):
            ctx.set_materialize_grads(False)
            return i * 2, i * 3

        @staticmethod
        def backward(ctx, g1, g2):
            ctx.seen = g2
            return g1 * 2
    p, q = Lazy.apply(x)
    p.sum().backward()
    assert p.grad_fn.seen is None


def test_outputs_that_are_inputs_or_not_tensors():
    class Ident(Function):
        @staticmethod
        def forward(ctx, i):
            return i, 5

        @staticmethod
        def backward(ctx, g, none):
            assert none is None
            return g * 2
    x = tgrad.ones(2, requires_grad=True)
    z, five = Ident.apply(x)
    assert z is not x and five == 5 and z.grad_fn.name() == "IdentBackward" and x.is_leaf
    assert z.data_ptr() == x.data_ptr()
    z.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), [2.0, 2.0])


def _fn(backward):
    return type("Bad", (Function,), {"forward": staticmethod(lambda ctx, i: i * 2),
                                     "backward": staticmethod(backward)})


def test_wrong_number_of_gradients():
    x = tgrad.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(
            "function BadBackward returned an incorrect number of gradients (expected 1, got 2)")):
        _fn(lambda ctx, g: (g, g)).apply(x).sum().backward()
    _fn(lambda ctx, g: (g, None, None)).apply(x).sum().backward()     # extra Nones are fine
    np.testing.assert_array_equal(_np(x.grad), [1.0, 1.0])
    with pytest.raises(RuntimeError, match=re.escape("expected Variable or None (got list)")):
        _fn(lambda ctx, g: [g]).apply(x).sum().backward()


def test_wrong_shape_of_gradients():
    x = tgrad.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(
            "Function BadBackward returned an invalid gradient at index 0 - got [3] but expected shape "
            "compatible with [2]")):
        _fn(lambda ctx, g: tgrad.ones(3)).apply(x).sum().backward()
    _fn(lambda ctx, g: tgrad.ones(3, 2)).apply(x).sum().backward()     # broadcastable: summed
    np.testing.assert_array_equal(_np(x.grad), [3.0, 3.0])
    x.grad = None
    _fn(lambda ctx, g: g.double()).apply(x).sum().backward()           # cast to the input's dtype
    assert x.grad.dtype is tgrad.float32
