"""The op database: every OpInfo, by family (each family file lists its own ``OPS``)."""
from .opinfos import (amp, attention, autograd, conv, elementwise, matmul, nn, norm, optim, pool, random, reduce,
                      rnn, shape, sort)

OP_DB = (list(elementwise.OPS) + list(reduce.OPS) + list(shape.OPS) + list(optim.OPS) + list(matmul.OPS)
         + list(autograd.OPS) + list(nn.OPS) + list(conv.OPS) + list(pool.OPS) + list(norm.OPS)
         + list(rnn.OPS) + list(sort.OPS) + list(random.OPS) + list(attention.OPS) + list(amp.OPS))

# Op-table entries tested by dedicated test files rather than OpInfos: name -> test file.
COVERED_ELSEWHERE = {
    "clone_copy": "tests/test_autograd.py (AccumulateGrad under grad mode: seed 003's walk by hand)",
    "lstm_layer_backward": "tests/ops/test_rnn.py (lstm_layer's fused backward against its per-step form, which "
                           "create_graph runs; the OpInfo's gradcheck in float64)",
    "to_device": "tests/test_fakecuda.py (cuda on the fake driver: forward, and backward of a moved cpu scalar)",
}
