"""Collectives of picklable Python objects (``all_gather_object``, ``broadcast_object_list``,
``gather_object``, ``scatter_object_list``), as PyTorch does them: each object pickled into a uint8
tensor, the sizes exchanged first (int64), then the bytes padded to the largest size."""
import io
import pickle

import numpy as np

from .. import dtypes as D
from .._creation import tensor, zeros
from . import distributed_c10d as C


def _device(group, device=None):
    if device is not None:
        return device
    return "cuda" if C.get_backend(group) == "nccl" else "cpu"


def _to_tensor(obj, device):
    f = io.BytesIO()
    pickle.Pickler(f).dump(obj)
    data = np.frombuffer(f.getvalue(), dtype=np.uint8).copy()
    return tensor(data, dtype=D.uint8, device=device), tensor([data.size], dtype=D.int64, device=device)


def _to_object(t, size):
    return pickle.loads(t[:size].cpu().numpy().tobytes())


def _padded(obj, group, device):
    """(obj's bytes padded to the group's largest, every rank's byte count): the sizes all-gathered first."""
    t, n = _to_tensor(obj, device)
    sizes = [zeros(1, dtype=D.int64, device=device) for _ in range(C.get_world_size(group))]
    C.all_gather(sizes, n, group=group)
    sizes = [int(s.item()) for s in sizes]
    padded = zeros(max(sizes), dtype=D.uint8, device=device)
    padded[:t.numel()] = t
    return padded, sizes


def all_gather_object(object_list, obj, group=None):
    """``object_list[r]`` = ``obj`` of the group's rank r (``object_list`` holds world_size entries)."""
    dev = _device(group)
    padded, sizes = _padded(obj, group, dev)
    out = [zeros(padded.numel(), dtype=D.uint8, device=dev) for _ in sizes]
    C.all_gather(out, padded, group=group)
    for i, (o, s) in enumerate(zip(out, sizes)):
        object_list[i] = _to_object(o, s)


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """``object_gather_list[r]`` on rank ``dst`` = ``obj`` of rank r (the list only given on ``dst``)."""
    dev = _device(group)
    padded, sizes = _padded(obj, group, dev)
    pg = C._group(group)
    root = group_dst if group_dst is not None else pg._group_rank(0 if dst is None else dst, "dst")
    out = [zeros(padded.numel(), dtype=D.uint8, device=dev) for _ in sizes] if pg.rank() == root else None
    C.gather(padded, out, group=group, group_dst=root)
    if out is not None:
        for i, (o, s) in enumerate(zip(out, sizes)):
            object_gather_list[i] = _to_object(o, s)


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """The objects of ``object_list`` on rank ``src`` copied into ``object_list`` on every rank (same length)."""
    dev = _device(group, device)
    pg = C._group(group)
    root = group_src if group_src is not None else pg._group_rank(0 if src is None else src, "src")
    if pg.rank() == root:
        parts = [_to_tensor(o, dev) for o in object_list]
        sizes = tensor([int(n.item()) for _, n in parts], dtype=D.int64, device=dev)
    else:
        sizes = zeros(len(object_list), dtype=D.int64, device=dev)
    C.broadcast(sizes, group=group, group_src=root)
    total = int(sizes.sum().item())
    if pg.rank() == root:
        flat = tensor(np.concatenate([t.cpu().numpy() for t, _ in parts]) if parts else np.zeros(0, np.uint8),
                      dtype=D.uint8, device=dev)
    else:
        flat = zeros(total, dtype=D.uint8, device=dev)
    C.broadcast(flat, group=group, group_src=root)
    off = 0
    for i, s in enumerate(sizes.tolist()):
        object_list[i] = _to_object(flat[off:off + s], s)
        off += s


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None, group=None,
                        group_src=None):
    """``scatter_object_output_list[0]`` on rank r = ``scatter_object_input_list[r]`` of rank ``src``."""
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at least 1.")
    dev = _device(group)
    pg = C._group(group)
    root = group_src if group_src is not None else pg._group_rank(0 if src is None else src, "src")
    box = [None]
    if pg.rank() == root:
        parts = [_to_tensor(o, dev) for o in scatter_object_input_list]
        m = max(int(n.item()) for _, n in parts)
        box = [m]
    broadcast_object_list(box, group=group, group_src=root)
    m = box[0]
    padded, size_list = None, None
    if pg.rank() == root:
        padded = []
        for t, _ in parts:
            p = zeros(m, dtype=D.uint8, device=dev)
            p[:t.numel()] = t
            padded.append(p)
        size_list = [n for _, n in parts]
    out = zeros(m, dtype=D.uint8, device=dev)
    size = zeros(1, dtype=D.int64, device=dev)
    C.scatter(out, padded, group=group, group_src=root)
    C.scatter(size, size_list, group=group, group_src=root)
    scatter_object_output_list[0] = _to_object(out, int(size.item()))
