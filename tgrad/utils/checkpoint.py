"""``tgrad.utils.checkpoint``: activation checkpointing, PyTorch's ``checkpoint`` / ``checkpoint_sequential``.

The forward runs without keeping ``function``'s intermediates; backward runs ``function`` again on the
same inputs (with the random state of the first run, so dropout draws the same masks) to get them.
``use_reentrant=True``: a custom Function whose forward runs under ``no_grad`` and whose backward
recomputes and back-propagates through the recomputed graph.  ``use_reentrant=False`` (recommended):
the forward records a graph whose saved tensors are dropped (``saved_tensors_hooks``); the first unpack
in backward recomputes them all.
"""
import contextlib
import warnings

from .. import random as _random
from ..autograd import backward as _backward, grad_mode
from ..autograd.function import Function
from ..autograd.saved_hooks import saved_tensors_hooks
from ..tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "detach_variable", "noop_context_fn"]


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs):
    """Inputs detached, each tensor keeping its ``requires_grad``."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    out = []
    for x in inputs:
        if isinstance(x, Tensor):
            d = x.detach()
            d.requires_grad = x.requires_grad
            out.append(d)
        else:
            out.append(x)
    return tuple(out)


def _rng_state():
    """The cpu generator's state and those of the cuda generators made so far (dropout on cuda draws there)."""
    return _random.get_rng_state(), {i: g.get_state() for i, g in _random.cuda_generators.items()}


@contextlib.contextmanager
def _rng_fork(state):
    """Run with the generators at ``state`` (None: untouched), restoring the surrounding states after."""
    if state is None:
        yield
        return
    cpu, cuda = state
    with _random.fork_rng(devices=list(cuda)):
        _random.set_rng_state(cpu)
        for i, st in cuda.items():
            _random.cuda_generators[i].set_state(st)
        yield


class _CheckpointFunction(Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None")
        ctx.run_function = run_function
        ctx.rng_state = _rng_state() if preserve_rng_state else None
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)])
        with grad_mode.no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        with _rng_fork(ctx.rng_state):
            detached = detach_variable(tuple(inputs))
            with grad_mode.enable_grad():
                outputs = ctx.run_function(*detached)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, Tensor) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        _backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(x.grad if isinstance(x, Tensor) else None for x in detached)


class _Frame:
    """One non-reentrant checkpointed call: the saved tensors of its recomputation, by save order."""

    def __init__(self, function, args, kwargs, rng_state):
        self.function, self.args, self.kwargs, self.rng_state = function, args, kwargs, rng_state
        self.count = 0
        self.recomputed = None

    def pack(self, t):
        self.count += 1
        return self.count - 1

    def unpack(self, index):
        if self.recomputed is None:
            saved = []
            with _rng_fork(self.rng_state), grad_mode.enable_grad(), \
                    saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
                self.function(*detach_variable(tuple(self.args)), **self.kwargs)
            if len(saved) != self.count:
                raise RuntimeError(
                    "torch.utils.checkpoint: A different number of tensors was saved during the original forward "
                    f"and recomputation.\nNumber of tensors saved during forward: {self.count}\nNumber of tensors "
                    f"saved during recomputation: {len(saved)}")
            self.recomputed = saved
        return self.recomputed[index]


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn, determinism_check="default",
               debug=False, early_stop=True, **kwargs):
    """``function(*args, **kwargs)``, its intermediates recomputed in backward instead of stored."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in PyTorch "
            "2.9, calling checkpoint without use_reentrant will raise an exception. use_reentrant=False is "
            "recommended, but if you need to preserve the current default behavior, you can pass "
            "use_reentrant=True. Refer to docs for more details on the differences between the two variants.",
            stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return _CheckpointFunction.apply(function, preserve, *args)
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    frame = _Frame(function, args, kwargs, _rng_state() if preserve else None)
    fwd_ctx, recompute_ctx = context_fn()
    frame.function = _in_context(function, recompute_ctx)
    with saved_tensors_hooks(frame.pack, frame.unpack), fwd_ctx:
        return function(*args, **kwargs)


def _in_context(function, ctx):
    def run(*args, **kwargs):
        with ctx:
            return function(*args, **kwargs)
    return run


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run a Sequential (or list of modules) in ``segments`` chunks, each but the last checkpointed."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
            "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
            "use_reentrant=False is recommended, but if you need to preserve the current default behavior, you "
            "can pass use_reentrant=True. Refer to docs for more details on the differences between the two "
            "variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
