"""OpInfos for the fused optimizer steps (``sgd_step``, ``adam_step``, ``rmsprop_step``, ``adagrad_step``,
``adadelta_step``).

Each op updates its tensors in place; the OpInfo's ``op`` returns them (parameter first, then the
states) and ``ref`` computes the same one-step update in numpy, following PyTorch's
``_single_tensor_*`` implementations (its default on cpu) line by line with ATen's cpu rounding, in
the arrays' dtype: on float32 arrays it gives PyTorch's fp32 bits but for its sqrt (MKL's, not
correctly rounded; numpy's is).  ``tests/optim/test_optim.py`` reuses the references for multi-step runs
of the optimizer classes.
"""
import numpy as np

from tgrad import dtypes as D
from tgrad.autograd import dispatch

from ..opinfo import OpInfo, SampleInput

FLOATS = (D.float32, D.float64, D.float16, D.bfloat16)
SHAPES = [(1,), (7,), (33,), (1000,), (3, 4)]


def _fma(a, b, c):
    """a * b + c rounded once, as ATen's cpu kernels' fma.  float32: exact (the float64 sum, whose exact
    error TwoSum gives, rounded to odd and then to float32: no double rounding); float64: a * b + c."""
    a, b, c = np.broadcast_arrays(a, b, c)
    if c.dtype != np.float32:
        return a * b + c
    prod = a.astype(np.float64) * b                 # exact: 24-bit significands
    s = prod + c
    t = s - prod
    err = (prod - (s - t)) + (c - t)
    to_odd = (err != 0) & (s.view(np.int64) & 1 == 0)
    s = np.where(to_odd, np.nextafter(s, np.copysign(np.inf, err)), s)
    return s.astype(np.float32)


def _lerp(a, b, w):
    """ATen's lerp: fma(w, b - a, a) for w < 0.5, else b - (b - a)(1 - w) with one rounding."""
    w = a.dtype.type(w)
    d = b - a
    return _fma(w, d, a) if w < 0.5 else _fma(-d, 1 - w, b)


# Python scalars are rounded to the tensor's dtype (k = p.dtype.type), as ATen does; x.add(y, alpha=a) is
# fma(a, y, x), x.addcmul(t1, t2, value=v) is fma(v t1, t2, x), x.addcdiv(t1, t2, value=v) is x + (v t1) / t2.
def sgd_ref(p, g, buf, *, lr, momentum, dampening, weight_decay, nesterov, maximize, first):
    k = p.dtype.type
    g = -g if maximize else g
    if weight_decay != 0:
        g = _fma(k(weight_decay), p, g)                                 # grad.add(param, alpha=weight_decay)
    if momentum != 0:
        buf = g.copy() if first else _fma(k(1 - dampening), g, buf * k(momentum))
        g = _fma(k(momentum), buf, g) if nesterov else buf
    return _fma(k(-lr), g, p), buf                                      # param.add_(grad, alpha=-lr)


def adam_ref(p, g, m, v, vmax, *, lr, beta1, beta2, eps, weight_decay, step, amsgrad, maximize,
             decoupled_weight_decay):
    k = p.dtype.type
    g = -g if maximize else g
    if weight_decay != 0:
        if decoupled_weight_decay:
            p = p * k(1 - lr * weight_decay)
        else:
            g = _fma(k(weight_decay), p, g)
    m = _lerp(m, g, 1 - beta1)
    v = _fma(k(1 - beta2) * g, g, v * k(beta2))                          # v.mul_(beta2).addcmul_(g, g, 1 - beta2)
    bc1, bc2 = 1 - beta1 ** step, 1 - beta2 ** step
    if amsgrad:
        vmax = np.maximum(vmax, v)
    denom = np.sqrt(vmax if amsgrad else v) / k(bc2 ** 0.5) + k(eps)
    return p + (k(-(lr / bc1)) * m) / denom, m, v, vmax                 # param.addcdiv_(m, denom, -step_size)


def rmsprop_ref(p, g, sq, ga, buf, *, lr, alpha, eps, weight_decay, momentum, centered, maximize):
    k = p.dtype.type
    g = -g if maximize else g
    if weight_decay != 0:
        g = _fma(k(weight_decay), p, g)
    sq = _fma(k(1 - alpha) * g, g, sq * k(alpha))
    if centered:
        ga = _lerp(ga, g, 1 - alpha)
        avg = np.sqrt(_fma(-ga, ga, sq)) + k(eps)                       # sq.addcmul(ga, ga, value=-1).sqrt_()
    else:
        avg = np.sqrt(sq) + k(eps)
    if momentum > 0:
        buf = buf * k(momentum) + g / avg                               # buf.mul_(momentum).addcdiv_(g, avg)
        return _fma(k(-lr), buf, p), sq, ga, buf
    return p + (k(-lr) * g) / avg, sq, ga, buf


def adagrad_ref(p, g, s, *, lr, lr_decay, eps, weight_decay, step, maximize):
    k = p.dtype.type
    g = -g if maximize else g
    if weight_decay != 0:
        g = _fma(k(weight_decay), p, g)
    clr = lr / (1 + (step - 1) * lr_decay)
    s = _fma(g, g, s)                                                   # sum.addcmul_(g, g, value=1)
    return p + (k(-clr) * g) / (np.sqrt(s) + k(eps)), s


def adadelta_ref(p, g, sq, acc, *, lr, rho, eps, weight_decay, maximize):
    k = p.dtype.type
    g = -g if maximize else g
    if weight_decay != 0:
        g = _fma(k(weight_decay), p, g)
    sq = _fma(k(1 - rho) * g, g, sq * k(rho))                           # sq.mul_(rho).addcmul_(g, g, 1 - rho)
    d = np.sqrt(acc + k(eps)) / np.sqrt(sq + k(eps)) * g                # acc.add(eps).sqrt_().div_(std).mul_(g)
    acc = _fma(k(1 - rho) * d, d, acc * k(rho))
    return _fma(k(-lr), d, p), sq, acc                                  # param.add_(delta, alpha=-lr)


def _fused(name, n_states):
    """op(p, g, *states): run the fused op on one parameter; returns p and its non-None states."""
    def op(p, g, *states, **kw):
        dispatch.call(name, [p], [g], *[[s] for s in states], **kw)
        return (p,) + tuple(s for s in states if s is not None)
    return op


def _unpack(ref):
    """ref -> the same outputs as the op: drops the states that were None."""
    def r(*args, **kw):
        states = args[2:]
        out = ref(*args, **kw)
        return (out[0],) + tuple(o for o, s in zip(out[1:], states) if s is not None)
    return r


def _samples(configs, n_states, positive=()):
    """One sample per (shape, config); state k is drawn positive when k is in ``positive``."""
    def samples(rng):
        out = []
        for i, s in enumerate(SHAPES):
            states, kw = configs[i % len(configs)]
            args = [rng.uniform(-2, 2, s), rng.uniform(-2, 2, s)]
            for k in range(n_states):
                if not states[k]:
                    args.append(None)
                else:
                    args.append(rng.uniform(0.5, 2, s) if k in positive else rng.uniform(-0.5, 0.5, s))
            out.append(SampleInput(*args, grad=False, **kw))
        return out
    return samples


_SGD = dict(lr=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False, first=False)
SGD_CONFIGS = [
    ((False,), _SGD),
    ((True,), dict(_SGD, momentum=0.9, first=True, weight_decay=0.01)),
    ((True,), dict(_SGD, momentum=0.9, nesterov=True, weight_decay=0.1)),
    ((True,), dict(_SGD, momentum=0.5, dampening=0.3, maximize=True)),
]
_ADAM = dict(lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, step=1.0, amsgrad=False, maximize=False,
             decoupled_weight_decay=False)
ADAM_CONFIGS = [
    ((True, True, False), _ADAM),
    ((True, True, True), dict(_ADAM, amsgrad=True, weight_decay=0.1, step=3.0)),
    ((True, True, False), dict(_ADAM, decoupled_weight_decay=True, weight_decay=0.01, step=10.0, beta1=0.3)),
    ((True, True, False), dict(_ADAM, maximize=True, step=2.0)),
]
_RMS = dict(lr=0.01, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False, maximize=False)
RMS_CONFIGS = [
    ((True, False, False), _RMS),
    ((True, True, True), dict(_RMS, centered=True, momentum=0.9, weight_decay=0.1)),
    ((True, False, True), dict(_RMS, momentum=0.5, maximize=True)),
]
_ADAGRAD = dict(lr=0.1, lr_decay=0.0, eps=1e-10, weight_decay=0.0, step=1.0, maximize=False)
ADAGRAD_CONFIGS = [
    ((True,), _ADAGRAD),
    ((True,), dict(_ADAGRAD, lr_decay=0.1, weight_decay=0.1, step=4.0, maximize=True)),
]
_ADADELTA = dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, maximize=False)
ADADELTA_CONFIGS = [
    ((True, True), _ADADELTA),
    ((True, True), dict(_ADADELTA, lr=0.5, rho=0.8, weight_decay=0.1, maximize=True)),
]
_LOW = {"float16": (2e-3, 2e-3), "bfloat16": (2e-2, 1e-2)}

OPS = [
    OpInfo("sgd_step", _fused("sgd_step", 1), _unpack(sgd_ref), _samples(SGD_CONFIGS, 1), dtypes=FLOATS,
           grad=False, noncontig=False, tol=_LOW),
    OpInfo("adam_step", _fused("adam_step", 3), _unpack(adam_ref), _samples(ADAM_CONFIGS, 3, positive=(1, 2)),
           dtypes=FLOATS, grad=False, noncontig=False, tol=_LOW),
    OpInfo("rmsprop_step", _fused("rmsprop_step", 3), _unpack(rmsprop_ref),
           _samples(RMS_CONFIGS, 3, positive=(0,)), dtypes=FLOATS, grad=False, noncontig=False, tol=_LOW),
    OpInfo("adagrad_step", _fused("adagrad_step", 1), _unpack(adagrad_ref),
           _samples(ADAGRAD_CONFIGS, 1, positive=(0,)), dtypes=FLOATS, grad=False, noncontig=False, tol=_LOW),
    OpInfo("adadelta_step", _fused("adadelta_step", 2), _unpack(adadelta_ref),
           _samples(ADADELTA_CONFIGS, 2, positive=(0, 1)), dtypes=FLOATS, grad=False, noncontig=False, tol=_LOW),
]
