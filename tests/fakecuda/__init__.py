"""The fake CUDA driver (fakecuda.c): build it, point a process at it, run its kernels on the host.

``build()`` compiles fakecuda.c with the C compiler Triton's own launcher is built with, against the
``cuda.h`` Triton ships, into a directory as ``libcuda.so.1``; ``environ()`` gives the variables that
make tgrad (``tgrad.memory.cuda_driver``) and Triton (``TRITON_LIBCUDA_PATH``, ``LD_LIBRARY_PATH``)
load it; ``install()`` registers the launch/run callbacks in this process.

Each ``cuLaunchKernel`` calls ``_on_launch`` with the CUfunction handle, grid and parameter array:
tgrad's launch path recorded which kernel and compiled specialization each handle runs
(``FUNCTIONS``), so the parameters are decoded by that signature (pointers, ints, floats; constexprs
and run-time specialized ints from the compiled source) into a job. The driver queues the job on its
stream (or, while the stream captures, keeps it as a graph node: run at every launch of the graph, dropped
when the graph goes); ``_on_run`` runs it when the stream drains, with tgrad's cpu executor on the same addresses
(device memory is host memory), after checking every pointer argument is live memory of the
launching device (else the context fails with CUDA_ERROR_ILLEGAL_ADDRESS, as a GPU would).
"""
import ctypes
import hashlib
import itertools
import os
import subprocess
import sys
import tempfile
import traceback

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakecuda.c")
CUDA_ERROR_INVALID_HANDLE = 400
CUDA_ERROR_ILLEGAL_ADDRESS = 700
CUDA_ERROR_LAUNCH_FAILED = 719


class Unavailable(RuntimeError):
    """The fake driver cannot be built here (no C compiler): the reason is the message."""


def compiler():
    """The C compiler Triton builds its launcher with ($CC, else gcc, else clang)."""
    from triton.runtime.build import _find_compiler
    try:
        return _find_compiler("c")
    except RuntimeError as e:
        raise Unavailable(f"fakecuda needs a C compiler: {e}") from None


def build(out_dir=None):
    """Compile the fake driver (once per source version); returns the directory holding libcuda.so.1."""
    import triton
    include = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "include")
    with open(SOURCE, "rb") as f:
        src = f.read()
    tag = hashlib.sha256(src + include.encode()).hexdigest()[:16]
    out_dir = out_dir or os.path.join(tempfile.gettempdir(), f"tgrad-fakecuda-{os.getuid()}-{tag}")
    lib = os.path.join(out_dir, "libcuda.so.1")
    if os.path.exists(lib):
        return out_dir
    cc = compiler()
    os.makedirs(out_dir, exist_ok=True)
    tmp = f"{lib}.{os.getpid()}.tmp"
    cmd = [cc, SOURCE, "-O2", "-g", "-shared", "-fPIC", "-Wall", "-Werror", "-Wl,-soname,libcuda.so.1",
           f"-I{include}", "-o", tmp, "-lpthread"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"building fakecuda failed:\n{' '.join(cmd)}\n{r.stderr}")
    os.replace(tmp, lib)
    return out_dir


def environ(devices=1, cc=90, execute=True, base=None):
    """Environment variables for a process that runs on the fake driver (``base``: os.environ by default)."""
    d = build()
    env = dict(os.environ if base is None else base)
    env.update(TRITON_LIBCUDA_PATH=d, FAKECUDA_DEVICES=str(devices), FAKECUDA_CC=str(cc),
               FAKECUDA_EXEC="1" if execute else "0")
    env["LD_LIBRARY_PATH"] = d + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def use(devices=1, cc=90, execute=True):
    """Point this process at the fake driver (before tgrad's driver is first used) and install the callbacks."""
    env = environ(devices, cc, execute)
    for k in ("TRITON_LIBCUDA_PATH", "FAKECUDA_DEVICES", "FAKECUDA_CC", "FAKECUDA_EXEC"):
        os.environ[k] = env[k]
    return install()


# ---------------------------------------------------------------- the host executor
_LAUNCH_CB = ctypes.CFUNCTYPE(ctypes.c_longlong, ctypes.c_ulonglong, ctypes.c_uint, ctypes.c_uint,
                              ctypes.c_uint, ctypes.c_void_p, ctypes.c_int)
_RUN_CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_longlong, ctypes.c_int)
RUN_ONCE, RUN_KEEP, DROP = 0, 1, 2      # a queued launch; a graph node's launch (run again later); a graph's end
_SCALARS = {"i1": ctypes.c_int8, "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32,
            "i64": ctypes.c_int64, "u1": ctypes.c_uint8, "u8": ctypes.c_uint8, "u16": ctypes.c_uint16,
            "u32": ctypes.c_uint32, "u64": ctypes.c_uint64, "fp32": ctypes.c_float, "fp64": ctypes.c_double}
_state = {"lib": None, "callbacks": None}
JOBS = {}
ERRORS = []          # what made a launch fail (the driver only returns an error code)
_ids = itertools.count()


def _pointee(ty):
    import ml_dtypes
    import numpy as np
    return np.dtype({"i1": np.bool_, "u1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32,
                     "i64": np.int64, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
                     "fp16": np.float16, "bf16": ml_dtypes.bfloat16, "fp32": np.float32,
                     "fp64": np.float64}[ty[1:]])


def decode(kernel, compiled, params):
    """(args, constexprs) for the cpu executor from a launch's parameter array ``params`` (void **)."""
    from tgrad.kernels.runtime import Ptr
    sig = compiled.src.signature
    consts = {k[0] if isinstance(k, tuple) else kernel.arg_names.index(k): v
              for k, v in compiled.src.constants.items()}
    pv = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
    args, cexpr, j = [], {}, 0
    for p in kernel.params:
        ty = sig[p.name]
        if p.is_constexpr:
            cexpr[p.name] = consts[p.num]
        elif ty == "constexpr":            # an int specialized at run time (== 1) or a None
            args.append(consts[p.num])
        elif ty.startswith("*"):
            addr = ctypes.cast(pv[j], ctypes.POINTER(ctypes.c_uint64))[0]
            args.append(Ptr(addr, _pointee(ty)))
            j += 1
        else:
            args.append(ctypes.cast(pv[j], ctypes.POINTER(_SCALARS[ty])).contents.value)
            j += 1
    return args, cexpr


def _on_launch(fn, gx, gy, gz, params, device):
    try:
        from tgrad.kernels.runtime.gpu import FUNCTIONS
        entry = FUNCTIONS.get(fn)
        if entry is None:
            ERRORS.append(f"launch of CUfunction {fn:#x}, which tgrad's launch path never loaded")
            return -CUDA_ERROR_INVALID_HANDLE
        kernel, compiled = entry
        args, cexpr = decode(kernel, compiled, params)
        job = next(_ids)
        JOBS[job] = (kernel, (gx, gy, gz), args, cexpr, device)
        return job
    except BaseException:
        ERRORS.append(traceback.format_exc())
        return -CUDA_ERROR_LAUNCH_FAILED


def _check_pointers(kernel, args, device):
    from tgrad.kernels.runtime import Ptr
    lib = _state["lib"]
    d, base, size = ctypes.c_int(), ctypes.c_ulonglong(), ctypes.c_ulonglong()
    for name, a in zip([p.name for p in kernel.params if not p.is_constexpr], args):
        if type(a) is Ptr and a.ptr:
            if lib.fakecuda_pointer_info(ctypes.c_ulonglong(a.ptr), ctypes.byref(d), ctypes.byref(base),
                                         ctypes.byref(size)):
                return f"{kernel.__name__}: argument {name}={a.ptr:#x} is not live device memory"
            if d.value != device:
                return (f"{kernel.__name__}: argument {name}={a.ptr:#x} is memory of cuda:{d.value}, "
                        f"launched on cuda:{device}")
    return None


def _on_run(job, mode=RUN_ONCE):
    try:
        if mode == DROP:
            JOBS.pop(job, None)
            return 0
        kernel, grid, args, cexpr, device = JOBS[job] if mode == RUN_KEEP else JOBS.pop(job)
        bad = _check_pointers(kernel, args, device)
        if bad:
            ERRORS.append(bad)
            return CUDA_ERROR_ILLEGAL_ADDRESS
        from tgrad.kernels.runtime import launcher
        launcher.run_cpu(kernel, grid, args, cexpr)
        return 0
    except BaseException:
        ERRORS.append(traceback.format_exc())
        return CUDA_ERROR_LAUNCH_FAILED


def install():
    """Register the callbacks with the fake driver tgrad loaded; returns the library (None: not the fake)."""
    if _state["lib"] is not None:
        return _state["lib"]
    from tgrad.memory import cuda_driver
    lib = cuda_driver._driver()[0]
    if lib is None or not hasattr(lib, "fakecuda_set_callbacks"):
        return None
    lib.fakecuda_pointer_info.argtypes = [ctypes.c_ulonglong, ctypes.POINTER(ctypes.c_int),
                                          ctypes.POINTER(ctypes.c_ulonglong), ctypes.POINTER(ctypes.c_ulonglong)]
    lib.fakecuda_launch_count.restype = ctypes.c_ulonglong
    lib.fakecuda_call_count.restype = ctypes.c_ulonglong
    lib.fakecuda_graph_nodes.restype = ctypes.c_ulonglong
    lib.fakecuda_graph_nodes.argtypes = [ctypes.c_void_p]
    cbs = (_LAUNCH_CB(_on_launch), _RUN_CB(_on_run))
    lib.fakecuda_set_callbacks(*cbs)
    _state["lib"], _state["callbacks"] = lib, cbs
    return lib


def run_python(code, devices=1, cc=90, execute=True, timeout=600, extra_path=(), env=None):
    """Run ``code`` in a fresh Python on the fake driver (fakecuda installed first); returns stdout.

    Raises AssertionError with the output when the process fails."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))       # tests/
    root = os.path.dirname(here)
    env = environ(devices, cc, execute, base=dict(os.environ, **(env or {})))
    env.pop("TGRAD_DEVICE", None)       # set to cpu for other children by the suite's --device cuda (conftest)
    env["PYTHONPATH"] = os.pathsep.join([root, here, *extra_path, env.get("PYTHONPATH", "")])
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    prelude = "import fakecuda, tgrad\nassert fakecuda.install() is not None, 'fake driver not loaded'\n"
    r = subprocess.run([sys.executable, "-c", prelude + code], env=env, capture_output=True, text=True,
                       timeout=timeout, cwd=root)
    if r.returncode:
        raise AssertionError(f"exit {r.returncode}\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}")
    return r.stdout
