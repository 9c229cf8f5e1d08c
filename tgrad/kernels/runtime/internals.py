"""Every Triton internal tgrad relies on, in one place: dual-mode launching.

``cpu`` tensors run their kernels in Triton's interpreter, ``cuda`` tensors
through the JIT compiler, in the same process, with ``TRITON_INTERPRET``
unset (see shared TRITON_NOTES.md "dual mode").  What this relies on, and
``tests/kernels/test_triton_internals.py`` pins:

- ``triton.runtime.interpreter``: ``_patch_lang``, ``_implicit_cvt``,
  ``interpreter_builder`` (``set_grid_dim``/``set_grid_idx``/``options``),
  ``InterpreterOptions``, ``InterpretedFunction.rewrite``, ``GridExecutor``;
- ``JITFunction.__call__`` (routed to an interpreted twin while an
  interpreted launch runs, so ``tl.sum``, ``tl.randn`` and our own
  ``@triton.jit`` helpers work inside interpreted kernels);
- ``InterpreterBuilder.create_native`` (added: one op for a native helper's call, see ``native.py``);
- ``ReduceOps.sum`` (replaced: sums reduce a C-contiguous array, see ``_sum_contiguous``);
- ``interpreter._get_np_dtype`` (replaced by a remembered lookup, same results).
- ``tl.tensor.__init__``, ``tl.block_type.__init__``, ``TritonSemantic.broadcast_impl_value`` (replaced by lean
  versions, ``LEAN``: the same attributes and builder calls, made faster for recording tapes).

Interpreted launches are serialized by ``host_state.LOCK`` (the interpreter mutates ``triton.language``
and keeps per-launch state in a global builder).
"""
import contextlib
import dataclasses
import functools
import hashlib
import marshal
import math
import os
import sys
import threading

assert not os.environ.get("TRITON_INTERPRET"), \
    "tgrad routes each launch itself; unset TRITON_INTERPRET (it breaks GPU compiles)"
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")   # silence 3.9's once-per-process warning
os.environ.setdefault("TRITON_DEFAULT_BACKEND", "nvidia")  # never probe HIP (it imports torch)

import numpy as np  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton import _utils as _triton_utils  # noqa: E402
from triton.runtime import interpreter as _I  # noqa: E402
from triton.runtime.interpreter import InterpretedFunction  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402

from . import blas  # noqa: E402
from .host_state import LOCK, keep_heap  # noqa: E402

TRITON_VERSION = triton.__version__
_tl_core = tl.core  # a module global, so _patch_lang(_anchor) patches tl AND tl.core


def _anchor():
    pass


_tls = threading.local()
_orig_patch_lang = _I._patch_lang
_scope = [None]          # the live patch scope of the direct executor, or None


def _patch_lang_all(fn):
    # stock executor: every launch patches (and restores) both tl and tl.core
    return _orig_patch_lang(_anchor)


_I._patch_lang = _patch_lang_all


_orig_create_dot = _I.InterpreterBuilder.create_dot


def _create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
    """``tl.dot`` with bfloat16 operands multiplies them in fp32, as a GPU does (Triton's interpreter multiplied
    their uint16 bits; tgrad's cpu launches upcast first, the GPU's tiles do not); float and integer operands
    go through ``blas.matmul``, as the tape's do (the same bits whether a launch is traced or replayed)."""
    a, b = (_I.TensorHandle((h.data.astype(np.uint32) << 16).view(np.float32), tl.float32)
            if h.dtype.scalar.is_bf16() else h for h in (a, b))
    if any(h.dtype.primitive_bitwidth == 8 and h.dtype.is_floating() for h in (a, b)):
        return _orig_create_dot(self, a, b, d, input_precision, max_num_imprecise_acc)
    return _I.TensorHandle(blas.matmul(a.data, b.data, d.data.dtype) + d.data, d.dtype.scalar)


_I.InterpreterBuilder.create_dot = _create_dot


def _lang_for_interpreter():
    if _scope[0] is None:
        _scope[0] = _orig_patch_lang(_anchor)
        keep_heap()


def _lang_for_compiler():
    if _scope[0] is not None:
        _scope[0].restore()
        _scope[0] = None


def _twin(jitfn):
    # cached on the object: hashing a JITFunction while tl is patched fails
    tw = jitfn.__dict__.get("_tgrad_twin")
    if tw is None:
        tw = jitfn.__dict__["_tgrad_twin"] = InterpretedFunction(jitfn.fn)
        if hasattr(jitfn, "raw_src"):
            tw.rewriter.rewrite_ast = functools.partial(_rewrite_ast, tw.rewriter, jitfn)
    return tw


CODE_CACHE = [None]      # (get(name) -> bytes or None, put(name, bytes)): rewritten code on disk (tape_cache sets it)


def _rewrite_ast(rw, jitfn):
    """``FunctionRewriter.rewrite_ast`` (the interpreter's version of a ``@triton.jit`` function: its AST transformed,
    compiled and executed in the function's globals) from the source lines and line numbers the JITFunction read
    at import (Triton's reads the file again and builds a second JITFunction: ~40% of a fresh process's first
    step), its code object kept on disk by source (``CODE_CACHE``): the same code, so the same function."""
    lines = jitfn.raw_src
    rw.filename, rw.def_file_lineno = jitfn.file_name, jitfn.def_file_line_number
    rw.def_lineno = rw._find_def(lines)
    src = rw._prepare_source(lines)
    cache = CODE_CACHE[0]
    code = name = None
    if cache is not None and not rw.kwargs:
        name = "rw-" + hashlib.sha256(repr((sys.version, TRITON_VERSION, rw.filename, rw.def_file_lineno,
                                            src)).encode()).hexdigest()[:40]
        blob = cache[0](name)
        try:
            code = marshal.loads(blob) if blob is not None else None
        except (EOFError, ValueError, TypeError):
            code = None
    if code is None:
        code = compile(rw._transform_ast(src), filename=rw.filename, mode="exec")
        if name is not None:
            cache[1](name, marshal.dumps(code))
    local = dict(rw.kwargs)
    fn_globals = rw.fn.__globals__
    for k, v in vars(_I).items():           # as _compile_and_exec: the interpreter's globals where missing
        if k not in fn_globals:
            fn_globals[k] = v
    exec(code, fn_globals, local)
    return local[rw.fn.__name__]


_orig_jit_call = JITFunction.__call__


def _jit_call(self, *args, **kwargs):
    if getattr(_tls, "interp", 0):
        nat = self.__dict__.get("_tgrad_native")       # a helper computed natively (runtime/native.py)
        if nat is not None:
            r = nat(*args, **kwargs)
            if r is not NotImplemented:
                return r
        return _twin(self).rewrite()(*args, **kwargs)
    return _orig_jit_call(self, *args, **kwargs)


def _create_native(self, f, *hs):
    """One builder op for a native helper's call (runtime/native.py): the float32 ufunc ``f`` of the handles."""
    return _I.TensorHandle(f(*[h.data for h in hs]), tl.float32)


_I.InterpreterBuilder.create_native = _create_native


JITFunction.__call__ = _jit_call


def _sum_contiguous(self, input):
    """``tl.sum`` in the interpreter: ``np.sum`` of a C-contiguous copy.  numpy's summation order depends on
    the memory layout (pairwise along a contiguous axis, row by row otherwise); the direct run sees gathered
    (contiguous) blocks, a replayed tape strided views: same layout on every path, same bits (issue 16)."""
    return self.to_tensor(np.sum(np.ascontiguousarray(input.handle.data), axis=self.axis, keepdims=self.keep_dims),
                          input.dtype)


_I.ReduceOps.sum = _sum_contiguous


# Block shapes of plain ints -> (Triton's tuple_type of their dims as constexprs, numel, Triton's str of the
# shape): what Triton's tl.block_type and tl.tensor constructors compute again for every value made (a builder op
# makes one or two: about a fifth of recording a new shape's tape).
_shapes = {}


def _shape_meta(dims):
    m = _shapes.get(dims)
    if m is None:
        t = _tl_core.tuple(list(dims))          # (Triton's own checks and str)
        m = _shapes[dims] = (_tl_core.tuple_type([_tl_core.constexpr_type(d) for d in dims]), t.type,
                             _triton_utils.validate_block_shape(dims) if dims else 1, str(t),
                             tuple(_tl_core.constexpr(d) for d in dims))
    return m


def _tl_tuple(values, ty):
    t = object.__new__(_tl_core.tuple)
    t.values = values
    t.type = ty
    return t


def _int_dims(shape):
    """``shape`` (a list or Triton tuple) as a tuple of plain ints, or None."""
    t = type(shape)
    vals = shape.values if t is _tl_core.tuple else shape if t is list else None     # (Triton asserts these)
    if not vals:
        return None
    for d in vals:
        if type(d) is not int:
            return None
    return tuple(vals)


_orig_tensor_init = _tl_core.tensor.__init__
_orig_block_init = _tl_core.block_type.__init__


def _tensor_init(self, handle, type):
    """``tl.tensor.__init__``: the same attributes, its shape's types and constexprs made once per block shape
    (constexprs are never changed once made)."""
    dims = _int_dims(type.shape) if type.is_block() else ()
    if dims is None:
        return _orig_tensor_init(self, handle, type)
    cty, _, numel, _, cdims = _shape_meta(dims)
    self.handle = handle
    self.type = type
    self.dtype = type.scalar
    self.numel = _tl_core.constexpr(numel)
    self.shape = _tl_tuple(list(cdims), cty)


def _block_type_init(self, element_ty, shape):
    """``tl.block_type.__init__``: the same attributes, a shape of plain ints validated once."""
    dims = _int_dims(shape)
    if dims is None:
        return _orig_block_init(self, element_ty, shape)
    _, ity, numel, text, _ = _shape_meta(dims)
    self.element_ty = element_ty
    self.shape = _tl_tuple(list(dims), ity)
    self.numel = numel
    self.name = f'<{text}, {element_ty}>'


_tl_core.tensor.__init__ = _tensor_init
_tl_core.block_type.__init__ = _block_type_init

_Semantic = type(_I.interpreter_semantic)          # (triton.language.semantic.TritonSemantic)
_orig_broadcast = _Semantic.broadcast_impl_value


def _broadcast_impl_value(self, lhs, rhs):
    """``broadcast_impl_value`` returning two scalars or two blocks of one shape at once, as Triton's does after
    comparing the shapes through its tuple types (a binary op's operands mostly are)."""
    lt, rt = lhs.type, rhs.type
    lb, rb = lt.is_block(), rt.is_block()
    if not lb and not rb:
        return lhs, rhs
    if lb and rb and type(lt.shape) is _tl_core.tuple and type(rt.shape) is _tl_core.tuple and \
            _int_dims(lt.shape) is not None and lt.shape.values == rt.shape.values:
        return lhs, rhs
    return _orig_broadcast(self, lhs, rhs)


_Semantic.broadcast_impl_value = _broadcast_impl_value

_orig_patch_attr = _I._patch_attr
_BUILTIN_CODE = _tl_core.builtin(lambda _semantic=None: None).__code__     # tl.core.builtin's wrapper


def _patch_attr(obj, name, member, builder, scope):
    """The interpreter's ``_patch_attr`` (a ``tl`` builtin called with the interpreter's semantic) calling the
    builtin's function itself: Triton's wraps it twice more (a lambda filtering the keyword arguments, then the
    builtin's own check that ``_semantic`` is given), once per ``tl`` call a kernel makes."""
    if getattr(member, "__code__", None) is not _BUILTIN_CODE:        # (another decorator outside: Triton's way)
        return _orig_patch_attr(obj, name, member, builder, scope)
    fn = member.__wrapped__
    interp = _I

    def new_member(*args, _semantic=None, **kwargs):
        return fn(*args, **kwargs, _semantic=interp.interpreter_semantic)
    scope.set_attr(obj, name, new_member)


_I._patch_attr = _patch_attr

# (owner, attribute, tgrad's lean version, Triton's): the same builder calls on the same values, so the same tapes
LEAN = [(_tl_core.tensor, "__init__", _tensor_init, _orig_tensor_init),
        (_tl_core.block_type, "__init__", _block_type_init, _orig_block_init),
        (_Semantic, "broadcast_impl_value", _broadcast_impl_value, _orig_broadcast),
        (_I, "_patch_attr", _patch_attr, _orig_patch_attr)]


@contextlib.contextmanager
def reference_language():
    """Triton's own versions of ``LEAN`` while in the block (tests record tapes both ways and compare them)."""
    _lang_for_compiler()            # (tl is patched again through the reference _patch_attr, and after the block)
    for owner, name, _, orig in LEAN:
        setattr(owner, name, orig)
    try:
        yield
    finally:
        _lang_for_compiler()
        for owner, name, lean, _ in LEAN:
            setattr(owner, name, lean)

_np_dtypes = {}
_orig_get_np_dtype = _I._get_np_dtype


def _get_np_dtype(tt_dtype):
    """The interpreter's ``_get_np_dtype`` remembered per element type (Triton's builds a dict of 19 numpy
    dtypes on every call: a sixth of the time of tracing a new shape)."""
    ety = tt_dtype.element_ty if isinstance(tt_dtype, tl.block_type) else tt_dtype
    try:
        return _np_dtypes[ety]
    except KeyError:
        d = _np_dtypes[ety] = _orig_get_np_dtype(ety)
        return d
    except TypeError:       # an unhashable type: not remembered
        return _orig_get_np_dtype(tt_dtype)


_I._get_np_dtype = _get_np_dtype


def _set_options(debug):
    b = _I.interpreter_builder
    b.options = dataclasses.replace(b.options, debug=debug, sanitize_overflow=debug)


_set_options(os.environ.get("TGRAD_INTERPRET_DEBUG", "") == "1")


# ---------------------------------------------------------------- the GPU side (JIT compile, C launcher)
# Relied on (pinned by tests/kernels/test_triton_internals.py and exercised by tests/test_fakecuda.py):
# ``triton.runtime.driver._active``, ``CudaDriver._get_current_device/_get_current_stream/...`` (its
# torch-free methods), ``JITFunction.run(..., warmup=True)``, ``CompiledKernel._init_handles``, the
# ``CudaLauncher`` fields (``launch``, scratch sizes, ``arg_annotations``, ``kernel_signature``),
# ``create_function_from_signature`` and ``JITFunction._pack_args``.
_own_driver = [None]


def torch_free_driver():
    """Triton's CudaDriver with its torch-free device/stream methods, whatever is imported.

    (With torch in ``sys.modules`` Triton's default driver asks torch for the device and stream: with a
    CPU-only torch every launch fails, with a CUDA torch it uses torch's stream.)"""
    d = _own_driver[0]
    if d is None:
        from triton.backends.nvidia.driver import CudaDriver
        d = CudaDriver()
        d.get_current_device = d._get_current_device
        d.get_current_stream = d._get_current_stream
        d.set_current_device = d._set_current_device
        d.get_device_capability = d._get_device_capability
        _own_driver[0] = d
    return d


def current_device_query():
    """Triton's C utility answering the device of the calling thread's current context (one C call:
    ``cuCtxGetCurrent`` + ``cuCtxGetDevice``; with no context current it makes device 0's primary one current)."""
    return torch_free_driver().utils.get_current_device


def jit_compiled(kernel, args, constexprs):
    """Triton's own JIT-cache entry for this launch on the current device (compiled or loaded from its
    caches as ``kernel[grid](...)`` would), with its module loaded; no launch."""
    from triton.runtime import driver
    with LOCK:
        _lang_for_compiler()
        prev = driver._active
        driver._active = torch_free_driver()
        try:
            compiled = kernel.run(*args, grid=(1,), warmup=True, **constexprs)
            compiled._init_handles()
        finally:
            driver._active = prev
    return compiled


def c_launch_parts(compiled):
    """``(fn, mid)``: ``fn(gx, gy, gz, stream, *mid, params)`` launches ``compiled`` with Triton's C launcher
    (``params``: every kernel parameter in order, constexprs included, pointers as ints)."""
    run = compiled.run                  # Triton's CudaLauncher
    if (run.global_scratch_size == 0 and run.profile_scratch_size == 0
            and not run.gsan_enabled and run.num_ctas == 1):
        return run.launch, (compiled.function, run.launch_cooperative_grid, run.launch_pdl,
                            compiled.packed_metadata, None, None, None, None, None, run.arg_annotations,
                            run.kernel_signature)

    def general(gx, gy, gz, stream, params):
        run(gx, gy, gz, stream, compiled.function, compiled.packed_metadata, None, None, None, *params)
    return general, ()


def _jit_kwargs(kernel, constexprs):
    """The keyword arguments ``JITFunction.run`` gives its binder and option parser (the options part of the key)."""
    from triton import knobs
    return dict(constexprs, debug=kernel.debug or knobs.runtime.debug,
                instrumentation_mode=knobs.compilation.instrumentation_mode,
                fpsan_homomorphic_casts=knobs.compilation.fpsan_homomorphic_casts)


def _backend(arch):
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend
    return make_backend(GPUTarget("cuda", arch, 32))


def jit_spec(kernel, args, constexprs):
    """(signature, constexprs by name, attrs) of a launch exactly as the GPU JIT specializes it: Triton's
    own binder and ``_pack_args`` (an int equal to 1 becomes a constexpr, ``tt.divisibility`` 16 on
    pointers and on ints that are multiples of 16 unless ``do_not_specialize``)."""
    binder = kernel.__dict__.get("_tgrad_aot_binder")
    if binder is None:
        from triton.runtime.jit import create_function_from_signature
        backend = _backend(90)              # argument specialization is the same for every NVIDIA arch
        binder = kernel.__dict__["_tgrad_aot_binder"] = (
            backend, create_function_from_signature(kernel.signature, kernel.params, backend))
    backend, bind = binder
    kwargs = _jit_kwargs(kernel, constexprs)
    bound, specialization, options = bind(*args, **kwargs)
    _, sig, cexpr, attrs = kernel._pack_args(backend, kwargs, bound, specialization, options)
    names = kernel.arg_names
    return sig, {names[k[0]]: v for k, v in cexpr.items()}, attrs


def jit_options(kernel, arch, options=None):
    """The compile options the JIT uses for ``kernel`` on sm_<arch> given launch ``options`` (num_stages ...):
    a dict for ``triton.compile``."""
    return _backend(arch).parse_options(_jit_kwargs(kernel, options or {})).__dict__


def do_not_specialize(kernel, names):
    """Make the GPU JIT treat int parameters ``names`` as plain values (no ==1 / %16 specialization)."""
    for p in kernel.params:
        if p.name in names:
            p.do_not_specialize = True
