"""OpInfos for the ops on kernels/nn.py: dropout, embedding, embedding_bag, one_hot, pad, normalize,
cosine_similarity."""
import numpy as np

from tgrad import dtypes as D
from tgrad.autograd import dispatch
from tgrad.random import default_generator_for

from ..opinfo import OpInfo, SampleInput
from ._common import FLOATS, LOW, Idx, call, np_args


def _normalize_ref(x, p=2.0, dim=1, eps=1e-12):
    n = np.max(np.abs(x), axis=dim, keepdims=True) if p == float("inf") else \
        np.sum(np.abs(x) ** p, axis=dim, keepdims=True) ** (1 / p)
    return x / np.maximum(n, eps)


def _cosine_ref(a, b, dim=1, eps=1e-8):
    a, b = np.broadcast_arrays(a, b)
    na = np.maximum(np.sqrt((a * a).sum(dim)), eps)
    nb = np.maximum(np.sqrt((b * b).sum(dim)), eps)
    return (a * b).sum(dim) / (na * nb)


def _pad_ref(x, pad, value=0.0):
    width = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        width[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    return np.pad(x, width, constant_values=value)


def _emb_samples(rng):
    return [SampleInput(rng.normal(size=(10, 3)), Idx([[1, 2, 1], [9, 0, 1]])),
            SampleInput(rng.normal(size=(5, 4)), Idx([4, 4, 0])),
            SampleInput(rng.normal(size=(33, 7)), Idx(rng.integers(0, 33, 20)), grad=False)]


def _bag_ref(w, idx, off, psw=None, mode=0, padding_idx=None, include_last_offset=False, **_):
    """Each bag's rows of w: sum (times psw), mean or max; empty bags 0; rows at padding_idx left out."""
    ends = list(off[1:]) + ([] if include_last_offset else [len(idx)])
    out = np.zeros((len(ends), w.shape[1]))
    for b, (s, e) in enumerate(zip(off, ends)):
        sel = [i for i in range(s, e) if padding_idx is None or idx[i] != padding_idx % w.shape[0]]
        if sel:
            rows = w[idx[sel]] * (psw[sel][:, None] if psw is not None else 1)
            out[b] = rows.max(0) if mode == 2 else rows.sum(0) / (len(sel) if mode == 1 else 1)
    return out


def _bag(w, i, o, *psw, **k):
    return call("embedding_bag", w, i, o, psw[0] if psw else None, **k)[0]


def _bag_samples(rng):
    idx = Idx([1, 2, 4, 5, 4, 3, 2, 9, 0, 7])
    return [SampleInput(rng.normal(size=(10, 3)), idx, Idx([0, 4, 4, 7]), mode=0),
            SampleInput(rng.normal(size=(10, 3)), idx, Idx([0, 4, 4, 7]), mode=1),
            SampleInput(rng.normal(size=(10, 3)), idx, Idx([0, 1, 6, 10]), mode=2),
            SampleInput(rng.normal(size=(10, 4)), idx, Idx([0, 3, 6]), rng.normal(size=10), mode=0, padding_idx=4),
            SampleInput(rng.normal(size=(10, 2)), idx, Idx([0, 5, 10]), mode=1, padding_idx=-1,
                        include_last_offset=True),
            SampleInput(rng.normal(size=(10, 3)), idx, Idx([0, 2, 2, 9]), mode=2, include_last_offset=True),
            SampleInput(rng.normal(size=(40, 70)), Idx(rng.integers(0, 40, 300)), Idx(np.sort(rng.integers(
                0, 300, 16)) * (np.arange(16) > 0)), rng.normal(size=300), mode=0, grad=False)]


def _dropout_train(x, p):
    """y - x * mask / (1 - p): zero whatever mask the generator drew (and so is the gradient)."""
    y, mask = call("dropout", x, p=p, training=True, **default_generator_for(x.device)._bernoulli_rng(x.numel()))
    return y - x * mask * (1.0 / (1.0 - p))


OPS = [
    OpInfo("dropout", lambda x, **k: call("dropout", x, **k), lambda x, **k: (x, np.ones(x.shape, bool)),
           lambda rng: [SampleInput(rng.normal(size=s), p=p, training=tr)
                        for s, p, tr in [((3, 4), 0.5, False), ((7,), 0.0, True), ((2, 3, 5), 0.3, False)]],
           dtypes=FLOATS),
    OpInfo("dropout_train", _dropout_train, lambda x, **k: np.zeros(x.shape),
           lambda rng: [SampleInput(rng.normal(size=s), p=p) for s, p in [((3, 4), 0.5), ((33,), 0.2), ((2, 3, 5), 0.9)]],
           dtypes=FLOATS, covers=("dropout",)),
    OpInfo("embedding", lambda *a, **k: call("embedding", *a, **k), np_args(lambda w, i, **k: w[i]),
           _emb_samples, dtypes=FLOATS, diff_args=(0,), covers=("embedding_backward",)),
    OpInfo("embedding_bag", _bag, np_args(_bag_ref), _bag_samples, dtypes=FLOATS, diff_args=(0, 3), tol=LOW,
           covers=("embedding_bag_backward",)),
    OpInfo("one_hot", lambda x, **k: dispatch.call("one_hot", x, **k),
           lambda x, num_classes=-1: np.eye(num_classes if num_classes > 0 else int(x.max()) + 1,
                                            dtype=np.int64)[x.astype(np.int64)],
           lambda rng: [SampleInput(np.array([1, 0, 4, 2])), SampleInput(np.array([[1, 0], [2, 2]]), num_classes=5),
                        SampleInput(np.array(3), num_classes=4), SampleInput(np.zeros(0), num_classes=3),
                        SampleInput(rng.integers(0, 7, 1000), num_classes=7),
                        SampleInput(rng.integers(0, 5, (2, 3, 4)))],
           dtypes=(D.int64,), grad=False, gradgrad=False, noncontig=False),
    OpInfo("normalize", lambda x, **k: call("normalize", x, **k), _normalize_ref,
           lambda rng: [SampleInput(rng.normal(size=(3, 4)), p=2.0, dim=1), SampleInput(rng.normal(size=(7,)), p=1.0, dim=0),
                        SampleInput(rng.normal(size=(2, 3, 4)), p=3.0, dim=-1),
                        SampleInput(rng.normal(size=(2, 3, 4)), p=float("inf"), dim=1),
                        SampleInput(rng.normal(size=(4, 1000)), dim=1, grad=False),
                        SampleInput(rng.normal(size=(0, 3)), dim=1, grad=False),
                        SampleInput(rng.normal(size=(3, 0)), dim=1, grad=False),
                        SampleInput(rng.normal(size=(2, 3, 2, 2)), p=1.5, dim=-2)],
           dtypes=FLOATS, tol=LOW, layout_order=True),
    OpInfo("cosine_similarity", lambda a, b, **k: call("cosine_similarity", a, b, **k), _cosine_ref,
           lambda rng: [SampleInput(rng.normal(size=(3, 4)), rng.normal(size=(3, 4))),
                        SampleInput(rng.normal(size=(2, 3, 4)), rng.normal(size=(3, 4)), dim=1),
                        SampleInput(rng.normal(size=(5,)), rng.normal(size=(5,)), dim=0),
                        SampleInput(rng.normal(size=(33, 40)), rng.normal(size=(33, 40)), grad=False),
                        SampleInput(rng.normal(size=(0, 4)), rng.normal(size=(0, 4)), grad=False),
                        SampleInput(rng.normal(size=(2, 1000)), rng.normal(size=(1, 1000)), grad=False),
                        SampleInput(rng.normal(size=(2, 3, 1, 2)), rng.normal(size=(3, 4, 1)), dim=1)],
           dtypes=FLOATS, tol=LOW),
    OpInfo("pad", lambda x, **k: call("pad", x, **k), _pad_ref,
           lambda rng: [SampleInput(rng.normal(size=(2, 3)), pad=(1, 2)),
                        SampleInput(rng.normal(size=(2, 3, 4)), pad=(0, 1, 2, 0), value=1.5),
                        SampleInput(rng.normal(size=(7,)), pad=(3, 0)),
                        SampleInput(rng.normal(size=(0, 3)), pad=(1, 2), grad=False),
                        SampleInput(rng.normal(size=(3, 0)), pad=(1, 2), value=-1.0, grad=False),
                        SampleInput(rng.normal(size=(2, 3, 2, 2)), pad=(1, 1, 2, 0, 0, 1)),
                        SampleInput(rng.normal(size=(2, 1000)), pad=(3, 4), grad=False)],
           dtypes=FLOATS + (D.int64,)),
]
