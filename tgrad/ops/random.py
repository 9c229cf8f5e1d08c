"""Random sampling ops: ``multinomial`` (with or without replacement); ``poisson``, ``binomial``,
``_standard_gamma`` and ``_sample_dirichlet`` (ATen's rejection samplers); ``_standard_gamma_grad`` (the
gamma sampler's implicit reparameterization gradient, a Triton kernel).  The cpu generator (mt19937) gives
PyTorch's draws (host: multinomial's sequential search and exponential races, the rejection samplers element
after element as ATen's cpu_serial_kernel); a cuda one tgrad's Philox kernel for multinomial, and the same
host samplers on a Philox stream for the rest.  Only ``_standard_gamma`` is differentiable."""
import numpy as np

from .. import dtypes as D
from ..kernels import random as KR
from ..tensor import empty, from_host
from . import Op, call as _c


def multinomial_forward(self, *, num_samples, replacement=False, generator):
    """(M, num_samples) or (num_samples,) int64 category indices drawn from the rows of weights ``self``
    (``generator``: given by the caller, the device's default one when the user gives none)."""
    if self.dim() not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{D.TENSOR_TYPE_NAMES[self.dtype][:-6]}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    K = self.shape[-1]
    if not replacement and num_samples > K:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if K > 1 << 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    v = self._host_copy().reshape(-1, K)
    if self.is_meta:        # no values to check: any valid distribution
        v = v + 1
    if v.size and not ((v >= 0) & (v < float("inf"))).all():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if v.size and (v.sum(axis=1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    M = v.shape[0]
    out = empty(tuple(self.shape[:-1]) + (num_samples,), D.int64, self.device)
    if generator._mt is not None:
        idx = _multinomial_mt(v, num_samples, replacement, generator)
        out._storage.host_array(np.int64, idx.size, out._offset * 8)[:] = idx.reshape(-1)
        return out
    seed, offset = generator._take(M * (num_samples if replacement else K))
    strides = tuple(self.stride()) if self.dim() == 2 else (0,) + tuple(self.stride())
    return KR.multinomial(self, strides, M, K, out, num_samples, replacement, seed, offset)


MULTINOMIAL = Op("multinomial", multinomial_forward, variants=("method", "function"))

def _multinomial_mt(v, n, replacement, g):
    """PyTorch's cpu multinomial of the rows of host weights ``v`` (M, K) from the mt19937 generator ``g``:
    with replacement (n > 1) a binary search of a double uniform per sample in the row's normalized cumulative
    sums (computed in v's dtype, float32 for float16/bfloat16, the last set to 1); otherwise the exponential
    races argmax / topk of v / E, E = -log1p(-u) per element in v's dtype."""
    M, K = v.shape
    if replacement and n > 1:
        acc = v.astype(np.float32) if v.dtype.itemsize < 4 else v
        cum = np.cumsum(acc, axis=1, dtype=acc.dtype)
        cum = cum / cum[:, -1:]
        cum[:, -1] = 1
        u = (g._raw64(M * n) & np.uint64((1 << 53) - 1)).astype(np.float64) * 2.0 ** -53
        u = u.reshape(M, n)
        return np.stack([np.searchsorted(cum[i].astype(np.float64), u[i], side="left") for i in range(M)])
    u = (g._raw64(M * K) & np.uint64((1 << 53) - 1)).astype(np.float64) * 2.0 ** -53
    e = (-1.0 * KR.libm("log1p", -u)).reshape(M, K)
    e = e.astype(np.float32).astype(v.dtype) if v.dtype.itemsize < 4 else e.astype(v.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = v / e
    if n == 1:
        return np.argmax(q, axis=1)[:, None]
    return np.argsort(-q, axis=1, kind="stable")[:, :n]


def _serial_dtypes(name, x, dtypes=(D.float32, D.float64)):
    if x.dtype not in dtypes:
        raise NotImplementedError(f'"{name}" not implemented for \'{x.dtype.legacy_name}\'')


def _serial(kind, inputs, like, generator):
    """The samples of ATen's serial sampler ``kind`` over host copies of ``inputs``, as a tensor like ``like``."""
    arrs = [t._host_copy().astype(np.float64) for t in inputs]
    out = KR.serial_sample(kind, arrs, generator, like.dtype.np if like.dtype is D.float64 else np.float32)
    return from_host(out.reshape(tuple(like.shape)), like.dtype, like.device)


def poisson_forward(self, *, generator):
    """Poisson(self) draws of self's shape and dtype (ATen's ``sample_poisson`` per element)."""
    _serial_dtypes("poisson_cpu", self, (D.float32, D.float64, D.float16, D.bfloat16))
    return _serial("poisson", [self], self, generator)


def zero_backward(ctx, grad):
    """The draws do not depend on the rate: zeros (PyTorch's PoissonBackward0)."""
    return (grad * 0,)


def binomial_forward(count, prob, *, generator):
    """Binomial(count, prob) draws of count's shape (prob broadcast to it; ATen's ``sample_binomial``)."""
    if not count.dtype.is_floating_point:
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: {count.dtype.legacy_name}")
    if not prob.dtype.is_floating_point:
        raise ValueError(f"binomial only supports floating-point dtypes for prob, got: {prob.dtype.legacy_name}")
    if prob.dtype is not count.dtype:
        raise RuntimeError(f"Found dtype {prob.dtype.legacy_name} but expected {count.dtype.legacy_name}")
    _serial_dtypes("binomial_cpu", count)
    cs, ps = tuple(count.shape), tuple(prob.shape)
    for i in range(1, max(len(cs), len(ps)) + 1):
        a = cs[-i] if i <= len(cs) else 1
        b = ps[-i] if i <= len(ps) else 1
        if b != a and b != 1 or i > len(cs) and b != 1:
            raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b ({b}) at non-singleton "
                               f"dimension {max(len(cs), len(ps)) - i}")
    return _serial("binomial", [count, prob], count, generator)


def binomial_backward(ctx, grad):
    raise RuntimeError("derivative for aten::binomial is not implemented")


def standard_gamma_forward(self, *, generator):
    """Gamma(self, 1) draws (ATen's ``sample_gamma``; at least the dtype's smallest normal number)."""
    _serial_dtypes("gamma_cpu", self)
    return _serial("gamma", [self], self, generator)


def standard_gamma_backward(ctx, grad):
    """d alpha = grad * _standard_gamma_grad(alpha, sample) (implicit reparameterization)."""
    return (grad * _c("_standard_gamma_grad", ctx.saved["self"], ctx.saved["result"]),)


def standard_gamma_grad_forward(self, output):
    """d output / d self for output ~ Gamma(self, 1) (``kernels.random.standard_gamma_grad``)."""
    _serial_dtypes("_standard_gamma_grad_cpu", self)
    if output.dtype is not self.dtype:
        raise RuntimeError(f"expected scalar type {self.dtype.legacy_name} but found {output.dtype.legacy_name}")
    if tuple(output.shape) != tuple(self.shape):
        a, o = _c("broadcast_tensors", self, output)
        return standard_gamma_grad_forward(a, o)
    out = empty(tuple(self.shape), self.dtype, self.device)
    if out.numel():
        KR.standard_gamma_grad(self.contiguous(), output.contiguous(), out)
    return out


def standard_gamma_grad_backward(ctx, grad):
    raise NotImplementedError("the derivative for '_standard_gamma_grad' is not implemented.")


def dirichlet_grad_forward(x, alpha, total):
    """The Dirichlet sampler's implicit gradient per element (``kernels.random.dirichlet_grad``); x, alpha, total
    of one shape."""
    _serial_dtypes("_dirichlet_grad_cpu", x)
    for name, t in (("alpha", alpha), ("total", total)):
        if tuple(t.shape) != tuple(x.shape):
            raise RuntimeError(f"_dirichlet_grad: expected {name} and x to have the same shape, but got "
                               f"{list(t.shape)} and {list(x.shape)}")
        if t.dtype is not x.dtype:
            raise RuntimeError(f"expected scalar type {x.dtype.legacy_name} but found {t.dtype.legacy_name}")
    out = empty(tuple(x.shape), x.dtype, x.device)
    if out.numel():
        KR.dirichlet_grad(x.contiguous(), alpha.contiguous(), total.contiguous(), out)
    return out


def sample_dirichlet_forward(self, *, generator):
    """Dirichlet(self) draws over the last dim: float64 gammas (ATen's ``_s_dirichlet_cpu``) normalized, clamped
    to [smallest normal, the float below 1] in self's dtype."""
    _serial_dtypes("dirichlet", self)
    g = KR.serial_sample("gamma", [self._host_copy().astype(np.float64)], generator, np.float64)
    g = g.reshape(tuple(self.shape))
    v = (g / g.sum(-1, keepdims=True)).astype(self.dtype.np)
    v = np.minimum(np.nextafter(self.dtype.np.type(1), self.dtype.np.type(0)), np.maximum(np.finfo(v.dtype).tiny, v))
    return from_host(v, self.dtype, self.device)


POISSON = Op("poisson", poisson_forward, zero_backward, "PoissonBackward0", variants=("function",))
BINOMIAL = Op("binomial", binomial_forward, binomial_backward, "NotImplemented", inputs=("count", "prob"),
              variants=("function",))
STANDARD_GAMMA = Op("_standard_gamma", standard_gamma_forward, standard_gamma_backward, "StandardGammaBackward0",
                    save=("self", "result"), variants=("function",))
STANDARD_GAMMA_GRAD = Op("_standard_gamma_grad", standard_gamma_grad_forward, standard_gamma_grad_backward,
                         "StandardGammaGradBackward0", inputs=("self", "output"), variants=("function",))
DIRICHLET_GRAD = Op("_dirichlet_grad", dirichlet_grad_forward, inputs=("x", "alpha", "total"), variants=("function",))
SAMPLE_DIRICHLET = Op("_sample_dirichlet", sample_dirichlet_forward, variants=("function",))

ENTRIES = [MULTINOMIAL, POISSON, BINOMIAL, STANDARD_GAMMA, STANDARD_GAMMA_GRAD, SAMPLE_DIRICHLET,
           DIRICHLET_GRAD]
