"""``optim.Adagrad`` (PyTorch's update, fused launches per group and step count):

    g = grad (negated if maximize) + weight_decay * p
    sum = sum + g^2;  p = p - clr * g / (sqrt(sum) + eps),  clr = lr / (1 + (t - 1) * lr_decay)
"""
from .._creation import full_like
from .._sparse import sparse_coo_tensor
from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _bump_step, _check_hparams, _scalar_step


class Adagrad(Optimizer):
    _sparse_name = None     # sparse gradients take PyTorch's single-tensor sparse update (_sparse_update)

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_hparams(lr=(lr, "Invalid learning rate"), lr_decay=(lr_decay, "Invalid lr_decay value"),
                       weight_decay=(weight_decay, "Invalid weight_decay value"),
                       initial_accumulator_value=(initial_accumulator_value,
                                                  "Invalid initial_accumulator_value value"),
                       eps=(eps, "Invalid epsilon value"))
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p)

    def _init_state(self, p):
        state = self.state[p]
        state["step"] = _scalar_step()
        state["sum"] = full_like(p, self.defaults["initial_accumulator_value"])

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._closure(closure)
        for group in self.param_groups:
            params, grads = self._with_grad(group)
            by_step = {}
            for p, g in zip(params, grads):
                if len(self.state[p]) == 0:
                    self._init_state(p)
                if g.is_sparse:
                    self._sparse_update(group, p, g)
                    continue
                by_step.setdefault(_bump_step(self.state[p]["step"]), []).append((p, g))
            for step, pairs in by_step.items():
                ps = [p for p, _ in pairs]
                self._fused("adagrad_step", ps, [g for _, g in pairs], [self.state[p]["sum"] for p in ps],
                            lr=float(group["lr"]), lr_decay=float(group["lr_decay"]), eps=float(group["eps"]),
                            weight_decay=float(group["weight_decay"]), step=step, maximize=group["maximize"])
        return loss

    def _sparse_update(self, group, p, g):
        """PyTorch's _single_tensor_adagrad for a sparse gradient, op for op."""
        state = self.state[p]
        step = _bump_step(state["step"])
        if group["weight_decay"] != 0:
            raise RuntimeError("weight_decay option is not compatible with sparse gradients")
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        with no_grad():
            g = (g if not group["maximize"] else -g).coalesce()
            idx, vals = g._indices(), g._values()
            state["sum"].add_(sparse_coo_tensor(idx, vals.pow(2), g.size()))
            std_values = state["sum"].sparse_mask(g)._values().sqrt_().add_(group["eps"])
            p.add_(sparse_coo_tensor(idx, vals / std_values, g.size()), alpha=-clr)
