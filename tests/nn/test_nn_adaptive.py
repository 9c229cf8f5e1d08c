"""nn.AdaptiveLogSoftmaxWithLoss: PyTorch's state dict loads (same parameter names), forward's (output, loss)
namedtuple, its input gradient, log_prob and predict against PyTorch's printed values
(tests/data/make_adaptive_ref.py); log_prob is a distribution; the errors."""
import os

import numpy as np
import pytest

import tgrad
from tgrad import nn

CPU_ONLY = True     # a composite of linear / log_softmax / gather, which the device suites test

REF = np.load(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "adaptive_ref.npz"))


def _model():
    m = nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 10], div_value=2.0, head_bias=True).double()
    sd = {k[3:]: tgrad.tensor(REF[k]) for k in REF.files if k.startswith("sd/")}
    assert sorted(sd) == sorted(m.state_dict())
    m.load_state_dict(sd)
    return m


def test_forward_backward_log_prob_predict_match_pytorch():
    m = _model()
    x = tgrad.tensor(REF["x"], requires_grad=True)
    t = tgrad.tensor(REF["t"])
    res = m(x, t)
    assert type(res).__name__ == "_ASMoutput" and res._fields == ("output", "loss")
    np.testing.assert_allclose(res.output.detach().numpy(), REF["output"], rtol=1e-13)
    np.testing.assert_allclose(res.loss.item(), REF["loss"], rtol=1e-13)
    (gx,) = tgrad.autograd.grad(res.loss, x)
    np.testing.assert_allclose(gx.numpy(), REF["gx"], rtol=1e-12, atol=1e-15)
    lp = m.log_prob(x).detach()
    np.testing.assert_allclose(lp.numpy(), REF["log_prob"], rtol=1e-13)
    np.testing.assert_allclose(lp.exp().sum(1).numpy(), np.ones(9), rtol=1e-13)
    assert m.predict(x).tolist() == REF["predict"].tolist() == lp.argmax(1).tolist()
    np.testing.assert_allclose(m(x[0], t[0]).output.item(), REF["out0"], rtol=1e-13)


def test_errors():
    with pytest.raises(ValueError, match="cutoffs should be a sequence of length larger than 0"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, [])
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique, positive integers"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, [5, 3])
    m = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3])
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 9\]"):
        m(tgrad.randn(2, 8), tgrad.tensor([1, 12]))
    with pytest.raises(RuntimeError, match="Input and target should have the same size in the batch dimension."):
        m(tgrad.randn(3, 8), tgrad.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected, multi-target not supported"):
        m(tgrad.randn(2, 8), tgrad.zeros(2, 2, dtype=tgrad.int64))
