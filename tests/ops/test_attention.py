"""scaled_dot_product_attention: PyTorch's numbers, gradients over several blocks, dropout, errors, launches,
memory linear in the sequence length."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import dispatch
from tgrad.kernels.runtime import COUNTER
from tgrad.kernels.runtime import launcher as KT
from tgrad.testing.opinfos.attention import sdpa_ref


def T(a, device, dtype=tgrad.float32, requires_grad=False):
    return tgrad.tensor(np.asarray(a), dtype=dtype, device=device, requires_grad=requires_grad)


def _np_grads(q, k, v, mask, scale, go):
    """Analytic gradients of softmax(q k^T * scale + mask) v in numpy (mask: bool, True = allowed)."""
    s = q @ np.swapaxes(k, -1, -2) * scale
    s = np.where(mask, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    dv = np.swapaxes(p, -1, -2) @ go
    dp = go @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    return ds @ k * scale, np.swapaxes(ds, -1, -2) @ q * scale, dv


def test_matches_pytorch(device):
    """Values and gradients printed by PyTorch 2.13 for the same inputs (causal, L != S, scale=0.9)."""
    q = tgrad.linspace(-1, 1, 24, device=device).reshape(1, 2, 3, 4).requires_grad_()
    k = tgrad.linspace(1, -2, 32, device=device).reshape(1, 2, 4, 4).cos().requires_grad_()
    v = tgrad.linspace(-3, 2, 24, device=device).reshape(1, 2, 4, 3).sin().requires_grad_()
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.9)
    want = [[[[-0.14112000, -0.35132307, -0.54498827], [-0.36343360, -0.54418743, -0.69932467],
              [-0.57990718, -0.70393783, -0.79483193]],
             [[-0.38139439, -0.17303760, 0.04346462], [-0.14986566, 0.05630312, 0.25982153],
              [-0.12015888, 0.07884692, 0.27414116]]]]
    np.testing.assert_allclose(o.detach().cpu().numpy(), want, atol=2e-6)
    (o * tgrad.arange(18.0, device=device).reshape(1, 2, 3, 3)).sum().backward()
    np.testing.assert_allclose(q.grad.cpu().numpy()[0, 1, 2], [-2.82649589, -3.05182505, -3.24859691, -3.41496730],
                               rtol=2e-6)
    np.testing.assert_allclose(k.grad.cpu().numpy()[0, 1, :, 0], [-7.18349457, 5.06972456, 2.11376977, 0.0], rtol=2e-6,
                               atol=1e-6)
    np.testing.assert_allclose(v.grad.cpu().numpy()[0, 1, :, 2], [31.14495468, 9.46294403, 1.39209890, 0.0], rtol=2e-6,
                               atol=1e-6)
    np.testing.assert_array_equal(q.grad.cpu().numpy()[:, :, 0], 0.0)     # row 0 sees only key 0


def test_node_and_saved_values(device):
    q = T(np.ones((1, 1, 4, 8)), device, requires_grad=True)
    o = F.scaled_dot_product_attention(q, q, q, scale=0.3, is_causal=True)
    assert type(o.grad_fn).__name__ == "ScaledDotProductFlashAttentionForCpuBackward0"
    assert o.grad_fn._saved_scale == 0.3 and o.grad_fn._saved_is_causal is True
    out, lse = dispatch.call("scaled_dot_product_attention", q, q, q, None)
    assert lse.dtype == tgrad.float32 and tuple(lse.shape) == (1, 1, 4) and not lse.requires_grad
    # all scores equal 8 / sqrt(8): lse = sqrt(8) + log(#keys)
    np.testing.assert_allclose(lse.cpu().numpy()[0, 0], np.sqrt(8) + np.log(4), rtol=1e-6)


def test_gradients_over_several_blocks(device):
    """L = 130, S = 300: several query and key blocks on cpu (128 x 256); float64 against numpy's gradients."""
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(1, 2, 130, 16)), rng.normal(size=(1, 2, 300, 16)), rng.normal(size=(1, 2, 300, 8))
    mask = rng.uniform(size=(130, 300)) > 0.2
    go = rng.normal(size=(1, 2, 130, 8))
    tq, tk, tv = (T(a, device, tgrad.float64, True) for a in (q, k, v))
    o = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=T(mask, device, tgrad.bool))
    np.testing.assert_allclose(o.detach().cpu().numpy(), sdpa_ref(q, k, v, mask), atol=1e-12)
    o.backward(T(go, device, tgrad.float64))
    for got, want in zip((tq.grad, tk.grad, tv.grad), _np_grads(q, k, v, mask, 0.25, go)):
        np.testing.assert_allclose(got.cpu().numpy(), want, atol=1e-11)


def test_causal_gradients_over_several_blocks(device):
    rng = np.random.default_rng(1)
    q, k, v = (rng.normal(size=(1, 1, 300, 16)) for _ in range(3))
    go = rng.normal(size=(1, 1, 300, 16))
    tq, tk, tv = (T(a, device, tgrad.float64, True) for a in (q, k, v))
    F.scaled_dot_product_attention(tq, tk, tv, is_causal=True).backward(T(go, device, tgrad.float64))
    mask = np.tril(np.ones((300, 300), bool))
    for got, want in zip((tq.grad, tk.grad, tv.grad), _np_grads(q, k, v, mask, 0.25, go)):
        np.testing.assert_allclose(got.cpu().numpy(), want, atol=1e-11)


def test_gqa_key_value_gradients_sum_over_the_group(device):
    rng = np.random.default_rng(2)
    q, k, v = rng.normal(size=(2, 4, 5, 8)), rng.normal(size=(2, 2, 6, 8)), rng.normal(size=(2, 2, 6, 8))
    tq, tk, tv = (T(a, device, tgrad.float64, True) for a in (q, k, v))
    F.scaled_dot_product_attention(tq, tk, tv, enable_gqa=True).sum().backward()
    kr, vr = np.repeat(k, 2, 1), np.repeat(v, 2, 1)
    gq, gk, gv = _np_grads(q, kr, vr, np.ones((5, 6), bool), 8 ** -0.5, np.ones((2, 4, 5, 8)))
    np.testing.assert_allclose(tq.grad.cpu().numpy(), gq, atol=1e-12)
    np.testing.assert_allclose(tk.grad.cpu().numpy(), gk.reshape(2, 2, 2, 6, 8).sum(2), atol=1e-12)
    np.testing.assert_allclose(tv.grad.cpu().numpy(), gv.reshape(2, 2, 2, 6, 8).sum(2), atol=1e-12)


def test_dropout_is_fresh_scaled_and_the_backward_redraws_the_same_mask(device):
    """value = identity: the output is the dropped-out attention matrix itself."""
    rng = np.random.default_rng(3)
    L = S = 64
    q = T(rng.normal(size=(1, 2, L, 16)) * 0.1, device, tgrad.float64)
    k = T(rng.normal(size=(1, 2, S, 16)) * 0.1, device, tgrad.float64)
    v = T(np.broadcast_to(np.eye(S), (1, 2, S, S)).copy(), device, tgrad.float64, True)
    p = 0.25
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=p)
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=p).detach().cpu().numpy()
    an = a.detach().cpu().numpy()
    full = sdpa_ref(q.cpu().numpy(), k.cpu().numpy(), np.eye(S))
    kept = an != 0
    assert abs(1 - kept.mean() - p) < 0.02                   # ~p of the weights dropped
    assert (kept != (b != 0)).any()                           # a new mask per call
    np.testing.assert_allclose(an[kept], (full / (1 - p))[kept], rtol=1e-12)
    go = rng.normal(size=(1, 2, L, S))
    a.backward(T(go, device, tgrad.float64))
    # dv = P_dropped^T @ go, with P_dropped the forward's own output
    np.testing.assert_allclose(v.grad.cpu().numpy(), np.swapaxes(an, -1, -2) @ go, atol=1e-12)


def test_dropout_gradcheck_with_a_fixed_seed(device):
    rng = np.random.default_rng(4)
    args = tuple(T(rng.normal(size=(1, 2, 3, 4)), device, tgrad.float64, True) for _ in range(3))

    def f(q, k, v):
        tgrad.manual_seed(7)
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.4, is_causal=True)
    # nondet_tol: the interpreter's first (direct) launch and its replayed tape round 1 / (1 - p) apart (~1e-7)
    assert tgrad.autograd.gradcheck(f, args, nondet_tol=1e-6)


def test_float_mask_requiring_grad_takes_the_math_path(device):
    rng = np.random.default_rng(5)
    q, k, v = (T(rng.normal(size=(2, 3, 4)), device, tgrad.float64, True) for _ in range(3))
    m = T(rng.normal(size=(3, 3)), device, tgrad.float64, True)
    assert tgrad.autograd.gradcheck(lambda *a: F.scaled_dot_product_attention(*a), (q, k, v, m))
    o = F.scaled_dot_product_attention(q, k, v, m.detach())
    assert type(o.grad_fn).__name__ == "ScaledDotProductFlashAttentionForCpuBackward0"
    np.testing.assert_allclose(o.detach().cpu().numpy(), F.scaled_dot_product_attention(q, k, v, m).detach().cpu().numpy(),
                               atol=1e-14)


def test_only_once_differentiable_as_in_pytorch(device):
    q = T(np.ones((1, 1, 3, 4)), device, requires_grad=True)
    (g,) = tgrad.autograd.grad(F.scaled_dot_product_attention(q, q, q).sum(), q, create_graph=True)
    with pytest.raises(RuntimeError, match="not implemented for double backward"):
        g.sum().backward()


def test_one_launch_forward_two_backward(device):
    rng = np.random.default_rng(6)
    q, k, v = (T(rng.normal(size=(2, 4, 33, 16)), device, requires_grad=True) for _ in range(3))
    COUNTER.enabled = True
    try:
        COUNTER.counts.clear()
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        assert dict(COUNTER.counts) == {"attention_fwd_kernel": 1}
        go = tgrad.ones_like(o)
        COUNTER.counts.clear()
        tgrad.autograd.grad(o, (q, k, v), go)
        assert dict(COUNTER.counts) == {"attention_bwd_dq_kernel": 1, "attention_bwd_dkdv_kernel": 1}
    finally:
        COUNTER.enabled = False


@pytest.mark.parametrize("kw,msg", [
    (dict(dropout_p=1.5), "dropout probability has to be between 0 and 1, but got 1.5"),
    (dict(attn_mask="bool", is_causal=True), "Explicit attn_mask should not be set when is_causal=True"),
    (dict(attn_mask="long"), "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                             "attn_mask.dtype: long int and  query.dtype: float instead."),
    (dict(value="double"), "Expected query, key, and value to have the same dtype, but got query.dtype: float "
                           "key.dtype: float and value.dtype: double instead."),
    (dict(key="heads", enable_gqa=True), "Number of heads in key and value must divide the number of heads in query"),
])
def test_errors(device, kw, msg):
    q = T(np.zeros((1, 3, 4, 8)), device)
    k, v = q, q
    if kw.pop("value", None):
        v = T(np.zeros((1, 3, 4, 8)), device, tgrad.float64)
    if kw.pop("key", None):
        k = v = T(np.zeros((1, 2, 4, 8)), device)
    m = kw.pop("attn_mask", None)
    if m:
        kw["attn_mask"] = T(np.ones((4, 4)), device, tgrad.bool if m == "bool" else tgrad.int64)
    with pytest.raises(RuntimeError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        F.scaled_dot_product_attention(q, k, v, **kw)


def _peak(T_len, device):
    q = tgrad.zeros((1, 1, T_len, 16), device=device, requires_grad=True)
    tgrad.reset_peak_memory_stats(device)
    base = tgrad.memory_allocated(device)
    o = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    o.sum().backward()
    return tgrad.max_memory_allocated(device) - base


def test_memory_grows_linearly_with_gpu_blocks(device):
    """With the GPU's block sizes no T x T buffer exists: peak extra memory ~ c * T (a T x T fp32 matrix at
    T = 256 alone would be 256 KiB)."""
    old = KT.FORCE_GPU_BLOCKS
    KT.FORCE_GPU_BLOCKS = True
    try:
        p128, p256 = _peak(128, device), _peak(256, device)
    finally:
        KT.FORCE_GPU_BLOCKS = old
    assert p256 < 256 * 256 * 4
    assert p256 <= 2 * p128 + 4096, (p128, p256)
