"""Learning-rate schedulers: lr sequences against PyTorch 2.13's (hard-coded, exact floats)."""
import warnings

import pytest

import tgrad
from tgrad import nn, optim
from tgrad.optim import lr_scheduler as L

EXPECTED = {
    "StepLR": (lambda o: L.StepLR(o, step_size=3, gamma=0.5),
               [0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.0125, 0.0125, 0.0125]),
    "MultiStepLR": (lambda o: L.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.1),
                    [0.1, 0.1, 0.010000000000000002, 0.010000000000000002, 0.010000000000000002,
                     0.00010000000000000005, 0.00010000000000000005, 0.00010000000000000005,
                     0.00010000000000000005, 1.0000000000000006e-05, 1.0000000000000006e-05,
                     1.0000000000000006e-05]),
    "ExponentialLR": (lambda o: L.ExponentialLR(o, gamma=0.9),
                      [0.1, 0.09000000000000001, 0.08100000000000002, 0.07290000000000002, 0.06561000000000002,
                       0.05904900000000002, 0.05314410000000002, 0.04782969000000002, 0.043046721000000024,
                       0.03874204890000002, 0.03486784401000002, 0.03138105960900001]),
    "CosineAnnealingLR": (lambda o: L.CosineAnnealingLR(o, T_max=5, eta_min=0.01),
                          [0.1, 0.09140576474687263, 0.06890576474687263, 0.04109423525312736,
                           0.018594235253127367, 0.01, 0.018594235253127367, 0.04109423525312739,
                           0.06890576474687267, 0.09140576474687269, 0.10000000000000006, 0.09140576474687272]),
    "LambdaLR": (lambda o: L.LambdaLR(o, lambda e: 1.0 / (e + 1)),
                 [0.1, 0.05, 0.03333333333333333, 0.025, 0.020000000000000004, 0.016666666666666666,
                  0.014285714285714285, 0.0125, 0.011111111111111112, 0.010000000000000002, 0.009090909090909092,
                  0.008333333333333333]),
    "LinearLR": (lambda o: L.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=4),
                 [0.025, 0.043750000000000004, 0.06250000000000001, 0.08125000000000002] + [0.10000000000000002] * 8),
    "OneCycleLR": (lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=12),
                   [0.040000000000000036, 0.3497896542195831, 0.8792851591221287, 0.9944154354509117,
                    0.9330129698414117, 0.811745653949763, 0.6473789976951033, 0.46263710266697505,
                    0.28306099820869923, 0.1334775301888306, 0.03456698742539522, 4e-06]),
    "OneCycleLR_linear_three_phase": (
        lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=13, anneal_strategy="linear", three_phase=True),
        [0.04, 0.37103448275862067, 0.7020689655172414, 0.9668965517241379, 0.6358620689655172,
         0.30482758620689654, 0.038709806451612906, 0.03225883870967742, 0.025807870967741932, 0.01935690322580645,
         0.012905935483870964, 0.006454967741935477, 3.9999999999970615e-06]),
}


def _sgd(lr=0.1, **kw):
    return optim.SGD([nn.Parameter(tgrad.zeros(1))], lr=lr, **kw)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_lr_sequence_matches_pytorch(name):
    make, expected = EXPECTED[name]
    opt = _sgd()
    sched = make(opt)
    got = []
    for _ in expected:
        got.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert got == expected
    assert sched.get_last_lr() == [opt.param_groups[0]["lr"]]


def test_one_cycle_cycles_momentum_and_beta1():
    opt = _sgd(momentum=0.9)
    sched = L.OneCycleLR(opt, max_lr=1.0, total_steps=12)
    moms = []
    for _ in range(12):
        moms.append(opt.param_groups[0]["momentum"])
        opt.step()
        sched.step()
    assert moms == [0.95, 0.9177302443521267, 0.8625744625914449, 0.8505584586887436, 0.856698729810778,
                    0.8688255099070633, 0.8852622412794547, 0.9037365046793212, 0.9216941869558779,
                    0.9366525935914912, 0.9465436874322102, 0.95]
    with pytest.raises(ValueError, match="Tried to step 13 times. The specified number of total steps is 12"):
        sched.step()
    opt = optim.Adam([nn.Parameter(tgrad.zeros(1))], lr=0.1)
    sched = L.OneCycleLR(opt, max_lr=1.0, total_steps=5)
    betas = []
    for _ in range(5):
        betas.append(opt.param_groups[0]["betas"])
        opt.step()
        sched.step()
    assert betas == [(0.95, 0.999), (0.854951556604879, 0.999), (0.8888739533021842, 0.999),
                     (0.9311744900929366, 0.999), (0.95, 0.999)]


def test_reduce_lr_on_plateau():
    opt = _sgd(lr=1.0)
    sched = L.ReduceLROnPlateau(opt, patience=2, factor=0.5, cooldown=1, min_lr=0.1)
    got = []
    for m in [5, 4, 4, 4, 4, 4, 4, 3, 3, 3, 3, 3, 3, 3, 3, 3]:
        sched.step(m)
        got.append(opt.param_groups[0]["lr"])
    assert got == [1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25, 0.125, 0.125]
    assert sched.get_last_lr() == [0.125]
    opt = _sgd(lr=1.0)
    sched = L.ReduceLROnPlateau(opt, mode="max", threshold_mode="abs", threshold=0.5, patience=0)
    got = []
    for m in [1, 1.4, 2, 2.2, 2.6]:
        sched.step(m)
        got.append(opt.param_groups[0]["lr"])
    assert got == [1.0, 0.1, 0.1, 0.010000000000000002, 0.010000000000000002]
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        L.ReduceLROnPlateau(opt, factor=1.0)


def test_closed_form_epoch_state_dict_and_warnings():
    opt = _sgd()
    sched = L.StepLR(opt, 3, 0.5)
    opt.step()
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not necessary"):
        sched.step(7)
    assert opt.param_groups[0]["lr"] == 0.025 and sched.get_last_lr() == [0.025]
    sd = L.StepLR(_sgd(), 3).state_dict()
    assert sorted(sd) == ["_get_lr_called_within_step", "_is_initial", "_last_lr", "_step_count", "base_lrs",
                          "gamma", "last_epoch", "step_size"]
    assert sd["base_lrs"] == [0.1] and sd["last_epoch"] == 0 and sd["_step_count"] == 1
    opt2 = _sgd()
    sched2 = L.StepLR(opt2, 3, 0.5)
    sched2.load_state_dict(sched.state_dict())
    assert sched2.last_epoch == 7
    with pytest.warns(UserWarning, match="Detected call of `lr_scheduler.step\\(\\)` before `optimizer.step\\(\\)`"):
        L.ExponentialLR(_sgd(), 0.5).step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt = _sgd()
        s = L.ExponentialLR(opt, 0.5)
        opt.step()
        s.step()
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups\\[0\\]"):
        L.StepLR(_sgd(), 3, last_epoch=2)
    with pytest.raises(TypeError, match="int is not an Optimizer"):
        L.StepLR(3, 3)


def test_optimizer_uses_the_scheduled_lr():
    p = nn.Parameter(tgrad.zeros(1))
    opt = optim.SGD([p], lr=1.0)
    sched = L.MultiStepLR(opt, milestones=[1], gamma=0.5)
    for _ in range(3):
        p.grad = tgrad.ones(1)
        opt.step()
        sched.step()
    assert p.tolist() == [-2.0]
