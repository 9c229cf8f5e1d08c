"""The training steps of issues 6 and 18, written once against a ``torch``-like module.

``build(name, torch)`` returns ``step()``: one training step of (a)-(c), or one
epoch of (d), written with the public API exactly as a PyTorch user would.
``torch`` is ``tgrad`` (``import tgrad as torch``) or the real PyTorch (in a
separate process). Data are numpy-generated, so both sides see the same values.

- a: seed 000's MLP 8->12->4, batch 10, BCE-with-logits
- b: MLP 64->128->10, batch 64, cross-entropy, digits-shaped data (8x8 images, 0..16)
- c: MLP 784->256->10, batch 128, cross-entropy (MNIST-shaped)
- d: seed 003's linear regression, yhat = b + w * x over 80 points, the manual update
  ``b.sub_(lr * b.grad)`` under ``no_grad`` (lr=0.1); a run is 1000 epochs (``EPOCHS``)
- e: the same with ``optim.SGD(lr=0.1)``
"""
import numpy as np

NAMES = ("a", "b", "c", "d", "e")
DESCRIPTION = {
    "a": "MLP 8-12-4, batch 10, BCE-with-logits",
    "b": "MLP 64-128-10, batch 64, cross-entropy",
    "c": "MLP 784-256-10, batch 128, cross-entropy",
    "d": "linear regression, manual update, 1 epoch",
    "e": "linear regression, optim.SGD, 1 epoch",
}
EPOCHS = 1000


def _mlp(torch, n_in, hidden, n_out):
    nn = torch.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.hidden = nn.Linear(n_in, hidden)
            self.act = nn.ReLU()
            self.output = nn.Linear(hidden, n_out)

        def forward(self, x):
            return self.output(self.act(self.hidden(x)))
    return MLP()


def _classifier_step(torch, model, x, y, loss_fn):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss
    return step


def build(name, torch):
    """``step()`` of training step ``name`` ("a".."e") on the module ``torch``."""
    F = torch.nn.functional
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    if name == "a":
        x = torch.tensor(rng.standard_normal((10, 8)).astype(np.float32))
        y = torch.tensor(rng.integers(0, 2, (10, 4)).astype(np.float32))
        return _classifier_step(torch, _mlp(torch, 8, 12, 4), x, y, F.binary_cross_entropy_with_logits)
    if name == "b":
        x = torch.tensor((rng.integers(0, 17, (64, 64)) / 16.0).astype(np.float32))
        y = torch.tensor(rng.integers(0, 10, 64))
        return _classifier_step(torch, _mlp(torch, 64, 128, 10), x, y, F.cross_entropy)
    if name == "c":
        x = torch.tensor(rng.random((128, 784), dtype=np.float32))
        y = torch.tensor(rng.integers(0, 10, 128))
        return _classifier_step(torch, _mlp(torch, 784, 256, 10), x, y, F.cross_entropy)
    if name in ("d", "e"):
        np.random.seed(42)
        xs = np.random.rand(100, 1)
        ys = 1 + 2 * xs + .1 * np.random.randn(100, 1)
        idx = np.arange(100)
        np.random.shuffle(idx)
        x_train = torch.as_tensor(xs[idx[:80]]).float()
        y_train = torch.as_tensor(ys[idx[:80]]).float()
        torch.manual_seed(42)
        b = torch.randn(1, requires_grad=True, dtype=torch.float)
        w = torch.randn(1, requires_grad=True, dtype=torch.float)
        lr = 0.1
        optimizer = torch.optim.SGD([b, w], lr=lr)

        def step():
            yhat = b + w * x_train
            loss = ((yhat - y_train) ** 2).mean()
            loss.backward()
            if name == "e":
                optimizer.step()
                optimizer.zero_grad()
                return loss
            with torch.no_grad():
                b.sub_(lr * b.grad)         # seed 003's b -= lr * b.grad, in a function
                w.sub_(lr * w.grad)
            b.grad.zero_()
            w.grad.zero_()
            return loss
        step.params = (b, w)
        return step
    raise ValueError(f"unknown step {name!r}")
