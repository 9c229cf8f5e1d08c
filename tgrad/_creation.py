"""Tensor creation: tensor, as_tensor, from_numpy, zeros/ones/empty/full, arange, linspace, eye, random.

Values given from Python/numpy are copied into device memory by the memory
backend; everything else is written by kernels (fill, random).
"""
import math
import numbers

import ml_dtypes
import numpy as np

from . import dtypes as D
from . import ops as _ops
from .device import canonical, explicit_default_device
from .kernels import _geometry as G
from .kernels import elementwise as KE
from .kernels import random as KR
from .random import default_generator_for
from .tensor import (_CHANNELS_LAST, Tensor, _channels_last_strides, _check_memory_format, _new, empty as _empty,
                     from_host)


def _shape_arg(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    elif len(size) == 1 and isinstance(size[0], Tensor):
        size = tuple(size[0].tolist())
    for s in size:
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"size must be a sequence of ints, but got {type(s).__name__}")
    return tuple(int(s) for s in size)


def _finish(t, requires_grad):
    if requires_grad:
        t._set_requires_grad(True)
    return t


def _infer_dtype(data):
    """PyTorch's inference: bool -> bool, int -> int64, float -> default dtype; numpy values and tensors keep
    their dtype; a sequence promotes its items' dtypes (an empty one is the default dtype)."""
    if isinstance(data, (np.ndarray, np.generic)):
        return D.from_numpy_dtype(data.dtype)
    if isinstance(data, Tensor):
        return data.dtype
    if isinstance(data, bool):
        return D.bool_
    if isinstance(data, int):
        return D.int64
    if isinstance(data, float):
        return D.get_default_dtype()
    if isinstance(data, complex):
        return D.default_complex()
    if isinstance(data, str):
        raise TypeError("new(): invalid data type 'str'")
    if not isinstance(data, (list, tuple)):
        raise RuntimeError(f"Could not infer dtype of {type(data).__name__}")
    dt = None
    for x in data:
        d = _infer_dtype(x)
        dt = d if dt is None else D.promote_types(dt, d)
    return dt if dt is not None else D.get_default_dtype()


def _to_numpy(data):
    if isinstance(data, Tensor):
        return data.detach()._host_copy()
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in data):
        return np.array([_to_numpy(x) for x in data])
    return np.asarray(data)


def _is_seq(x):
    return isinstance(x, (list, tuple)) or (isinstance(x, np.ndarray) and x.ndim > 0)


def _check_nested(data, dt):
    """PyTorch's errors for nested sequences that are not rectangular (sizes come from the first items;
    as in PyTorch, nothing is checked when they give no element); returns the sizes."""
    sizes = []
    x = data
    while _is_seq(x):
        sizes.append(len(x))
        if not len(x):
            return sizes
        x = x[0]
    stack = [(data, 0)]
    while stack:
        x, dim = stack.pop()
        if dim == len(sizes):
            if _is_seq(x):
                raise TypeError(f"must be real number, not {type(x).__name__}" if dt.is_floating_point else
                                f"'{type(x).__name__}' object cannot be interpreted as an integer")
            continue
        if not _is_seq(x):
            raise TypeError("not a sequence")
        if len(x) != sizes[dim]:
            raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got {len(x)})")
        stack.extend((y, dim + 1) for y in reversed(x))
    return sizes


def _has_big_int(data):
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, int) and not -2 ** 63 <= x < 2 ** 63:
            return True
    return False


def _python_values(data, dt):
    """Python (or numpy scalar) data as a numpy array, checked as PyTorch checks values it unpacks: ints
    beyond int64 and values outside an integer dtype's range raise."""
    try:
        arr = _to_numpy(data)
    except ValueError:
        sizes = _check_nested(data, dt)
        if 0 not in sizes:
            raise
        arr = np.zeros(sizes)
    if dt.is_floating_point or dt is D.bool_ or dt.is_complex:
        if arr.dtype.kind == "c" and not dt.is_complex:
            raise TypeError(f"can't convert complex to {'float' if dt.is_floating_point else 'bool'}")
        if arr.dtype == object:         # Python ints beyond int64 are converted as floats (or truth values)
            try:
                arr = arr.astype(np.float64 if dt.is_floating_point else bool)
            except TypeError:
                pass                    # not numbers: tensor() says so
        return arr
    if arr.dtype.kind in "uOf" and _has_big_int(data):      # numpy's type for ints beyond int64
        raise ValueError("Overflow when unpacking long long")
    if arr.dtype.kind in "iuf" and arr.size:
        info = np.iinfo(dt.np)
        lo = -info.max if info.min == 0 and arr.dtype.kind != "f" else info.min     # uint8 takes -1 as 255
        if np.isnan(arr).any() or arr.min() < lo or arr.max() > info.max:
            raise RuntimeError(f"value cannot be converted to type {dt.name} without overflow")
    return arr


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """Copy ``data`` (nested lists, numbers, numpy arrays, tensors) into a new tensor."""
    dt = D.to_dtype(dtype, "tensor") if dtype is not None else _infer_dtype(data)
    arr = data if isinstance(data, np.ndarray) else _python_values(data, dt)
    if arr.dtype == object:
        raise TypeError("tensor(): data must be numbers or nested sequences of numbers of equal length")
    return _finish(from_host(arr, dt, canonical(device)), requires_grad)


def scalar_tensor(value, dtype=None, device=None, requires_grad=False):
    dt = D.to_dtype(dtype, "scalar_tensor") if dtype is not None else D.get_default_dtype()
    return _finish(from_host(np.asarray(value), dt, canonical(device)), requires_grad)


def as_tensor(data, dtype=None, device=None):
    """Like ``tensor`` but returns ``data`` itself when it already is a tensor of that dtype/device.

    No ``device``: other data goes to the default device (a numpy array on ``cpu`` shares its memory); a
    tensor keeps its device unless ``set_default_device`` named one (PyTorch 2.13 moves it there too)."""
    dtype = D.to_dtype(dtype, "as_tensor") if dtype is not None else None
    if isinstance(data, Tensor):
        if device is None:
            device = explicit_default_device() or data.device
        return data.to(device=device, dtype=dtype or data.dtype)
    device = canonical(device)
    if isinstance(data, np.ndarray) and device.type == "cpu" and dtype is None:
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


class _NumpyOwner:
    """Keeps a numpy array alive while a Storage views its memory."""


def from_numpy(arr):
    """A cpu tensor sharing memory with numpy array ``arr``."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    dt = D.from_numpy_dtype(arr.dtype)
    from .memory.storage import Storage
    if any(s % arr.itemsize for s in arr.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size")
    st = Storage.wrap_host(arr)
    strides = tuple(s // arr.itemsize for s in arr.strides)
    lo = sum((d - 1) * s for d, s in zip(arr.shape, strides) if s < 0) if arr.size else 0
    return _new(st, -lo, arr.shape, strides, dt)


def empty(*args, size=None, dtype=None, device=None, requires_grad=False, memory_format=None, pin_memory=False,
          out=None):
    """``empty(2, 3)``, ``empty((2, 3))`` or ``empty(size=(2, 3))`` (so zeros, ones, rand, randn).

    ``out``: resized to the size and returned (PyTorch); ``pin_memory``: host memory is not pinned on
    ``cpu`` (no effect on values); ``memory_format``: only the (contiguous) default layout exists."""
    if size is not None:
        if args:
            raise TypeError("empty() got multiple values for argument 'size'")
        args = (size,)
    cl = memory_format in _CHANNELS_LAST
    if not cl:
        _check_memory_format("empty", memory_format)
    dt = D.to_dtype(dtype, "empty") if dtype is not None else D.get_default_dtype()
    shape = _shape_arg(args)
    if cl and out is None:
        t = _empty(shape, dt, canonical(device))
        return _finish(_new(t._storage, 0, t.shape, _channels_last_strides(tuple(shape), memory_format), dt),
                       requires_grad)
    if out is not None:
        if dtype is not None and dt is not out.dtype:
            raise RuntimeError(f"Expected out tensor to have dtype {dt}, but got {out.dtype} instead")
        out.data = _empty(shape, out.dtype, out.device)
        return out
    return _finish(_empty(shape, dt, canonical(device)), requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    if dtype is not None:
        dtype = D.to_dtype(dtype, "full")
    else:
        dtype = (D.bool_, D.int64, D.get_default_dtype(), D.default_complex())[D.scalar_kind(fill_value)]
    D.check_fill_value(fill_value, dtype)
    t = empty(*_shape_arg((size,)), dtype=dtype, device=device)
    KE.fill(t, fill_value)
    return _finish(t, requires_grad)


def zeros(*args, size=None, dtype=None, device=None, requires_grad=False):
    t = empty(*args, size=size, dtype=D.to_dtype(dtype, "zeros") if dtype is not None else None, device=device)
    KE.fill(t, 0)
    return _finish(t, requires_grad)


def ones(*args, size=None, dtype=None, device=None, requires_grad=False):
    t = empty(*args, size=size, dtype=D.to_dtype(dtype, "ones") if dtype is not None else None, device=device)
    KE.fill(t, 1)
    return _finish(t, requires_grad)


def _like(t, dtype, device, fn, memory_format):
    """An uninitialised tensor of ``t``'s shape (and dtype and device unless given) for ``fn``; with
    preserve_format (the default) it has ``t``'s strides when ``t`` is dense (PyTorch)."""
    dt = D.to_dtype(dtype, fn) if dtype is not None else t.dtype
    out = _empty(tuple(t.shape), dt, canonical(device) if device is not None else t.device)
    if memory_format in _CHANNELS_LAST:
        return _new(out._storage, 0, out.shape, _channels_last_strides(tuple(t.shape), memory_format), dt)
    if _check_memory_format(fn, memory_format):
        strides = G.preserved_strides(tuple(t.shape), t.stride())
        if strides != out.stride():
            out = _new(out._storage, 0, out.shape, strides, dt)
    return out


def empty_like(input, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _finish(_like(input, dtype, device, "empty_like", memory_format), requires_grad)


def zeros_like(input, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _finish(KE.fill(_like(input, dtype, device, "zeros_like", memory_format), 0), requires_grad)


def ones_like(input, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _finish(KE.fill(_like(input, dtype, device, "ones_like", memory_format), 1), requires_grad)


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False, memory_format=None):
    t = _like(input, dtype, device, "full_like", memory_format)
    D.check_fill_value(fill_value, t.dtype)
    return _finish(KE.fill(t, fill_value), requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """Values start, start+step, ... < end (PyTorch's length rule: ceil((end - start) / step))."""
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    start, end, step = vals
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not all(math.isfinite(v) for v in vals):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = max(0, math.ceil((end - start) / step))
    if dtype is None:
        is_float = any(isinstance(v, float) for v in vals)
        dtype = D.get_default_dtype() if is_float else D.int64
    dt = D.to_dtype(dtype, "arange")
    if dt is D.bool_:
        raise NotImplementedError(f"\"arange_{canonical(device).type}\" not implemented for 'Bool'")
    acc = np.float64 if dt.is_floating_point else np.int64

    def values():
        arr = start + np.arange(n, dtype=acc) * np.asarray(step, dtype=acc)
        with np.errstate(over="ignore", invalid="ignore"):      # out of range: inf or wrapped, as from_host
            return np.require(arr.astype(dt.np, copy=False), requirements="C")
    # a function of the numbers given: a cached constant (tgrad.compile replays the copy), unless large
    key = ("arange", n, start, step, type(start), type(step), math.copysign(1.0, start), dt)   # (-0.0: its sign)
    t = (_ops.host_constant(key, values, dt, canonical(device)) if n <= _ARANGE_CACHED
         else from_host(values(), dt, canonical(device)))
    return _finish(t, requires_grad)


_ARANGE_CACHED = 1 << 16    # elements: a larger arange is not kept on the host


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dt = D.to_dtype(dtype, "linspace") if dtype is not None else D.get_default_dtype()
    # PyTorch computes the first half from start and the second half from end; for float32 its step is a float32
    # quotient and each value one fused multiply-add (start + step * i rounded once), which float64 emulates
    step = (end - start) / (steps - 1) if steps > 1 else 0.0
    if dt is D.float32 and steps > 1:
        start, end = float(np.float32(start)), float(np.float32(end))
        step = float(np.float32(np.float32(end) - np.float32(start)) / np.float32(steps - 1))
    i = np.arange(steps, dtype=np.float64)
    half = steps // 2
    arr = np.where(i < half, start + step * i, end - step * (steps - 1 - i)) if steps != 1 else np.full(1, start)
    return _finish(from_host(arr, dt, canonical(device)), requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    m = n if m is None else m
    for name, v in (("n", n), ("m", m)):
        if isinstance(v, int) and v < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
    t = zeros(n, m, dtype=D.to_dtype(dtype, "eye") if dtype is not None else None, device=device)
    k = min(n, m)
    if k:
        KE.fill(t._view_of((k,), (m + 1,)), 1)
    return _finish(t, requires_grad)


# ------------------------------------------------------------------ random
# The cpu generator (mt19937) draws PyTorch's words; kernels (tgrad/kernels/random.py) transform them as
# PyTorch's CPU kernels do.  Transforms that need glibc's float64 log1p/log/sin/cos/tan/exp (double normals,
# exponential, geometric, cauchy, log-normal) or that are sequential (randperm's swaps, multinomial's
# search) run on the host (glibc's float64 maths through ``KR.libm``), fed by the same generator.
def _gen(generator, device):
    if generator is None:
        return default_generator_for(device)
    if generator.device.type != device.type:
        raise RuntimeError(f"Expected a '{device.type}' device type for generator but found "
                           f"'{generator.device.type}'")
    return generator


def _check_random(t, dist, lo, hi):
    """PyTorch's checks of a uniform (dist 0) or normal (dist 1) fill, before anything is drawn."""
    if not t.dtype.is_floating_point:
        kernel = "check_uniform_bounds" if dist == 0 else f"normal_kernel_{t.device.type}"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{D.TENSOR_TYPE_NAMES[t.dtype][:-6]}'")
    if dist == 0:
        big = float(ml_dtypes.finfo(t.dtype.np).max)
        for name, v in (("from", lo), ("to", hi)):
            if not -big <= v <= big:
                raise RuntimeError(f"{name} is out of bounds for {D.CPP_NAMES[t.dtype.name]}")
        if lo > hi:
            raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={lo:g} > to={hi:g}")
    elif hi < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {hi:g}")


def _iter_view(t):
    """``t`` with its dims ordered by decreasing stride: a row-major walk of it is PyTorch's TensorIterator
    order (memory order), in which a cpu kernel draws one element after another."""
    order = sorted(range(t.dim()), key=lambda d: -t.stride(d))
    return t.permute(order) if order != list(range(t.dim())) else t


def _put(t, values):
    """Write host ``values`` (float64 or int, t's TensorIterator order) into ``t`` (PyTorch's
    static_cast<scalar_t>: float16/bfloat16 through float32)."""
    v = np.asarray(values)
    if t.dtype.is_floating_point and t.dtype.name != "float64":
        v = v.astype(np.float32)
    KE.copy(from_host(v.reshape(_iter_view(t).shape), t.dtype, t.device), _iter_view(t))
    return t


def _unit53(w64):
    return (w64 & np.uint64((1 << 53) - 1)).astype(np.float64) * 2.0 ** -53


def _host_uniform(g, n):
    """n of PyTorch's double uniforms (two words each) in [0, 1)."""
    return _unit53(g._raw64(n))


def _normal_fill_double(g, n, mean, std):
    """PyTorch's normal_fill<double> (contiguous, n >= 16): Box-Muller on groups of 16 double uniforms, the
    last 16 outputs re-drawn when n % 16."""
    def fill16(u):
        u = u.reshape(-1, 16)
        r = np.sqrt(-2.0 * KR.libm("log", 1.0 - u[:, :8]))
        th = 2.0 * np.pi * u[:, 8:]
        return KR.fma64(np.concatenate([r * KR.libm("cos", th), r * KR.libm("sin", th)], 1).reshape(-1), std, mean)
    out = _host_uniform(g, n)
    k = n // 16 * 16
    out[:k] = fill16(out[:k])
    if n % 16:
        out[n - 16:] = fill16(_host_uniform(g, 16))
    return out


def _mt_fill(t, dist, lo, hi, g):
    """Fill ``t`` from the cpu generator ``g`` as PyTorch's CPU kernels do: dist 0 uniform [lo, hi), 1 normal
    (mean lo, std hi), 2 integers [lo, hi)."""
    n = t.numel()
    if n == 0:
        return t
    name = t.dtype.name
    v = _iter_view(t)
    c = v if v.is_contiguous() else _empty(v.shape, t.dtype, t.device)
    if dist == 0:
        KR.uniform_words(g._take(2 * n if name == "float64" else n), c, lo, hi)
    elif dist == 1 and n >= 16 and t.is_contiguous() and name != "float64":
        KR.normal_words(g._take(n + (16 if n % 16 else 0) if name == "float32" else -(-n // 16) * 16), c, lo, hi)
    elif dist == 1:
        if n >= 16 and t.is_contiguous():
            return _put(t, _normal_fill_double(g, n, lo, hi))
        return _put(t, KR.fma64(g._normal_pairs(n), hi, lo))
    else:
        span = hi - lo
        if span >= 1 << 63:
            return _put(t, ((g._raw64(n) % np.uint64(span)).astype(object) + lo).astype(np.int64))
        wide = span >= 1 << 32 and name in ("int64", "float64", "float32", "bfloat16")
        KR.randint_words(g._take(2 * n if wide else n), c, lo, hi)
    if c is not v:
        KE.copy(c, v)
    return t


def _random_fill(t, dist, lo, hi, generator):
    if t.dtype._kind == 3 and dist in (0, 1):  # PyTorch: both parts drawn from the float view; normal: variance 1/2
        f = t._view_of(t._shape + (2,), tuple(2 * s for s in t._strides) + (1,), 2 * t._offset, t.dtype.to_real())
        _random_fill(f, dist, lo, hi / math.sqrt(2) if dist == 1 else hi, generator)
        return t
    if dist != 2:
        _check_random(t, dist, lo, hi)
    g = _gen(generator, t.device)
    if g._mt is not None:
        return _mt_fill(t, dist, lo, hi, g)
    key, off = g._take(t.numel())
    if t.is_contiguous():
        KR.fill_random(t, key, off, dist, lo, hi)
    else:
        tmp = _empty(t.shape, t.dtype, t.device)
        KR.fill_random(tmp, key, off, dist, lo, hi)
        KE.copy(tmp, t)
    return t


def rand(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    t = empty(*args, size=size, dtype=D.to_dtype(dtype, "rand") if dtype is not None else None, device=device)
    return _finish(_random_fill(t, 0, 0.0, 1.0, generator), requires_grad)


def randn(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    t = empty(*args, size=size, dtype=D.to_dtype(dtype, "randn") if dtype is not None else None, device=device)
    return _finish(_random_fill(t, 1, 0.0, 1.0, generator), requires_grad)


def _int_bounds(low, high):
    """(low, high) of randint(high) / randint(low, high), checked as PyTorch's random_ does."""
    if high is None:
        low, high = 0, low
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    return low, high


def randint(low=0, high=None, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    if size is None and isinstance(high, (tuple, list)):      # randint(high, size)
        low, high, size = 0, low, high
    if size is None:
        if high is None:
            raise TypeError("randint() missing required argument 'size'")
        raise TypeError(f"randint(): argument 'size' (position 2) must be tuple of ints, not {type(high).__name__}")
    low, high = _int_bounds(low, high)
    t = empty(*_shape_arg((size,)), dtype=D.to_dtype(dtype, "randint") if dtype is not None else D.int64,
              device=device)
    return _finish(_random_fill(t, 2, low, high, generator), requires_grad)


def rand_like(input, dtype=None, device=None, requires_grad=False, memory_format=None):
    t = _like(input, dtype, device, "rand_like", memory_format)
    return _finish(_random_fill(t, 0, 0.0, 1.0, None), requires_grad)


def randn_like(input, dtype=None, device=None, requires_grad=False, memory_format=None):
    t = _like(input, dtype, device, "randn_like", memory_format)
    return _finish(_random_fill(t, 1, 0.0, 1.0, None), requires_grad)


def randint_like(input, low=0, high=None, dtype=None, device=None, requires_grad=False, memory_format=None):
    low, high = _int_bounds(low, high)
    t = _like(input, dtype, device, "randint_like", memory_format)
    return _finish(_random_fill(t, 2, low, high, None), requires_grad)


def randperm(n, generator=None, dtype=None, device=None, requires_grad=False):
    """A random permutation of 0..n-1.  cpu generator: PyTorch's swaps, perm[i] <-> perm[i + w_i % (n - i)]
    for i < n - 1 with one word each (host: sequential); cuda: the argsort of n uniform draws."""
    if n < 0:
        raise RuntimeError(f"n must be non-negative, got{n}")
    g = _gen(generator, canonical(device))
    dt = D.to_dtype(dtype, "randperm") if dtype is not None else D.int64
    if g._mt is not None:
        perm = list(range(n))
        for i, w in enumerate(g._raw(n - 1).tolist()):
            z = i + w % (n - i)
            perm[i], perm[z] = perm[z], perm[i]
    else:
        keys = rand(n, generator=g, dtype=D.float64, device=g.device)
        perm = np.argsort(keys._host_copy(), kind="stable")
    return tensor(perm, dtype=dt, device=device, requires_grad=requires_grad)


def uniform_(t, a=0.0, b=1.0, generator=None):
    return _random_fill(t, 0, a, b, generator)


def normal_(t, mean=0.0, std=1.0, generator=None):
    return _random_fill(t, 1, mean, std, generator)


def _mt_or_none(t, generator):
    """The cpu generator for ``t`` (mt19937), or None on a Philox (cuda) generator."""
    g = _gen(generator, t.device)
    return g if g._mt is not None else None


def _host_fill(t, generator, n_words_fn, transform):
    """Fill ``t`` in TensorIterator order with ``transform(g)`` (host values, one per element) from the cpu
    generator; on a Philox generator ``transform`` gets uniforms made from Philox draws instead."""
    n = t.numel()
    if n == 0:
        return t
    g = _gen(generator, t.device)
    if g._mt is None:       # cuda: the same transforms of Philox uniforms (tgrad's stream, not PyTorch's)
        u = rand(n, generator=g, dtype=D.float64, device=t.device)._host_copy()
        return _put(t, n_words_fn(u))
    return _put(t, transform(g))


def _float_kernel_check(t, name):
    if not t.dtype.is_floating_point:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{D.TENSOR_TYPE_NAMES[t.dtype][:-6]}'")


def exponential_(t, lambd=1.0, generator=None):
    """PyTorch's cpu exponential_: -1 / lambd * log1p(-u), u a double uniform per element (host: glibc log1p)."""
    _float_kernel_check(t, "exponential")
    if not (lambd > 0.0):
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    f = lambda u: -1.0 / lambd * KR.libm("log1p", -u)
    return _host_fill(t, generator, f, lambda g: f(_host_uniform(g, t.numel())))


def geometric_(t, p, generator=None):
    """ceil(log(u) / log1p(-p)), u a double uniform per element (PyTorch's cpu geometric_)."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
    f = lambda u: np.ceil(KR.libm("log", u) / math.log1p(-p))
    return _host_fill(t, generator, f, lambda g: f(_host_uniform(g, t.numel())))


def cauchy_(t, median=0.0, sigma=1.0, generator=None):
    """median + sigma * tan(pi (u - 1/2)), u a double uniform per element (PyTorch's cpu cauchy_)."""
    _float_kernel_check(t, "cauchy")
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
    f = lambda u: KR.fma64(sigma, KR.libm("tan", np.pi * (u - 0.5)), median)
    return _host_fill(t, generator, f, lambda g: f(_host_uniform(g, t.numel())))


def log_normal_(t, mean=1.0, std=2.0, generator=None):
    """exp(mean + std * z), z PyTorch's double normal draws (cached pairs) per element."""
    _float_kernel_check(t, "log_normal")
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
    g = _gen(generator, t.device)
    if g._mt is None:
        z = randn(t.numel(), generator=g, dtype=D.float64, device=t.device)._host_copy()
    else:
        z = g._normal_pairs(t.numel())
    return _put(t, KR.libm("exp", KR.fma64(z, std, mean))) if t.numel() else t


def _int_limit(dt):
    """The largest value random_() draws for ``dt`` plus one (PyTorch's uniform_int)."""
    if dt.is_floating_point:
        return (1 << {"float64": 53, "float32": 24, "float16": 11, "bfloat16": 8}[dt.name]) + 1
    if dt is D.bool_:
        return 2
    return int(np.iinfo(dt.np).max) + 1


def random_(t, from_=0, to=None, generator=None):
    """``Tensor.random_()``: integers in [0, 2^mantissa] (floats) / [0, max] (ints); ``random_(to)``: [0, to);
    ``random_(from, to)``: [from, to); ``random_(from, None)``: [from, max]."""
    if to is None and from_ == 0:
        lim = _int_limit(t.dtype)
        wide = t.dtype in (D.int64, D.float64)
        g = _mt_or_none(t, generator)
        if g is None or lim < 1 << 32 and not wide:
            return _random_fill(t, 2, 0, lim, generator)
        w = g._raw64(t.numel()) if wide else g._raw(t.numel()).astype(np.uint64)
        return _put(t, (w % np.uint64(lim)).astype(np.int64)) if t.numel() else t
    if to is None:
        to = _int_limit(t.dtype) if t.dtype.is_floating_point else int(np.iinfo(t.dtype.np).max) + 1
        if from_ == -(1 << 63) and t.dtype is D.int64:      # the full 64-bit range: random64 as int64
            g = _mt_or_none(t, generator)
            if g is not None:
                return _put(t, g._raw64(t.numel()).view(np.int64)) if t.numel() else t
    if from_ >= to:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={from_} >= to={to}")
    return _random_fill(t, 2, from_, to, generator)


def bernoulli_(t, p=0.5, generator=None):
    """``Tensor.bernoulli_(p)``: 1 with probability p.  A float p: a double uniform (two words) < p per element
    (PyTorch's cpu kernel where MKL is not used: AMD cpus); a tensor p (broadcast to t): a float uniform (one
    word) < p for float/half p, a double one for double p."""
    if isinstance(p, Tensor):
        g = _gen(generator, t.device)
        pv = np.broadcast_to(p._host_copy(), tuple(t.shape))
        if pv.size and not ((pv >= 0) & (pv <= 1)).all():
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
        pv = np.ascontiguousarray(pv.transpose([d for d in sorted(range(t.dim()), key=lambda d: -t.stride(d))]))
        n = t.numel()
        if n == 0:
            return t
        if g._mt is None:
            u = rand(n, generator=g, dtype=D.float64, device=t.device)._host_copy()
        elif p.dtype is D.float64:
            u = _host_uniform(g, n)
        else:
            u = (g._raw(n) & 0xFFFFFF).astype(np.float32) * np.float32(2.0 ** -24)
        return _put(t, (u.reshape(pv.shape) < pv).astype(np.float64))
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")
    g = _gen(generator, t.device)
    if g._mt is None:
        return _put(t, (rand(t.numel(), generator=g, dtype=D.float64, device=t.device)._host_copy() < p)
                    .astype(np.float64)) if t.numel() else t
    n = t.numel()
    if n:
        v = _iter_view(t)
        c = v if v.is_contiguous() else _empty(v.shape, t.dtype, t.device)
        KR.bernoulli_words(g._take(2 * n), c, p)
        if c is not v:
            KE.copy(c, v)
    return t


def bernoulli(input, p=None, generator=None, out=None):
    """``torch.bernoulli(input)``: 1 with probability input[i]; ``bernoulli(input, p)``: probability p."""
    t = _empty(input.shape, input.dtype, input.device) if out is None else out
    return bernoulli_(t, input if p is None else p, generator)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, device=None,
           requires_grad=False):
    """torch.normal: (Tensor mean, Tensor std) / (Tensor, float) / (float, Tensor) draw standard normals
    of the broadcast shape then scale and shift as PyTorch does (differentiable in mean and std); (float,
    float, size) is ``empty(size).normal_(mean, std)``."""
    tm, ts = isinstance(mean, Tensor), isinstance(std, Tensor)
    if ts and std.numel() and (std._host_copy() < 0).any():
        raise RuntimeError("normal expects all elements of std >= 0.0")
    if tm or ts:
        like = mean if tm else std
        shape = tuple(np.broadcast_shapes(tuple(mean.shape) if tm else (), tuple(std.shape) if ts else ()))
        z = _empty(shape, like.dtype, like.device)
        if tm and not ts:
            r = _random_fill(z, 1, 0.0, std, generator) + mean
        else:
            r = _random_fill(z, 1, 0.0, 1.0, generator) * std + mean
        return r if out is None else out.copy_(r)
    if size is None:
        raise TypeError("normal() received an invalid combination of arguments: (float mean, float std) needs size")
    if out is not None:
        return _random_fill(out, 1, mean, std, generator)
    t = empty(*_shape_arg((size,)), dtype=D.to_dtype(dtype, "normal") if dtype is not None else None, device=device)
    return _finish(_random_fill(t, 1, mean, std, generator), requires_grad)


def is_scalar(v):
    return isinstance(v, (numbers.Number, np.number, np.bool_))
