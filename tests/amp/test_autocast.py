"""tgrad.autocast / tgrad.amp.GradScaler: PyTorch 2.13's dtypes per op, gradients to float32 master weights,
the loss-scale schedule and its errors."""
import pickle

import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F


@pytest.mark.cpu_only(reason="autocast('cpu') casts cpu tensors only")
def test_cpu_autocast_dtypes_as_pytorch():
    """The dtypes PyTorch 2.13 gives under torch.autocast('cpu', dtype=torch.bfloat16)."""
    x, w, t = tgrad.randn(4, 8), tgrad.randn(8, 8), tgrad.randint(0, 8, (4,))
    with tgrad.autocast("cpu", dtype=tgrad.bfloat16):
        y = x @ w
        got = {"matmul": y, "linear": F.linear(x, w), "addmm": tgrad.addmm(x, x, w), "softmax": F.softmax(y, -1),
               "layer_norm": F.layer_norm(y, (8,)), "sum": y.sum(), "relu": F.relu(y), "mse": F.mse_loss(y, x),
               "cross_entropy": F.cross_entropy(y, t), "add": y + x, "prod": y.prod(), "cat": tgrad.cat([y, x]),
               "sdpa": F.scaled_dot_product_attention(x[None], x[None], x[None]),
               "f64": tgrad.mm(x.double(), w.double())}
    want = {"matmul": "bfloat16", "linear": "bfloat16", "addmm": "bfloat16", "softmax": "bfloat16",
            "layer_norm": "bfloat16", "sum": "bfloat16", "relu": "bfloat16", "mse": "float32",
            "cross_entropy": "float32", "add": "float32", "prod": "float32", "cat": "float32", "sdpa": "bfloat16",
            "f64": "float64"}
    assert {k: v.dtype.name for k, v in got.items()} == want
    assert (x @ w).dtype is tgrad.float32


def test_cuda_policy_table_has_pytorchs_fp32_ops():
    from tgrad.amp import policy
    assert {"softmax", "layer_norm", "sum", "exp", "mse_loss", "cross_entropy"} <= policy.FP32["cuda"]
    assert {"mm", "bmm", "linear", "baddbmm", "addmm", "scaled_dot_product_attention"} <= policy.LOWER["cuda"]


@pytest.mark.cpu_only(reason="autocast('cpu') casts cpu tensors only")
def test_gradients_reach_float32_master_weights_in_float32():
    tgrad.manual_seed(0)
    lin = nn.Linear(8, 3)
    x, t = tgrad.randn(4, 8), tgrad.randint(0, 3, (4,))
    with tgrad.cpu.amp.autocast():
        out = lin(x)
        loss = F.cross_entropy(out, t)
    assert out.dtype is tgrad.bfloat16 and loss.dtype is tgrad.float32
    loss.backward()
    assert lin.weight.grad.dtype is tgrad.float32 and lin.weight.dtype is tgrad.float32
    lin.zero_grad()
    F.cross_entropy(lin(x), t).backward()
    ref = lin.weight.grad.cpu().numpy().copy()
    with tgrad.autocast("cpu"):
        F.cross_entropy(lin(x), t).backward()
    np.testing.assert_allclose(lin.weight.grad.cpu().numpy() - ref, ref, atol=3e-2)   # bf16 matmul: close, not equal


@pytest.mark.cpu_only(reason="autocast('cpu') casts cpu tensors only")
def test_nesting_disabling_decorator_and_state():
    x = tgrad.randn(2, 2)
    assert not tgrad.is_autocast_enabled("cpu")
    with tgrad.autocast("cpu"):
        assert tgrad.is_autocast_enabled("cpu") and not tgrad.is_autocast_enabled()
        assert tgrad.get_autocast_dtype("cpu") is tgrad.bfloat16
        with tgrad.autocast("cpu", enabled=False):
            assert (x @ x).dtype is tgrad.float32
        assert (x @ x).dtype is tgrad.bfloat16
        with tgrad.autocast("cuda"):           # another device type: cpu tensors unaffected by its policy
            assert (x @ x).dtype is tgrad.bfloat16 and tgrad.is_autocast_enabled()

    @tgrad.autocast("cpu", dtype=tgrad.float16)
    def f(a):
        return a @ a
    assert f(x).dtype is tgrad.float16 and (x @ x).dtype is tgrad.float32
    assert not tgrad.is_autocast_enabled("cpu")


@pytest.mark.cpu_only(reason="autocast('cpu') casts cpu tensors only")
def test_autocast_errors_and_unsupported_dtype():
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        tgrad.autocast(tgrad.device("cpu"))
    with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not supported"):
        a = tgrad.autocast("cpu", dtype=tgrad.float64)
    x = tgrad.randn(2, 2)
    with a:
        assert (x @ x).dtype is tgrad.float32


def _train(scaler, steps, inf_at=()):
    tgrad.manual_seed(0)
    lin = nn.Linear(4, 2)
    opt = tgrad.optim.SGD(lin.parameters(), lr=0.1)
    x = tgrad.randn(3, 4)
    scales = []
    for i in range(steps):
        opt.zero_grad()
        scaler.scale(lin(x).sum()).backward()
        if i in inf_at:
            lin.bias.grad.fill_(float("nan"))
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    return lin, scales


def test_grad_scaler_schedule_and_skipped_steps(device):
    """Same script in PyTorch 2.13 (torch.amp.GradScaler('cpu', init_scale=1024., growth_interval=2)):
    scales [1024, 2048, 1024, 1024, 2048], the nan step leaves the weights as they were."""
    s = tgrad.amp.GradScaler(device, init_scale=1024.0, growth_interval=2)
    lin, scales = _train(s, 5, inf_at=(2,))
    assert scales == [1024.0, 2048.0, 1024.0, 1024.0, 2048.0]
    assert s.state_dict() == {"scale": 2048.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2,
                              "_growth_tracker": 0}
    ref, _ = _train(tgrad.amp.GradScaler(device, enabled=False), 4)     # 4 real steps, unscaled
    np.testing.assert_allclose(lin.weight.detach().cpu().numpy(), ref.weight.detach().cpu().numpy(), rtol=1e-6)


def test_unscale_then_clip_then_step(device):
    tgrad.manual_seed(0)
    lin = nn.Linear(4, 2)
    opt = tgrad.optim.SGD(lin.parameters(), lr=0.1)
    s = tgrad.amp.GradScaler(device, init_scale=256.0)
    loss = lin(tgrad.ones(1, 4)).sum()
    s.scale(loss).backward()
    s.unscale_(opt)
    np.testing.assert_allclose(lin.weight.grad.cpu().numpy(), np.ones((2, 4)), rtol=1e-6)    # d sum / dW = x
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called on this optimizer since the "
                                           "last update\\(\\)."):
        s.unscale_(opt)
    s.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called since the last update\\(\\)."):
        s.step(opt)
    s.update()


def test_grad_scaler_state_dict_pickle_aliases_and_errors():
    s = tgrad.amp.GradScaler("cpu", init_scale=8.0, growth_factor=3.0)
    t = tgrad.amp.GradScaler("cpu")
    t.load_state_dict(s.state_dict())
    assert t.get_scale() == 8.0 and t.get_growth_factor() == 3.0
    assert pickle.loads(pickle.dumps(s)).get_scale() == 8.0
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        t.load_state_dict({})
    with pytest.raises(AssertionError, match="The growth factor must be > 1.0."):
        tgrad.amp.GradScaler("cpu", growth_factor=0.5)
    with pytest.raises(AssertionError, match="Attempted step but _scale is None."):
        t.step(tgrad.optim.SGD([nn.Parameter(tgrad.ones(1))], lr=1.0))
    from tgrad.cuda.amp import GradScaler, autocast
    if not tgrad.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available.  Disabling."):
            assert not GradScaler().is_enabled()
    assert tgrad.amp.GradScaler("cpu", enabled=False).get_scale() == 1.0
    assert autocast().device == "cuda" and tgrad.cpu.amp.autocast().fast_dtype is tgrad.bfloat16
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        p = nn.Parameter(tgrad.ones(2, dtype=tgrad.float16))
        opt = tgrad.optim.SGD([p], lr=1.0)
        s.scale(p.sum()).backward()
        s.unscale_(opt)


def _casts(fn):
    with tgrad.profiler.profile() as prof:
        fn()
    return prof.launches_by_op.get("to_copy", 0)


@pytest.mark.cpu_only(reason="autocast('cpu') casts cpu tensors only")
def test_weight_cast_cache_casts_a_parameter_once_per_region():
    """PyTorch's cached_cast: the bf16 casts of a Linear's weight and bias are made once per region and shared
    (one ToCopyBackward0 node), the input (no grad) is cast at each use; the cache dies with the region."""
    tgrad.manual_seed(0)
    lin = nn.Linear(8, 3)
    x = tgrad.randn(4, 8)
    with tgrad.autocast("cpu"):
        assert tgrad.is_autocast_cache_enabled()
        outs = []
        assert _casts(lambda: outs.extend([lin(x), lin(x)])) == 2 + 2     # x twice, weight and bias once
        assert outs[0].grad_fn.next_functions[2][0] is outs[1].grad_fn.next_functions[2][0]
        assert _casts(lambda: lin(x)) == 1
    with tgrad.autocast("cpu"):                 # a new region casts again
        assert _casts(lambda: lin(x)) == 3
        with tgrad.autocast("cpu"):             # nested: the outer region's cache is still live
            assert _casts(lambda: lin(x)) == 1
        assert _casts(lambda: lin(x)) == 1
    with tgrad.autocast("cpu", cache_enabled=False):
        assert not tgrad.is_autocast_cache_enabled()
        assert _casts(lambda: (lin(x), lin(x))) == 6
    assert tgrad.is_autocast_cache_enabled()
    # the gradient of both uses reaches the float32 master weight: dL/dW = 2 * sum_rows(bf16(x))
    with tgrad.autocast("cpu"):
        loss = lin(x).float().sum() + lin(x).float().sum()
    loss.backward()
    xb = x.to(tgrad.bfloat16).float().numpy()
    assert lin.weight.grad.dtype is tgrad.float32 and lin.bias.grad.dtype is tgrad.float32
    np.testing.assert_allclose(lin.weight.grad.numpy(), np.tile(2 * xb.sum(0), (3, 1)), rtol=1e-2)
    np.testing.assert_array_equal(lin.bias.grad.numpy(), np.full(3, 8.0, np.float32))


@pytest.mark.cpu_only(reason="autocast('cpu') casts cpu tensors only")
def test_weight_cast_cache_sees_updated_weights_in_the_next_region():
    lin = nn.Linear(4, 2)
    x = tgrad.ones(1, 4)
    with tgrad.autocast("cpu"):
        a = lin(x).float()
    with tgrad.no_grad():
        lin.weight.add_(1.0)
    with tgrad.autocast("cpu"):
        b = lin(x).float()
        tgrad.clear_autocast_cache()
        assert _casts(lambda: lin(x)) == 3
    np.testing.assert_allclose((b - a).detach().numpy(), np.full((1, 2), 4.0), rtol=1e-2)
