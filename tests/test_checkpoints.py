"""Checkpoints that survive crashes and corrupt files (issue 16): validation per the safetensors spec
(every corrupt input -> CheckpointError naming the file), atomic save (kill / full disk leave the old file),
round trip with the safetensors library both ways, whole-model save with PyTorch's weights_only semantics."""
import base64
import json
import os
import pickle
import signal
import struct
import subprocess
import sys
import textwrap
from collections import OrderedDict

import numpy as np
import pytest

import tgrad
from tgrad import nn
from tgrad.serialization import CheckpointError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _file(header, data, meta=None):
    h = dict(header)
    if meta is not None:
        h["__metadata__"] = meta
    head = json.dumps(h).encode()
    return struct.pack("<Q", len(head)) + head + data


def _good():
    """A valid file: two tensors, structure {"a": t0, "b": t1}."""
    a, b = np.arange(6, dtype=np.float32).tobytes(), np.arange(2, dtype=np.int64).tobytes()
    header = {"0": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
              "1": {"dtype": "I64", "shape": [2], "data_offsets": [24, 40]}}
    structure = {"dict": [["a", {"tensor": "0", "device": "cpu", "requires_grad": False, "parameter": False}],
                          ["b", {"tensor": "1", "device": "cpu", "requires_grad": False, "parameter": False}]]}
    return header, a + b, {"format": "pt", "tgrad": json.dumps(structure)}


def _with(entry=None, meta=None, **changes):
    header, data, m = _good()
    header = json.loads(json.dumps(header))
    if entry is not None:
        header["0"] = entry
    for k, v in changes.items():
        header["0"][k] = v
    if meta is not None:
        m = dict(m, **meta)
    return _file(header, data, m)


def _structure(s):
    return _with(meta={"tgrad": s if isinstance(s, str) else json.dumps(s)})


GOOD = _file(*_good())
_h = json.dumps(dict(_good()[0], __metadata__=_good()[2])).encode()
CORRUPT = {
    "empty file": (b"", "truncated"),
    "5 bytes": (b"\x01\x02\x03\x04\x05", "truncated"),
    "header length 0": (struct.pack("<Q", 0) + b"{}", "out of bounds"),
    "header length 1": (struct.pack("<Q", 1) + b"{", "out of bounds"),
    "header length 2**63": (struct.pack("<Q", 2**63) + _h, "out of bounds"),
    "header length over 100 MB": (struct.pack("<Q", 100_000_001) + _h, "out of bounds"),
    "header longer than file": (struct.pack("<Q", len(_h) + 50) + _h, "truncated"),
    "cut inside header": (GOOD[:30], "truncated"),
    "cut inside data": (GOOD[:-5], "truncated"),
    "trailing bytes": (GOOD + b"xyz", "the data section has"),
    "header not UTF-8": (struct.pack("<Q", 4) + b"{\xff\xfe}", "UTF-8"),
    "header not JSON": (struct.pack("<Q", 8) + b"{garbage", "well-formed JSON"),
    "header JSON array": (struct.pack("<Q", 6) + b"[1, 2]", "JSON object"),
    "header JSON cut": (struct.pack("<Q", 14) + b'{"0": {"dtype"', "well-formed JSON"),
    "header nested 100k deep": (struct.pack("<Q", 500_002) + b"{" + b'{"a":' * 100_000 + b"}", "JSON"),
    "entry not an object": (_with(entry=[1, 2]), "exactly the keys"),
    "entry missing data_offsets": (_with(entry={"dtype": "F32", "shape": [2, 3]}), "exactly the keys"),
    "entry extra key": (_with(extra=1), "exactly the keys"),
    "unknown dtype": (_with(dtype="F99"), "dtype 'F99'"),
    "dtype not a string": (_with(dtype=5), "dtype 5"),
    "dtype tgrad lacks": (_with(dtype="F8_E4M3"), "dtype 'F8_E4M3'"),
    "negative shape": (_with(shape=[-1, 6]), "non-negative"),
    "shape not a list": (_with(shape="2,3"), "non-negative"),
    "float in shape": (_with(shape=[2.0, 3]), "non-negative"),
    "bool in shape": (_with(shape=[True, 6]), "non-negative"),
    "negative offset": (_with(data_offsets=[-24, 0]), "0 <= begin <= end"),
    "reversed offsets": (_with(data_offsets=[24, 0]), "0 <= begin <= end"),
    "one offset": (_with(data_offsets=[0]), "0 <= begin <= end"),
    "offsets not matching shape x dtype": (_with(shape=[2, 2]), "needs 16"),
    "overlapping offsets": (_file({"0": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                                   "1": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}}, bytes(24)),
                            "overlap"),
    "gap between tensors": (_file({"0": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                   "1": {"dtype": "F32", "shape": [2], "data_offsets": [16, 24]}}, bytes(24)),
                            "gap"),
    "offsets past the end": (_file({"0": {"dtype": "F32", "shape": [8], "data_offsets": [0, 32]}}, bytes(16)),
                             "truncated"),
    "metadata not a string map": (_file({}, b"", {"tgrad": 5}), "'__metadata__'"),
    "structure not JSON": (_structure("{oops"), "'__metadata__.tgrad'"),
    "structure nested 100k deep": (_structure('{"list":[' * 100_000 + "]}" * 100_000), "nested too deeply"),
    "structure names a missing tensor": (_structure({"tensor": "7"}), "tensor '7'"),
    "structure unknown node": (_structure({"set": [1]}), "unknown node kind"),
    "structure bad pair": (_structure({"dict": [[1, 2, 3]]}), "[key, value] pair"),
    "structure unhashable key": (_structure({"dict": [[{"list": []}, 1]]}), "unhashable"),
    "pickle not base64": (_file(_good()[0], _good()[1], {"tgrad_pickle": "@@@"}), "base64"),
    "pickle garbage": (_file(_good()[0], _good()[1], {"tgrad_pickle": base64.b64encode(b"\x80\x04junk").decode()}),
                       "not a valid pickle"),
}


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_corrupt_file_raises_checkpoint_error(case, tmp_path):
    blob, why = CORRUPT[case]
    path = tmp_path / "bad.safetensors"
    path.write_bytes(blob)
    with pytest.raises(CheckpointError) as e:
        tgrad.load(str(path))
    assert isinstance(e.value, RuntimeError)
    assert str(path) in str(e.value) and "is not a valid checkpoint" in str(e.value) and why in str(e.value)


def test_good_file_loads_and_counts():
    r = tgrad.load(__import__("io").BytesIO(GOOD))
    assert r["a"].tolist() == [[0, 1, 2], [3, 4, 5]] and r["b"].tolist() == [0, 1]
    assert len(CORRUPT) >= 36


def test_safetensors_library_reads_tgrad_files(tmp_path):
    from safetensors import safe_open
    from safetensors.numpy import load_file
    path = str(tmp_path / "t.safetensors")
    vals = {dt: np.arange(6).reshape(2, 3) % 2 for dt in (tgrad.float32, tgrad.float64, tgrad.float16, tgrad.int64,
                                                           tgrad.int32, tgrad.int16, tgrad.int8, tgrad.uint8,
                                                           tgrad.bool)}
    tgrad.save([tgrad.tensor(v, dtype=dt) for dt, v in vals.items()] + [tgrad.zeros(0, 4)], path)
    arrays = load_file(path)
    for i, (dt, v) in enumerate(vals.items()):
        assert arrays[str(i)].dtype == dt.np and np.array_equal(arrays[str(i)], v.astype(dt.np))
    assert arrays[str(len(vals))].shape == (0, 4)
    with safe_open(path, framework="numpy") as f:
        assert f.metadata()["format"] == "pt" and "tgrad" in f.metadata()


def test_tgrad_reads_safetensors_library_files(tmp_path):
    from safetensors.numpy import save_file
    path = str(tmp_path / "lib.safetensors")
    arrays = {"w": np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32),
              "b": np.arange(3, dtype=np.float64), "idx": np.array([[1, 2]], dtype=np.int64),
              "mask": np.array([True, False]), "e": np.zeros((0, 2), np.float16), "s": np.array(7, np.int32)}
    save_file(arrays, path, metadata={"source": "safetensors"})
    r = tgrad.load(path)
    assert sorted(r) == sorted(arrays)
    for k, v in arrays.items():
        assert r[k].dtype.np == v.dtype and r[k].shape == v.shape and np.array_equal(r[k].cpu().numpy(), v)
    model = nn.Linear(4, 3)
    save_file({"weight": arrays["w"], "bias": arrays["b"].astype(np.float32)}, path)
    model.load_state_dict(tgrad.load(path))
    assert np.array_equal(model.weight.detach().cpu().numpy(), arrays["w"])


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.scale = 2.5

    def forward(self, x):
        return self.fc(x) * self.scale


def test_whole_model_weights_only(tmp_path):
    """torch.save(model, f): loads with weights_only=False, or with its classes allow-listed; refused by default."""
    tgrad.manual_seed(0)
    net, x = Net(), tgrad.randn(4, 3)
    path = str(tmp_path / "model.pt")
    tgrad.save(net, path)
    with pytest.raises(pickle.UnpicklingError) as e:
        tgrad.load(path)
    msg = str(e.value)
    assert msg.startswith("Weights only load failed. This file can still be loaded")
    assert (f"WeightsUnpickler error: Unsupported global: GLOBAL {Net.__module__}.Net was not an allowed global by "
            f"default. Please use `tgrad.serialization.add_safe_globals([{Net.__module__}.Net])` or the "
            f"`tgrad.serialization.safe_globals([{Net.__module__}.Net])` context manager") in msg
    with tgrad.serialization.safe_globals([Net]):
        with pytest.raises(pickle.UnpicklingError, match="GLOBAL tgrad.nn.modules.linear.Linear was not an allowed"):
            tgrad.load(path, weights_only=True)
    with tgrad.serialization.safe_globals([Net, nn.Linear]):
        m = tgrad.load(path)
    assert type(m) is Net and m(x).tolist() == net(x).tolist()
    assert type(m.fc.weight) is nn.Parameter and m.fc.weight.requires_grad
    with pytest.raises(pickle.UnpicklingError):
        tgrad.load(path)                        # the context manager's list is gone
    m2 = tgrad.load(path, weights_only=False)
    assert m2(x).tolist() == net(x).tolist() and m2.scale == 2.5
    tgrad.serialization.add_safe_globals([Net, nn.Linear])
    try:
        assert Net in tgrad.serialization.get_safe_globals()
        assert tgrad.load(path)(x).tolist() == net(x).tolist()
    finally:
        tgrad.serialization.clear_safe_globals()
    # containers, dtypes, devices, sizes need no allow-list (PyTorch's defaults)
    obj = {"s": {1, 2}, "c": 1 + 2j, "dt": tgrad.float16, "dev": tgrad.device("cpu"), "size": tgrad.Size([2]),
           "od": OrderedDict(a=tgrad.ones(1))}
    tgrad.save(obj, path)
    r = tgrad.load(path)
    assert r["s"] == {1, 2} and r["c"] == 1 + 2j and r["dt"] is tgrad.float16 and r["dev"] == tgrad.device("cpu")
    assert r["size"] == (2,) and type(r["size"]) is tgrad.Size and r["od"]["a"].tolist() == [1.0]


def test_pickle_module_and_protocol(tmp_path):
    path = str(tmp_path / "t.pt")
    tgrad.save({"x": _Plain(), "t": tgrad.ones(1)}, path, pickle_protocol=4)
    assert isinstance(tgrad.load(path, pickle_module=pickle)["x"], _Plain)     # PyTorch: a full unpickle
    with pytest.raises(RuntimeError, match="^Can not safely load weights when explicit pickle_module is specified$"):
        tgrad.load(path, pickle_module=pickle, weights_only=True)


class _Plain:
    pass


def test_weights_only_never_runs_code(tmp_path):
    """A malicious pickle (os.system via __reduce__) is refused by default."""
    class Evil:
        def __reduce__(self):
            return (os.system, ("touch " + str(tmp_path / "pwned"),))
    path = str(tmp_path / "evil.pt")
    tgrad.save({"x": Evil()}, path)
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL posix.system was not an allowed global"):
        tgrad.load(path)
    assert not (tmp_path / "pwned").exists()


def _run(code, *args, timeout=120):
    env = dict(os.environ, PYTHONPATH=ROOT, OPENBLAS_NUM_THREADS="1")
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_kill_during_save_leaves_old_checkpoint(tmp_path):
    """SIGKILL after the new bytes are written but before they are renamed into place: the old file loads."""
    path = str(tmp_path / "ckpt.safetensors")
    tgrad.save({"step": 1, "w": tgrad.full((1000,), 1.0)}, path)
    p = _run("""
        import os, sys, time
        import tgrad
        def stall(fd):
            print("fsync", flush=True)
            time.sleep(60)
        os.fsync = stall
        tgrad.save({"step": 2, "w": tgrad.full((1000,), 2.0)}, sys.argv[1])
    """, path)
    try:
        assert p.stdout.readline().strip() == "fsync", p.stderr.read()
        leftovers = [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
        assert len(leftovers) == 1 and leftovers[0].startswith(".ckpt.safetensors.")
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
        p.stdout.close()
        p.stderr.close()
    r = tgrad.load(path)
    assert r["step"] == 1 and r["w"].tolist() == [1.0] * 1000


def test_kill_at_random_moments_never_corrupts(tmp_path):
    """A child rewrites the checkpoint in a loop; killed at arbitrary moments, the file always loads whole."""
    path = str(tmp_path / "ckpt.safetensors")
    tgrad.save({"step": 0, "w": tgrad.zeros(20000)}, path)
    for delay in (0.05, 0.2, 0.35):
        p = _run("""
            import sys
            import tgrad
            w = tgrad.zeros(20000)
            print("go", flush=True)
            for step in range(1, 10**6):
                tgrad.save({"step": step, "w": w + step}, sys.argv[1])
        """, path)
        try:
            assert p.stdout.readline().strip() == "go"
            import time
            time.sleep(delay)
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
            p.stdout.close()
            p.stderr.close()
        r = tgrad.load(path)
        assert r["w"].tolist() == [float(r["step"])] * 20000


def test_full_disk_leaves_old_checkpoint(tmp_path):
    """A write that fails (file size limit: EFBIG, as ENOSPC would) raises, keeps the old file, leaves no temp."""
    path = str(tmp_path / "ckpt.safetensors")
    tgrad.save({"w": tgrad.ones(4)}, path)
    p = _run("""
        import os, resource, signal, sys
        import tgrad
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (65536, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
        try:
            tgrad.save({"w": tgrad.zeros(100000)}, sys.argv[1])
        except OSError as e:
            print("OSError", e.errno)
    """, path)
    out, err = p.communicate(timeout=120)
    assert out.split()[0] == "OSError", err
    assert tgrad.load(path)["w"].tolist() == [1.0] * 4
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]


def test_failed_pickle_leaves_old_file(tmp_path):
    path = str(tmp_path / "ckpt.pt")
    tgrad.save({"w": tgrad.ones(2)}, path)
    with pytest.raises((pickle.PicklingError, AttributeError)):
        tgrad.save({"f": lambda: 0}, path)
    assert tgrad.load(path)["w"].tolist() == [1.0, 1.0] and os.listdir(tmp_path) == ["ckpt.pt"]


def test_saved_file_keeps_umask_permissions(tmp_path):
    path = tmp_path / "ckpt.pt"
    old = os.umask(0o022)
    try:
        tgrad.save({"w": tgrad.ones(1)}, str(path))
    finally:
        os.umask(old)
    assert (path.stat().st_mode & 0o777) == 0o644
