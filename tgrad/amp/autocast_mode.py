"""``tgrad.autocast`` (``tgrad.amp.autocast``): run regions of a program in mixed precision.

Inside ``with tgrad.autocast("cuda"):`` (or ``"cpu"``) each op-table call on a tensor of that device type
first casts its floating inputs as ``policy.py`` says (fp16/bf16 for matmuls, fp32 for the precision-
sensitive ops).  The casts are ordinary ``to`` ops, so gradients flow back to the float32 master weights
in their own dtype.  The state is per thread, as PyTorch's; the dispatcher calls ``_cast_inputs`` only
while some autocast region is active (``dispatch.AUTOCAST``).

The weight-cast cache (PyTorch's ``cached_cast``): with ``cache_enabled``, the low-precision cast of a
float32 leaf that requires grad (a parameter, not a view) is made once and reused by every op of the
region; the cache (per thread) is cleared when the outermost region exits (``clear_autocast_cache``).
"""
import functools
import threading
import warnings

from .. import dtypes as D
from ..autograd import dispatch
from ..tensor import Tensor
from . import policy

_DEFAULT = {"cuda": D.float16, "cpu": D.bfloat16}
_SUPPORTED = {"cuda": (D.float16, D.bfloat16), "cpu": (D.bfloat16, D.float16)}
_tls = threading.local()
_lock = threading.Lock()
_active = [0]       # autocast regions entered (enabled) in all threads


def _state():
    s = getattr(_tls, "state", None)
    if s is None:
        s = _tls.state = {"cuda": (False, D.float16), "cpu": (False, D.bfloat16)}
        _tls.cache, _tls.cache_enabled, _tls.nesting = {}, True, 0
    return s


def is_autocast_cache_enabled():
    _state()
    return _tls.cache_enabled


def set_autocast_cache_enabled(enabled):
    _state()
    _tls.cache_enabled = bool(enabled)


def clear_autocast_cache():
    """Drop this thread's cached weight casts (done when the outermost autocast region exits)."""
    _state()
    _tls.cache.clear()


def is_autocast_available(device_type):
    return device_type in _DEFAULT


def is_autocast_enabled(device_type=None):
    """Whether autocast is on for ``device_type`` (default: cuda, as ``torch.is_autocast_enabled()``)."""
    return _state()[device_type or "cuda"][0]


def get_autocast_dtype(device_type):
    return _state()[device_type][1]


def get_autocast_gpu_dtype():
    return get_autocast_dtype("cuda")


def get_autocast_cpu_dtype():
    return get_autocast_dtype("cpu")


class autocast:
    """``with autocast(device_type, dtype=None, enabled=True, cache_enabled=None):`` (or as a decorator).

    dtype defaults to float16 on cuda and bfloat16 on cpu.  ``cache_enabled`` (default True): reuse the
    low-precision cast of each float32 leaf that requires grad within the region.
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device = device_type
        self.fast_dtype = _DEFAULT[device_type] if dtype is None else dtype
        self._enabled = bool(enabled)
        self._cache_enabled = True if cache_enabled is None else cache_enabled
        if self._enabled and self.fast_dtype not in _SUPPORTED[device_type]:
            name = "CPU" if device_type == "cpu" else "CUDA"
            warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                          f"{name} Autocast only supports dtype of "
                          f"{', '.join(str(d) for d in _SUPPORTED[device_type])} currently.")
            self._enabled = False

    def __enter__(self):
        s = _state()
        self.prev = s[self.device]
        s[self.device] = (self._enabled, self.fast_dtype if self._enabled else self.prev[1])
        self.prev_cache_enabled = _tls.cache_enabled
        _tls.cache_enabled = bool(self._cache_enabled)
        _tls.nesting += 1
        with _lock:
            _active[0] += 1
            dispatch.AUTOCAST = _cast_inputs
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        _state()[self.device] = self.prev
        _tls.nesting -= 1
        if _tls.nesting == 0:
            _tls.cache.clear()
        _tls.cache_enabled = self.prev_cache_enabled
        with _lock:
            _active[0] -= 1
            if _active[0] == 0:
                dispatch.AUTOCAST = None
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return decorate_autocast


def _eligible(t):
    return isinstance(t, Tensor) and t.dtype.is_floating_point and t.dtype is not D.float64


def _cast_inputs(name, inputs):
    """``inputs`` of op ``name`` cast by the policy of the autocast region active for their device type."""
    dev = None
    for t in inputs:
        if isinstance(t, Tensor):
            dev = t.device.type
            break
    if dev is None:
        return inputs
    on, low = _state()[dev]
    if not on:
        return inputs
    if name in policy.LOWER[dev]:
        target = low
    elif name in policy.FP32[dev]:
        target = D.float32
    elif name in policy.PROMOTE:
        fl = [t.dtype for t in inputs if isinstance(t, Tensor) and t.dtype.is_floating_point]
        if len(set(fl)) < 2:
            return inputs
        target = functools.reduce(D.promote_types, fl)
        return tuple(t.to(target) if isinstance(t, Tensor) and t.dtype.is_floating_point else t for t in inputs)
    elif name in policy.BANNED[dev]:
        raise RuntimeError(policy.BANNED[dev][name])
    else:
        return inputs
    if target is low and _tls.cache_enabled:
        return tuple(_cached_cast(t, low) if _eligible(t) and t.dtype is not low else t for t in inputs)
    return tuple(t.to(target) if _eligible(t) and t.dtype is not target else t for t in inputs)


def _cached_cast(t, low):
    """``t.to(low)``, made once per region for a float32 leaf that requires grad and is not a view."""
    if t.dtype is not D.float32 or not t.requires_grad or not t.is_leaf or t._is_view():
        return t.to(low)
    hit = _tls.cache.get(id(t))
    if hit is None or hit[1].dtype is not low:
        hit = _tls.cache[id(t)] = (t, t.to(low))      # holds t: its id stays unique while cached
    return hit[1]
