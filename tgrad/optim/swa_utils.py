"""``tgrad.optim.swa_utils``: stochastic weight averaging and exponential moving averages of a model's weights
(``AveragedModel``, ``SWALR``, ``update_bn`` and the averaging functions), with PyTorch's update formulas.

EMA: avg <- lerp(avg, current, 1 - decay); SWA: avg <- lerp(avg, current, 1 / (n + 1)) after n averaged models,
both as ATen's ``_foreach_lerp_`` rounds them (the weight a float32 value for a float32 model).
"""
import copy
import itertools
import math

import numpy as np

from .. import dtypes as D
from .._creation import tensor
from ..autograd.grad_mode import no_grad
from ..nn.modules.module import Module
from ..nn.modules.normalization import _BatchNorm
from .lr_scheduler._base import LRScheduler, _format_param

__all__ = ["AveragedModel", "SWALR", "get_ema_avg_fn", "get_ema_multi_avg_fn", "get_swa_avg_fn",
           "get_swa_multi_avg_fn", "update_bn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay=0.999):
    """f(averaged list, current list, n): each averaged tensor <- decay * averaged + (1 - decay) * current."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_params, current_params, _):
        for e, c in zip(ema_params, current_params):
            if e.is_floating_point():
                e.lerp_(c, 1 - decay)
            else:
                e.copy_(e * decay + c * (1 - decay))
    return ema_update


def _swa_weight(num_averaged):
    """1 / (n + 1), computed as PyTorch does from the n_averaged tensor (a float32 quotient) or a number."""
    if hasattr(num_averaged, "item"):
        return float(np.float32(1) / np.float32(int(num_averaged.item()) + 1))
    return 1 / (num_averaged + 1)


def get_swa_multi_avg_fn():
    """f(averaged list, current list, n): each averaged tensor <- the mean of it (n models) and the current."""
    @no_grad()
    def swa_update(averaged_params, current_params, num_averaged):
        for a, c in zip(averaged_params, current_params):
            if a.is_floating_point():
                a.lerp_(c, _swa_weight(num_averaged))
            else:
                a.add_((c - a) / (num_averaged + 1) if hasattr(num_averaged, "item") else
                       (c - a) * (1.0 / (num_averaged + 1)))
    return swa_update


def get_ema_avg_fn(decay=0.999):
    """f(averaged, current, n) -> decay * averaged + (1 - decay) * current."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """f(averaged, current, n) -> averaged + (current - averaged) / (n + 1)."""
    @no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A deep copy of ``model`` (on ``device``) whose weights ``update_parameters(model)`` averages: equally
    (SWA) or by ``avg_fn`` / ``multi_avg_fn`` (e.g. ``get_ema_multi_avg_fn(0.999)``); the first call copies.
    ``use_buffers``: the buffers are averaged too (else copied from ``model``).  ``n_averaged`` is a buffer."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        assert avg_fn is None or multi_avg_fn is None, "Only one of avg_fn and multi_avg_fn should be provided"
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=D.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    @no_grad()
    def update_parameters(self, model):
        mine = (itertools.chain(self.module.parameters(), self.module.buffers()) if self.use_buffers
                else self.parameters())
        theirs = itertools.chain(model.parameters(), model.buffers()) if self.use_buffers else model.parameters()
        first = int(self.n_averaged.item()) == 0
        avg, cur = [], []
        for a, m in zip(mine, theirs):
            m = m.detach().to(a.device)
            avg.append(a.detach())
            cur.append(m)
            if first:
                a.detach().copy_(m)
        if not first:
            if self.avg_fn is None:
                groups = {}
                for a, m in zip(avg, cur):      # PyTorch groups by (device, dtype) for its foreach kernels
                    groups.setdefault((a.device, a.dtype), ([], []))
                    groups[a.device, a.dtype][0].append(a)
                    groups[a.device, a.dtype][1].append(m)
                fn = self.multi_avg_fn or get_swa_multi_avg_fn()
                for (dev, _), (aa, mm) in groups.items():
                    fn(aa, mm, self.n_averaged.to(dev))
            else:
                for a, m in zip(avg, cur):
                    a.copy_(self.avg_fn(a, m, self.n_averaged.to(a.device)))
        if not self.use_buffers:
            for b, bm in zip(self.module.buffers(), model.buffers()):
                b.detach().copy_(bm.detach().to(b.device))
        self.n_averaged += 1


@no_grad()
def update_bn(loader, model, device=None):
    """Recompute the BatchNorm running statistics of ``model`` by one pass over ``loader`` (batches, or
    tuples/lists whose first element is the input) as cumulative averages; momenta and mode are restored."""
    momenta = {}
    for m in model.modules():
        if isinstance(m, _BatchNorm):
            m.reset_running_stats()
            momenta[m] = m.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for m in momenta:
        m.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for m, mom in momenta.items():
        m.momentum = mom
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's lr to ``swa_lr`` over ``anneal_epochs`` steps ("cos" or "linear"), then holds it."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        for lr, group in zip(_format_param("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must by one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        return swa_lr if alpha == 1 else (lr - alpha * swa_lr) / (1 - alpha)

    def _set_anneal_func(self, strategy):
        self._anneal_strategy = strategy
        self.anneal_func = self._cosine_anneal if strategy == "cos" else self._linear_anneal

    def get_lr(self):
        """lr_t = swa_lr * alpha_t + lr_0 * (1 - alpha_t), lr_0 recovered from the current lr and alpha_{t-1}."""
        self._warn_get_lr()
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in self.optimizer.param_groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(self.optimizer.param_groups, prev)]

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
