"""tgrad.utils.tensorboard.SummaryWriter writes the records PyTorch's writes: the same bytes for every kind of
summary (tests/data/tensorboard_prog.py, its PyTorch 2.13 output in tests/data/tensorboard_torch.txt), a graph
TensorBoard can read, and PyTorch's errors."""
import importlib
import os
import sys

import numpy as np
import pytest

import tgrad

pytest.importorskip("tensorboard")
pytest.importorskip("PIL")
DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
sys.path.insert(0, DATA)
import tensorboard_prog  # noqa: E402

from tgrad.utils.tensorboard import SummaryWriter  # noqa: E402

CPU_ONLY = True     # the writer reads tensors back to the host: nothing device-specific


class _AsTorch:
    """``torch`` for tensorboard_prog.write: tgrad, with torch.utils.tensorboard resolving to tgrad's."""
    def __enter__(self):
        self.saved = {k: sys.modules.get(k) for k in ("torch", "torch.utils", "torch.utils.tensorboard")}
        sys.modules.update({"torch": tgrad, "torch.utils": tgrad.utils,
                            "torch.utils.tensorboard": importlib.import_module("tgrad.utils.tensorboard")})
        return tgrad

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


def _records(lines):
    """{path: [records]}; the hparams session-start record compared by content (a protobuf map's field order is
    not fixed)."""
    from tensorboard.compat.proto.event_pb2 import Event
    out = {}
    for line in lines:
        path, data = line.split(" ")
        if path == "hp":
            e = Event.FromString(bytes.fromhex(data))
            data = str(sorted(str(e).splitlines()))
        out.setdefault(path, []).append(data)
    return out


def test_every_summary_is_pytorchs_bytes(tmp_path):
    with _AsTorch() as torch:
        tensorboard_prog.write(torch, str(tmp_path))
    ours = _records(tensorboard_prog.dump(str(tmp_path)))
    with open(os.path.join(DATA, "tensorboard_torch.txt")) as f:
        theirs = _records(f.read().splitlines())
    assert sorted(ours) == sorted(theirs)
    for path in theirs:
        assert len(ours[path]) == len(theirs[path]), path
        for i, (a, b) in enumerate(zip(ours[path], theirs[path])):
            assert a == b, f"{path} record {i}"


def test_scalars_and_histogram_read_back(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    x = np.random.default_rng(1).normal(size=500).astype(np.float32)
    with SummaryWriter(str(tmp_path)) as w:
        for step in range(5):
            w.add_scalar("loss", tgrad.tensor(0.25 * step), step)
        w.add_histogram("w", tgrad.tensor(x), 7, bins=8)
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [(s, 0.25 * s) for s in range(5)]
    h = acc.Histograms("w")[0]
    counts, limits = np.histogram(x.astype(float), bins=8)
    assert h.step == 7 and h.histogram_value.num == 500
    assert h.histogram_value.bucket == [0.0] + counts.tolist()       # one empty bucket kept below
    np.testing.assert_allclose(h.histogram_value.bucket_limit, limits.tolist())
    assert h.histogram_value.sum_squares == pytest.approx(float(x.astype(float) @ x.astype(float)))


def test_graph_of_a_module(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    tgrad.manual_seed(0)
    model = tgrad.nn.Sequential(tgrad.nn.Linear(4, 3), tgrad.nn.ReLU(), tgrad.nn.Linear(3, 2))
    with SummaryWriter(str(tmp_path)) as w:
        w.add_graph(model, tgrad.randn(5, 4))
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    nodes = {n.name: n for n in acc.Graph().node}
    assert "input/input.1" in nodes and "Sequential/0.weight" in nodes and "Sequential/2.bias" in nodes
    relu = [n for n in nodes if n.startswith("Sequential/ReLU[1]/")]
    last = [n for n in nodes if n.startswith("Sequential/Linear[2]/")]
    assert len(relu) == 1 and len(last) == 1
    assert relu[0] in nodes[last[0]].input and "Sequential/2.weight" in str(nodes[last[0]].input)
    out = [n for n in nodes.values() if n.name.startswith("output/")]
    assert len(out) == 1 and list(out[0].input) == last
    assert list(out[0].attr["_output_shapes"].list.shape[0].dim) and \
        [d.size for d in out[0].attr["_output_shapes"].list.shape[0].dim] == [5, 2]


def test_default_log_dir_close_twice_and_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_lr0.1")
    assert w.get_logdir().startswith("runs" + os.sep) and w.get_logdir().endswith("_lr0.1")
    w.close()
    w.close()
    with SummaryWriter("r") as w:
        with pytest.raises(AssertionError, match="Tensor should contain one element"):
            w.add_scalar("x", tgrad.ones(2))
        with pytest.raises(TypeError, match="hparam_dict and metric_dict should be dictionary."):
            w.add_hparams([("lr", 1)], {})
        with pytest.raises(ValueError, match="len\\(bucket_limits\\) != len\\(bucket_counts\\)"):
            w.add_histogram_raw("r", 0, 1, 1, 1, 1, [1, 2], [1])
        with pytest.raises(ValueError, match="The input has no element."):
            w.add_histogram("e", tgrad.zeros(0))
        with pytest.raises(AssertionError, match="Expected 3 tags, got 2."):
            w.add_custom_scalars_marginchart(["a", "b"])


def test_missing_tensorboard_is_pytorchs_import_error(monkeypatch):
    for k in [k for k in sys.modules if k.startswith("tgrad.utils.tensorboard")]:
        monkeypatch.delitem(sys.modules, k)
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    with pytest.raises(ImportError, match="TensorBoard logging requires TensorBoard version 1.15 or above"):
        importlib.import_module("tgrad.utils.tensorboard")
