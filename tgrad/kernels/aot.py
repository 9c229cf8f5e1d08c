"""Ahead-of-time compile check: every kernel specialization tgrad launches, compiled for the GPU.

    python -m tgrad.testing.aot_workload --arch 80 90
    python -m tgrad.testing.aot_workload --arch 90 --run examples/train_mlp.py --fast   # a script's kernels

No GPU is needed.  A workload (a function, given by the caller: the default one,
running the OpInfo database, is ``tgrad.testing.aot_workload``) runs on ``cpu``
with launches recorded (not run) and block sizes forced to the GPU's
(``runtime.launcher.FORCE_GPU_BLOCKS``).  The recorded specializations (kernel, argument
types, constexprs) are deduplicated and each is compiled for each arch; one row
is printed per specialization and arch with the registers and spilled bytes
reported by ``ptxas -v`` and the shared memory from Triton's metadata.  A
specialization whose shared memory exceeds the arch's per-block limit fails (a
launch whose compile options are candidates takes the first that fits, as the
cuda launch path does).  Exit status 1 when any compile fails.  This module
imports only the kernels layer.
"""
import argparse
import contextlib
import dataclasses
import io
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
from triton import knobs

from .runtime import launcher as T

ARCHS = (80, 90)
# Opt-in shared memory per block (bytes) by compute capability, as the driver reports it
# (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN): what a launch may use.
SHARED_LIMIT = {70: 98304, 75: 65536, 80: 166912, 86: 101376, 87: 166912, 89: 101376, 90: 232448,
                100: 232448, 120: 101376}


@dataclasses.dataclass
class Spec:
    """One kernel specialization: what ``triton.compile(ASTSource(...))`` takes."""

    kernel: object
    signature: dict
    constexprs: dict
    attrs: dict
    options: tuple = None       # the Launch's compile-option candidates (None: Triton's defaults)

    @property
    def name(self):
        return self.kernel.__name__

    @property
    def module(self):
        return self.kernel.fn.__module__

    def describe(self):
        """(constexprs, pointer dtypes) as short strings: "FN=add_fn COMPUTE=fp32 BLOCK=1024", "fp32,fp32,fp32"."""
        cex = " ".join(f"{k}={_cval(v)}" for k, v in self.constexprs.items())
        ptrs = ",".join(t[1:] for t in self.signature.values() if t.startswith("*"))
        return cex, ptrs

    def key(self):
        return (id(self.kernel), tuple(self.signature.items()),
                tuple(sorted((k, _cval(v)) for k, v in self.constexprs.items())),
                tuple(sorted((k, str(v)) for k, v in self.attrs.items())),
                str(self.options))


LAYOUT = re.compile(r"(^|_)ND$|^NDIM$")  # addressing-branch selectors: X_ND, O_ND, ...
SIZE = re.compile(r"BLOCK|ROWS")           # tile sizes: BLOCK, BLOCK_K, ROWS, ...


def covering(specs):
    """A subset of ``specs`` that still compiles every combination likely to fail differently.

    A kernel's constexprs are layout selectors (``X_ND``: which addressing
    branch), tile sizes (``BLOCK``, ``ROWS``) or variants (everything else:
    ``FN``, ``OP``, ``COMPUTE``, flags).  Kept, per kernel: every argument type
    seen at every parameter; every layout value and every tile size; every
    PAIR of variant values seen together (``FN=pow_int_fn`` with
    ``COMPUTE=int64``); and every variant value at the heaviest layout and
    largest tiles seen with it (the register worst case, for the spill check).
    """
    def parts(s):
        lay, size, var = [], [], []
        for k, v in sorted(s.constexprs.items()):
            if LAYOUT.search(k):
                lay.append((k, int(v)))
            elif SIZE.search(k) and isinstance(v, int):
                size.append((k, v))
            else:
                var.append((k, _cval(v)))
        return lay, size, var

    def weight(s):
        lay, size, _ = parts(s)
        return sum(v for _, v in lay), sum(v for _, v in size)

    heaviest = {}
    for s in specs:
        for kv in parts(s)[2]:
            key = (id(s.kernel), kv)
            heaviest[key] = max(heaviest.get(key, (0, 0)), weight(s))
    covered, chosen = set(), []
    for s in sorted(specs, key=lambda s: tuple(-w for w in weight(s))):
        k = id(s.kernel)
        lay, size, var = parts(s)
        feats = {("arg", k, i, ty, bool(s.attrs.get((i,)))) for i, ty in enumerate(s.signature.values())}
        feats |= {("value", k, kv) for kv in lay + size}
        feats |= {("pair", k, a, b) for a in var for b in var if a < b}
        feats |= {("heavy", k, kv) for kv in var if heaviest[k, kv] == weight(s)}
        if not feats <= covered:
            covered |= feats
            chosen.append(s)
    return sorted(chosen, key=_order)


def _order(s):
    return (s.module, s.name) + s.describe()


def _is_jit(v):
    return hasattr(v, "fn") and hasattr(v, "__name__")   # a @triton.jit function passed as a constexpr


def _cval(v):
    return v.__name__ if _is_jit(v) else str(v)


# ------------------------------------------------------------------ workload
def record(workload, dry=True):
    """Run ``workload()`` recording launches.

    ``dry``: launches are recorded but not run (the interpreter with GPU block
    sizes is slow), so computed tensors hold garbage; the default workload
    reruns for real any item that raises on garbage (``tgrad.testing.aot_workload``).  Returns the distinct
    Specs and what the workload returned (for the default one: [(label,
    exception)] of the items that raised when run for real).
    """
    T.RECORD, T.FORCE_GPU_BLOCKS, T.DRY_RUN = T.SpecRecord(), True, dry
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            result = workload()
        rec = T.RECORD
    finally:
        T.RECORD, T.FORCE_GPU_BLOCKS, T.DRY_RUN = None, False, False
    specs = {}
    for (kernel, sig, cexpr, attrs), options in zip(rec, rec.options):
        s = Spec(kernel, sig, cexpr, attrs, options)
        specs.setdefault(s.key(), s)
    return sorted(specs.values(), key=_order), result


# ------------------------------------------------------------------ compile
@dataclasses.dataclass
class Result:
    spec: Spec
    arch: int
    seconds: float
    registers: int = None
    spill_bytes: int = None
    shared: int = None
    error: str = None
    options: dict = None        # the compile options used (the first candidate that fits)


class SharedMemoryError(RuntimeError):
    """A specialization needs more shared memory per block than its arch has."""


def compile_spec(spec, arch):
    """Compile ``spec`` for sm_<arch>; registers and spills from ptxas -v, shared memory from the metadata.

    The spec's option candidates are compiled in order up to the first whose shared memory fits the arch's
    limit (``SHARED_LIMIT``; what the cuda launch path does, so every kernel it compiles is in the cache);
    none fitting is an error naming the kernel, arch, bytes and limit."""
    t0 = time.perf_counter()
    log = io.StringIO()
    prev = knobs.nvidia.dump_ptxas_log
    limit = SHARED_LIMIT.get(arch)
    try:
        knobs.nvidia.dump_ptxas_log = True          # Triton prints its own ptxas -v log (on a cache miss)
        if limit is None:
            raise SharedMemoryError(f"no shared-memory limit known for sm_{arch} (tgrad.kernels.aot.SHARED_LIMIT)")
        needs = []
        for opts in spec.options or (None,):
            log = io.StringIO()
            with contextlib.redirect_stdout(log):
                k = T.compile_aot(spec.kernel, spec.signature, spec.constexprs, arch, spec.attrs, opts)
            needs.append(f"{k.metadata.shared:,} B" + (f" with {opts}" if opts else ""))
            if k.metadata.shared <= limit:
                break
        else:
            raise SharedMemoryError(f"{spec.name} needs {' / '.join(needs)} of shared memory on sm_{arch}, over "
                                    f"its limit of {limit:,} B per block")
        regs, spills = _usage(k, arch, log.getvalue())
    except Exception as e:  # noqa: BLE001  (a failed compile is a result row)
        return Result(spec, arch, time.perf_counter() - t0, error=_error_text(e))
    finally:
        knobs.nvidia.dump_ptxas_log = prev
    return Result(spec, arch, time.perf_counter() - t0, regs, spills, k.metadata.shared, options=opts)


def _usage(k, arch, log):
    """(registers, spill-store bytes): from the compile's ptxas log, else kept beside Triton's cache, else ptxas."""
    path = os.path.join(knobs.cache.dir, "tgrad-ptxas", k.hash + ".txt")
    if "registers" not in log and os.path.exists(path):
        with open(path) as f:
            log = f.read()
    if "registers" not in log:
        log = ptxas_log(k.asm["ptx"], arch)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(log)
    return _parse_usage(log)


def _parse_usage(log):
    regs = re.search(r"Used (\d+) registers", log)
    spills = re.search(r"(\d+) bytes spill stores", log)
    return int(regs.group(1)), int(spills.group(1)) if spills else 0


def ptxas_usage(ptx, arch):
    """(registers, spill-store bytes) of the PTX's kernel, from Triton's bundled ptxas with -v."""
    return _parse_usage(ptxas_log(ptx, arch))


def _error_text(e):
    """One line: where in which @triton.jit function it failed (innermost), and the root error."""
    chain = [e]
    while chain[-1].__cause__ is not None or chain[-1].__context__ is not None:
        chain.append(chain[-1].__cause__ or chain[-1].__context__)
    root = chain[-1]
    where = ""
    for c in reversed(chain):
        m = re.match(r"at (\d+:\d+):\s*def (\w+)", str(c))
        if m:
            where = f"in {m.group(2)} at {m.group(1)}: "
            break
    return where + " ".join(f"{type(root).__name__}: {root}".split())[:400]


def ptxas_log(ptx, arch):
    """The ``ptxas -v`` report for ``ptx`` from Triton's bundled ptxas (registers, spills)."""
    from triton.backends.nvidia.compiler import get_ptxas
    target = re.search(r"^\.target\s+(\w+)", ptx, re.M).group(1)
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        r = subprocess.run([get_ptxas(arch).path, "-v", "--regAllocOptLevel=2", f"--gpu-name={target}",
                            src, "-o", os.path.join(d, "k.o")], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"ptxas failed: {r.stderr.strip()}")
    return r.stderr


def compile_all(specs, archs=ARCHS, out=None):
    """Compile every spec for every arch; prints a row per result to ``out`` when given."""
    results = []
    if out is not None:
        print(f"{'kernel':<22} {'arch':<6} {'regs':>4} {'spill':>5} {'smem':>6} {'sec':>5}  dtypes | constexprs",
              file=out)
    for s in specs:
        cex, ptrs = s.describe()
        for arch in archs:
            r = compile_spec(s, arch)
            results.append(r)
            if out is None:
                continue
            if r.error:
                print(f"{s.name:<22} sm_{arch:<3} FAILED ({r.seconds:.2f}s)  {ptrs} | {cex}\n    {r.error}", file=out)
            else:
                print(f"{s.name:<22} sm_{arch:<3} {r.registers:>4} {r.spill_bytes:>5} {r.shared:>6} "
                      f"{r.seconds:>5.2f}  {ptrs} | {cex}", file=out)
            out.flush()
    return results


def main(workload, argv=None, prog="python -m tgrad.testing.aot_workload", run_script=None):
    """The command line: record ``workload`` (or, with ``--run``, the script ``run_script(argv)`` runs),
    compile a covering set (every recorded specialization for a script), print a row per result."""
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    p.add_argument("--arch", type=int, nargs="+", default=list(ARCHS), help="compute capabilities (80 90)")
    p.add_argument("--all", action="store_true", help="compile every recorded specialization, not a covering set")
    p.add_argument("--run", nargs=argparse.REMAINDER, metavar="SCRIPT ARGS",
                   help="record the launches of a script (run on cpu with the GPU's block sizes) instead of the "
                        "op database, and compile all of them: Triton's cache then holds every kernel the "
                        "script launches on a GPU of these archs")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    if a.run:
        specs, errors = record(lambda: run_script(a.run), dry=False), []
        specs, a.all = specs[0], True
    else:
        specs, errors = record(workload)
    for label, e in errors:
        print(f"workload: {label} raised {type(e).__name__}: {e}", file=sys.stderr)
    n = len(specs)
    if not a.all:
        specs = covering(specs)
    print(f"{n} kernel specializations of {len({s.name for s in specs})} kernels recorded in "
          f"{time.perf_counter() - t0:.1f}s; compiling {len(specs)} for sm_{', sm_'.join(map(str, a.arch))}")
    results = compile_all(specs, a.arch, out=sys.stdout)
    failed = [r for r in results if r.error]
    print(f"{len(results) - len(failed)}/{len(results)} compiled in {time.perf_counter() - t0:.1f}s; "
          f"{len(failed)} failed; {len(errors)} workload errors")
    return 1 if failed or errors else 0

