"""The schedulers PyTorch composes and cycles with (MultiplicativeLR, ConstantLR, PolynomialLR, SequentialLR,
ChainedScheduler, CyclicLR): lr sequences (and CyclicLR's momentum) against PyTorch 2.13's, hard-coded as it
printed them (tests/optim/test_optim_lr_scheduler.py has the others)."""
import pytest

import tgrad
from tgrad import nn, optim
from tgrad.optim import lr_scheduler as L

EXPECTED = {
    'MultiplicativeLR': (lambda o: L.MultiplicativeLR(o, lambda e: 0.95), {},
        [0.095, 0.09025, 0.0857375, 0.08145062499999998, 0.07737809374999999, 0.07350918906249998,
         0.06983372960937498, 0.06634204312890622, 0.0630249409724609, 0.05987369392383786]),
    'ConstantLR': (lambda o: L.ConstantLR(o, factor=0.5, total_iters=4), {},
        [0.05, 0.05, 0.05, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]),
    'PolynomialLR': (lambda o: L.PolynomialLR(o, total_iters=8, power=2.0), {},
        [0.0765625, 0.05625, 0.03906250000000001, 0.02500000000000001, 0.014062500000000006, 0.006250000000000002,
         0.0015625000000000005, 0.0, 0.0, 0.0]),
    'SequentialLR': (
        lambda o: L.SequentialLR(o, [L.LinearLR(o, 0.1, 1.0, 3), L.CosineAnnealingLR(o, 10)], milestones=[3]), {},
        [0.04, 0.07, 0.1, 0.09755282581475769, 0.09045084971874738, 0.07938926261462367, 0.06545084971874739,
         0.05000000000000001, 0.03454915028125264, 0.020610737385376353]),
    'SequentialLR3': (
        lambda o: L.SequentialLR(o, [L.ConstantLR(o, 0.1, 2), L.ExponentialLR(o, 0.9), L.StepLR(o, 2)],
                                 milestones=[2, 6]), {},
        [0.010000000000000002, 0.1, 0.09000000000000001, 0.08100000000000002, 0.07290000000000002, 0.1, 0.1,
         0.010000000000000002, 0.010000000000000002, 0.0010000000000000002]),
    'ChainedScheduler': (lambda o: L.ChainedScheduler([L.ConstantLR(o, 0.1, 4), L.ExponentialLR(o, 0.9)]), {},
        [0.009000000000000003, 0.008100000000000003, 0.007290000000000003, 0.06561000000000003,
         0.059049000000000025, 0.05314410000000002, 0.04782969000000002, 0.043046721000000024, 0.03874204890000002,
         0.03486784401000002]),
    'CyclicLR': (lambda o: L.CyclicLR(o, 0.01, 0.1, step_size_up=3), {'momentum': 0.9},
        [0.040000000000000015, 0.06999999999999999, 0.1, 0.07000000000000003, 0.03999999999999998, 0.01,
         0.040000000000000056, 0.06999999999999995, 0.1, 0.06999999999999995, 0.8333333333333335]),
    'CyclicLR_exp': (
        lambda o: L.CyclicLR(o, 0.01, 0.1, step_size_up=3, mode='exp_range', gamma=0.9, cycle_momentum=False), {},
        [0.03700000000000001, 0.0586, 0.07561000000000001, 0.04936600000000002, 0.027714699999999988, 0.01,
         0.02434890700000003, 0.03582803259999999, 0.04486784401000001, 0.03092070640599999]),
}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_lr_sequence_matches_pytorch(name):
    make, kw, expected = EXPECTED[name]
    opt = optim.SGD([nn.Parameter(tgrad.ones(2))], lr=0.1, **kw)
    sched = make(opt)
    got = []
    for _ in range(10):
        opt.step()
        sched.step()
        got.append(sched.get_last_lr()[0])
    if "momentum" in kw:
        got.append(opt.param_groups[0]["momentum"])
    assert got == expected


def test_composite_state_dict_round_trip_and_errors():
    opt = optim.SGD([nn.Parameter(tgrad.ones(2))], lr=0.1)
    s = L.SequentialLR(opt, [L.ConstantLR(opt, 0.1, 2), L.ExponentialLR(opt, 0.9)], milestones=[2])
    for _ in range(3):
        opt.step()
        s.step()
    sd = s.state_dict()
    assert [type(x) for x in sd["_schedulers"]] == [dict, dict] and sd["last_epoch"] == 3
    opt2 = optim.SGD([nn.Parameter(tgrad.ones(2))], lr=0.1)
    s2 = L.SequentialLR(opt2, [L.ConstantLR(opt2, 0.1, 2), L.ExponentialLR(opt2, 0.9)], milestones=[2])
    s2.load_state_dict(sd)
    assert s2.last_epoch == 3 and s2._schedulers[1].last_epoch == s._schedulers[1].last_epoch
    with pytest.raises(ValueError, match="expects number of schedulers provided to be one more"):
        L.SequentialLR(opt, [L.ConstantLR(opt)], milestones=[1])
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        L.ChainedScheduler([L.ReduceLROnPlateau(opt)])
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        L.CyclicLR(optim.Adagrad([nn.Parameter(tgrad.ones(1))]), 0.1, 1.0)
    with pytest.raises(ValueError, match="Constant multiplicative factor expected to be between 0 and 1."):
        L.ConstantLR(opt, factor=2.0)


def test_cyclic_lr_cycles_adam_beta1():
    opt = optim.Adam([nn.Parameter(tgrad.ones(1))], lr=0.1)
    s = L.CyclicLR(opt, 0.01, 0.1, step_size_up=2, mode="triangular2")
    betas = []
    for _ in range(4):
        opt.step()
        s.step()
        betas.append(round(opt.param_groups[0]["betas"][0], 10))
    assert betas == [0.85, 0.8, 0.85, 0.9]      # PyTorch 2.13
