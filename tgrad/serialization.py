"""Checkpoints: ``tgrad.save(obj, f)`` / ``tgrad.load(f, map_location=None, weights_only=True)``.

The file is in the safetensors format: an 8-byte little-endian header
length, a JSON header ``{name: {"dtype", "shape", "data_offsets"}}`` and the
raw little-endian tensor bytes back to back.  The object around the tensors
is stored in the header's ``__metadata__``:

- ``"tgrad"``: JSON, when it is built of dicts, lists, tuples, numbers,
  strings, bools and None (state dicts): each tensor replaced by
  ``{"tensor": name, "device": ..., "requires_grad": ..., "parameter": ...}``.
  Loading it never runs code from the file.
- ``"tgrad_pickle"``: base64 of a pickle (tensors as persistent ids), for any
  other object (``tgrad.save(model, f)``).  As in PyTorch, ``load`` unpickles
  it with ``weights_only=True`` by default: only allow-listed globals
  (containers, dtypes, devices, and what ``add_safe_globals`` /
  ``safe_globals`` add) are built; ``weights_only=False`` unpickles anything
  and must only be used on trusted files.

``load`` also reads PyTorch's own checkpoints (``torch.save``'s zip format: ``data.pkl`` over
``data/<key>`` storages), with the same ``weights_only`` rules: dense tensors, parameters and sparse
COO / CSR tensors (``_rebuild_tensor_v2``, ``_rebuild_parameter``, ``_rebuild_sparse_tensor``).

A path is written atomically (a temporary file in the same directory, fsync,
``os.replace``), so a crash or a full disk leaves the previous file intact.
Every file is validated per the safetensors spec before use; a corrupt one
raises ``CheckpointError`` naming the file and the first problem.
"""
import _compat_pickle
import base64
import contextlib
import io
import json
import math
import os
import pickle
import secrets
import struct
import threading
from collections import Counter, OrderedDict

import numpy as np

from . import _sparse
from . import dtypes as D
from .device import device as Device, is_available as cuda_is_available
from ._creation import tensor as make_tensor
from .tensor import Size, Tensor
from .tensor import empty as _empty

_parameter_class = None     # nn.Parameter, registered by tgrad.nn (a floor above) with register_parameter_class


def register_parameter_class(cls):
    """``tgrad.nn`` registers ``nn.Parameter`` here, so that saved parameters load back as Parameters."""
    global _parameter_class
    _parameter_class = cls

_CODES = {D.float32: "F32", D.float64: "F64", D.float16: "F16", D.bfloat16: "BF16", D.int64: "I64",
          D.int32: "I32", D.int16: "I16", D.int8: "I8", D.uint8: "U8", D.bool_: "BOOL"}
_DTYPES = {v: k for k, v in _CODES.items()}
_CONTAINERS = {list: "list", tuple: "tuple", OrderedDict: "odict", Counter: "counter", dict: "dict"}
_MAX_HEADER = 100_000_000           # the safetensors library's limit on the JSON header


class CheckpointError(RuntimeError):
    """A file that is not a valid (or is a truncated) tgrad / safetensors checkpoint."""


class _Unsupported(TypeError):
    pass


def _tensor_meta(t, tensors, memo):
    """The node of tensor ``t``; its data goes to ``tensors`` (a meta tensor has none: the node holds its dtype,
    shape and strides, as PyTorch saves a meta tensor's metadata)."""
    node = {"device": str(t.device), "requires_grad": t.requires_grad,
            "parameter": _parameter_class is not None and isinstance(t, _parameter_class)}
    name = memo.get(id(t))
    if name is None:
        name = memo[id(t)] = f"meta{len(memo)}" if t.is_meta else str(len(tensors))
        if not t.is_meta:
            tensors.append((name, t))
    if t.is_meta:
        node["meta"] = [_CODES[t.dtype], list(t.shape), list(t.stride())]
    node["tensor"] = name
    return node


def _meta_tensor(name, spec):
    """The meta tensor of a saved node's ``meta`` entry [dtype code, shape, strides] (checked: it comes from a file)."""
    ok = isinstance(spec, list) and len(spec) == 3 and isinstance(spec[0], str) and spec[0] in _DTYPES
    ok = ok and all(isinstance(v, list) and all(_is_int(s) and s >= 0 for s in v) for v in spec[1:])
    if not ok or len(spec[1]) != len(spec[2]):
        raise _Bad(f"meta tensor {name!r}: bad dtype, shape and strides {str(spec)[:80]}")
    dt, shape, strides = _DTYPES[spec[0]], tuple(spec[1]), tuple(spec[2])
    span = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    return _empty((span,), dt, "meta").as_strided(shape, strides)


def _encode(obj, tensors, memo):
    """JSON-able form of ``obj``; tensors are appended to ``tensors`` (each object once).  A sparse tensor is
    ``{"sparse": [layout name, its rebuild data]}``, the data PyTorch pickles (``_rebuild_sparse_tensor``)."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, Tensor):
        if obj.layout is not _sparse.strided:
            layout, data = obj._rebuild_args()
            data = [tuple(d) if isinstance(d, Size) else d for d in data]
            return {"sparse": [layout.name, _encode(data, tensors, memo)]}
        return _tensor_meta(obj, tensors, memo)
    if isinstance(obj, np.generic):
        obj = obj.item()
    if type(obj) is int:
        return obj
    if type(obj) is float:
        return obj if math.isfinite(obj) else {"float": repr(obj)}
    kind = _CONTAINERS.get(type(obj))
    if kind in ("list", "tuple"):
        return {kind: [_encode(v, tensors, memo) for v in obj]}
    if kind is not None:
        return {kind: [[_encode(k, tensors, memo), _encode(v, tensors, memo)] for k, v in obj.items()]}
    raise _Unsupported(type(obj).__name__)


class _Bad(Exception):
    """A problem found in a file; ``load`` turns it into a CheckpointError naming the file."""


def _decode(node, tensor):
    if not isinstance(node, (dict, list)):
        return node
    if not isinstance(node, dict) or len(node) != 1 and "tensor" not in node:
        raise _Bad(f"invalid object structure: unexpected node {str(node)[:80]}")
    if "tensor" in node:
        return tensor(node)
    (kind, value), = node.items()
    if kind == "float":
        if value not in ("nan", "inf", "-inf"):
            raise _Bad(f"invalid object structure: bad float {value!r}")
        return float(value)
    if not isinstance(value, list):
        raise _Bad(f"invalid object structure: {kind!r} holds a {type(value).__name__}, not a list")
    if kind == "sparse":
        layout = _sparse.LAYOUTS.get(value[0]) if len(value) == 2 and isinstance(value[0], str) else None
        if layout is None or layout is _sparse.strided:
            raise _Bad(f"invalid object structure: bad sparse tensor node {str(value)[:80]}")
        return _sparse._rebuild_sparse_tensor(layout, _decode(value[1], tensor))
    if kind == "list":
        return [_decode(v, tensor) for v in value]
    if kind == "tuple":
        return tuple(_decode(v, tensor) for v in value)
    if kind not in ("odict", "counter", "dict"):
        raise _Bad(f"invalid object structure: unknown node kind {kind!r}")
    items = []
    for kv in value:
        if not isinstance(kv, list) or len(kv) != 2:
            raise _Bad(f"invalid object structure: a {kind} item is not a [key, value] pair")
        k = _decode(kv[0], tensor)
        try:
            hash(k)
        except TypeError:
            raise _Bad(f"invalid object structure: unhashable {kind} key of type {type(k).__name__}") from None
        items.append((k, _decode(kv[1], tensor)))
    return {"odict": OrderedDict, "counter": Counter, "dict": dict}[kind](dict(items))


# ----------------------------------------------------------------------------------------------- weights_only
_safe_globals = set()
_safe_local = threading.local()


def _default_safe():
    return [OrderedDict, Counter, set, frozenset, complex, slice, range, bytearray, Device, D._by_name, Size,
            _sparse._rebuild_sparse_tensor]


def add_safe_globals(safe_globals):
    """Allow-list classes/functions for ``load(..., weights_only=True)`` (as ``torch.serialization``)."""
    _safe_globals.update(safe_globals)


def get_safe_globals():
    return list(_safe_globals)


def clear_safe_globals():
    _safe_globals.clear()


@contextlib.contextmanager
def safe_globals(safe_globals):
    """Context manager: ``safe_globals`` are allowed by ``load(weights_only=True)`` inside the block."""
    stack = _safe_local.__dict__.setdefault("stack", [])
    stack.append(list(safe_globals))
    try:
        yield
    finally:
        stack.pop()


def _allowed():
    out = {}
    for obj in [*_default_safe(), *_safe_globals, *(g for s in getattr(_safe_local, "stack", ()) for g in s)]:
        out[(obj.__module__, obj.__qualname__)] = obj
    out.update({(_sparse.__name__, name): layout for name, layout in _sparse.LAYOUTS.items()})   # (as torch.layout)
    return out


_WEIGHTS_ONLY_MSG = (
    "Weights only load failed. This file can still be loaded, to do so you have two options, \x1b[1mdo those steps "
    "only if you trust the source of the checkpoint\x1b[0m. \n\t(1) In PyTorch 2.6, we changed the default value of "
    "the `weights_only` argument in `torch.load` from `False` to `True`. Re-running `tgrad.load` with "
    "`weights_only` set to `False` will likely succeed, but it can result in arbitrary code execution. Do it only "
    "if you got the file from a trusted source.\n\t(2) Alternatively, to load with `weights_only=True` please check "
    "the recommended steps in the following error message.\n\tWeightsUnpickler error: {}\n\nCheck the documentation "
    "of torch.load to learn more about types accepted by default with weights_only "
    "https://pytorch.org/docs/stable/generated/torch.load.html.")


class _Unpickler(pickle.Unpickler):
    def __init__(self, data, tensor, weights_only):
        super().__init__(io.BytesIO(data))
        self._tensor, self._weights_only = tensor, weights_only
        self._ok = _allowed() if weights_only else None
        self.refused = False

    def find_class(self, module, name):
        if self._ok is None:
            return super().find_class(module, name)
        if (module, name) in _compat_pickle.NAME_MAPPING:       # protocol 2's Python 2 names, as pickle maps them
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        obj = self._ok.get((module, name))
        if obj is None:
            full = name if module == "builtins" else f"{module}.{name}"
            self.refused = True
            raise pickle.UnpicklingError(_WEIGHTS_ONLY_MSG.format(
                f"Unsupported global: GLOBAL {full} was not an allowed global by default. Please use "
                f"`tgrad.serialization.add_safe_globals([{full}])` or the `tgrad.serialization.safe_globals([{full}])`"
                " context manager to allowlist this global if you trust this class/function."))
        return obj

    def persistent_load(self, pid):
        if not isinstance(pid, dict) or "tensor" not in pid:
            raise _Bad(f"invalid persistent id {str(pid)[:80]}")
        return self._tensor(pid)


class _Pickler(pickle.Pickler):
    def __init__(self, buf, tensors, protocol):
        super().__init__(buf, protocol=protocol)
        self._tensors, self._memo = tensors, {}

    def persistent_id(self, obj):
        """A dense tensor by reference; a sparse one pickles as its rebuild call over its dense parts."""
        if isinstance(obj, Tensor) and obj.layout is _sparse.strided:
            return _tensor_meta(obj, self._tensors, self._memo)
        return None


# ----------------------------------------------------------------------------------------------- save
def _write_atomic(path, blob):
    """Write ``blob`` to ``path`` through a temporary file in the same directory, fsync'd, then ``os.replace``:
    a crash or a failed write at any point leaves the old file (if any) as it was."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):         # make the rename itself durable (POSIX; not on Windows)
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def save(obj, f, pickle_module=pickle, pickle_protocol=2):
    """Write ``obj`` to a path (atomically) or a binary file object.  State dicts (nested dicts/lists/tuples of
    tensors and numbers) are stored as JSON; any other object (a whole model) is pickled, as ``torch.save``
    does (with ``pickle_protocol``; ``pickle_module`` must be the standard ``pickle``), and loads only
    with ``weights_only=False`` or an allow-list."""
    if pickle_module is not pickle:
        raise NotImplementedError("tgrad.save: pickle_module other than the standard pickle is not supported")
    tensors = []
    meta = {"format": "pt"}
    try:
        meta["tgrad"] = json.dumps(_encode(obj, tensors, {}), separators=(",", ":"))
    except _Unsupported:
        tensors, buf = [], io.BytesIO()
        _Pickler(buf, tensors, pickle_protocol).dump(obj)
        meta["tgrad_pickle"] = base64.b64encode(buf.getvalue()).decode("ascii")
    header, chunks, offset = {}, [], 0
    views, spans = _shared_storages(tensors)
    if views:
        meta["tgrad_views"] = json.dumps(views, separators=(",", ":"))
    for name, t in [(n, t) for n, t in tensors if n not in views] + spans:
        arr = t if isinstance(t, np.ndarray) else np.ascontiguousarray(t.detach().cpu().numpy())
        data = arr.tobytes()
        header[name] = {"dtype": "U8" if t is arr else _CODES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    header["__metadata__"] = meta
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    blob = struct.pack("<Q", len(head)) + head + b"".join(chunks)
    if isinstance(f, (str, os.PathLike)):
        _write_atomic(f, blob)
    else:
        f.write(blob)


def _shared_storages(tensors):
    """Tensors that share a storage with another saved tensor (a view and its base) are stored as that
    storage's bytes (a U8 entry ``storage<i>``, bytes 0 to the last one they use) and, in ``tgrad_views``,
    name -> [storage entry, dtype, shape, strides, offset] (in elements): they load as views of one storage,
    as PyTorch's do.  Returns (views, [(entry name, uint8 array)])."""
    groups = {}
    for name, t in tensors:
        if t.numel() and not t._is_conj and min(t._strides, default=0) >= 0:
            groups.setdefault(id(t._storage), []).append((name, t))
    views, spans = {}, []
    for group in (g for g in groups.values() if len(g) > 1):
        if len({t.dtype for _, t in group}) > 1:
            raise RuntimeError("Cannot save multiple tensors or storages that view the same data as different types")
        span = f"storage{len(spans)}"
        end = max((t._offset + sum((n - 1) * st for n, st in zip(t._shape, t._strides)) + 1) * t.dtype.itemsize
                  for _, t in group)
        spans.append((span, _storage_bytes(group[0][1], end)))
        for name, t in group:
            views[name] = [span, _CODES[t.dtype], list(t._shape), list(t._strides), t._offset]
    return views, spans


def _storage_bytes(t, count):
    arr = np.empty(count, np.uint8)
    t._storage.copy_to_host(arr.ctypes.data, count)
    return arr


def _check_view(name, view, entries):
    """A ``tgrad_views`` item, validated: (storage entry, dtype, shape, strides, offset)."""
    if not (isinstance(view, list) and len(view) == 5 and view[0] in entries and view[1] in _DTYPES):
        raise _Bad(f"tensor {name!r}: invalid view {str(view)[:80]}")
    span, code, shape, strides, off = view
    dt = _DTYPES[code]
    ok = (isinstance(shape, list) and isinstance(strides, list) and len(shape) == len(strides)
          and all(_is_int(v) and v >= 0 for v in (*shape, *strides, off)) and entries[span][0] is D.uint8)
    if not ok or (math.prod(shape) and (off + sum((n - 1) * st for n, st in zip(shape, strides)) + 1) * dt.itemsize
                  > entries[span][3] - entries[span][2]):
        raise _Bad(f"tensor {name!r}: view {str(view)[:80]} does not fit its storage")
    return span, dt, shape, strides, off


# ----------------------------------------------------------------------------------------------- load
def _target(device_str, map_location):
    if map_location is None:
        return device_str
    if isinstance(map_location, dict):
        return map_location.get(device_str, device_str)
    if isinstance(map_location, (str, Device)):
        return map_location
    raise TypeError(f"map_location should be a string, a tgrad.device or a dict, got {type(map_location).__name__}")


def _is_int(v):
    return type(v) is int


def _parse(blob):
    """Validate ``blob`` per the safetensors spec; return ({name: (dtype, shape, start, end)}, metadata, base)."""
    size = len(blob)
    if size < 8:
        raise _Bad(f"file is truncated: {size} bytes, shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", blob[:8])
    if n < 2 or n > _MAX_HEADER:
        raise _Bad(f"header length {n} is out of bounds (2 to {_MAX_HEADER} bytes)")
    if 8 + n > size:
        raise _Bad(f"file is truncated: the header says {n} bytes but only {size - 8} follow")
    try:
        text = blob[8:8 + n].decode("utf-8")
    except UnicodeDecodeError as e:
        raise _Bad(f"the header is not valid UTF-8 ({e.reason} at byte {8 + e.start})") from None
    if not text.startswith("{"):
        raise _Bad("the header is not a JSON object (it must start with '{')")
    try:
        header = json.loads(text)
    except json.JSONDecodeError as e:
        raise _Bad(f"the header is not well-formed JSON ({e.msg} at char {e.pos})") from None
    except RecursionError:
        raise _Bad("the header JSON is nested too deeply") from None
    if not isinstance(header, dict):
        raise _Bad("the header is not a JSON object")
    meta = header.pop("__metadata__", None)
    if meta is not None and not (isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values())):
        raise _Bad("'__metadata__' must map strings to strings")
    entries = {}
    for name, h in header.items():
        if not isinstance(h, dict) or set(h) != {"dtype", "shape", "data_offsets"}:
            raise _Bad(f"tensor {name!r}: the entry must have exactly the keys dtype, shape, data_offsets")
        dt = _DTYPES.get(h["dtype"]) if isinstance(h["dtype"], str) else None
        if dt is None:
            raise _Bad(f"tensor {name!r}: unknown or unsupported dtype {h['dtype']!r}")
        shape, offs = h["shape"], h["data_offsets"]
        if not isinstance(shape, list) or not all(_is_int(s) and s >= 0 for s in shape):
            raise _Bad(f"tensor {name!r}: shape {shape} is not a list of non-negative integers")
        if not (isinstance(offs, list) and len(offs) == 2 and all(_is_int(o) for o in offs)
                and 0 <= offs[0] <= offs[1]):
            raise _Bad(f"tensor {name!r}: data_offsets {offs} are not two integers 0 <= begin <= end")
        nbytes = math.prod(shape) * dt.itemsize
        if offs[1] - offs[0] != nbytes:
            raise _Bad(f"tensor {name!r}: data_offsets {offs} span {offs[1] - offs[0]} bytes but shape {shape} of "
                       f"{h['dtype']} needs {nbytes}")
        entries[name] = (dt, shape, offs[0], offs[1])
    data = size - 8 - n
    expected = 0
    for name, (_, _, start, end) in sorted(entries.items(), key=lambda kv: (kv[1][2], kv[1][3])):
        if start < expected:
            raise _Bad(f"tensor {name!r}: data_offsets [{start}, {end}] overlap the previous tensor's bytes "
                       f"(which end at {expected})")
        if start > expected:
            raise _Bad(f"tensor {name!r}: data_offsets [{start}, {end}] leave a gap after byte {expected} "
                       "(tensors must be contiguous)")
        if end > data:
            raise _Bad(f"file is truncated: tensor {name!r} ends at byte {end} of the data but the data has "
                       f"{data} bytes")
        expected = end
    if expected != data:
        raise _Bad(f"the data section has {data} bytes but the tensors cover {expected}")
    return entries, meta or {}, 8 + n


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None):
    """Read a checkpoint written by ``save`` (or any safetensors file: a dict of tensors).  Tensors go to their
    saved device unless ``map_location`` (str, device, or a {saved: target} dict) says otherwise.  A pickled object
    (``save(model, f)``) is unpickled only with allow-listed globals unless ``weights_only=False``.
    ``mmap`` is accepted for PyTorch compatibility (the file is read whole)."""
    if pickle_module is not None and weights_only:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    if pickle_module is not None and weights_only is None:
        weights_only = False        # PyTorch: an explicit pickle_module means a full unpickle
    if isinstance(f, (str, os.PathLike)):
        where = os.fspath(f)
        with open(f, "rb") as fh:
            blob = fh.read()
    else:
        where = getattr(f, "name", None) or f"<{type(f).__name__}>"
        blob = f.read()
    try:
        return _load(blob, map_location, weights_only is None or bool(weights_only))
    except _Bad as e:
        raise CheckpointError(f"{where} is not a valid checkpoint: {e}") from None
    except RecursionError:
        raise CheckpointError(f"{where} is not a valid checkpoint: the object structure is nested too deeply") \
            from None


def _place(arr, dt, location, map_location):
    """A tensor of ``arr`` on the saved ``location`` as ``map_location`` maps it."""
    dev = Device(_target(location, map_location))
    if dev.type == "cuda" and not cuda_is_available():
        raise RuntimeError("Attempting to deserialize object on a CUDA device but tgrad.cuda.is_available() is "
                           "False. If you are running on a CPU-only machine, please use tgrad.load with "
                           "map_location=tgrad.device('cpu') to map your storages to the CPU.")
    return make_tensor(arr, dtype=dt, device=dev)


def _load(blob, map_location, weights_only):
    if blob[:4] == b"PK\x03\x04":
        return _load_torch(blob, map_location, weights_only)
    entries, meta, base = _parse(blob)
    built = {}
    try:
        views = json.loads(meta.get("tgrad_views", "{}"))
    except json.JSONDecodeError as e:
        raise _Bad(f"'__metadata__.tgrad_views' is not well-formed JSON ({e.msg} at char {e.pos})") from None
    if not isinstance(views, dict):
        raise _Bad("'__metadata__.tgrad_views' is not a JSON object")

    def tensor(node):
        name = node.get("tensor")
        if name in built:
            return built[name]
        if name in views:           # a view of a storage other saved tensors share
            span, dt, shape, strides, off = _check_view(name, views[name], entries)
            store = tensor({"tensor": span, "device": node.get("device", "cpu")})
            t = store._view_of(shape, strides, offset=off, dtype=dt)
            t._base = None
        elif "meta" in node:        # metadata only: stays on meta, whatever map_location says (as PyTorch)
            t = _meta_tensor(name, node["meta"])
        elif name not in entries:
            raise _Bad(f"the object structure refers to tensor {name!r}, which is not in the header")
        else:
            dt, shape, start, end = entries[name]
            count = math.prod(shape)
            arr = np.frombuffer(blob, dtype=dt.np, count=count, offset=base + start) if count else np.empty(0, dt.np)
            t = _place(arr.reshape(shape), dt, node.get("device", "cpu"), map_location)
        if node.get("parameter"):
            t = _parameter_class(t, requires_grad=bool(node.get("requires_grad", True)))
        elif node.get("requires_grad"):
            t.requires_grad_(True)
        built[name] = t
        return t

    if "tgrad" in meta:
        try:
            structure = json.loads(meta["tgrad"])
        except json.JSONDecodeError as e:
            raise _Bad(f"'__metadata__.tgrad' is not well-formed JSON ({e.msg} at char {e.pos})") from None
        return _decode(structure, tensor)
    if "tgrad_pickle" in meta:
        try:
            data = base64.b64decode(meta["tgrad_pickle"], validate=True)
        except ValueError:
            raise _Bad("'__metadata__.tgrad_pickle' is not valid base64") from None
        unpickler = _Unpickler(data, tensor, weights_only)
        try:
            return unpickler.load()
        except pickle.UnpicklingError as e:
            if unpickler.refused:
                raise
            raise _Bad(f"'__metadata__.tgrad_pickle' is not a valid pickle ({e})") from None
        except (EOFError, ValueError, KeyError, IndexError, TypeError, AttributeError, struct.error) as e:
            if not weights_only:
                raise
            raise _Bad(f"'__metadata__.tgrad_pickle' is not a valid pickle ({type(e).__name__}: {e})") from None
    return {name: tensor({"tensor": name}) for name in entries}     # a plain safetensors file


# ----------------------------------------------------------------------------------------------- PyTorch's files
_TORCH_STORAGES = {d.legacy_name + "Storage": d for d in D.ALL}      # torch.FloatStorage, torch.LongStorage, ...


class _TorchStorageType:
    def __init__(self, dtype):
        self.dtype = dtype


def _torch_globals(zf, prefix, map_location):
    """What the globals of a ``torch.save`` pickle become in tgrad (the weights_only set)."""
    def rebuild_v2(storage, offset, size, stride, requires_grad, hooks=None, metadata=None):
        arr, location = storage
        if len(size) != len(stride) or any(not _is_int(v) or v < 0 for v in (offset, *size, *stride)):
            raise _Bad(f"invalid tensor geometry: offset {offset}, size {size}, stride {stride}")
        if math.prod(size) and offset + sum((n - 1) * st for n, st in zip(size, stride)) >= arr.size:
            raise _Bad(f"tensor of size {tuple(size)} and stride {tuple(stride)} at offset {offset} overruns its "
                       f"storage of {arr.size} elements")
        view = np.lib.stride_tricks.as_strided(arr[offset:], tuple(size), tuple(st * arr.itemsize for st in stride))
        t = _place(np.array(view), D.from_numpy_dtype(arr.dtype), location, map_location)
        return t.requires_grad_(True) if requires_grad else t

    def rebuild_parameter(data, requires_grad, hooks=None):
        return _parameter_class(data, requires_grad=requires_grad)

    def get_layout(name):
        layout = _sparse.LAYOUTS.get(name.rpartition(".")[2]) if isinstance(name, str) else None
        if layout is None:
            raise _Bad(f"unsupported tensor layout {name!r}")
        return layout

    table = {("collections", "OrderedDict"): OrderedDict, ("torch._utils", "_rebuild_tensor_v2"): rebuild_v2,
             ("torch._utils", "_rebuild_parameter"): rebuild_parameter,
             ("torch._utils", "_rebuild_sparse_tensor"): _sparse._rebuild_sparse_tensor,
             ("torch.serialization", "_get_layout"): get_layout, ("torch", "Size"): Size}
    table.update({("torch", k): _TorchStorageType(v) for k, v in _TORCH_STORAGES.items()})
    return table


def _load_torch(blob, map_location, weights_only):
    """A ``torch.save`` zip file: ``<prefix>/data.pkl`` whose persistent ids ('storage', type, key, location,
    numel) name the raw little-endian ``<prefix>/data/<key>`` entries."""
    import zipfile
    try:
        zf = zipfile.ZipFile(io.BytesIO(blob))
        pkl = [n for n in zf.namelist() if n.endswith("data.pkl") and n.count("/") == 1]
        if len(pkl) != 1:
            raise _Bad("a zip file without one <name>/data.pkl is not a PyTorch checkpoint")
        prefix = pkl[0][:-len("data.pkl")]
        if prefix + "byteorder" in zf.namelist() and zf.read(prefix + "byteorder") != b"little":
            raise _Bad("big-endian PyTorch checkpoints are not supported")
        data = zf.read(pkl[0])
    except zipfile.BadZipFile as e:
        raise _Bad(f"a corrupt zip file ({e})") from None
    storages = {}
    table = _torch_globals(zf, prefix, map_location)

    def storage(pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], _TorchStorageType) and isinstance(pid[2], str) and _is_int(pid[4])):
            raise _Bad(f"invalid persistent id {str(pid)[:80]}")
        _, stype, key, location, numel = pid
        if key not in storages:
            try:
                raw = zf.read(f"{prefix}data/{key}")
            except KeyError:
                raise _Bad(f"storage {key!r} is not in the file") from None
            if len(raw) < numel * stype.dtype.itemsize:
                raise _Bad(f"storage {key!r} has {len(raw)} bytes, fewer than {numel} {stype.dtype.name} elements")
            storages[key] = (np.frombuffer(raw, stype.dtype.np, numel), location)
        return storages[key]

    class Unpickler(_Unpickler):
        def find_class(self, module, name):
            obj = table.get((module, name))
            return obj if obj is not None else super().find_class(module, name)

        def persistent_load(self, pid):
            return storage(pid)

    unpickler = Unpickler(data, None, weights_only)
    try:
        return unpickler.load()
    except pickle.UnpicklingError as e:
        if unpickler.refused:
            raise
        raise _Bad(f"data.pkl is not a valid pickle ({e})") from None
    except (EOFError, ValueError, KeyError, IndexError, TypeError, AttributeError, struct.error) as e:
        if not weights_only:
            raise
        raise _Bad(f"data.pkl is not a valid pickle ({type(e).__name__}: {e})") from None


def _rebuild_meta(spec, requires_grad):
    """Inverse of ``Tensor.__reduce_ex__`` of a meta tensor: ``spec`` is [dtype code, shape, strides]."""
    t = _meta_tensor("pickled", spec)
    return t.requires_grad_(requires_grad) if requires_grad else t


def _rebuild_tensor(array, device_str, requires_grad):
    """Inverse of ``Tensor.__reduce_ex__`` (copy / pickle): a tensor holding ``array`` on ``device_str``."""
    t = make_tensor(array, dtype=D.from_numpy_dtype(array.dtype), device=device_str)
    return t.requires_grad_(requires_grad) if requires_grad else t
