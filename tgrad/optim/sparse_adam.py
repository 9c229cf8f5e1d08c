"""``optim.SparseAdam``: Adam on the entries a sparse gradient holds (``nn.Embedding(sparse=True)``), PyTorch's
``sparse_adam`` op for op (float32 operations in its order, so the bits match):

    g = grad.coalesce();  m_old, v_old = exp_avg, exp_avg_sq at g's indices
    du = (g - m_old) * (1 - b1);  exp_avg += sparse(du);  dv = (g^2 - v_old) * (1 - b2);  exp_avg_sq += sparse(dv)
    p += sparse(-lr * sqrt(1 - b2^t) / (1 - b1^t) * (du + m_old) / (sqrt(dv + v_old) + eps))
"""
import math

from .._creation import zeros_like
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from .optimizer import Optimizer


class SparseAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize})
        sparse_params = [[i, j] for i, g in enumerate(self.param_groups) for j, p in enumerate(g["params"])
                         if p.is_sparse]
        if sparse_params:
            raise ValueError(f"Sparse params at indices {sparse_params}: SparseAdam requires dense parameter tensors")
        complex_params = [[i, j] for i, g in enumerate(self.param_groups) for j, p in enumerate(g["params"])
                          if p.is_complex()]
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not support complex "
                             "parameters")

    def step(self, closure=None):
        """One update of every parameter that has a (sparse) gradient; returns ``closure()``'s loss if given."""
        loss = self._closure(closure)
        with no_grad():
            for group in self.param_groups:
                beta1, beta2 = group["betas"]
                lr = group["lr"]
                lr = lr.item() if isinstance(lr, Tensor) else lr
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if not p.grad.is_sparse:
                        raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = 0
                        state["exp_avg"] = zeros_like(p)
                        state["exp_avg_sq"] = zeros_like(p)
                    state["step"] += 1
                    _sparse_adam(p, p.grad, state["exp_avg"], state["exp_avg_sq"], state["step"], group["eps"],
                                 beta1, beta2, lr, group.get("maximize", False))
        return loss


def _sparse_adam(param, grad, exp_avg, exp_avg_sq, step, eps, beta1, beta2, lr, maximize):
    grad = grad if not maximize else -grad
    grad = grad.coalesce()      # the update is non-linear: indices must be unique
    grad_indices, grad_values = grad._indices(), grad._values()
    if grad_values.numel() == 0:
        return
    size = grad.size()

    def make_sparse(values):
        return grad.new(grad_indices, values, size)

    old_exp_avg_values = exp_avg.sparse_mask(grad)._values()
    exp_avg_update_values = grad_values.sub(old_exp_avg_values).mul_(1 - beta1)
    exp_avg.add_(make_sparse(exp_avg_update_values))
    old_exp_avg_sq_values = exp_avg_sq.sparse_mask(grad)._values()
    exp_avg_sq_update_values = grad_values.pow(2).sub_(old_exp_avg_sq_values).mul_(1 - beta2)
    exp_avg_sq.add_(make_sparse(exp_avg_sq_update_values))
    numer = exp_avg_update_values.add_(old_exp_avg_values)
    exp_avg_sq_update_values.add_(old_exp_avg_sq_values)
    denom = exp_avg_sq_update_values.sqrt_().add_(eps)
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    step_size = lr * math.sqrt(bias_correction2) / bias_correction1
    param.add_(make_sparse(-step_size * numer.div_(denom)))
