"""Optimizers written with in-place tensor ops, PyTorch's single-tensor algorithms op for op (so the same
roundings): ``Adamax``, ``NAdam``, ``RAdam``, ``Rprop``, ``ASGD``.  Each ``_update`` runs under ``no_grad``."""
from ..autograd.grad_mode import no_grad
from .._creation import full_like, ones, tensor, zeros_like
from .. import dtypes as D
from .optimizer import Optimizer, _bump_step, _check_hparams, _scalar_step


def _check_betas(betas):
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")


def _unsupported(name, **flags):
    for k, v in flags.items():
        if v:
            raise NotImplementedError(f"{name}: {k}=True is not supported by tgrad")


class _SingleTensor(Optimizer):
    """step(): for each parameter with a gradient, make its state on first use, bump its step, ``_update``."""
    STATE = ()      # names of zeros_like(p) state tensors

    def _init_state(self, p):
        state = self.state[p]
        state["step"] = _scalar_step()
        for name in self.STATE:
            state[name] = zeros_like(p)
        return state

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._closure(closure)
        with no_grad():
            for group in self.param_groups:
                for p, g in zip(*self._with_grad(group)):
                    state = self.state[p] if len(self.state[p]) else self._init_state(p)
                    step = _bump_step(state["step"])
                    self._update(group, p, -g if group["maximize"] else g, state, step)
        return loss


class Adadelta(_SingleTensor):
    """v = rho v + (1 - rho) g^2;  d = sqrt(u + eps) / sqrt(v + eps) g;  u = rho u + (1 - rho) d^2;  p -= lr d
    (g += weight_decay p first)."""
    STATE = ("square_avg", "acc_delta")

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check_hparams(lr=(lr, "Invalid learning rate"), eps=(eps, "Invalid epsilon value"),
                       weight_decay=(weight_decay, "Invalid weight_decay value"))
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _unsupported("Adadelta", capturable=capturable, differentiable=differentiable)
        super().__init__(params, {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
                                  "maximize": maximize, "capturable": capturable, "foreach": foreach,
                                  "differentiable": differentiable})

    def step(self, closure=None):
        """One update of every parameter that has a gradient (one fused launch per group, ``adadelta_step``:
        PyTorch's single-tensor update op for op); returns ``closure()``'s loss if given."""
        loss = self._closure(closure)
        for group in self.param_groups:
            params, grads = self._with_grad(group)
            if not params:
                continue
            states = []
            for p in params:
                state = self.state[p] if len(self.state[p]) else self._init_state(p)
                _bump_step(state["step"])
                states.append(state)
            self._fused("adadelta_step", params, grads, [s["square_avg"] for s in states],
                        [s["acc_delta"] for s in states], lr=float(group["lr"]), rho=float(group["rho"]),
                        eps=float(group["eps"]), weight_decay=float(group["weight_decay"]), maximize=group["maximize"])
        return loss


class Adamax(_SingleTensor):
    """m = lerp(m, g, 1 - beta1);  u = max(beta2 u, |g| + eps);  p -= lr / (1 - beta1^t) m / u."""
    STATE = ("exp_avg", "exp_inf")

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_hparams(lr=(lr, "Invalid learning rate"), eps=(eps, "Invalid epsilon value"),
                       weight_decay=(weight_decay, "Invalid weight_decay value"))
        _check_betas(betas)
        _unsupported("Adamax", capturable=capturable, differentiable=differentiable)
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                                  "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                                  "capturable": capturable})

    def _update(self, group, p, g, state, step):
        (beta1, beta2), lr, eps, wd = group["betas"], group["lr"], group["eps"], group["weight_decay"]
        if wd != 0:
            g = g.add(p, alpha=wd)
        exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
        exp_avg.lerp_(g, 1 - beta1)
        exp_inf.copy_(exp_inf.mul_(beta2).maximum(g.abs().add_(eps)))
        p.addcdiv_(exp_avg, exp_inf, value=-(lr / (1 - beta1 ** step)))


class NAdam(_SingleTensor):
    """Adam with Nesterov momentum and momentum decay: mu_t = beta1 (1 - 0.96^(t psi) / 2);
    p -= lr (1 - mu_t) / (1 - prod mu) g / d + lr mu_{t+1} / (1 - prod mu mu_{t+1}) m / d,
    d = sqrt(v / (1 - beta2^t)) + eps."""
    STATE = ("exp_avg", "exp_avg_sq")

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_hparams(lr=(lr, "Invalid learning rate"), eps=(eps, "Invalid epsilon value"),
                       weight_decay=(weight_decay, "Invalid weight_decay value"),
                       momentum_decay=(momentum_decay, "Invalid momentum_decay value"))
        _check_betas(betas)
        _unsupported("NAdam", capturable=capturable, differentiable=differentiable)
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                                  "momentum_decay": momentum_decay, "decoupled_weight_decay": decoupled_weight_decay,
                                  "maximize": maximize, "foreach": foreach, "capturable": capturable,
                                  "differentiable": differentiable})

    def _init_state(self, p):
        state = super()._init_state(p)
        state["mu_product"] = tensor(1.0, dtype=D.float32)
        return state

    def _update(self, group, p, g, state, step):
        (beta1, beta2), lr, eps, wd = group["betas"], group["lr"], group["eps"], group["weight_decay"]
        bias_correction2 = 1 - beta2 ** step
        if wd != 0:
            if group["decoupled_weight_decay"]:
                p.mul_(1 - lr * wd)
            else:
                g = g.add(p, alpha=wd)
        mu = beta1 * (1. - 0.5 * (0.96 ** (step * group["momentum_decay"])))
        mu_next = beta1 * (1. - 0.5 * (0.96 ** ((step + 1) * group["momentum_decay"])))
        mu_product = state["mu_product"]
        mu_product.mul_(mu)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.lerp_(g, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        denom = exp_avg_sq.div(bias_correction2).sqrt()
        prod = mu_product.item()
        denom.add_(eps)
        p.addcdiv_(g, denom, value=(-lr * (1. - mu) / (1. - prod)))
        p.addcdiv_(exp_avg, denom, value=(-lr * mu_next) / (1. - prod * mu_next))


class RAdam(_SingleTensor):
    """Rectified Adam: with rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t), rho_inf = 2 / (1 - beta2) - 1,
    p -= lr m_hat r_t sqrt(1 - beta2^t) / (sqrt(v) + eps) when rho_t > 5, else p -= lr m_hat."""
    STATE = ("exp_avg", "exp_avg_sq")

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        _check_hparams(lr=(lr, "Invalid learning rate"), eps=(eps, "Invalid epsilon value"),
                       weight_decay=(weight_decay, "Invalid weight_decay value"))
        _check_betas(betas)
        _unsupported("RAdam", capturable=capturable, differentiable=differentiable)
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                                  "foreach": foreach, "maximize": maximize, "capturable": capturable,
                                  "decoupled_weight_decay": decoupled_weight_decay,
                                  "differentiable": differentiable})

    def _update(self, group, p, g, state, step):
        (beta1, beta2), lr, eps, wd = group["betas"], group["lr"], group["eps"], group["weight_decay"]
        if wd != 0:
            if group["decoupled_weight_decay"]:
                p.mul_(1 - lr * wd)
            else:
                g = g.add(p, alpha=wd)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.lerp_(g, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        bias_corrected_exp_avg = exp_avg / bias_correction1
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            adaptive_lr = (bias_correction2 ** 0.5) / exp_avg_sq.sqrt().add_(eps)
            p.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, alpha=-1.0)
        else:
            p.add_(bias_corrected_exp_avg * lr, alpha=-1.0)


class Rprop(_SingleTensor):
    """Resilient backprop: per-element step sizes times etaplus where g has kept its sign, etaminus where it
    flipped (and that element skips this update), clamped to step_sizes; p -= sign(g) step_size."""
    STATE = ("prev",)

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        _check_hparams(lr=(lr, "Invalid learning rate"))
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        _unsupported("Rprop", capturable=capturable, differentiable=differentiable)
        super().__init__(params, {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
                                  "maximize": maximize, "differentiable": differentiable, "capturable": capturable})

    def _init_state(self, p):
        state = super()._init_state(p)
        state["step_size"] = full_like(p, self._group_of(p)["lr"])
        return state

    def _group_of(self, p):
        return next(g for g in self.param_groups if any(q is p for q in g["params"]))

    def _update(self, group, p, g, state, step):
        (etaminus, etaplus), (lo, hi) = group["etas"], group["step_sizes"]
        prev, step_size = state["prev"], state["step_size"]
        sign = g.mul(prev).sign()
        sign[sign.gt(0)] = etaplus
        sign[sign.lt(0)] = etaminus
        sign[sign.eq(0)] = 1
        step_size.mul_(sign).clamp_(lo, hi)
        g = g.clone()
        g[sign.eq(etaminus)] = 0
        p.addcmul_(g.sign(), step_size, value=-1)
        prev.copy_(g)


class ASGD(_SingleTensor):
    """Averaged SGD: p = p (1 - lambd eta) - eta g;  ax += mu (p - ax);  eta = lr / (1 + lambd lr t)^alpha,
    mu = 1 / max(1, t - t0)."""
    STATE = ("ax",)

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        _check_hparams(lr=(lr, "Invalid learning rate"), weight_decay=(weight_decay, "Invalid weight_decay value"))
        _unsupported("ASGD", capturable=capturable, differentiable=differentiable)
        super().__init__(params, {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0, "weight_decay": weight_decay,
                                  "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                                  "capturable": capturable})

    def _init_state(self, p):
        state = super()._init_state(p)
        state["eta"] = tensor(float(self._group_of(p)["lr"]), dtype=D.float32)
        state["mu"] = ones((), dtype=D.float32)
        return state

    _group_of = Rprop._group_of

    def _update(self, group, p, g, state, step):
        lr, lambd, alpha, t0, wd = group["lr"], group["lambd"], group["alpha"], group["t0"], group["weight_decay"]
        if wd != 0:
            g = g.add(p, alpha=wd)
        eta, mu, ax = state["eta"], state["mu"], state["ax"]
        eta_value = eta.item()
        p.mul_(1 - lambd * eta_value)
        p.add_(g, alpha=-eta_value)
        if mu.item() != 1:
            ax.add_(p.sub(ax).mul_(mu.to(p.device)))
        else:
            ax.copy_(p)
        eta.fill_(lr / ((1 + lambd * lr * step) ** alpha))
        mu.fill_(1 / max(1, step - t0))
