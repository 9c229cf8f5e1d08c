"""gradcheck itself can fail: a wrong backward, a non-reentrant one, a gradient of the wrong dtype, and the
flags tgrad cannot honour raise instead of being ignored."""
import numpy as np
import pytest

import tgrad
from tgrad.autograd import Function, gradcheck, gradgradcheck
from tgrad.autograd.gradcheck import GradcheckError


class WrongSquare(Function):
    """y = x^2 with the backward 3 x g (the right one is 2 x g)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return 3 * x * g


class NoisySquare(Function):
    """y = x^2 whose backward adds a different tiny amount each call (not reentrant)."""
    calls = 0

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        NoisySquare.calls += 1
        return 2 * x * g + NoisySquare.calls * 1e-9


def _x():
    return tgrad.tensor(np.linspace(-1, 1, 5), dtype=tgrad.float64, requires_grad=True)


def test_gradcheck_passes_a_right_backward():
    assert gradcheck(lambda x: x * x, (_x(),))
    assert gradgradcheck(lambda x: x * x * x, (_x(),))


def test_gradcheck_fails_a_wrong_backward():
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        gradcheck(WrongSquare.apply, (_x(),))
    assert gradcheck(WrongSquare.apply, (_x(),), raise_exception=False) is False


class Cube(Function):
    """y = x^3 whose backward 3 x^2 g is right in value but computes x^2 with WrongSquare (a wrong 2nd derivative)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return 3 * WrongSquare.apply(x) * g


def test_gradgradcheck_fails_a_wrong_double_backward():
    assert gradcheck(Cube.apply, (_x(),))
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradgradcheck(Cube.apply, (_x(),))
    assert gradgradcheck(Cube.apply, (_x(),), raise_exception=False) is False


def test_nondet_tol_catches_a_non_reentrant_backward():
    with pytest.raises(GradcheckError, match="Backward is not reentrant"):
        gradcheck(NoisySquare.apply, (_x(),))
    assert gradcheck(NoisySquare.apply, (_x(),), nondet_tol=1e-6, check_undefined_grad=False)


def test_check_undefined_grad_catches_a_backward_that_ignores_its_gradient():
    class Leaky(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2 + (g.abs().sum() == 0).to(g.dtype)   # right unless g is all zeros

    x = tgrad.tensor([0.5, 1.5], dtype=tgrad.float64, requires_grad=True)
    with pytest.raises(GradcheckError, match="handle undefined output grads"):
        gradcheck(Leaky.apply, (x,))
    assert gradcheck(Leaky.apply, (x,), check_undefined_grad=False)


@pytest.mark.parametrize("flag", ["check_batched_grad", "check_batched_forward_grad", "check_forward_ad", "masked"])
def test_unsupported_gradcheck_flags_raise(flag):
    with pytest.raises(NotImplementedError, match=flag):
        gradcheck(lambda x: x * x, (_x(),), **{flag: True})


@pytest.mark.parametrize("flag", ["check_batched_grad", "check_fwd_over_rev", "masked"])
def test_unsupported_gradgradcheck_flags_raise(flag):
    with pytest.raises(NotImplementedError, match=flag):
        gradgradcheck(lambda x: x * x, (_x(),), **{flag: True})


def test_non_contiguous_grad_outputs_are_strided():
    seen = []

    def f(x):
        y = x * x
        y.register_hook(lambda g: seen.append(g.is_contiguous()))
        return y

    assert gradgradcheck(f, (_x(),), gen_non_contig_grad_outputs=True)
    assert False in seen
