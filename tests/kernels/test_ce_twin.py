"""aten_cpu.c's C twins of kernels/loss.py's cross-entropy kernels (``loss._ce_twin``) give the bits of the kernels'
traced tapes: nll_loss / cross_entropy over float32 class rows of many shapes (one row, fewer than 8 classes, rows
not a multiple of any block, 1000 and 70000 classes, strided input), with -inf and NaN logits, rows of -inf (and
NaN), huge values, ignored targets, class weights (signed), every reduction, the forward's seed gradient and the
backward kernel's
(incoming gradients other than loss.backward()'s); float64 and label smoothing keep the tape.  A cpu launch's tape
is the twin, and a compiled step's replay calls it."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.kernels import loss as KL
from tgrad.kernels.runtime import launcher as T
from tgrad.kernels.runtime import native
from tgrad.kernels.runtime import trace as TR

CPU_ONLY = True
NATIVE = native.cross_entropy_f32() is not None
pytestmark = pytest.mark.skipif(not NATIVE, reason="no C compiler: no native twins")


def _logits(M, K, kind, rng, dtype):
    x = (rng.standard_normal((M, K)) * np.exp2(rng.integers(-3, 6, (M, K)))).astype(dtype)
    if kind == "special":
        x[rng.random((M, K)) < 0.1] = -np.inf
        x[rng.random((M, K)) < 0.05] = np.nan
        x[0] = -np.inf                          # a whole row of -inf
        if M > 1:                               # -inf and NaN: its max -inf, NaNs of both signs in its sums
            x[1] = -np.inf
            x[1, 1::3] = np.nan
        if M > 2:
            x[2, :] = 3e38
            x[2, -1] = -0.0
    return x


def _case(M, K, kind, dtype, reduction, weight, ii, strided, logits, smoothing, seed_only):
    rng = np.random.default_rng(M * 1000 + K)
    x = tgrad.tensor(_logits(M, K, kind, rng, dtype))
    if strided:
        x = tgrad.tensor(np.ascontiguousarray(x.numpy().T)).t()
    x.requires_grad_(True)
    t = rng.integers(0, K, M)
    t[rng.random(M) < 0.2] = ii
    t = tgrad.tensor(t)
    w = None
    if weight:
        w = rng.random(K).astype(dtype) + 0.5
        if weight == "signed":
            w = (rng.standard_normal(K) * np.exp2(rng.integers(-20, 20, K))).astype(dtype)
            w[:2] = -0.0
        w = tgrad.tensor(w)
    inp = x if logits else F.log_softmax(x, 1)
    kw = dict(weight=w, ignore_index=ii, reduction=reduction)
    loss = F.cross_entropy(inp, t, label_smoothing=smoothing, **kw) if logits else F.nll_loss(inp, t, **kw)
    if reduction == "none":
        loss.backward(tgrad.tensor(rng.standard_normal(M).astype(dtype)))
    elif seed_only:
        loss.backward()                         # the forward's own gradient
    else:
        (loss * 3.0).backward()                 # the backward kernel
    return [loss.detach().numpy().tobytes(), x.grad.numpy().tobytes()]


def _run(args, twin, monkeypatch):
    TR.clear_tapes()
    with monkeypatch.context() as m:
        if not twin:
            m.setattr(KL, "native_cross_entropy", lambda: None)
        prev = T.EXECUTOR
        try:
            T.EXECUTOR = "trace"
            with np.errstate(all="ignore"):
                runs = [_case(*args) for _ in range(3)]     # the 3rd launch of a key replays its traced tape
            used = any(type(s.tape) is T.CpuTwin for s in KL._SITES.values())
        finally:
            T.EXECUTOR = prev
            TR.clear_tapes()
    assert runs[0] == runs[1] == runs[2]
    return runs[2], used


CASES = [  # M, K, kind, dtype, reduction, weight, ignore_index, strided, logits, smoothing, seed_only
    (64, 10, "plain", np.float32, "mean", False, -100, False, True, 0.0, True),
    (1, 1, "plain", np.float32, "mean", False, -100, False, True, 0.0, True),
    (3, 5, "special", np.float32, "mean", False, -100, False, True, 0.0, True),
    (7, 8, "special", np.float32, "sum", False, 2, False, True, 0.0, True),
    (33, 17, "special", np.float32, "mean", False, -100, True, True, 0.0, False),
    (100, 1000, "plain", np.float32, "mean", False, -100, False, True, 0.0, True),
    (1000, 7, "special", np.float32, "none", True, -100, False, True, 0.0, False),
    (257, 33, "special", np.float32, "mean", True, 1, False, True, 0.0, True),
    (65, 16, "plain", np.float32, "sum", True, -100, True, True, 0.0, False),
    (70, 12, "special", np.float32, "mean", True, -100, False, True, 0.0, False),
    (300, 9, "special", np.float32, "none", False, 0, True, True, 0.0, False),
    (40, 11, "plain", np.float32, "mean", False, -100, False, False, 0.0, True),
    (41, 3, "special", np.float32, "sum", True, 1, False, False, 0.0, False),
    (42, 6, "plain", np.float32, "none", True, -100, False, False, 0.0, False),
    (3000, 9, "plain", np.float32, "mean", "signed", -100, False, True, 0.0, True),
    (70000, 8, "plain", np.float32, "mean", True, 3, False, True, 0.0, False),     # two _mean_scale chunks
    (130, 20, "plain", np.float32, "mean", "signed", -100, False, False, 0.0, True),
    (3, 70000, "special", np.float32, "mean", False, -100, False, True, 0.0, False),    # two BLOCK_K blocks
    (64, 10, "special", np.float64, "mean", False, -100, False, True, 0.0, True),
    (64, 10, "special", np.float32, "mean", False, -100, False, True, 0.1, True),
]


@pytest.mark.parametrize("args", CASES)
def test_twin_equals_traced_tape(args, monkeypatch):
    got, used = _run(args, True, monkeypatch)
    want, unused = _run(args, False, monkeypatch)
    assert not unused
    assert used == (args[3] is np.float32 and args[9] == 0.0)
    assert got == want


def test_compiled_replay_calls_twin(monkeypatch):
    """A compiled MLP step (cross-entropy, SGD momentum) replays the forward's twin, without dispatch, and gives
    eager's bits with the kernel's traced tape."""
    fwd, bwd = native.cross_entropy_f32()
    calls = []
    launches = []
    orig = KL.cross_entropy
    monkeypatch.setattr(KL, "cross_entropy", lambda *a, **k: launches.append(1) or orig(*a, **k))
    rng = np.random.default_rng(0)
    data = [(tgrad.tensor(rng.standard_normal((20, 6)).astype(np.float32)), tgrad.tensor(rng.integers(0, 5, 20)))
            for _ in range(7)]

    def run(compiled):
        tgrad.manual_seed(0)
        model = tgrad.nn.Sequential(tgrad.nn.Linear(6, 12), tgrad.nn.ReLU(), tgrad.nn.Linear(12, 5))
        opt = tgrad.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

        def step(x, y):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        f = tgrad.compile(step) if compiled else step
        losses = [f(x, y).detach().numpy().copy() for x, y in data[:5]]    # call 2 records, 3-5 replay
        n, m = len(calls), len(launches)
        losses += [f(x, y).detach().numpy().copy() for x, y in data[5:]]
        return losses, [p.detach().numpy().copy() for p in model.parameters()], len(calls) - n, len(launches) - m
    TR.clear_tapes()
    with monkeypatch.context() as m:
        m.setattr(KL, "native_cross_entropy", lambda: None)
        ref = run(False)
    TR.clear_tapes()
    monkeypatch.setattr(KL, "native_cross_entropy", lambda: (lambda *a: calls.append(1) or fwd(*a), bwd))
    out = run(True)
    TR.clear_tapes()
    assert ref[2] == 0 and out[2] == 2 and out[3] == 0       # the replays called the twin, not the launcher
    for a, b in zip(out[0] + out[1], ref[0] + ref[1]):
        assert a.tobytes() == b.tobytes()


def test_twins_vectorized_with_avx2():
    """On a cpu with AVX2 (and FMA) the twins run their AVX2 build, whose exps' loops the compiler vectorizes (the
    tests above hold its bits to the tapes')."""
    flags = open("/proc/cpuinfo").read().split() if __import__("os").path.exists("/proc/cpuinfo") else []
    m = native._build("aten_cpu.c", "tgrad_aten_cpu", "SLEEF exp/log")
    if "avx2" not in flags or "fma" not in flags or not m.hardware:
        pytest.skip("no AVX2 and FMA")
    assert m.ce_avx2 == 1
