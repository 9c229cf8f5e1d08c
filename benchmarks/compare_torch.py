"""tgrad (eager and ``tgrad.compile``d) vs PyTorch CPU eager on the training steps (a)-(f) of
benchmarks/steps.py, in one run.

    python benchmarks/compare_torch.py [--torch-python PATH] [--quick]

Every measurement runs in its own worker process (this script with
``--worker``), one after the other, so each side has the machine to itself as
much as a shared machine allows: tgrad with the default ``trace`` executor,
PyTorch with a python that can import torch (``--torch-python``,
``TGRAD_TORCH_PYTHON``, /work/torchref/bin/python, or the python on PATH; the
tgrad process never imports torch). Both sides get ``--threads`` threads
(default 1). Prints:

1. ms per step (median and min of the timed steps) of tgrad and PyTorch and
   their ratio; (d) and (e) are per epoch, and (d)'s 1000-epoch run time; then
   the same steps under ``tgrad.compile`` (call 1 eager, call 2 recorded, later
   calls replayed): median ms, ratio to PyTorch and to tgrad eager, and the
   recording call's time over an eager step;
2. launches per step of each tgrad step (tgrad.profiler) and the ops that
   launch them, peak memory of a step (max_memory_allocated after
   reset_peak_memory_stats), ``num_device_alloc`` after step 1 and after the
   last step (flat = no backend allocation in steady state);
3. minor page faults (getrusage ru_minflt deltas) of (c): tgrad as it runs,
   without the host caching allocator (``TGRAD_HOST_CACHE=0``), with glibc's
   default mmap/trim thresholds, with both (the "before"), and PyTorch's;
4. (b) under the trace, direct and stock executors (stock: a few steps only).
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
STEPS = {"a": 100, "b": 50, "c": 20, "d": 1000, "e": 1000, "f": 10, "g": 10, "h": 30}   # timed steps per worker (d: one 1000-epoch run)
WARMUP = 5    # (c) page-faults while its tapes are recorded and compiled: steps 1-4


def _minflt():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def worker(impl, name, steps, warmup, profile):
    """Run ``steps`` timed steps of ``name`` after ``warmup``; return measurements as a dict."""
    sys.path.insert(0, HERE)
    import steps as S
    if impl == "jax":
        import jax
        import steps_jax
        step = steps_jax.build(name)
        info = {"version": jax.__version__}
    elif impl in ("torch", "torchc"):
        import torch
        torch.set_num_threads(int(os.environ["COMPARE_TORCH_THREADS"]))
        info = {"version": torch.__version__, "threads": torch.get_num_threads()}
    else:
        sys.path.insert(0, ROOT)
        import tgrad as torch
        from tgrad.kernels.runtime import launcher
        info = {"executor": launcher.EXECUTOR, "host_cache": os.environ.get("TGRAD_HOST_CACHE", "1")}
    if impl != "jax":
        step = S.build(name, torch, compile=impl in ("compiled", "torchc"))
    tg = impl in ("tgrad", "compiled")
    if impl != "tgrad":
        profile = False
    f0 = _minflt()
    t0 = time.perf_counter()
    step()
    info["first_step_ms"] = (time.perf_counter() - t0) * 1e3
    if tg:
        info["device_alloc_after_step1"] = torch.memory_stats("cpu")["num_device_alloc"]
    t0 = time.perf_counter()
    step()                      # compiled: call 2 records the step
    info["second_step_ms"] = (time.perf_counter() - t0) * 1e3
    if tg:
        info["device_alloc_after_step2"] = torch.memory_stats("cpu")["num_device_alloc"]
    for i in range(warmup - 2):
        step()
    f1 = _minflt()
    times, cpu = [], []
    for _ in range(steps):
        t0, c0 = time.perf_counter(), time.process_time()
        step()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    f2 = _minflt()
    # cpu: the process's cpu time per step (all its threads), robust to other processes holding the cores
    info.update(times=times, cpu=cpu, minflt_warmup=f1 - f0, minflt_timed=f2 - f1, steps=steps)
    if tg:
        info["device_alloc_after_last"] = torch.memory_stats("cpu")["num_device_alloc"]
        if profile:
            torch.reset_peak_memory_stats()
            base = torch.memory_allocated()
            with torch.profiler.profile() as prof:
                for _ in range(3):
                    step()
                    prof.step()
            info["peak_bytes"] = torch.max_memory_allocated()
            info["peak_above_base"] = info["peak_bytes"] - base
            info["launches_per_step"] = prof.launches_per_step
            info["launches_by_op"] = {op: n / 3 for op, n in prof.launches_by_op.items()}
            info["profile_table"] = prof.table()
    return info


def find_torch_python(explicit):
    cands = [explicit] if explicit else [os.environ.get("TGRAD_TORCH_PYTHON"), "/work/torchref/bin/python",
                                         sys.executable, shutil.which("python3")]
    for py in cands:
        try:
            if py and subprocess.run([py, "-c", "import torch"], capture_output=True).returncode == 0:
                return py
        except OSError:
            pass
    return None


def find_jax_python(explicit):
    """A python executable that can import jax (``--jax-python``, ``TGRAD_JAX_PYTHON``, /work/venv-jax), or None."""
    cands = [explicit] if explicit else [os.environ.get("TGRAD_JAX_PYTHON"), "/work/venv-jax/bin/python"]
    for py in cands:
        try:
            if py and subprocess.run([py, "-c", "import jax"], capture_output=True).returncode == 0:
                return py
        except OSError:
            pass
    return None


def run_worker(python, impl, name, steps, warmup=WARMUP, env=None, profile=True):
    cmd = [python, os.path.abspath(__file__), "--worker", impl, "--step", name, "--steps", str(steps),
           "--warmup", str(warmup)] + ([] if profile else ["--no-profile"])
    res = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **(env or {})), cwd=ROOT)
    if res.returncode != 0:
        raise RuntimeError(f"worker {impl} {name} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def _med(ts):
    s = sorted(ts)
    n = len(s)
    return (s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2) * 1e3


def main(argv=None):
    sys.path.insert(0, HERE)
    from steps import NAMES
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--torch-python", default=None)
    p.add_argument("--quick", action="store_true", help="few steps (a smoke run)")
    p.add_argument("--threads", type=int, default=1,
                   help="threads of each side: PyTorch intra-op threads and numpy's BLAS (OPENBLAS/OMP/MKL_"
                        "NUM_THREADS) under tgrad's executor (default 1: on a loaded shared machine BLAS and "
                        "OpenMP threads spin and stall, 2-4x slower steps)")
    p.add_argument("--only", nargs="+", choices=NAMES, help="only these steps (sections 1 and 2; 3 needs c, 4 b)")
    p.add_argument("--torch-threads", type=int, nargs="+", default=None,
                   help="PyTorch thread counts to try (default: --threads); its best median is the reference")
    p.add_argument("--worker", choices=("tgrad", "compiled", "torch", "torchc", "jax"), help=argparse.SUPPRESS)
    p.add_argument("--step", help=argparse.SUPPRESS)
    p.add_argument("--steps", type=int, help=argparse.SUPPRESS)
    p.add_argument("--warmup", type=int, default=WARMUP, help=argparse.SUPPRESS)
    p.add_argument("--no-profile", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker:
        print(json.dumps(worker(a.worker, a.step, a.steps, a.warmup, not a.no_profile)))
        return
    steps = {k: max(3, v // 10) for k, v in STEPS.items()} if a.quick else STEPS
    from steps import DESCRIPTION, EPOCHS
    names = a.only or NAMES
    tpy = find_torch_python(a.torch_python)
    os.environ["COMPARE_TORCH_THREADS"] = str(a.threads)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(a.threads)  # inherited by the workers
    me = sys.executable
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    res = {}
    for name in names:
        res[name, "tgrad"] = run_worker(me, "tgrad", name, steps[name])
        res[name, "compiled"] = run_worker(me, "compiled", name, steps[name])
        if tpy:
            runs = [run_worker(tpy, "torch", name, steps[name], env={"COMPARE_TORCH_THREADS": str(t)})
                    for t in (a.torch_threads or [a.threads])]
            res[name, "torch"] = min(runs, key=lambda r: _med(r["times"]))
    if tpy:
        t = res[names[0], "torch"]
        print(f"PyTorch {t['version']} CPU eager ({t['threads']} threads), python {tpy}")
    else:
        print("PyTorch reference unavailable: no python that can import torch (--torch-python PATH)")
    print(f"tgrad executor: {res[names[0], 'tgrad']['executor']}, numpy BLAS threads: {a.threads}\n")

    print("1. step time (ms per step; (d): per epoch)")
    head = (f"{'step':<44} {'tgrad med':>10} {'tgrad min':>10} {'torch med':>10} {'torch min':>10} "
            f"{'ratio med':>10} {'ratio min':>10}")
    print(head + "\n" + "-" * len(head))
    for name in names:
        tg = res[name, "tgrad"]["times"]
        line = f"({name}) {DESCRIPTION[name]:<40} {_med(tg):>10.3f} {min(tg) * 1e3:>10.3f}"
        if tpy:
            th = res[name, "torch"]["times"]
            line += (f" {_med(th):>10.3f} {min(th) * 1e3:>10.3f} {_med(tg) / _med(th):>9.1f}x"
                     f" {min(tg) / min(th):>9.1f}x")
        print(line)
    print("\n1b. tgrad.compile (replayed steps; record = call 2, vs a median eager step and vs eager's call 2)")
    head = (f"{'step':<44} {'compiled med':>12} {'compiled min':>12} {'vs torch':>9} {'vs eager':>9} "
            f"{'record ms':>10} {'/eager step':>11} {'/eager call 2':>13}")
    print(head + "\n" + "-" * len(head))
    for name in names:
        c, tg = res[name, "compiled"], res[name, "tgrad"]["times"]
        line = f"({name}) {DESCRIPTION[name]:<40} {_med(c['times']):>12.3f} {min(c['times']) * 1e3:>12.3f}"
        line += f" {_med(c['times']) / _med(res[name, 'torch']['times']):>8.2f}x" if tpy else f" {'-':>9}"
        rec = c["second_step_ms"]
        line += (f" {_med(c['times']) / _med(tg):>8.2f}x {rec:>10.2f} {rec / _med(tg):>10.1f}x"
                 f" {rec / res[name, 'tgrad']['second_step_ms']:>12.1f}x")
        print(line)
    if "d" in names and steps["d"] >= EPOCHS:
        line = f"(d) full run of {EPOCHS} epochs: tgrad {sum(res['d', 'tgrad']['times']):.2f} s"
        if tpy:
            line += f", torch {sum(res['d', 'torch']['times']):.3f} s"
        print(line)

    print("\n2. tgrad per step: launches, peak memory, backend allocations (num_device_alloc)")
    head = (f"{'step':<5} {'launches/step':>14} {'peak KiB':>10} {'allocs after step 1':>20} {'after step 2':>13} "
            f"{'after last':>11}")
    print(head + "\n" + "-" * len(head))
    for name in names:
        r = res[name, "tgrad"]
        print(f"({name})  {r['launches_per_step'][-1]:>14} {r['peak_above_base'] / 1024:>10.1f} "
              f"{r['device_alloc_after_step1']:>20} {r['device_alloc_after_step2']:>13} "
              f"{r['device_alloc_after_last']:>11}")
    for name in names:
        ops = ", ".join(f"{op} {n:g}" for op, n in res[name, "tgrad"]["launches_by_op"].items())
        print(f"({name}) launches by op: {ops}")

    if "c" not in names or "b" not in names:
        return
    print("\n3. minor page faults of (c) (ru_minflt deltas)")
    glibc = {"MALLOC_MMAP_THRESHOLD_": "131072", "MALLOC_TRIM_THRESHOLD_": "131072"}   # glibc's defaults
    nocache = run_worker(me, "tgrad", "c", steps["c"], env={"TGRAD_HOST_CACHE": "0"}, profile=False)
    # tgrad keeps freed numpy temporaries mapped (mallopt) unless glibc's variables are set: with them set
    # to glibc's defaults, the rows below show the storm without that and without the caching allocator
    heap = run_worker(me, "tgrad", "c", steps["c"], profile=False, env=glibc)
    fixed = run_worker(me, "tgrad", "c", steps["c"], profile=False, env=dict(glibc, TGRAD_HOST_CACHE="0"))
    rows = [("tgrad (caching allocator, heap kept mapped)", res["c", "tgrad"]),
            ("tgrad, TGRAD_HOST_CACHE=0", nocache),
            ("tgrad, glibc's default thresholds", heap),
            ("tgrad, both off (before)", fixed)]
    if tpy:
        rows.append(("PyTorch", res["c", "torch"]))
    head = f"{'':<46} {'first ' + str(WARMUP) + ' steps':>15} {'timed steps':>12} {'per timed step':>15} {'ms/step':>8}"
    print(head + "\n" + "-" * len(head))
    for label, r in rows:
        print(f"{label:<46} {r['minflt_warmup']:>15} {r['minflt_timed']:>12} "
              f"{r['minflt_timed'] / r['steps']:>15.1f} {_med(r['times']):>8.2f}")
    print(f"(no caching: num_device_alloc {nocache['device_alloc_after_step1']} after step 1, "
          f"{nocache['device_alloc_after_last']} after the last)")

    print("\n4. (b) under each executor (ms per step)")
    execs = {"trace": res["b", "tgrad"]}
    for ex, n in (("direct", max(3, steps["b"] // 5)), ("stock", 3)):
        execs[ex] = run_worker(me, "tgrad", "b", n, warmup=1, env={"TGRAD_EXECUTOR": ex}, profile=False)
    base = _med(execs["trace"]["times"])
    for ex, r in execs.items():
        line = f"{ex:<7} {_med(r['times']):>10.2f} ms  ({len(r['times'])} steps, {_med(r['times']) / base:.1f}x trace"
        if tpy:
            line += f", {_med(r['times']) / _med(res['b', 'torch']['times']):.1f}x PyTorch"
        print(line + ")")
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("\n(b) launch profile (3 steps):\n" + res["b", "tgrad"]["profile_table"])


if __name__ == "__main__":
    main()
