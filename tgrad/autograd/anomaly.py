"""Anomaly mode: remember where each node was created; report it when its backward fails or gives NaN."""
import threading
import traceback
import warnings

_state = threading.local()


def is_anomaly_enabled():
    return getattr(_state, "enabled", False)


def is_anomaly_check_nan_enabled():
    return getattr(_state, "check_nan", True)


def creation_trace():
    return "".join(traceback.format_stack()[:-3])


def report(node, exc):
    warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
                  f"{node._anomaly_trace}", RuntimeWarning, stacklevel=3)


def check_nan(node, grads):
    if not is_anomaly_check_nan_enabled():
        return
    import numpy as np
    for i, g in enumerate(grads):
        if g is not None and g.dtype.is_floating_point and np.isnan(g.detach()._host_copy()).any():
            if node._anomaly_trace is not None:
                report(node, None)
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")


class set_detect_anomaly:
    """Turn anomaly detection on or off (immediately, and restored on exit when used with ``with``)."""

    def __init__(self, mode, check_nan=True):
        self.prev = (is_anomaly_enabled(), is_anomaly_check_nan_enabled())
        _state.enabled = bool(mode)
        _state.check_nan = bool(check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _state.enabled, _state.check_nan = self.prev
        return False


class detect_anomaly:
    """Context manager / decorator enabling anomaly detection inside the block."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan

    def __enter__(self):
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should "
                      "only be enabled for debugging.", UserWarning, stacklevel=2)
        self.prev = (is_anomaly_enabled(), is_anomaly_check_nan_enabled())
        _state.enabled = True
        _state.check_nan = self.check_nan

    def __exit__(self, *exc):
        _state.enabled, _state.check_nan = self.prev
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with self.__class__(self.check_nan):
                return fn(*a, **k)
        return wrapper
