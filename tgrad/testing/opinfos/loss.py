"""OpInfos for the losses: cross_entropy (class indices and probabilities), nll_loss[2d], the point-wise losses."""
import numpy as np

from ..opinfo import OpInfo, SampleInput
from ._common import FLOATS, LOW, Idx, as_np, call, log_softmax


def _ce_ref(x, t, w=None, ignore_index=-100, reduction="mean", label_smoothing=0.0, logits=True):
    cd = 1 if x.ndim >= 2 else 0
    logp = log_softmax(x, cd) if logits else x
    C = x.shape[cd]
    wv = np.ones(C) if w is None else w
    shape = [1] * x.ndim
    shape[cd] = C
    wb = wv.reshape(shape)
    if isinstance(t, Idx) or (isinstance(t, np.ndarray) and t.dtype.kind == "i"):
        t = as_np(t)
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


def _ce_samples(rng):
    x = rng.normal(size=(5, 4))
    t = Idx([0, 3, 1, -100, 2])
    w = rng.uniform(0.5, 2, 4)
    y = rng.dirichlet(np.ones(4), size=5)
    return [
        SampleInput(x, t, None),
        SampleInput(x, t, w, reduction="sum", label_smoothing=0.2),
        SampleInput(x, t, None, reduction="none"),
        SampleInput(rng.normal(size=(2, 3, 2, 2)), Idx(rng.integers(0, 3, (2, 2, 2))), w[:3], ignore_index=1),
        SampleInput(rng.normal(size=(6,)), Idx(2), None),
        SampleInput(rng.normal(size=(33, 7)), Idx(rng.integers(0, 7, 33)), None, grad=False),
        SampleInput(rng.normal(size=(0, 4)), Idx(np.zeros(0)), None, grad=False),
        SampleInput(rng.normal(size=(0, 4)), Idx(np.zeros(0)), w, reduction="sum", grad=False),
        SampleInput(rng.normal(size=(2, 4, 0, 3)), Idx(np.zeros((2, 0, 3))), None, reduction="none", grad=False),
        SampleInput(rng.normal(size=(4, 1000)), Idx(rng.integers(0, 1000, 4)), None, label_smoothing=0.1,
                    grad=False),
        SampleInput(rng.normal(size=(1000, 3)), Idx(rng.integers(0, 3, 1000)), w[:3], reduction="none", grad=False),
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
    x = log_softmax(rng.normal(size=(5, 4)), 1)
    t = Idx([0, 3, 1, -100, 2])
    return [SampleInput(x, t, None), SampleInput(x, t, rng.uniform(0.5, 2, 4), reduction="sum"),
            SampleInput(x, t, None, reduction="none"),
            SampleInput(log_softmax(rng.normal(size=(2, 3, 4)), 1), Idx(rng.integers(0, 3, (2, 4))), None),
            SampleInput(np.zeros((0, 4)), Idx(np.zeros(0)), None, reduction="none", grad=False),
            SampleInput(np.zeros((0, 4)), Idx(np.zeros(0)), None, grad=False),
            SampleInput(log_softmax(rng.normal(size=(1000, 3)), 1), Idx(rng.integers(0, 3, 1000)), None,
                        grad=False),
            SampleInput(log_softmax(rng.normal(size=(2, 3, 2, 5)), 1), Idx(rng.integers(0, 3, (2, 2, 5))),
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


OPS = [
    OpInfo("cross_entropy", lambda *a, **k: call("cross_entropy", *a, **k), _ce_ref, _ce_samples, dtypes=FLOATS,
           diff_args=(0,), tol=LOW, covers=("cross_entropy_backward",)),
    OpInfo("cross_entropy_probs", lambda *a, **k: call("cross_entropy", *a, **k), _ce_ref, _ce_prob_samples,
           dtypes=FLOATS, diff_args=(0, 1, 2), tol=LOW, covers=("cross_entropy", "cross_entropy_backward")),
    OpInfo("nll_loss", lambda *a, **k: call("nll_loss", *a, **k),
           lambda *a, **k: _ce_ref(*a, logits=False, **k), _nll_samples, dtypes=FLOATS, diff_args=(0,),
           covers=("nll_loss_backward",)),
    OpInfo("nll_loss2d", lambda *a, **k: call("nll_loss2d", *a, **k),
           lambda *a, **k: _ce_ref(*a, logits=False, **k),
           lambda rng: [SampleInput(log_softmax(rng.normal(size=(2, 3, 4)), 1), Idx(rng.integers(0, 3, (2, 4))),
                                    None),
                        SampleInput(log_softmax(rng.normal(size=(2, 3, 2, 2)), 1),
                                    Idx(rng.integers(0, 3, (2, 2, 2))), rng.uniform(0.5, 2, 3), reduction="none")],
           dtypes=FLOATS, diff_args=(0,), covers=("nll_loss_backward",)),
]
OPS += [OpInfo(name, (lambda n: lambda *a, **k: call(n, *a, **k))(name), _pw_ref(name), _pw_samples(name),
               dtypes=FLOATS, tol={"float16": (2e-3, 2e-3), "bfloat16": (3e-2, 2e-2)},
               diff_args=(0, 1, 2) if name.startswith("binary_cross_entropy") else (0, 1),
               covers=(name + "_backward",))
        for name in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
                     "binary_cross_entropy_with_logits", "kl_div")]
