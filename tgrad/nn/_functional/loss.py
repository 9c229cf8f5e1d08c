"""Loss functions of ``torch.nn.functional``: one fused table op each; the deprecated
``size_average``/``reduce`` arguments map to ``reduction`` with PyTorch's warning."""

from ..._nn_functional import _op
from ...autograd.dispatch import node_class
from .._reduction import _legacy_reduction


def _shown_as(out, name):
    """Give ``out``'s grad_fn the name PyTorch's decomposition shows (a fused op standing for several)."""
    if out.grad_fn is not None and out.grad_fn.name() != name:
        out.grad_fn.__class__ = node_class(name)
    return out


def _nll_node_name(input, reduction):
    """nll_loss's node: NllLossBackward0 up to 2-D; nll_loss2d for (N, C, d1, ...), 3-D and 5-D+ inputs going
    through a reshape (so a 'none' loss is a ViewBackward0)."""
    if input.dim() <= 2:
        return "NllLossBackward0"
    return "ViewBackward0" if reduction == "none" and input.dim() != 4 else "NllLoss2DBackward0"




def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """log_softmax over the class dim (1, or 0 for 1-D input) + negative log-likelihood, fused.
    ``target``: class indices (int64) or class probabilities (same shape as input)."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    out = _op("cross_entropy", input, target, weight, ignore_index=ignore_index, reduction=reduction,
              label_smoothing=label_smoothing)
    if target.dtype.is_floating_point:      # PyTorch: -(w y' log_softmax(x)).sum(1), then .sum() / rows for 'mean'
        return _shown_as(out, "DivBackward1" if reduction == "mean" else "NegBackward0")
    return _shown_as(out, "AddBackward0" if label_smoothing > 0 else _nll_node_name(input, reduction))


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """-input[n, target[n]] * weight[target[n]], averaged over the weights of non-ignored targets."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    out = _op("nll_loss", input, target, weight, ignore_index=ignore_index, reduction=reduction)
    return _shown_as(out, _nll_node_name(input, reduction))


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-w (y log x + (1 - y) log(1 - x)), logs clamped at -100."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    return _op("binary_cross_entropy", input, target, weight, reduction=reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """binary_cross_entropy(sigmoid(x), y) computed stably; ``pos_weight`` scales the positive term."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    return _op("binary_cross_entropy_with_logits", input, target, weight, pos_weight, reduction=reduction)


def _weighted(loss, weight, input, reduction, mean_by_weight):
    """PyTorch's element-weighted regression losses: (loss * weight) reduced; mean divides by sum(weight)
    (mse, l1) or by the element count (huber)."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    w = loss * weight
    if reduction == "none":
        return w
    if reduction == "sum":
        return w.sum()
    if reduction == "mean":
        return w.sum() / weight.sum() if mean_by_weight else w.mean()
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """(x - y)^2, reduced."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if weight is not None:
        return _weighted(_op("mse_loss", input, target, reduction="none"), weight, input, reduction, True)
    return _op("mse_loss", input, target, reduction=reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """|x - y|, reduced."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if weight is not None:
        return _weighted(_op("l1_loss", input, target, reduction="none"), weight, input, reduction, True)
    return _op("l1_loss", input, target, reduction=reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 (x - y)^2 / beta where |x - y| < beta, else |x - y| - 0.5 beta."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if beta == 0.0:
        return _op("l1_loss", input, target, reduction=reduction)
    return _op("smooth_l1_loss", input, target, reduction=reduction, beta=beta)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 (x - y)^2 where |x - y| < delta, else delta (|x - y| - 0.5 delta)."""
    if weight is not None:
        return _weighted(_op("huber_loss", input, target, reduction="none", delta=delta), weight, input, reduction,
                         False)
    return _op("huber_loss", input, target, reduction=reduction, delta=delta)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target (log target - input) with ``input`` log-probabilities; 'batchmean' divides the sum by the batch."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    return _op("kl_div", input, target, reduction=reduction, log_target=log_target)
