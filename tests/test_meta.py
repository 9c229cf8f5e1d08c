"""The meta device: tensors with a shape, dtype and strides and no memory (issue 14).

Ops on meta tensors give the metadata the same op gives on cpu, allocate nothing and launch nothing, and
record the graph; backward gives meta gradients.  Reading values raises PyTorch's errors.  The expected
strings are what PyTorch 2.13 printed (``/work/venv-torch/bin/python``), with ``torch.`` as ``tgrad.``.
"""
import copy
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import tgrad
from tgrad import nn
from tgrad.kernels.runtime import launcher
from tgrad.testing.opinfo import to_tensor
from tgrad.testing.opinfo_db import OP_DB

CPU_ONLY = True     # meta results are compared with cpu results

DATA = os.path.join(os.path.dirname(__file__), "data")
NONZERO = ("The register_meta function for torch.nonzero() raises unimplemented by default, as a correct "
           "data-independent implementation does not exist.")
NO_DATA = "Cannot copy out of meta tensor; no data!"


def _meta_of(t):
    return tuple(t.shape), t.dtype, t.stride(), t.storage_offset()


def _flat(o):
    if isinstance(o, tgrad.Tensor):
        return [o]
    if isinstance(o, (tuple, list)):
        return [t for x in o for t in _flat(x)]
    return []


# ------------------------------------------------------------------ devices, factories, reprs
def test_device_and_factories():
    m = tgrad.device("meta")
    assert (str(m), repr(m), m.type, m.index) == ("meta", "device(type='meta')", "meta", None)
    assert m == "meta" and tgrad.device("meta", 1).index == 1
    for make in (lambda d: tgrad.empty(2, 3, device=d), lambda d: tgrad.zeros(2, 3, device=d),
                 lambda d: tgrad.ones(2, 3, device=d, dtype=tgrad.float64), lambda d: tgrad.randn(2, 3, device=d),
                 lambda d: tgrad.full((4,), 3, device=d), lambda d: tgrad.arange(5, device=d),
                 lambda d: tgrad.eye(3, device=d), lambda d: tgrad.tensor([1.0, 2.0], device=d),
                 lambda d: tgrad.empty_like(tgrad.empty(3, 2).t(), device=d),
                 lambda d: tgrad.zeros(2, 3).new_zeros(4, device=d)):
        c, x = make("cpu"), make("meta")
        assert x.is_meta and not c.is_meta and x.device.type == "meta" and x.get_device() == -1
        assert _meta_of(x) == _meta_of(c)
    x = tgrad.empty(2, 3, device="meta")
    for like in (tgrad.zeros_like, tgrad.ones_like, tgrad.randn_like, tgrad.empty_like):
        y = like(x)
        assert y.is_meta and _meta_of(y) == _meta_of(x)
    assert tgrad.zeros_like(x, device="cpu").tolist() == [[0.0] * 3] * 2
    assert tgrad.zeros(2, 3).to("meta").is_meta and x.nbytes == 24 and x.data_ptr() == 0


def test_default_device_context_manager():
    assert tgrad.get_default_device() == "cpu"
    with tgrad.device("meta") as d:
        assert d == "meta" and tgrad.get_default_device() == "meta"
        assert tgrad.zeros(2).is_meta and tgrad.tensor([1, 2]).is_meta
        with tgrad.device("cpu"):
            assert tgrad.zeros(2).device.type == "cpu"
        assert tgrad.randn(3).is_meta
        assert tgrad.zeros(2, device="cpu").device.type == "cpu"
        before = tgrad.memory_allocated(), tgrad.memory_allocated("cpu")   # (a real device's: meta has none)
        big = tgrad.empty(1 << 30)
        assert big.is_meta and (tgrad.memory_allocated(), tgrad.memory_allocated("cpu")) == before
    assert tgrad.get_default_device() == "cpu" and not tgrad.zeros(1).is_meta
    with pytest.raises(ValueError, match="Expected a cpu or cuda device, but got: meta"):
        tgrad.memory_allocated("meta")
    tgrad.set_default_device("meta")
    try:
        assert tgrad.ones(2).is_meta
    finally:
        tgrad.set_default_device(None)
    assert tgrad.ones(2).device.type == "cpu"


def test_reprs():
    """PyTorch 2.13's reprs of meta tensors."""
    assert repr(tgrad.empty(2, 3, device="meta")) == "tensor(..., device='meta', size=(2, 3))"
    assert str(tgrad.zeros((), device="meta")) == "tensor(..., device='meta', size=())"
    assert repr(tgrad.zeros(0, device="meta")) == "tensor(..., device='meta', size=(0,))"
    assert (repr(tgrad.zeros(2, 3, device="meta", dtype=tgrad.float64))
            == "tensor(..., device='meta', size=(2, 3), dtype=tgrad.float64)")
    assert repr(tgrad.arange(5, device="meta")) == "tensor(..., device='meta', size=(5,), dtype=tgrad.int64)"
    w = tgrad.zeros(2, 3, device="meta", requires_grad=True)
    assert repr(w) == "tensor(..., device='meta', size=(2, 3), requires_grad=True)"
    assert repr(w.sum()) == "tensor(..., device='meta', size=(), grad_fn=<SumBackward0>)"
    assert repr(nn.Parameter(tgrad.empty(2, device="meta"))) == (
        "Parameter containing:\ntensor(..., device='meta', size=(2,), requires_grad=True)")
    assert (str(tgrad.empty(2, 3, device="meta").untyped_storage())
            == "...\n[tgrad.storage.UntypedStorage(device=meta) of size 24]")


# ------------------------------------------------------------------ ops: metadata as on cpu, nothing run
_SKIP = {"sparse_coalesce_values", "sparse_coalesce_values_hybrid"}     # nnz after coalescing: data-dependent
_DATA_DEPENDENT = {"nonzero", "masked_select", "index_put", "repeat_interleave", "one_hot"}


def test_op_samples_match_cpu_metadata():
    """One sample of every OpInfo: the meta result's shapes, dtypes and strides are the cpu result's, and the meta
    run allocates nothing and launches nothing."""
    checked = 0
    for op in OP_DB:
        if op.name in _SKIP or op.name in _DATA_DEPENDENT:
            continue
        s, dtype = op.sample_inputs()[0], op.dtypes[0]
        ref = op.op(*[to_tensor(a, dtype, "cpu") if isinstance(a, np.ndarray) else a for a in s.args], **s.kwargs)
        allocs = tgrad.memory_stats()["allocation.all.allocated"]
        launcher.COUNTER.counts.clear()
        launcher.COUNTER.enabled = True
        try:
            with tgrad.device("meta"):      # (index tensors a sample builds itself land on meta too)
                out = op.op(*[to_tensor(a, dtype, "meta") if isinstance(a, np.ndarray) else a for a in s.args],
                            **s.kwargs)
        finally:
            launcher.COUNTER.enabled = False
        assert tgrad.memory_stats()["allocation.all.allocated"] == allocs, op.name     # nothing allocated
        assert not launcher.COUNTER.counts, op.name                                      # nothing launched
        a, b = _flat(ref), _flat(out)
        assert len(a) == len(b), op.name
        for x, y in zip(a, b):
            assert y.is_meta, op.name
            assert _meta_of(y) == _meta_of(x), (op.name, s)
        checked += 1
    assert checked > 300


def test_op_samples_backward_on_meta():
    """Forward and backward of every differentiable OpInfo on meta: a graph is recorded, grads are meta with
    the inputs' shapes and dtypes; no kernel is launched and nothing is allocated."""
    launcher.COUNTER.counts.clear()
    launcher.COUNTER.enabled = True
    stats0 = tgrad.memory_stats()
    n = 0
    try:
        for op in OP_DB:
            if not op.grad or op.name in _SKIP or op.name in _DATA_DEPENDENT:
                continue
            s, dtype = op.sample_inputs()[0], op.dtypes[0]
            with tgrad.device("meta"):
                args = [to_tensor(a, dtype, "meta", requires_grad=dtype.is_floating_point and
                                  (op.diff_args is None or i in op.diff_args))
                        if isinstance(a, np.ndarray) else a for i, a in enumerate(s.args)]
                outs = [o for o in _flat(op.op(*args, **s.kwargs)) if o.requires_grad]
                if not outs:
                    continue
                assert all(o.grad_fn is not None for o in outs), op.name
                sum(o.sum() for o in outs).backward()
            for a in args:
                if isinstance(a, tgrad.Tensor) and a.grad is not None:
                    assert a.grad.is_meta and a.grad.shape == a.shape and a.grad.dtype is a.dtype, op.name
                    n += 1
        counts = dict(launcher.COUNTER.counts)
    finally:
        launcher.COUNTER.enabled = False
    assert n > 250
    assert counts == {}
    stats1 = tgrad.memory_stats()
    for k in ("allocation.all.allocated", "allocated_bytes.all.allocated", "allocated_bytes.all.current"):
        assert stats1[k] == stats0[k], k


def test_memory_unchanged_and_no_launch():
    launcher.COUNTER.counts.clear()
    before = tgrad.memory_stats()["allocated_bytes.all.allocated"]
    launcher.COUNTER.enabled = True
    try:
        x = tgrad.randn(4096, 4096, device="meta", requires_grad=True)     # 64 MiB if it were real
        y = (x @ x.t()).softmax(-1).sum()
        y.backward()
        big = tgrad.empty(1 << 40, device="meta")       # 4 TiB
        z = big * 2
    finally:
        launcher.COUNTER.enabled = False
    assert dict(launcher.COUNTER.counts) == {}
    assert tgrad.memory_stats()["allocated_bytes.all.allocated"] == before
    assert x.grad.shape == (4096, 4096) and z.shape == (1 << 40,) and z.nbytes == 1 << 42
    assert type(y.grad_fn).__name__ == "SumBackward0"


# ------------------------------------------------------------------ errors (PyTorch 2.13's)
def test_reading_values_raises():
    x = tgrad.empty(2, 3, device="meta")
    with pytest.raises(RuntimeError, match="^Tensor.item\\(\\) cannot be called on meta tensors$"):
        x.sum().item()
    with pytest.raises(RuntimeError, match="a Tensor with 6 elements cannot be converted to Scalar"):
        x.item()
    for f in (x.tolist, x.cpu, lambda: x.to("cpu"), lambda: tgrad.zeros(2, 3).copy_(x)):
        with pytest.raises(NotImplementedError) as e:
            f()
        assert str(e.value) == NO_DATA and type(e.value) is NotImplementedError
    with pytest.raises(TypeError, match="can't convert meta device type tensor to numpy. Use Tensor.cpu"):
        x.numpy()
    c = tgrad.zeros(2, 3)
    assert x.copy_(c) is x and x.is_meta      # into meta: nothing to write
    assert c.tolist() == [[0.0] * 3] * 2


def test_mixing_devices_raises():
    x, c = tgrad.empty(2, 3, device="meta"), tgrad.zeros(2, 3)
    with pytest.raises(RuntimeError, match="^Tensor on device meta is not on the expected device cpu!$"):
        c + x
    with pytest.raises(RuntimeError, match="^Tensor on device cpu is not on the expected device meta!$"):
        x * c
    with pytest.raises(RuntimeError, match="^Tensor on device cpu is not on the expected device meta!$"):
        tgrad.cat([x, c])
    assert (x + tgrad.tensor(1.0)).is_meta        # a 0-dim cpu tensor joins any device, as in PyTorch


def test_data_dependent_ops_raise():
    x = tgrad.empty(2, 3, device="meta")
    for f in (lambda: tgrad.nonzero(x), lambda: x[x > 0], lambda: tgrad.argwhere(x)):
        with pytest.raises(NotImplementedError) as e:
            f()
        assert str(e.value).startswith(NONZERO)
    for f, aten in ((lambda: tgrad.masked_select(x, x > 0), "masked_select"), (lambda: tgrad.unique(x), "_unique2"),
                    (lambda: tgrad.unique_consecutive(x), "unique_consecutive"),
                    (lambda: tgrad.equal(x, x), "equal"),
                    (lambda: tgrad.bincount(tgrad.zeros(3, dtype=tgrad.int64, device="meta")), "bincount")):
        with pytest.raises(NotImplementedError, match=f"^aten::{aten}: attempted to run this operator with Meta "
                                                      "tensors, but there was no fake impl or Meta kernel"):
            f()
    with pytest.raises(RuntimeError, match="^Tensor.item\\(\\) cannot be called on meta tensors$"):
        tgrad.allclose(x, x)
    r = tgrad.ones(4, dtype=tgrad.int64, device="meta")
    with pytest.raises(RuntimeError, match="cannot repeat_interleave a meta tensor without output_size"):
        tgrad.zeros(4, device="meta").repeat_interleave(r)
    assert tgrad.zeros(4, device="meta").repeat_interleave(r, output_size=6).shape == (6,)
    # ops that read values only to check them or order ties (not for the shape) work
    v, i = tgrad.sort(x)
    assert v.is_meta and i.dtype is tgrad.int64 and v.shape == (2, 3)
    assert tgrad.linalg.inv(tgrad.empty(3, 3, device="meta")).shape == (3, 3)
    assert tgrad.multinomial(tgrad.ones(2, 5, device="meta"), 3).shape == (2, 3)
    emb = nn.Embedding(10, 4, device="meta")
    assert emb(tgrad.zeros(2, 7, dtype=tgrad.int64, device="meta")).shape == (2, 7, 4)


# ------------------------------------------------------------------ nn on meta
class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.bn = nn.BatchNorm1d(3)
        self.out = nn.Linear(3, 2)

    def forward(self, x):
        return self.out(self.bn(self.fc(x)).relu())


def test_module_on_meta_then_to_empty_and_reset():
    """Built on meta (no values drawn), then to_empty + reset_parameters: the cpu model built with the same seed."""
    tgrad.manual_seed(0)
    ref = _Net()
    tgrad.manual_seed(0)
    with tgrad.device("meta"):
        net = _Net()
    assert all(p.is_meta for p in net.parameters()) and all(b.is_meta for b in net.buffers())
    y = net(tgrad.empty(5, 4, device="meta"))
    assert y.is_meta and y.shape == (5, 2) and type(y.grad_fn).__name__ == "AddmmBackward0"
    y.sum().backward()
    assert net.fc.weight.grad.is_meta and net.fc.weight.grad.shape == (3, 4)
    net.zero_grad()
    assert net.to_empty(device="cpu") is net
    assert all(not p.is_meta for p in net.parameters()) and not net.bn.num_batches_tracked.is_meta
    for m in net.modules():
        if hasattr(m, "reset_parameters"):
            m.reset_parameters()
    for (k, a), (_, b) in zip(ref.state_dict().items(), net.state_dict().items()):
        assert a.tolist() == b.tolist(), k
    with pytest.raises(NotImplementedError, match="no data! Please use tgrad.nn.Module.to_empty\\(\\) instead of "
                                                  "tgrad.nn.Module.to\\(\\) when moving module from meta"):
        nn.Linear(2, 2, device="meta").to("cpu")


def test_load_state_dict_assign():
    src = nn.Linear(4, 3)
    with tgrad.device("meta"):
        dst = nn.Linear(4, 3)
    res = dst.load_state_dict(src.state_dict(), assign=True)
    assert not res.missing_keys and not res.unexpected_keys
    assert type(dst.weight) is nn.Parameter and dst.weight.requires_grad and not dst.weight.is_meta
    assert dst.weight.tolist() == src.weight.tolist()
    x = tgrad.randn(2, 4)
    assert dst(x).tolist() == src(x).tolist()
    with tgrad.device("meta"):
        dst2 = nn.Linear(4, 3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        dst2.load_state_dict(src.state_dict())
    assert dst2.weight.is_meta
    msgs = [str(m.message) for m in w]
    assert len(msgs) == 2 and all(m.startswith(f"for {k}: copying from a non-meta parameter in the checkpoint to a "
                                               "meta parameter in the current model, which is a no-op.")
                                  for m, k in zip(msgs, ("weight", "bias")))


def test_deepcopy_to_meta_functional_call():
    model = nn.Linear(3, 2)
    base = copy.deepcopy(model).to("meta")
    assert base.weight.is_meta and not model.weight.is_meta
    x = tgrad.randn(4, 3)
    out = tgrad.func.functional_call(base, dict(model.named_parameters()), (x,))
    assert not out.is_meta and out.tolist() == model(x).tolist()


def test_model_ensembling_recipe_prints_pytorchs_output():
    """PyTorch's model-ensembling recipe (base model on meta, vmap over functional_call), run with torch mapped
    to tgrad: the printed output is PyTorch 2.13's (tests/data/meta_ensemble_torch.txt)."""
    alias = ("import importlib, importlib.abc, importlib.util, runpy, sys\n"
             "class A(importlib.abc.MetaPathFinder, importlib.abc.Loader):\n"
             "    def find_spec(self, name, path=None, target=None):\n"
             "        if name == 'torch' or name.startswith('torch.'):\n"
             "            return importlib.util.spec_from_loader(name, self)\n"
             "    def create_module(self, spec):\n"
             "        m = importlib.import_module('tgrad' + spec.name[5:]); sys.modules[spec.name] = m; return m\n"
             "    def exec_module(self, m): pass\n"
             "sys.meta_path.insert(0, A())\n"
             "runpy.run_path(sys.argv[1], run_name='__main__')\n")
    env = dict(os.environ, TGRAD_DEVICE="cpu")
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(tgrad.__file__)))
    got = subprocess.run([sys.executable, "-c", alias, os.path.join(DATA, "meta_ensemble.py")], env=env,
                         capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr
    with open(os.path.join(DATA, "meta_ensemble_torch.txt")) as f:
        want = f.read()
    assert got.stdout.replace("tgrad.", "torch.") == want


def test_cuda_and_meta(request):
    """Under ``--device cuda``: cuda -> meta copies nothing, meta -> cuda raises, mixing raises PyTorch's error;
    copy_ across cuda and cpu works (copy_ is the one op that takes two devices)."""
    if request.config.getoption("--device") != "cuda":
        pytest.skip("needs --device cuda")
    g = tgrad.arange(6.0, device="cuda").reshape(2, 3)
    m = g.to("meta")
    assert m.is_meta and _meta_of(m) == _meta_of(g)
    with pytest.raises(NotImplementedError, match=NO_DATA):
        m.to("cuda")
    with pytest.raises(NotImplementedError, match=NO_DATA):
        g.copy_(m)
    with pytest.raises(RuntimeError, match="^Tensor on device cuda:0 is not on the expected device meta!$"):
        m + g
    c = tgrad.zeros(2, 3)
    assert c.copy_(g).tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert g.copy_(c * 2).cpu().tolist() == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]
    s = tgrad.ones(2, 3, device="cuda", requires_grad=True)
    d = tgrad.zeros(2, 3)
    d.copy_(s)
    d.sum().backward()
    assert s.grad.device.type == "cuda" and s.grad.cpu().tolist() == [[1.0] * 3] * 2
    m = tgrad.zeros(2, 3, device="meta").requires_grad_()
    d = tgrad.zeros(2, 3, device="meta")
    d.copy_(m)
    d.sum().backward()
    assert m.grad.is_meta


def test_save_load_pickle_keep_meta(tmp_path):
    """PyTorch saves a meta tensor's metadata (no data); it loads on meta whatever map_location says."""
    import pickle
    x = tgrad.empty(2, 3, device="meta").t()
    with tgrad.device("meta"):
        m = nn.Linear(3, 2)
    path = str(tmp_path / "m.pt")
    tgrad.save({"w": x, "c": tgrad.arange(3), "again": x, "sd": m.state_dict()}, path)
    for loc in (None, "cpu"):
        d = tgrad.load(path, map_location=loc)
        assert d["w"].is_meta and _meta_of(d["w"]) == _meta_of(x) and d["again"] is d["w"]
        assert d["c"].tolist() == [0, 1, 2] and d["sd"]["weight"].is_meta and d["sd"]["bias"].shape == (2,)
    y = pickle.loads(pickle.dumps(x))
    assert y.is_meta and _meta_of(y) == _meta_of(x)
    p = pickle.loads(pickle.dumps(m))
    assert type(p.weight) is nn.Parameter and p.weight.is_meta and p.weight.requires_grad
    tgrad.save(m, path)
    assert tgrad.load(path, weights_only=False).bias.is_meta
