"""``tgrad.compile(model)`` in a training loop on cuda (the fake driver): the forward and the backward are each a CUDA
graph once their addresses repeat (a new batch each call and the gradients' blocks cycle through a few sets), a
forward that draws random numbers is launched (new numbers each call), and a backward that regenerates the
forward's dropout (attention) reads that call's draws: launched, never a graph that would repeat one call's.
Bit for bit as eager; the driver reports no bad pointer or missing synchronization."""
import gc
import warnings

import numpy as np
import pytest

import tgrad
from tgrad import nn
import tgrad.nn.functional as F

try:
    import fakecuda
    _FAKE = fakecuda._state["lib"] is not None
except ImportError:
    _FAKE = False

pytestmark = pytest.mark.skipif(not _FAKE, reason="checks the cuda replay's graphs: pytest --device cuda "
                                                  "--cuda-driver fake")


class _Attention(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.qkv, self.proj, self.p = nn.Linear(8, 24), nn.Linear(8, 3), dropout

    def forward(self, x):
        q, k, v = self.qkv(x).view(2, 4, 3, 2, 4).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.p, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(2, 4, 8))


def _model(kind):
    tgrad.manual_seed(0)
    if kind == "attention_dropout":
        return _Attention(0.2)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), *([nn.Dropout(0.3)] if kind == "dropout" else []),
                         nn.Linear(16, 3))


def _train(kind, compiled, steps, snap=None):
    m = _model(kind)
    call = tgrad.compile(m) if compiled else m
    opt = tgrad.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(0)
    shape = (2, 4, 8) if kind == "attention_dropout" else (4, 8)
    tgrad.manual_seed(1)
    losses = []
    for _ in range(steps):
        x = tgrad.tensor(rng.standard_normal(shape).astype(np.float32))
        y = tgrad.tensor(rng.integers(0, 3, shape[:-1]))
        opt.zero_grad()
        loss = F.cross_entropy(call(x).reshape(-1, 3), y.reshape(-1))
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if len(losses) == snap:     # the replays' counts so far
            tr, = [e.run for e in call._call._cache.values()]
            snap = (dict(tr.fwd.stats), dict(tr.bwd.stats))
    return losses, [p.detach().cpu().numpy() for p in m.parameters()], call, snap


@pytest.mark.parametrize("kind", ["plain", "dropout", "attention_dropout"])
def test_compiled_module_training_replays_as_cuda_graphs_where_it_can(kind):
    steps, steady = 24, 6
    gc.collect()        # (an earlier test's garbage freed mid-run would move the blocks' address sets)
    ref = _train(kind, False, steps)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = _train(kind, True, steps, snap=steps - steady)
    assert out[0] == ref[0]
    for a, b in zip(out[1], ref[1]):
        np.testing.assert_array_equal(a, b)
    assert not fakecuda.ERRORS, fakecuda.ERRORS
    tr, = [e.run for e in out[2]._call._cache.values()]
    fwd, bwd = tr.fwd.stats, tr.bwd.stats
    replayed = steps - 2        # call 1 eager, call 2 recorded
    assert fwd["launches"] + fwd["graph"] == replayed and bwd["launches"] + bwd["graph"] == replayed
    # a graph per address set (a new batch and the gradients' blocks cycle through a few): captured when it comes
    # again, then launched as the graph
    graphed = lambda st, st0: st["captures"] == st0["captures"] and st["graph"] == st0["graph"] + steady   # noqa
    if kind == "plain":
        assert tr.fwd.graphable and graphed(fwd, out[3][0])
    else:                       # new numbers each call
        assert not tr.fwd.graphable and fwd["launches"] == replayed
    if kind == "attention_dropout":     # reads its forward's draws
        assert tr.reads_draws and not tr.bwd.graphable and bwd["launches"] == replayed
    else:
        assert not tr.reads_draws and tr.bwd.graphable and graphed(bwd, out[3][1])
