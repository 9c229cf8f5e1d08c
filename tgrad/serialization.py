"""Checkpoints: ``tgrad.save(obj, f)`` / ``tgrad.load(f, map_location=None)`` without pickle.

The file is in the safetensors format: an 8-byte little-endian header
length, a JSON header ``{name: {"dtype", "shape", "data_offsets"}}`` and the
raw little-endian tensor bytes back to back.  The object around the tensors
(nested dicts, lists, tuples, numbers, strings, bools, None — e.g. a module's
or an optimizer's state dict) is stored as JSON in the header's
``__metadata__["tgrad"]``, with each tensor replaced by
``{"tensor": name, "device": ..., "requires_grad": ..., "parameter": ...}``.
Loading never runs code from the file.
"""
import json
import math
import os
import struct
from collections import Counter, OrderedDict

import numpy as np

from . import dtypes as D
from .creation import tensor as make_tensor
from .device import device as Device, is_available as cuda_is_available
from .tensor import Tensor

_parameter_class = None     # nn.Parameter, registered by tgrad.nn (a floor above) with register_parameter_class


def register_parameter_class(cls):
    """``tgrad.nn`` registers ``nn.Parameter`` here, so that saved parameters load back as Parameters."""
    global _parameter_class
    _parameter_class = cls

_CODES = {D.float32: "F32", D.float64: "F64", D.float16: "F16", D.bfloat16: "BF16", D.int64: "I64",
          D.int32: "I32", D.int16: "I16", D.int8: "I8", D.uint8: "U8", D.bool_: "BOOL"}
_DTYPES = {v: k for k, v in _CODES.items()}
_CONTAINERS = {list: "list", tuple: "tuple", OrderedDict: "odict", Counter: "counter", dict: "dict"}


def _encode(obj, tensors, memo):
    """JSON-able form of ``obj``; tensors are appended to ``tensors`` (each object once)."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, Tensor):
        name = memo.get(id(obj))
        if name is None:
            name = memo[id(obj)] = str(len(tensors))
            tensors.append((name, obj))
        return {"tensor": name, "device": str(obj.device), "requires_grad": obj.requires_grad,
                "parameter": _parameter_class is not None and isinstance(obj, _parameter_class)}
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, int):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else {"float": repr(obj)}
    kind = _CONTAINERS.get(type(obj))
    if kind in ("list", "tuple"):
        return {kind: [_encode(v, tensors, memo) for v in obj]}
    if kind is not None:
        return {kind: [[_encode(k, tensors, memo), _encode(v, tensors, memo)] for k, v in obj.items()]}
    raise TypeError(f"tgrad.save: cannot store an object of type {type(obj).__name__}; only tensors, dicts, lists, "
                    "tuples, numbers, strings, bools and None are supported (nothing is pickled)")


def _decode(node, tensors):
    if not isinstance(node, dict):
        return node
    if "tensor" in node:
        return tensors[node["tensor"]]
    (kind, value), = node.items()
    if kind == "float":
        return float(value)
    if kind == "list":
        return [_decode(v, tensors) for v in value]
    if kind == "tuple":
        return tuple(_decode(v, tensors) for v in value)
    items = {_decode(k, tensors): _decode(v, tensors) for k, v in value}
    return {"odict": OrderedDict, "counter": Counter, "dict": dict}[kind](items)


def save(obj, f):
    """Write ``obj`` (state dicts: nested dicts/lists/tuples of tensors and numbers) to a path or binary file."""
    tensors = []
    structure = _encode(obj, tensors, {})
    header, chunks, offset = {}, [], 0
    for name, t in tensors:
        arr = np.ascontiguousarray(t.detach().cpu().numpy())
        data = arr.tobytes()
        header[name] = {"dtype": _CODES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt", "tgrad": json.dumps(structure, separators=(",", ":"))}
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    blob = struct.pack("<Q", len(head)) + head + b"".join(chunks)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            fh.write(blob)
    else:
        f.write(blob)


def _target(device_str, map_location):
    if map_location is None:
        return device_str
    if isinstance(map_location, dict):
        return map_location.get(device_str, device_str)
    if isinstance(map_location, (str, Device)):
        return map_location
    raise TypeError(f"map_location should be a string, a tgrad.device or a dict, got {type(map_location).__name__}")


def load(f, map_location=None, weights_only=None):
    """Read what ``save`` wrote; tensors go to their saved device unless ``map_location`` (str, device,
    or a {saved: target} dict) says otherwise.  ``weights_only`` is accepted for PyTorch compatibility:
    loading never runs code."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            blob = fh.read()
    else:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__", {}) or {}
    if "tgrad" not in meta:
        raise RuntimeError("tgrad.load: not a tgrad checkpoint (no '__metadata__.tgrad' in the safetensors header)")
    structure = json.loads(meta["tgrad"])
    info = {}

    def collect(node):
        if isinstance(node, dict):
            if "tensor" in node:
                info[node["tensor"]] = node
            else:
                for v in node.values():
                    collect(v)
        elif isinstance(node, list):
            for v in node:
                collect(v)

    collect(structure)
    base = 8 + n
    tensors = {}
    for name, h in header.items():
        dt = _DTYPES[h["dtype"]]
        start, end = h["data_offsets"]
        count = (end - start) // dt.itemsize
        arr = np.frombuffer(blob, dtype=dt.np, count=count, offset=base + start) if count else np.empty(0, dt.np)
        meta = info.get(name, {})
        dev = Device(_target(meta.get("device", "cpu"), map_location))
        if dev.type == "cuda" and not cuda_is_available():
            raise RuntimeError("Attempting to deserialize object on a CUDA device but tgrad.cuda.is_available() is "
                               "False. If you are running on a CPU-only machine, please use tgrad.load with "
                               "map_location=tgrad.device('cpu') to map your storages to the CPU.")
        t = make_tensor(arr.reshape(h["shape"]), dtype=dt, device=dev)
        if meta.get("parameter"):
            t = _parameter_class(t, requires_grad=meta.get("requires_grad", True))
        elif meta.get("requires_grad"):
            t.requires_grad_(True)
        tensors[name] = t
    return _decode(structure, tensors)


def _rebuild_tensor(array, device_str, requires_grad):
    """Inverse of ``Tensor.__reduce_ex__`` (copy / pickle): a tensor holding ``array`` on ``device_str``."""
    t = make_tensor(array, dtype=D.from_numpy_dtype(array.dtype), device=device_str)
    return t.requires_grad_(requires_grad) if requires_grad else t
