"""OpInfos for the fused recurrent cells (``lstm_cell``, ``gru_cell``) against numpy references."""
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


OPS = [
    OpInfo("lstm_cell", lambda *a: dispatch.call("lstm_cell", *a), _lstm_ref, _samples(4), dtypes=FLOATS, tol=LOW,
           covers=("lstm_cell_backward",)),
    OpInfo("gru_cell", lambda *a: dispatch.call("gru_cell", *a), _gru_ref, _samples(3), dtypes=FLOATS, tol=LOW,
           covers=("gru_cell_backward",)),
]
