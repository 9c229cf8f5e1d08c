"""Train a small CNN on scikit-learn's digits (8x8 images, bundled: no download) with tgrad, PyTorch-style.

    python examples/train_cnn.py               # 10 epochs
    python examples/train_cnn.py --fast        # 3 epochs (CI)
    python examples/train_cnn.py --torch       # the same script on PyTorch (if installed), for comparison

Conv2d -> BatchNorm2d -> ReLU -> MaxPool2d twice, then Dropout and a Linear classifier;
CrossEntropyLoss, AdamW with a OneCycleLR schedule, a tqdm progress bar, the held-out
accuracy after every epoch (asserted >= 98% at the end; >= 95% with --fast), the mean
training step time, and the loss/accuracy curves saved as a PNG.  Needs the ``examples``
extra: scikit-learn, matplotlib, tqdm.
"""
import argparse
import importlib
import os
import sys
import time

import matplotlib
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from tqdm import tqdm

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

torch = nn = optim = DataLoader = TensorDataset = None


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--fast", action="store_true", help="3 epochs (the CI setting)")
    p.add_argument("--torch", action="store_true", help="run on PyTorch instead of tgrad (timing comparison)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-2, help="peak learning rate of the one-cycle schedule")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "out"))
    args = p.parse_args(argv)
    if args.fast:
        args.epochs = 3
    return args


def import_framework(use_torch):
    """``import tgrad as torch`` (or the real one with --torch): the rest of the script is the same."""
    global torch, nn, optim, DataLoader, TensorDataset
    torch = importlib.import_module("torch" if use_torch else "tgrad")
    nn, optim = torch.nn, torch.optim
    data = importlib.import_module(torch.__name__ + ".utils.data")
    DataLoader, TensorDataset = data.DataLoader, data.TensorDataset


def load_data():
    """Stratified 80/20 split of the 1797 digits as (N, 1, 8, 8) images scaled to [0, 1], then centred."""
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
    mean, std = (X_train / 16).mean(), (X_train / 16).std()
    def prep(a):
        return torch.tensor(((a / 16 - mean) / std).astype(np.float32).reshape(-1, 1, 8, 8))
    return prep(X_train), torch.tensor(y_train), prep(X_test), torch.tensor(y_test)


def make_model():
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),     # 16 x 4 x 4
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),    # 32 x 2 x 2
        nn.Flatten(), nn.Dropout(0.25), nn.Linear(32 * 2 * 2, 10))


def evaluate(model, X, y):
    model.eval()
    with torch.no_grad():
        logits = model(X)
    return (logits.argmax(1) == y).float().mean().item()


def main(argv=None):
    args = parse_args(argv)
    import_framework(args.torch)
    name = "PyTorch" if args.torch else "tgrad"
    torch.manual_seed(args.seed)
    X_train, y_train, X_test, y_test = load_data()
    loader = DataLoader(TensorDataset(X_train, y_train), batch_size=args.batch_size, shuffle=True)
    model = make_model()
    print(model)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    scheduler = optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, epochs=args.epochs,
                                              steps_per_epoch=len(loader))
    history = {"loss": [], "acc": []}
    step_times = []
    start = time.time()
    for epoch in range(1, args.epochs + 1):
        model.train()
        total, seen = 0.0, 0
        # shown in CI logs too (stderr not a terminal): redrawn at most once a second, the final state kept
        bar = tqdm(loader, desc=f"epoch {epoch}/{args.epochs}", mininterval=1.0)
        for xb, yb in bar:
            t0 = time.perf_counter()
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
            scheduler.step()
            lv = loss.item()
            step_times.append(time.perf_counter() - t0)
            total += lv * len(yb)
            seen += len(yb)
            bar.set_postfix(loss=f"{lv:.4f}", lr=f"{scheduler.get_last_lr()[0]:.2e}", refresh=False)
        acc = evaluate(model, X_test, y_test)
        history["loss"].append(total / seen)
        history["acc"].append(acc)
        print(f"epoch {epoch:2d}  train loss {total / seen:.4f}  held-out accuracy {acc:.2%}  "
              f"({time.time() - start:.0f} s)", flush=True)
    steady = step_times[len(loader):] or step_times     # the first epoch compiles and records kernels
    print(f"{name}: mean training step {1000 * float(np.mean(steady)):.2f} ms "
          f"(median {1000 * float(np.median(steady)):.2f} ms, batch {args.batch_size}, after epoch 1)")

    os.makedirs(args.out, exist_ok=True)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
    epochs = range(1, args.epochs + 1)
    ax1.plot(epochs, history["loss"], marker="o")
    ax1.set(xlabel="epoch", ylabel="train loss", title="cross-entropy loss")
    ax2.plot(epochs, [100 * a for a in history["acc"]], marker="o", color="tab:green")
    ax2.set(xlabel="epoch", ylabel="held-out accuracy (%)", title="accuracy on 360 held-out digits")
    fig.tight_layout()
    png = os.path.join(args.out, "train_cnn_curves.png")
    fig.savefig(png, dpi=100)
    print(f"curves saved to {png}")
    target = 0.95 if args.fast else 0.98
    assert acc >= target, f"held-out accuracy {acc:.2%} is below {target:.0%}"
    return acc


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
