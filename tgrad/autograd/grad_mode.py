"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode (thread-local).

Each is a context manager and a decorator, as in PyTorch.
"""
import functools
import inspect
import threading

_state = threading.local()


def is_grad_enabled():
    return getattr(_state, "grad", True)


def _set_grad(mode):
    _state.grad = bool(mode)


def is_inference_mode_enabled():
    return getattr(_state, "inference", False)


class _DecoratorContextManager:
    def __call__(self, fn):
        if inspect.isclass(fn):
            raise TypeError(f"{type(self).__name__} cannot decorate a class")
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def gen_wrapper(*args, **kwargs):
                gen = fn(*args, **kwargs)
                with self.clone():
                    resp = gen.send(None)
                while True:
                    try:
                        req = yield resp
                    except GeneratorExit:
                        gen.close()
                        raise
                    with self.clone():
                        resp = gen.send(req)
            return gen_wrapper

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        return self.__class__()


class no_grad(_DecoratorContextManager):
    """Disable gradient recording inside the block."""

    def __enter__(self):
        self.prev = is_grad_enabled()
        _set_grad(False)

    def __exit__(self, *exc):
        _set_grad(self.prev)
        return False


class enable_grad(_DecoratorContextManager):
    """Enable gradient recording inside the block (e.g. within no_grad)."""

    def __enter__(self):
        self.prev = is_grad_enabled()
        _set_grad(True)

    def __exit__(self, *exc):
        _set_grad(self.prev)
        return False


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode to ``mode``; applies immediately and, as a context manager, restores on exit."""

    def __init__(self, mode):
        self.prev = is_grad_enabled()
        self.mode = bool(mode)
        _set_grad(self.mode)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _set_grad(self.prev)
        return False

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like no_grad, and tensors created inside are inference tensors that cannot enter autograd later."""

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        # used as a bare decorator: @inference_mode
        return cls()(mode)

    def __enter__(self):
        self.prev = (is_grad_enabled(), is_inference_mode_enabled())
        _state.inference = self.mode
        if self.mode:
            _set_grad(False)

    def __exit__(self, *exc):
        _set_grad(self.prev[0])
        _state.inference = self.prev[1]
        return False

    def clone(self):
        return self.__class__(self.mode)
