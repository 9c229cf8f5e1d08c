"""Dropout's mask follows the input's memory order (PyTorch draws it into ``empty_like(input)``)."""
import numpy as np

import tgrad
import tgrad.nn.functional as F


def test_dropout_of_a_permuted_input_draws_in_memory_order():
    base = tgrad.ones(6, 5, 4)
    tgrad.manual_seed(3)
    want = F.dropout(base, 0.4)                          # contiguous: memory order = logical order
    tgrad.manual_seed(3)
    got = F.dropout(base.permute(2, 1, 0), 0.4)           # the same memory, walked in the same order
    assert got.stride() == base.permute(2, 1, 0).stride()
    np.testing.assert_array_equal(got.permute(2, 1, 0).cpu().numpy(), want.cpu().numpy())


def test_dropout_of_a_permuted_input_backward():
    x = tgrad.ones(4, 3, requires_grad=True)
    tgrad.manual_seed(0)
    y = F.dropout(x.t(), 0.5)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), y.t().detach().cpu().numpy())
