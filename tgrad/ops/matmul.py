"""Linear algebra: mm, bmm, mv, dot, addmm, baddbmm, the fused ``linear``, and ``matmul``'s dispatch.

Every product is one launch of ``kernels.matmul.matmul_kernel`` (operands by
strides: transposes and broadcast batch dims cost no copy).  Backward rules
are products again (``grad_a = grad @ b^T``, ``grad_b = a^T @ grad``).

``linear(input, weight, bias, activation=None)``: y = act(x @ W^T + b) in one
launch (bias and activation in the epilogue); grad_fn ``AddmmBackward0``
whatever the activation and bias (PyTorch shows AddmmBackward0 for 2-D input
with bias, MmBackward0 without, and a separate activation node).  Its
backward is two launches: ``linear_grad_input`` dX = (dY * act'(v)) @ W and
``linear_grad_weight`` dW = (dY * act'(v))^T @ X with db = column sums of
dY * act'(v) computed by the same kernel; act'(v) is applied to dY as it is
loaded.  v is the saved output y (relu: y > 0, tanh: 1 - y^2, sigmoid:
y (1 - y)); for gelu the pre-activation z is recomputed (one more launch).
These two ops and ``act_grad`` (g * act^(k)(v)) have backward rules of their
own, so linear is differentiable twice (three times for the activations).
"""
from .. import dtypes as D
from ..kernels import _geometry as G
from ..kernels import elementwise as KE
from .. import backends
from ..kernels import matmul as KM
from ..tensor import empty, scalar
from . import Op, call as _c
from .shape import expand_forward


def _matmul(a, b, out, **kw):
    """The matmul launcher with PyTorch's TF32 switch (``tgrad.backends.cuda.matmul.allow_tf32``)."""
    return KM.matmul(a, b, out, allow_tf32=backends.cuda.matmul.allow_tf32, **kw)


# C++ type names PyTorch prints in dtype errors.
_CPP = {"float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double",
        "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
        "bool": "bool"}


def _scalar_name(dt):
    return D.TENSOR_TYPE_NAMES[dt][:-len("Tensor")]


# PyTorch's kernel names (cpu, cuda) in its error for bool operands; every other dtype is supported.
_KERNEL = {"mm": ("addmm_impl_cpu_", "addmm_cuda"), "bmm": ("bmm", "bmm_cuda"),
           "baddbmm": ("baddbmm", "baddbmm_cuda"), "mv": ("addmv_impl_cpu", "addmv_impl_cuda"), "dot": ("dot", "dot")}


def _check_not_bool(name, t):
    if t.dtype is D.bool_:
        kind = _KERNEL[name][t.device.type != "cpu"]
        raise NotImplementedError(f"\"{kind}\" not implemented for 'Bool'")


def _mm_dtype_check(a, b):
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_CPP[a.dtype.name]} != "
                           f"{_CPP[b.dtype.name]}")
    _check_not_bool("mm", a)


def _t(x):
    """Transposed view of a 2-D tensor (forward-side, no autograd)."""
    (m, n), (s0, s1) = x._shape, x._strides
    return x._view_of((n, m), (s1, s0))


def _as_col(v):
    """(K,) -> (K, 1) view."""
    return v._view_of((v.shape[0], 1), (v.stride(0), 0))


def _rows(x):
    """(..., K) -> (M, K) view when the leading dims merge into one stride, else a contiguous copy."""
    shape = x._shape
    if len(shape) == 2:
        return x
    K = shape[-1]
    M = 1
    for d in shape[:-1]:
        M *= d
    lead, st = G.collapse(x.shape[:-1] or (1,), [list(x.stride()[:-1]) or [0]])
    if len(lead) == 1:
        return x._view_of((M, K), (st[0][0] if M > 1 else K, x.stride(-1)))
    c = empty(x.shape, x.dtype, x.device)
    KE.copy(x, c)
    return c._view_of((M, K), (K, 1))


def _mat(t, shape):
    """``t`` (..., n) viewed as the 2-D (M, n) matrix of ``shape`` (t was made contiguous by us)."""
    return t._view_of(shape, G.contiguous_strides(shape))


# ------------------------------------------------------------------ mm / bmm / mv / dot
def mm_forward(self, mat2):
    if self.dim() != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.dim() != 2:
        raise RuntimeError("mat2 must be a matrix")
    (M, K), (K2, N) = self.shape, mat2.shape
    if K != K2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({M}x{K} and {K2}x{N})")
    _mm_dtype_check(self, mat2)
    return _matmul(self, mat2, empty((M, N), self.dtype, self.device))


def mm_backward(ctx, grad):
    s, m2 = ctx.saved.get("self"), ctx.saved.get("mat2")
    need = ctx.needs_input_grad
    return (_c("mm", grad, _c("t", m2)) if need[0] else None,
            _c("mm", _c("t", s), grad) if need[1] else None)


MM = Op("mm", mm_forward, mm_backward, "MmBackward0", inputs=("self", "mat2"), save=("self", "mat2"),
        meta=("self_sym_sizes", "self_sym_strides", "mat2_sym_sizes", "mat2_sym_strides"),
        variants=("method", "function"))


def _bmm_check(b1, b2, name1="batch1", name2="batch2"):
    if b1.dim() != 3:
        raise RuntimeError(f"{name1} must be a 3D tensor")
    if b2.dim() != 3:
        raise RuntimeError(f"{name2} must be a 3D tensor")
    B, M, K = b1.shape
    if tuple(b2.shape[:2]) != (B, K):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{B}, {K}] but got: "
                           f"[{b2.shape[0]}, {b2.shape[1]}].")
    return B, M, b2.shape[2]


def bmm_forward(self, mat2):
    B, M, N = _bmm_check(self, mat2)
    if self.dtype is not mat2.dtype:
        raise RuntimeError(f"expected scalar type {_scalar_name(self.dtype)} but found {_scalar_name(mat2.dtype)}")
    _check_not_bool("bmm", self)
    return _matmul(self, mat2, empty((B, M, N), self.dtype, self.device))


def bmm_backward(ctx, grad):
    s, m2 = ctx.saved.get("self"), ctx.saved.get("mat2")
    need = ctx.needs_input_grad
    return (_c("bmm", grad, _c("transpose", m2, dim0=1, dim1=2)) if need[0] else None,
            _c("bmm", _c("transpose", s, dim0=1, dim1=2), grad) if need[1] else None)


BMM = Op("bmm", bmm_forward, bmm_backward, "BmmBackward0", inputs=("self", "mat2"), save=("self", "mat2"),
         variants=("method", "function"))


def mv_forward(self, vec):
    if self.dim() != 2 or vec.dim() != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {self.dim()}, {vec.dim()}")
    M, K = self.shape
    if vec.shape[0] != K:
        raise RuntimeError(f"size mismatch, got input ({M}), mat ({M}x{K}), vec ({vec.shape[0]})")
    if self.dtype is not vec.dtype:
        n = [_scalar_name(t.dtype) for t in (vec, self, vec)]
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {n[0]}, {n[1]}, and {n[2]}")
    _check_not_bool("mv", self)
    out = empty((M,), self.dtype, self.device)
    _matmul(self, _as_col(vec), _as_col(out))
    return out


def mv_backward(ctx, grad):
    s, v = ctx.saved.get("self"), ctx.saved.get("vec")
    need = ctx.needs_input_grad
    return (_c("mul", _c("unsqueeze", grad, dim=1), v) if need[0] else None,
            _c("mv", _c("t", s), grad) if need[1] else None)


MV = Op("mv", mv_forward, mv_backward, "MvBackward0", inputs=("self", "vec"), save=("self", "vec"),
        variants=("method", "function"))


def dot_forward(self, tensor):
    if self.dim() != 1 or tensor.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {self.dim()}D and {tensor.dim()}D tensors")
    if self.dtype is not tensor.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {_scalar_name(self.dtype)} "
                           f"and {_scalar_name(tensor.dtype)}")
    n, m = self.shape[0], tensor.shape[0]
    if n != m:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the same number "
                           f"of elements, but got {n} and {m} elements respectively")
    _check_not_bool("dot", self)
    out = empty((), self.dtype, self.device)
    row = self._view_of((1, n), (0, self.stride(0)))
    _matmul(row, _as_col(tensor), out._view_of((1, 1), (1, 1)))
    return out


def dot_backward(ctx, grad):
    return _dot_grads(ctx, grad, ctx.saved.get("self"), ctx.saved.get("tensor"))


DOT = Op("dot", dot_forward, dot_backward, "DotBackward0", inputs=("self", "tensor"), save=("self", "tensor"),
         variants=("method", "function"))


def _dot_grads(ctx, grad, a, b):
    """(grad * b, grad * a), each if needed: dot's and (real tensors') vdot's gradients."""
    need = ctx.needs_input_grad
    return (_c("mul", grad, b) if need[0] else None, _c("mul", grad, a) if need[1] else None)


def vdot_backward(ctx, grad):
    """Real tensors: vdot is dot (the conjugate of a real vector is itself)."""
    return _dot_grads(ctx, grad, ctx.saved.get("self"), ctx.saved.get("other"))


VDOT = Op("vdot", dot_forward, vdot_backward, "VdotBackward0", inputs=("self", "other"), save=("self", "other"),
          variants=("method", "function"))


# ------------------------------------------------------------------ addmm / baddbmm
def addmm_forward(self, mat1, mat2, *, beta=1, alpha=1):
    if mat1.dim() != 2:
        raise RuntimeError("mat1 must be a matrix, got {}-D tensor".format(mat1.dim()))
    if mat2.dim() != 2:
        raise RuntimeError("mat2 must be a matrix, got {}-D tensor".format(mat2.dim()))
    (M, K), (K2, N) = mat1.shape, mat2.shape
    if K != K2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({M}x{K} and {K2}x{N})")
    if self.dtype is not mat2.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {_scalar_name(self.dtype)} and "
                           f"{_scalar_name(mat2.dtype)}")
    _mm_dtype_check(mat1, mat2)
    c = expand_forward(self, size=(M, N))
    return _matmul(mat1, mat2, empty((M, N), mat1.dtype, mat1.device), c=c, alpha=alpha, beta=beta)


def _scaled(g, s):
    return g if s == 1 else _c("mul", g, _c_scalar(g, s))


def _c_scalar(like, s):
    return scalar(s, like.dtype, like.device)


def addmm_backward(ctx, grad):
    a = ctx.attrs
    beta, alpha = a.get("beta", 1), a.get("alpha", 1)
    m1, m2 = ctx.saved.get("mat1"), ctx.saved.get("mat2")
    need = ctx.needs_input_grad
    return (_scaled(grad, beta) if need[0] else None,
            _scaled(_c("mm", grad, _c("t", m2)), alpha) if need[1] else None,
            _scaled(_c("mm", _c("t", m1), grad), alpha) if need[2] else None)


ADDMM = Op("addmm", addmm_forward, addmm_backward, "AddmmBackward0", inputs=("self", "mat1", "mat2"),
           save=("mat1", "mat2"), variants=("method", "function"), inplace=True)


def baddbmm_forward(self, batch1, batch2, *, beta=1, alpha=1):
    B, M, N = _bmm_check(batch1, batch2)
    if not (self.dtype is batch1.dtype is batch2.dtype):
        raise RuntimeError(f"Input dtypes must be the same, got: input {_CPP[self.dtype.name]}, batch1: "
                           f"{_CPP[batch1.dtype.name]}, batch2: {_CPP[batch2.dtype.name]}")
    _check_not_bool("baddbmm", self)
    c = expand_forward(self, size=(B, M, N))
    return _matmul(batch1, batch2, empty((B, M, N), self.dtype, self.device), c=c, alpha=alpha, beta=beta)


def baddbmm_backward(ctx, grad):
    a = ctx.attrs
    beta, alpha = a.get("beta", 1), a.get("alpha", 1)
    b1, b2 = ctx.saved.get("batch1"), ctx.saved.get("batch2")
    need = ctx.needs_input_grad
    return (_scaled(grad, beta) if need[0] else None,
            _scaled(_c("bmm", grad, _c("transpose", b2, dim0=1, dim1=2)), alpha) if need[1] else None,
            _scaled(_c("bmm", _c("transpose", b1, dim0=1, dim1=2), grad), alpha) if need[2] else None)


BADDBMM = Op("baddbmm", baddbmm_forward, baddbmm_backward, "BaddbmmBackward0", inputs=("self", "batch1", "batch2"),
             save=("batch1", "batch2"), variants=("method", "function"), inplace=True)


# ------------------------------------------------------------------ linear (fused)
def _check_activation(activation):
    if activation not in KM.ACTIVATIONS:
        raise ValueError(f"linear: activation must be one of None, 'relu', 'gelu', 'tanh', 'sigmoid', "
                         f"got {activation!r}")


def linear_forward(input, weight, bias=None, *, activation=None):
    """y = act(input @ weight^T + bias): input (..., in), weight (out, in), bias (out,) or None."""
    if input.dim() == 0 or weight.dim() == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are {input.dim()}D and "
                           f"{weight.dim()}D")
    if weight.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {weight.dim()}D")
    if weight.dim() == 1:
        raise NotImplementedError("linear: a 1-D weight is not supported; use weight.unsqueeze(0)")
    _check_activation(activation)
    IN = input._shape[-1]
    OUT, IN2 = weight._shape
    lead = input._shape[:-1]
    M = 1
    for d in lead:
        M *= d
    if IN != IN2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({M}x{IN} and {IN2}x{OUT})")
    c = None
    if bias is not None:        # addmm's checks (PyTorch 2.13's wording), else mm's
        if bias.dtype is not weight.dtype:
            raise RuntimeError(f"self and mat2 must have the same dtype, but got {_scalar_name(bias.dtype)} and "
                               f"{_scalar_name(weight.dtype)}")
        if input.dtype is not weight.dtype:
            raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {_scalar_name(input.dtype)} and "
                               f"{_scalar_name(weight.dtype)}")
        c = expand_forward(bias, size=(M, OUT))
    _mm_dtype_check(input, weight)
    out = empty(lead + (OUT,), input.dtype, input.device)
    _matmul(_rows(input), _t(weight), _mat(out, (M, OUT)), c=c, act=activation)
    return out


def linear_backward(ctx, grad):
    x, w, b = ctx.saved.get("input"), ctx.saved.get("weight"), ctx.saved.get("bias")
    act = ctx.attrs.get("activation")
    v = ctx.attrs.get("relu_output")        # set when the engine folded a following relu's backward in
    if v is not None:
        act = "relu"
    elif act == "gelu":
        v = _c("linear", x, w, b)           # z: recomputed rather than kept alive
    elif act is not None:
        v = ctx.saved["result"]
    need = ctx.needs_input_grad
    gx = _c("linear_grad_input", grad, w, v, activation=act) if need[0] else None
    gw = gb = None
    if need[1] or (b is not None and need[2]):
        r = _c("linear_grad_weight", grad, x, v, activation=act, bias=b is not None)
        gw, gb = r if b is not None else (r, None)
    return gx, gw, gb


LINEAR = Op("linear", linear_forward, linear_backward, "AddmmBackward0", inputs=("input", "weight", "bias"),
            save=("input", "weight", "bias", "result"),
            save_if={"result": lambda attrs: attrs.get("activation") not in (None, "gelu")})


def linear_grad_input_forward(grad, weight, v=None, *, activation=None):
    """dX = (grad * act'(v)) @ weight: grad (..., out), weight (out, in) -> (..., in)."""
    lead = tuple(grad.shape[:-1])
    OUT, IN = weight.shape
    out = empty(lead + (IN,), grad.dtype, grad.device)
    g = _rows(grad)
    _matmul(g, weight, _mat(out, (g.shape[0], IN)), v=_rows(v) if activation else None, dact=activation)
    return out


def linear_grad_weight_forward(grad, input, v=None, *, activation=None, bias=False):
    """dW = (grad * act'(v))^T @ input (out, in); with ``bias`` also db = its column sums (out,)."""
    OUT, IN = grad.shape[-1], input.shape[-1]
    dw = empty((OUT, IN), grad.dtype, grad.device)
    db = empty((OUT,), grad.dtype, grad.device) if bias else None
    _matmul(_t(_rows(grad)), _rows(input), dw, v=_t(_rows(v)) if activation else None, dact=activation,
              rowsum=db)
    return (dw, db) if bias else dw


def _act_grad(g, v, act, order):
    return g if act is None else _c("act_grad", g, v, activation=act, order=order)


def linear_grad_input_backward(ctx, ggx):
    g, w, v = ctx.saved.get("grad"), ctx.saved.get("weight"), ctx.saved.get("v")
    act = ctx.attrs.get("activation")
    need = ctx.needs_input_grad
    h = _c("linear", ggx, w, None) if (need[0] or need[2]) else None
    return (_act_grad(h, v, act, 1) if need[0] else None,
            _c("linear_grad_weight", g, ggx, v, activation=act) if need[1] else None,
            _act_grad(_c("mul", h, g), v, act, 2) if (need[2] and act is not None) else None)


# grad_fn names as PyTorch's double backward shows them: dX = grad.mm(W) (MmBackward0), dW = mm(...).t() (TBackward0)
LINEAR_GRAD_INPUT = Op(
    "linear_grad_input", linear_grad_input_forward, linear_grad_input_backward, "MmBackward0",
    inputs=("grad", "weight", "v"), save=("grad", "weight", "v"))


def linear_grad_weight_backward(ctx, ggw, ggb=None):
    g, x, v = ctx.saved.get("grad"), ctx.saved.get("input"), ctx.saved.get("v")
    act = ctx.attrs.get("activation")
    need = ctx.needs_input_grad
    h = _c("linear", x, ggw, ggb if ctx.attrs.get("bias") else None) if (need[0] or need[2]) else None
    return (_act_grad(h, v, act, 1) if need[0] else None,
            _c("linear_grad_input", g, ggw, v, activation=act) if need[1] else None,
            _act_grad(_c("mul", h, g), v, act, 2) if (need[2] and act is not None) else None)


LINEAR_GRAD_WEIGHT = Op(
    "linear_grad_weight", linear_grad_weight_forward, linear_grad_weight_backward, "TBackward0",
    inputs=("grad", "input", "v"), save=("grad", "input", "v"))


def act_grad_forward(grad, v, *, activation, order):
    """grad * act^(order)(v), the order-th derivative of the activation (v: y, or z for gelu), order 1..3."""
    _check_activation(activation)
    shape = G.broadcast_shapes(grad.shape, v.shape)
    out = empty(shape, grad.dtype, grad.device)
    return KE.binary(KM.DACT_FNS[activation], grad, v, out, alpha=float(order))


def act_grad_backward(ctx, gg):
    g, v = ctx.saved.get("grad"), ctx.saved.get("v")
    act, k = ctx.attrs["activation"], ctx.attrs["order"]
    need = ctx.needs_input_grad
    if need[1] and k == 3:
        raise RuntimeError(f"linear: derivatives of {act} beyond the third are not implemented")
    return (_c("act_grad", gg, v, activation=act, order=k) if need[0] else None,
            _c("act_grad", _c("mul", gg, g), v, activation=act, order=k + 1) if need[1] else None)


ACT_GRAD = Op("act_grad", act_grad_forward, act_grad_backward, "ActGradBackward0", inputs=("grad", "v"),
              save=("grad", "v"))


# ------------------------------------------------------------------ matmul (composite, PyTorch's dispatch)
def _should_fold(a, b):
    """PyTorch's rule: fold the >= 3-D operand into a matrix (mm/mv) instead of a batched bmm."""
    a_larger = a.dim() >= b.dim()
    t1 = a if a_larger else b.mT
    t2 = b if a_larger else a
    if not (t1.dim() >= 3 and t2.dim() <= 2):
        return False
    if t2.requires_grad:
        return True
    if a.dim() == 2:
        return False
    if t1.numel() == 0:
        return True
    sh, st = t1.shape, t1.stride()
    return all(st[i] == st[i + 1] * sh[i + 1] for i in range(t1.dim() - 2))


def matmul(a, b):
    """PyTorch's ``matmul`` (same ops, so the same grad_fn chain): dot, mv, mm, a folded mm/mv when one
    side is >= 3-D and the other a vector or matrix, else broadcast batches through bmm."""
    da, db = a.dim(), b.dim()
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D")
    if da == 1 and db == 1:
        return _c("dot", a, b)
    if da == 2 and db == 1:
        return _c("mv", a, b)
    if da == 1 and db == 2:
        return _c("squeeze_dim", _c("mm", _c("unsqueeze", a, dim=0), b), dim=0)
    if da == 2 and db == 2:
        return _c("mm", a, b)
    if _should_fold(a, b):
        transpose = db > da
        t1 = b.mT if transpose else a
        t2 = (a.t() if da == 2 else a) if transpose else b
        shape = tuple(t1.shape[:-1])
        rows = 1
        for d in shape:
            rows *= d
        folded = t1.reshape(rows, t1.shape[-1])
        if t2.dim() == 1:
            return _c("unsafe_view", _c("mv", folded, t2), size=shape)
        out = _c("unsafe_view", _c("mm", folded, t2), size=shape + (t2.shape[1],))
        return out.mT.contiguous() if transpose else out
    if da == 3 and db == 3 and a.shape[0] != b.shape[0]:
        if a.shape[0] == 1 and a.requires_grad:
            return matmul(_c("squeeze_dim", a, dim=0), b)
        if b.shape[0] == 1 and b.requires_grad:
            return matmul(a, _c("squeeze_dim", b, dim=0))
    n = a.shape[-2] if da > 1 else 1
    k1 = a.shape[-1]
    k2, p = (b.shape[-2], b.shape[-1]) if db > 1 else (b.shape[0], 1)
    batch = G.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    nb = 1
    for s in batch:
        nb *= s
    a3 = _c("expand", a, size=batch + (n, k1)).reshape(nb, n, k1)
    if db == 1:
        b3 = _c("unsqueeze", _c("expand", b, size=batch + (k2,)).reshape(nb, k2), dim=2)
    else:
        b3 = _c("expand", b, size=batch + (k2, p)).reshape(nb, k2, p)
    out = _c("bmm", a3, b3)
    if db == 1:
        out = _c("squeeze_dim", out, dim=-1)
    shape = batch + ((n,) if da > 1 else ()) + ((p,) if db > 1 else ())
    return _c("unsafe_view", out, size=shape)


def outer(a, b):
    """a (n,) x b (m,) -> (n, m) = a[:, None] * b (PyTorch: MulBackward0)."""
    if a.dim() != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {a.dim()}-D")
    if b.dim() != 1:
        raise RuntimeError(f"outer: Expected 1-D argument vec2, but got {b.dim()}-D")
    return _c("mul", _c("unsqueeze", a, dim=1), b)


ENTRIES = [MM, BMM, MV, DOT, VDOT, ADDMM, BADDBMM, LINEAR, LINEAR_GRAD_INPUT, LINEAR_GRAD_WEIGHT, ACT_GRAD]
