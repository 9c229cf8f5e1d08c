"""The fused fp32 Adam step bit for bit against a numpy emulation of its operations (exact fmas through the
interpreter's fma_fp32, correctly rounded sqrt and division), on either side of ATen's lerp branch
(weight 1 - beta1 < 0.5 or not, compared in fp32 as ATen does: 1 - (0.5 + 2^-30) is 0.5 in fp32)."""
import numpy as np
import pytest
from triton._C.libtriton import interpreter as I

import tgrad

CPU_ONLY = True
F = np.float32


def _lerp(a, b, w):
    d = b - a
    wv = np.full_like(a, w)
    return I.fma_fp32(wv, d, a) if w < 0.5 else I.fma_fp32(-d, np.full_like(a, F(1) - w), b)


def _adam_np(p, m, v, g, t, lr, b1, b2, eps, low):
    step_size, w1, beta2, w2 = F(lr / (1 - b1 ** t)), F(1 - b1), F(b2), F(1 - b2)
    bc2 = F((1 - b2 ** t) ** 0.5)
    m = I.fma_fp32(np.full_like(m, w1), g - m, m) if low else I.fma_fp32(m - g, np.full_like(m, F(1) - w1), g)
    v = I.fma_fp32(w2 * g, g, v * beta2)
    return p + (-step_size * m) / (np.sqrt(v) / bc2 + F(eps)), m, v


@pytest.mark.parametrize("beta1", [0.9, 0.3, 0.5 + 2.0 ** -30])
def test_adam_fp32_bits(beta1):
    rng = np.random.default_rng(0)
    n = 70000                                   # two blocks on cpu, the second one masked
    p0 = rng.standard_normal(n).astype(F)
    grads = [rng.standard_normal(n).astype(F) for _ in range(3)]
    p = tgrad.nn.Parameter(tgrad.tensor(p0))
    opt = tgrad.optim.Adam([p], lr=0.01, betas=(beta1, 0.999))
    low = F(1 - beta1) < 0.5
    ref, m, v = p0, np.zeros(n, F), np.zeros(n, F)
    for t, g in enumerate(grads, 1):
        p.grad = tgrad.tensor(g)
        opt.step()
        if t == 2:                              # the other branch differs somewhere: the choice is tested
            other = _adam_np(ref, m, v, g, t, 0.01, beta1, 0.999, 1e-8, not low)[1]
        ref, m, v = _adam_np(ref, m, v, g, t, 0.01, beta1, 0.999, 1e-8, low)
        if t == 2:
            assert (other != m).any()
    st = opt.state[p]
    np.testing.assert_array_equal(st["exp_avg"].numpy().view(np.uint32), m.view(np.uint32))
    np.testing.assert_array_equal(st["exp_avg_sq"].numpy().view(np.uint32), v.view(np.uint32))
    np.testing.assert_array_equal(p.detach().numpy().view(np.uint32), ref.view(np.uint32))
