"""Train the digits MLP of train_mlp.py on 2 processes with DistributedDataParallel.

    python -m tgrad.distributed.run --nproc-per-node 2 examples/train_ddp.py          # 8 epochs
    python examples/train_ddp.py --fast        # starts the 2 ranks itself (the launcher above), 3 epochs

Each rank reads its half of the training set (DistributedSampler, reshuffled every epoch with
set_epoch), computes gradients on batches of 32, and DDP averages them across the ranks during
backward, so every optimizer step is the one a single process would take on batches of 64. Rank 0
prints the held-out accuracy every epoch (asserted >= 95% at the end) and saves a checkpoint of
``ddp.module`` (keys without DDP's ``module.`` prefix). Needs the ``distributed`` and ``examples`` extras.
"""
import argparse
import os
import sys
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import tgrad as torch
import tgrad.distributed as dist
from tgrad import nn, optim
from tgrad.nn.parallel import DistributedDataParallel as DDP
from tgrad.utils.data import DataLoader, DistributedSampler, TensorDataset


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--fast", action="store_true", help="3 epochs (the CI setting)")
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--nproc", type=int, default=2, help="ranks to start when run without the launcher")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "out"))
    args = p.parse_args(argv)
    if args.fast:
        args.epochs = 3
    return args


def load_data():
    """train_mlp.py's split: stratified 80/20, standardized with the training statistics."""
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
    mean, std = X_train.mean(0), X_train.std(0) + 1e-2
    def prep(a):
        return torch.tensor(((a - mean) / std).astype(np.float32))
    return prep(X_train), torch.tensor(y_train), prep(X_test), torch.tensor(y_test)


def main(argv=None):
    args = parse_args(argv)
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed + rank)          # different on purpose: DDP starts every rank from rank 0's weights
    X_train, y_train, X_test, y_test = load_data()
    train = TensorDataset(X_train, y_train)
    sampler = DistributedSampler(train, shuffle=True, seed=args.seed)
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler)
    model = DDP(nn.Sequential(nn.Linear(64, args.hidden), nn.ReLU(), nn.Linear(args.hidden, 10)))
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    scheduler = optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, epochs=args.epochs,
                                              steps_per_epoch=len(loader))
    if rank == 0:
        print(f"{world} ranks, {len(sampler)} training samples and {len(loader)} steps per rank and epoch")
    start = time.time()
    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)
        model.train()
        total = torch.zeros(2, dtype=torch.float64)       # (sum of losses, samples) on this rank
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()                 # gradients averaged over the ranks here
            optimizer.step()
            scheduler.step()
            total += torch.tensor([loss.item() * len(yb), len(yb)], dtype=torch.float64)
        dist.all_reduce(total)              # the epoch's mean loss over all ranks
        model.eval()
        with torch.no_grad():
            acc = (model(X_test).argmax(1) == y_test).float().mean().item()
        if rank == 0:
            print(f"epoch {epoch:2d}  train loss {(total[0] / total[1]).item():.4f}  held-out accuracy {acc:.2%}  "
                  f"({time.time() - start:.0f} s)", flush=True)

    # every replica holds the same weights
    w = model.module[0].weight.detach().reshape(-1)
    every = torch.empty(world * w.numel())
    dist.all_gather_into_tensor(every, w.contiguous())
    assert all(every[r * w.numel():(r + 1) * w.numel()].equal(w) for r in range(world)), "replicas differ"
    if rank == 0:
        os.makedirs(args.out, exist_ok=True)
        ckpt = os.path.join(args.out, "train_ddp.safetensors")
        torch.save(model.module.state_dict(), ckpt)       # not model.state_dict(): its keys start with "module."
        print(f"replicas identical; checkpoint of model.module saved to {ckpt}")
        assert acc >= 0.95, f"held-out accuracy {acc:.2%} is below 95%"
    dist.destroy_process_group()
    return acc


if __name__ == "__main__":
    if "OMPI_COMM_WORLD_SIZE" not in os.environ:     # not started by the launcher: start the ranks
        nproc = parse_args(sys.argv[1:]).nproc
        from tgrad.distributed.run import main as run
        sys.exit(run(["--nproc-per-node", str(nproc), os.path.abspath(__file__)] + sys.argv[1:]))
    main()
