"""Seed 003's linear regression: y = 1 + 2x + noise, fitted by gradient descent, by hand and with optim.SGD.

    python examples/linear_regression.py           # 1000 epochs each, as in the seed
    python examples/linear_regression.py --fast    # 300 epochs each (CI)

The data is the tutorial's the seed quotes (numpy seed 42, 80 training points
of x ~ U(0, 1)).  Both loops start from the same random b and w and must end
at the same values up to float32 rounding (the SGD step is the manual update
as one fused multiply-add, as in PyTorch), near the least-squares fit
b = 1.0235, w = 1.9690.
"""
import argparse

import numpy as np

import tgrad as torch
from tgrad import optim


def data(device):
    np.random.seed(42)
    x = np.random.rand(100, 1)
    y = 1 + 2 * x + .1 * np.random.randn(100, 1)
    idx = np.arange(100)
    np.random.shuffle(idx)
    x_train, y_train = x[idx[:80]], y[idx[:80]]
    return (torch.as_tensor(x_train).float().to(device), torch.as_tensor(y_train).float().to(device),
            x_train, y_train)


def init(device):
    torch.manual_seed(42)
    b = torch.randn(1, requires_grad=True, dtype=torch.float, device=device)
    w = torch.randn(1, requires_grad=True, dtype=torch.float, device=device)
    return b, w


def train_by_hand(x_train_tensor, y_train_tensor, lr, n_epochs, device):
    b, w = init(device)
    for epoch in range(n_epochs):
        yhat = b + w * x_train_tensor
        error = (yhat - y_train_tensor)
        loss = (error ** 2).mean()
        loss.backward()
        with torch.no_grad():
            b -= lr * b.grad
            w -= lr * w.grad
        b.grad.zero_()
        w.grad.zero_()
    return b, w


def train_with_sgd(x_train_tensor, y_train_tensor, lr, n_epochs, device):
    b, w = init(device)
    optimizer = optim.SGD([b, w], lr=lr)
    for epoch in range(n_epochs):
        yhat = b + w * x_train_tensor
        error = (yhat - y_train_tensor)
        loss = (error ** 2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return b, w


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fast", action="store_true", help="300 epochs instead of 1000")
    args = p.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    n_epochs = 300 if args.fast else 1000
    x_t, y_t, x_np, y_np = data(device)
    b1, w1 = train_by_hand(x_t, y_t, 0.1, n_epochs, device)
    print("by hand:  ", b1, w1)
    b2, w2 = train_with_sgd(x_t, y_t, 0.1, n_epochs, device)
    print("optim.SGD:", b2, w2)
    w_ls, b_ls = np.polyfit(x_np[:, 0], y_np[:, 0], 1)
    print(f"least squares: b = {b_ls:.4f}, w = {w_ls:.4f}")
    tol = 0.05 if args.fast else 0.002
    for b, w in ((b1, w1), (b2, w2)):
        assert abs(b.item() - b_ls) < tol and abs(w.item() - w_ls) < tol, (b.item(), w.item())
        assert abs(b.item() - 1) < 0.1 and abs(w.item() - 2) < 0.1
    # the same run up to rounding: optim.SGD's step is one fma (param.add_(grad, alpha=-lr), as PyTorch's cpu
    # kernel), the manual b -= lr * b.grad rounds twice
    assert abs(b1.item() - b2.item()) < 1e-5 and abs(w1.item() - w2.item()) < 1e-5, (b1, b2, w1, w2)
    return b2.item(), w2.item()


if __name__ == "__main__":
    main()
