"""Fine-tune only the head of a trained MLP: freeze the body with requires_grad_(False).

    python examples/freeze_layers.py           # 4 + 4 epochs
    python examples/freeze_layers.py --fast    # 2 + 2 epochs (CI)

An MLP is trained on the digits; its head (the last Linear) is then
re-initialized and trained again with the body frozen by
``requires_grad_(False)``.  The optimizer is given *all* parameters: the
frozen ones get no gradient, so the fused step skips them (no state, no
update).  Checked: the frozen weights are bit-for-bit unchanged and have no
optimizer state, and the re-trained head reaches >= 95% held-out accuracy.
"""
import argparse

import tgrad as torch
from tgrad import nn, optim
from tgrad.utils.data import DataLoader, TensorDataset
from train_mlp import evaluate, load_data


def fit(model, loader, optimizer, epochs, X_test, y_test, label):
    criterion = nn.CrossEntropyLoss()
    for epoch in range(1, epochs + 1):
        model.train()
        for xb, yb in loader:
            optimizer.zero_grad()
            criterion(model(xb), yb).backward()
            optimizer.step()
        acc, _ = evaluate(model, X_test, y_test)
        print(f"{label} epoch {epoch}: held-out accuracy {acc:.2%}", flush=True)
    return acc


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fast", action="store_true", help="2 + 2 epochs")
    args = p.parse_args(argv)
    epochs = 2 if args.fast else 4
    torch.manual_seed(0)
    X_train, y_train, X_test, y_test = load_data()

    loader = DataLoader(TensorDataset(X_train, y_train), batch_size=32, shuffle=True)

    # 1. train the whole MLP
    body = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU())
    head = nn.Linear(128, 10)
    model = nn.Sequential(body, head)
    fit(model, loader, optim.AdamW(model.parameters(), lr=3e-3), epochs, X_test, y_test, "train all")

    # 2. fresh head, frozen body; the optimizer still gets every parameter
    head.reset_parameters()
    body.requires_grad_(False)
    frozen = {name: p.detach().numpy().copy() for name, p in body.named_parameters()}
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    print(f"trainable parameters: {trainable} of {sum(p.numel() for p in model.parameters())}")
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    acc = fit(model, loader, optimizer, epochs, X_test, y_test, "fine-tune head")

    for name, p in body.named_parameters():
        assert p.detach().numpy().tobytes() == frozen[name].tobytes(), f"frozen {name} changed"
        assert p.grad is None and p not in optimizer.state, f"frozen {name} was touched by the optimizer"
    assert all("momentum_buffer" in optimizer.state[p] for p in head.parameters())
    print("frozen body: bit-for-bit unchanged, no gradients, no optimizer state")
    assert acc >= 0.95, f"held-out accuracy {acc:.2%} is below 95%"
    return acc


if __name__ == "__main__":
    main()
