"""utils.data: datasets, samplers, collation and DataLoader (batching, shuffling, workers, errors)."""
import collections
import os

import numpy as np
import pytest

import tgrad
from tgrad.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset, RandomSampler,
                              SequentialSampler, Subset, SubsetRandomSampler, TensorDataset,
                              WeightedRandomSampler, default_collate, default_convert, get_worker_info,
                              random_split)


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return {"x": np.full(2, i, dtype=np.float32), "y": i * i, "pid": os.getpid()}


class Failing(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise ValueError(f"bad sample {i}")
        return i


class Stream(IterableDataset):
    """0..n-1, split between workers by get_worker_info()."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __iter__(self):
        info = get_worker_info()
        lo, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(lo, self.n, step))


def _ds(n=10):
    x = tgrad.arange(n * 2, dtype=tgrad.float32).reshape(n, 2)
    return TensorDataset(x, tgrad.arange(n))


def test_datasets():
    ds = _ds()
    x, y = ds[3]
    assert x.tolist() == [6.0, 7.0] and y.item() == 3 and len(ds) == 10
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(tgrad.zeros(3), tgrad.zeros(4))
    sub = Subset(ds, [9, 0, 4])
    assert len(sub) == 3 and sub[0][1].item() == 9 and [s[1].item() for s in sub.__getitems__([1, 2])] == [0, 4]
    cat = ds + Squares(3)
    assert isinstance(cat, ConcatDataset) and len(cat) == 13 and cat[11]["y"] == 1 and cat[-1]["y"] == 4
    assert cat.cumulative_sizes == [10, 13]
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        cat[-14]


def test_random_split():
    ds = _ds()
    a, b = random_split(ds, [7, 3], generator=tgrad.Generator().manual_seed(1))
    a2, b2 = random_split(ds, [7, 3], generator=tgrad.Generator().manual_seed(1))
    assert a.indices == a2.indices and b.indices == b2.indices
    assert sorted(a.indices + b.indices) == list(range(10)) and len(a) == 7
    parts = random_split(ds, [0.5, 0.3, 0.2])
    assert [len(p) for p in parts] == [5, 3, 2]
    assert [len(p) for p in random_split(range(7), [0.5, 0.5])] == [4, 3]
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the input dataset!"):
        random_split(ds, [5, 6])


def test_samplers():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    g = tgrad.Generator().manual_seed(3)
    perm = list(RandomSampler(range(20), generator=g))
    assert sorted(perm) == list(range(20)) and perm != list(range(20))
    assert perm == list(RandomSampler(range(20), generator=tgrad.Generator().manual_seed(3)))
    tgrad.manual_seed(5)
    a = list(RandomSampler(range(20)))
    tgrad.manual_seed(5)
    assert list(RandomSampler(range(20))) == a
    r = list(RandomSampler(range(5), replacement=True, num_samples=70, generator=g))
    assert len(r) == 70 and set(r) <= set(range(5)) and len(set(r)) == 5
    assert len(list(RandomSampler(range(5), num_samples=12))) == 12
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler(range(5), num_samples=0)
    assert sorted(SubsetRandomSampler([10, 20, 30], generator=g)) == [10, 20, 30]
    assert list(BatchSampler(range(7), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3 and len(BatchSampler(range(7), 3, True)) == 2
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=0"):
        BatchSampler(range(7), 0, False)


def test_weighted_random_sampler():
    g = tgrad.Generator().manual_seed(0)
    draws = list(WeightedRandomSampler([0.0, 1.0, 3.0], 4000, generator=g))
    counts = np.bincount(draws, minlength=3)
    assert counts[0] == 0 and abs(counts[2] / counts[1] - 3.0) < 0.35
    no_rep = list(WeightedRandomSampler([1.0, 0.0, 1.0, 1.0], 3, replacement=False, generator=g))
    assert sorted(no_rep) == [0, 2, 3]
    # bad weights: the sampler is built, iterating raises torch.multinomial's error (PyTorch's timing and order)
    inf, nan = float("inf"), float("nan")
    bad = [([1.0, 1.0], 3, False, "cannot sample n_sample > prob_dist.size\\(-1\\) samples without replacement"),
           ([1.0, -1.0], 2, True, "invalid multinomial distribution \\(encountering probability entry < 0\\)"),
           ([nan, 1.0], 2, True, "invalid multinomial distribution \\(encountering probability entry < 0\\)"),
           ([inf, -1.0], 2, True, "invalid multinomial distribution \\(encountering probability entry = infinity "
                                  "or NaN\\)"),
           ([0.0, 0.0], 2, True, "invalid multinomial distribution \\(sum of probabilities <= 0\\)"),
           ([], 2, True, "invalid multinomial distribution \\(sum of probabilities <= 0\\)"),
           ([1.0, -1.0], 1, True, "probability tensor contains either `inf`, `nan` or element < 0"),
           ([inf, 1.0], 2, False, "probability tensor contains either `inf`, `nan` or element < 0"),
           ([0.0, 0.0], 1, False, "invalid multinomial distribution \\(sum of probabilities <= 0\\)")]
    for w, n, rep, msg in bad:
        sampler = WeightedRandomSampler(w, n, replacement=rep)
        with pytest.raises(RuntimeError, match=f"^{msg}$"):
            list(sampler)
    assert list(WeightedRandomSampler([1.0, 0.0], 2, replacement=False)) == [0, 1]     # zero weights come last
    with pytest.raises(ValueError, match="weights should be a 1d sequence but given weights have shape \\(1, 2\\)"):
        WeightedRandomSampler([[1.0, 1.0]], 3)


Point = collections.namedtuple("Point", "x y")


def test_default_collate():
    b = default_collate([(tgrad.tensor([1.0, 2.0]), 3, 0.5, "a"), (tgrad.tensor([3.0, 4.0]), 4, 1.5, "b")])
    assert b[0].tolist() == [[1.0, 2.0], [3.0, 4.0]] and b[1].dtype is tgrad.int64 and b[1].tolist() == [3, 4]
    assert b[2].dtype is tgrad.float64 and b[3] == ("a", "b") and isinstance(b, list)
    d = default_collate([{"a": np.ones(2, np.float32), "b": [1, True]}, {"a": np.zeros(2, np.float32),
                                                                         "b": [2, False]}])
    assert d["a"].dtype is tgrad.float32 and d["a"].shape == (2, 2)
    assert d["b"][0].tolist() == [1, 2] and d["b"][1].dtype is tgrad.bool
    p = default_collate([Point(1, np.float64(2.0)), Point(3, np.float64(4.0))])
    assert isinstance(p, Point) and p.x.tolist() == [1, 3] and p.y.dtype is tgrad.float64
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [1]])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy arrays, numbers, "
                                        "dicts or lists; found <class 'object'>"):
        default_collate([object()])
    c = default_convert({"a": np.arange(3), "b": ("s", np.float32(1))})
    assert c["a"].dtype is tgrad.int64 and c["b"][0] == "s" and c["b"][1].item() == 1.0


def test_loader_batching_len_drop_last():
    ds = _ds(10)
    dl = DataLoader(ds, batch_size=4)
    batches = list(dl)
    assert len(dl) == 3 and [b[0].shape[0] for b in batches] == [4, 4, 2]
    assert batches[1][1].tolist() == [4, 5, 6, 7] and batches[0][0].tolist()[1] == [2.0, 3.0]
    dl = DataLoader(ds, batch_size=4, drop_last=True)
    assert len(dl) == 2 and [b[1].tolist() for b in dl] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    one = list(DataLoader(ds))
    assert len(one) == 10 and one[2][0].shape == (1, 2)
    nob = list(DataLoader(Squares(3), batch_size=None))
    assert nob[2]["y"] == 4 and nob[2]["x"].shape == (2,) and isinstance(nob[2]["x"], tgrad.Tensor)
    bs = list(DataLoader(ds, batch_sampler=[[0, 9], [5]]))
    assert [b[1].tolist() for b in bs] == [[0, 9], [5]]
    custom = list(DataLoader(range(5), batch_size=2, collate_fn=lambda b: sum(b)))
    assert custom == [1, 5, 4]


def test_loader_shuffle_is_reproducible():
    ds = _ds(20)

    def order(**kw):
        return [i for b in DataLoader(ds, batch_size=6, shuffle=True, **kw) for i in b[1].tolist()]

    tgrad.manual_seed(0)
    a, a_next = order(), order()
    tgrad.manual_seed(0)
    assert order() == a and order() == a_next
    assert a != a_next and sorted(a) == list(range(20)) and a != list(range(20))
    g = tgrad.Generator().manual_seed(7)
    b = order(generator=g)
    assert b == order(generator=tgrad.Generator().manual_seed(7))
    dl = DataLoader(ds, batch_size=6, shuffle=True, generator=tgrad.Generator().manual_seed(7))
    assert [i for batch in dl for i in batch[1].tolist()] == b


def test_loader_argument_errors():
    ds = _ds()
    cases = [
        (dict(num_workers=-1), "num_workers option should be non-negative; use num_workers=0 to disable"),
        (dict(timeout=-1), "timeout option should be non-negative"),
        (dict(prefetch_factor=2), "prefetch_factor option could only be specified in multiprocessing.let"),
        (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
        (dict(sampler=[0, 1], shuffle=True), "sampler option is mutually exclusive with shuffle"),
        (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive with batch_size, "
                                                  "shuffle, sampler, and drop_last"),
        (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching and is mutually "
                                                "exclusive with drop_last"),
        (dict(multiprocessing_context="fork"), "multiprocessing_context can only be used with multi-process"),
    ]
    for kw, msg in cases:
        with pytest.raises(ValueError) as e:
            DataLoader(ds, **kw)
        assert str(e.value).startswith(msg)
    with pytest.raises(ValueError, match="DataLoader with IterableDataset: expected unspecified shuffle option, "
                                         "but got shuffle=True"):
        DataLoader(Stream(3), shuffle=True)


def test_iterable_dataset():
    dl = DataLoader(Stream(7), batch_size=3)
    assert [b.tolist() for b in dl] == [[0, 1, 2], [3, 4, 5], [6]] and len(dl) == 3
    assert [b.tolist() for b in DataLoader(Stream(7), batch_size=3, drop_last=True)] == [[0, 1, 2], [3, 4, 5]]
    got = sorted(i for b in DataLoader(Stream(9), batch_size=2, num_workers=2) for i in b.tolist())
    assert got == list(range(9))


def test_workers_match_main_process_and_run_in_other_processes():
    ds = Squares(23)
    tgrad.manual_seed(1)
    ref = list(DataLoader(ds, batch_size=4, shuffle=True))
    tgrad.manual_seed(1)
    dl = DataLoader(ds, batch_size=4, shuffle=True, num_workers=2)
    got = list(dl)
    assert len(got) == len(ref) == len(dl) == 6
    for r, g in zip(ref, got):
        assert g["y"].tolist() == r["y"].tolist() and np.array_equal(g["x"].cpu().numpy(), r["x"].cpu().numpy())
    pids = {p for b in got for p in b["pid"].tolist()}
    assert len(pids) == 2 and os.getpid() not in pids
    tensors = list(DataLoader(_ds(9), batch_size=4, num_workers=2))
    assert [b[1].tolist() for b in tensors] == [[0, 1, 2, 3], [4, 5, 6, 7], [8]]
    assert tensors[0][0].dtype is tgrad.float32 and tensors[2][0].tolist() == [[16.0, 17.0]]


def _record_worker(worker_id):
    info = get_worker_info()
    assert info.id == worker_id and info.num_workers == 2
    os.environ["TGRAD_TEST_WORKER"] = str(worker_id)


class WorkerEnv(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = get_worker_info()
        return {"env": int(os.environ.get("TGRAD_TEST_WORKER", -1)), "id": info.id, "seed": info.seed,
                "rand": tgrad.rand(1).item()}


def test_worker_init_fn_seeds_and_persistent_workers():
    assert get_worker_info() is None
    dl = DataLoader(WorkerEnv(), batch_size=1, num_workers=2, worker_init_fn=_record_worker,
                    persistent_workers=True)
    first = list(dl)
    assert [b["env"].item() for b in first] == [b["id"].item() for b in first] == [0, 1, 0, 1]
    seeds = {b["id"].item(): b["seed"].item() for b in first}
    assert seeds[1] == seeds[0] + 1
    assert first[0]["rand"].item() != first[1]["rand"].item()       # workers draw different random numbers
    second = list(dl)                                                # same worker processes, new epoch
    assert [b["id"].item() for b in second] == [0, 1, 0, 1]
    assert {b["id"].item(): b["seed"].item() for b in second} == seeds


def test_worker_error_is_reraised_with_its_traceback():
    dl = DataLoader(Failing(), batch_size=2, num_workers=2)
    it = iter(dl)
    assert next(it).tolist() == [0, 1]
    with pytest.raises(ValueError) as e:
        list(it)
    msg = str(e.value)
    assert msg.startswith("Caught ValueError in DataLoader worker process ")
    assert "Original Traceback (most recent call last):" in msg and "bad sample 5" in msg
    assert "in __getitem__" in msg


class Crash(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        os._exit(3)


def test_dead_worker_raises_instead_of_hanging():
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+.*\) exited unexpectedly"):
        list(DataLoader(Crash(), batch_size=1, num_workers=1))
