"""Rank-side half of tests/distributed/test_gloo.py: functions ``tgrad.multiprocessing.spawn`` runs as ``fn(rank,
...)``. tgrad is imported inside them, so the children that only raise or exit start quickly."""
import os
import signal
import time

DDP_STEPS, BATCH = 4, 8


def ddp_data():
    """The inputs and targets of every step (the same on every rank and in the single-process reference)."""
    import tgrad as torch
    g = torch.Generator().manual_seed(0)
    return torch.randn(DDP_STEPS * 2 * BATCH, 6, generator=g), torch.randn(DDP_STEPS * 2 * BATCH, 3, generator=g)


def mlp():
    from tgrad import nn
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))


def train(model, x, y, rows):
    """SGD with momentum on MSE, step s on rows(s) of (x, y)."""
    import tgrad as torch
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for s in range(DDP_STEPS):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x[rows(s)]), y[rows(s)]).backward()
        opt.step()


def main(rank, world_size, port, q):
    """env:// rendezvous; dist_worker's collectives (every op, on 5 dtypes, against numpy); recv from any source;
    DDP for a few steps (the initial weights and final weights go to the parent through ``q``); a wait that
    times out; then rank 1 leaves and rank 0's next collective names it."""
    from datetime import timedelta

    import dist_worker
    import tgrad as torch
    import tgrad.distributed as dist
    from tgrad.nn.parallel import DistributedDataParallel as DDP
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world_size))
    dist.init_process_group("gloo")
    assert dist.get_backend() == "gloo" and dist.get_rank() == rank and dist.get_world_size() == world_size
    dist_worker.collectives([torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool])
    t = torch.zeros(2)
    if rank == 1:
        dist.send(torch.tensor([5.0, 6.0]), dst=0, tag=3)
    else:
        assert dist.recv(t, tag=3) == 1 and t.tolist() == [5.0, 6.0]

    x, y = ddp_data()
    torch.manual_seed(rank)                        # different inits: DDP broadcasts rank 0's
    model = DDP(mlp(), bucket_cap_mb=0.0002)       # 2 buckets: allreduces issued during backward
    assert len(model._buckets) >= 2
    init = [p.detach().clone() for p in model.module.parameters()]
    train(model, x, y, lambda s: slice(2 * BATCH * s + BATCH * rank, 2 * BATCH * s + BATCH * (rank + 1)))
    q.put((rank, init, [p.detach().clone() for p in model.module.parameters()]))

    if rank == 0:
        w = dist.irecv(t, src=1)
        t0 = time.monotonic()
        try:
            w.wait(timeout=timedelta(seconds=1))
            q.put("the wait did not time out")
        except dist.DistBackendError as e:
            q.put(("timeout", time.monotonic() - t0, str(e)))
        try:
            dist.barrier()                          # rank 1 sends (the recv completes), then exits
            q.put("barrier passed a dead rank")
        except dist.DistBackendError as e:
            q.put(("dead", str(e)))
        dist.destroy_process_group()
    else:
        time.sleep(2)
        dist.send(torch.ones(2), dst=0)
        os._exit(0)


def raise_on_1(rank):
    if rank == 1:
        raise ValueError("boom on rank 1")
    time.sleep(60)                                 # the parent stops this one when rank 1 fails


def exit_3(rank):
    os._exit(3)


def sigkill(rank):
    os.kill(os.getpid(), signal.SIGKILL)
