"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode (thread-local).

Each is a context manager and a decorator, as in PyTorch; ``no_grad``,
``enable_grad`` and ``inference_mode`` also decorate without parentheses.
A new thread starts with grad mode on and inference mode off.  The flags
themselves live in ``tgrad._state`` (the ground floor), which ops read.
"""
import functools
import inspect
import sys

from .._state import set_grad as _set_grad, set_inference as _set_inference, state as _state


def is_grad_enabled():
    return _state.grad


def is_inference_mode_enabled():
    return _state.inference


def is_recording():
    """Ops record graph nodes: grad mode on and not in inference mode."""
    return _state.recording


class _DecoratorContextManager:
    def __call__(self, fn):
        if inspect.isclass(fn):
            raise TypeError(f"{type(self).__name__} cannot decorate a class")
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def gen_wrapper(*args, **kwargs):
                gen = fn(*args, **kwargs)
                try:
                    with self.clone():
                        resp = gen.send(None)
                    while True:
                        try:
                            req = yield resp
                        except GeneratorExit:
                            with self.clone():
                                gen.close()
                            raise
                        except BaseException:
                            with self.clone():
                                resp = gen.throw(*sys.exc_info())
                        else:
                            with self.clone():
                                resp = gen.send(req)
                except StopIteration as e:
                    return e.value
            return gen_wrapper

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        return self.__class__()


class _NoParamDecorator(_DecoratorContextManager):
    """Also usable as a bare decorator: ``@no_grad``."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecorator):
    """Disable gradient recording inside the block."""

    def __enter__(self):
        self.prev = is_grad_enabled()
        _set_grad(False)

    def __exit__(self, *exc):
        _set_grad(self.prev)
        return False


class enable_grad(_NoParamDecorator):
    """Enable gradient recording inside the block (e.g. within no_grad)."""

    def __enter__(self):
        self.prev = is_grad_enabled()
        _set_grad(True)

    def __exit__(self, *exc):
        _set_grad(self.prev)
        return False


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode to ``mode``: at once as a function call, for the block as a context manager, for
    the call as a decorator."""

    def __init__(self, mode):
        self.prev = is_grad_enabled()
        self.mode = bool(mode)
        _set_grad(self.mode)

    def __call__(self, fn):
        _set_grad(self.prev)
        return super().__call__(fn)

    def __enter__(self):
        _set_grad(self.mode)

    def __exit__(self, *exc):
        _set_grad(self.prev)
        return False

    def clone(self):
        return self.__class__(self.mode)

    def __repr__(self):
        return f"tgrad.autograd.grad_mode.set_grad_enabled(mode={self.mode})"


class inference_mode(_DecoratorContextManager):
    """Like no_grad, and tensors created inside are inference tensors that cannot enter autograd later."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)  # bare decorator: @inference_mode

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def __enter__(self):
        self.prev = (is_grad_enabled(), is_inference_mode_enabled())
        _set_inference(self.mode)
        _set_grad(not self.mode)

    def __exit__(self, *exc):
        _set_inference(self.prev[1])
        _set_grad(self.prev[0])
        return False

    def clone(self):
        return self.__class__(self.mode)
