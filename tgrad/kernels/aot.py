"""Ahead-of-time compile check: every kernel specialization tgrad launches, compiled for the GPU.

    python -m tgrad.kernels.aot --arch 80 90

No GPU is needed.  A representative workload runs on ``cpu`` with launches
recorded (not run) and block sizes forced to the GPU's (``runtime.launcher.FORCE_GPU_BLOCKS``):
every OpInfo of ``tgrad.testing.opinfo_db`` forward and backward (twice when
it is twice differentiable) for every dtype it declares, on contiguous and
non-contiguous inputs, plus casts between every pair of dtypes, fill and the
random kernels.  The recorded specializations (kernel, argument types,
constexprs) are deduplicated and each is compiled for each arch; one row is
printed per specialization and arch with the registers and spilled bytes
reported by ``ptxas -v`` and the shared memory from Triton's metadata.
Exit status 1 when any compile fails.

This is a tool, not part of the kernels layer: it imports the whole of tgrad.
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


@dataclasses.dataclass
class Spec:
    """One kernel specialization: what ``triton.compile(ASTSource(...))`` takes."""

    kernel: object
    signature: dict
    constexprs: dict
    attrs: dict

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
                tuple(sorted((k, _cval(v)) for k, v in self.constexprs.items())), tuple(sorted(self.attrs)))


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
        feats = {("arg", k, i, ty, (i,) in s.attrs) for i, ty in enumerate(s.signature.values())}
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
def record(workload=None, dry=True):
    """Run ``workload()`` (default: ``default_workload``) recording launches.

    ``dry``: launches are recorded but not run (the interpreter with GPU block
    sizes is slow), so computed tensors hold garbage; the default workload
    reruns for real any item that raises on garbage.  Returns the distinct
    Specs and what the workload returned (for the default one: [(label,
    exception)] of the items that raised when run for real).
    """
    T.RECORD, T.FORCE_GPU_BLOCKS, T.DRY_RUN = [], True, dry
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            result = (workload or default_workload)()
        rec = T.RECORD
    finally:
        T.RECORD, T.FORCE_GPU_BLOCKS, T.DRY_RUN = None, False, False
    specs = {}
    for kernel, sig, cexpr, attrs in rec:
        s = Spec(kernel, sig, cexpr, attrs)
        specs.setdefault(s.key(), s)
    return sorted(specs.values(), key=_order), result


def default_workload(device="cpu"):
    """Basics (casts, fill, random, every layout), then the op database; returns [(label, exception)]."""
    from ..testing.opinfo_db import OP_DB
    errors = []
    _basics(device, errors)
    for o in OP_DB:
        for dt in o.dtypes:
            _try(errors, f"{o.name} {dt.name}", _opinfo_run, o, dt, device, dt is o.dtypes[0])
    return errors


def _try(errors, label, fn, *args):
    try:
        fn(*args)
        return
    except Exception as e:  # noqa: BLE001  (reported, and the kernel-coverage test notices the gap)
        if not T.DRY_RUN:
            errors.append((label, e))
            return
    T.DRY_RUN = False           # garbage values can trip data-dependent checks: run this item for real
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001
        errors.append((label, e))
    finally:
        T.DRY_RUN = True


def _basics(device, errors):
    import tgrad
    from .. import dtypes as D
    for src in D.ALL:
        x = tgrad.ones(3, 5, dtype=src, device=device)
        for dst in D.ALL:
            _try(errors, f"cast {src.name}->{dst.name}", lambda: (x.to(dst), x.t().to(dst)))
        _try(errors, f"fill {src.name}", lambda: x.fill_(1))
    for dt in D.FLOATING:
        _try(errors, f"random {dt.name}", lambda: (tgrad.rand(7, dtype=dt, device=device),
                                                   tgrad.randn(7, dtype=dt, device=device)))
    for dt in D.ALL[1:6]:
        _try(errors, f"randint {dt.name}", lambda: tgrad.randint(0, 5, (7,), dtype=dt, device=device))
    for nd in range(2, 7):      # views none of whose dims merge: every addressing branch (X_ND = nd)
        v = tgrad.ones(*range(2, 2 + nd), device=device).permute(*reversed(range(nd)))
        _try(errors, f"layout {nd} dims", lambda: (v.contiguous(), v + v.contiguous()))


def _opinfo_run(o, dt, device, full):
    """Forward and backward of every sample; ``full``: also non-contiguous inputs and double backward.

    (Other dtypes add argument types and COMPUTE types; layouts and the
    double-backward math are the same as for the first dtype, float64 aside.)
    """
    import tgrad
    from ..testing.opinfo import to_tensor
    grad = o.grad and dt.is_floating_point
    gradgrad = o.gradgrad and (full or dt.name == "float64")
    for noncontig in (False, True) if o.noncontig and full else (False,):
        for sample in o.sample_inputs():
            args = [to_tensor(a, dt, device, requires_grad=grad and (o.diff_args is None or i in o.diff_args),
                              noncontig=noncontig) if isinstance(a, np.ndarray) else a
                    for i, a in enumerate(sample.args)]
            out = o.op(*args, **sample.kwargs)
            outs = [t for t in (out if isinstance(out, tuple) else (out,))
                    if isinstance(t, tgrad.Tensor) and t.requires_grad]
            leaves = [a for a in args if isinstance(a, tgrad.Tensor) and a.requires_grad]
            if not (outs and leaves):
                continue
            gs = tgrad.autograd.grad(outs, leaves, grad_outputs=[tgrad.ones_like(t) for t in outs],
                                     create_graph=gradgrad, allow_unused=True)
            gg = [g for g in gs if g is not None and g.requires_grad]
            if gradgrad and gg:
                tgrad.autograd.grad([g.sum() for g in gg], leaves, allow_unused=True)


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


def compile_spec(spec, arch):
    """Compile ``spec`` for sm_<arch>; registers and spills from ptxas -v, shared memory from the metadata."""
    t0 = time.perf_counter()
    log = io.StringIO()
    prev = knobs.nvidia.dump_ptxas_log
    try:
        knobs.nvidia.dump_ptxas_log = True          # Triton prints its own ptxas -v log (on a cache miss)
        with contextlib.redirect_stdout(log):
            k = T.compile_aot(spec.kernel, spec.signature, spec.constexprs, arch, spec.attrs)
        regs, spills = _usage(k, arch, log.getvalue())
    except Exception as e:  # noqa: BLE001  (a failed compile is a result row)
        return Result(spec, arch, time.perf_counter() - t0, error=_error_text(e))
    finally:
        knobs.nvidia.dump_ptxas_log = prev
    return Result(spec, arch, time.perf_counter() - t0, regs, spills, k.metadata.shared)


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


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tgrad.kernels.aot", description=__doc__.split("\n")[0])
    p.add_argument("--arch", type=int, nargs="+", default=list(ARCHS), help="compute capabilities (80 90)")
    p.add_argument("--all", action="store_true", help="compile every recorded specialization, not a covering set")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    specs, errors = record()
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
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
