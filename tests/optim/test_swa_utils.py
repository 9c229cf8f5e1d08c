"""optim.swa_utils: AveragedModel (SWA and EMA), SWALR, update_bn, against numpy and PyTorch-printed values."""
import numpy as np
import pytest

import tgrad
from tgrad import nn
from tgrad.optim.swa_utils import SWALR, AveragedModel, get_ema_avg_fn, get_ema_multi_avg_fn, update_bn


def _lerp32(a, b, w):
    """ATen's float32 lerp: fma(w, b - a, a) for |w| < 0.5, else fma(-(b - a), 1 - w, b) (each fma one rounding:
    the float32 product is exact in float64)."""
    a, b, w = np.float32(a), np.float32(b), np.float32(w)
    d = (b - a).astype(np.float64)
    lo = (np.float64(w) * d + a).astype(np.float32)
    hi = (-d * np.float64(np.float32(1) - w) + b).astype(np.float32)
    return np.where(abs(w) < 0.5, lo, hi)


def test_swa_is_the_running_mean_and_ema_the_lerp():
    tgrad.manual_seed(0)
    model = nn.Linear(3, 2)
    swa, ema = AveragedModel(model), AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
    ema1 = AveragedModel(model, avg_fn=get_ema_avg_fn(0.9))
    snaps, avg, e = [], None, None
    for i in range(4):
        with tgrad.no_grad():
            model.weight.mul_(1.5).add_(0.1 * (i + 1))
        w = model.weight.detach().cpu().numpy().copy()
        snaps.append(w)
        for m in (swa, ema, ema1):
            m.update_parameters(model)
        avg = w if avg is None else _lerp32(avg, w, np.float32(1) / np.float32(i + 1))
        e = w if e is None else _lerp32(e, w, 1 - 0.9)
    assert swa.n_averaged.item() == 4 and swa.n_averaged.dtype is tgrad.int64
    np.testing.assert_array_equal(swa.module.weight.detach().cpu().numpy(), avg)
    np.testing.assert_allclose(avg, np.mean(snaps, 0), rtol=1e-6)
    np.testing.assert_array_equal(ema.module.weight.detach().cpu().numpy(), e)
    np.testing.assert_allclose(ema1.module.weight.detach().cpu().numpy(), e, rtol=1e-6)
    assert model.weight is not swa.module.weight                    # a deep copy
    assert list(swa.state_dict())[:2] == ["n_averaged", "module.weight"]
    np.testing.assert_array_equal(swa(tgrad.ones(1, 3)).detach().cpu().numpy(), swa.module(tgrad.ones(1, 3)).detach().cpu().numpy())
    with pytest.raises(ValueError, match="Invalid decay value 1.5"):
        get_ema_multi_avg_fn(1.5)


def test_swalr_follows_pytorch():
    """CosineAnnealingLR for 3 epochs, then SWALR(swa_lr=0.05, anneal_epochs=3): PyTorch 2.13 printed these."""
    model = nn.Linear(2, 1)
    opt = tgrad.optim.SGD(model.parameters(), lr=0.1)
    sched = tgrad.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    swa_sched = SWALR(opt, swa_lr=0.05, anneal_epochs=3)
    lrs = []
    for epoch in range(8):
        opt.step()
        (swa_sched if epoch >= 3 else sched).step()
        lrs.append(opt.param_groups[0]["lr"])
    np.testing.assert_allclose(lrs, [0.09755282581475769, 0.09045084971874738, 0.07938926261462367,
                                     0.07204194696096775, 0.057347315653655924, 0.05, 0.05, 0.05], rtol=1e-15)
    assert swa_sched.state_dict()["_anneal_strategy"] == "cos" and "anneal_func" not in swa_sched.state_dict()
    with pytest.raises(ValueError, match="anneal_strategy must by one of 'cos' or 'linear'"):
        SWALR(opt, swa_lr=0.05, anneal_strategy="step")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        SWALR(opt, swa_lr=0.05, anneal_epochs=-1)


def test_update_bn_recomputes_running_stats():
    tgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4, momentum=0.3))
    x = tgrad.randn(24, 3)
    loader = tgrad.utils.data.DataLoader(tgrad.utils.data.TensorDataset(x, x), batch_size=8)
    model.eval()
    update_bn(loader, model)
    assert not model.training and model[1].momentum == 0.3 and model[1].num_batches_tracked.item() == 3
    h = model[0](x).detach().cpu().numpy()
    means = [h[i:i + 8].mean(0) for i in (0, 8, 16)]
    np.testing.assert_allclose(model[1].running_mean.cpu().numpy(), np.mean(means, 0), rtol=1e-5, atol=1e-6)
    update_bn(loader, nn.Linear(2, 2))            # no BatchNorm: nothing to do
