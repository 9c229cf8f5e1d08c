"""Numpy building blocks of replayed tapes: strided views of device memory, nested loads and stores,
box-shaped masks, the exact fp32 fma, and which interpreter builder ops are plain numpy expressions."""
import numpy as np
import triton.language as tl

from . import native
from .direct import _cvt
from .internals import _I


class _HostArray:
    __slots__ = ("__array_interface__",)

    def __init__(self, addr, shape, strides, typestr):
        self.__array_interface__ = {"data": (addr, False), "shape": shape, "strides": strides,
                                    "typestr": typestr, "version": 3}


def _view(addr, shape, strides, dtype):
    return np.asarray(_HostArray(addr, shape, strides, dtype.str))


class _Views(dict):
    """address -> numpy view of one load/store site (fixed shape, strides, dtype); addresses recur
    (the caching allocator hands the same blocks out again), so most launches make no view."""

    __slots__ = ("shape", "strides", "dtype")

    def __init__(self, shape, strides, dtype):
        super().__init__()
        self.shape, self.strides, self.dtype = shape, strides, dtype

    def __missing__(self, addr):
        if len(self) >= 64:
            self.clear()
        v = self[addr] = _view(addr, self.shape, self.strides, self.dtype)
        return v


def _affine(rel, itemsize):
    """(start, strides) in bytes if rel[idx] == start + sum(strides * idx) with non-negative strides."""
    flat0 = int(rel.flat[0])
    strides = []
    for ax, n in enumerate(rel.shape):
        if n == 1:
            strides.append(0)
            continue
        idx = [0] * rel.ndim
        idx[ax] = 1
        s = int(rel[tuple(idx)]) - flat0
        if s < 0 or s % itemsize:
            return None
        strides.append(s)
    expect = np.full(rel.shape, flat0, dtype=np.int64)
    for ax, s in enumerate(strides):
        shp = [1] * rel.ndim
        shp[ax] = rel.shape[ax]
        expect = expect + (np.arange(rel.shape[ax], dtype=np.int64) * s).reshape(shp)
    if not np.array_equal(expect, rel):
        return None
    return flat0, tuple(strides)


def _factorize(r):
    """Shape that makes 1-D offsets r piecewise-affine per row (inner dims first found), or None."""
    n = r.size
    if n <= 2:
        return [n]
    d = np.diff(r)
    bad = np.nonzero(d != d[0])[0]
    if bad.size == 0:
        return [n]
    inner = int(bad[0]) + 1
    if n % inner:
        return None
    outer = _factorize(r[::inner])
    return None if outer is None else outer + [inner]


def _fine_shape(rel, mask):
    """Per axis of ``rel`` (block offsets), the sizes of a mixed radix (outer first, their product >= the axis:
    the last row may be padded) under which rel may be affine and ``mask`` (broadcastable, or None) a box of
    intervals: an implicit GEMM's rows n * P + oh * OW + ow become (n, oh, ow), a stride-2 pooling window's taps
    (ow, 2); None if an axis has no such split."""
    m = np.ones(rel.shape, bool) if mask is None else np.broadcast_to(mask, rel.shape)
    fine = []
    for ax, n in enumerate(rel.shape):
        other = tuple(a for a in range(rel.ndim) if a != ax)
        line = rel[tuple(slice(None) if a == ax else 0 for a in range(rel.ndim))]
        f = _radix(line.astype(np.int64), m.any(axis=other) if other else m)
        if f is None:
            return None
        fine.append(f)
    return fine


def _pad_to(a, shape, value):
    """a padded at the end of each axis to ``shape`` (edge values, or ``value`` when given)."""
    widths = [(0, t - n) for n, t in zip(a.shape, shape)]
    return np.pad(a, widths, mode="edge") if value is None else np.pad(a, widths, constant_values=value)


def _interval(m):
    """(lo, hi) of a 1-D mask that is one interval, None if it is empty, else False."""
    idx = np.flatnonzero(m)
    if idx.size == 0:
        return None
    lo, hi = int(idx[0]), int(idx[-1]) + 1
    return (lo, hi) if hi - lo == idx.size else False


def _steady(r):
    """r (rows of a 2-D array) advances by one common step."""
    if r.shape[-1] < 2:
        return True
    d = np.diff(r, axis=-1)
    return bool((d == d.flat[0]).all())


def _radix(r, m):
    """Sizes (outer first) splitting line r / mask m so each axis is affine in r over an interval of m (the
    masked-off lanes are free, the last row may be padded): the largest inner size q, among the distances
    between the line's first breaks (a step or mask change), whose live rows share m's interval and r's step
    there, recursively on the rows' first live lane; None if there is none."""
    n = r.size
    iv = _interval(m)
    if iv is None or (iv and _steady(r[iv[0]:iv[1]])):
        return [n]
    d = np.diff(r)
    brk = np.flatnonzero((m[1:] != m[:-1]) | np.append(False, d[1:] != d[:-1]))[:16] + 1
    brk = np.append(0, brk)
    for q in sorted({int(b - a) for a in brk for b in brk if 1 < b - a < n}, reverse=True):
        k = -(-n // q)
        rr, mm = _pad_to(r, (k * q,), None).reshape(k, q), _pad_to(m, (k * q,), False).reshape(k, q)
        live = mm.any(axis=1)
        rows = mm[live]
        if not (rows == rows[0]).all():
            continue
        iv = _interval(rows[0])
        if not iv or not _steady(rr[live, iv[0]:iv[1]]):
            continue
        outer = _radix(rr[:, iv[0]], live)
        if outer is not None:
            return outer + [q]
    return None


def _interval_box(mask, shape):
    """Per-axis [lo, hi) if mask (broadcastable to ``shape``) is a product of intervals, else False;
    None for an empty mask.  (A convolution tap's valid rows: lo > 0 where it reads the padding.)"""
    m = np.broadcast_to(mask, shape)
    if not m.any():
        return None
    lims = []
    for ax in range(m.ndim):
        other = tuple(a for a in range(m.ndim) if a != ax)
        line = m.any(axis=other) if other else m
        idx = np.flatnonzero(line)
        lo, hi = int(idx[0]), int(idx[-1]) + 1
        if hi - lo != idx.size:
            return False
        lims.append((lo, hi))
    box = np.zeros(shape, dtype=bool)
    box[tuple(slice(lo, hi) for lo, hi in lims)] = True
    return tuple(lims) if np.array_equal(box, m) else False


def _prefix_len(mask, n):
    """Length of a 1-D prefix mask (None: everything), or -1 if it is not a prefix."""
    if mask is None:
        return n
    m = np.broadcast_to(mask, (n,))
    c = int(m.sum())
    return c if m[:c].all() else -1


def _pieces(shape, n):
    """Split the first n row-major elements of ``shape`` into (index, flat_start, count) blocks."""
    out = []

    def rec(prefix, shp, cnt, flat0):
        total = int(np.prod(shp)) if shp else 1
        if cnt == total:
            out.append((prefix, flat0, cnt))
            return
        inner = int(np.prod(shp[1:])) if len(shp) > 1 else 1
        q, r = divmod(cnt, inner)
        if q:
            out.append((prefix + (slice(0, q),), flat0, q * inner))
        if r:
            rec(prefix + (q,), shp[1:], r, flat0 + q * inner)
    rec((), tuple(shape), n, 0)
    return tuple(out)


def _nested_load(addr, shape, strides, pieces, n_block, np_dtype, other):
    v = _view(addr, shape, strides, np_dtype)
    out = np.empty(n_block, dtype=np_dtype)
    done = 0
    for idx, f0, cnt in pieces:
        out[f0:f0 + cnt] = v[idx].reshape(-1)
        done = f0 + cnt
    if done < n_block:
        out[done:] = other if np.ndim(other) == 0 else np.broadcast_to(other, (n_block,))[done:]
    return out


def _nested_store(addr, value, shape, strides, pieces, np_dtype):
    v = _view(addr, shape, strides, np_dtype)
    data = np.broadcast_to(value, (int(np.prod(shape)),))
    for idx, f0, cnt in pieces:
        v[idx] = data[f0:f0 + cnt].reshape(v[idx].shape)


def _box(mask, shape):
    """Per-axis valid lengths if mask is the product of prefix masks (None: no mask); else False."""
    if mask is None:
        return tuple(shape)
    m = np.broadcast_to(mask, shape)
    if m.all():
        return tuple(shape)
    lens = []
    for ax in range(m.ndim):
        other = tuple(a for a in range(m.ndim) if a != ax)
        line = m.any(axis=other) if other else m
        c = int(line.sum())
        if not line[:c].all():
            return False
        lens.append(c)
    box = np.zeros(shape, dtype=bool)
    box[tuple(slice(0, c) for c in lens)] = True
    return tuple(lens) if np.array_equal(box, m) else False


class _Val:
    """What record knows of a value at compile time: a slot (``slot`` set) or a constant handle/object."""

    __slots__ = ("slot", "obj", "ty", "np_dtype", "shape")

    def __init__(self, slot, obj, h):
        self.slot, self.obj = slot, obj
        ok = isinstance(h, _I.TensorHandle)
        self.ty = h.dtype if ok else None
        self.np_dtype = h.data.dtype if ok else None
        self.shape = h.data.shape if ok else None




_B = _I.InterpreterBuilder


def _same_code(name, template):
    f, t = getattr(_B, name, None), getattr(_B, template)
    return getattr(f, "__code__", None) is not None and f.__code__.co_code == t.__code__.co_code \
        and f.__code__.co_names[:-1] == t.__code__.co_names[:-1]


def _builder_kind(name):
    """("binary", ufunc) / ("unary", ufunc) / ("cast", None) / ("bitcast", None) for builder methods that
    are one-line lambdas over binary_op / unary_op / cast_impl (read from their bytecode), else None."""
    f = getattr(_B, name, None)
    if f is None:
        return None
    if f is _B.create_bitcast:
        return ("bitcast", None)
    if _same_code(name, "create_fadd") and f.__code__.co_names[:2] == ("binary_op", "np"):
        return ("binary", getattr(np, f.__code__.co_names[2]))
    if _same_code(name, "create_exp") and f.__code__.co_names[:2] == ("unary_op", "np"):
        return ("unary", getattr(np, f.__code__.co_names[2]))
    for tmpl in ("create_fp_ext", "create_int_cast"):
        if getattr(f, "__code__", None) is not None and f.__code__.co_code == getattr(_B, tmpl).__code__.co_code \
                and f.__code__.co_names == ("cast_impl",):
            return ("cast", None)
    return None


_KINDS = {}


def _kind(name):
    k = _KINDS.get(name, 0)
    if k == 0:
        k = _KINDS[name] = _builder_kind(name)
    return k


_UINTS = {4: np.uint32, 8: np.uint64}


SELECT_MIN = 4096       # _select's integer path from this many elements on; below, np.where (a tape emits it directly)


_SELECT = [None]        # aten_cpu.c's select ufunc, False where it is not built


def _select(c, x, y):
    """``np.where(c, x, y)`` of a block, without a branch per element: numpy's where mispredicts on a data-dependent
    condition (a ReLU mask, a pooling window's argmax: ~5 ns an element, 5x the cost of this).  The same bits,
    through the integer views: y ^ ((x ^ y) & -c).  Other operands (small, mixed dtypes): ``np.where``."""
    u = _UINTS.get(x.dtype.itemsize) if type(x) is np.ndarray and type(y) is np.ndarray else None
    if u is None or x.dtype != y.dtype or type(c) is not np.ndarray or c.dtype != np.bool_ or c.size < SELECT_MIN:
        return np.where(c, x, y)
    f = _SELECT[0]
    if f is None:
        f = _SELECT[0] = native.aten_ufunc("select") or False
    if f is not False:          # (aten_cpu.c's select: the same bits in one pass)
        return f(c, x.view(u), y.view(u)).view(x.dtype)
    m = c.view(np.uint8).astype(u)
    np.negative(m, out=m)
    yi = y.view(u)
    return ((x.view(u) ^ yi) & m ^ yi).view(x.dtype)


_LOW29, _MIDPOINT = np.uint64(0x1FFFFFFF), np.uint64(0x10000000)
_ABS32, _MIN_NORMAL32 = np.uint32(0x7FFFFFFF), np.uint32(0x00800000)


def _fma32(x, y, z):
    """The interpreter's fma_fp32(x, y, z), bit for bit, in numpy (fma_fp32 loops in C: 6 ns an element); the
    tapes call it only where ``native.fma_ufunc()`` cannot be built.

    x y is exact in float64, so float32(float64(x y) + z) rounds twice, and that differs from one rounding
    only where the float64 sum s lands exactly on a midpoint of float32's grid: low 29 mantissa bits 1 << 28
    for normal results, an odd multiple of 2^-150 for |s| < 2^-126 (there the grid is coarser; the last
    midpoint, 2^-126 - 2^-150, rounds to 2^-126).  Elements with those bits, or with a nonzero s whose
    float32 rounding is at most 2^-126 in magnitude, take fma_fp32 (a few in a billion, on normal data).
    Four float64 passes and four cheap flag passes: about 2.3 ns an element (a float64 round-to-odd sum,
    the TwoSum error's sign setting s's last bit, costs five more float64 passes).
    """
    if not x.shape == y.shape == z.shape:
        x, y, z = np.broadcast_arrays(x, y, z)
    if x.size <= 256:       # a few elements: the C loop costs less than the numpy passes below
        return _I._interpreter.fma_fp32(x, y, z)
    s = x.astype(np.float64)
    np.multiply(s, y, out=s)
    np.add(s, z, out=s)
    r = s.astype(np.float32)
    flag = (s.view(np.uint64) & _LOW29) == _MIDPOINT
    sub = (r.view(np.uint32) & _ABS32) <= _MIN_NORMAL32
    sub &= s != 0       # exact zeros (masked-off lanes, zero gradients) are many and need no fix
    flag |= sub
    if np.count_nonzero(flag):
        idx = np.flatnonzero(flag)
        r.reshape(-1)[idx] = _I._interpreter.fma_fp32(x.ravel()[idx], y.ravel()[idx], z.ravel()[idx])
    return r


def _dyn_handle(a):
    if type(a) is float:
        return _I.TensorHandle(np.array([a], dtype=np.float32), tl.float32)
    return _cvt(a).handle


