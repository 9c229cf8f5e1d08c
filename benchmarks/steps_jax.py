"""Steps (a)-(e) of benchmarks/steps.py in JAX, each a ``jax.jit`` of the whole training step: the peer
issue 18 names for ``tgrad.compile``.

``build(name)`` returns ``step()``: forward, gradient and the optimizer update of the same model, loss,
optimizer and numpy data as steps.py's (same shapes; weights drawn from numpy, so losses differ from the
PyTorch/tgrad rows), returning the loss after ``block_until_ready``. Needs ``jax`` (a separate venv:
``--jax-python``); tgrad never imports it.
"""
import numpy as np


def _mlp_params(rng, sizes):
    ps = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        bound = 1 / np.sqrt(n_in)
        ps.append((rng.uniform(-bound, bound, (n_out, n_in)).astype(np.float32),
                   rng.uniform(-bound, bound, n_out).astype(np.float32)))
    return ps


def _classifier(jax, jnp, sizes, x, y, loss, adam):
    rng = np.random.default_rng(1)
    params = [tuple(jnp.asarray(a) for a in p) for p in _mlp_params(rng, sizes)]

    def forward(params, x):
        (w1, b1), (w2, b2) = params
        return jnp.maximum(x @ w1.T + b1, 0) @ w2.T + b2

    def loss_fn(params):
        return loss(forward(params, x), y)

    def zeros():
        return jax.tree_util.tree_map(jnp.zeros_like, params)

    if adam:                                  # torch.optim.Adam(lr=1e-3), PyTorch's update order
        lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8

        def update(params, state):
            m, v, t = state
            value, g = jax.value_and_grad(loss_fn)(params)
            t = t + 1
            m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, g)
            v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, g)
            c1, c2 = 1 - b1 ** t, 1 - b2 ** t
            params = jax.tree_util.tree_map(
                lambda p, m, v: p - (lr / c1) * m / (jnp.sqrt(v) / jnp.sqrt(c2) + eps), params, m, v)
            return value, params, (m, v, t)
        state = (zeros(), zeros(), jnp.zeros((), jnp.float32))
    else:                                     # torch.optim.SGD(lr=0.01, momentum=0.9)
        def update(params, buf):
            value, g = jax.value_and_grad(loss_fn)(params)
            buf = jax.tree_util.tree_map(lambda b, g: 0.9 * b + g, buf, g)
            return value, jax.tree_util.tree_map(lambda p, b: p - 0.01 * b, params, buf), buf
        state = zeros()
    return update, params, state


def build(name):
    import jax
    import jax.numpy as jnp
    rng = np.random.default_rng(0)

    def bce_logits(z, t):
        return jnp.mean(jnp.maximum(z, 0) - z * t + jnp.log1p(jnp.exp(-jnp.abs(z))))

    def cross_entropy(z, t):
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(z), t[:, None], axis=1))

    if name == "a":
        x = rng.standard_normal((10, 8)).astype(np.float32)
        y = rng.integers(0, 2, (10, 4)).astype(np.float32)
        update, params, state = _classifier(jax, jnp, (8, 12, 4), jnp.asarray(x), jnp.asarray(y), bce_logits, False)
    elif name in ("b", "c"):
        if name == "b":
            x = (rng.integers(0, 17, (64, 64)) / 16.0).astype(np.float32)
            y = rng.integers(0, 10, 64)
        else:
            x = rng.random((128, 784), dtype=np.float32)
            y = rng.integers(0, 10, 128)
        sizes = (64, 128, 10) if name == "b" else (784, 256, 10)
        update, params, state = _classifier(jax, jnp, sizes, jnp.asarray(x), jnp.asarray(y.astype(np.int32)),
                                            cross_entropy, name == "c")
    elif name in ("d", "e"):                  # seed 003's regression: one full-batch epoch, plain SGD lr 0.1
        np.random.seed(42)
        xs = np.random.rand(100, 1)
        ys = 1 + 2 * xs + .1 * np.random.randn(100, 1)
        idx = np.arange(100)
        np.random.shuffle(idx)
        x, y = jnp.asarray(xs[idx[:80]], jnp.float32), jnp.asarray(ys[idx[:80]], jnp.float32)
        params = (jnp.asarray(np.random.randn(1), jnp.float32), jnp.asarray(np.random.randn(1), jnp.float32))

        def update(params, state):
            value, g = jax.value_and_grad(lambda p: jnp.mean((p[0] + p[1] * x - y) ** 2))(params)
            return value, (params[0] - 0.1 * g[0], params[1] - 0.1 * g[1]), state
        state = ()
    else:
        raise ValueError(f"unknown step {name!r} (JAX has (a)-(e))")
    update = jax.jit(update, donate_argnums=(0, 1))
    box = [params, state]

    def step():
        value, box[0], box[1] = update(box[0], box[1])
        return value.block_until_ready()
    return step
