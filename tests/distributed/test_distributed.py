"""tgrad.distributed on real MPI processes: each scenario of tests/distributed/dist_worker.py runs on 2 ranks
started by ``python -m tgrad.distributed.run`` (the Open MPI wheel's mpiexec). The jobs are started together, the first
time a test needs one (they mostly wait on each other), and each test checks its job's output."""
import importlib.util
import os
import subprocess
import sys

import pytest

import tgrad as torch
from tgrad.utils.data import DistributedSampler

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKER = os.path.join(ROOT, "tests", "distributed", "dist_worker.py")
HAVE_MPI = importlib.util.find_spec("mpi4py") is not None
needs_mpi = pytest.mark.skipif(not HAVE_MPI, reason='mpi4py is not installed: pip install "tgrad[distributed]"')
HAVE_NCCL = importlib.util.find_spec("nvidia") is not None and importlib.util.find_spec("nvidia.nccl") is not None
HAVE_SKLEARN = importlib.util.find_spec("sklearn") is not None

SCENARIOS = {"collectives": [], "kill": [], "raise": [], "timeout": ["2"], "syncbn": []}
if HAVE_SKLEARN:
    SCENARIOS["ddp"] = []
if HAVE_NCCL:
    SCENARIOS["nccl"] = []


def _env(**extra):
    return dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
                OPENBLAS_NUM_THREADS="1", **extra)


class _Jobs:
    started = {}

    @classmethod
    def result(cls, name, timeout=240):
        """(returncode, stdout, stderr) of scenario ``name`` (all scenarios start on the first call)."""
        if not cls.started:
            for s, args in SCENARIOS.items():
                cmd = [sys.executable, "-m", "tgrad.distributed.run", "--nproc-per-node", "2", WORKER, s, *args]
                cls.started[s] = (subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                                   env=_env(), cwd=ROOT))
        proc = cls.started[name]
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"{name}: the ranks hung for {timeout} s\n{out}\n{err}")
        return proc.returncode, out, err


def _ok(name):
    code, out, err = _Jobs.result(name)
    assert code == 0 and f"rank 0 ok {name}" in out and f"rank 1 ok {name}" in out, f"{out}\n{err}"
    return out


@needs_mpi
def test_collectives_match_numpy_for_every_op_and_dtype():
    """all_reduce / reduce / reduce_scatter_tensor (SUM AVG PRODUCT MIN MAX), broadcast, all_gather(_into_tensor),
    gather, scatter, send/recv, async work, sub-groups, views: every dtype, against numpy; mismatched
    shapes, dtypes, reduce ops and message sizes across ranks raise on every rank."""
    _ok("collectives")


@needs_mpi
@pytest.mark.skipif(not HAVE_SKLEARN, reason="the digits come from scikit-learn (the examples extra)")
def test_ddp_two_ranks_equal_one_process_on_the_double_batch():
    """2 ranks x batch 32 for 50 SGD steps == 1 process x batch 64 (allclose 1e-6); no_sync, frozen and unused
    parameters, state_dict keys."""
    out = _ok("ddp")
    diff = float(out.split("ddp-vs-single max abs diff ")[1].split()[0])
    assert diff <= 1e-6


@needs_mpi
def test_sync_batch_norm_two_ranks_equal_batch_norm_on_the_whole_batch():
    """nn.SyncBatchNorm (from convert_sync_batchnorm) on each rank's half == BatchNorm2d on the whole batch:
    outputs, input gradients, all-reduced weight/bias gradients, running statistics, eval output."""
    _ok("syncbn")


@needs_mpi
def test_a_killed_rank_stops_the_others_with_an_error_naming_it():
    code, out, err = _Jobs.result("kill")
    killed_at = float(out.split("rank 1 kills itself at ")[1].split()[0])
    end = float(out.split("rank 0 stops at ")[1].split()[0])
    assert code != 0 and "trained past a dead rank" not in out
    assert "DistBackendError: [rank 0] all_reduce failed: rank 1 of the process group exited or was killed" in err, err
    assert end - killed_at < 30
    assert "tgrad.distributed.run: these ranks failed:\n  rank 0: tgrad.distributed.DistBackendError" in err
    assert "  rank 1: no exit status: killed, or lost with its host" in err


@needs_mpi
def test_a_raising_rank_stops_the_others_with_an_error_naming_it():
    code, out, err = _Jobs.result("raise")
    assert code != 0
    assert "[rank 0] Traceback" in err and "ValueError: boom on rank 0" in err
    assert "[rank 1] all_reduce" in err and "failed: rank 0 of the process group exited or was killed" in err, err
    assert "  rank 0: ValueError: boom on rank 0" in err


@needs_mpi
def test_a_stuck_rank_times_out_after_the_process_group_timeout():
    code, out, err = _Jobs.result("timeout")
    assert code != 0
    line = next(x for x in out.splitlines() if x.startswith("rank 0 timed out after "))
    assert 2.0 <= float(line.split()[5]) < 15
    assert "all_reduce (its check of the shapes on every rank) timed out after 2 s waiting for the other ranks" in line


@needs_mpi
@pytest.mark.skipif(not HAVE_NCCL, reason="nvidia-nccl-cu12 is not installed (pip install \"tgrad[nccl]\")")
def test_nccl_library_version_and_unique_id_exchange(device):
    """All a machine without GPU can check of the NCCL backend (the collectives themselves are untested)."""
    if device == "cuda":
        pytest.skip("checks NCCL's no-GPU error: with --device cuda the workers see a GPU (on the fake driver, "
                    "one NCCL cannot initialize on)")
    out = _ok("nccl")
    assert "rank 0 nccl version 2" in out


def test_launcher_command_for_several_hosts(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# two machines\nnode1 slots=4\nnode2 slots=4\n")
    r = subprocess.run([sys.executable, "-m", "tgrad.distributed.run", "--nproc-per-node", "3", "--hostfile",
                        str(hostfile), "--dry-run", "train.py", "--lr", "0.1"], capture_output=True, text=True,
                       env=_env(), timeout=120)
    if not HAVE_MPI:
        assert r.returncode != 0 and 'pip install "tgrad[distributed]"' in r.stderr
        return
    cmd = r.stdout.split()
    assert r.returncode == 0, r.stderr
    assert cmd[1:3] == ["-n", "6"] and "--host" in cmd and cmd[cmd.index("--host") + 1] == "node1:3,node2:3"
    assert "ppr:3:node" in cmd and "ulfm" in cmd and "MASTER_ADDR=node1" in cmd
    assert cmd[-6:] == ["-m", "tgrad.distributed.run", "--_rank", "train.py", "--lr", "0.1"]


def test_launcher_without_mpi_says_how_to_install(tmp_path):
    fake = tmp_path / "mpi4py"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('no MPI here')\n")
    r = subprocess.run([sys.executable, "-m", "tgrad.distributed.run", "--nproc-per-node", "2", "x.py"],
                       capture_output=True, text=True, timeout=120,
                       env=dict(_env(), PYTHONPATH=str(tmp_path) + os.pathsep + ROOT))
    assert r.returncode == 1
    assert r.stderr.strip() == ('tgrad.distributed.run: MPI is not installed (mpi4py and mpiexec): '
                                'pip install "tgrad[distributed]"')


def test_import_is_lazy_and_needs_no_mpi():
    code = ("import sys, tgrad, tgrad.nn.parallel, tgrad.utils.data.distributed; "
            "assert 'mpi4py' not in sys.modules; "
            "from tgrad.nn.parallel import DistributedDataParallel; "
            "assert tgrad.nn.parallel.DistributedDataParallel is DistributedDataParallel; "
            "import tgrad.distributed as d; assert not d.is_initialized(); print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=120)
    assert r.stdout == "ok\n", r.stderr


def test_without_init_process_group_pytorch_error():
    with pytest.raises(ValueError, match="Default process group has not been initialized, please make sure to "
                                         "call init_process_group."):
        torch.distributed.get_rank()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))


# PyTorch 2.13's DistributedSampler(range(n), num_replicas, rank, shuffle=False, drop_last=d), per rank,
# printed by /work/venv-torch (padding repeats the list from its start, drop_last cuts the tail)
TORCH_ORDERS = {
    (10, 3, False): [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]],
    (10, 3, True): [[0, 3, 6], [1, 4, 7], [2, 5, 8]],
    (2, 5, False): [[0], [1], [0], [1], [0]],
    (7, 4, False): [[0, 4], [1, 5], [2, 6], [3, 0]],
    (7, 4, True): [[0], [1], [2], [3]],
}


@pytest.mark.parametrize("n,replicas,drop_last", list(TORCH_ORDERS))
def test_distributed_sampler_pytorch_order(n, replicas, drop_last):
    got = [list(DistributedSampler(range(n), replicas, r, shuffle=False, drop_last=drop_last))
           for r in range(replicas)]
    assert got == TORCH_ORDERS[(n, replicas, drop_last)]
    assert len(DistributedSampler(range(n), replicas, 0, drop_last=drop_last)) == len(got[0])


def test_distributed_sampler_shuffle_is_one_seeded_permutation():
    def orders(epoch, seed=0):
        out = []
        for r in range(3):
            s = DistributedSampler(range(11), 3, r, seed=seed)
            s.set_epoch(epoch)
            out.append(list(s))
        return out
    a = orders(0)
    g = torch.Generator()
    g.manual_seed(0)
    perm = torch.randperm(11, generator=g, device="cpu").tolist()
    perm += perm[:1]                                   # padded to 12
    assert a == [perm[0::3], perm[1::3], perm[2::3]]
    assert orders(0) == a and orders(1) != a and orders(0, seed=5) != a
    assert set(sum(orders(1), [])) == set(range(11))
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        DistributedSampler(range(5), 3, 3)


def test_consume_prefix_in_state_dict():
    from tgrad.nn.modules.utils import consume_prefix_in_state_dict_if_present
    sd = {"module.0.weight": 1, "module.0.bias": 2, "other": 3}
    consume_prefix_in_state_dict_if_present(sd, "module.")
    assert list(sd) == ["other", "0.weight", "0.bias"]       # PyTorch's order (re-inserted keys go last)
