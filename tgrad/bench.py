"""Kernel benchmarks: ``python -m tgrad.bench``.

Times element-wise (``a + b``), reduction (``x.sum()``), matmul, softmax,
cross-entropy and optimizer-step (SGD with momentum) kernels over sizes and
dtypes, on ``cpu`` and on ``cuda`` when a GPU is present, and optionally the
same ops in numpy (``--numpy``) and in PyTorch (``--torch``; run in a
subprocess with a python that can import torch, ``--torch-python``; tgrad
never imports torch itself).

``size`` is the element count of the main operand: element-wise, reduction
and optimizer ops work on ``size`` elements; matmul multiplies two
``n x n`` matrices with ``n = round(sqrt(size))``; softmax and cross-entropy
take ``(size // C, C)`` logits with ``C = min(size, 1024)`` classes.

Each row reports the median and the interquartile range (IQR) of ``--repeat``
timed calls after ``--warmup`` untimed ones (perf_counter on cpu, CUDA events
through the driver on cuda), effective GB/s = bytes moved / median time and
GFLOP/s = nominal flops / median time. Bytes are the minimum traffic:
each input read once, each output written once.

    python -m tgrad.bench --sizes 4096,65536 --dtypes float32,float16 --numpy --csv out.csv

``--steps a,b,c,d,e`` times whole training steps instead (benchmarks/steps.py, in a source checkout):
tgrad eager and ``tgrad.compile``d beside PyTorch CPU eager at 1 and 2 threads, each measurement in its
own process (benchmarks/compare_torch.py's workers), ``--rounds`` rounds alternating between them, the
median of the rounds' medians reported:

    python -m tgrad.bench --steps a,b,c,d,e --torch-python /path/to/python-with-torch

``--busy N`` (with ``--steps``): each measurement is made twice in a row, quiet and then with N busy processes
(a loop each) on the machine, and each step's loaded time is reported beside its quiet time, per impl.  ``--host-time`` prints eager host time
per op (``x + y``, ``x * 2.0``, ``w.sum(1)`` on 1,000 elements) on ``cuda`` over the test suite's fake
driver with kernel execution off, on ``cpu``, and in PyTorch cpu with ``--torch-python``
(benchmarks/cuda_host_time.py, in a source checkout).

``--first-steps b,g`` reports warm-up (benchmarks/warmup.py, in a source checkout): a fresh process's steps 1-3
(traced, from the on-disk tape cache, and PyTorch's with ``--torch-python``) against its steady step, each new
batch size's first steps and the RSS it keeps, ``tgrad.compile``'s record call against an eager step, and where
a new shape's first step goes.
"""
import argparse
import csv
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

OPS = ("elementwise", "reduction", "matmul", "softmax", "cross_entropy", "optimizer")
COLUMNS = ("op", "impl", "device", "dtype", "size", "shape", "median_ms", "iqr_ms", "min_ms", "repeat",
           "bytes", "flops", "gbps", "gflops")
_ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}


def geometry(op, size, dtype):
    """(shape, bytes moved, flops) of ``op`` at ``size`` elements of ``dtype``."""
    e = _ITEMSIZE[dtype]
    if op == "elementwise":
        return (size,), 3 * size * e, size
    if op == "reduction":
        return (size,), size * e + e, size
    if op == "matmul":
        n = max(1, round(math.sqrt(size)))
        return (n, n), 3 * n * n * e, 2 * n ** 3
    if op in ("softmax", "cross_entropy"):
        c = min(size, 1024)
        r = max(1, size // c)
        if op == "softmax":
            return (r, c), 2 * r * c * e, 5 * r * c
        return (r, c), r * c * e + 8 * r + e, 4 * r * c
    if op == "optimizer":
        return (size,), 5 * size * e, 4 * size   # read p, g, buf; write p, buf
    raise ValueError(f"unknown op {op!r}; choose from {', '.join(OPS)}")


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------- timers
def _stats(times_s):
    q = np.percentile(times_s, [25, 50, 75])
    return {"median_ms": q[1] * 1e3, "iqr_ms": (q[2] - q[0]) * 1e3, "min_ms": min(times_s) * 1e3}


def time_cpu(fn, repeat, warmup):
    """Seconds per call of ``fn`` (perf_counter), ``repeat`` timed calls after ``warmup``."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def time_cuda(fn, repeat, warmup, index=0):
    """Seconds per call of ``fn`` measured with CUDA events (driver API) on the legacy default stream."""
    import ctypes
    from ctypes import byref, c_float, c_uint, c_void_p

    from .memory import cuda_driver as cd
    lib = cd._lib_for(index)
    for name, argtypes in (("cuEventCreate", [ctypes.POINTER(c_void_p), c_uint]),
                           ("cuEventRecord", [c_void_p, c_void_p]),
                           ("cuEventSynchronize", [c_void_p]),
                           ("cuEventElapsedTime", [ctypes.POINTER(c_float), c_void_p, c_void_p]),
                           ("cuEventDestroy_v2", [c_void_p])):
        getattr(lib, name).argtypes, getattr(lib, name).restype = argtypes, ctypes.c_int
    cd.set_current_device(index)
    start, end = c_void_p(), c_void_p()
    cd._call(lib, "cuEventCreate", byref(start), 0)
    cd._call(lib, "cuEventCreate", byref(end), 0)
    try:
        for _ in range(warmup):
            fn()
        out, ms = [], c_float()
        for _ in range(repeat):
            cd._call(lib, "cuEventRecord", start, None)
            fn()
            cd._call(lib, "cuEventRecord", end, None)
            cd._call(lib, "cuEventSynchronize", end)
            cd._call(lib, "cuEventElapsedTime", byref(ms), start, end)
            out.append(ms.value / 1e3)
        return out
    finally:
        cd._call(lib, "cuEventDestroy_v2", start)
        cd._call(lib, "cuEventDestroy_v2", end)


# ---------------------------------------------------------------- the ops
def _tgrad_fn(op, shape, dtype, device):
    """A no-argument callable running ``op`` once in tgrad."""
    import tgrad
    import tgrad.nn.functional as F
    dt = getattr(tgrad, dtype)

    def t(seed=0):
        return tgrad.tensor(_data(shape, dtype, seed), device=device).to(dt)
    if op == "elementwise":
        a, b = t(0), t(1)
        return lambda: a + b
    if op == "reduction":
        a = t()
        return a.sum
    if op == "matmul":
        a, b = t(0), t(1)
        return lambda: a @ b
    if op == "softmax":
        a = t()
        return lambda: F.softmax(a, -1)
    if op == "cross_entropy":
        a = t()
        y = tgrad.tensor(np.random.default_rng(2).integers(0, shape[1], shape[0]), device=device)
        return lambda: F.cross_entropy(a, y)
    if op == "optimizer":
        p = tgrad.nn.Parameter(t(0))
        p.grad = t(1)
        opt = tgrad.optim.SGD([p], lr=1e-3, momentum=0.9)
        return opt.step
    raise ValueError(op)


def _numpy_fn(op, shape, dtype):
    if dtype == "bfloat16":
        import ml_dtypes
        npdt = ml_dtypes.bfloat16
    else:
        npdt = np.dtype(dtype)
    a, b = _data(shape, dtype, 0).astype(npdt), _data(shape, dtype, 1).astype(npdt)
    if op == "elementwise":
        return lambda: a + b
    if op == "reduction":
        return a.sum
    if op == "matmul":
        return lambda: a @ b
    if op == "softmax":
        def softmax():
            e = np.exp(a - a.max(-1, keepdims=True))
            return e / e.sum(-1, keepdims=True)
        return softmax
    if op == "cross_entropy":
        y = np.random.default_rng(2).integers(0, shape[1], shape[0])

        def ce():
            m = a.max(-1, keepdims=True)
            lse = np.log(np.exp(a - m).sum(-1)) + m[:, 0]
            return (lse - a[np.arange(shape[0]), y]).mean()
        return ce
    if op == "optimizer":
        buf = np.zeros_like(a)

        def sgd():
            buf[...] = buf * a.dtype.type(0.9) + b
            a[...] = a - a.dtype.type(1e-3) * buf
        return sgd
    raise ValueError(op)


# PyTorch side: run by a python that has torch; reads the job list (JSON) on stdin, prints JSON.
_TORCH_WORKER = r'''
import json, math, sys, time
import numpy as np
import torch
import torch.nn.functional as F
jobs = json.load(sys.stdin)
out = []
for j in jobs:
    shape, dt = tuple(j["shape"]), getattr(torch, j["dtype"])
    def t(seed):
        return torch.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32)).to(dt)
    a, b = t(0), t(1)
    op = j["op"]
    if op == "elementwise": fn = lambda: a + b
    elif op == "reduction": fn = a.sum
    elif op == "matmul": fn = lambda: a @ b
    elif op == "softmax": fn = lambda: a.softmax(-1)
    elif op == "cross_entropy":
        y = torch.tensor(np.random.default_rng(2).integers(0, shape[1], shape[0]))
        fn = lambda: F.cross_entropy(a, y)
    else:
        p = torch.nn.Parameter(a); p.grad = b
        fn = torch.optim.SGD([p], lr=1e-3, momentum=0.9).step
    try:
        for _ in range(j["warmup"]): fn()
        ts = []
        for _ in range(j["repeat"]):
            t0 = time.perf_counter(); fn(); ts.append(time.perf_counter() - t0)
        out.append({"times": ts, "version": torch.__version__, "threads": torch.get_num_threads()})
    except Exception as e:
        out.append({"error": f"{type(e).__name__}: {e}"})
print(json.dumps(out))
'''


def find_torch_python(explicit=None):
    """A python executable that can import torch (checked in a subprocess), or None."""
    cands = [explicit] if explicit else [os.environ.get("TGRAD_TORCH_PYTHON"), sys.executable,
                                         shutil.which("python3"), shutil.which("python")]
    for py in cands:
        try:
            if py and subprocess.run([py, "-c", "import torch"], capture_output=True).returncode == 0:
                return py
        except OSError:  # not an executable
            pass
    return None


def _torch_rows(jobs, python):
    res = subprocess.run([python, "-c", _TORCH_WORKER], input=json.dumps(jobs), capture_output=True,
                         text=True, check=True)
    return json.loads(res.stdout)


# ---------------------------------------------------------------- driver
def _row(op, impl, device, dtype, size, shape, times, nbytes, flops):
    row = {"op": op, "impl": impl, "device": device, "dtype": dtype, "size": size,
           "shape": "x".join(map(str, shape)), "repeat": len(times), "bytes": nbytes, "flops": flops}
    row.update(_stats(times))
    sec = row["median_ms"] / 1e3
    row["gbps"] = nbytes / sec / 1e9 if sec > 0 else float("inf")
    row["gflops"] = flops / sec / 1e9 if sec > 0 else float("inf")
    return row


def default_devices():
    from . import cuda
    return ["cpu"] + (["cuda"] if cuda.is_available() else [])


def run(ops=OPS, sizes=(4096, 65536), dtypes=("float32",), devices=None, repeat=20, warmup=3,
        numpy=False, torch=False, torch_python=None, log=print):
    """Benchmark rows (dicts with ``COLUMNS``) for every op x size x dtype x device (x impl)."""
    rows, jobs = [], []
    devices = default_devices() if devices is None else list(devices)
    for op in ops:
        for dtype in dtypes:
            for size in sizes:
                shape, nbytes, flops = geometry(op, size, dtype)
                for dev in devices:
                    try:
                        fn = _tgrad_fn(op, shape, dtype, dev)
                        timer = time_cpu if dev == "cpu" else time_cuda
                        times = timer(fn, repeat, warmup)
                    except Exception as e:  # an op/dtype a device does not support
                        log(f"skipped tgrad {op} {dtype} {size} on {dev}: {type(e).__name__}: {e}")
                        continue
                    rows.append(_row(op, "tgrad", dev, dtype, size, shape, times, nbytes, flops))
                if numpy:
                    times = time_cpu(_numpy_fn(op, shape, dtype), repeat, warmup)
                    rows.append(_row(op, "numpy", "cpu", dtype, size, shape, times, nbytes, flops))
                if torch:
                    jobs.append({"op": op, "dtype": dtype, "size": size, "shape": list(shape), "bytes": nbytes,
                                 "flops": flops, "repeat": repeat, "warmup": warmup})
    if jobs:
        py = find_torch_python(torch_python)
        if py is None:
            log("PyTorch reference unavailable: no python that can import torch "
                "(pass --torch-python PATH or set TGRAD_TORCH_PYTHON)")
        else:
            for j, r in zip(jobs, _torch_rows(jobs, py)):
                if "error" in r:
                    log(f"skipped torch {j['op']} {j['dtype']} {j['size']}: {r['error']}")
                    continue
                rows.append(_row(j["op"], "torch", "cpu", j["dtype"], j["size"], j["shape"], r["times"],
                                 j["bytes"], j["flops"]))
    return rows


def format_table(rows):
    head = (f"{'op':<13} {'impl':<6} {'device':<6} {'dtype':<8} {'size':>9} {'shape':>11} "
            f"{'median ms':>10} {'IQR ms':>9} {'GB/s':>8} {'GFLOP/s':>8}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['op']:<13} {r['impl']:<6} {r['device']:<6} {r['dtype']:<8} {r['size']:>9} "
                     f"{r['shape']:>11} {r['median_ms']:>10.4f} {r['iqr_ms']:>9.4f} {r['gbps']:>8.3f} "
                     f"{r['gflops']:>8.3f}")
    return "\n".join(lines)


def write_csv(rows, path):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)


def write_json(rows, path):
    with open(path, "w") as f:
        json.dump(rows, f, indent=1)


def plot(rows, path):
    """GB/s against size, one panel per op, one line per (impl, device, dtype); needs matplotlib."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ops = list(dict.fromkeys(r["op"] for r in rows))
    ncols = min(3, len(ops))
    nrows = -(-len(ops) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(5 * ncols, 3.8 * nrows), squeeze=False)
    for ax in axes.flat[len(ops):]:
        ax.set_visible(False)
    for ax, op in zip(axes.flat, ops):
        series = {}
        for r in rows:
            if r["op"] == op:
                series.setdefault((r["impl"], r["device"], r["dtype"]), []).append((r["size"], r["gbps"]))
        for (impl, dev, dt), pts in series.items():
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{impl} {dev} {dt}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(op)
        ax.set_xlabel("size (elements)")
        ax.set_ylabel("GB/s")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# ---------------------------------------------------------------- whole training steps
def _benchmarks_dir():
    d = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks")
    if not os.path.exists(os.path.join(d, "compare_torch.py")):
        raise RuntimeError("--steps needs benchmarks/steps.py and benchmarks/compare_torch.py (a source checkout)")
    return d


class busy_processes:
    """Context manager: ``n`` busy processes (a Python loop each) run while the block does."""

    def __init__(self, n):
        self.n, self.procs = n, []

    def __enter__(self):
        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(self.n)]
        time.sleep(0.2)         # (their interpreters started)
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
            p.wait()
        self.procs = []


def run_steps(names, torch_python=None, rounds=3, threads=None, torch_compile=False, jax_python=None, busy=0):
    """{(step, impl): median ms per step} of impls tgrad, compiled, torch1, torch2, with ``torch_compile`` torchc
    (``torch.compile`` at PyTorch eager's better thread count of the round) and jax (``jax.jit`` of (a)-(e)) where a
    python has them, plus (step, "record") (the compiled function's recording call, ms) and (step, "eager2")
    (eager's second call, ms), and (None, "load"): the 1-minute load averages seen at the measurements.
    ``busy`` N > 0: (quiet, loaded), the second the same dict for each measurement made again right after the
    quiet one with N busy processes on the machine (tgrad, compiled, torch1, torch2)."""
    sys.path.insert(0, _benchmarks_dir())
    import compare_torch as CT
    tpy = CT.find_torch_python(torch_python)
    jpy = CT.find_jax_python(jax_python) if jax_python is not False else None
    # threads None: tgrad's own policy (small GEMMs on one thread, large ones on the BLAS pool: every core),
    # as PyTorch at 2 threads uses both cores for a large GEMM
    env = {} if threads is None else {v: str(threads) for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                                                 "MKL_NUM_THREADS")}

    def torch_env(n):
        return {"COMPARE_TORCH_THREADS": str(n), "OPENBLAS_NUM_THREADS": str(n), "OMP_NUM_THREADS": str(n)}
    impls = [("tgrad", sys.executable, {}), ("compiled", sys.executable, {})]
    if tpy:
        impls += [(f"torch{n}", tpy, torch_env(n)) for n in (1, 2)]
    runs, loaded = {}, {}

    def one(name, impl, py, extra, into=runs):
        worker = impl[:5] if impl in ("torch1", "torch2") else impl
        into.setdefault((None, "load"), []).append(os.getloadavg()[0])
        r = CT.run_worker(py, worker, name, CT.STEPS[name], env=dict(env, **extra), profile=False)
        into.setdefault((name, impl), []).append(CT._med(r["times"]))
        if impl in ("tgrad", "compiled"):
            into.setdefault((name, "record" if impl == "compiled" else "eager2"), []).append(r["second_step_ms"])
    for _ in range(rounds):
        for name in names:
            for impl, py, extra in impls:
                one(name, impl, py, extra)
                if busy > 0:
                    with busy_processes(busy):
                        one(name, impl, py, extra, loaded)
            if tpy and torch_compile:
                one(name, "torchc", tpy, torch_env(1 if runs[name, "torch1"][0] <= runs[name, "torch2"][0] else 2))
            if jpy and name in "abcde":
                one(name, "jax", jpy, {})

    def summary(d):
        return {k: (min(v), max(v)) if k[0] is None else statistics.median(v) for k, v in d.items()}
    return (summary(runs), summary(loaded)) if busy > 0 else summary(runs)


def format_steps(res, names):
    """The steps table (ms per step; (d), (e): per epoch), ratios to PyTorch at its better thread count."""
    sys.path.insert(0, _benchmarks_dir())
    from steps import DESCRIPTION
    torch = (res.get((names[0], "torch1")) is not None)
    peers = [(k, label) for k, label in (("torchc", "torch.compile"), ("jax", "jax.jit"))
             if any((n, k) in res for n in names)]
    head = f"{'step':<46}" + (f" {'torch 1t':>9} {'torch 2t':>9}" if torch else "") + \
        f" {'eager':>9}" + (f" {'x':>6}" if torch else "") + f" {'compiled':>9}" + \
        (f" {'x':>6}" if torch else "") + "".join(f" {label:>13} {'x':>6}" for _, label in peers) + \
        f" {'record':>9} {'/eager':>7} {'/eager 2':>8}"
    lines = [head, "-" * len(head)]
    for n in names:
        e, c = res[n, "tgrad"], res[n, "compiled"]
        line = f"({n}) {DESCRIPTION[n]:<42}"
        if torch:
            best = min(res[n, "torch1"], res[n, "torch2"])
            line += f" {res[n, 'torch1']:>9.3f} {res[n, 'torch2']:>9.3f}"
        line += f" {e:>9.3f}" + (f" {e / best:>5.2f}x" if torch else "") + f" {c:>9.3f}"
        line += (f" {c / best:>5.2f}x" if torch else "")
        for k, _ in peers:
            v = res.get((n, k))
            line += f" {'-':>13} {'-':>6}" if v is None else \
                f" {v:>13.3f}" + (f" {v / best:>5.2f}x" if torch else f" {'':>6}")
        line += f" {res[n, 'record']:>9.1f} {res[n, 'record'] / e:>6.1f}x"
        line += f" {res[n, 'record'] / res[n, 'eager2']:>7.1f}x"
        lines.append(line)
    lines.append("ms per step (median of rounds' medians); x: over PyTorch eager at its better thread count; "
                 "record: the compiled function's recording call (call 2), ms, over a steady eager step and over "
                 "eager's call 2 (both trace their kernels)" + _load_note(res))
    return "\n".join(lines)


def _load_note(res):
    lo, hi = res.get((None, "load"), (None, None))
    return "" if lo is None else f"; 1-minute load average {lo:.1f}-{hi:.1f} on {os.cpu_count()} cores"


def plot_steps(res, names, path):
    """A bar chart of ``res`` (run_steps): each impl's ms per step over PyTorch eager's best, per step."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    impls = [(k, label) for k, label in (("tgrad", "tgrad eager"), ("compiled", "tgrad.compile"),
                                         ("torchc", "torch.compile"), ("jax", "jax.jit"))
             if any((n, k) in res for n in names)]
    fig, ax = plt.subplots(figsize=(1.6 * len(names) + 2, 3.5))
    w = 0.8 / len(impls)
    for i, (k, label) in enumerate(impls):
        xs = [j + i * w for j, n in enumerate(names) if (n, k) in res]
        ys = [res[n, k] / min(res[n, "torch1"], res[n, "torch2"]) for n in names if (n, k) in res]
        ax.bar(xs, ys, w, label=label)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks([j + 0.4 - w / 2 for j in range(len(names))], [f"({n})" for n in names])
    ax.set_ylabel("time / PyTorch eager (best of 1, 2 threads)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def format_busy(quiet, loaded, names, n):
    """Each step's time with ``n`` busy processes over its quiet time, same run, per impl."""
    impls = [i for i in ("tgrad", "compiled", "torch1", "torch2") if (names[0], i) in quiet]
    head = f"{'step':<6}" + "".join(f" {i + ' quiet':>15} {i + ' busy':>14} {'x':>6}" for i in impls)
    lines = [f"with {n} busy processes (ms per step; x: busy over quiet; each busy run right after its quiet one)",
             head, "-" * len(head)]
    for s in names:
        lines.append(f"({s})   " + "".join(f" {quiet[s, i]:>15.3f} {loaded[s, i]:>14.3f} {loaded[s, i] / quiet[s, i]:>5.2f}x"
                                         for i in impls))
    return "\n".join(lines + ["quiet" + _load_note(quiet)[1:], "busy" + _load_note(loaded)[1:]])


def run_host_time(torch_python=None, repeat=20000):
    """Print benchmarks/cuda_host_time.py's table (a subprocess: the fake driver loads before tgrad)."""
    sys.path.insert(0, _benchmarks_dir())
    import compare_torch as CT
    tpy = CT.find_torch_python(torch_python)
    cmd = [sys.executable, os.path.join(_benchmarks_dir(), "cuda_host_time.py"), "--repeat", str(repeat)]
    r = subprocess.run(cmd + (["--torch-python", tpy] if tpy else []), capture_output=True, text=True,
                       cwd=os.path.dirname(_benchmarks_dir()))
    if r.returncode:
        raise RuntimeError(f"cuda_host_time.py failed:\n{r.stderr[-3000:]}")
    return r.stdout


def _csv_list(s):
    return [x for x in s.split(",") if x]


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tgrad.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--ops", type=_csv_list, default=list(OPS), help=f"comma list from {','.join(OPS)}")
    p.add_argument("--sizes", type=lambda s: [int(x) for x in _csv_list(s)], default=[4096, 65536],
                   help="comma list of element counts (default 4096,65536)")
    p.add_argument("--dtypes", type=_csv_list, default=["float32"],
                   help="comma list from float32,float16,bfloat16,float64")
    p.add_argument("--devices", type=_csv_list, default=None, help="default: cpu, and cuda when present")
    p.add_argument("--repeat", type=int, default=20, help="timed calls per row")
    p.add_argument("--warmup", type=int, default=3, help="untimed calls first (the cpu executor traces)")
    p.add_argument("--numpy", action="store_true", help="also time the same ops in numpy")
    p.add_argument("--torch", action="store_true", help="also time them in PyTorch (subprocess)")
    p.add_argument("--torch-python", default=None, help="python executable that has torch")
    p.add_argument("--csv", help="write rows to this CSV file")
    p.add_argument("--json", help="write rows to this JSON file")
    p.add_argument("--plot", help="write a plot (PNG) here: GB/s, or with --steps each step over PyTorch; needs matplotlib")
    p.add_argument("--steps", type=_csv_list, default=None,
                   help="time whole training steps (comma list from a-h of benchmarks/steps.py) instead")
    p.add_argument("--torch-compile", action="store_true",
                   help="--steps: also time PyTorch's torch.compile (inductor; compiles for ~1 min per step)")
    p.add_argument("--jax-python", default=None,
                   help="--steps: python executable that has jax (default TGRAD_JAX_PYTHON); times jax.jit steps")
    p.add_argument("--rounds", type=int, default=3, help="--steps: alternating rounds (median reported)")
    p.add_argument("--threads", type=int, default=None,
                   help="--steps: numpy BLAS threads of tgrad's workers (default: tgrad's own, small GEMMs on one "
                        "thread and large ones on every core)")
    p.add_argument("--busy", type=int, default=0,
                   help="--steps: also run the steps with this many busy processes on the machine")
    p.add_argument("--host-time", action="store_true",
                   help="eager host time per op on cuda (fake driver, no kernel runs), cpu and PyTorch cpu")
    p.add_argument("--first-steps", type=_csv_list, default=None,
                   help="warm-up of steps (comma list from b,g): first steps, new batch sizes, RSS, compile's record")
    a = p.parse_args(argv)
    if a.first_steps is not None:
        sys.path.insert(0, _benchmarks_dir())
        import warmup
        return warmup.report(a.first_steps, [32, 48, 80, 96], torch_python=a.torch_python)
    if a.host_time:
        out = run_host_time(a.torch_python, a.repeat if a.repeat != 20 else 20000)
        print(out, end="")
        return out
    if a.steps is not None:
        bad = [n for n in a.steps if n not in "abcdefgh" or len(n) != 1]
        if bad:
            p.error(f"unknown step {bad[0]!r}; choose from a,b,c,d,e,f,g,h")
        res = run_steps(a.steps, a.torch_python, a.rounds, a.threads, a.torch_compile, a.jax_python, a.busy)
        res, loaded = res if a.busy > 0 else (res, None)
        print(format_steps(res, a.steps), flush=True)
        if a.plot:
            plot_steps(res, a.steps, a.plot)
        if loaded is not None:
            print(format_steps(loaded, a.steps).replace("ms per step", f"with {a.busy} busy processes: ms per step"))
            print(format_busy(res, loaded, a.steps, a.busy))
            return res, loaded
        return res
    for op in a.ops:
        if op not in OPS:
            p.error(f"unknown op {op!r}; choose from {', '.join(OPS)}")
    for dt in a.dtypes:
        if dt not in _ITEMSIZE:
            p.error(f"unknown dtype {dt!r}; choose from {', '.join(_ITEMSIZE)}")
    rows = run(a.ops, a.sizes, a.dtypes, a.devices, a.repeat, a.warmup, a.numpy, a.torch, a.torch_python)
    print(format_table(rows))
    if a.csv:
        write_csv(rows, a.csv)
    if a.json:
        write_json(rows, a.json)
    if a.plot:
        try:
            plot(rows, a.plot)
        except ImportError:
            print("--plot needs matplotlib, which is not installed")
    return rows


if __name__ == "__main__":
    main()
