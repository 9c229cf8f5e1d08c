"""Saving sparse tensors: tgrad.save / load (state dicts and pickled objects) of COO and CSR tensors, and a
checkpoint PyTorch 2.13 wrote (tests/data/sparse_torch.pt, made by tests/data/make_sparse_torch_ckpt.py)."""
import copy
import io
import os
import pickle
import sys

import pytest

import tgrad

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
sys.path.insert(0, DATA)
from make_sparse_torch_ckpt import contents  # noqa: E402


def _same(a, b):
    assert type(a) is type(b) and a.layout is b.layout and a.shape == b.shape and a.dtype is b.dtype
    assert a.device == b.device
    if a.layout is tgrad.sparse_coo:
        assert a.is_coalesced() == b.is_coalesced()
        assert a._indices().tolist() == b._indices().tolist() and a._values().tolist() == b._values().tolist()
    elif a.layout is tgrad.sparse_csc:
        assert a.ccol_indices().tolist() == b.ccol_indices().tolist()
        assert a.row_indices().tolist() == b.row_indices().tolist() and a.values().tolist() == b.values().tolist()
    else:
        assert a.crow_indices().tolist() == b.crow_indices().tolist()
        assert a.col_indices().tolist() == b.col_indices().tolist() and a.values().tolist() == b.values().tolist()


def _state():
    x = tgrad.tensor([[0., 1.5, 0.], [0., 0., 0.], [-2., 0., 3.]])
    s = tgrad.sparse_coo_tensor([[0, 2, 2], [1, 0, 0]], [1., 2., 3.], (3, 3))
    return {"coo": s, "coalesced": s.coalesce(), "csr": x.to_sparse_csr(), "csc": x.to_sparse_csc(), "dense": x,
            "hybrid": tgrad.sparse_coo_tensor([[1, 0]], [[1., 2.], [3., 4.]], (3, 2))}


def _roundtrip(obj, **kw):
    buf = io.BytesIO()
    tgrad.save(obj, buf)
    buf.seek(0)
    return tgrad.load(buf, **kw)


def test_state_dict_round_trip():
    sd = _state()
    got = _roundtrip(sd)
    for k in ("coo", "coalesced", "csr", "csc", "hybrid"):
        _same(got[k], sd[k])
    assert got["dense"].tolist() == sd["dense"].tolist()


class _Holder:
    def __init__(self, t):
        self.t = t


def test_pickled_objects_and_copies():
    # a whole object is pickled: its sparse tensors load with weights_only=True (the rebuild is allow-listed)
    sd = _state()
    got = _roundtrip([sd["coo"], sd["csr"], {1, 2}])
    _same(got[0], sd["coo"]) or _same(got[1], sd["csr"])
    assert got[2] == {1, 2}
    h = _roundtrip(_Holder(sd["csr"]), weights_only=False)
    _same(h.t, sd["csr"])
    for t in (sd["coalesced"], sd["csr"]):
        for u in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
            _same(u, t)
            assert u.values().data_ptr() != t.values().data_ptr()


def test_map_location_moves_sparse_parts(device):
    got = _roundtrip(_state(), map_location="cpu")
    assert got["csr"].device.type == "cpu" and got["csr"].col_indices().device.type == "cpu"
    assert got["coo"]._values().device.type == "cpu"


def test_loads_the_checkpoint_pytorch_wrote():
    sd = tgrad.load(os.path.join(DATA, "sparse_torch.pt"))
    assert list(sd) == ["coo", "hybrid", "csr", "coalesced", "dense"]
    for name, (kind, data, size) in contents().items():
        t = sd[name]
        if kind == "coo":
            want = tgrad.sparse_coo_tensor(data[0], data[1], size)
        else:
            want = tgrad.sparse_csr_tensor(data[0], data[1], tgrad.tensor(data[2], dtype=tgrad.float64), size)
        _same(t.to(want.device), want)
    _same(sd["coalesced"].to(sd["coo"].device), sd["coo"].coalesce())
    assert sd["dense"].dtype is tgrad.int32 and sd["dense"].tolist() == [1, 3]


def test_tgrad_pickles_the_arguments_pytorch_pickles():
    """tgrad writes a sparse tensor as PyTorch does: ``_rebuild_sparse_tensor(layout, data)`` with the same data
    (COO: indices, values, size, is_coalesced; CSR: crow_indices, col_indices, values, size).  The calls PyTorch's
    file makes are recorded and compared with what tgrad's pickle of the loaded tensors calls."""
    from tgrad import _sparse

    def lists(layout, data):
        return layout.name, [d.tolist() if isinstance(d, tgrad.Tensor) else d for d in data]

    calls = []
    real = _sparse._rebuild_sparse_tensor
    try:
        _sparse._rebuild_sparse_tensor = lambda layout, data: (calls.append(lists(layout, data)), real(layout, data))[1]
        sd = tgrad.load(os.path.join(DATA, "sparse_torch.pt"))
    finally:
        _sparse._rebuild_sparse_tensor = real
    assert [c[0] for c in calls] == ["sparse_coo", "sparse_coo", "sparse_csr", "sparse_coo"]
    mine = []
    for name in ("coo", "hybrid", "csr", "coalesced"):
        fn, args = sd[name].__reduce_ex__(2)            # what pickle (and tgrad.save) writes
        assert fn is real
        mine.append(lists(*args))
    assert mine == calls


def test_bad_sparse_node_is_a_checkpoint_error():
    buf = io.BytesIO()
    tgrad.save({"s": _state()["coo"]}, buf)
    blob = buf.getvalue().replace(b'sparse_coo', b'sparse_zzz')
    with pytest.raises(tgrad.serialization.CheckpointError, match="bad sparse tensor node"):
        tgrad.load(io.BytesIO(blob))


def test_corrupt_pytorch_checkpoint_is_a_checkpoint_error():
    with open(os.path.join(DATA, "sparse_torch.pt"), "rb") as f:
        blob = f.read()
    with pytest.raises(tgrad.serialization.CheckpointError, match="not a valid checkpoint"):
        tgrad.load(io.BytesIO(blob[:len(blob) // 2]))
