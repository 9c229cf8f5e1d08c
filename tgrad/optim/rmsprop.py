"""``optim.RMSprop`` (PyTorch's update, one fused launch per group):

    g = grad (negated if maximize) + weight_decay * p
    sq = alpha * sq + (1 - alpha) * g^2
    avg = sqrt(sq - ga^2) + eps with ga = lerp(ga, g, 1 - alpha) if centered, else sqrt(sq) + eps
    momentum > 0: buf = momentum * buf + g / avg; p -= lr * buf    else: p -= lr * g / avg
"""
from .._creation import zeros_like
from .optimizer import Optimizer, _bump_step, _check_hparams, _scalar_step


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_hparams(lr=(lr, "Invalid learning rate"), eps=(eps, "Invalid epsilon value"),
                       momentum=(momentum, "Invalid momentum value"),
                       weight_decay=(weight_decay, "Invalid weight_decay value"), alpha=(alpha, "Invalid alpha value"))
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
                    "weight_decay": weight_decay, "capturable": capturable, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._closure(closure)
        for group in self.param_groups:
            params, grads = self._with_grad(group)
            if not params:
                continue
            for p in params:
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_step()
                    state["square_avg"] = zeros_like(p)
                    if group["momentum"] > 0:
                        state["momentum_buffer"] = zeros_like(p)
                    if group["centered"]:
                        state["grad_avg"] = zeros_like(p)
                _bump_step(state["step"])
            states = [self.state[p] for p in params]
            self._fused("rmsprop_step", params, grads, [s["square_avg"] for s in states],
                        [s.get("grad_avg") for s in states], [s.get("momentum_buffer") for s in states],
                        lr=float(group["lr"]), alpha=float(group["alpha"]), eps=float(group["eps"]),
                        weight_decay=float(group["weight_decay"]), momentum=float(group["momentum"]),
                        centered=group["centered"], maximize=group["maximize"])
        return loss
