"""``optim.SGD`` (PyTorch's update, one fused launch per group):

    g = grad (negated if maximize) + weight_decay * p
    buf = g on the first step, else momentum * buf + (1 - dampening) * g
    g = g + momentum * buf if nesterov else buf          (when momentum != 0)
    p = p - lr * g
"""
from .._creation import empty_like
from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _check_hparams


class SGD(Optimizer):
    _sparse_name = None     # sparse gradients take PyTorch's single-tensor loop (_sparse_step)

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False,
                 foreach=None, differentiable=False, fused=None):
        _check_hparams(lr=(lr, "Invalid learning rate"), momentum=(momentum, "Invalid momentum value"),
                       weight_decay=(weight_decay, "Invalid weight_decay value"))
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": weight_decay,
                    "nesterov": nesterov, "maximize": maximize, "foreach": foreach, "differentiable": differentiable,
                    "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._closure(closure)
        for group in self.param_groups:
            params, grads = self._with_grad(group)
            if not params:
                continue
            if any(g.is_sparse for g in grads):
                self._sparse_step(group, params, grads)
                continue
            attrs = dict(lr=float(group["lr"]), momentum=float(group["momentum"]),
                         dampening=float(group["dampening"]), weight_decay=float(group["weight_decay"]),
                         nesterov=group["nesterov"], maximize=group["maximize"])
            if group["momentum"] == 0:
                self._fused("sgd_step", params, grads, [None] * len(params), first=False, **attrs)
                continue
            # parameters without a momentum buffer yet start it from their gradient
            fresh = [self.state[p].get("momentum_buffer") is None for p in params]
            for first in (True, False):
                idx = [i for i, f in enumerate(fresh) if f == first]
                if not idx:
                    continue
                ps = [params[i] for i in idx]
                if first:
                    for p in ps:
                        self.state[p]["momentum_buffer"] = empty_like(p)
                self._fused("sgd_step", ps, [grads[i] for i in idx],
                            [self.state[p]["momentum_buffer"] for p in ps], first=first, **attrs)
        return loss

    def _sparse_step(self, group, params, grads):
        """PyTorch's _single_tensor_sgd, op for op (sparse gradients and momentum buffers stay sparse)."""
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        wd, nesterov = group["weight_decay"], group["nesterov"]
        with no_grad():
            for p, g in zip(params, grads):
                g = g if not group["maximize"] else -g
                if wd != 0:
                    g = g.add(p, alpha=wd)
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = state["momentum_buffer"] = g.detach().clone()
                    else:
                        buf.mul_(momentum).add_(g, alpha=1 - dampening)
                    g = g.add(buf, alpha=momentum) if nesterov else buf
                p.add_(g, alpha=-lr)
