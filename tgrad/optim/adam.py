"""``optim.Adam`` and ``optim.AdamW`` (PyTorch's update, fused launches per group and step count):

    g = grad (negated if maximize); Adam: g += weight_decay * p; AdamW: p *= 1 - lr * weight_decay
    m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g^2;  amsgrad: vmax = max(vmax, v), v := vmax
    p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

The bias corrections are computed on the host and passed as runtime scalars.
"""
from .._creation import zeros_like
from .optimizer import Optimizer, _bump_step, _check_hparams, _scalar_step


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        _check_hparams(lr=(lr, "Invalid learning rate"), eps=(eps, "Invalid epsilon value"))
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        _check_hparams(weight_decay=(weight_decay, "Invalid weight_decay value"))
        betas = tuple(float(b) for b in betas)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._closure(closure)
        for group in self.param_groups:
            params, grads = self._with_grad(group)
            by_step = {}
            for p, g in zip(params, grads):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_step()
                    state["exp_avg"] = zeros_like(p)
                    state["exp_avg_sq"] = zeros_like(p)
                    if group["amsgrad"]:
                        state["max_exp_avg_sq"] = zeros_like(p)
                by_step.setdefault(_bump_step(state["step"]), []).append((p, g))
            beta1, beta2 = group["betas"]
            for step, pairs in by_step.items():
                ps = [p for p, _ in pairs]
                states = [self.state[p] for p in ps]
                self._fused("adam_step", ps, [g for _, g in pairs], [s["exp_avg"] for s in states],
                            [s["exp_avg_sq"] for s in states], [s.get("max_exp_avg_sq") for s in states],
                            lr=float(group["lr"]), beta1=float(beta1), beta2=float(beta2), eps=float(group["eps"]),
                            weight_decay=float(group["weight_decay"]), step=step, amsgrad=group["amsgrad"],
                            maximize=group["maximize"], decoupled_weight_decay=group["decoupled_weight_decay"])
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay (default 1e-2)."""

    _sparse_name = "Adam"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
