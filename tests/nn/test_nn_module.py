"""nn.Module machinery: registration, naming, state dicts, modes, conversion, hooks, reprs (texts from PyTorch)."""
import copy

import numpy as np
import pytest

import tgrad
import tgrad.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(8, 12)
        self.act = nn.Sequential(nn.Linear(12, 12), nn.Linear(12, 12, bias=False))
        self.output = nn.Linear(12, 1)
        self.register_buffer("steps", tgrad.zeros(1))
        self.register_buffer("tmp", tgrad.zeros(1), persistent=False)


class Scale(nn.Module):
    """y = x * w, with a parameter and a buffer (only needs the mul op)."""

    def __init__(self, n):
        super().__init__()
        self.w = nn.Parameter(tgrad.full((n,), 2.0))
        self.register_buffer("calls", tgrad.zeros(()))

    def forward(self, x):
        return x * self.w


NET_REPR = """Net(
  (hidden): Linear(in_features=8, out_features=12, bias=True)
  (act): Sequential(
    (0): Linear(in_features=12, out_features=12, bias=True)
    (1): Linear(in_features=12, out_features=12, bias=False)
  )
  (output): Linear(in_features=12, out_features=1, bias=True)
)"""


def test_registration_order_and_dotted_names():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == [
        "hidden.weight", "hidden.bias", "act.0.weight", "act.0.bias", "act.1.weight", "output.weight",
        "output.bias"]
    assert list(net.state_dict()) == ["steps", "hidden.weight", "hidden.bias", "act.0.weight", "act.0.bias",
                                      "act.1.weight", "output.weight", "output.bias"]
    assert [n for n, _ in net.named_buffers()] == ["steps", "tmp"]
    assert [n for n, _ in net.named_children()] == ["hidden", "act", "output"]
    assert [n for n, _ in net.named_modules()] == ["", "hidden", "act", "act.0", "act.1", "output"]
    assert len(list(net.parameters())) == 7
    assert len(list(net.parameters(recurse=False))) == 0
    assert all(isinstance(p, nn.Parameter) and isinstance(p, tgrad.Tensor) for p in net.parameters())
    assert net.hidden.weight.shape == (12, 8) and net.hidden.weight.requires_grad


def test_shared_module_and_parameter_listed_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, lin)
    assert len(list(seq.parameters())) == 2
    assert [n for n, _ in seq.named_modules()] == ["", "0"]
    assert len(list(seq.named_parameters(remove_duplicate=False))) == 4


# every layer and loss of issue 5, as PyTorch 2.13 shows it (checked against torch 2.13.0+cpu)
LAYER_REPRS = [
    (lambda: nn.Linear(8, 12), "Linear(in_features=8, out_features=12, bias=True)"),
    (lambda: nn.Linear(3, 4, bias=False), "Linear(in_features=3, out_features=4, bias=False)"),
    (lambda: nn.Identity(), "Identity()"),
    (lambda: nn.Unflatten(1, (2, 3)), "Unflatten(dim=1, unflattened_size=(2, 3))"),
    (lambda: nn.Dropout(), "Dropout(p=0.5, inplace=False)"),
    (lambda: nn.Dropout(0.2, inplace=True), "Dropout(p=0.2, inplace=True)"),
    (lambda: nn.ReLU(), "ReLU()"),
    (lambda: nn.ReLU(inplace=True), "ReLU(inplace=True)"),
    (lambda: nn.ReLU6(), "ReLU6()"),
    (lambda: nn.LeakyReLU(), "LeakyReLU(negative_slope=0.01)"),
    (lambda: nn.LeakyReLU(0.2, inplace=True), "LeakyReLU(negative_slope=0.2, inplace=True)"),
    (lambda: nn.ELU(), "ELU(alpha=1.0)"),
    (lambda: nn.ELU(alpha=0.5), "ELU(alpha=0.5)"),
    (lambda: nn.GELU(), "GELU(approximate='none')"),
    (lambda: nn.GELU(approximate="tanh"), "GELU(approximate='tanh')"),
    (lambda: nn.SiLU(), "SiLU()"),
    (lambda: nn.Mish(), "Mish()"),
    (lambda: nn.Softplus(), "Softplus(beta=1.0, threshold=20.0)"),
    (lambda: nn.Softplus(beta=2, threshold=10), "Softplus(beta=2, threshold=10)"),
    (lambda: nn.Sigmoid(), "Sigmoid()"),
    (lambda: nn.Tanh(), "Tanh()"),
    (lambda: nn.Hardtanh(), "Hardtanh(min_val=-1.0, max_val=1.0)"),
    (lambda: nn.Hardtanh(-2, 2), "Hardtanh(min_val=-2, max_val=2)"),
    (lambda: nn.Softmax(dim=1), "Softmax(dim=1)"),
    (lambda: nn.Softmax(), "Softmax(dim=None)"),
    (lambda: nn.LogSoftmax(dim=-1), "LogSoftmax(dim=-1)"),
    (lambda: nn.LayerNorm(12), "LayerNorm((12,), eps=1e-05, elementwise_affine=True, bias=True)"),
    (lambda: nn.LayerNorm([3, 4], eps=1e-6, elementwise_affine=False),
     "LayerNorm((3, 4), eps=1e-06, elementwise_affine=False, bias=False)"),
    (lambda: nn.LayerNorm(12, bias=False), "LayerNorm((12,), eps=1e-05, elementwise_affine=True, bias=False)"),
    (lambda: nn.BatchNorm1d(12),
     "BatchNorm1d(12, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"),
    (lambda: nn.BatchNorm1d(12, eps=1e-3, momentum=None, affine=False, track_running_stats=False),
     "BatchNorm1d(12, eps=0.001, momentum=None, affine=False, bias=False, track_running_stats=False)"),
    (lambda: nn.BatchNorm1d(12, bias=False),
     "BatchNorm1d(12, eps=1e-05, momentum=0.1, affine=True, bias=False, track_running_stats=True)"),
    (lambda: nn.Embedding(4, 2), "Embedding(4, 2)"),
    (lambda: nn.Embedding(10, 3, padding_idx=0, max_norm=1.0), "Embedding(10, 3, padding_idx=0, max_norm=1.0)"),
    (lambda: nn.Embedding(10, 3, max_norm=2.0, norm_type=1.0), "Embedding(10, 3, max_norm=2.0, norm_type=1.0)"),
    (lambda: nn.Sequential(nn.Linear(2, 3), nn.Dropout(0.1)),
     "Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n  (1): Dropout(p=0.1, inplace=False)\n)"),
    (lambda: nn.ModuleList([nn.Tanh()]), "ModuleList(\n  (0): Tanh()\n)"),
    (lambda: nn.MSELoss(), "MSELoss()"),
    (lambda: nn.MSELoss(reduction="sum"), "MSELoss()"),
    (lambda: nn.L1Loss(), "L1Loss()"),
    (lambda: nn.SmoothL1Loss(beta=0.5), "SmoothL1Loss()"),
    (lambda: nn.HuberLoss(delta=2.0), "HuberLoss()"),
    (lambda: nn.CrossEntropyLoss(label_smoothing=0.1), "CrossEntropyLoss()"),
    (lambda: nn.NLLLoss(), "NLLLoss()"),
    (lambda: nn.BCELoss(), "BCELoss()"),
    (lambda: nn.BCEWithLogitsLoss(), "BCEWithLogitsLoss()"),
    (lambda: nn.KLDivLoss(reduction="batchmean", log_target=True), "KLDivLoss()"),
]


def test_reprs_match_pytorch():
    assert repr(Net()) == NET_REPR
    ml = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 3)])
    assert repr(ml) == ("ModuleList(\n  (0-1): 2 x Linear(in_features=2, out_features=2, bias=True)\n"
                        "  (2): Linear(in_features=2, out_features=3, bias=True)\n)")
    assert repr(nn.ModuleDict({"a": nn.Linear(2, 2)})) == \
        "ModuleDict(\n  (a): Linear(in_features=2, out_features=2, bias=True)\n)"
    assert repr(nn.Module()) == "Module()"
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"
    assert repr(nn.Unflatten(1, [2, 3])) == "Unflatten(dim=1, unflattened_size=[2, 3])"
    for m, text in LAYER_REPRS:
        assert repr(m()) == text
    p = nn.Parameter(tgrad.tensor([1.0, 2.0], device="cpu"))
    assert repr(p) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"
    assert repr(nn.Parameter(tgrad.ones(1, device="cpu"), requires_grad=False)) == "Parameter containing:\ntensor([1.])"


def test_parameter_shares_storage_and_version():
    t = tgrad.zeros(3)
    p = nn.Parameter(t)
    assert p.data_ptr() == t.data_ptr() and p.requires_grad and not t.requires_grad
    t.add_(1)
    assert p.tolist() == [1.0, 1.0, 1.0] and p._version == t._version
    assert type(p.detach()) is tgrad.Tensor
    q = copy.deepcopy(p)
    assert type(q) is nn.Parameter and q.data_ptr() != p.data_ptr() and q.tolist() == p.tolist()
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype can require gradients$"):
        nn.Parameter(tgrad.tensor([1, 2]))


def test_state_dict_round_trip_and_strict_errors():
    a, b = Net(), Net()
    b.load_state_dict(a.state_dict())
    for (na, pa), (nb, pb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert na == nb and np.array_equal(pa.cpu().numpy(), pb.cpu().numpy())
    assert b.hidden.weight.data_ptr() != a.hidden.weight.data_ptr()      # copied, not aliased
    assert str(b.load_state_dict(a.state_dict())) == "<All keys matched successfully>"
    assert not a.state_dict()["hidden.weight"].requires_grad
    sd = a.state_dict()
    sd.pop("hidden.bias")
    sd["extra.w"] = tgrad.zeros(1)
    sd["output.weight"] = tgrad.zeros(3, 3)
    with pytest.raises(RuntimeError) as e:
        b.load_state_dict(sd)
    assert str(e.value) == (
        'Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "hidden.bias". \n\t'
        'Unexpected key(s) in state_dict: "extra.w". \n\tsize mismatch for output.weight: copying a param with '
        'shape tgrad.Size([3, 3]) from checkpoint, the shape in current model is tgrad.Size([1, 12]).')
    r = b.load_state_dict({"hidden.weight": tgrad.ones(12, 8), "foo": tgrad.zeros(1)}, strict=False)
    assert r.unexpected_keys == ["foo"] and r.missing_keys[:2] == ["steps", "hidden.bias"]
    assert b.hidden.weight.tolist()[0] == [1.0] * 8


def test_load_state_dict_assign_and_non_persistent():
    m = Scale(3)
    w = tgrad.tensor([1.0, 2.0, 3.0])
    m.load_state_dict({"w": w, "calls": tgrad.ones(())}, assign=True)
    assert isinstance(m.w, nn.Parameter) and m.w.data_ptr() == w.data_ptr() and m.w.requires_grad
    n = Net()
    assert "tmp" not in n.state_dict()
    n.register_buffer("tmp", tgrad.zeros(1), persistent=True)
    assert "tmp" in n.state_dict()


def test_train_eval_requires_grad_zero_grad_apply():
    net = Net()
    assert net.training and net.act[0].training
    net.eval()
    assert not net.training and not net.act[1].training
    net.train()
    assert net.output.training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train(1)
    net.hidden.requires_grad_(False)
    assert [n for n, p in net.named_parameters() if p.requires_grad][0] == "act.0.weight"
    m = Scale(3)
    (m(tgrad.ones(3))).sum().backward()
    assert m.w.grad.tolist() == [1.0, 1.0, 1.0]
    m.zero_grad(set_to_none=False)
    assert m.w.grad.tolist() == [0.0, 0.0, 0.0]
    m.zero_grad()
    assert m.w.grad is None
    seen = []
    net.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["Linear", "Linear", "Linear", "Sequential", "Linear", "Net"]


def test_to_dtype_keeps_parameter_identity_and_skips_integer_buffers():
    m = Scale(3)
    m.register_buffer("count", tgrad.zeros(2, dtype=tgrad.int64))
    w = m.w
    m.w.grad = tgrad.ones(3)
    assert m.to(tgrad.float64) is m
    assert m.w is w and m.w.dtype is tgrad.float64 and m.w.grad.dtype is tgrad.float64
    assert m.calls.dtype is tgrad.float64 and m.count.dtype is tgrad.int64
    m.half()
    assert m.w.dtype is tgrad.float16 and isinstance(m.w, nn.Parameter) and m.w.requires_grad
    m.float()
    assert m.w.tolist() == [2.0, 2.0, 2.0] and m.w.dtype is tgrad.float32
    m.to("cpu", dtype=tgrad.float64)
    assert m.w.dtype is tgrad.float64 and m.w.device.type == "cpu"
    m.cpu().double()
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point"):
        m.to(tgrad.int32)


def test_registration_errors():
    net = Net()
    with pytest.raises(KeyError, match="attribute 'hidden' already exists"):
        net.register_buffer("hidden", tgrad.zeros(1))
    with pytest.raises(KeyError) as e:
        net.register_buffer("a.b", tgrad.zeros(1))
    assert e.value.args[0] == 'buffer name can\'t contain "."'
    with pytest.raises(TypeError, match=r"cannot assign 'int' as child module 'hidden' \(torch.nn.Module or None"):
        net.hidden = 3
    with pytest.raises(TypeError, match="cannot assign 'tgrad.FloatTensor' as parameter 'weight'"):
        net.hidden.weight = tgrad.zeros(1)
    with pytest.raises(TypeError, match="cannot assign 'int' as buffer 'steps'"):
        net.steps = 3
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'foo'"):
        net.foo
    with pytest.raises(AttributeError, match="cannot assign parameters before Module.__init__"):
        class Bad(nn.Module):
            def __init__(self):
                self.w = nn.Parameter(tgrad.ones(1))
        Bad()
    net.steps = tgrad.ones(1)           # a tensor assigned to a buffer name replaces the buffer
    assert net.state_dict()["steps"].tolist() == [1.0]
    net.hidden = None
    assert "hidden.weight" not in net.state_dict()


def test_get_submodule_parameter_buffer():
    net = Net()
    assert net.get_submodule("act.1") is net.act[1]
    assert net.get_submodule("") is net
    assert net.get_parameter("act.0.bias") is net.act[0].bias
    assert net.get_buffer("steps") is net.steps
    with pytest.raises(AttributeError, match="Sequential has no attribute `5`"):
        net.get_submodule("act.5")
    with pytest.raises(AttributeError, match="`weight` is not an nn.Module"):
        net.get_submodule("hidden.weight")
    with pytest.raises(AttributeError, match="`steps` is not an nn.Parameter"):
        net.get_parameter("steps")


def test_add_module_and_delattr():
    m = nn.Module()
    m.add_module("a", Scale(2))
    m.register_parameter("p", nn.Parameter(tgrad.ones(1)))
    m.register_parameter("none", None)
    assert [n for n, _ in m.named_parameters()] == ["p", "a.w"]
    assert "none" not in m.state_dict()
    del m.a
    assert [n for n, _ in m.named_parameters()] == ["p"]
    with pytest.raises(TypeError, match="is not a Module subclass"):
        m.add_module("x", 3)
    with pytest.raises(KeyError) as e:
        m.add_module("a.b", nn.Module())
    assert e.value.args[0] == 'module name can\'t contain ".", got: a.b'


def test_forward_hooks():
    m = Scale(2)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] + 1,))
    h2 = m.register_forward_hook(lambda mod, args, out: out * 10)
    m.register_forward_hook(lambda mod, args, out: calls.append("first"), prepend=True)
    assert m(tgrad.ones(2)).tolist() == [40.0, 40.0]
    assert calls == ["first"]
    h1.remove()
    assert m(tgrad.ones(2)).tolist() == [20.0, 20.0]
    h2.remove()
    assert m(tgrad.ones(2)).tolist() == [2.0, 2.0]
    m.register_forward_pre_hook(lambda mod, args, kwargs: ((args[0] * 0,), kwargs), with_kwargs=True)
    assert m(tgrad.ones(2)).tolist() == [0.0, 0.0]


def test_forward_hook_always_call_runs_on_error():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")
    m = Boom()
    seen = []
    m.register_forward_hook(lambda mod, args, out: seen.append(out), always_call=True)
    with pytest.raises(ValueError, match="boom"):
        m(1)
    assert seen == [None]
    with pytest.raises(NotImplementedError, match=r'Module \[Module\] is missing the required "forward" function'):
        nn.Module()(1)


def test_containers():
    a, b, c = Scale(1), Scale(1), Scale(1)
    seq = nn.Sequential(a, b)
    assert len(seq) == 2 and seq[0] is a and seq[-1] is b
    assert isinstance(seq[0:1], nn.Sequential) and len(seq[0:1]) == 1
    seq.append(c)
    assert [n for n, _ in seq.named_children()] == ["0", "1", "2"]
    assert seq(tgrad.ones(1)).tolist() == [8.0]
    del seq[0]
    assert [n for n, _ in seq.named_children()] == ["0", "1"] and seq[0] is b
    with pytest.raises(IndexError, match="index 5 is out of range"):
        seq[5]
    ml = nn.ModuleList([a])
    ml.append(b)
    ml.extend([c])
    ml.insert(0, Scale(1))
    assert len(ml) == 4 and ml[1] is a and len(list(ml.parameters())) == 4
    md = nn.ModuleDict({"x": a})
    md["y"] = b
    assert list(md.keys()) == ["x", "y"] and "y" in md and md.pop("x") is a
    assert [n for n, _ in md.named_parameters()] == ["y.w"]
    od = nn.Sequential(__import__("collections").OrderedDict([("first", a), ("second", b)]))
    assert [n for n, _ in od.named_parameters()] == ["first.w", "second.w"]


def test_deepcopy_module():
    net = Net()
    net2 = copy.deepcopy(net)
    for p, q in zip(net.parameters(), net2.parameters()):
        assert type(q) is nn.Parameter and p.data_ptr() != q.data_ptr() and np.array_equal(p.numpy(force=True),
                                                                                           q.numpy(force=True))
