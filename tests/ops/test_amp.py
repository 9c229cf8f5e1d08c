"""amp_foreach_non_finite_check_and_unscale_: one launch for up to 8 gradients, in place, found_inf kept."""
import numpy as np

import tgrad
from tgrad.autograd import dispatch
from tgrad.kernels.runtime import COUNTER


def test_one_launch_per_eight_gradients_in_place(device):
    grads = [tgrad.full((n,), 4.0, device=device) for n in (3, 17, 1, 64, 5, 9, 2, 8, 100)]
    ptrs = [g.data_ptr() for g in grads]
    found = tgrad.zeros(1, device=device)
    inv = tgrad.full((1,), 0.25, device=device)
    COUNTER.enabled = True
    try:
        COUNTER.counts.clear()
        dispatch.call("amp_foreach_non_finite_check_and_unscale_", grads, found, inv)
        assert dict(COUNTER.counts) == {"amp_unscale_kernel": 2}
    finally:
        COUNTER.enabled = False
    assert [g.data_ptr() for g in grads] == ptrs
    assert all((g.cpu().numpy() == 1.0).all() for g in grads) and found.item() == 0.0


def test_found_inf_is_sticky_and_never_reset(device):
    found = tgrad.ones(1, device=device)       # set by an earlier device / dtype bucket
    g = tgrad.tensor([1.0, 2.0], device=device)
    dispatch.call("amp_foreach_non_finite_check_and_unscale_", [g], found, tgrad.full((1,), 0.5, device=device))
    assert found.item() == 1.0
    np.testing.assert_array_equal(g.cpu().numpy(), [0.5, 1.0])
    found.zero_()
    g = tgrad.tensor([float("-inf"), 2.0], device=device)
    dispatch.call("amp_foreach_non_finite_check_and_unscale_", [g], found, tgrad.full((1,), 0.5, device=device))
    assert found.item() == 1.0
