"""Random sampling ops: ``multinomial`` (with or without replacement).  The cpu generator (mt19937) gives
PyTorch's draws (host: its sequential search and exponential races); a cuda one tgrad's Philox kernel
(tgrad/kernels/random.py).  Not differentiable."""
import numpy as np

from .. import dtypes as D
from ..kernels import random as KR
from ..tensor import empty
from . import Op


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
    e = (-1.0 * np.log1p(-u)).reshape(M, K)
    e = e.astype(np.float32).astype(v.dtype) if v.dtype.itemsize < 4 else e.astype(v.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = v / e
    if n == 1:
        return np.argmax(q, axis=1)[:, None]
    return np.argsort(-q, axis=1, kind="stable")[:, :n]


ENTRIES = [MULTINOMIAL]
