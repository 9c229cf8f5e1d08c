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


def test_rnn_dropout_between_layers_is_the_same_with_batch_first():
    """PyTorch runs a batch_first RNN time-major, so its inter-layer dropout masks do not depend on batch_first."""
    tgrad.manual_seed(0)
    tm = tgrad.nn.LSTM(3, 5, num_layers=2, dropout=0.5)
    bf = tgrad.nn.LSTM(3, 5, num_layers=2, dropout=0.5, batch_first=True)
    bf.load_state_dict(tm.state_dict())
    x = tgrad.randn(4, 2, 3)                                  # (seq, batch, features)
    tgrad.manual_seed(7)
    want = tm(x)[0]
    tgrad.manual_seed(7)
    got = bf(x.transpose(0, 1).contiguous())[0]
    np.testing.assert_array_equal(got.transpose(0, 1).detach().cpu().numpy(), want.detach().cpu().numpy())
