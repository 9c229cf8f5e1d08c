"""OpInfo for ``multinomial``: draws whose result is certain (one-hot rows with replacement; every
category of a row without replacement, compared sorted), so the numpy reference is exact.  Drawn from a
Philox generator (the kernel, as on cuda); the cpu generator's host path is tested against PyTorch's
numbers in tests/test_random_torch.py."""
import numpy as np

from tgrad import dtypes as D
from tgrad.autograd import dispatch
from tgrad.random import Generator

from ..opinfo import OpInfo, SampleInput


def _multinomial_sorted(p, **k):
    out = dispatch.call("multinomial", p, generator=Generator(p.device, _philox=True), **k)
    return dispatch.call("sort", out, dim=-1)[0]


def _ref(p, num_samples, replacement=False):
    if replacement:             # one-hot rows: every draw is the row's category
        return np.repeat(np.argmax(p, axis=-1)[..., None], num_samples, axis=-1)
    return np.broadcast_to(np.arange(num_samples), p.shape[:-1] + (num_samples,))     # (num_samples == K)


def _samples(rng):
    eye = np.eye(5)[[3, 0, 4]] * rng.uniform(0.5, 2, (3, 1))
    return [SampleInput(eye, num_samples=7, replacement=True),
            SampleInput(eye[1], num_samples=1, replacement=True),
            SampleInput(np.eye(40)[rng.integers(0, 40, 6)], num_samples=300, replacement=True),
            SampleInput(rng.uniform(0.1, 1, (4, 6)), num_samples=6),
            SampleInput(rng.uniform(0.1, 1, (9,)), num_samples=9),
            SampleInput(rng.uniform(0.1, 1, (0, 3)), num_samples=2)]


OPS = [
    OpInfo("multinomial", _multinomial_sorted, _ref, _samples, dtypes=(D.float32, D.float64, D.float16, D.bfloat16),
           grad=False, gradgrad=False, covers=("sort",)),
]
