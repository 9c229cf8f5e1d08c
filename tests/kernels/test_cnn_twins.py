"""cnn_cpu.c's C twins of kernels/norm.py's batch_norm kernels (``norm._bn_twin``) and kernels/pool.py's max-pool
kernels (``pool._pool_twin``) give the bits of the kernels' traced tapes: batch_norm training and eval, with and
without affine parameters and running statistics, planes of 2 to 40000 elements (under 8, ragged vector tails,
more than one 65536-lane block), -0 and huge inputs (with NaN or inf the twins call the tape); max_pool2d with and
without padding, dilation, overlapping windows, strided input, NaN, inf and -0; conv2d over one input channel a
group (``conv._conv1_twin``: padding, stride, dilation, depthwise groups, strided input).  An (N, C) batch_norm
and float64 keep the tape.  A compiled step's replay calls the twins."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.kernels import conv as KC
from tgrad.kernels import norm as KN
from tgrad.kernels import pool as KP
from tgrad.kernels.runtime import launcher as T
from tgrad.kernels.runtime import native
from tgrad.kernels.runtime import trace as TR

CPU_ONLY = True
pytestmark = pytest.mark.skipif(native.cnn_twins() is None, reason="no C compiler: no native twins")


def _values(shape, special, rng, dtype=np.float32):
    """Normal values of varied magnitude; "edge": with -0, a channel of -0 only and one of huge values (squares
    and sums overflow to inf); "nan": with NaN and +-inf too (the twins call the tape)."""
    x = (rng.standard_normal(shape) * np.exp2(rng.integers(-4, 4, shape))).astype(dtype)
    if special:
        flat = x.reshape(-1)
        k = flat.size
        flat[rng.random(k) < 0.05] = -0.0
        if special == "nan":
            flat[rng.random(k) < 0.02] = np.nan
            flat[rng.random(k) < 0.02] = np.inf
            flat[rng.random(k) < 0.02] = -np.inf
        if x.ndim > 2 and x.shape[1] > 2:
            x[:, 1] = -0.0
            x[:, 2] *= np.float32(1e36)
    return x


def _bn_case(shape, training, affine, running, special, dtype):
    rng = np.random.default_rng(sum(shape) * 7 + training)
    C = shape[1]
    x = tgrad.tensor(_values(shape, special, rng, dtype), requires_grad=True)
    w = b = rm = rv = None
    if affine:
        w = tgrad.tensor(_values((C,), False, rng, dtype), requires_grad=True)
        b = tgrad.tensor(_values((C,), False, rng, dtype), requires_grad=True)
    if running or not training:
        rm = tgrad.tensor(rng.standard_normal(C).astype(dtype))
        rv = tgrad.tensor(rng.random(C).astype(dtype) + 0.5)
    y = F.batch_norm(x, rm, rv, w, b, training=training, momentum=0.3, eps=1e-3)
    g = _values(shape, special, rng, dtype)
    y.backward(tgrad.tensor(g))
    out = [y.detach().numpy(), x.grad.numpy()]
    out += [w.grad.numpy(), b.grad.numpy()] if affine else []
    out += [rm.numpy(), rv.numpy()] if rm is not None else []
    return [a.tobytes() for a in out]


def _pool_case(shape, k, s, p, d, strided, special):
    rng = np.random.default_rng(sum(shape) + k + s)
    x = _values(shape, special, rng)
    if special:                                 # ties: equal values in a window (the first wins)
        x[..., ::2, :] = np.round(x[..., ::2, :])
    x = tgrad.tensor(x)
    if strided:
        x = x.transpose(2, 3)
    x.requires_grad_(True)
    y = F.max_pool2d(x, k, s, p, d)
    y.backward(tgrad.tensor(_values(tuple(y.shape), special, rng)))
    return [y.detach().numpy().tobytes(), x.grad.numpy().tobytes()]


def _no_twins(m):
    """The kernels' modules find no cnn_cpu.c (their launches keep the traced tapes)."""
    for mod in (KN, KP, KC):
        m.setattr(mod, "cnn_twins", lambda: None)


def _run(case, args, twin, monkeypatch):
    TR.clear_tapes()
    with monkeypatch.context() as m:
        if not twin:
            _no_twins(m)
        prev = T.EXECUTOR
        seen, taped = [], []
        orig, run_cpu = T.Launch.__init__, T.run_cpu

        def spy(self, *a, **kw):
            orig(self, *a, **kw)
            seen.append(type(self.tape) is T.CpuTwin)

        def spy_run(kernel, *a):
            taped.append(kernel in TWINNED)
            return run_cpu(kernel, *a)
        m.setattr(T.Launch, "__init__", spy)
        m.setattr(T, "run_cpu", spy_run)
        try:
            T.EXECUTOR = "trace"
            with np.errstate(all="ignore"):
                runs = [case(*args) for _ in range(2)]
                del taped[:]
                runs.append(case(*args))                # the 3rd launch of a key replays its traced tape
        finally:
            T.EXECUTOR = prev
            TR.clear_tapes()
    assert runs[0] == runs[1] == runs[2]
    return runs[2], any(seen), any(taped)


TWINNED = (KN.batch_norm_kernel, KN.batch_norm_backward_kernel, KP.pool_forward_kernel, KP.pool_backward_kernel,
           KC.conv_forward_kernel)


BN_CASES = [  # shape, training, affine, running, special, dtype
    ((32, 16, 8, 8), True, True, True, False, np.float32),
    ((32, 32, 4, 4), True, True, True, "edge", np.float32),
    ((32, 32, 4, 4), True, True, True, "nan", np.float32),       # the tape (the fallback)
    ((5, 3, 2, 3), True, True, False, "edge", np.float32),       # L = 6 < 8
    ((7, 4, 5, 5), True, False, True, "edge", np.float32),       # L = 25: a ragged tail vector
    ((3, 4, 9), True, True, True, "edge", np.float32),           # BatchNorm1d over (N, C, L)
    ((2, 2, 200, 200), True, True, True, False, np.float32),     # n = 80000: two 65536-lane blocks
    ((1, 3, 40, 40), True, True, False, "edge", np.float32),     # one sample
    ((6, 5, 7, 7), False, True, True, "edge", np.float32),       # eval: the running statistics
    ((6, 5, 7, 7), False, True, True, "nan", np.float32),
    ((4, 3, 3, 3), False, False, True, False, np.float32),
]


@pytest.mark.parametrize("args", BN_CASES, ids=[f"{c[0]}-{'train' if c[1] else 'eval'}-{c[4]}" for c in BN_CASES])
def test_batch_norm_twin_bits(args, monkeypatch):
    twin, used, fell_back = _run(_bn_case, args, True, monkeypatch)
    tape, used_tape, _ = _run(_bn_case, args, False, monkeypatch)
    assert used and not used_tape
    assert fell_back == (args[4] == "nan")
    assert twin == tape


@pytest.mark.parametrize("args", [((8, 3), True, True, True, False, np.float32),
                                  ((2, 3, 4, 4), True, True, True, False, np.float64)])
def test_batch_norm_tape_kept(args, monkeypatch):
    _, used, _ = _run(_bn_case, args, True, monkeypatch)
    assert not used


POOL_CASES = [  # shape, kernel, stride, padding, dilation, strided, special
    ((32, 16, 8, 8), 2, 2, 0, 1, False, False),
    ((3, 4, 7, 9), 2, 2, 0, 1, False, "nan"),                    # a ragged last row / column: dropped
    ((2, 3, 9, 8), 3, 2, 1, 1, False, "edge"),                   # padding, overlapping windows
    ((2, 3, 9, 8), 3, 2, 1, 1, False, "nan"),                    # (a NaN gradient: the tape)
    ((2, 2, 11, 10), 3, 1, 1, 2, True, "edge"),                  # dilation, stride 1, strided input
    ((1, 5, 6, 6), 3, 3, 0, 1, True, False),
]


@pytest.mark.parametrize("args", POOL_CASES, ids=[str(c[:5] + c[6:]) for c in POOL_CASES])
def test_max_pool_twin_bits(args, monkeypatch):
    twin, used, fell_back = _run(_pool_case, args, True, monkeypatch)
    tape, used_tape, _ = _run(_pool_case, args, False, monkeypatch)
    assert used and not used_tape
    assert fell_back == (args[6] == "nan" and args[2] < args[1])     # overlapping windows, NaN gradients
    assert twin == tape


def _conv_case(shape, O, k, s, p, d, groups, bias, strided, special):
    rng = np.random.default_rng(sum(shape) + O + k)
    x = _values(shape, special, rng)
    x = tgrad.tensor(x)
    if strided:
        x = x.transpose(2, 3)
    w = tgrad.tensor(_values((O, 1, k, k + 1), special, rng))
    b = tgrad.tensor(_values((O,), False, rng)) if bias else None
    with tgrad.no_grad():
        y = F.conv2d(x, w, b, s, p, d, groups)
    return [y.numpy().tobytes()]


CONV_CASES = [  # x shape, out channels, kernel (k, k + 1), stride, padding, dilation, groups, bias, strided, special
    ((32, 1, 8, 8), 16, 3, 1, 1, 1, 1, True, False, False),      # the CNN's first layer
    ((3, 1, 9, 7), 5, 2, 2, 0, 1, 1, False, False, "edge"),      # ragged, no padding, stride 2
    ((2, 3, 10, 11), 6, 3, 1, 2, 2, 3, True, True, "edge"),      # depthwise (groups = channels), dilation
    ((2, 1, 6, 6), 4, 3, 1, 4, 1, 1, True, False, False),        # padding past the kernel: rows of taps all out
    ((2, 1, 8, 8), 4, 3, 1, 1, 1, 1, True, False, "nan"),        # (the tape)
]


@pytest.mark.parametrize("args", CONV_CASES, ids=[str(c[:4] + c[-1:]) for c in CONV_CASES])
def test_conv1_twin_bits(args, monkeypatch):
    twin, used, fell_back = _run(_conv_case, args, True, monkeypatch)
    tape, used_tape, _ = _run(_conv_case, args, False, monkeypatch)
    assert used and not used_tape
    assert fell_back == (args[-1] == "nan")
    assert twin == tape


def test_compiled_cnn_step_replays_twins(monkeypatch):
    """A compiled conv/BN/pool step runs the twins in its replay and gives eager's bits (eager on the tapes)."""
    def run(twin):
        TR.clear_tapes()
        with monkeypatch.context() as m:
            if not twin:
                _no_twins(m)
            tgrad.manual_seed(0)
            net = tgrad.nn.Sequential(tgrad.nn.Conv2d(1, 4, 3, padding=1), tgrad.nn.BatchNorm2d(4),
                                      tgrad.nn.ReLU(), tgrad.nn.MaxPool2d(2), tgrad.nn.Flatten(),
                                      tgrad.nn.Linear(16, 3))
            opt = tgrad.optim.SGD(net.parameters(), lr=0.1)
            rng = np.random.default_rng(0)
            x = tgrad.tensor(rng.standard_normal((6, 1, 4, 4)).astype(np.float32))
            y = tgrad.tensor(rng.integers(0, 3, 6))

            def step():
                opt.zero_grad()
                loss = F.cross_entropy(net(x), y)
                loss.backward()
                opt.step()
                return loss
            if twin:
                step = tgrad.compile(step)
            losses = [step().item() for _ in range(5)]
            out = [p.detach().numpy().tobytes() for p in net.parameters()] + [net[1].running_var.numpy().tobytes()]
        TR.clear_tapes()
        return losses, out
    assert run(True) == run(False)
