"""OpInfos for the fused recurrent cells (``lstm_cell``, ``gru_cell``) and the whole-layer ``lstm_layer``,
``gru_layer`` and ``rnn_layer`` against numpy references."""
import numpy as np

from tgrad import dtypes as D
from tgrad.autograd import dispatch

from ..opinfo import OpInfo, SampleInput

FLOATS = (D.float32, D.float64, D.float16, D.bfloat16)
LOW = {"float16": (3e-3, 3e-3), "bfloat16": (3e-2, 2e-2)}


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _lstm_ref(ig, hg, cx):
    i, f, g, o = np.split(ig + hg, 4, axis=1)
    cy = _sigmoid(f) * cx + _sigmoid(i) * np.tanh(g)
    return _sigmoid(o) * np.tanh(cy), cy


def _gru_ref(ig, hg, hx):
    ir, iz, in_ = np.split(ig, 3, axis=1)
    hr, hz, hn = np.split(hg, 3, axis=1)
    r, z = _sigmoid(ir + hr), _sigmoid(iz + hz)
    n = np.tanh(in_ + r * hn)
    return (1 - z) * n + z * hx


def _samples(G):
    def samples(rng):
        out = []
        for (B, H), grad in [((3, 4), True), ((1, 1), True), ((2, 3), True), ((5, 33), False), ((0, 4), False),
                             ((64, 40), False)]:
            out.append(SampleInput(rng.normal(size=(B, G * H)), rng.normal(size=(B, G * H)) * 2,
                                   rng.normal(size=(B, H)), grad=grad))
        return out
    return samples


def _lstm_layer_ref(gi, w, b, h, c, batch_first=False, reverse=False):
    if batch_first:
        gi = gi.swapaxes(0, 1)
    ys = [None] * gi.shape[0]
    for t in (reversed(range(len(ys))) if reverse else range(len(ys))):
        h, c = _lstm_ref(gi[t], h @ w.T + (0 if b is None else b), c)
        ys[t] = h
    y = np.stack(ys, 1 if batch_first else 0) if ys else np.zeros((0,) + h.shape)
    return (y.swapaxes(0, 1) if batch_first and not ys else y), h, c


def _lstm_layer_samples(rng):
    n = rng.normal
    out = []
    for T, B, H, b, kw, grad in [(3, 2, 2, True, {}, True), (4, 3, 3, True, {"reverse": True}, True),
                                 (3, 2, 2, False, {"batch_first": True}, True),
                                 (2, 1, 1, True, {"batch_first": True, "reverse": True}, True),
                                 (5, 20, 33, True, {}, False), (1, 3, 4, True, {}, False), (0, 2, 3, True, {}, False),
                                 (3, 40, 17, True, {"batch_first": True}, False)]:
        gi = n(size=(B, T, 4 * H) if kw.get("batch_first") else (T, B, 4 * H))
        out.append(SampleInput(gi, n(size=(4 * H, H)) * 0.5, n(size=(4 * H,)) if b else None, n(size=(B, H)),
                               n(size=(B, H)), grad=grad, **kw))
    return out


def _single_layer_ref(step):
    """numpy reference of a single-state layer op whose step is step(gi_t, hg_t, h) -> h."""
    def ref(gi, w, b, h, batch_first=False, reverse=False, **kw):
        if batch_first:
            gi = gi.swapaxes(0, 1)
        ys = [None] * gi.shape[0]
        for t in (reversed(range(len(ys))) if reverse else range(len(ys))):
            h = step(gi[t], h @ w.T + (0 if b is None else b), h, **kw)
            ys[t] = h
        y = np.stack(ys, 1 if batch_first else 0) if ys else np.zeros((0,) + h.shape)
        return (y.swapaxes(0, 1) if batch_first and not ys else y), h
    return ref


def _rnn_step(ig, hg, h, nonlinearity="tanh"):
    return np.tanh(ig + hg) if nonlinearity == "tanh" else np.maximum(ig + hg, 0)


def _single_layer_samples(G, kws):
    def samples(rng):
        n = rng.normal
        out = []
        for T, B, H, b, kw, grad in [(3, 2, 2, True, {}, True), (4, 3, 3, True, {"reverse": True}, True),
                                     (3, 2, 2, False, {"batch_first": True}, True),
                                     (2, 1, 1, True, {"batch_first": True, "reverse": True}, True),
                                     (5, 20, 33, True, {}, False), (1, 3, 4, True, {}, False),
                                     (0, 2, 3, True, {}, False), (3, 40, 17, True, {"batch_first": True}, False)]:
            for extra in kws:
                k = dict(kw, **extra)
                gi = n(size=(B, T, G * H) if k.get("batch_first") else (T, B, G * H))
                w = n(size=(G * H, H)) * 0.5 / H ** 0.5        # (relu: no growth over the steps)
                out.append(SampleInput(gi, w, n(size=(G * H,)) if b else None,
                                       n(size=(B, H)), grad=grad, **k))
        return out
    return samples


OPS = [
    OpInfo("lstm_layer", lambda *a, **k: dispatch.call("lstm_layer", *a, **k)[:3], _lstm_layer_ref,
           _lstm_layer_samples, dtypes=FLOATS, tol={"float16": (3e-3, 3e-3), "bfloat16": (4e-2, 3e-2)},
           covers=("lstm_layer_backward",)),
    OpInfo("gru_layer", lambda *a, **k: dispatch.call("gru_layer", *a, **k)[:2],
           _single_layer_ref(lambda ig, hg, h: _gru_ref(ig, hg, h)), _single_layer_samples(3, ({},)), dtypes=FLOATS,
           tol={"float16": (3e-3, 3e-3), "bfloat16": (4e-2, 3e-2)}, covers=("gru_layer_backward",)),
    OpInfo("rnn_layer", lambda *a, **k: dispatch.call("rnn_layer", *a, **k), _single_layer_ref(_rnn_step),
           _single_layer_samples(1, ({}, {"nonlinearity": "relu"})), dtypes=FLOATS,
           tol={"float16": (3e-3, 3e-3), "bfloat16": (4e-2, 3e-2)}, covers=("rnn_layer_backward",)),
    OpInfo("lstm_cell", lambda *a: dispatch.call("lstm_cell", *a), _lstm_ref, _samples(4), dtypes=FLOATS, tol=LOW,
           covers=("lstm_cell_backward",)),
    OpInfo("gru_cell", lambda *a: dispatch.call("gru_cell", *a), _gru_ref, _samples(3), dtypes=FLOATS, tol=LOW,
           covers=("gru_cell_backward",)),
]
