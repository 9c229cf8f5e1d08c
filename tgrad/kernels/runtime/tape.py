"""The tape compiler: recorded builder ops of one launch key become one Python function.

Each builder op the interpreter implements as a plain numpy expression is emitted as that expression
(same ufunc, same casts, so bit-identical); anything else calls the builder on TensorHandles rebuilt
from the recorded types.  Tapes that call the builder run under ``LOCK``; the others run unlocked."""
import math
import re
import warnings

import numpy as np
import triton.language as tl

from . import blas, native
from .host_state import LOCK
from .internals import _I, _lang_for_interpreter, _scope, _tls
from .tape_ops import SELECT_MIN, _dyn_handle, _fma32, _kind, _nested_load, _nested_store, _pad_to, _select, _Val, _Views


def _th(data, dtype):
    # a TensorHandle without the dataclass __init__/__post_init__ (the recorded run validated these types)
    h = _TH_new(_TH)
    h.data = data
    h.dtype = dtype
    h.attr = {}
    return h


_TH = _I.TensorHandle
_TH_new = object.__new__


def _nanred(uf, a, axis, keepdims):
    # np.nanmax / np.nanmin of a plain ndarray: fmax / fmin reduce, warning on an all-NaN slice
    res = uf.reduce(a, axis=axis, out=None, keepdims=keepdims)
    if np.isnan(res).any():
        warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=2)
    return res


def _to_data(ret, np_dtype):
    # ReduceScanOpInterface.to_tensor, data part
    if hasattr(ret, "shape") and ret.shape:
        return ret.astype(np_dtype)
    return np.array([ret]).astype(np_dtype)


def _elem_ty(ty):
    while hasattr(ty, "element_ty"):
        ty = ty.element_ty
    return ty


def _empty(v):
    return np.empty((0,), v.np_dtype)


class _Emitter:
    def __init__(self, kinds):
        self.ns = {"_np": np, "_th": _th, "_nparray": np.array, "_u64": np.uint64, "_f32": np.float32, "_i32": np.int32,
                   "_i8": np.int8, "_bool": np.bool_, "_dynh": _dyn_handle, "_bt": np.broadcast_to,
                   "_iload": _I._interpreter.load, "_istore": _I._interpreter.store, "_to_data": _to_data,
                   "_nanred": _nanred, "_nested_load": _nested_load, "_nested_store": _nested_store,
                   "_sel": _select}
        self.consts = {}
        self.lines = []
        self.kinds = kinds
        self.inputs_used = set()
        self.calls_builder = False
        self.box = None         # (block shape, box, box slices) while compiling a tape box-only (_box_of)
        self.shapes = {}        # local name -> the shape of its array (for _peephole)
        self.dtypes = {}        # local name -> its numpy dtype (for _peephole)
        self.zero_pad = {}      # local name -> the box of a load whose other lanes are +0 (create_dot's K)

    def k(self, v):
        key = (type(v), id(v))
        name = self.consts.get(key)
        if name is None:
            name = self.consts[key] = f"_k{len(self.consts)}"
            self.ns[name] = v
        return name

    def fill(self, other, shape, np_dtype):
        """Name of a constant ``shape`` array of ``other`` (a masked load's fill, copied per replay): one shared
        array per (shape, dtype, value) when ``other`` is uniform, so a tape's bytes do not grow per load site."""
        a = np.array(np.broadcast_to(other, shape), dtype=np_dtype)
        if a.size == 0 or not (a == a.flat[0]).all():
            return self.k(a)
        key = ("fill", a.shape, a.dtype.str, a.flat[0].tobytes())
        name = self.consts.get(key)
        if name is None:
            name = self.consts[key] = f"_k{len(self.consts)}"
            self.ns[name] = a
        return name

    def var(self, p, s):
        if s < len(self.kinds):
            self.inputs_used.add(s)
            return f"x{s}"
        return f"s{p}_{s}"

    def arr(self, p, v):
        """Expression of a value's numpy data."""
        if self.box is None:
            return self.var(p, v.slot) if v.slot is not None else self.k(v.obj.data)
        shape, _, sl = self.box         # block-shaped values are box-shaped; scalars stay (1,)
        if v.slot is not None:
            if v.slot >= len(self.kinds) and tuple(v.shape) not in (shape, (1,)):
                raise _NoBox
            return self.var(p, v.slot)
        d = v.obj.data
        if d.shape == (1,):
            return self.k(d)
        if d.shape != shape:
            raise _NoBox
        return self.k(np.ascontiguousarray(d[sl]))

    def handle(self, p, v, slots):
        if v.slot is not None:
            return f"_th({self.var(p, v.slot)}, {self.k(slots[v.slot].ty)})"
        return self.k(v.obj)


_SMALL_BROADCAST = 8192     # elements: a broadcast up to this size is replayed as a copy

_LOWERED_BY_NAME = frozenset({"create_select", "create_splat", "create_addptr", "create_expand_dims",
                              "create_broadcast", "create_reshape", "create_trans", "create_idiv", "create_sdiv",
                              "create_udiv", "create_rsqrt", "create_fabs", "create_fma", "create_dot",
                              "create_masked_load", "create_masked_store", "create_load", "create_store"})


def _lower_expr(e, p, name, vals, kwargs, out, extra):
    """A numpy expression for one builder op (as InterpreterBuilder computes it), or None."""
    if kwargs or not isinstance(out, _Val) or out.ty is None:
        return None
    a = [e.arr(p, v) if v.ty is not None else None for v in vals]
    kind = _kind(name)
    if kind is not None:
        k, uf = kind
        if k == "binary" and len(vals) == 2 and None not in a:
            if vals[0].np_dtype == np.bool_ and vals[1].np_dtype == np.bool_:
                if uf in (np.bitwise_and, np.bitwise_or, np.bitwise_xor):     # 0/1 in, 0/1 out: no wrapping
                    x = f"{e.k(uf)}({a[0]}, {a[1]})"
                    return x if out.np_dtype == np.bool_ else f"{x}.astype({e.k(out.np_dtype)})"
                # int1 wraps like a 1-bit integer (binary_op's bool branch)
                x = f"({e.k(uf)}({a[0]}.astype(_i8), {a[1]}.astype(_i8)) & 1).astype(_bool)"
                return x if out.np_dtype == np.bool_ else f"{x}.astype({e.k(out.np_dtype)})"
            try:
                raw = uf(_empty(vals[0]), _empty(vals[1])).dtype
            except TypeError:
                return None
            x = f"{e.k(uf)}({a[0]}, {a[1]})"
            return x if raw == out.np_dtype else f"{x}.astype({e.k(out.np_dtype)})"
        if k == "unary" and len(vals) == 1 and a[0] is not None:
            return f"{e.k(uf)}({a[0]})"
        if k in ("cast", "bitcast") and len(vals) >= 2 and a[0] is not None:
            src, dst = vals[0].ty.scalar, vals[1].obj
            dt = _I._get_np_dtype(dst)
            if k == "bitcast":
                return f"{a[0]}.view({e.k(dt)})"
            if {src, dst.scalar} == {tl.bfloat16, tl.float32}:
                return None
            return f"{a[0]}.astype({e.k(dt)})"
        return None
    if name == "create_select" and len(vals) == 3 and None not in a:
        raw = np.where(_empty(vals[0]), _empty(vals[1]), _empty(vals[2])).dtype
        c = vals[0]
        if c.slot is None and raw == out.np_dtype and out.slot is not None and c.np_dtype == np.bool_:
            m = np.asarray(c.obj.data)     # a constant mask, all one way (a full block's): that operand itself
            z = 1 if m.all() else 2 if not m.any() else 0
            if z and vals[z].slot is not None and vals[z].np_dtype == out.np_dtype and \
                    tuple(vals[z].shape) == tuple(out.shape):
                if a[z] in e.zero_pad:
                    e.zero_pad[e.var(p, out.slot)] = e.zero_pad[a[z]]
                return a[z]     # (a plain name: _peephole's load-as-view never reaches through it)
        small = math.prod(out.shape) < SELECT_MIN and (e.box is None or math.prod(e.box[1]) < SELECT_MIN)
        # a block below SELECT_MIN elements (so is each operand, broadcast to it): _select's np.where, without its
        # Python call and checks (~1 us)
        x = f"{'_np.where' if small else '_sel'}({a[0]}, {a[1]}, {a[2]})"
        if raw == out.np_dtype and out.slot is not None and e.box is None:
            for z, c in ((1, 2), (2, 1)):      # where(m, x, +0) of a zero-padded x: zero-padded alike
                if a[z] in e.zero_pad and vals[c].slot is None and _plus_zero(vals[c].obj.data):
                    e.zero_pad[e.var(p, out.slot)] = e.zero_pad[a[z]]
        return x if raw == out.np_dtype else f"{x}.astype({e.k(out.np_dtype)})"
    if name == "create_splat" and len(vals) == 2 and a[1] is not None:
        ty = vals[1].ty
        x = f"{a[1]}[0]" if isinstance(ty, tl.block_type) else a[1]
        # np.full(shape, x, dtype) is empty + copyto(casting="unsafe"); "@" stands for the output (_emit_op)
        dt = e.k(_I._get_np_dtype(ty))
        shape = tuple(vals[0].obj.shape)
        if e.box is not None:
            shape = e.box[1] if shape == e.box[0] else _no_box()
        return f"_np.empty({e.k(shape)}, {dt}); _np.copyto(@, {x}, casting='unsafe')"
    if name == "create_addptr" and len(vals) == 2 and None not in a:
        bw = max(1, _elem_ty(vals[0].ty).primitive_bitwidth // 8)
        if vals[1].slot is None:        # constant offsets: their byte offsets once, here
            return f"({a[0]} + {e.k(bw * vals[1].obj.data.astype(np.uint64))})"
        return f"({a[0]} + {bw} * {a[1]}.astype(_u64))"
    if name == "create_expand_dims" and len(vals) == 2 and a[0] is not None:
        # np.expand_dims(x, axis) is x.reshape(shape with a 1 inserted); the shapes are static
        return f"{a[0]}.reshape({e.k(tuple(out.shape))})"    # (a constant: the source is the same for other blocks)
    if name == "create_broadcast" and len(vals) == 2 and a[0] is not None:
        if math.prod(out.shape) <= _SMALL_BROADCAST:
            # a contiguous copy: np.broadcast_to's wrapper costs ~2.4 us, and ufuncs run slower on its view
            return f"_np.empty({e.k(tuple(out.shape))}, {e.k(vals[0].np_dtype)}); _np.copyto(@, {a[0]})"
        return f"_bt({a[0]}, {e.k(vals[1].obj)})"
    if name == "create_reshape" and len(vals) == 3 and a[0] is not None:
        return f"{a[0]}.reshape({e.k(vals[1].obj)})"
    if name == "create_trans" and len(vals) == 2 and a[0] is not None:
        return f"{a[0]}.transpose({e.k(vals[1].obj)})"     # (the method: np.transpose's wrapper costs ~2 us)
    if name in ("create_idiv", "create_sdiv", "create_udiv") and len(vals) == 2 and None not in a:
        return f"(({a[0]} - _np.fmod({a[0]}, {a[1]})) // {a[1]})"
    if name == "create_rsqrt" and len(vals) == 1 and a[0] is not None:
        return f"(1 / _np.sqrt({a[0]}))"
    if name == "create_fabs" and len(vals) == 1 and a[0] is not None:
        ty = vals[0].ty
        u = getattr(np, f"uint{ty.primitive_bitwidth}")
        mask = (1 << (ty.primitive_bitwidth - 1)) - 1
        # (the mask a 0-d array made once: a Python int is converted on every call, ~1.5 us)
        return f"({a[0]}.view({e.k(u)}) & {e.k(np.array(mask, u))}).view({e.k(_I._get_np_dtype(ty))})"
    if name == "create_fma" and len(vals) == 3 and None not in a:
        f = native.fma_ufunc()
        if f is not None and vals[2].np_dtype in (np.float32, np.float64):
            return f"{e.k(f)}({a[0]}, {a[1]}, {a[2]})"
        if vals[2].np_dtype == np.float32:        # _fma32 broadcasts its operands itself
            return f"{e.k(_fma32)}({a[0]}, {a[1]}, {a[2]})"
        if vals[2].np_dtype != np.float64:
            return None
        return f"{e.k(_I._interpreter.fma_fp64)}(*_np.broadcast_arrays({a[0]}, {a[1]}, {a[2]}))"
    if name == "create_native" and len(vals) >= 2 and None not in a[1:]:
        return f"{e.k(vals[0].obj)}({', '.join(a[1:])})"      # a native helper's ufunc (native.py)
    if name == "create_dot" and len(vals) == 5 and None not in a[:3]:
        if any(v.ty.primitive_bitwidth == 8 and v.ty.is_floating() or v.ty.scalar.is_bf16() for v in vals[:2]):
            return None     # the builder's create_dot converts them (internals: bfloat16 too)
        m, k = vals[0].shape[-2:]
        x, y = a[0], a[1]
        ka, kb = e.zero_pad.get(x), e.zero_pad.get(y)
        n, lead = vals[1].shape[-1], math.prod(np.broadcast_shapes(vals[0].shape[:-2], vals[1].shape[:-2]))
        kt = None if ka is None or kb is None or len(ka) != len(kb) or ka[-1] != kb[-2] else -(-ka[-1] // 16) * 16
        if kt is not None and kt < k and blas.plan(m, kt, n, lead) == blas.plan(m, k, n, lead):
            # both operands are +0 past the same K extent: the GEMM over that extent rounded up to 16 gives the
            # same bits (the BLAS's K loop adds the same products in the same order, then whole groups of +0 ones;
            # its remainder loop for a K that is not a multiple of 8 does not: OpenBLAS Haswell), cut alike
            k = kt
            x, y = f"{x}[..., :{k}]", f"{y}[..., :{k}, :]"
        mm = blas.matmul_small if m * k * n < blas.SMALL else blas.matmul_large
        return f"({e.k(mm)}({x}, {y}, {e.k(vals[2].np_dtype)}) + {a[2]})"
    if name == "create_masked_load" and len(vals) == 5 and None not in a[:2]:
        dt = _I._get_np_dtype(_elem_ty(vals[0].ty))
        oth = a[2] if a[2] is not None else f"_np.zeros_like({a[0]}, dtype={e.k(dt)})"
        return f"_iload({a[0]}, {a[1]}, {oth}, {e.k(dt)})"
    if extra is not None and extra[0] == "scan" and len(vals) == 1:
        sc, in_types = extra[1]
        # ScanOps.cumsum (numpy's sequential cumsum) on a forward sum scan
        if sc.combine_fn is not tl.standard._sum_combine or sc.reverse or a[0] is None:
            return None
        return f"_np.cumsum({a[0]}, axis={sc.axis!r}).astype({e.k(_I._get_np_dtype(in_types[0]))}, copy=False)"
    if extra is not None and extra[0] == "reduce" and len(vals) == 1:
        red, in_types = extra[1]
        # np.sum / np.nanmax / np.nanmin on an ndarray, as numpy implements them
        f = {id(tl.standard._sum_combine): "sum", id(tl.standard._elementwise_max): "_np.fmax",
             id(tl.standard._elementwise_min): "_np.fmin"}.get(id(red.combine_fn))
        if type(red) is not _I.ReduceOps or f is None or a[0] is None:
            return None
        dt = _I._get_np_dtype(in_types[0])
        if f == "sum":
            x = (f"_np.add.reduce(_np.ascontiguousarray({a[0]}), {red.axis!r}, None, None, "   # as _sum_contiguous
                 f"keepdims={red.keep_dims!r})")
        else:
            x = f"_nanred({f}, {a[0]}, {red.axis!r}, {red.keep_dims!r})"
        if type(red.axis) is int and (red.keep_dims or len(vals[0].shape) >= 2):
            return f"{x}.astype({e.k(dt)}, copy=False)"     # an array (not a scalar), fresh: _to_data's cast
        return f"_to_data({x}, {e.k(dt)})"
    return None


def _emit_op(e, p, slots, op):
    name, f, vals, kwargs, out, low = op
    if type(out) is int and out >= len(e.kinds) and slots[out].shape is not None:      # for _peephole
        shape = tuple(slots[out].shape)
        e.shapes[f"s{p}_{out}"] = e.box[1] if e.box is not None and shape == e.box[0] else shape
        e.dtypes[f"s{p}_{out}"] = slots[out].np_dtype
    if low is not None and low[0] in ("load", "store", "nload", "nstore", "sload", "sstore"):
        return _emit_lowered(e, p, vals, out, low)
    lines = e.lines
    if e.box is not None and (out is None or type(out) is tuple or not (name in _BOX_OPS or _kind(name) is not None or
                                                                        name == "create_native" and _lane_wise(vals[0].obj))
                              or tuple(slots[out].shape or ()) not in (e.box[0], (1,))):
        raise _NoBox        # (a (1,)-shaped op works on scalars: Triton mixes shapes only through splat)
    if out is not None and type(out) is not tuple:
        x = _lower_expr(e, p, name, vals, kwargs, slots[out], low)
        if x is not None:
            o = e.var(p, out)
            lines.append(f"{o} = {x.replace('@', o)}")
            return
    if e.box is not None:
        raise _NoBox
    if name == "create_masked_store" and len(vals) == 4 and not kwargs and all(v.ty is not None for v in vals[:3]):
        lines.append(f"_istore({e.arr(p, vals[0])}, {e.arr(p, vals[1])}, {e.arr(p, vals[2])})")
        return
    if name == "create_split" and type(out) is tuple and len(vals) == 1 and vals[0].ty is not None and not kwargs:
        x = e.arr(p, vals[0])           # the interpreter's split: the two halves of the last axis (views)
        lines.extend(f"{e.var(p, s)} = {x}[..., {i}]" for i, s in enumerate(out))
        return
    args = [e.handle(p, v, slots) for v in vals]
    e.calls_builder = True
    lines.append(f"# {name}")
    call = f"{e.k(f)}({', '.join(args)}{', **' + e.k(kwargs) if kwargs else ''})"
    if out is None:
        lines.append(call)
    elif type(out) is tuple:
        lines.append(f"_r = {call}")
        lines.extend(f"{e.var(p, s)} = _r[{i}].data" for i, s in enumerate(out))
    else:
        lines.append(f"{e.var(p, out)} = {call}.data")


def _plus_zero(x):
    """Whether float data ``x`` is all +0."""
    x = np.asarray(x)
    return x.dtype.kind == "f" and not (x != 0).any() and not np.signbit(x).any()


def _emit_lowered(e, p, vals, out, low):
    kind, q = low
    lines = e.lines
    dt = e.k(q["np_dtype"])
    addr = f"a{q['base']}" + (f" + {q['start']}" if q["start"] else "")
    if kind == "nload":
        lines.append(f"{e.var(p, out)} = _nested_load({addr}, {q['shape']!r}, {q['strides']!r}, "
                     f"{e.k(q['pieces'])}, {q['n']}, {dt}, {e.k(q['other'])})")
        return
    if kind == "nstore":
        lines.append(f"_nested_store({addr}, {e.arr(p, vals[1])}, {q['shape']!r}, {q['strides']!r}, "
                     f"{e.k(q['pieces'])}, {dt})")
        return
    if kind in ("sload", "sstore"):
        return _emit_split(e, p, vals, out, q, kind, addr, dt)
    box, shape = tuple(q["box"]), tuple(q["shape"])
    view = f"{e.k(_Views(box, q['strides'], q['np_dtype']))}[{addr}]"
    sl = e.k(tuple(slice(0, c) for c in box))
    if e.box is not None:       # values are box-shaped already
        lines.append(f"{e.var(p, out)} = _nparray({view})" if kind == "load" else f"{view}[...] = {e.arr(p, vals[1])}")
        return
    if kind == "load":
        o = e.var(p, out)
        if box == shape:
            lines.append(f"{o} = _nparray({view})")
            return
        fill = e.fill(q["other"], shape, q["np_dtype"])
        lines.append(f"{o} = {fill}.copy()")
        if all(box):
            lines.append(f"{o}[{sl}] = {view}")
            if _plus_zero(q["other"]):
                e.zero_pad[o] = box
        return
    if all(box):
        data = e.arr(p, vals[1])
        lines.append(f"{view}[...] = {data}" if box == tuple(vals[1].shape) else f"{view}[...] = {data}[{sl}]")


def _emit_split(e, p, vals, out, q, kind, addr, dt):
    """A load / store through one strided view of the block reshaped to q["fine"] (each axis padded to
    q["padded"] first), over the box q["lims"]."""
    lines, fine, lims, shape, padded = e.lines, q["fine"], q["lims"], tuple(q["shape"]), q["padded"]
    full = lims is not None and all(lo == 0 and hi == n for (lo, hi), n in zip(lims, fine))
    crop = None if padded == shape else e.k(tuple(slice(0, n) for n in shape))
    if lims is not None:
        box = tuple(hi - lo for lo, hi in lims)
        view = f"{e.k(_Views(box, q['strides'], q['np_dtype']))}[{addr}]"
        sl = e.k(tuple(slice(lo, hi) for lo, hi in lims))
    if kind == "sload":
        o = e.var(p, out)
        if full and crop is None:
            lines.append(f"{o} = _nparray({view}).reshape({shape!r})")
            return
        other = np.broadcast_to(q["other"], shape)
        fill = e.fill(np.array(_pad_to(other, padded, None) if crop else other).reshape(fine), fine, q["np_dtype"])
        lines.append(f"{o} = {fill}.copy()")
        if lims is not None:
            lines.append(f"{o}[{sl}] = {view}")
        lines.append(f"{o} = {o}.reshape({shape!r})" if crop is None else
                     f"{o} = _np.ascontiguousarray({o}.reshape({padded!r})[{crop}])")
        return
    if lims is None:
        return
    data = e.arr(p, vals[1])
    if tuple(vals[1].shape) != shape:
        data = f"_bt({data}, {shape!r})"
    if crop is not None:
        lines.append(f"_t = _np.empty({padded!r}, {dt}); _t[{crop}] = {data}")
        data = "_t"
    lines.append(f"{view}[...] = {data}.reshape({fine!r})" + ("" if full else f"[{sl}]"))


class _NoBox(Exception):
    """An op that a box-only tape cannot take: the tape is compiled whole."""


def _no_box():
    raise _NoBox


_BOX_OPS = frozenset({"create_select", "create_splat", "create_fma", "create_fabs", "create_rsqrt"})  # lane-wise,
# besides _kind's ops


def _lane_wise(f):
    """Whether native ufunc ``f`` maps lanes to lanes (optim_cpu.c's element updates, SLEEF's exp and log)."""
    return f in native.elementwise_ufuncs() or any(f is native.aten_ufunc(n) for n in ("sleef_expf", "sleef_logf"))


def _box_of(tape):
    """(block shape, box) if the program loads and stores only through one box of one block shape, and the
    box is smaller: then no other lane is observable, and a tape of lane-wise ops can compute the box alone."""
    found = set()
    for op in tape.ops:
        low = op[5]
        if low is not None and low[0] in ("load", "store", "nload", "nstore", "sload", "sstore"):
            if low[0] not in ("load", "store"):
                return None
            found.add((tuple(low[1]["shape"]), tuple(low[1]["box"])))
    if len(found) != 1:
        return None
    shape, box = found.pop()
    return (shape, box) if box != shape and all(box) else None


def _compile(tapes, kinds):
    """One function ``run(*dyn_args)`` replaying every program's tape. kinds[i]: "ptr" (an address), "f32"
    (a float, rounded to fp32 here), "i32" (an int in int32's range, or a program id) or "int".

    A program of lane-wise ops whose loads and stores share one box (the last block of an elementwise
    launch whose size is not a multiple of the block, a multi-tensor optimizer's tensor) is compiled over
    the box alone: no fill of masked-off lanes, no slicing on store."""
    e = _Emitter(kinds)
    for p, t in enumerate(tapes):
        box = _box_of(t)
        if box is not None:
            mark = len(e.lines)
            e.box = box + (tuple(slice(0, c) for c in box[1]),)
            try:
                for op in t.ops:
                    _emit_op(e, p, t.slots, op)
            except _NoBox:
                del e.lines[mark:]
                box = None
            e.box = None
        if box is None:
            for op in t.ops:
                _emit_op(e, p, t.slots, op)
    return _function("run", e, kinds, _peephole(e, e.lines))


_PURE = re.compile(r"^s\d+_\d+ = ")
_IMPURE = re.compile(r"\[a\d|_nparray|_iload|_istore|_nested|_th\(|_dynh|\.data\b|_r\b|_t\b")
_STORE_LN = re.compile(r"^_k\d+\[a\d+(?: \+ \d+)?\]\[\.\.\.\] = ")
_LOAD_LN = re.compile(r"^(s\d+_\d+) = _nparray\((_k\d+\[a\d+(?: \+ \d+)?\])\)$")
_SPLAT_LN = re.compile(r"^(s\d+_\d+) = _np\.empty\((_k\d+), (_k\d+)\); _np\.copyto\(\1, (x\d+), casting='unsafe'\)$")
_CALL_LN = re.compile(r"^(s\d+_\d+) = (_k\d+|_np\.where)\(([\w, ]*)\)$")
_NAME = re.compile(r"\b(?:s\d+_\d+|x\d+)\b")
# ufuncs exact per element whatever the operands' layout or broadcasting (no SIMD-vs-scalar variants)
_EXACT = frozenset({np.add, np.subtract, np.multiply, np.true_divide, np.maximum, np.minimum, np.fmax, np.fmin,
                    np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal,
                    np.logical_and, np.logical_or, np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.negative})
_KIND_DTYPE = {"f32": np.dtype(np.float32), "i32": np.dtype(np.int32), "ptr": np.dtype(np.uint64)}


def _peephole(e, lines):
    """Copies a tape need not make, same values: a load used only by exact element-wise ufuncs (and
    ``where``) before any store reads the memory itself (stores sink below the element-wise lines after
    them first, keeping their order), and a scalar argument splat to a block that only meets block-shaped
    operands of such ufuncs stays a (1,) array (broadcasting gives the same elements)."""
    lines = list(lines)
    fma = native.fma_ufunc()
    exact = _EXACT | ({fma} if fma is not None else set()) | native.elementwise_ufuncs()

    def pure(ln):
        return _PURE.match(ln) is not None and _IMPURE.search(ln) is None

    i = len(lines) - 1      # stores sink below pure lines (bottom-up, so a run of stores keeps its order)
    while i >= 0:
        if _STORE_LN.match(lines[i]):
            j = i
            while j + 1 < len(lines) and pure(lines[j + 1]):
                lines[j], lines[j + 1] = lines[j + 1], lines[j]
                j += 1
        i -= 1
    uses = {}
    for n, ln in enumerate(lines):
        for name in set(_NAME.findall(ln)):
            uses.setdefault(name, []).append(n)

    def calls(n, name):
        """(call line's output, callee, args) if line n is an exact ufunc / where call taking ``name``."""
        m = _CALL_LN.match(lines[n])
        if m is None or m.group(1) == name:
            return None
        f = m.group(2)
        if f != "_np.where" and not any(e.ns.get(f) is u for u in exact):
            return None
        return m.group(1), f, m.group(3).split(", ")
    small, viewed = set(), set()
    for n, ln in enumerate(list(lines)):
        m = _LOAD_LN.match(ln)
        if m is not None:
            name, use = m.group(1), uses.get(m.group(1), [])[1:]
            if use and all(calls(u, name) is not None for u in use) and \
                    not any(_STORE_LN.match(lines[k]) or not pure(lines[k]) and not _LOAD_LN.match(lines[k])
                            and k not in viewed for k in range(n + 1, use[-1])):
                lines[n] = f"{name} = {m.group(2)}"
                viewed.add(n)
            continue
        m = _SPLAT_LN.match(ln)
        if m is None:
            continue
        name, x = m.group(1), m.group(4)
        if _KIND_DTYPE.get(e.kinds[int(x[1:])]) != np.dtype(e.ns[m.group(3)]):
            continue
        shape, ok, use = e.shapes.get(name), True, uses.get(name, [])[1:]
        for u in use:
            c = calls(u, name)
            if c is None or c[1] == "_np.where" or e.shapes.get(c[0]) != shape:
                ok = False
                break
            others = [a for a in c[2] if a != name]
            if not any(a not in small and (e.shapes.get(a) == shape or
                                           getattr(e.ns.get(a), "shape", None) == shape) for a in others):
                ok = False
                break
        if ok and use and shape is not None:
            lines[n] = f"{name} = {x}"
            small.add(name)
    return _tail_adds(e, lines, pure)


_FILL_LN = re.compile(r"^(s\d+_\d+) = (_k\d+)\.copy\(\)$")
_PUT_LN = re.compile(r"^(s\d+_\d+)\[(_k\d+)\] = (_k\d+\[a\d+(?: \+ \d+)?\])$")
_ALIAS_LN = re.compile(r"^(s\d+_\d+) = (s\d+_\d+)$")


def _tail_adds(e, lines, pure):
    """A zero-padded partial block added into an accumulator, ``acc + pad(v)`` (a cascade sum's leftover vectors:
    ``t = zeros.copy(); t[box] = v; r = acc + t``, or of a product, ``where(box mask, pad(a) * pad(b), +0)``),
    becomes ``acc[box] += v`` in place: the same bits when acc holds no -0.0 (x + y is -0.0 only if both are, so
    an accumulator begun as +0 + x never does, nor its sums) and no one else reads acc: acc + 0 = acc exactly
    (a NaN keeps its payload).  The padded copies, the product's masked-off lanes and the where go."""
    ns, dts, shapes = e.ns, e.dtypes, e.shapes

    def const(name, zero=False):
        v = ns.get(name) if name.startswith("_k") else None
        return v if isinstance(v, np.ndarray) and (not zero or _plus_zero(v)) else None

    uses, fresh, nonneg0 = {}, set(), set()
    for n, ln in enumerate(lines):
        for name in set(_NAME.findall(ln)):
            uses.setdefault(name, []).append(n)
        m = _CALL_LN.match(ln)
        if m is not None and m.group(2) != "_np.where" and isinstance(ns.get(m.group(2)), np.ufunc):
            fresh.add(m.group(1))
            args = m.group(3).split(", ")
            if ns[m.group(2)] is np.add and len(args) == 2 and \
                    any(a in nonneg0 or const(a, zero=True) is not None for a in args):
                nonneg0.add(m.group(1))
        m = _ALIAS_LN.match(ln)
        if m is not None and m.group(2) in nonneg0:
            nonneg0.add(m.group(1))

    def padded(name, box=None):
        """(box slices name, value expression) if ``name`` is a +0 fill with one box loaded, used once more."""
        use = uses.get(name, [])
        if len(use) != 3 or use[1] != use[0] + 1:
            return None
        f, put = _FILL_LN.match(lines[use[0]]), _PUT_LN.match(lines[use[1]])
        if f is None or put is None or put.group(1) != name or const(f.group(2), zero=True) is None:
            return None
        if box is not None and ns[put.group(2)] != ns[box]:
            return None
        return put.group(2), put.group(3), use

    def calm(lo, hi):       # no store (or other write to memory) between the lines lo and hi
        return all(pure(lines[k]) or _FILL_LN.match(lines[k]) or _PUT_LN.match(lines[k]) or
                   _LOAD_LN.match(lines[k]) or _ALIAS_LN.match(lines[k]) for k in range(lo + 1, hi))

    drop = set()
    for j, ln in enumerate(lines):
        m = _CALL_LN.match(ln)
        if m is None or ns.get(m.group(2)) is not np.add:
            continue
        r, args = m.group(1), m.group(3).split(", ")
        if len(args) != 2:
            continue
        for acc, t in (args, args[::-1]):
            if acc not in nonneg0 or acc not in fresh or uses.get(acc, [])[-1:] != [j] or len(uses[acc]) != 2:
                continue
            dt = dts.get(acc)
            if dt is None or dt.kind != "f" or dts.get(r) != dt or dts.get(t) != dt or \
                    not shapes.get(acc) or shapes.get(acc) != shapes.get(t) or shapes.get(r) != shapes.get(acc):
                continue
            new = None
            p = padded(t)
            if p is not None and ns[_FILL_LN.match(lines[p[2][0]]).group(2)].dtype == dt and calm(p[2][1], j):
                new, gone = p[1], p[2][:2]
            w = _CALL_LN.match(lines[uses[t][0]]) if p is None and len(uses.get(t, [])) == 2 else None
            if w is not None and w.group(2) == "_np.where" and w.group(1) == t:
                mask, c, z = w.group(3).split(", ")
                cm = _CALL_LN.match(lines[uses[c][0]]) if len(uses.get(c, [])) == 2 else None
                mk, zc = const(mask), const(z, zero=True)
                if cm is not None and cm.group(1) == c and ns.get(cm.group(2)) is np.multiply and \
                        mk is not None and mk.dtype == np.bool_ and zc is not None:
                    xa, xb = (cm.group(3).split(", ") + [None])[:2]
                    pa = padded(xa) if xa else None
                    pb = padded(xb, pa[0]) if pa is not None and xb and xb != xa else None
                    if pb is not None and dts.get(xa) == dts.get(xb) == dts.get(c) == dt and mk.shape == shapes[acc]:
                        want = np.zeros(mk.shape, np.bool_)
                        want[ns[pa[0]]] = True
                        first = min(pa[2][0], pb[2][0])
                        if (mk == want).all() and calm(first, j):
                            new = f"{cm.group(2)}({pa[1]}, {pb[1]})"
                            gone = pa[2][:2] + pb[2][:2] + [uses[c][0], uses[t][0]]
                            p = pa
            if new is None:
                continue
            box = p[0]
            lines[j] = f"{r} = {acc}; _v = {r}[{box}]; _np.add(_v, {new}, out=_v)"
            drop.update(gone)
            break
    return [ln for n, ln in enumerate(lines) if n not in drop]


def _compile_check(ops, slots, kinds, guards):
    """``check(*dyn_args)``: True when a program takes the control flow a generic tape recorded (``guards`` of
    trace.record: ("index" / "bool", slot, value), ("trips", slot, (start, step, trips)) of a ``range``), from
    the recorded ops that compute the guarded slots (int ops on the sizes and program ids)."""
    need = {g[1] for g in guards}
    part = []
    for op in reversed(ops):
        out = op[4]
        if any(o in need for o in (out if type(out) is tuple else (out,))):
            part.append(op)
            need.update(v.slot for v in op[2] if v.slot is not None)
    e = _Emitter(kinds)
    for op in reversed(part):
        _emit_op(e, 0, slots, op)
    conds = []
    for kind, s, v in guards:
        x = e.var(0, s)
        if kind == "index":         # the interpreter's tensor.__index__ / __bool__
            conds.append(f"int({x}.squeeze()) == {v!r}")
        elif kind == "bool":
            conds.append(f"(bool({x}) if {x}.size == 1 else True) == {v!r}")
        else:
            conds.append(f"len(range({v[0]}, int({x}.squeeze()), {v[1]})) == {v[2]}")
    return _function("check", e, kinds, e.lines + [f"return {' and '.join(conds)}"])


# tape source -> its code object: Python's compiler costs ~8 us a line, and a kernel's tapes for other blocks or
# sizes often have the same source (their shapes and offsets are constants of their namespaces)
_CODE = {}


def _function(name, e, kinds, lines):
    """Compile ``def name(a0, ...)`` of ``lines`` after the inputs' conversions (the emitter's namespace)."""
    head = []
    for i in sorted(e.inputs_used):
        kd = kinds[i]
        if kd == "ptr":
            head.append(f"x{i} = _nparray([a{i}], dtype=_u64)")
        elif kd == "f32":
            head.append(f"x{i} = _nparray([a{i}], dtype=_f32)")
        elif kd == "i32":
            head.append(f"x{i} = _nparray([a{i}], dtype=_i32)")
        else:
            head.append(f"x{i} = _dynh(a{i}).data")
            e.calls_builder = True      # (conservatively: _dyn_handle builds Triton tensor objects)
    body = head + lines or ["pass"]
    src = f"def {name}({', '.join(f'a{i}' for i in range(len(kinds)))}):\n" + "".join(f"    {ln}\n" for ln in body)
    code = _CODE.get(src)
    if code is None:
        if len(_CODE) >= 256:
            _CODE.clear()
        code = _CODE[src] = compile(src, "<tgrad tape>", "exec")
    exec(code, e.ns)
    run = e.ns[name]
    run.source = src
    run = _serialized(run) if e.calls_builder else run
    run.nbytes = _nbytes(e.ns, src)
    return run


def _nbytes(ns, src):
    """Bytes a compiled tape keeps alive, about: its constant arrays and handles, its code (~16 bytes a
    source character), 512 per other constant."""
    n = 16 * len(src)
    for v in ns.values():
        d = v.data if isinstance(v, _TH) else v
        n += d.nbytes if isinstance(d, np.ndarray) else 512
    return n


def _serialized(run):
    """A tape that calls the interpreter's builder (so tl patched, JIT calls routed, under LOCK).

    Tapes of numpy expressions only run unlocked: they share nothing mutable but ``_Views`` caches
    (single dict operations) and the memory they are given."""
    def locked(*dyn):
        with LOCK:
            if _scope[0] is None:
                _lang_for_interpreter()
            prev = getattr(_tls, "interp", 0)
            _tls.interp = 1
            try:
                return run(*dyn)
            finally:
                _tls.interp = prev
    locked.source = run.source
    return locked


