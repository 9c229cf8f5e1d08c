"""The op database: every OpInfo, by family (each family file lists its own ``OPS``)."""
from .opinfos import (activation, amp, as_strided, attention, compare, complex, conv, elementwise, fft, index, linalg,
                      loss, matmul, nn, norm, optim, pool, random, reduce, rnn, scan, segment, shape, softmax, sort,
                      sparse, special, unary)

OP_DB = [op for family in (elementwise, unary, activation, compare, reduce, shape, index, as_strided, optim, matmul,
                           softmax, loss, nn, conv, pool, norm, rnn, sort, random, attention, amp, linalg, scan,
                           segment, sparse, special, complex, fft)
         for op in family.OPS]

# Op-table entries tested by dedicated test files rather than OpInfos: name -> test file.
COVERED_ELSEWHERE = {
    "clone_copy": "tests/autograd/test_autograd.py (AccumulateGrad under grad mode: seed 003's walk by hand)",
    "lstm_layer_backward": "tests/ops/test_rnn.py (lstm_layer's fused backward against its per-step form, which "
                           "create_graph runs; the OpInfo's gradcheck in float64)",
    "gru_layer_backward": "tests/ops/test_rnn_layers.py (gru_layer's fused backward against its per-step form, "
                          "which create_graph runs; the OpInfo's gradcheck in float64)",
    "rnn_layer_backward": "tests/ops/test_rnn_layers.py (rnn_layer's fused backward against its per-step form, "
                          "which create_graph runs; the OpInfo's gradcheck in float64)",
    "poisson": "tests/ops/test_random_samplers.py (PoissonBackward0: zeros, as PyTorch)",
    "binomial": "tests/ops/test_random_samplers.py (backward raises PyTorch's not-implemented error)",
    "_standard_gamma": "tests/ops/test_random_samplers.py (the implicit gradient: finite differences of the CDF)",
    "_standard_gamma_grad": "tests/ops/test_random_samplers.py (backward raises PyTorch's not-implemented error)",
    "kaiser_window_values": "tests/test_windows_cov_scatter.py (kaiser_window against PyTorch's printed windows)",
    "to_device": "tests/test_fakecuda.py (cuda on the fake driver: forward, and backward of a moved cpu scalar)",
}
