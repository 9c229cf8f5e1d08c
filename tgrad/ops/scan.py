"""Scans with a carry: cummax, cummin (values and int64 indices) and logcumsumexp, along one dim.

cummax/cummin's backward scatters the gradient to the indices (ATen's ``cummaxmin_backward``);
logcumsumexp's is ATen's (TensorFlow's) reversed logcumsumexp of log|grad| - result, split by sign.
"""
from .. import dtypes as D
from ..kernels import elementwise as KE
from ..kernels import scan as KS
from ..tensor import _wrap_dim, empty
from . import Op, call


def _geometry(x, d):
    """(M, M2, K, stride_m1, stride_m2, stride_k) of contiguous ``x`` scanned along dim ``d``."""
    shape = x.shape
    K = shape[d]
    M2 = 1
    for s in shape[d + 1:]:
        M2 *= s
    n = 1
    for s in shape:
        n *= s
    return n // max(K, 1), M2, K, K * M2, 1, M2


def _contiguous(x, dtype=None):
    dtype = dtype or x.dtype
    if x.is_contiguous() and dtype is x.dtype:
        return x
    return KE.copy(x, empty(x.shape, dtype, x.device))


# ------------------------------------------------------------------ cummax, cummin
def _cumextreme(self, dim, minimum):
    d = _wrap_dim(dim, self.dim())
    work = D.int64 if self.dtype is D.bool_ else self.dtype        # bool: scanned as 0/1
    x = _contiguous(self, work)
    vals = empty(self.shape, work, self.device)
    idx = empty(self.shape, D.int64, self.device)
    if self.dim() == 0:
        KE.copy(x, vals)
        KE.fill(idx, 0)
    else:
        if work.is_floating_point:
            fill = float("inf") if minimum else float("-inf")
        else:
            fill = D.iinfo(work).max if minimum else D.iinfo(work).min
        KS.cumextreme_rows(x, _geometry(x, d), vals, idx, minimum, fill)
    if work is not self.dtype:
        vals = KE.copy(vals, empty(self.shape, self.dtype, self.device))
    return vals, idx


def cummax_forward(self, *, dim):
    """values[..., k, ...] = max of self[..., :k+1, ...] along ``dim``; indices: its last position (NaN wins)."""
    return _cumextreme(self, dim, False)


def cummin_forward(self, *, dim):
    return _cumextreme(self, dim, True)


def cumextreme_backward(ctx, grad, _gidx=None):
    """d self = zeros.scatter_add(dim, indices, grad)."""
    x = ctx.saved["self"]
    if x.dim() == 0:
        return (grad,)
    return (grad.new_zeros(x.shape).scatter_add(ctx.attrs["dim"], ctx.saved["result1"], grad),)


CUMMAX = Op("cummax", cummax_forward, cumextreme_backward, "CummaxBackward0", save=("self", "result1"), outputs=2,
            nondiff_outputs=(1,), variants=("method", "function"))
CUMMIN = Op("cummin", cummin_forward, cumextreme_backward, "CumminBackward0", save=("self", "result1"), outputs=2,
            nondiff_outputs=(1,), variants=("method", "function"))


# ------------------------------------------------------------------ logcumsumexp
def logcumsumexp_forward(self, *, dim):
    """out[..., k, ...] = log sum_{j <= k} exp(self[..., j, ...]) along ``dim``."""
    d = _wrap_dim(dim, self.dim())
    if not self.dtype.is_floating_point:
        raise NotImplementedError(f'"logcumsumexp_out_cpu" not implemented for '
                                  f"'{D.TENSOR_TYPE_NAMES[self.dtype][:-6]}'")
    x = _contiguous(self)
    out = empty(self.shape, self.dtype, self.device)
    if self.dim() == 0:
        return KE.copy(x, out)
    return KS.logcumsumexp_rows(x, _geometry(x, d), out)


def _reverse_logcumsumexp(x, d):
    return call("logcumsumexp", x.flip(d), dim=d).flip(d)


def logcumsumexp_backward(ctx, grad):
    """ATen's: exp(rev_lcse(log g+ - r) + x) - exp(rev_lcse(log g- - r) + x), g+/g- the positive / negative
    parts of grad (log 0 -> the dtype's lowest value), r the result."""
    x, r = ctx.saved["self"], ctx.saved["result"]
    if grad.dim() == 0 or grad.numel() == 0:
        return (grad,)
    d = _wrap_dim(ctx.attrs["dim"], x.dim())
    low = D.finfo(grad.dtype).min
    log_abs = grad.abs().log()
    pos = log_abs.masked_fill(~(grad > 0), low)
    neg = log_abs.masked_fill(~(grad < 0), low)
    return ((_reverse_logcumsumexp(pos - r, d) + x).exp() - (_reverse_logcumsumexp(neg - r, d) + x).exp(),)


LOGCUMSUMEXP = Op("logcumsumexp", logcumsumexp_forward, logcumsumexp_backward, "LogcumsumexpBackward0",
                  save=("self", "result"), variants=("method", "function"))

ENTRIES = [CUMMAX, CUMMIN, LOGCUMSUMEXP]
