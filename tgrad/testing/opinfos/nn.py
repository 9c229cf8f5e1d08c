"""OpInfos for the NN functional ops (softmax family, losses, layer_norm, dropout, embedding, one_hot, pad).

Integer arguments (class-index targets, embedding indices) are passed as int64 tgrad tensors built in the
sample (``_Idx``) so the dtype under test applies to the float arguments only.
"""
import numpy as np

from tgrad import dtypes as D
from tgrad.autograd import dispatch
from tgrad.random import default_generator_for

from ..opinfo import OpInfo, SampleInput

FLOATS = (D.float32, D.float64, D.float16, D.bfloat16)
LOW = {"float16": (2e-3, 2e-3), "bfloat16": (2e-2, 1.6e-2)}


class _Idx:
    """An int64 array argument: becomes an int64 tensor on the op's device; the reference sees the array."""

    def __init__(self, a):
        self.a = np.asarray(a, dtype=np.int64)

    def tensor(self, like):
        from tgrad import creation
        return creation.tensor(self.a, dtype=D.int64, device=like.device)

    def __repr__(self):
        return f"Idx{self.a.shape}"


def _i(v, like):
    return v.tensor(like) if isinstance(v, _Idx) else v


def _np(v):
    return v.a if isinstance(v, _Idx) else v


# ------------------------------------------------------------------ references
def _log_softmax(x, axis):
    m = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    with np.errstate(divide="ignore"):      # rows of nothing (the result is empty anyway)
        return x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


def _ce_ref(x, t, w=None, ignore_index=-100, reduction="mean", label_smoothing=0.0, logits=True):
    cd = 1 if x.ndim >= 2 else 0
    logp = _log_softmax(x, cd) if logits else x
    C = x.shape[cd]
    wv = np.ones(C) if w is None else w
    shape = [1] * x.ndim
    shape[cd] = C
    wb = wv.reshape(shape)
    if isinstance(t, _Idx) or (isinstance(t, np.ndarray) and t.dtype.kind == "i"):
        t = _np(t)
        valid = t != ignore_index
        tc = np.where(valid, t, 0)
        pick = np.take_along_axis(logp, np.expand_dims(tc, cd), cd).squeeze(cd) if x.ndim >= 2 else logp[tc]
        wt = wv[tc] * valid
        loss = -wt * pick
        if label_smoothing:
            sm = -(logp * wb).sum(cd) * valid
            loss = (1 - label_smoothing) * loss + label_smoothing / C * sm
        den = wt.sum()
    else:
        y = t * (1 - label_smoothing) + label_smoothing / C
        loss = -(y * logp * wb).sum(cd)
        den = loss.size
    if reduction == "none":
        return loss
    with np.errstate(invalid="ignore"):     # the mean of nothing is nan
        return loss.sum() if reduction == "sum" else loss.sum() / den


def _pw_ref(name):
    def ref(x, y, w=None, pw=None, reduction="mean", beta=1.0, delta=1.0, log_target=False):
        d = x - y
        if name == "mse_loss":
            e = d * d
        elif name == "l1_loss":
            e = np.abs(d)
        elif name == "smooth_l1_loss":
            e = np.where(np.abs(d) < beta, 0.5 * d * d / beta, np.abs(d) - 0.5 * beta)
        elif name == "huber_loss":
            e = np.where(np.abs(d) < delta, 0.5 * d * d, delta * (np.abs(d) - 0.5 * delta))
        elif name == "binary_cross_entropy":
            e = -(y * np.maximum(np.log(x), -100) + (1 - y) * np.maximum(np.log(1 - x), -100))
        elif name == "binary_cross_entropy_with_logits":
            lw = 1 + ((pw if pw is not None else 1.0) - 1) * y
            e = (1 - y) * x + lw * np.logaddexp(0, -x)
        elif log_target:
            e = np.exp(y) * (y - x)
        else:
            e = np.where(y == 0, 0.0, y * np.log(np.where(y == 0, 1.0, y))) - y * x
        if w is not None:
            e = e * w
        if reduction == "none":
            return e
        if reduction == "sum":
            return e.sum()
        with np.errstate(invalid="ignore"):     # the mean of nothing is nan
            return e.sum() / x.shape[0] if reduction == "batchmean" else e.sum() / e.size
    return ref


def _layer_norm_ref(x, w=None, b=None, normalized_shape=None, eps=1e-5):
    ax = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    y = (x - x.mean(ax, keepdims=True)) / np.sqrt(x.var(ax, keepdims=True) + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


def _batch_norm_ref(x, w, b, rm, rv, training=False, momentum=0.1, eps=1e-5):
    ax = (0,) + tuple(range(2, x.ndim))
    shape = [1, x.shape[1]] + [1] * (x.ndim - 2)
    if training:
        mean, var = x.mean(ax, keepdims=True), x.var(ax, keepdims=True)
    else:
        mean, var = rm.reshape(shape), rv.reshape(shape)
    y = (x - mean) / np.sqrt(var + eps)
    return y * (1 if w is None else w.reshape(shape)) + (0 if b is None else b.reshape(shape))


def _bn_samples(rng):
    def stats(c):
        return rng.normal(size=c), rng.uniform(0.5, 2, c)
    return [SampleInput(rng.normal(size=(4, 3)), rng.normal(size=3), rng.normal(size=3), *stats(3), training=True,
                        momentum=0.2),
            SampleInput(rng.normal(size=(2, 3, 4)), None, None, None, None, training=True, eps=1e-3),
            SampleInput(rng.normal(size=(2, 2, 2, 3)), rng.normal(size=2), rng.normal(size=2), *stats(2),
                        training=False),
            SampleInput(rng.normal(size=(3, 2, 5)), rng.normal(size=2), None, *stats(2), training=True),
            SampleInput(rng.normal(size=(3, 4)), None, None, *stats(4), training=False),
            SampleInput(rng.normal(size=(8, 5, 33)), None, None, *stats(5), training=True, grad=False)]


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


# ------------------------------------------------------------------ samples
def _softmax_samples(rng):
    out = []
    for s, d in [((7,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 5), 1), ((33,), -1), ((4, 1000), 1), ((), 0)]:
        out.append(SampleInput(rng.uniform(-3, 3, s), dim=d, grad=int(np.prod(s)) <= 40))
    out.append(SampleInput(rng.uniform(-3, 3, (0, 3)), dim=1, grad=False))
    out.append(SampleInput(rng.uniform(-3, 3, (3, 0)), dim=1, grad=False))
    out.append(SampleInput(rng.uniform(-3, 3, (2, 3, 4, 5)), dim=1, grad=False))
    return out


def _ce_samples(rng):
    x = rng.normal(size=(5, 4))
    t = _Idx([0, 3, 1, -100, 2])
    w = rng.uniform(0.5, 2, 4)
    y = rng.dirichlet(np.ones(4), size=5)
    return [
        SampleInput(x, t, None),
        SampleInput(x, t, w, reduction="sum", label_smoothing=0.2),
        SampleInput(x, t, None, reduction="none"),
        SampleInput(rng.normal(size=(2, 3, 2, 2)), _Idx(rng.integers(0, 3, (2, 2, 2))), w[:3], ignore_index=1),
        SampleInput(rng.normal(size=(6,)), _Idx(2), None),
        SampleInput(rng.normal(size=(33, 7)), _Idx(rng.integers(0, 7, 33)), None, grad=False),
        SampleInput(rng.normal(size=(0, 4)), _Idx(np.zeros(0)), None, grad=False),
        SampleInput(rng.normal(size=(0, 4)), _Idx(np.zeros(0)), w, reduction="sum", grad=False),
        SampleInput(rng.normal(size=(2, 4, 0, 3)), _Idx(np.zeros((2, 0, 3))), None, reduction="none", grad=False),
        SampleInput(rng.normal(size=(4, 1000)), _Idx(rng.integers(0, 1000, 4)), None, label_smoothing=0.1,
                    grad=False),
        SampleInput(rng.normal(size=(1000, 3)), _Idx(rng.integers(0, 3, 1000)), w[:3], reduction="none", grad=False),
    ]


def _ce_prob_samples(rng):
    """Probability targets: the target and the class weights are differentiable (not so for class indices)."""
    x = rng.normal(size=(5, 4))
    y = rng.dirichlet(np.ones(4), size=5)
    w = rng.uniform(0.5, 2, 4)
    return [
        SampleInput(x, y, None, reduction="mean"),
        SampleInput(x, y, w, reduction="none", label_smoothing=0.1),
        SampleInput(rng.normal(size=(2, 3, 2)), rng.dirichlet(np.ones(3), size=(2, 2)).transpose(0, 2, 1), w[:3],
                    reduction="sum", label_smoothing=0.3),
        SampleInput(rng.normal(size=(4,)), rng.dirichlet(np.ones(4)), w, reduction="mean"),
        SampleInput(rng.normal(size=(33, 7)), rng.dirichlet(np.ones(7), size=33), None, grad=False),
        SampleInput(rng.normal(size=(0, 4)), np.zeros((0, 4)), None, grad=False),
        SampleInput(rng.normal(size=(4, 1000)), rng.dirichlet(np.ones(1000), size=4), None, reduction="sum",
                    grad=False),
    ]


def _nll_samples(rng):
    x = _log_softmax(rng.normal(size=(5, 4)), 1)
    t = _Idx([0, 3, 1, -100, 2])
    return [SampleInput(x, t, None), SampleInput(x, t, rng.uniform(0.5, 2, 4), reduction="sum"),
            SampleInput(x, t, None, reduction="none"),
            SampleInput(_log_softmax(rng.normal(size=(2, 3, 4)), 1), _Idx(rng.integers(0, 3, (2, 4))), None),
            SampleInput(np.zeros((0, 4)), _Idx(np.zeros(0)), None, reduction="none", grad=False),
            SampleInput(np.zeros((0, 4)), _Idx(np.zeros(0)), None, grad=False),
            SampleInput(_log_softmax(rng.normal(size=(1000, 3)), 1), _Idx(rng.integers(0, 3, 1000)), None,
                        grad=False),
            SampleInput(_log_softmax(rng.normal(size=(2, 3, 2, 5)), 1), _Idx(rng.integers(0, 3, (2, 2, 5))),
                        None, reduction="sum", grad=False)]


def _pw_samples(name):
    def samples(rng):
        def xy(s):
            x = rng.normal(size=s)
            if name == "binary_cross_entropy":
                return rng.uniform(0.05, 0.95, s), rng.uniform(0, 1, s)
            if name == "binary_cross_entropy_with_logits":
                return 2 * x, rng.uniform(0, 1, s)
            if name == "kl_div":
                return x, rng.uniform(0, 1, s)
            return x, rng.normal(size=s)
        kw = {"smooth_l1_loss": {"beta": 0.5}, "huber_loss": {"delta": 0.7}}.get(name, {})
        extra = (None, None) if name == "binary_cross_entropy_with_logits" else \
            (None,) if name == "binary_cross_entropy" else ()
        out = []
        for s, red in [((3, 4), "mean"), ((7,), "sum"), ((2, 3), "none"), ((), "mean"), ((33,), "mean"),
                       ((2, 3, 5), "sum"), ((0, 3), "mean"), ((0, 3), "sum"), ((0,), "none"), ((1000,), "mean"),
                       ((2, 3, 4, 5), "none")]:
            x, y = xy(s)
            out.append(SampleInput(x, y, *extra, reduction=red, grad=int(np.prod(s)) <= 40, **kw))
        x, y = xy((3, 4))
        if name == "binary_cross_entropy":
            out.append(SampleInput(x, y, rng.uniform(0.5, 2, (4,)), reduction="mean"))
        if name == "binary_cross_entropy_with_logits":
            out.append(SampleInput(x, y, rng.uniform(0.5, 2, (4,)), rng.uniform(0.5, 3, (4,)), reduction="mean"))
        if name == "kl_div":
            out.append(SampleInput(x, np.log(y), reduction="batchmean", log_target=True))
        return out
    return samples


def _ln_samples(rng):
    return [SampleInput(rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=4), normalized_shape=(4,)),
            SampleInput(rng.normal(size=(2, 2, 3)), None, None, normalized_shape=(2, 3), eps=1e-3),
            SampleInput(rng.normal(size=(7,)), rng.normal(size=7), None, normalized_shape=(7,)),
            SampleInput(rng.normal(size=(4, 1000)), None, None, normalized_shape=(1000,), grad=False),
            SampleInput(rng.normal(size=(0, 4)), rng.normal(size=4), rng.normal(size=4), normalized_shape=(4,),
                        grad=False),
            SampleInput(rng.normal(size=(2, 3, 2, 5)), rng.normal(size=(2, 5)), None, normalized_shape=(2, 5),
                        grad=False)]


def _emb_samples(rng):
    return [SampleInput(rng.normal(size=(10, 3)), _Idx([[1, 2, 1], [9, 0, 1]])),
            SampleInput(rng.normal(size=(5, 4)), _Idx([4, 4, 0])),
            SampleInput(rng.normal(size=(33, 7)), _Idx(rng.integers(0, 33, 20)), grad=False)]


def _call(name, *args, **kw):
    like = args[0]
    return dispatch.call(name, *[_i(a, like) for a in args], **kw)


def _dropout_train(x, p):
    """y - x * mask / (1 - p): zero whatever mask the generator drew (and so is the gradient)."""
    y, mask = _call("dropout", x, p=p, training=True, **default_generator_for(x.device)._bernoulli_rng(x.numel()))
    return y - x * mask * (1.0 / (1.0 - p))


def _np_args(f):
    return lambda *a, **k: f(*[_np(v) for v in a], **k)


OPS = [
    OpInfo("softmax", lambda x, **k: _call("softmax", x, **k),
           lambda x, dim: np.exp(_log_softmax(x, dim if x.ndim else None)), _softmax_samples, dtypes=FLOATS,
           tol=LOW, covers=("softmax_backward",)),
    OpInfo("log_softmax", lambda x, **k: _call("log_softmax", x, **k),
           lambda x, dim: _log_softmax(x, dim if x.ndim else None), _softmax_samples, dtypes=FLOATS,
           tol=LOW, covers=("log_softmax_backward",)),
    OpInfo("cross_entropy", lambda *a, **k: _call("cross_entropy", *a, **k), _ce_ref, _ce_samples, dtypes=FLOATS,
           diff_args=(0,), tol=LOW, covers=("cross_entropy_backward",)),
    OpInfo("cross_entropy_probs", lambda *a, **k: _call("cross_entropy", *a, **k), _ce_ref, _ce_prob_samples,
           dtypes=FLOATS, diff_args=(0, 1, 2), tol=LOW, covers=("cross_entropy", "cross_entropy_backward")),
    OpInfo("nll_loss", lambda *a, **k: _call("nll_loss", *a, **k),
           lambda *a, **k: _ce_ref(*a, logits=False, **k), _nll_samples, dtypes=FLOATS, diff_args=(0,),
           covers=("nll_loss_backward",)),
    OpInfo("nll_loss2d", lambda *a, **k: _call("nll_loss2d", *a, **k),
           lambda *a, **k: _ce_ref(*a, logits=False, **k),
           lambda rng: [SampleInput(_log_softmax(rng.normal(size=(2, 3, 4)), 1), _Idx(rng.integers(0, 3, (2, 4))),
                                    None),
                        SampleInput(_log_softmax(rng.normal(size=(2, 3, 2, 2)), 1),
                                    _Idx(rng.integers(0, 3, (2, 2, 2))), rng.uniform(0.5, 2, 3), reduction="none")],
           dtypes=FLOATS, diff_args=(0,), covers=("nll_loss_backward",)),
]
for _name in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
              "binary_cross_entropy_with_logits", "kl_div"):
    OPS.append(OpInfo(_name, (lambda n: lambda *a, **k: _call(n, *a, **k))(_name), _pw_ref(_name),
                      _pw_samples(_name), dtypes=FLOATS, tol={"float16": (2e-3, 2e-3), "bfloat16": (3e-2, 2e-2)},
                      diff_args=(0, 1, 2) if _name.startswith("binary_cross_entropy") else (0, 1),
                      covers=(_name + "_backward",)))
OPS += [
    OpInfo("layer_norm", lambda *a, **k: _call("layer_norm", *a, **k), _layer_norm_ref, _ln_samples, dtypes=FLOATS,
           tol={"float16": (4e-3, 4e-3), "bfloat16": (4e-2, 2e-2)}, covers=("layer_norm_backward",)),
    OpInfo("batch_norm", lambda *a, **k: _call("batch_norm", *a, **k), _batch_norm_ref, _bn_samples,
           dtypes=FLOATS, diff_args=(0, 1, 2), tol={"float16": (4e-3, 4e-3), "bfloat16": (4e-2, 2e-2)},
           covers=("batch_norm_backward",)),
    OpInfo("dropout", lambda x, **k: _call("dropout", x, **k), lambda x, **k: (x, np.ones(x.shape, bool)),
           lambda rng: [SampleInput(rng.normal(size=s), p=p, training=tr)
                        for s, p, tr in [((3, 4), 0.5, False), ((7,), 0.0, True), ((2, 3, 5), 0.3, False)]],
           dtypes=FLOATS),
    OpInfo("dropout_train", _dropout_train, lambda x, **k: np.zeros(x.shape),
           lambda rng: [SampleInput(rng.normal(size=s), p=p) for s, p in [((3, 4), 0.5), ((33,), 0.2), ((2, 3, 5), 0.9)]],
           dtypes=FLOATS, covers=("dropout",)),
    OpInfo("embedding", lambda *a, **k: _call("embedding", *a, **k), _np_args(lambda w, i, **k: w[i]),
           _emb_samples, dtypes=FLOATS, diff_args=(0,), covers=("embedding_backward",)),
    OpInfo("one_hot", lambda x, **k: dispatch.call("one_hot", x, **k),
           lambda x, num_classes=-1: np.eye(num_classes if num_classes > 0 else int(x.max()) + 1,
                                            dtype=np.int64)[x.astype(np.int64)],
           lambda rng: [SampleInput(np.array([1, 0, 4, 2])), SampleInput(np.array([[1, 0], [2, 2]]), num_classes=5),
                        SampleInput(np.array(3), num_classes=4), SampleInput(np.zeros(0), num_classes=3),
                        SampleInput(rng.integers(0, 7, 1000), num_classes=7),
                        SampleInput(rng.integers(0, 5, (2, 3, 4)))],
           dtypes=(D.int64,), grad=False, gradgrad=False, noncontig=False),
    OpInfo("normalize", lambda x, **k: _call("normalize", x, **k), _normalize_ref,
           lambda rng: [SampleInput(rng.normal(size=(3, 4)), p=2.0, dim=1), SampleInput(rng.normal(size=(7,)), p=1.0, dim=0),
                        SampleInput(rng.normal(size=(2, 3, 4)), p=3.0, dim=-1),
                        SampleInput(rng.normal(size=(2, 3, 4)), p=float("inf"), dim=1),
                        SampleInput(rng.normal(size=(4, 1000)), dim=1, grad=False),
                        SampleInput(rng.normal(size=(0, 3)), dim=1, grad=False),
                        SampleInput(rng.normal(size=(3, 0)), dim=1, grad=False),
                        SampleInput(rng.normal(size=(2, 3, 2, 2)), p=1.5, dim=-2)],
           dtypes=FLOATS, tol=LOW),
    OpInfo("cosine_similarity", lambda a, b, **k: _call("cosine_similarity", a, b, **k), _cosine_ref,
           lambda rng: [SampleInput(rng.normal(size=(3, 4)), rng.normal(size=(3, 4))),
                        SampleInput(rng.normal(size=(2, 3, 4)), rng.normal(size=(3, 4)), dim=1),
                        SampleInput(rng.normal(size=(5,)), rng.normal(size=(5,)), dim=0),
                        SampleInput(rng.normal(size=(33, 40)), rng.normal(size=(33, 40)), grad=False),
                        SampleInput(rng.normal(size=(0, 4)), rng.normal(size=(0, 4)), grad=False),
                        SampleInput(rng.normal(size=(2, 1000)), rng.normal(size=(1, 1000)), grad=False),
                        SampleInput(rng.normal(size=(2, 3, 1, 2)), rng.normal(size=(3, 4, 1)), dim=1)],
           dtypes=FLOATS, tol=LOW),
    OpInfo("pad", lambda x, **k: _call("pad", x, **k), _pad_ref,
           lambda rng: [SampleInput(rng.normal(size=(2, 3)), pad=(1, 2)),
                        SampleInput(rng.normal(size=(2, 3, 4)), pad=(0, 1, 2, 0), value=1.5),
                        SampleInput(rng.normal(size=(7,)), pad=(3, 0)),
                        SampleInput(rng.normal(size=(0, 3)), pad=(1, 2), grad=False),
                        SampleInput(rng.normal(size=(3, 0)), pad=(1, 2), value=-1.0, grad=False),
                        SampleInput(rng.normal(size=(2, 3, 2, 2)), pad=(1, 1, 2, 0, 0, 1)),
                        SampleInput(rng.normal(size=(2, 1000)), pad=(3, 4), grad=False)],
           dtypes=FLOATS + (D.int64,)),
]
