"""Connectionist temporal classification loss (``F.ctc_loss``), ATen's cpu algorithm written with tgrad ops.

The forward runs the log-space alpha recursion over time for the whole batch at once (labels extended with
blanks, l' = (blank, l1, blank, l2, ..., blank), size K = 2 S + 1); the backward runs the beta recursion and
returns ATen's gradient  d/dlp[t, n, c] = exp(lp) - exp(logsumexp_{s: l'_s = c}(alpha + beta) + nll - lp),
which is the gradient through a log_softmax (as PyTorch's is), not the raw partial derivative.
"""
from ... import _creation, _functional
from ...autograd.function import Function
from ...dtypes import int64 as _int64

_NEG = float("-inf")


def _lse3(a, b, c):
    """log(exp(a) + exp(b) + exp(c)) elementwise, shifted by the max (0 when all are -inf), in ATen's order."""
    m = a.maximum(b).maximum(c)
    m = m.masked_fill(m == _NEG, 0.0)
    return ((a - m).exp() + (b - m).exp() + (c - m).exp()).log() + m


def _shift(x, k, fill_left):
    """x (N, K) shifted by k positions along dim 1 (right if fill_left else left), padded with -inf."""
    pad = x.new_full((x.shape[0], k), _NEG)
    return _functional.cat([pad, x[:, :-k]] if fill_left else [x[:, k:], pad], 1)


class CtcLoss(Function):
    """Per-sample negative log-likelihood (N,) of log_probs (T, N, C) given extended labels ext (N, K)."""

    @staticmethod
    def forward(ctx, log_probs, ext, in_len, tgt_len, zero_infinity):
        T, N, _ = log_probs.shape
        K = ext.shape[1]
        lpe = log_probs.gather(2, ext.unsqueeze(0).expand(T, N, K))
        s = _creation.arange(K, device=log_probs.device).unsqueeze(0)
        prev2 = _functional.cat([ext.new_full((N, 2), -1), ext[:, :-2]], 1)
        skip = (s >= 2) & (ext != prev2)                           # l'_s may follow l'_{s-2}
        alpha = _functional.where(s < 2, lpe[0], _NEG)
        alphas = [alpha]
        for t in range(1, T):
            alpha = _lse3(alpha, _shift(alpha, 1, True), _shift(alpha, 2, True).masked_fill(~skip, _NEG)) + lpe[t]
            alphas.append(alpha)
        A = _functional.stack(alphas)
        last = (in_len - 1).clamp(min=0)
        a_end = A.gather(0, last.view(1, N, 1).expand(1, N, K))[0]
        l1 = a_end.gather(1, (2 * tgt_len).unsqueeze(1))[:, 0]
        l2 = a_end.gather(1, (2 * tgt_len - 1).clamp(min=0).unsqueeze(1))[:, 0].masked_fill(tgt_len == 0, _NEG)
        m = l1.maximum(l2)
        m = m.masked_fill(m == _NEG, 0.0)
        nll = -(((l1 - m).exp() + (l2 - m).exp()).log() + m)
        ctx.save_for_backward(log_probs, ext, in_len, tgt_len, A, lpe, nll)
        ctx.zero_infinity = zero_infinity
        return nll

    @staticmethod
    def backward(ctx, grad_nll):
        log_probs, ext, in_len, tgt_len, A, lpe, nll = ctx.saved_tensors
        T, N, C = log_probs.shape
        K = ext.shape[1]
        s = _creation.arange(K, device=log_probs.device).unsqueeze(0)
        end = (s == 2 * tgt_len.unsqueeze(1)) | ((s == 2 * tgt_len.unsqueeze(1) - 1) & (tgt_len.unsqueeze(1) > 0))
        next2 = _functional.cat([ext[:, 2:], ext.new_full((N, 2), -1)], 1)
        skip_next = (ext != next2) & (s < K - 2)                     # l'_{s+2} may follow l'_s
        betas = [None] * T
        beta = lpe.new_full((N, K), _NEG)
        for t in range(T - 1, -1, -1):
            if t < T - 1:
                rec = _lse3(beta, _shift(beta, 1, False), _shift(beta, 2, False).masked_fill(~skip_next, _NEG)) + lpe[t]
            else:
                rec = beta
            here = (in_len == t + 1).unsqueeze(1)
            before = (in_len > t + 1).unsqueeze(1)
            beta = _functional.where(here & end, lpe[t], _functional.where(before, rec, _NEG))
            betas[t] = beta
        lab = A + _functional.stack(betas)                         # (T, N, K)
        onehot = ext.unsqueeze(2) == _creation.arange(C, device=ext.device)      # (N, K, C)
        M = _functional.where(onehot.unsqueeze(0), lab.unsqueeze(3), _NEG)      # (T, N, K, C)
        mx = M.amax(2)
        mx = mx.masked_fill(mx == _NEG, 0.0)
        res = (M - mx.unsqueeze(2)).exp().sum(2).log() + mx                    # (T, N, C)
        grad = (log_probs.exp() - (res + nll.view(1, N, 1) - log_probs).exp()) * grad_nll.view(1, N, 1)
        keep = _creation.arange(T, device=ext.device).unsqueeze(1) < in_len.unsqueeze(0)    # (T, N)
        if ctx.zero_infinity:
            keep = keep & (nll != float("inf")).unsqueeze(0)
        return grad.masked_fill(~keep.unsqueeze(2), 0.0), None, None, None, None


CtcLoss._backward_cls.__name__ = CtcLoss._backward_cls._name = "CtcLossBackward0"


def _lengths(x, name, device):
    t = x if hasattr(x, "shape") else _creation.tensor(list(x), dtype=_int64)
    if t.dtype.is_floating_point:
        raise RuntimeError(f"ctc_loss(): {name} must be integral, got {t.dtype}")
    return t.to(device=device, dtype=_int64).reshape(-1)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """CTC loss of log_probs (T, N, C) (or (T, C)) against targets (N, S) padded or (sum(target_lengths),)
    concatenated; 'mean' divides each loss by its target length (at least 1) and averages over the batch."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs, targets = log_probs.unsqueeze(1), targets.unsqueeze(0)
    if log_probs.dim() != 3:
        raise RuntimeError(f"ctc_loss(): expected log_probs of 2 or 3 dimensions, got {log_probs.dim()}")
    if not log_probs.dtype.is_floating_point:
        raise RuntimeError(f"\"ctc_loss_cpu\" not implemented for '{str(log_probs.dtype).split('.')[-1].title()}'")
    T, N, C = log_probs.shape
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    dev = log_probs.device
    in_len = _lengths(input_lengths, "input_lengths", dev)
    tgt_len = _lengths(target_lengths, "target_lengths", dev)
    if in_len.numel() != N:
        raise RuntimeError(f"input_lengths must be of size batch_size")
    if tgt_len.numel() != N:
        raise RuntimeError(f"target_lengths must be of size batch_size")
    il, tl = in_len.tolist(), tgt_len.tolist()
    if max(il, default=0) > T:
        raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value {max(il)} (while "
                           "checking arguments for ctc_loss_cpu)")
    S = max(tl, default=0)
    targets = targets.to(device=dev, dtype=_int64)
    if targets.dim() == 1:                       # concatenated: cut into a padded (N, S) batch
        offs = [sum(tl[:i]) for i in range(N)]
        if targets.numel() < sum(tl):
            raise RuntimeError(f"Expected tensor to have size at least {sum(tl)} at dimension 0, but got size "
                               f"{targets.numel()} for argument #2 'targets' (while checking arguments for "
                               "ctc_loss_cpu)")
        idx = [[o + min(j, max(n - 1, 0)) for j in range(max(S, 1))] for o, n in zip(offs, tl)]
        targets = targets[_creation.tensor(idx, dtype=_int64, device=dev)] if targets.numel() else \
            targets.new_zeros((N, max(S, 1)))
    elif targets.shape[1] < S:
        raise RuntimeError(f"Expected tensor to have size at least {S} at dimension 1, but got size "
                           f"{targets.shape[1]} for argument #2 'targets' (while checking arguments for ctc_loss_cpu)")
    K = 2 * S + 1
    s = _creation.arange(K, device=dev).unsqueeze(0)
    lab = targets[:, :max(S, 1)].gather(1, ((s - 1) // 2).clamp(0, max(S - 1, 0)).expand(N, K))
    ext = _functional.where((s % 2 == 1) & (s < 2 * tgt_len.unsqueeze(1) + 1), lab, blank)
    res = CtcLoss.apply(log_probs, ext, in_len, tgt_len, zero_infinity)
    if zero_infinity:
        res = _functional.where(res == float("inf"), res.new_zeros(()), res)
    if reduction == "mean":
        return (res / tgt_len.to(res.dtype).clamp(min=1)).mean()
    if reduction == "sum":
        return res.sum()
    return res[0] if unbatched else res
