"""Optimizers: multi-step updates vs numpy references and PyTorch's values, groups, state dicts, launches."""
import numpy as np
import pytest

import tgrad
from tgrad import nn, optim
from tgrad.kernels.runtime import launcher as T
from tgrad.testing.opinfos.optim import adagrad_ref, adam_ref, rmsprop_ref, sgd_ref

SHAPES = [(3,), (4, 5), (300,)]


def _params(rng, dtype):
    return [nn.Parameter(tgrad.tensor(rng.standard_normal(s), dtype=dtype)) for s in SHAPES]


class _Ref:
    """Numpy replay of an optimizer over several steps (in ``dtype``), one state list per parameter."""

    def __init__(self, ps, kind, kw, dtype=np.float64):
        self.p = [p.detach().cpu().numpy().astype(dtype) for p in ps]
        self.kind, self.kw = kind, kw
        z = [np.zeros_like(p) for p in self.p]
        self.state = {"buf": [None] * len(ps), "m": list(z), "v": list(z), "vmax": list(z), "sq": list(z),
                      "ga": list(z), "rbuf": list(z), "steps": [0] * len(ps),
                      "sum": [np.full_like(p, kw.get("initial_accumulator_value", 0.0)) for p in self.p]}

    def step(self, grads):
        s, kw = self.state, self.kw
        for i, g in enumerate(grads):
            if g is None:
                continue
            s["steps"][i] += 1
            if self.kind == "sgd":
                self.p[i], s["buf"][i] = sgd_ref(self.p[i], g, s["buf"][i], first=s["buf"][i] is None, **kw)
            elif self.kind == "adam":
                self.p[i], s["m"][i], s["v"][i], s["vmax"][i] = adam_ref(
                    self.p[i], g, s["m"][i], s["v"][i], s["vmax"][i], step=s["steps"][i], **kw)
            elif self.kind == "rmsprop":
                self.p[i], s["sq"][i], s["ga"][i], s["rbuf"][i] = rmsprop_ref(
                    self.p[i], g, s["sq"][i], s["ga"][i], s["rbuf"][i], **kw)
            else:
                kw2 = {k: v for k, v in kw.items() if k != "initial_accumulator_value"}
                self.p[i], s["sum"][i] = adagrad_ref(self.p[i], g, s["sum"][i], step=s["steps"][i], **kw2)


def _sgd(lr=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False):
    return (optim.SGD, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                            nesterov=nesterov, maximize=maximize), "sgd")


def _adam(cls=optim.Adam, lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, maximize=False):
    ref = dict(lr=lr, beta1=betas[0], beta2=betas[1], eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
               maximize=maximize, decoupled_weight_decay=cls is optim.AdamW)
    return (cls, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize),
            "adam", ref)


CONFIGS = {
    "sgd": _sgd(),
    "sgd_momentum_dampening": _sgd(momentum=0.9, dampening=0.3),
    "sgd_nesterov_wd": _sgd(momentum=0.8, nesterov=True, weight_decay=0.05),
    "sgd_maximize": _sgd(momentum=0.5, maximize=True),
    "adam": _adam(),
    "adam_amsgrad_wd": _adam(amsgrad=True, weight_decay=0.1, betas=(0.8, 0.9)),
    "adamw_amsgrad": _adam(cls=optim.AdamW, amsgrad=True, weight_decay=0.05),
    "adam_maximize": _adam(maximize=True, betas=(0.3, 0.5)),
    "rmsprop": (optim.RMSprop, dict(lr=0.01), "rmsprop"),
    "rmsprop_centered_momentum": (optim.RMSprop, dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1,
                                                      alpha=0.9), "rmsprop"),
    "adagrad": (optim.Adagrad, dict(lr=0.1), "adagrad"),
    "adagrad_decay": (optim.Adagrad, dict(lr=0.1, lr_decay=0.1, weight_decay=0.1, initial_accumulator_value=0.5,
                                          maximize=True), "adagrad"),
}
_RMS_DEFAULTS = dict(alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False, maximize=False)
_ADAGRAD_DEFAULTS = dict(lr_decay=0.0, eps=1e-10, weight_decay=0.0, maximize=False)


def _ref_kwargs(cfg):
    cls, kw, kind = cfg[:3]
    if kind == "adam":
        return cfg[3]
    if kind == "rmsprop":
        return dict(_RMS_DEFAULTS, **kw)
    if kind == "adagrad":
        return dict(_ADAGRAD_DEFAULTS, **kw)
    return kw


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("dtype", [tgrad.float64, tgrad.float32])
def test_steps_match_numpy_reference(name, dtype):
    cfg = CONFIGS[name]
    cls, kw, kind = cfg[:3]
    rng = np.random.default_rng(0)
    ps = _params(rng, dtype)
    opt = cls(ps, **kw)
    ref = _Ref(ps, kind, _ref_kwargs(cfg))
    for step in range(5):
        grads = [rng.standard_normal(s) for s in SHAPES]
        if step == 1:
            grads[0] = None                 # a parameter without a gradient this step is skipped
        for p, g in zip(ps, grads):
            p.grad = None if g is None else tgrad.tensor(g, dtype=dtype)
        opt.step()
        ref.step([None if g is None else g.astype(dtype.np).astype(np.float64) for g in grads])
    rtol, atol = (1e-12, 1e-12) if dtype is tgrad.float64 else (2e-5, 2e-6)
    for p, r in zip(ps, ref.p):
        np.testing.assert_allclose(p.detach().cpu().numpy().astype(np.float64), r, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", ["sgd_nesterov_wd", "adam_amsgrad_wd", "adamw_amsgrad", "rmsprop_centered_momentum",
                                  "adagrad_decay"])
def test_non_contiguous_parameters_grads_and_states(name):
    cfg = CONFIGS[name]
    cls, kw, kind = cfg[:3]
    rng = np.random.default_rng(1)

    def transposed(a):          # a (4, 3) tensor with a's values, strides (1, 4)
        return tgrad.tensor(np.ascontiguousarray(a.T), dtype=tgrad.float64).t()

    p = nn.Parameter(transposed(rng.standard_normal((4, 3))))
    q = nn.Parameter(tgrad.tensor(rng.standard_normal(5), dtype=tgrad.float64))     # contiguous, same group
    ptr = p.data_ptr()
    assert p.stride() == (1, 4)
    opt = cls([p, q], **kw)
    ref = _Ref([p, q], kind, _ref_kwargs(cfg))
    for step in range(4):
        g, gq = rng.standard_normal((4, 3)), rng.standard_normal(5)
        p.grad = transposed(g) if step % 2 else tgrad.tensor(g, dtype=tgrad.float64)
        q.grad = tgrad.tensor(gq, dtype=tgrad.float64)
        opt.step()
        ref.step([g, gq])
        if step == 1:           # the states too, same values in transposed layout
            state = opt.state[p]
            for k, v in state.items():
                if v.dim() == 2:
                    state[k] = transposed(v.cpu().numpy())
        assert p.data_ptr() == ptr and p.stride() == (1, 4)
        np.testing.assert_allclose(p.detach().cpu().numpy(), ref.p[0], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(q.detach().cpu().numpy(), ref.p[1], rtol=1e-12, atol=1e-14)


# PyTorch 2.13's results (float64), three steps with grads [0.5, -1, 2] * step from p = [1, 2, 3]
PYTORCH = [
    (optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
     [0.26489045819099993, 3.4380786881820002, 0.0675969316229997]),
    (optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.5, maximize=True), [1.3055, 1.389, 4.222]),
    (optim.Adam, dict(lr=0.1, amsgrad=True, weight_decay=0.1), [0.7056952879647671, 2.2899132582952775,
                                                                2.7062294713302903]),
    (optim.AdamW, dict(lr=0.1), [0.7049810963127292, 2.2860279027383466, 2.6989870912361162]),
    (optim.RMSprop, dict(lr=0.01, momentum=0.5, centered=True, weight_decay=0.1),
     [0.611607009688704, 2.3970148879332616, 2.6102970520061652]),
    (optim.Adagrad, dict(lr=0.1, lr_decay=0.1, initial_accumulator_value=0.5),
     [0.8110441598216189, 2.2248304077311594, 2.7588862481797802]),
]


@pytest.mark.parametrize("cls,kw,expected", PYTORCH, ids=[f"{c.__name__}-{i}" for i, (c, _, _) in
                                                          enumerate(PYTORCH)])
def test_matches_pytorch_values(cls, kw, expected):
    p = nn.Parameter(tgrad.tensor([1.0, 2.0, 3.0], dtype=tgrad.float64))
    opt = cls([p], **kw)
    for i in range(3):
        p.grad = tgrad.tensor([0.5, -1.0, 2.0], dtype=tgrad.float64) * (i + 1)
        opt.step()
    np.testing.assert_allclose(p.detach().cpu().numpy(), expected, rtol=1e-14)


def test_frozen_parameters_are_skipped_and_unchanged():
    lin1, lin2 = nn.Linear(4, 3), nn.Linear(3, 2)
    lin1.requires_grad_(False)
    before = [p.detach().cpu().numpy().copy() for p in lin1.parameters()]
    opt = optim.Adam(list(lin1.parameters()) + list(lin2.parameters()), lr=0.1)
    for _ in range(2):
        for p in lin2.parameters():
            p.grad = tgrad.ones_like(p)
        opt.step()
    for p, b in zip(lin1.parameters(), before):
        assert p.detach().cpu().numpy().tobytes() == b.tobytes()
        assert p not in opt.state
    assert all(opt.state[p]["step"].item() == 2.0 for p in lin2.parameters())


def test_one_launch_per_group_and_dtype():
    # mixed sizes: one cpu block size each (8 ... 4096), still one launch per group
    ps = [nn.Parameter(tgrad.ones(s)) for s in [(8,), (40,), (30, 30), (2, 3), (3000,)]]
    q = nn.Parameter(tgrad.ones(5, dtype=tgrad.float64))
    opt = optim.SGD([{"params": ps}, {"params": [q], "lr": 0.5}], lr=0.1, momentum=0.9)
    for p in ps + [q]:
        p.grad = tgrad.ones_like(p)
    opt.step()          # first step initialises the buffers
    with tgrad.profiler.profile() as prof:
        opt.step()
    assert prof.launches_by_op == {"sgd_step": 2}       # one per group
    assert prof.launches_by_kernel == {"multi_tensor_kernel": 2}
    np.testing.assert_allclose(q.detach().cpu().numpy(), 1 - 0.5 - 0.5 * 1.9)
    for p in ps:
        np.testing.assert_allclose(p.detach().cpu().numpy(), 1 - 0.1 - 0.1 * 1.9, rtol=1e-6)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_float32_steps_round_like_pytorch_cpu(name, device):
    """fp32 on cpu: bit for bit the float32 numpy replay of PyTorch's cpu step in ATen's operation order
    (the references on float32 arrays: an fma wherever ATen's cpu kernels use one).  Checked against
    torch 2.13 on cpu: PyTorch's bits are this replay's, except that its sqrt (MKL's) is 1 ulp off the
    correctly rounded one for some values, so Adam, RMSprop and Adagrad differ from PyTorch there."""
    if device != "cpu":
        pytest.skip("cuda: Triton's division and sqrt may differ by ulps")
    cfg = CONFIGS[name]
    cls, kw, kind = cfg[:3]
    rng = np.random.default_rng(0)
    ps = _params(rng, tgrad.float32)
    opt = cls(ps, **kw)
    ref = _Ref(ps, kind, _ref_kwargs(cfg), dtype=np.float32)
    for step in range(5):
        grads = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
        for p, g in zip(ps, grads):
            p.grad = tgrad.tensor(g)
        opt.step()
        ref.step(grads)
        for p, r in zip(ps, ref.p):
            np.testing.assert_array_equal(p.detach().cpu().numpy(), r)


@pytest.mark.parametrize("name", ["sgd_nesterov_wd", "adam_amsgrad_wd", "rmsprop_centered_momentum",
                                  "adagrad_decay"])
def test_more_tensors_than_a_launch_holds(name):
    """19 parameters of mixed sizes: ceil(19 / MAX_TENSORS) launches, every slot updated right."""
    from tgrad.kernels.optim import MAX_TENSORS
    cfg = CONFIGS[name]
    cls, kw, kind = cfg[:3]
    rng = np.random.default_rng(1)
    shapes = [(int(n),) for n in rng.integers(1, 700, 19)]
    ps = [nn.Parameter(tgrad.tensor(rng.standard_normal(s), dtype=tgrad.float64)) for s in shapes]
    opt = cls(ps, **kw)
    ref = _Ref(ps, kind, _ref_kwargs(cfg))
    for step in range(3):
        grads = [rng.standard_normal(s) for s in shapes]
        for p, g in zip(ps, grads):
            p.grad = tgrad.tensor(g, dtype=tgrad.float64)
        with tgrad.profiler.profile() as prof:
            opt.step()
        ref.step(grads)
        assert prof.launches_by_kernel["multi_tensor_kernel"] == -(-len(ps) // MAX_TENSORS)
    for p, r in zip(ps, ref.p):
        np.testing.assert_allclose(p.detach().cpu().numpy(), r, rtol=1e-12, atol=1e-12)


def test_changing_lr_keeps_the_kernel_specialization():
    p = nn.Parameter(tgrad.ones(10))
    opt = optim.Adam([p], lr=0.1)
    sched = optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    specs = []
    for _ in range(3):
        p.grad = tgrad.ones(10)
        T.RECORD = rec = T.SpecRecord()
        try:
            opt.step()
        finally:
            T.RECORD = None
        sched.step()
        (kernel, sig, cexpr, attrs), = [r for r in rec if r[0].__name__ == "multi_tensor_kernel"]
        specs.append((kernel.__name__, tuple(sig.items()), tuple(sorted((k, str(v)) for k, v in cexpr.items()))))
    assert specs[0] == specs[1] == specs[2] and specs[0][0] == "multi_tensor_kernel"
    assert opt.param_groups[0]["lr"] == 0.1 * 0.5 ** 3


def test_hyper_parameters_edited_between_steps_take_effect():
    """Each step reads the group's current values, bit for bit: lr edited by hand or from a loaded state
    dict, and lr = -0.0 (allowed; param.add_(grad, alpha=0.0) turns a -0.0 parameter into +0.0)."""
    p = nn.Parameter(tgrad.tensor([-0.0, 1.0]))
    opt = optim.SGD([p], lr=0.0)
    for lr, expect in [(0.0, [-0.0, 1.0]), (-0.0, [0.0, 1.0]), (0.5, [-0.5, 0.5]), (0.0, [-0.5, 0.5])]:
        opt.param_groups[0]["lr"] = lr
        p.grad = tgrad.tensor([1.0, 1.0])
        opt.step()
        assert p.detach().cpu().numpy().tobytes() == np.array(expect, dtype=np.float32).tobytes(), (lr, p)
    sd = opt.state_dict()
    sd["param_groups"][0]["lr"] = 0.25
    opt.load_state_dict(sd)
    p.grad = tgrad.tensor([1.0, 1.0])
    opt.step()
    assert p.tolist() == [-0.75, 0.25]


def test_float64_hyper_parameters_reach_the_kernel_unrounded():
    """float64 maths sees each hyper-parameter's every bit (they travel as the double's two 32-bit words):
    with grad 1, p - lr is one rounding of the exact difference, as numpy's."""
    lrs = [0.1, 1 / 3, 1e-300, -0.0, 5e-324, 1e300, 2.5e-8]
    p0 = np.array([1.0, -0.0, 1e-300, 3.0], dtype=np.float64)
    for lr in lrs:
        p = nn.Parameter(tgrad.tensor(p0))
        opt = optim.SGD([p], lr=lr)
        p.grad = tgrad.ones(4, dtype=tgrad.float64)
        opt.step()
        assert p.detach().cpu().numpy().tobytes() == (p0 - lr).tobytes(), lr


def test_optimizer_memory_returns_to_baseline():
    """A step keeps nothing on the device but the states: deleting the optimizer and the parameters brings
    memory_allocated back to where it was."""
    base = tgrad.memory_allocated()
    for cls, kw in [(optim.SGD, dict(lr=0.1, momentum=0.9)), (optim.Adam, dict(lr=1e-3)),
                    (optim.RMSprop, dict(lr=1e-2, centered=True)), (optim.Adagrad, dict(lr=0.1))]:
        for dt in (tgrad.float32, tgrad.float64):
            ps = [nn.Parameter(tgrad.ones(3, dtype=dt)), nn.Parameter(tgrad.ones(2, 2, dtype=dt))]
            opt = cls(ps, **kw)
            for step in range(3):
                for p in ps:
                    p.grad = tgrad.full_like(p, 0.5 + step)
                opt.step()
                kw["lr"] = kw["lr"] * 0.5        # new values every step
                opt.param_groups[0]["lr"] = kw["lr"]
            del opt, ps, p
    assert tgrad.memory_allocated() == base


def test_per_group_options_and_add_param_group():
    a, b = nn.Parameter(tgrad.zeros(2)), nn.Parameter(tgrad.zeros(2))
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 1.0}], lr=0.1)
    assert opt.param_groups[1]["momentum"] == 0 and opt.param_groups[1]["lr"] == 1.0
    c = nn.Parameter(tgrad.zeros(2))
    opt.add_param_group({"params": [c], "lr": 10.0})
    for p in (a, b, c):
        p.grad = tgrad.ones(2)
    opt.step()
    assert a.tolist() == pytest.approx([-0.1, -0.1]) and b.tolist() == [-1.0, -1.0] and c.tolist() == [-10.0, -10.0]
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [a]})


def test_validation_errors():
    p = [nn.Parameter(tgrad.ones(1))]
    cases = [
        (lambda: optim.SGD(p, lr=-1), ValueError, "Invalid learning rate: -1"),
        (lambda: optim.SGD(p, momentum=-0.5), ValueError, "Invalid momentum value: -0.5"),
        (lambda: optim.SGD(p, weight_decay=-1), ValueError, "Invalid weight_decay value: -1"),
        (lambda: optim.SGD(p, nesterov=True), ValueError, "Nesterov momentum requires a momentum and zero dampening"),
        (lambda: optim.Adam(p, lr=-0.1), ValueError, "Invalid learning rate: -0.1"),
        (lambda: optim.Adam(p, eps=-1), ValueError, "Invalid epsilon value: -1"),
        (lambda: optim.Adam(p, betas=(1.0, 0.9)), ValueError, "Invalid beta parameter at index 0: 1.0"),
        (lambda: optim.AdamW(p, betas=(0.9, -0.1)), ValueError, "Invalid beta parameter at index 1: -0.1"),
        (lambda: optim.RMSprop(p, alpha=-1), ValueError, "Invalid alpha value: -1"),
        (lambda: optim.Adagrad(p, lr_decay=-1), ValueError, "Invalid lr_decay value: -1"),
        (lambda: optim.Adagrad(p, initial_accumulator_value=-1), ValueError,
         "Invalid initial_accumulator_value value: -1"),
        (lambda: optim.SGD([]), ValueError, "optimizer got an empty parameter list"),
        (lambda: optim.SGD(p[0]), TypeError, "params argument given to the optimizer should be an iterable of "
                                             "Tensors or dicts, but got tgrad.FloatTensor"),
        (lambda: optim.SGD([{"params": {p[0]}}]), TypeError, "optimizer parameters need to be organized in ordered"),
        (lambda: optim.SGD([1]), TypeError, "optimizer can only optimize Tensors, but one of the params is int"),
        (lambda: optim.SGD([p[0] * 2]), ValueError, "can't optimize a non-leaf Tensor"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc) as e:
            fn()
        assert str(e.value).startswith(msg), (str(e.value), msg)


def test_zero_grad_closure_and_repr():
    p = nn.Parameter(tgrad.tensor([2.0]))
    opt = optim.SGD([p], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == 4.0
    assert p.tolist() == [1.0] and p.grad.tolist() == [4.0]
    opt.zero_grad(set_to_none=False)
    assert p.grad.tolist() == [0.0]
    opt.zero_grad()
    assert p.grad is None
    assert repr(opt) == ("SGD (\nParameter Group 0\n    dampening: 0\n    differentiable: False\n    foreach: None\n"
                         "    fused: None\n    lr: 0.25\n    maximize: False\n    momentum: 0\n    nesterov: False\n"
                         "    weight_decay: 0\n)")


def _train(opt_factory, steps, resume_at=None):
    """Losses of a small regression trained ``steps`` steps; with ``resume_at``, the model and optimizer
    are rebuilt from their state dicts at that step."""
    tgrad.manual_seed(0)
    x = tgrad.randn(16, 3)
    y = x.sum(1, keepdim=True) * 0.5
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    opt = opt_factory(model.parameters())
    losses = []
    for i in range(steps):
        if i == resume_at:
            msd, osd = model.state_dict(), opt.state_dict()
            model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
            model.load_state_dict(msd)
            opt = opt_factory(model.parameters())
            opt.load_state_dict(osd)
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("factory", [lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
                                     lambda ps: optim.AdamW(ps, lr=0.05, amsgrad=True),
                                     lambda ps: optim.RMSprop(ps, lr=0.01, centered=True, momentum=0.5),
                                     lambda ps: optim.Adagrad(ps, lr=0.1)],
                         ids=["sgd", "adamw", "rmsprop", "adagrad"])
def test_state_dict_resume_is_exact(factory):
    assert _train(factory, 6) == _train(factory, 6, resume_at=3)


def test_state_dict_layout():
    a, b = nn.Parameter(tgrad.ones(2)), nn.Parameter(tgrad.ones(3))
    opt = optim.Adam([{"params": [a]}, {"params": [b], "lr": 0.5}])
    b.grad = tgrad.ones(3)
    opt.step()
    sd = opt.state_dict()
    assert list(sd["state"]) == [1] and sorted(sd["state"][1]) == ["exp_avg", "exp_avg_sq", "step"]
    assert sd["state"][1]["step"].item() == 1.0 and sd["state"][1]["step"].dtype is tgrad.float32
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]] and sd["param_groups"][1]["lr"] == 0.5
    opt2 = optim.Adam([{"params": [a]}, {"params": [b]}])
    with pytest.raises(ValueError, match="loaded state dict contains a parameter group that doesn't match"):
        optim.Adam([a, b]).load_state_dict({"state": {}, "param_groups": [{"params": [0]}]})
    with pytest.raises(ValueError, match="loaded state dict has a different number of parameter groups"):
        optim.Adam([a, b]).load_state_dict(sd)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[1]["lr"] == 0.5 and opt2.state[b]["exp_avg"].tolist() == pytest.approx([0.1] * 3)


def test_low_precision_parameters():
    for dt in (tgrad.float16, tgrad.bfloat16):
        p = nn.Parameter(tgrad.tensor([1.0, -2.0, 0.5], dtype=dt))
        opt = optim.SGD([p], lr=0.5, momentum=0.9)
        p.grad = tgrad.tensor([1.0, 1.0, -1.0], dtype=dt)
        opt.step()
        assert p.dtype is dt and opt.state[p]["momentum_buffer"].dtype is dt
        assert p.tolist() == [0.5, -2.5, 1.0]
