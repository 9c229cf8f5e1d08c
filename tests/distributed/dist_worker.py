"""Rank-side half of tests/distributed/test_distributed.py: ``python -m tgrad.distributed.run
--nproc-per-node 2 tests/distributed/dist_worker.py SCENARIO``. Each scenario checks values on its ranks and
prints ``rank R ok SCENARIO``. test_gloo.py runs ``collectives`` on the gloo backend."""
import os
import sys
import time
from datetime import timedelta

import numpy as np

import tgrad as torch
import tgrad.distributed as dist
from tgrad import nn

ALL = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int16,
       torch.int32, torch.int64, torch.bool]
OPS = {"SUM": dist.ReduceOp.SUM, "AVG": dist.ReduceOp.AVG, "PRODUCT": dist.ReduceOp.PRODUCT,
       "MIN": dist.ReduceOp.MIN, "MAX": dist.ReduceOp.MAX}


def data(rank, dtype, shape=(5, 3)):
    """Rank ``rank``'s input: small values every dtype holds exactly (products of two ranks too)."""
    rng = np.random.default_rng(rank + 10)
    a = rng.integers(0, 2, shape) if dtype is torch.bool else rng.integers(-5 if dtype.is_signed else 0, 8, shape)
    return a.astype(dtype.np)


def reference(arrays, op, dtype):
    """numpy's reduction over the ranks' arrays, in the dtype (bool: sum = or, product = and)."""
    a = np.stack([x.astype(np.float64) for x in arrays])
    if dtype is torch.bool:
        op = {"SUM": "MAX", "PRODUCT": "MIN"}.get(op, op)
    r = {"SUM": a.sum(0), "AVG": a.sum(0) / len(arrays), "PRODUCT": a.prod(0), "MIN": a.min(0), "MAX": a.max(0)}[op]
    if op == "AVG" and not dtype.is_floating_point:
        r = np.trunc(r)
    return r.astype(dtype.np)


def check(got, want, what):
    got = got.cpu().numpy() if hasattr(got, "numpy") else got
    assert got.dtype == want.dtype and np.array_equal(got.astype(np.float64), want.astype(np.float64)), \
        f"{what}: got {got.tolist()} want {want.tolist()}"


def collectives(dtypes=ALL):
    r, n = dist.get_rank(), dist.get_world_size()
    assert (r, n) == (int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])) and n == 2
    assert dist.is_initialized() and dist.get_backend() in ("mpi", "gloo")
    for dt in dtypes:
        mine = [data(k, dt) for k in range(n)]
        for name, op in OPS.items():
            if dt is torch.bool and name == "AVG":
                try:
                    dist.all_reduce(torch.tensor(mine[r]), op=op)
                    raise AssertionError("AVG on bool must raise")
                except ValueError as e:
                    assert "Cannot use ReduceOp.AVG with boolean inputs" in str(e)
                continue
            t = torch.tensor(mine[r])
            dist.all_reduce(t, op=op)
            check(t, reference(mine, name, dt), f"all_reduce {name} {dt}")
            t = torch.tensor(mine[r])
            dist.reduce(t, dst=1, op=op)
            check(t, reference(mine, name, dt) if r == 1 else mine[r], f"reduce {name} {dt}")
            big = [data(k, dt, (2 * n, 3)) for k in range(n)]
            out = torch.empty((2, 3), dtype=dt)
            dist.reduce_scatter_tensor(out, torch.tensor(big[r]), op=op)
            check(out, reference(big, name, dt)[2 * r:2 * r + 2], f"reduce_scatter_tensor {name} {dt}")
        t = torch.tensor(mine[r])
        dist.broadcast(t, src=1)
        check(t, mine[1], f"broadcast {dt}")
        out = torch.empty((n * 5, 3), dtype=dt)
        dist.all_gather_into_tensor(out, torch.tensor(mine[r]))
        check(out, np.concatenate(mine), f"all_gather_into_tensor {dt}")
        outs = [torch.empty((5, 3), dtype=dt) for _ in range(n)]
        dist.all_gather(outs, torch.tensor(mine[r]))
        for k in range(n):
            check(outs[k], mine[k], f"all_gather {dt}")
        glist = [torch.empty((5, 3), dtype=dt) for _ in range(n)] if r == 0 else None
        dist.gather(torch.tensor(mine[r]), glist, dst=0)
        if r == 0:
            for k in range(n):
                check(glist[k], mine[k], f"gather {dt}")
        t = torch.empty((5, 3), dtype=dt)
        dist.scatter(t, [torch.tensor(m) for m in mine] if r == 1 else None, src=1)
        check(t, mine[r], f"scatter {dt}")
        t = torch.tensor(mine[r])
        if r == 0:
            dist.send(t, dst=1, tag=7)
        else:
            t2 = torch.empty((5, 3), dtype=dt)
            assert dist.recv(t2, src=0, tag=7) == 0
            check(t2, mine[0], f"send/recv {dt}")
    # async_op: a work object; the result is there after wait()
    t = torch.full((1000,), float(r + 1))
    w = dist.all_reduce(t, async_op=True)
    assert w.wait() and w.is_completed()
    check(t, np.full(1000, 3.0, np.float32), "async all_reduce")
    w = dist.broadcast(t, src=0, async_op=True)
    w.wait()
    dist.barrier()
    # an all_reduce on a non-contiguous tensor, or a cuda one, is refused before any communication
    try:
        dist.all_reduce(torch.zeros(4, 4).t())
        raise AssertionError("non-contiguous must raise")
    except ValueError as e:
        assert str(e) == "Tensors must be contiguous"
    # mismatched shapes / dtypes / ops across ranks: an error on every rank, data untouched
    for a, b, kw in [((3,), (4,), {}), ((2, 3), (3, 2), {}), ((3,), (3,), {"op": dist.ReduceOp.MAX})]:
        t = torch.ones(a if r == 0 else b)
        before = t.cpu().numpy().copy()
        try:
            dist.all_reduce(t, **(kw if r == 1 else {}))
            raise AssertionError("mismatch must raise")
        except RuntimeError as e:
            assert str(e).startswith("Detected mismatch between collectives on ranks. Rank 0 is running "
                                     "collective: CollectiveFingerPrint("), str(e)
            assert np.array_equal(t.cpu().numpy(), before)
    try:
        dist.broadcast(torch.ones(3, dtype=torch.float32 if r == 0 else torch.float64), src=0)
        raise AssertionError("dtype mismatch must raise")
    except RuntimeError as e:
        assert "TensorDtypes=Float" in str(e) and "TensorDtypes=Double" in str(e)
    # a receive buffer of the wrong size: an error, not a partial tensor
    if r == 0:
        dist.send(torch.ones(4), dst=1)
    else:
        try:
            dist.recv(torch.zeros(6), src=0)
            raise AssertionError("short message must raise")
        except RuntimeError as e:
            assert "has 16 bytes, the receiving tensor 24" in str(e), str(e)
    # a sub-group: the world still works after it
    g = dist.new_group([0, 1])
    t = torch.tensor([float(r)])
    dist.all_reduce(t, group=g)
    check(t, np.array([1.0], np.float32), "new_group all_reduce")
    assert dist.get_rank(g) == r and dist.get_world_size(g) == 2
    # the zero-copy path: the tensor's own buffer is what MPI reduces (a view of a bigger tensor too)
    base = torch.zeros(10)
    view = base[2:6]
    view.fill_(r + 1.0)
    dist.all_reduce(view)
    check(base, np.array([0, 0, 3, 3, 3, 3, 0, 0, 0, 0], np.float32), "all_reduce on a view")


def _digits(n=1280):
    from sklearn.datasets import load_digits
    X, y = load_digits(return_X_y=True)
    X = (X[:n] / 16.0).astype(np.float32)
    return torch.tensor(X), torch.tensor(y[:n])


def _mlp():
    return nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))


def ddp():
    from tgrad.nn.parallel import DistributedDataParallel as DDP
    from tgrad.utils.data import DataLoader, DistributedSampler, TensorDataset
    r, n = dist.get_rank(), dist.get_world_size()
    X, y = _digits()
    ds = TensorDataset(X, y)
    torch.manual_seed(r)                  # different inits: DDP must broadcast rank 0's
    model = DDP(_mlp(), bucket_cap_mb=0.001)     # two buckets of about 1 KB and 8 KB
    assert len(model._buckets) >= 2
    init = [p.detach().clone() for p in model.module.parameters()]
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loader = DataLoader(ds, batch_size=32, sampler=DistributedSampler(ds, shuffle=False))
    crit = nn.CrossEntropyLoss()
    step = 0
    while step < 50:
        for xb, yb in loader:
            opt.zero_grad()
            crit(model(xb), yb).backward()
            opt.step()
            step += 1
            if step == 50:
                break
    got = [p.detach().cpu().numpy() for p in model.module.parameters()]
    every = [torch.empty((n,) + p.shape) for p in got]
    for e, p in zip(every, got):
        dist.all_gather_into_tensor(e, torch.tensor(p))
        assert np.array_equal(e[0].cpu().numpy(), e[1].cpu().numpy()), "replicas differ"
    if r == 0:
        _single_process_reference(ds, init, got, crit)
    ddp_features(X, y, crit)


def _single_process_reference(ds, init, got, crit):
    """The same 50 steps in one process on batches of 64 give the same parameters."""
    from tgrad.utils.data import DataLoader
    ref = _mlp()
    with torch.no_grad():
        for p, q in zip(ref.parameters(), init):
            p.copy_(q)
    opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    step = 0
    while step < 50:
        for xb, yb in DataLoader(ds, batch_size=64):
            opt.zero_grad()
            crit(ref(xb), yb).backward()
            opt.step()
            step += 1
            if step == 50:
                break
    for p, q in zip(got, ref.parameters()):
        diff = np.abs(p - q.detach().cpu().numpy()).max()
        assert np.allclose(p, q.detach().cpu().numpy(), rtol=1e-6, atol=1e-6), f"DDP vs one process: max diff {diff}"
    print(f"rank 0 ddp-vs-single max abs diff "
          f"{max(np.abs(p - q.detach().cpu().numpy()).max() for p, q in zip(got, ref.parameters())):.3g}")


def ddp_features(X, y, crit):
    from tgrad.nn.parallel import DistributedDataParallel as DDP
    r, n = dist.get_rank(), dist.get_world_size()
    model = DDP(_mlp())
    # module attribute and PyTorch's state_dict keys
    assert isinstance(model.module, nn.Sequential)
    assert list(model.state_dict()) == ["module." + k for k in model.module.state_dict()]

    # no_sync: two local backward passes accumulate, the third (synced) averages the accumulated sum
    xs = [X[64 * i + 32 * r:64 * i + 32 * r + 32] for i in range(3)]
    ys = [y[64 * i + 32 * r:64 * i + 32 * r + 32] for i in range(3)]
    model.zero_grad()
    with model.no_sync():
        for i in range(2):
            crit(model(xs[i]), ys[i]).backward()
    local = [p.grad.cpu().numpy().copy() for p in model.parameters()]
    crit(model(xs[2]), ys[2]).backward()
    model2 = _mlp()
    model2.load_state_dict(model.module.state_dict())
    for i in range(3):
        for k in range(n):
            xk = X[64 * i + 32 * k:64 * i + 32 * k + 32]
            yk = y[64 * i + 32 * k:64 * i + 32 * k + 32]
            (crit(model2(xk), yk) / n).backward()
    for p, q, loc in zip(model.parameters(), model2.parameters(), local):
        assert np.allclose(p.grad.cpu().numpy(), q.grad.cpu().numpy(), rtol=1e-5, atol=1e-6)
    gathered = torch.empty((n,) + tuple(local[0].shape))
    dist.all_gather_into_tensor(gathered, torch.tensor(local[0]))
    assert not np.array_equal(gathered[0].cpu().numpy(), gathered[1].cpu().numpy()), "no_sync must not average"

    # frozen parameters: no gradient, no bucket; the others are averaged
    net = _mlp()
    net[0].requires_grad_(False)
    model = DDP(net)
    assert sum(len(b.params) for b in model._buckets) == 2
    crit(model(xs[0]), ys[0]).backward()
    assert net[0].weight.grad is None and net[2].weight.grad is not None

    # an unused parameter: PyTorch's error at the next forward, naming its indices
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(64, 10), nn.Linear(64, 10)

        def forward(self, x):
            return self.a(x)
    model = DDP(Two())
    crit(model(xs[0]), ys[0]).backward()
    try:
        model(xs[0])
        raise AssertionError("an unused parameter must raise")
    except RuntimeError as e:
        s = str(e)
        assert s.startswith("Expected to have finished reduction in the prior iteration before starting a new "
                            "one. This error indicates that your module has parameters that were not used in "
                            "producing loss. You can enable unused parameter detection by passing the keyword "
                            "argument `find_unused_parameters=True`"), s
        assert f"Parameter indices which did not receive grad for rank {r}: 2 3\n" in s, s
    # ... and with find_unused_parameters=True the used ones are averaged, the unused keep no gradient
    two = Two()
    model = DDP(two, find_unused_parameters=True)
    for _ in range(2):
        model.zero_grad()
        crit(model(xs[r]), ys[r]).backward()
    assert two.b.weight.grad is None
    g = torch.empty((n, 10, 64))
    dist.all_gather_into_tensor(g, two.a.weight.grad.contiguous())
    assert np.array_equal(g[0].cpu().numpy(), g[1].cpu().numpy())
    try:
        DDP(nn.Linear(2, 2).requires_grad_(False))
        raise AssertionError("no trainable parameter must raise")
    except RuntimeError as e:
        assert "doesn't have any parameter that requires a gradient" in str(e)


def kill():
    """Rank 1 is killed (SIGKILL) in the middle of training; rank 0 must stop with an error naming it."""
    from tgrad.nn.parallel import DistributedDataParallel as DDP
    r = dist.get_rank()
    model = DDP(_mlp())
    x, y = torch.randn(8, 64), torch.randint(0, 10, (8,))
    try:
        for step in range(1000):
            if r == 1 and step == 3:
                print(f"rank 1 kills itself at {time.time()}", flush=True)
                os.kill(os.getpid(), 9)
            nn.functional.cross_entropy(model(x), y).backward()
    except dist.DistBackendError:
        print(f"rank 0 stops at {time.time()}", flush=True)
        raise
    print("rank", r, "trained past a dead rank", flush=True)


def raise_():
    """Rank 0 raises; rank 1 must stop with an error naming rank 0."""
    r = dist.get_rank()
    t = torch.ones(3)
    dist.all_reduce(t)
    if r == 0:
        raise ValueError("boom on rank 0")
    for _ in range(100):
        dist.all_reduce(t)
        time.sleep(0.1)


def timeout():
    """Rank 1 stalls without dying; rank 0 must give up after init_process_group(timeout=...)."""
    r = dist.get_rank()
    if r == 1:
        time.sleep(8)
    t0 = time.monotonic()
    try:
        dist.all_reduce(torch.ones(3))
    except dist.DistBackendError as e:
        print(f"rank {r} timed out after {time.monotonic() - t0:.1f} s: {e}", flush=True)
        os._exit(3)


def nccl():
    """What this machine can check of the NCCL backend: the library, its version, the id exchange over MPI."""
    from tgrad.distributed import _nccl
    r = dist.get_rank()
    v = _nccl.version()
    assert v >= 21800, v
    uid = _nccl.exchange_unique_id(dist.distributed_c10d._World.pg._backend)
    raw = np.frombuffer(bytes(uid), np.uint8).astype(np.int64)      # the whole 128-byte struct
    every = torch.empty((2, 128), dtype=torch.int64)
    dist.all_gather_into_tensor(every, torch.tensor(raw))
    assert np.array_equal(every[0].cpu().numpy(), every[1].cpu().numpy()) and raw.any(), "ranks got different NCCL ids"
    try:
        dist.destroy_process_group()
        dist.init_process_group("nccl")
        raise AssertionError("nccl without a GPU must raise")
    except RuntimeError as e:
        assert "ProcessGroupNCCL is only supported with GPUs, no GPUs found!" in str(e), str(e)
    dist.init_process_group("mpi")
    print(f"rank {r} nccl version {v}", flush=True)


def syncbn():
    """SyncBatchNorm on each rank's half of a batch == BatchNorm2d on the whole batch: outputs, input gradients,
    the summed weight/bias gradients and the running statistics (float64, allclose 1e-12)."""
    def close(got, want, what):
        got, want = got.detach().numpy(), want.detach().numpy()
        assert np.allclose(got, want, rtol=1e-12, atol=1e-12), f"{what}: got {got.tolist()} want {want.tolist()}"

    r, n = dist.get_rank(), dist.get_world_size()
    g = torch.Generator().manual_seed(5)
    full = torch.randn(4 * n, 3, 5, 5, generator=g, dtype=torch.float64) * 2 + 1
    c = torch.randn(4 * n, 3, 5, 5, generator=g, dtype=torch.float64)
    ref = torch.nn.BatchNorm2d(3, momentum=0.3).double()
    xf = full.clone().requires_grad_()
    (ref(xf) * c).sum().backward()
    bn = torch.nn.SyncBatchNorm.convert_sync_batchnorm(torch.nn.Sequential(torch.nn.BatchNorm2d(3, momentum=0.3)))
    bn = bn.double()
    assert type(bn[0]).__name__ == "SyncBatchNorm"
    rows = slice(4 * r, 4 * r + 4)
    x = full[rows].clone().requires_grad_()
    y = bn(x)
    (y * c[rows]).sum().backward()
    with torch.no_grad():
        want = torch.nn.functional.batch_norm(full, None, None, ref.weight, ref.bias, True, 0.0, ref.eps)[rows]
    close(y, want, "syncbn output")
    close(x.grad, xf.grad[rows], "syncbn input grad")
    gw, gb = bn[0].weight.grad.clone(), bn[0].bias.grad.clone()
    dist.all_reduce(gw)
    dist.all_reduce(gb)
    close(gw, ref.weight.grad, "syncbn weight grad")
    close(gb, ref.bias.grad, "syncbn bias grad")
    close(bn[0].running_mean, ref.running_mean, "syncbn running_mean")
    close(bn[0].running_var, ref.running_var, "syncbn running_var")
    assert bn[0].num_batches_tracked.item() == 1
    bn.eval()
    close(bn(x), ref.eval()(full)[rows], "syncbn eval")


if __name__ == "__main__":
    scenario = sys.argv[1]
    kw = {"timeout": timedelta(seconds=float(sys.argv[2]))} if len(sys.argv) > 2 else {}
    dist.init_process_group("mpi", **kw)
    {"collectives": collectives, "ddp": ddp, "kill": kill, "raise": raise_, "timeout": timeout,
     "nccl": nccl, "syncbn": syncbn}[scenario]()
    print(f"rank {dist.get_rank()} ok {scenario}", flush=True)
    dist.destroy_process_group()
