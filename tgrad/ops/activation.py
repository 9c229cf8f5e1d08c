"""Activations: relu, hardtanh, relu6, leaky_relu, elu, selu, gelu, silu, mish, softplus, hardsigmoid,
hardswish, logsigmoid, sigmoid, tanh, softshrink, hardshrink (FNs in tgrad/kernels/activation.py on kernels/elementwise.py's kernels).

Each activation's backward is one fused op "<name>_backward"(grad_output, x) = grad_output * f'(x)
(x is the output for relu/sigmoid/tanh); that op's own backward gives grad_output * f''(x) from tgrad ops.
"""
from .. import dtypes as D
from ..kernels import _geometry as G
from ..kernels import elementwise as K
from ..kernels import activation as KA
from ..kernels import complex as KC
from ..kernels._lang import compute_type, split64
from . import Op, call as _c
from . import complex as _complex
from ._pointwise import _float_result, _full, _gt0, _launch_unary, _out

_INV_SQRT_2PI = 0.3989422804014327
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
_GELU_K = 0.7978845608028654
_GELU_C = 0.044715


def _sig(x):
    return _c("sigmoid", x)


def _d2_elu(x, alpha=1.0, scale=1.0):
    return _c("where", _gt0(x), _full(0, x), x.exp().mul(alpha * scale))


def _d2_gelu(x, approximate="none"):
    xx = x.mul(x)
    if approximate == "none":
        return xx.mul(-0.5).exp().mul(_INV_SQRT_2PI).mul(xx.neg().add(2))
    t = _c("tanh", x.add(xx.mul(x).mul(_GELU_C)).mul(_GELU_K))
    du = xx.mul(3 * _GELU_C).add(1).mul(_GELU_K)
    d2u = x.mul(6 * _GELU_K * _GELU_C)
    return t.mul(t).neg().add(1).mul(du.add(x.mul(0.5).mul(d2u.sub(t.mul(du).mul(du).mul(2)))))


def _d2_silu(x):
    s = _sig(x)
    return s.mul(s.neg().add(1)).mul(x.mul(s.mul(-2).add(1)).add(2))


def _d2_mish(x):
    t = _c("tanh", _c("softplus", x))
    s = _sig(x)
    inner = x.mul(s.neg().add(1)).add(2).sub(x.mul(s).mul(t).mul(2))
    return t.mul(t).neg().add(1).mul(s).mul(inner)


def _d2_softplus(x, beta=1.0, threshold=20.0):
    s = _sig(x.mul(beta))
    d2 = s.mul(s.neg().add(1)).mul(beta)
    return _c("where", _c("gt", x.mul(beta), _full(threshold, x)), _full(0, x), d2)


def _d2_hardswish(x):
    inside = _c("logical_and", _c("gt", x, _full(-3, x)), _c("lt", x, _full(3, x)))
    return _c("where", inside, _full(1.0 / 3.0, x), _full(0, x))


def _d2_logsigmoid(x):
    s = _sig(x)
    return s.mul(s.sub(1))


class _Act:
    """fwd(**attrs) -> (fn, p0, p1); bwd(**battrs) -> (fn, p0, p1); battrs(**attrs) -> the backward op's attrs;
    d2(x, **battrs) -> f''(x) (None: piecewise linear)."""

    def __init__(self, name, node, bnode, fwd, bwd, battrs=None, d2=None, result=False, int_ok=False,
                 bwd_name=None, d1_complex=None):
        self.name, self.node, self.bnode = name, node, bnode
        self.d1_complex = d1_complex        # f'(z) from the saved (conjugated) tensor, for complex inputs
        self.fwd, self.bwd, self.d2, self.result, self.int_ok = fwd, bwd, d2, result, int_ok
        self.battrs = battrs or (lambda **a: a)
        self.bwd_name = bwd_name or name + "_backward"


def _no_attrs(fn):
    return lambda: (fn, 0.0, 0.0)


def _gelu_fwd(approximate="none"):
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return (KA.gelu_fn if approximate == "none" else KA.gelu_tanh_fn), 0.0, 0.0


def _gelu_bwd(approximate="none"):
    return (KA.gelu_backward_fn if approximate == "none" else KA.gelu_tanh_backward_fn), 0.0, 0.0


def activation(name, node, bnode, fwd, bwd, variants=(), inplace=False, **kw):
    """The table rows of activation ``name``: the op (with its public ``variants``), and its fused backward op
    unless ``bwd`` is None (relu6 and selu reuse hardtanh's and elu's)."""
    a = _Act(name, node, bnode, fwd, bwd, **kw)

    def forward(self, *, out=None, **attrs):
        if self.dtype._kind == 3 and a.d1_complex is not None:
            return _complex.unary(KC.UNARY[a.name], self, out, a.name)
        fn, p0, p1 = a.fwd(**attrs)
        dt = self.dtype if (a.int_ok and self.dtype is not D.bool_) else _float_result(self.dtype)
        return _launch_unary(fn, self, out, dt, p0, p1, name=a.name)

    def backward(ctx, g):
        x = ctx.saved["result" if a.result else "self"]
        if x.dtype._kind == 3:      # grad * conj(f'(z)), PyTorch's convention
            return (g.mul(a.d1_complex(x.conj())),)
        return (_c(a.bwd_name, g, x, **a.battrs(**ctx.attrs)),)

    ops = [Op(a.name, forward, backward, a.node, save=("result" if a.result else "self",), variants=variants,
              inplace=inplace)]
    if a.bwd is None:
        return tuple(ops)
    xname = "output" if a.result else "self"

    def bwd_forward(grad_output, x, *, out=None, **attrs):
        fn, p0, p1 = a.bwd(**attrs)
        dt = D.result_type(grad_output, x)
        shape = G.broadcast_shapes(grad_output.shape, x.shape)
        o = _out(out, shape, dt, grad_output.device, a.bwd_name)
        return K.binary(fn, grad_output, x, o, p0, p1, compute=compute_type(dt))

    def bwd_backward(ctx, gg):
        g, x = ctx.saved["grad_output"], ctx.saved[xname]
        need_g, need_x = ctx.needs_input_grad
        dg = _c(a.bwd_name, gg, x, **ctx.attrs) if need_g else None
        dx = gg.mul(g).mul(a.d2(x, **ctx.attrs)) if (need_x and a.d2 is not None) else None
        return dg, dx

    ops.append(Op(a.bwd_name, bwd_forward, bwd_backward, a.bnode, inputs=("grad_output", xname),
                  save=("grad_output", xname)))
    return tuple(ops)


RELU, RELU_BACKWARD = activation("relu", "ReluBackward0", "ThresholdBackwardBackward0", _no_attrs(KA.relu_fn),
                                 _no_attrs(KA.relu_backward_fn), result=True, int_ok=True,
                                 variants=("method", "function"), inplace=True)
HARDTANH, HARDTANH_BACKWARD = activation(
    "hardtanh", "HardtanhBackward0", "HardtanhBackwardBackward0",
    lambda min_val=-1.0, max_val=1.0: (KA.hardtanh_fn, float(min_val), float(max_val)),
    lambda min_val=-1.0, max_val=1.0: (KA.hardtanh_backward_fn, float(min_val), float(max_val)))
RELU6, = activation("relu6", "HardtanhBackward0", None, lambda: (KA.hardtanh_fn, 0.0, 6.0), None,
                    battrs=lambda: {"min_val": 0.0, "max_val": 6.0}, bwd_name="hardtanh_backward")
LEAKY_RELU, LEAKY_RELU_BACKWARD = activation(
    "leaky_relu", "LeakyReluBackward0", "LeakyReluBackwardBackward0",
    lambda negative_slope=0.01: (KA.leaky_relu_fn, *split64(negative_slope)),
    lambda negative_slope=0.01: (KA.leaky_relu_backward_fn, *split64(negative_slope)))
ELU, ELU_BACKWARD = activation(
    "elu", "EluBackward0", "EluBackwardBackward0", lambda alpha=1.0: (KA.elu_fn, float(alpha), 1.0),
    lambda alpha=1.0, scale=1.0: ((KA.selu_backward_fn, 0.0, 0.0) if (alpha, scale) == (SELU_ALPHA, SELU_SCALE)
                                  else (KA.elu_backward_fn, float(alpha), float(scale))),
    battrs=lambda alpha=1.0: {"alpha": alpha, "scale": 1.0}, d2=_d2_elu)
SELU, = activation("selu", "EluBackward0", None, lambda: (KA.selu_fn, 0.0, 0.0), None,
                   battrs=lambda: {"alpha": SELU_ALPHA, "scale": SELU_SCALE}, bwd_name="elu_backward",
                   variants=("function",))
GELU, GELU_BACKWARD = activation("gelu", "GeluBackward0", "GeluBackwardBackward0", _gelu_fwd, _gelu_bwd, d2=_d2_gelu)
SILU, SILU_BACKWARD = activation(
    "silu", "SiluBackward0", "SiluBackwardBackward0", _no_attrs(KA.silu_fn), _no_attrs(KA.silu_backward_fn),
    d2=_d2_silu)
MISH, MISH_BACKWARD = activation(
    "mish", "MishBackward0", "MishBackwardBackward0", _no_attrs(KA.mish_fn), _no_attrs(KA.mish_backward_fn),
    d2=_d2_mish)
SOFTPLUS, SOFTPLUS_BACKWARD = activation(
    "softplus", "SoftplusBackward0", "SoftplusBackwardBackward0",
    lambda beta=1.0, threshold=20.0: (KA.softplus_fn, float(beta), float(threshold)),
    lambda beta=1.0, threshold=20.0: (KA.softplus_backward_fn, float(beta), float(threshold)),
    d2=_d2_softplus)
HARDSIGMOID, HARDSIGMOID_BACKWARD = activation(
    "hardsigmoid", "HardsigmoidBackward0", "HardsigmoidBackwardBackward0", _no_attrs(KA.hardsigmoid_fn),
    _no_attrs(KA.hardsigmoid_backward_fn))
HARDSWISH, HARDSWISH_BACKWARD = activation(
    "hardswish", "HardswishBackward0", "HardswishBackwardBackward0", _no_attrs(KA.hardswish_fn),
    _no_attrs(KA.hardswish_backward_fn), d2=_d2_hardswish)
LOGSIGMOID, LOGSIGMOID_BACKWARD = activation(
    "logsigmoid", "LogSigmoidBackward0", "LogSigmoidBackwardBackward0", _no_attrs(KA.logsigmoid_fn),
    _no_attrs(KA.logsigmoid_backward_fn), d2=_d2_logsigmoid)
SIGMOID, SIGMOID_BACKWARD = activation(
    "sigmoid", "SigmoidBackward0", "SigmoidBackwardBackward0", _no_attrs(KA.sigmoid_fn),
    _no_attrs(KA.sigmoid_backward_fn), d2=lambda y: y.mul(-2).add(1), result=True,
    d1_complex=lambda y: y.mul(y.neg().add(1)),
    variants=("method", "function"), inplace=True)
TANH, TANH_BACKWARD = activation(
    "tanh", "TanhBackward0", "TanhBackwardBackward0", _no_attrs(KA.tanh_fn), _no_attrs(KA.tanh_backward_fn),
    d2=lambda y: y.mul(-2), result=True, variants=("method", "function"), inplace=True,
    d1_complex=lambda y: y.mul(y).neg().add(1))


SOFTSHRINK, SOFTSHRINK_BACKWARD = activation(
    "softshrink", "SoftshrinkBackward0", "SoftshrinkBackwardBackward0",
    lambda lambd=0.5: (KA.softshrink_fn, *split64(lambd)), lambda lambd=0.5: (KA.shrink_backward_fn, *split64(lambd)))
HARDSHRINK, HARDSHRINK_BACKWARD = activation(
    "hardshrink", "HardshrinkBackward0", "HardshrinkBackwardBackward0",
    lambda lambd=0.5: (KA.hardshrink_fn, *split64(lambd)), lambda lambd=0.5: (KA.shrink_backward_fn, *split64(lambd)),
    variants=("method", "function"))


ENTRIES = [RELU, RELU_BACKWARD, HARDTANH, HARDTANH_BACKWARD, RELU6, LEAKY_RELU, LEAKY_RELU_BACKWARD, ELU,
           ELU_BACKWARD, SELU, GELU, GELU_BACKWARD, SILU, SILU_BACKWARD, MISH, MISH_BACKWARD, SOFTPLUS,
           SOFTPLUS_BACKWARD, HARDSIGMOID, HARDSIGMOID_BACKWARD, HARDSWISH, HARDSWISH_BACKWARD, LOGSIGMOID,
           LOGSIGMOID_BACKWARD, SIGMOID, SIGMOID_BACKWARD, TANH, TANH_BACKWARD, SOFTSHRINK, SOFTSHRINK_BACKWARD,
           HARDSHRINK, HARDSHRINK_BACKWARD]
