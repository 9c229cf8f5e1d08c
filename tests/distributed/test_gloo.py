"""The gloo backend (TCP, ranks not started by MPI) and tgrad.multiprocessing: 2 ranks started by
``tgrad.multiprocessing.start_processes`` run dist_worker's collectives (every op against numpy, on float32,
float16, bfloat16, int64, bool), DDP (equal to one process on the combined batch), a timed-out wait and a peer
that leaves; results come back through an ``mp.Queue`` (tgrad tensors pickled). Spawn's errors, the rendezvous
errors, and spawn under a torch -> tgrad alias."""
import datetime
import os
import queue
import socket

import numpy as np
import pytest

import gloo_worker
import tgrad as torch
import tgrad.distributed as dist
import tgrad.multiprocessing as mp

CPU_ONLY = True     # the gloo backend carries cpu tensors


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _collect(procs, q, n):
    """``n`` items from ``q``; a child's failure is raised here (ProcessRaisedException) instead of waiting."""
    items = []
    while len(items) < n:
        try:
            items.append(q.get(timeout=2))
        except queue.Empty:
            procs.join(timeout=0)
    while not procs.join(timeout=60):
        pass
    return items


@pytest.fixture
def no_launcher_env(monkeypatch):
    for var in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")


def test_two_spawned_ranks_collectives_ddp_timeout_and_a_leaving_peer(no_launcher_env):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = mp.start_processes(gloo_worker.main, args=(2, _free_port(), q), nprocs=2, join=False)
    assert len(procs.pids()) == 2
    items = _collect(procs, q, 4)
    got = {rank: (init, final) for rank, init, final in items[:2]}
    timeout, dead = items[2:]
    # tensors came through the queue with their values; both replicas started from rank 0's weights, ended equal
    init0, final0 = got[0]
    assert all(isinstance(p, torch.Tensor) for p in init0 + final0)
    for a, b in zip(got[0][0] + got[0][1], got[1][0] + got[1][1]):
        assert np.array_equal(a.numpy(), b.numpy())
    # ... and equal to one process training on both ranks' batches
    ref = gloo_worker.mlp()
    with torch.no_grad():
        for p, v in zip(ref.parameters(), init0):
            p.copy_(v)
    x, y = gloo_worker.ddp_data()
    b = gloo_worker.BATCH
    gloo_worker.train(ref, x, y, lambda s: slice(2 * b * s, 2 * b * (s + 1)))
    for p, q_ in zip(final0, ref.parameters()):
        assert np.allclose(p.numpy(), q_.detach().numpy(), rtol=1e-6, atol=1e-6)
        assert not np.array_equal(p.numpy(), init0[0].numpy()) if p.shape == init0[0].shape else True
    assert timeout[0] == "timeout" and 1.0 <= timeout[1] < 10, timeout
    assert "[rank 0] recv timed out after 1 s waiting for the other ranks of the process group" in timeout[2]
    assert dead[0] == "dead" and dead[1] == ("[rank 0] barrier (its check of the shapes on every rank) failed: "
                                             "rank 1 of the process group exited or was killed (its connection "
                                             "closed)"), dead


def test_spawn_raises_the_childs_traceback():
    with pytest.raises(mp.ProcessRaisedException) as e:
        mp.spawn(gloo_worker.raise_on_1, nprocs=2)
    msg = str(e.value)
    assert msg.startswith("\n\n-- Process 1 terminated with the following error:\nTraceback (most recent call last):")
    assert msg.endswith('raise ValueError("boom on rank 1")\nValueError: boom on rank 1\n')
    assert e.value.error_index == 1 and e.value.error_pid > 0


@pytest.mark.parametrize("fn,msg,code", [(gloo_worker.exit_3, "process 0 terminated with exit code 3", 3),
                                         (gloo_worker.sigkill, "process 0 terminated with signal SIGKILL", -9)])
def test_spawn_raises_on_an_exit_code_or_signal(fn, msg, code):
    with pytest.raises(mp.ProcessExitedException, match=msg) as e:
        mp.start_processes(fn, nprocs=1, start_method="fork")
    assert e.value.exit_code == code


def test_multiprocessing_reexports_pythons():
    import multiprocessing
    for name in ("Process", "Queue", "Pool", "get_context", "set_start_method", "cpu_count", "Manager", "Event"):
        assert getattr(mp, name) is getattr(multiprocessing, name)
    assert mp.get_sharing_strategy() in mp.get_all_sharing_strategies()


def test_env_rendezvous_missing_variable(no_launcher_env):
    with pytest.raises(ValueError, match="Error initializing torch.distributed using env:// rendezvous: environment "
                                         "variable MASTER_ADDR expected, but not set"):
        dist.init_process_group("gloo", rank=0, world_size=2)
    with pytest.raises(ValueError, match="environment variable RANK expected, but not set"):
        dist.init_process_group("gloo")
    with pytest.raises(ValueError, match="using tcp:// rendezvous: rank parameter missing"):
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:1234")
    assert not dist.is_initialized()


def test_rendezvous_timeouts(no_launcher_env):
    port = _free_port()
    one = datetime.timedelta(seconds=1)
    with pytest.raises(dist.DistNetworkError, match=rf"The client socket has timed out after 1000ms while trying to "
                                                    rf"connect to \(127.0.0.1, {port}\)."):
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=1, world_size=2, timeout=one)
    with pytest.raises(dist.DistStoreError, match="Timed out after 1 seconds waiting for clients. 1/2 clients "
                                                  "joined."):
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=2, timeout=one)
    assert not dist.is_initialized()


def test_one_rank_gloo_group_in_process(no_launcher_env):
    """world_size 1: no peer; every collective is the identity (AVG too), the group can be made again."""
    for _ in range(2):
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{_free_port()}", rank=0, world_size=1)
        try:
            t = torch.tensor([1.0, 2.0])
            dist.all_reduce(t, op=dist.ReduceOp.AVG)
            out = [torch.zeros(2)]
            dist.all_gather(out, t)
            dist.barrier()
            assert t.tolist() == [1.0, 2.0] and out[0].tolist() == [1.0, 2.0] and dist.get_backend() == "gloo"
        finally:
            dist.destroy_process_group()


PROGRAM = '''
import torch
import torch.multiprocessing as mp

def child(i, q):
    q.put((torch.__name__, torch.tensor([1.0, 2.0]) * (i + 2)))

if __name__ == "__main__":
    q = mp.get_context("spawn").Queue()
    mp.spawn(child, args=(q,), nprocs=1)
    name, t = q.get(timeout=60)
    print(name, t.tolist())
'''


def test_spawned_children_of_a_pytorch_program_run_on_tgrad_import_torch_as_tgrad(tmp_path):
    """A PyTorch program run with ``torch`` aliased to tgrad: its spawned children re-import its main module
    (``import torch``) with the alias too."""
    import subprocess
    import sys
    (tmp_path / "prog.py").write_text(PROGRAM)
    runner = ("import runpy, sys; from tgrad.multiprocessing.spawn import _install_torch_alias; "
              "_install_torch_alias(); runpy.run_path(sys.argv[1], run_name='__main__')")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([sys.executable, "-c", runner, str(tmp_path / "prog.py")], capture_output=True, text=True,
                       timeout=300, cwd=tmp_path, env=dict(os.environ, PYTHONPATH=root, OPENBLAS_NUM_THREADS="1"))
    assert r.stdout == "tgrad [2.0, 4.0]\n", r.stderr
