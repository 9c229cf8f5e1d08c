"""Devices: ``tgrad.device("cpu")``, ``tgrad.device("cuda:1")`` and the default device.

``cpu`` tensors live in host memory and their kernels run in Triton's
interpreter; ``cuda`` tensors live in GPU memory and their kernels are
compiled by Triton.  The default is ``cuda`` when a GPU is present, else
``cpu``; ``set_default_device()``, ``with tgrad.device(...):`` and the
``TGRAD_DEVICE`` environment variable override it.  ``meta`` tensors have a
shape, dtype and strides but no memory: ops on them compute only the result's
metadata (nothing is allocated, no kernel runs).
"""
import os
import threading

_TYPES = ("cpu", "cuda", "meta")


class device:
    """A device type and index, like ``torch.device``; ``with tgrad.device("meta"):`` makes it the default
    device of this thread for factories given no ``device`` (PyTorch's context manager)."""

    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            if index is not None:
                raise ValueError("device(): an index cannot be given with a device object")
            self.type, self.index = type.type, type.index
            return
        if isinstance(type, int) and not isinstance(type, bool):
            type, index = "cuda", type
        if not isinstance(type, str):
            raise TypeError(f"device(): expected a string or device, got {type.__class__.__name__}")
        s = type
        if not s:
            raise RuntimeError("Device string must not be empty")
        if ":" in s:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was passed explicitly: {s}")
            s, _, idx = s.partition(":")
            if not (idx.isascii() and idx.isdigit()) or (idx[0] == "0" and idx != "0"):
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(idx)
        if s not in _TYPES:
            raise RuntimeError(
                f"Expected one of cpu, cuda, meta device type at start of device string: {type}")
        if index is not None:
            if not isinstance(index, int) or index < 0:
                raise RuntimeError(f"Device index must not be negative, got {index}")
            if s == "cpu" and index != 0:
                raise RuntimeError(f"CPU device index must be 0 or None, got {index}")
        self.type, self.index = s, index

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = device(other)
            except (RuntimeError, TypeError):
                return False
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __enter__(self):
        stack = _state.__dict__.setdefault("stack", [])
        stack.append(getattr(_state, "default", None))
        _state.default = self
        return self

    def __exit__(self, *exc):
        _state.default = _state.stack.pop()
        return False


# ------------------------------------------------------------------ CUDA devices: count, current, default
def _driver():
    """``tgrad.memory.cuda_driver`` (libcuda through ctypes), imported on the first CUDA query."""
    from .memory import cuda_driver  # the cycle it avoids: memory's Storage and allocator hold devices (this module)
    return cuda_driver


def is_available():
    """True when the CUDA driver loads and reports at least one device."""
    return _driver().driver_available()


def device_count():
    """The number of CUDA devices (0 without a driver)."""
    return _driver().device_count()


def check_available():
    """Raise PyTorch's error when CUDA cannot be used."""
    if not is_available():
        raise RuntimeError(f"cuda is not available: {_driver().unavailable_reason()}")


_CPU, _META = device("cpu"), device("meta")
_state = threading.local()     # per thread, as PyTorch's current device: .index (CUDA), .default (``with device``)
_global_default = [None]
_set_default = [None]          # the device set_default_device named (None: none, or reset with None)


def current_device():
    """The current CUDA device index of this thread (0 until ``set_device``)."""
    check_available()
    return getattr(_state, "index", 0)


def set_device(dev):
    """Make CUDA device ``dev`` (an index, "cuda:1" or a device) current on this thread."""
    idx = dev if isinstance(dev, int) else device(dev).index or 0
    check_available()
    if not 0 <= idx < device_count():
        raise RuntimeError(f"CUDA error: invalid device ordinal {idx}")
    _state.index = idx
    _driver().set_current_device(idx)


def canonical(dev):
    """Resolve a device-like (str, int, device, None) to a concrete device with an index for cuda."""
    if dev is None:
        return get_default_device()
    d = dev if isinstance(dev, device) else device(dev)
    if d.type == "cuda":
        check_available()
        idx = current_device() if d.index is None else d.index
        if idx >= device_count():
            raise RuntimeError(
                f"CUDA error: invalid device ordinal (asked for cuda:{idx}, "
                f"{device_count()} device(s) present)")
        return device("cuda", idx)
    return _META if d.type == "meta" else _CPU


def get_default_device():
    """The device new tensors go to when none is given."""
    d = getattr(_state, "default", None) or _global_default[0]
    if d is None:
        env = os.environ.get("TGRAD_DEVICE")
        if env:
            d = device(env)
        else:
            d = device("cuda") if is_available() else device("cpu")
        _global_default[0] = d
    return canonical(d) if d.type == "cuda" else d


def explicit_default_device():
    """The device ``set_default_device`` named, or None (the automatic choice is not one: PyTorch's
    ``as_tensor`` of a tensor moves it only to a default device set by the user)."""
    d = _set_default[0]
    return canonical(d) if d is not None and d.type == "cuda" else d


def set_default_device(dev):
    """Set the default device for new tensors (``None`` restores the automatic choice)."""
    _global_default[0] = _set_default[0] = None if dev is None else device(dev)
