"""Checkpoints: tgrad.save / tgrad.load (safetensors + JSON structure, no pickle) and exact training resume."""
import io
import json
import math
import pickle
import struct
from collections import Counter, OrderedDict

import numpy as np
import pytest

import tgrad
from tgrad import nn, optim


def _roundtrip(obj, **kw):
    buf = io.BytesIO()
    tgrad.save(obj, buf)
    buf.seek(0)
    return tgrad.load(buf, **kw)


def test_nested_structure_round_trip():
    t = tgrad.arange(6, dtype=tgrad.float32).reshape(2, 3)
    obj = {"a": t, "alias": t, 3: OrderedDict(x=[1, 2.5, None, True, "s"], y=(1, (2, 3))),
           "floats": [math.inf, -math.inf, 0.1], "c": Counter([5, 5, 7]), "empty": {}, "none": None}
    r = _roundtrip(obj)
    assert list(r) == ["a", "alias", 3, "floats", "c", "empty", "none"]
    assert r["a"] is r["alias"] and r["a"].tolist() == t.tolist() and r["a"].dtype is tgrad.float32
    assert isinstance(r[3], OrderedDict) and r[3]["x"] == [1, 2.5, None, True, "s"] and r[3]["y"] == (1, (2, 3))
    assert r["floats"] == [math.inf, -math.inf, 0.1] and type(r["c"]) is Counter and r["c"] == Counter({5: 2, 7: 1})
    assert r["empty"] == {} and r["none"] is None
    nan = _roundtrip([math.nan])[0]
    assert math.isnan(nan)


@pytest.mark.parametrize("dtype", [tgrad.float32, tgrad.float64, tgrad.float16, tgrad.bfloat16, tgrad.int64,
                                   tgrad.int32, tgrad.int16, tgrad.int8, tgrad.uint8, tgrad.bool])
def test_every_dtype(dtype):
    vals = np.array([[0, 1, 2], [3, 4, 5]]) if dtype is not tgrad.bool else np.array([[True, False, True]])
    t = tgrad.tensor(vals, dtype=dtype)
    r = _roundtrip({"t": t, "scalar": tgrad.tensor(1, dtype=dtype), "empty": tgrad.zeros(0, 3, dtype=dtype)})
    assert r["t"].dtype is dtype and r["t"].tolist() == t.tolist()
    assert r["scalar"].shape == () and r["scalar"].item() == 1
    assert r["empty"].shape == (0, 3)


def test_flags_parameters_and_views():
    p = nn.Parameter(tgrad.ones(2))
    frozen = nn.Parameter(tgrad.ones(2), requires_grad=False)
    leaf = tgrad.ones(3, requires_grad=True)
    view = tgrad.arange(12, dtype=tgrad.float32).reshape(3, 4).t()[1:]
    r = _roundtrip([p, frozen, leaf, view, tgrad.zeros(2)])
    assert type(r[0]) is nn.Parameter and r[0].requires_grad
    assert type(r[1]) is nn.Parameter and not r[1].requires_grad
    assert type(r[2]) is tgrad.Tensor and r[2].requires_grad and not r[4].requires_grad
    assert r[3].tolist() == view.tolist() and r[3].is_contiguous()


def test_file_is_safetensors(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    tgrad.save({"w": tgrad.ones(2, 3), "n": tgrad.arange(4), "meta": {"epoch": 3}}, str(path))
    blob = path.read_bytes()
    (n,) = struct.unpack("<Q", blob[:8])
    assert n % 8 == 0
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__")
    assert sorted(header) == ["0", "1"]
    assert header["0"] == {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}
    assert header["1"] == {"dtype": "I64", "shape": [4], "data_offsets": [24, 56]}
    assert len(blob) == 8 + n + 56
    assert json.loads(meta["tgrad"])["dict"][2] == ["meta", {"dict": [["epoch", 3]]}]
    from safetensors.numpy import load_file
    arrays = load_file(str(path))
    assert arrays["0"].tolist() == [[1.0] * 3] * 2 and arrays["1"].tolist() == [0, 1, 2, 3]
    assert tgrad.load(path)["meta"] == {"epoch": 3}


def test_map_location_and_cuda_checkpoint_without_gpu(tmp_path):
    t = tgrad.ones(2, device="cpu")
    assert _roundtrip(t, map_location="cpu").device.type == "cpu"
    assert _roundtrip(t, map_location={"cpu": "cpu"}).device.type == "cpu"
    assert _roundtrip(t, map_location=tgrad.device("cpu")).device.type == "cpu"
    path = tmp_path / "gpu.safetensors"
    tgrad.save(t, str(path))
    blob = path.read_bytes()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    header["__metadata__"]["tgrad"] = header["__metadata__"]["tgrad"].replace('"cpu"', '"cuda:0"')
    head = json.dumps(header).encode()
    head += b" " * (-len(head) % 8)
    path.write_bytes(struct.pack("<Q", len(head)) + head + blob[8 + n:])     # as saved from a GPU run
    if not tgrad.cuda.is_available():
        with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device but "
                                               "tgrad.cuda.is_available\\(\\) is False"):
            tgrad.load(str(path))
    assert tgrad.load(str(path), map_location="cpu").tolist() == [1.0, 1.0]


def test_arbitrary_objects_load_only_when_allowed():
    """As torch.save/torch.load 2.6+: any object is pickled; weights_only=True (the default) refuses its globals."""
    buf = io.BytesIO()
    tgrad.save({"x": _Thing(3), "t": tgrad.ones(2)}, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL \S*_Thing was not an allowed global"):
        tgrad.load(buf)
    buf.seek(0)
    r = tgrad.load(buf, weights_only=False)
    assert type(r["x"]) is _Thing and r["x"].v == 3 and r["t"].tolist() == [1.0, 1.0]
    with pytest.raises((pickle.PicklingError, AttributeError)):
        tgrad.save([lambda: 0], io.BytesIO())


class _Thing:
    def __init__(self, v):
        self.v = v


def test_pickle_and_copy_of_tensors_use_rebuild():
    t = tgrad.tensor([1.5, 2.5], requires_grad=True)
    u = pickle.loads(pickle.dumps(t))
    assert u.tolist() == [1.5, 2.5] and u.requires_grad and u.data_ptr() != t.data_ptr()
    p = pickle.loads(pickle.dumps(nn.Parameter(tgrad.ones(2, dtype=tgrad.bfloat16))))
    assert type(p) is nn.Parameter and p.dtype is tgrad.bfloat16 and p.requires_grad


def _make():
    tgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    return model, opt, sched


def _steps(model, opt, sched, x, y, n):
    losses = []
    for _ in range(n):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    return losses


def test_resume_from_checkpoint_reproduces_losses_exactly(tmp_path):
    tgrad.manual_seed(1)
    x, y = tgrad.randn(16, 4), tgrad.randint(0, 3, (16,))
    model, opt, sched = _make()
    full = _steps(model, opt, sched, x, y, 7)
    model, opt, sched = _make()
    first = _steps(model, opt, sched, x, y, 3)
    path = tmp_path / "ckpt.safetensors"
    tgrad.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                "epoch": 3}, str(path))
    del model, opt, sched
    tgrad.manual_seed(123)                     # fresh objects start from different weights
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    ckpt = tgrad.load(str(path))
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["optimizer"])
    sched.load_state_dict(ckpt["scheduler"])
    assert ckpt["epoch"] == 3 and opt.param_groups[0]["lr"] == 0.05
    assert first + _steps(model, opt, sched, x, y, 4) == full
