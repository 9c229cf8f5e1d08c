"""Warm-up cost of tgrad's cpu executor: what a new process, a new shape and ``tgrad.compile``'s record pay.

    python benchmarks/warmup.py [--steps b,g] [--sizes 32,48,80,96] [--torch-python PATH]

Each measurement runs in its own process (``--worker``).  Per step (benchmarks/steps.py's (b) and (g)):

1. a fresh process: steps 1, 2, 3 and the steady step (median of later steps), wall and cpu ms: tracing every
   kernel (``TGRAD_TAPE_CACHE=0``), then with the on-disk tape cache (runtime/tape_cache.py) filled by an earlier
   process of the same run (an empty temporary directory first), a fresh process at a batch size no process ran
   (the last of ``--sizes``; the disk filled at the default size only), and PyTorch's with ``--torch-python``;
2. after that warm-up, the same model at new batch sizes (``--sizes``): each new size's steps 1, 2, 3,
   the first over the steady step of that size;
3. RSS (``/proc/self/statm``) after each new batch size's steps: MiB kept per new size;
4. ``tgrad.compile`` of the step: call 1 (eager), call 2 (the record) and the replayed step, the record
   over a steady eager step;
5. where a new shape's first step goes (cProfile of one new-size step, by phase: recording a tape (through the
   interpreter, or replaying a generic tape's ops), compiling tapes, the interpreter's direct run, shape-generic
   tapes' runs (their recording included)).

Wall times on the shared 2-core machine are noisy: cpu time (``time.process_time``, one BLAS thread) is the
figure to compare.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _timed(fn):
    w, c = time.perf_counter(), time.process_time()
    fn()
    return (time.perf_counter() - w) * 1e3, (time.process_time() - c) * 1e3


def _median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def _builder(name, torch):
    """``make(batch) -> step()``: step ``name`` of steps.py at batch size ``batch`` (same model and
    optimizer for every batch size)."""
    import numpy as np
    import steps as S
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    if name == "b":
        model = S._mlp(torch, 64, 128, 10)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        F = torch.nn.functional

        def make(batch):
            x = torch.tensor((rng.integers(0, 17, (batch, 64)) / 16.0).astype(np.float32))
            y = torch.tensor(rng.integers(0, 10, batch))

            def step():
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                opt.zero_grad()
                return loss
            return step
        return make, 64
    if name == "g":
        return (lambda batch: S._gpt(torch, np.random.default_rng(0), bsz=batch)), 16
    raise ValueError(f"warmup.py knows steps b and g, not {name!r}")


def worker(name, mode, sizes, steady):
    sys.path.insert(0, HERE)
    if os.environ.get("WARMUP_TORCH"):
        import torch
        torch.set_num_threads(1)
    else:
        sys.path.insert(0, ROOT)
        import tgrad as torch
    make, batch0 = _builder(name, torch)
    out = {"step": name}
    if mode in ("eager", "newsize"):
        step = make(batch0 if mode == "eager" else sizes[0])
        first = [_timed(step) for _ in range(3)]
        rest = [_timed(step) for _ in range(steady)]
        out["first"] = first
        out["steady"] = (_median([r[0] for r in rest]), _median([r[1] for r in rest]))
        out["new"] = []
        rss0 = _rss_mib()
        for b in sizes if mode == "eager" else ():
            step = make(b)
            first = [_timed(step) for _ in range(3)]
            rest = [_timed(step) for _ in range(steady)]
            out["new"].append({"batch": b, "first": first, "rss": _rss_mib(),
                               "steady": (_median([r[0] for r in rest]), _median([r[1] for r in rest]))})
        out["rss0"] = rss0
    elif mode == "compiled":
        step = make(batch0)
        c = torch.compile(step)              # compiled first, in a fresh process: call 2 records and traces
        calls = [_timed(c) for _ in range(2)]
        replay = [_timed(c) for _ in range(steady)]
        eager = [_timed(step) for _ in range(steady)]
        warm = []
        for _ in range(9):                   # compiled after eager steps: the record alone (median of 9)
            c2 = torch.compile(step)
            _timed(c2)
            warm.append(_timed(c2))
        out.update(eager=(_median([r[0] for r in eager]), _median([r[1] for r in eager])), call1=calls[0],
                   record=calls[1], replay=(_median([r[0] for r in replay]), _median([r[1] for r in replay])),
                   record_warm=(_median([r[0] for r in warm]), _median([r[1] for r in warm])))
    elif mode == "profile":
        import cProfile
        import pstats
        step = make(batch0)
        for _ in range(3):
            step()
        step = make(sizes[0])
        pr = cProfile.Profile()
        pr.enable()
        step()
        pr.disable()
        st = pstats.Stats(pr).stats
        total = sum(v[2] for v in st.values())
        phases = {"trace.record": ("trace.py", "record"), "of which replayed": ("trace.py", "_replay"),
                  "tape._compile": ("tape.py", "_compile"), "direct": ("direct.py", "_run_direct"),
                  "trace._run_generic": ("trace.py", "_run_generic")}
        cum = {label: sum(v[3] for k, v in st.items() if k[0].endswith(f) and k[2] == fn) * 1e3
               for label, (f, fn) in phases.items()}
        top = max(v[3] for v in st.values())
        out["profile"] = dict(cum, total_ms=top * 1e3, tottime_ms=total * 1e3)
    return out


def run(name, mode, sizes, steady, python=None, **env):
    cmd = [python or sys.executable, os.path.abspath(__file__), "--worker", mode, "--steps", name,
           "--sizes", ",".join(map(str, sizes)), "--steady", str(steady)]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), **env)
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if r.returncode:
        raise RuntimeError(f"warmup worker {name} {mode} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def report(names, sizes, steady=None, log=print, torch_python=None):
    """Run every measurement of ``names`` and print the tables; returns the raw results."""
    res = {}
    for n in names:
        st = steady or (20 if n == "b" else 4)
        sz = sizes if n == "b" else sizes[:1]
        res[n] = {m: run(n, m, sz, st, TGRAD_TAPE_CACHE="0") for m in ("eager", "compiled", "profile")}
        with tempfile.TemporaryDirectory() as d:
            run(n, "eager", [], 1, TGRAD_TAPE_CACHE_DIR=d)               # the default batch size only
            res[n]["disk_new"] = run(n, "newsize", sz[-1:], st, TGRAD_TAPE_CACHE_DIR=d)    # a size it never ran
        with tempfile.TemporaryDirectory() as d:
            run(n, "eager", sz, 1, TGRAD_TAPE_CACHE_DIR=d)               # fills the disk cache
            res[n]["disk"] = run(n, "eager", sz, st, TGRAD_TAPE_CACHE_DIR=d)
        if torch_python:
            res[n]["torch"] = run(n, "eager", sz, st, torch_python, WARMUP_TORCH="1")
    rows = [("eager", "traced"), ("disk", "from disk"), ("disk_new", "disk, new"), ("torch", "PyTorch")]
    log("1. fresh process: steps 1, 2, 3 and steady, ms wall / cpu (traced: TGRAD_TAPE_CACHE=0; from disk: tapes an "
        "earlier process stored; disk, new: the last new batch size, the disk holding only an earlier process's "
        "default batch size)")
    for n in names:
        for m, label in rows:
            if m not in res[n]:
                continue
            e = res[n][m]
            s = e["steady"]
            log(f"({n}) {label:9s} " + "  ".join(f"{w:8.1f} /{c:8.1f}" for w, c in e["first"]) +
                f"   steady {s[0]:7.2f} /{s[1]:7.2f}   first/steady (cpu) {e['first'][0][1] / s[1]:7.1f}x")
    log("2. new batch size after warm-up: steps 1, 2, 3 and steady, ms wall / cpu; RSS after its steps")
    for n in names:
        for m, label in rows:
            if m not in res[n]:
                continue
            e = res[n][m]
            if not e["new"]:
                continue
            prev = e["rss0"]
            for r in e["new"]:
                s = r["steady"]
                log(f"({n}) {label:9s} batch {r['batch']:4d} " +
                    "  ".join(f"{w:8.1f} /{c:8.1f}" for w, c in r["first"]) +
                    f"   steady {s[0]:7.2f} /{s[1]:7.2f}   first/steady (cpu) {r['first'][0][1] / s[1]:6.1f}x"
                    f"   RSS +{r['rss'] - prev:5.2f} MiB")
                prev = r["rss"]
    log("3. tgrad.compile in a fresh process: call 1, call 2 (record), replay; the record of a function compiled after "
        "eager steps (median of 9); ms wall / cpu; records over a steady eager step (cpu)")
    for n in names:
        c = res[n]["compiled"]
        log(f"({n}) eager {c['eager'][0]:8.2f} /{c['eager'][1]:8.2f}  call1 {c['call1'][0]:8.1f} /{c['call1'][1]:8.1f}"
            f"  record {c['record'][0]:8.1f} /{c['record'][1]:8.1f}"
            f"  replay {c['replay'][0]:7.2f} /{c['replay'][1]:7.2f}"
            f"  warm record {c['record_warm'][0]:8.1f} /{c['record_warm'][1]:8.1f}"
            f"  record/eager {c['record'][1] / c['eager'][1]:6.1f}x, warm {c['record_warm'][1] / c['eager'][1]:5.1f}x")
    log("4. a new batch size's first step by phase (cProfile, ms cumulative; the profiler inflates all)")
    for n in names:
        p = res[n]["profile"]["profile"]
        log(f"({n}) " + "  ".join(f"{k} {v:8.1f}" for k, v in p.items() if k != "tottime_ms"))
    return res


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", default="b,g")
    p.add_argument("--sizes", default="32,48,80,96", help="new batch sizes ((g) uses the first)")
    p.add_argument("--steady", type=int, default=None, help="steps timed for a steady figure")
    p.add_argument("--worker", choices=("eager", "newsize", "compiled", "profile"), help=argparse.SUPPRESS)
    p.add_argument("--json", help="write the raw results here")
    p.add_argument("--torch-python", help="a Python with PyTorch: its fresh process's first steps beside tgrad's")
    a = p.parse_args(argv)
    sizes = [int(s) for s in a.sizes.split(",") if s]
    if a.worker:
        print(json.dumps(worker(a.steps, a.worker, sizes, a.steady)))
        return None
    res = report([n for n in a.steps.split(",") if n], sizes, a.steady, torch_python=a.torch_python)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return res


if __name__ == "__main__":
    main()
