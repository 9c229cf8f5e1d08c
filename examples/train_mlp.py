"""Train an MLP on scikit-learn's digits (8x8 images, bundled: no download) with tgrad, PyTorch-style.

    python examples/train_mlp.py            # 8 epochs, about a minute on 2 cpu cores
    python examples/train_mlp.py --fast     # 3 epochs (CI)
    python examples/train_mlp.py --device cuda

DataLoader (shuffled, batches of 32), an MLP, CrossEntropyLoss, AdamW with a
OneCycleLR schedule, a tqdm progress bar, the held-out accuracy after every
epoch (asserted >= 95% at the end), the loss/accuracy curves saved as a PNG
and a checkpoint saved, reloaded into a fresh model and checked to give the
same predictions.  Needs the ``examples`` extra: scikit-learn, matplotlib, tqdm.
"""
import argparse
import os
import time

import matplotlib
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from tqdm import tqdm

import tgrad as torch
from tgrad import nn, optim
from tgrad.utils.data import DataLoader, TensorDataset

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--fast", action="store_true", help="3 epochs (the CI setting)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-2, help="peak learning rate of the one-cycle schedule")
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--workers", type=int, default=0, help="DataLoader worker processes")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "out"))
    args = p.parse_args(argv)
    if args.fast:
        args.epochs = 3
    return args


def load_data():
    """Stratified 80/20 split of the 1797 digits, features standardized with the training statistics."""
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
    mean, std = X_train.mean(0), X_train.std(0) + 1e-2
    def prep(a):
        return torch.tensor(((a - mean) / std).astype(np.float32))
    return prep(X_train), torch.tensor(y_train), prep(X_test), torch.tensor(y_test)


def make_model(hidden):
    return nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))


def evaluate(model, X, y):
    model.eval()
    with torch.no_grad():
        logits = model(X)
    return (logits.argmax(1) == y).float().mean().item(), logits


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    X_train, y_train, X_test, y_test = load_data()
    X_test, y_test = X_test.to(device), y_test.to(device)
    loader = DataLoader(TensorDataset(X_train, y_train), batch_size=args.batch_size, shuffle=True,
                        num_workers=args.workers)
    model = make_model(args.hidden).to(device)
    print(model)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    scheduler = optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, epochs=args.epochs,
                                              steps_per_epoch=len(loader))
    history = {"loss": [], "acc": []}
    start = time.time()
    for epoch in range(1, args.epochs + 1):
        model.train()
        total, seen = 0.0, 0
        # shown in CI logs too (stderr not a terminal): redrawn at most once a second, the final state kept
        bar = tqdm(loader, desc=f"epoch {epoch}/{args.epochs}", mininterval=1.0)
        for xb, yb in bar:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
            scheduler.step()
            total += loss.item() * len(yb)
            seen += len(yb)
            bar.set_postfix(loss=f"{loss.item():.4f}", lr=f"{scheduler.get_last_lr()[0]:.2e}", refresh=False)
        acc, _ = evaluate(model, X_test, y_test)
        history["loss"].append(total / seen)
        history["acc"].append(acc)
        print(f"epoch {epoch:2d}  train loss {total / seen:.4f}  held-out accuracy {acc:.2%}  "
              f"({time.time() - start:.0f} s)", flush=True)

    os.makedirs(args.out, exist_ok=True)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
    epochs = range(1, args.epochs + 1)
    ax1.plot(epochs, history["loss"], marker="o")
    ax1.set(xlabel="epoch", ylabel="train loss", title="cross-entropy loss")
    ax2.plot(epochs, [100 * a for a in history["acc"]], marker="o", color="tab:green")
    ax2.set(xlabel="epoch", ylabel="held-out accuracy (%)", title="accuracy on 360 held-out digits")
    fig.tight_layout()
    png = os.path.join(args.out, "train_mlp_curves.png")
    fig.savefig(png, dpi=100)
    print(f"curves saved to {png}")

    ckpt = os.path.join(args.out, "train_mlp.safetensors")
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "epoch": args.epochs, "history": history}, ckpt)
    restored = make_model(args.hidden).to(device)
    state = torch.load(ckpt)
    restored.load_state_dict(state["model"])
    acc, logits = evaluate(model, X_test, y_test)
    acc2, logits2 = evaluate(restored, X_test, y_test)
    print(f"checkpoint saved to {ckpt}; reloaded model: held-out accuracy {acc2:.2%}")
    assert acc2 == acc and logits2.equal(logits), "the reloaded model must predict exactly as the trained one"
    assert state["history"] == history and state["epoch"] == args.epochs
    assert acc >= 0.95, f"held-out accuracy {acc:.2%} is below 95%"
    return acc


if __name__ == "__main__":
    main()
