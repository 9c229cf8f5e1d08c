"""Anomaly mode: remember where each node was created; report it when its backward fails or gives NaN."""
import functools
import os
import threading
import traceback
import warnings


class _State(threading.local):
    enabled = False         # a new thread's values
    check_nan = True


_state = _State()
_AUTOGRAD_DIR = os.path.dirname(os.path.abspath(__file__))
# the dispatcher's Python layers (PyTorch's are C++, so its traces end at the user's call)
_DISPATCH_FILES = {os.path.join(os.path.dirname(_AUTOGRAD_DIR), f)
                   for f in ("tensor.py", "_functional.py", "_nn_functional.py")}


def is_anomaly_enabled():
    return _state.enabled


def is_anomaly_check_nan_enabled():
    return _state.check_nan


def _set(enabled, check_nan):
    _state.enabled = bool(enabled)
    _state.check_nan = bool(check_nan)


def creation_trace():
    """The Python stack of the forward call, without the dispatcher's own frames at its end."""
    frames = traceback.extract_stack()
    while frames and (os.path.dirname(os.path.abspath(frames[-1].filename)) == _AUTOGRAD_DIR
                      or os.path.abspath(frames[-1].filename) in _DISPATCH_FILES):
        frames.pop()
    return "".join(traceback.format_list(frames))


def report(node):
    warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
                  f"{node._anomaly_trace}", UserWarning, stacklevel=4)


def check_nan(node, grads):
    """Raise if a backward returned NaN (anomaly mode with check_nan)."""
    if not is_anomaly_check_nan_enabled():
        return
    import numpy as np
    for i, g in enumerate(grads):
        if g is not None and g.dtype.is_floating_point and np.isnan(g.detach()._host_copy()).any():
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")


class set_detect_anomaly:
    """Turn anomaly detection on or off (at once; restored on exit when used with ``with``)."""

    def __init__(self, mode, check_nan=True):
        self.prev = (is_anomaly_enabled(), is_anomaly_check_nan_enabled())
        _set(mode, check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set(*self.prev)
        return False


class detect_anomaly:
    """Context manager / decorator enabling anomaly detection inside the block."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan

    def __enter__(self):
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should "
                      "only be enabled for debugging.", UserWarning, stacklevel=2)
        self.prev = (is_anomaly_enabled(), is_anomaly_check_nan_enabled())
        _set(True, self.check_nan)

    def __exit__(self, *exc):
        _set(*self.prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*a, **k):
            with self.__class__(self.check_nan):
                return fn(*a, **k)
        return wrapper
