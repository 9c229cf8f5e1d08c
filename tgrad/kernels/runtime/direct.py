"""The ``direct`` executor: an interpreted kernel run over its grid with no per-launch set-up.

``triton.language`` is patched for the interpreter at the first interpreted program (``internals``; a cpu launch
that replays tapes only never patches it) and left patched until a GPU compile needs it back; each launch calls
the rewritten kernel function over the grid itself (no GridExecutor, no ``inspect`` per launch, no host copies:
our pointers already are host memory).
"""
import numpy as np
import triton
import triton.language as tl

from .internals import _I, _lang_for_interpreter, _twin


class Ptr:
    """A kernel pointer argument: address + numpy dtype (the pointer type Triton sees).

    The stock interpreter calls torch-like methods on pointer arguments to copy
    them to the host; for host memory these are identities / no-ops.
    """

    __slots__ = ("ptr", "dtype")

    def __init__(self, ptr, dtype):
        self.ptr = ptr
        self.dtype = dtype

    def data_ptr(self):
        return self.ptr

    def untyped_storage(self):
        return self

    def cpu(self):
        return self

    def new_empty(self, *a, **k):
        return self

    def set_(self, *a):
        return self

    def storage_offset(self):
        return 0

    def size(self):
        return ()

    def stride(self):
        return ()

    def copy_(self, other):
        pass



_ptr_types = {}
# Triton's pointer type names of numpy dtypes (``mangle_type``'s; its first call imports triton.experimental.gluon,
# ~1/2 of a fresh process's first recording of a launch whose generic tape came from disk)
_PTR_NAMES = {"float32": "*fp32", "float16": "*fp16", "bfloat16": "*bf16", "float64": "*fp64", "bool": "*u1",
              "int8": "*i8", "int16": "*i16", "int32": "*i32", "int64": "*i64", "uint8": "*u8", "uint16": "*u16",
              "uint32": "*u32", "uint64": "*u64", "float8_e4m3fn": "*fp8e4nv", "float8_e5m2": "*fp8e5"}


def _ptr_type(dtype):
    name = _PTR_NAMES.get(str(dtype)) or triton.runtime.jit.mangle_type(Ptr(0, dtype))
    return tl.str_to_ty(name, None)


def _entry(kernel):
    # cached on the object: a dict keyed by the kernel would hash the JITFunction (slow) per launch
    e = kernel.__dict__.get("_tgrad_entry")
    if e is None:
        _lang_for_interpreter()         # (rewritten as interpreted launches always were: tl patched)
        tw = _twin(kernel)
        fn = tw.rewrite()
        cexpr = frozenset(_I.GridExecutor(kernel.fn, tw.arg_names, (1,)).constexprs)
        defaults = {p.name: p.default for p in kernel.params if p.has_default}    # as Triton's JIT fills them
        e = kernel.__dict__["_tgrad_entry"] = (fn, tuple(tw.arg_names), cexpr, defaults)
    return e


def _cvt(a):
    if type(a) is Ptr:
        ty = _ptr_types.get(a.dtype)
        if ty is None:
            ty = _ptr_types[a.dtype] = _ptr_type(a.dtype)
        return tl.tensor(_I.TensorHandle(np.array([a.ptr], dtype=np.uint64), ty), ty)
    if type(a) is int and -2**31 <= a < 2**31:
        return tl.tensor(_I.TensorHandle(np.array([a], dtype=np.int32), tl.int32), tl.int32)
    return _I._implicit_cvt(a)


def _run_direct(kernel, grid, args, constexprs):
    _lang_for_interpreter()
    fn, names, cexpr, defaults = _entry(kernel)
    kw = dict(defaults)
    for nm, a in zip(names, args):
        kw[nm] = _cvt(a)
    kw.update(constexprs)
    if len(kw) != len(names):
        missing = [n for n in names if n not in kw]
        raise TypeError(f"{kernel.__name__}: missing kernel arguments {missing}")
    g = tuple(grid) + (1,) * (3 - len(grid))
    b = _I.interpreter_builder
    b.set_grid_dim(*g)
    for x in range(g[0]):
        for y in range(g[1]):
            for z in range(g[2]):
                b.set_grid_idx(x, y, z)
                fn(**kw)

