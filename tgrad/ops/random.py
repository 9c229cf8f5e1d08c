"""Random sampling ops: ``multinomial`` (with or without replacement), drawn from tgrad's Philox
generator (tgrad/kernels/random.py; the numbers are tgrad's, not PyTorch's).  Not differentiable."""
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
    seed, offset = generator._take(M * (num_samples if replacement else K))
    strides = tuple(self.stride()) if self.dim() == 2 else (0,) + tuple(self.stride())
    return KR.multinomial(self, strides, M, K, out, num_samples, replacement, seed, offset)

ENTRIES = [
    Op("multinomial", multinomial_forward, variants=("method", "function")),
]
