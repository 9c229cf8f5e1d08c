"""Fused optimizer steps (non-differentiable ops): ``sgd_step``, ``adam_step``, ``rmsprop_step``, ``adagrad_step``,
``adadelta_step``.

Inputs are lists: the parameters, their gradients and one list per state
tensor (same length; ``None`` where a state is unused).  Each forward updates
parameters and states in place with as few launches as possible (one per
dtype and device for up to 8 contiguous tensors, see ``kernels/optim.py``)
and returns None.  Scalars that change every step (lr, bias corrections) are
attrs passed to the kernels as runtime arguments.
"""
from ..kernels import elementwise as KE
from ..kernels._geometry import contiguous_strides
from ..kernels import optim as K
from ..tensor import empty
from . import Op


_CONTIGUOUS = {}     # shape -> its C-contiguous strides


def _contiguous(t):
    """``t.is_contiguous()``, decided by one comparison for the usual layout (a step checks every parameter,
    gradient and state tensor)."""
    shape = t._shape
    s = _CONTIGUOUS.get(shape)
    if s is None:
        if len(_CONTIGUOUS) >= 1024:
            _CONTIGUOUS.clear()
        s = _CONTIGUOUS[shape] = contiguous_strides(shape)
    return t._strides == s or t.is_contiguous()


def _step(op, hyper, constexprs, params, grads, *states):
    """Run optimizer ``op`` over the parameters: one ``multi_tensor_step`` per (device, dtype).

    The kernel wants contiguous tensors: a non-contiguous gradient is read from a
    contiguous copy, a non-contiguous parameter or state is updated in a contiguous
    copy that is then copied back (extra launches only for those tensors).
    """
    buckets, back = {}, []
    for p, g, *st in zip(params, grads, *states):
        dev = p._storage.device
        if g.dtype is not p.dtype or g._shape != p._shape or (g._storage.device is not dev
                                                               and g._storage.device != dev):
            raise RuntimeError(f"fused optimizer step: gradient of shape {list(g.shape)}, dtype {g.dtype}, "
                               f"device {g.device} does not match its parameter ({list(p.shape)}, {p.dtype}, "
                               f"{p.device})")
        col = [p, g, *st]
        for j, t in enumerate(col):
            if t is not None and not _contiguous(t):
                col[j] = KE.copy(t, empty(t.shape, t.dtype, t.device))
                if j != 1:
                    back.append((col[j], t))
        key = (dev.type, dev.index, p.dtype)
        cols = buckets.get(key)
        if cols is None:
            buckets[key] = [col]
        else:
            cols.append(col)
    for cols in buckets.values():
        K.multi_tensor_step(op, cols, hyper, constexprs)
    for tmp, t in back:
        KE.copy(tmp, t)


def sgd_step_forward(params, grads, momentum_buffers, *, lr, momentum, dampening, weight_decay, nesterov,
                     maximize, first):
    """SGD; ``first``: the momentum buffers are uninitialised and get the (decayed) gradient."""
    _step(K.SGD, [-lr, momentum, 1 - dampening, weight_decay],
          dict(MAXIMIZE=bool(maximize), HAS_WD=weight_decay != 0,
               MOMENTUM=0 if momentum == 0 else 1 if dampening == 0 else 2, FIRST=bool(first),
               NESTEROV=bool(nesterov)), params, grads, momentum_buffers)


SGD_STEP = Op("sgd_step", sgd_step_forward, None, None, inputs=("params", "grads", "momentum_buffers"))


def adam_hyper(lr, beta1, beta2, eps, weight_decay, step):
    """Adam's kernel hyper-parameters h0-h7 at step ``step`` (kernels/optim.py's ``_adam``)."""
    bc1 = 1 - beta1 ** step
    bc2 = 1 - beta2 ** step
    return [lr / bc1, 1 - beta1, beta2, 1 - beta2, eps, weight_decay, 1 - lr * weight_decay, bc2 ** 0.5]


def adam_step_forward(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, *, lr, beta1, beta2, eps,
                      weight_decay, step, amsgrad, maximize, decoupled_weight_decay):
    """Adam / AdamW at step ``step`` (>= 1) for every parameter given."""
    hyper = adam_hyper(lr, beta1, beta2, eps, weight_decay, step)
    _step(K.ADAM, hyper, dict(MAXIMIZE=bool(maximize), HAS_WD=weight_decay != 0,
                              DECOUPLED=bool(decoupled_weight_decay), AMSGRAD=bool(amsgrad)),
          params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs)


ADAM_STEP = Op("adam_step", adam_step_forward, None, None,
               inputs=("params", "grads", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs"))


def rmsprop_step_forward(params, grads, square_avgs, grad_avgs, momentum_buffers, *, lr, alpha, eps, weight_decay,
                         momentum, centered, maximize):
    _step(K.RMSPROP, [lr, alpha, 1 - alpha, eps, weight_decay, momentum],
          dict(MAXIMIZE=bool(maximize), HAS_WD=weight_decay != 0, CENTERED=bool(centered), MOMENTUM=momentum > 0),
          params, grads, square_avgs, grad_avgs, momentum_buffers)


RMSPROP_STEP = Op("rmsprop_step", rmsprop_step_forward, None, None,
                  inputs=("params", "grads", "square_avgs", "grad_avgs", "momentum_buffers"))


def adagrad_step_forward(params, grads, state_sums, *, lr, lr_decay, eps, weight_decay, step, maximize):
    """Adagrad at step ``step`` (>= 1): clr = lr / (1 + (step - 1) lr_decay)."""
    clr = lr / (1 + (step - 1) * lr_decay)
    _step(K.ADAGRAD, [clr, eps, weight_decay], dict(MAXIMIZE=bool(maximize), HAS_WD=weight_decay != 0),
          params, grads, state_sums)


ADAGRAD_STEP = Op("adagrad_step", adagrad_step_forward, None, None, inputs=("params", "grads", "state_sums"))


def adadelta_step_forward(params, grads, square_avgs, acc_deltas, *, lr, rho, eps, weight_decay, maximize):
    """Adadelta: sq = rho sq + (1 - rho) g^2, d = sqrt(acc + eps) / sqrt(sq + eps) g, acc = rho acc + (1 - rho) d^2,
    p -= lr d."""
    _step(K.ADADELTA, [lr, rho, 1 - rho, eps, weight_decay], dict(MAXIMIZE=bool(maximize), HAS_WD=weight_decay != 0),
          params, grads, square_avgs, acc_deltas)


ADADELTA_STEP = Op("adadelta_step", adadelta_step_forward, None, None,
                   inputs=("params", "grads", "square_avgs", "acc_deltas"))


ENTRIES = [SGD_STEP, ADAM_STEP, RMSPROP_STEP, ADAGRAD_STEP, ADADELTA_STEP]
