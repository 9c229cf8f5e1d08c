"""softmax and log_softmax along a dim, with fused backward ops (tgrad/kernels/softmax.py).

The backward rules call ``softmax_backward`` / ``log_softmax_backward``, table entries themselves, so double
backward works.
"""
from .. import dtypes as D
from ..kernels import elementwise as KE
from ..kernels import softmax as KS
from ..tensor import _wrap_dim, empty
from . import Op, call as _call
from ._rows import contig3, float_check, rows3


# ------------------------------------------------------------------ softmax / log_softmax
def _softmax(log):
    def forward(input, *, dim, _stacklevel=None, dtype=None):
        x = input
        if dtype is not None:
            dt = D.to_dtype(dtype, "log_softmax" if log else "softmax")
            x = KE.copy(input, empty(input.shape, dt, input.device))
        float_check(x, "log_softmax_lastdim_kernel_impl" if log else "softmax_lastdim_kernel_impl")
        d = _wrap_dim(dim, x.dim())
        xs, outer, K, inner, sx = rows3(x, d)
        y = empty(x.shape, x.dtype, x.device)
        return KS.softmax(xs, y, (outer * inner, K, inner, sx, contig3(K, inner)), log)
    return forward


def _softmax_bwd_forward(log):
    def forward(grad_output, output, *, dim):
        d = _wrap_dim(dim, output.dim())
        gs, outer, K, inner, sg = rows3(grad_output, d)
        ys, _, _, _, sy = rows3(output, d)
        dx = empty(output.shape, output.dtype, output.device)
        return KS.softmax_backward(gs, ys, dx, (outer * inner, K, inner, sg, sy, contig3(K, inner)), log)
    return forward


def softmax_backward(ctx, grad):
    return (_call("softmax_backward", grad, ctx.saved["result"], dim=ctx.attrs["dim"]),)


def log_softmax_backward(ctx, grad):
    return (_call("log_softmax_backward", grad, ctx.saved["result"], dim=ctx.attrs["dim"]),)


def softmax_backward_backward(ctx, gg):
    """out = y*(g - s), s = sum(g*y): d/dg = softmax_backward(gg, y); d/dy = gg*(g - s) - g*sum(gg*y)."""
    g, y = ctx.saved["grad_output"], ctx.saved["output"]
    d = _wrap_dim(ctx.attrs["dim"], y.dim())
    gg_g = _call("softmax_backward", gg, y, dim=d) if ctx.needs_input_grad[0] else None
    gg_y = None
    if ctx.needs_input_grad[1]:
        s = (g * y).sum(d, keepdim=True)
        t = (gg * y).sum(d, keepdim=True)
        gg_y = gg * (g - s) - g * t
    return gg_g, gg_y


def log_softmax_backward_backward(ctx, gg):
    """out = g - exp(y)*sum(g): d/dg = gg - sum(gg*exp(y)); d/dy = -gg*exp(y)*sum(g)."""
    g, y = ctx.saved["grad_output"], ctx.saved["output"]
    d = _wrap_dim(ctx.attrs["dim"], y.dim())
    e = y.exp()
    gg_g = gg - (gg * e).sum(d, keepdim=True) if ctx.needs_input_grad[0] else None
    gg_y = -(gg * e * g.sum(d, keepdim=True)) if ctx.needs_input_grad[1] else None
    return gg_g, gg_y


SOFTMAX = Op("softmax", _softmax(False), softmax_backward, "SoftmaxBackward0", inputs=("self",), save=("result",),
             variants=("method", "function"))
LOG_SOFTMAX = Op("log_softmax", _softmax(True), log_softmax_backward, "LogSoftmaxBackward0", inputs=("self",),
                 save=("result",), variants=("method", "function"))
SOFTMAX_BACKWARD = Op("softmax_backward", _softmax_bwd_forward(False), softmax_backward_backward,
                      "SoftmaxBackwardDataBackward0", inputs=("grad_output", "output"), save=("grad_output", "output"))
LOG_SOFTMAX_BACKWARD = Op(
    "log_softmax_backward", _softmax_bwd_forward(True), log_softmax_backward_backward,
    "LogSoftmaxBackwardDataBackward0", inputs=("grad_output", "output"), save=("grad_output", "output"))


ENTRIES = [SOFTMAX, LOG_SOFTMAX, SOFTMAX_BACKWARD, LOG_SOFTMAX_BACKWARD]
