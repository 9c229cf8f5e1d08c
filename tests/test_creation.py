"""Tensor creation: ranges, fills, tensor/as_tensor/from_numpy, *_like, random numbers, layout queries."""
import numpy as np
import pytest

import tgrad


def _np(t):
    return t.detach()._host_copy()


# ------------------------------------------------------------------ ranges
def test_linspace_against_numpy(device):
    for start, end, steps in ((-1, 2, 1), (3, 2, 1), (0, 1, 5), (-2.5, 7, 33), (1, -1, 2), (0, 1, 0)):
        t = tgrad.linspace(start, end, steps, device=device)
        assert t.dtype is tgrad.float32 and tuple(t.shape) == (steps,)
        np.testing.assert_allclose(_np(t), np.linspace(start, end, steps, dtype=np.float32), rtol=1e-6,
                                   atol=1e-6)
    np.testing.assert_array_equal(_np(tgrad.linspace(-1, 2, 1, dtype=tgrad.float64, device=device)), [-1.0])
