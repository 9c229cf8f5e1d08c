"""Compiled cpu tapes kept on disk across processes, so a shape any earlier run traced is not traced again.

A tape is stored when it is plain numpy (it never calls the interpreter's builder) and everything it holds
is data or a module-level name: its function's code (``marshal``), its constants (``pickle``: arrays,
numpy dtypes and ufuncs, module-level functions; a load/store view cache goes as an empty one), its byte
estimate.  Loading rebuilds the same function over the same constants, so a loaded tape computes the same
bits as a recorded one.  Keys: the kernel by module and name, the launch's trace key (grid, argument
dtypes and ints, constexprs; callables by module-level name) and a fingerprint of everything a tape
depends on: every source file of ``tgrad/kernels`` and ``tgrad/dtypes.py`` (path, size, mtime: an edit
invalidates all), Python's, numpy's and Triton's versions, ``TGRAD_NATIVE``.  A launch whose key holds
anything else is not cached.

Beside a kernel's generic tapes, their builder ops (``put_ops``: pickled, jit functions by name), so a later
process specializes a new shape by replaying them; and the interpreter's rewritten jit functions' code
(``get_bytes``/``put_bytes`` for ``internals.CODE_CACHE``, keyed by their source).

``TGRAD_TAPE_CACHE=0`` turns it off (tests/conftest.py does, so tests trace); ``TGRAD_TAPE_CACHE_DIR``
moves it (default ``$XDG_CACHE_HOME/tgrad/tapes``).  The directory keeps at most ``MAX_DISK_BYTES``
(``TGRAD_TAPE_CACHE_BYTES``, 1 GiB; the least recently used files go first: a read marks a file used).
``STATS``: hits, misses, stores, not storable.
"""
import builtins
import hashlib
import io
import marshal
import os
import pickle
import sys
import tempfile
import types

import numpy as np
import triton
import triton.language as tl

from . import native
from . import tape as _tape
from .internals import CODE_CACHE
from .tape_ops import _Views

ENABLED = os.environ.get("TGRAD_TAPE_CACHE", "1") != "0"
DIR = os.environ.get("TGRAD_TAPE_CACHE_DIR") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "tgrad", "tapes")
MAX_DISK_BYTES = int(os.environ.get("TGRAD_TAPE_CACHE_BYTES", 1 << 30))   # (g), a small GPT: ~150 MiB a batch size
STATS = {"hits": 0, "misses": 0, "stores": 0, "unstorable": 0}
_state = {"fingerprint": None, "disk_bytes": None}


class _No(Exception):
    """The launch or tape cannot be cached (an unnamed callable, a constant that is not data)."""


def _fingerprint():
    fp = _state["fingerprint"]
    if fp is None:
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))      # tgrad/kernels
        parts = [sys.version, np.__version__, triton.__version__, here, os.environ.get("TGRAD_NATIVE", "1")]
        st = os.stat(os.path.join(os.path.dirname(here), "dtypes.py"))        # (kernels/amp.py's dtypes)
        parts.append((st.st_size, st.st_mtime_ns))
        todo = [("", here)]
        while todo:         # (os.scandir: a third of os.walk's time, a fresh process's first launch pays it)
            rel, path = todo.pop()
            for e in sorted(os.scandir(path), key=lambda e: e.name):
                if e.is_dir():
                    todo.append((rel + "/" + e.name, e.path))
                elif e.name.endswith((".py", ".c")):
                    st = e.stat()
                    parts.append((rel, e.name, st.st_size, st.st_mtime_ns))
        fp = _state["fingerprint"] = hashlib.sha256(repr(parts).encode()).hexdigest()
    return fp


def _named(obj):
    """(module, qualname) of a module-level function or JITFunction, else raises _No."""
    fn = getattr(obj, "fn", obj)
    mod, name = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if mod is None or name is None or "<" in name:
        raise _No
    cur = sys.modules.get(mod)
    for part in name.split("."):
        cur = getattr(cur, part, None)
    if cur is not obj:
        raise _No
    return mod, name


_PLAIN = frozenset({type(None), bool, int, float, str})


def _norm(x):
    """A repr-stable form of one key component, or raises _No."""
    t = type(x)
    if t in _PLAIN:
        return x
    if t is tuple or t is list:
        return (t.__name__,) + tuple([y if type(y) in _PLAIN else _norm(y) for y in x])
    if isinstance(x, np.dtype):
        return ("np", x.str)
    if isinstance(x, type):
        return ("type", x.__module__, x.__qualname__)
    if isinstance(x, tl.dtype):
        return ("tl", str(x))
    if callable(x):
        return ("fn",) + _named(x)
    raise _No


def key(kind, kernel, *parts):
    """The file name of a tape (``kind``: "spec" / "generic") of ``kernel`` under ``parts``, or None."""
    if not ENABLED:
        return None
    try:
        k = repr((kind, _fingerprint(), _named(kernel)) + tuple(_norm(p) for p in parts))
    except _No:
        return None
    return hashlib.sha256(k.encode()).hexdigest()[:40]


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj):
        t = type(obj)
        if t is _Views:                     # its cached views alias this process's memory: stored empty
            return _Views, (obj.shape, obj.strides, obj.dtype)
        if obj is native.fma_ufunc() and obj is not None:       # built per process (runtime/fma.c)
            return _native_fma, ()
        if t is np.ufunc and native.name_of(obj) is not None:      # aten_cpu.c's, likewise
            return _native_aten, (native.name_of(obj),)
        if t is np.ndarray:
            b = obj
            while b is not None:            # data owned by arrays or bytes (a loaded tape's), not tensor memory
                if type(b) is memoryview:
                    b = b.obj
                if type(b) in (bytes, bytearray):
                    break
                if type(b) is not np.ndarray or b.dtype.hasobject:
                    raise _No
                b = b.base
            return NotImplemented
        if isinstance(obj, (np.generic, np.dtype, np.ufunc)) or isinstance(obj, type) or t in (range, slice, type(...)):
            return NotImplemented
        if t in (types.FunctionType, types.BuiltinFunctionType):
            _named(obj)
            return NotImplemented
        raise _No


def _native_fma():
    f = native.fma_ufunc()
    if f is None:
        raise _No
    return f


def _native_aten(name):
    f = native.aten_ufunc(name)
    if f is None:
        raise _No
    return f


def _dump(run):
    """(code, constants, name, nbytes, source) of a compiled plain-numpy tape, or raises _No (the source: the
    compiled replay inlines a tape from it, ``_compile/fuse.py``)."""
    code = getattr(run, "__code__", None)
    if code is None or code.co_filename != "<tgrad tape>":
        raise _No                           # (a tape calling the builder runs wrapped under LOCK)
    consts = {k: v for k, v in run.__globals__.items() if k.startswith("_k")}
    return marshal.dumps(code), consts, run.__name__, run.nbytes, run.source


def _load(rec, kinds):
    code, consts, name, nbytes, source = rec
    ns = _tape._Emitter(kinds).ns
    ns.update(consts)
    ns["__builtins__"] = builtins
    run = types.FunctionType(marshal.loads(code), ns, name)
    run.nbytes, run.source = nbytes, source
    return run


def get(name, kinds):
    """The tapes stored under ``name`` (a list, in the order put), or None."""
    if name is None:
        return None
    path = os.path.join(DIR, name)
    try:
        with open(path, "rb") as f:
            recs = pickle.load(f)
        out = [None if r is None else _load(r, kinds) for r in recs]
    except Exception:           # absent, partly written by a crashed process, or from another numpy
        STATS["misses"] += 1
        return None
    STATS["hits"] += 1
    _used(path)
    return out


def _used(path):
    """Mark a file read now: the directory's budget drops the least recently used files first."""
    try:
        os.utime(path)
    except OSError:
        pass


def put(name, runs):
    """Store ``runs`` (compiled tapes or None) under ``name``; nothing when any cannot be stored."""
    if name is None:
        return
    try:
        recs = [None if r is None else _dump(r) for r in runs]
        buf = _dumps(recs)
    except (_No, pickle.PicklingError, TypeError, AttributeError):
        STATS["unstorable"] += 1
        return
    put_bytes(name, buf)


def put_bytes(name, buf):
    """Write ``buf`` to the file ``name`` of the cache (atomically; nothing on an OS error)."""
    try:
        os.makedirs(DIR, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=DIR, prefix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(buf)
        os.replace(tmp, os.path.join(DIR, name))
    except OSError:
        return
    STATS["stores"] += 1
    try:
        _account(len(buf))
    except OSError:         # a file another process removed between listing and stat: counted next time
        _state["disk_bytes"] = None


def get_bytes(name):
    """The bytes of the file ``name`` of the cache, or None."""
    path = os.path.join(DIR, name)
    try:
        with open(path, "rb") as f:
            buf = f.read()
    except OSError:
        STATS["misses"] += 1
        return None
    STATS["hits"] += 1
    _used(path)
    return buf


class _OpsPickler(pickle.Pickler):
    """A generic tape's builder ops: builder methods by name (trace._replay calls them by name), jit functions
    (a reduction's combine function) by module-level name, the rest (handles, types, constants) by value."""

    def reducer_override(self, obj):
        if isinstance(obj, triton.runtime.JITFunction):
            return _by_name, _named(obj)
        if type(obj) is tl.block_type:     # (its default pickle recurses)
            return tl.block_type, (obj.element_ty, list(obj.shape))
        if type(obj) is np.ufunc and native.name_of(obj) is not None:      # create_native's aten_cpu.c ufuncs
            return _native_aten, (native.name_of(obj),)
        return NotImplemented


def _by_name(mod, name):
    cur = sys.modules[mod]
    for part in name.split("."):
        cur = getattr(cur, part)
    return cur


def put_ops(name, opslists):
    """Store the builder ops of a kernel's generic tapes (lists of trace.record's ops, or None) beside them."""
    if name is None:
        return
    try:
        f = io.BytesIO()
        _OpsPickler(f, protocol=pickle.HIGHEST_PROTOCOL).dump(
            [None if ops is None else [(n, None if n != "reduce_scan" else fn, vals, kw, slot, low)
                                       for n, fn, vals, kw, slot, low in ops] for ops in opslists])
    except Exception:       # (pickle may reach any object's __reduce__ or a module's __getattr__: never fail a launch)
        STATS["unstorable"] += 1
        return
    put_bytes(name + ".ops", f.getvalue())


def get_ops(name):
    """The builder ops ``put_ops`` stored under ``name``, or None."""
    buf = None if name is None else get_bytes(name + ".ops")
    try:
        return None if buf is None else pickle.loads(buf)
    except Exception:           # partly written, from another Triton, a renamed function
        return None


if ENABLED:     # the interpreter's rewritten kernel functions (internals._rewrite_ast), by source
    CODE_CACHE[0] = (get_bytes, put_bytes)


def _dumps(recs):
    f = io.BytesIO()
    _Pickler(f, protocol=pickle.HIGHEST_PROTOCOL).dump(recs)
    return f.getvalue()


def _account(n):
    """Keep the directory under MAX_DISK_BYTES: the least recently used (read or written) files out first."""
    if _state["disk_bytes"] is None:
        _state["disk_bytes"] = sum(e.stat().st_size for e in os.scandir(DIR) if e.is_file())
    else:
        _state["disk_bytes"] += n
    if _state["disk_bytes"] <= MAX_DISK_BYTES:
        return
    files = sorted((e.stat().st_mtime_ns, e.stat().st_size, e.path) for e in os.scandir(DIR) if e.is_file())
    total = sum(f[1] for f in files)
    for _, size, path in files:
        if total <= MAX_DISK_BYTES * 3 // 4:
            break
        try:
            os.remove(path)
        except OSError:
            pass
        total -= size
    _state["disk_bytes"] = total
